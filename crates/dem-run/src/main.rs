//! The `dem-run` command line: a thin layer over the `dem_run` library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use dem_run::{RunOptions, run};

/// Level-set DEM solver: runs a scene file (see the `dem_run::scene` docs for its keys).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The scene (TOML).
    scene: PathBuf,
    /// Run directory (default: the scene's name without extension, next to it, + `.run`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Threads (default: the scene's `run.threads`, else every core); they stay busy for the
    /// whole run, each using its processor.
    #[arg(long)]
    threads: Option<usize>,
    /// Continue from a checkpoint written by an earlier run of the same grains (a checkpoint
    /// file, or a run directory: its latest checkpoint).
    #[arg(long)]
    restart: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Replace an earlier run's files in the run directory: only those its manifest.jsonl lists
    /// (refused without it; a restart of the directory's own checkpoint continues them
    /// instead).
    #[arg(long)]
    overwrite: bool,
    /// Over MPI: move the subdomains' cuts to the grains' quantiles every this many steps (0:
    /// only at the start), for a sample whose grains gather (docs/mpi.md; a build with the
    /// feature `mpi`).
    #[arg(long)]
    rebalance: Option<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The options of a feature not built are known, and said so (clap would call them
    // unexpected and suggest another).
    if cfg!(not(feature = "mpi")) && cli.rebalance.is_some() {
        eprintln!(
            "dem-run: --rebalance: this build has no MPI; build with `cargo build --release -p dem-run --features mpi` (docs/mpi.md)"
        );
        return ExitCode::from(2);
    }
    // Started by mpirun with several processes, a build without MPI would run the whole scene
    // in each, all into one directory (Open MPI and MPICH say the count in these variables).
    let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse::<u64>().ok());
    if cfg!(not(feature = "mpi")) && launched.is_some_and(|n| n > 1) {
        eprintln!(
            "dem-run: started as one of {} MPI processes, but this build has no MPI: each would run the whole scene; build with `cargo build --release -p dem-run --features mpi` (docs/mpi.md)",
            launched.unwrap_or(0)
        );
        return ExitCode::from(2);
    }
    let out = cli
        .out
        .clone()
        .unwrap_or_else(|| cli.scene.with_extension("run"));
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("dem-run: cannot catch Ctrl-C ({e}); an interrupted run will not checkpoint");
    }
    let options = RunOptions {
        out,
        threads: cli.threads,
        restart: cli.restart,
        progress: !cli.quiet,
        overwrite: cli.overwrite,
    };
    #[cfg(feature = "mpi")]
    let universe = match mpi::initialize_with_threading(mpi::Threading::Serialized) {
        Some((u, level)) if level >= mpi::Threading::Serialized => u,
        Some((_, level)) => {
            eprintln!(
                "dem-run: the MPI library gives thread level {level:?}; a run needs Serialized or Multiple"
            );
            return ExitCode::FAILURE;
        }
        None => {
            eprintln!("dem-run: MPI was initialized already");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "mpi")]
    let world = mpi::traits::Communicator::duplicate(&universe.world());
    #[cfg(feature = "mpi")]
    let (first, result) = if mpi::traits::Communicator::size(&world) > 1 {
        let rank = mpi::traits::Communicator::rank(&world);
        let result = dem_run::run::run_mpi(
            &cli.scene,
            &options,
            &stop,
            &world,
            cli.rebalance.unwrap_or(0),
        );
        match &result {
            // A file one process cannot read or write stops it alone, which would leave the
            // others waiting in their next exchange: the whole run stops here.
            Err(e @ dem_run::RunError::File { .. }) => {
                eprintln!("dem-run (process {rank}): {e}");
                mpi::traits::Communicator::abort(&world, 1);
            }
            // The others every process meets alike (the first wrote its last row); a level
            // set's fault is said by the process that met it.
            Err(e @ dem_run::RunError::LevelSet { .. }) if rank != 0 => {
                eprintln!("dem-run (process {rank}): {e}");
                return ExitCode::FAILURE;
            }
            Err(_) if rank != 0 => return ExitCode::FAILURE,
            _ => {}
        }
        (rank == 0, result)
    } else {
        (true, run(&cli.scene, &options, &stop))
    };
    #[cfg(not(feature = "mpi"))]
    let (first, result) = (true, run(&cli.scene, &options, &stop));
    if !first {
        // The first process reports the run.
        return ExitCode::SUCCESS;
    }
    match result {
        Ok(s) => {
            println!(
                "dem-run: {} steps to t = {:e} ({} grains, {} threads, {:.0} steps/s) in {}",
                s.steps,
                s.time,
                s.grains,
                s.threads,
                s.steps_per_second,
                options.out.display()
            );
            if s.status == dem_run::Status::Interrupted {
                let c = s.last_checkpoint.map(|p| p.display().to_string());
                eprintln!("dem-run: interrupted; checkpoint {}", c.unwrap_or_default());
                return ExitCode::from(130);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("dem-run: {e}");
            ExitCode::FAILURE
        }
    }
}
