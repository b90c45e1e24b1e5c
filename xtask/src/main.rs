//! Project automation in Rust, run as `cargo xtask <command>` (the cargo `xtask` pattern).
//!
//! - `pipeline <case>`: the stages of `data/<case>/pipeline.toml` with Make semantics
//!   (see [`pipeline`]);
//! - `plot`: columns of a CSV as an SVG plot (used by pipelines for reports);
//! - `fem <case>`: regenerates shipped FEM data with CalculiX (see [`fem`]);
//! - `bench [dem|jaeger|mode-extract|mpi]`: the benchmarks (`cargo bench` of those crates, in
//!   release mode), each printing its figures side by side; `mpi` (not in "all": it needs an
//!   MPI library) the decomposed solver's scaling on 2 processes (docs/mpi.md);
//! - `validate [--quick|--full] [CASE...]`: the paper's validation cases (see [`validate`]);
//! - `fuzz [TARGET...] [--time S]`: a fuzz campaign against every input format (see [`fuzz`]);
//!   `fuzz-corpus DIR` writes the seed files for the coverage-guided harness in `fuzz/`;
//! - `demo [--quick] [CASE...]`: the README's main job, FEM to DEM on the shipped data (see [`demo`]);
//! - `experiment [--full] [CASE...]`: granular experiments on the pipeline's grains (see
//!   [`experiment`]);
//! - `slow-tests [ignored|mpi]`: the slow checks that `cargo test --workspace` leaves out (see
//!   [`SLOW_TESTS`]).
//!
//! The alias in `.cargo/config.toml` runs xtask in release mode: its library dependencies (the
//! stage crates, for the fuzz and semantic campaigns) are then the very artifacts of the release
//! stage binaries that [`stage_path`] builds, so a fresh clone builds the workspace once.

mod demo;
mod experiment;
mod fem;
mod measure;
mod pipeline;
mod plot;
mod reference;
mod suite;
mod validate;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use pipeline::{Outcome, Pipeline};
use xtask::fuzz;

#[derive(Parser)]
#[command(about = "Automation for the deformable LS-DEM workspace", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the stages of data/CASE/pipeline.toml, re-running only what is out of date.
    Pipeline {
        /// A case name under data/, or a directory that holds a pipeline.toml.
        case: String,
        /// Run every stage, even those that are up to date.
        #[arg(long)]
        force: bool,
        /// Run the stage binaries found in this directory instead of building them in release
        /// mode first (e.g. target/debug after `cargo build`).
        #[arg(long)]
        bin_dir: Option<PathBuf>,
    },
    /// Plot columns of a CSV file as SVG.
    Plot(plot::PlotArgs),
    /// Regenerate a shipped FEM case with CalculiX (needs `ccx`): sphere, ellipsoid, pair, beam.
    Fem {
        /// The case.
        case: String,
    },
    /// Run the paper's validation cases (data/validation/CASE), print the table, write the
    /// report and plots; exit 1 when a row fails.
    Validate {
        #[command(flatten)]
        run: SuiteRun,
        /// The quick variant (the default): faster loading, checked to stay quasi-static.
        #[arg(long, conflicts_with = "full")]
        quick: bool,
        /// The paper's own protocol (long: minutes per case).
        #[arg(long)]
        full: bool,
    },
    /// Run the benchmarks: dem (the solver), jaeger (the contact law), mode-extract; all when
    /// none is named; mpi (the solver over 2 MPI processes, docs/mpi.md) only when named.
    Bench {
        /// Which benchmark.
        #[arg(value_parser = ["dem", "jaeger", "mode-extract", "mpi"])]
        suite: Option<String>,
    },
    /// The README's main job: the shipped CalculiX runs through the stages to DEM curves checked
    /// against CalculiX (data/demo); prints the table, writes the report and plots to
    /// data/demo/out; exit 1 when a row fails.
    Demo {
        #[command(flatten)]
        run: SuiteRun,
        /// The reduced variant of the test suite (shorter runs).
        #[arg(long)]
        quick: bool,
    },
    /// Granular experiments on the pipeline's grains (data/experiments): prints the checked rows,
    /// writes the report and plots to data/experiments/out; exit 1 when a row fails.
    Experiment {
        #[command(flatten)]
        run: SuiteRun,
        /// Every packing of the experiment (the quick variant, the default, runs the first).
        #[arg(long)]
        full: bool,
    },
    /// The module import graph of each workspace crate and its cycles (docs/layout.md):
    /// exit 1 on a cycle.
    Layers {
        /// The workspace to read (default: this one).
        root: Option<PathBuf>,
        /// Print every import edge.
        #[arg(long)]
        verbose: bool,
    },
    /// A fuzz campaign against the readers of every input format (structured mutation of seed
    /// files; see xtask/src/fuzz.rs): prints runs and failures per target, exit 1 on a failure.
    Fuzz {
        /// The targets (default: all): deck, frd, rpt, csv, scalars, vtu, vtk, stl, obj, vtp,
        /// npy, pvd, scene, replay, grain, modes.
        targets: Vec<String>,
        /// Seconds per target.
        #[arg(long, default_value_t = 60.0)]
        time: f64,
        /// At most this many mutants per target.
        #[arg(long, default_value_t = u64::MAX)]
        runs: u64,
        /// The campaign's random seed (the same seed draws the same mutants).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print each target's this many most frequent refusal messages (to read them).
        #[arg(long, default_value_t = 0)]
        messages: usize,
        /// The semantic campaign instead: well-formed inputs drawn at random through each tool,
        /// outputs checked against independent invariants (targets bake, modes, run, jaeger;
        /// `--runs` cases each, 200 by default; see xtask/src/semantic.rs).
        #[arg(long)]
        semantic: bool,
    },
    /// Writes each target's seed files into DIR/TARGET/: the starting corpora of the
    /// coverage-guided harness (`FORMAT=TARGET cargo +nightly fuzz run formats DIR/TARGET`).
    FuzzCorpus {
        /// The directory.
        dir: PathBuf,
        /// The targets (default: all).
        targets: Vec<String>,
    },
    /// The slow checks that the default `cargo test --workspace` leaves out, with the debug build
    /// the default suite uses: every test of the workspace marked `#[ignore]` (the demo's quick
    /// variant end to end, the sphere and packing quick validations, long runs) and dem-run's MPI
    /// tests (feature `mpi`: OpenMPI and libclang, docs/mpi.md). Exit 1 when a part fails.
    SlowTests {
        /// The parts (default: both): `ignored` runs `cargo test --workspace -- --ignored`,
        /// `mpi` runs `cargo test -p dem-run --features mpi --test it mpi::`.
        #[arg(value_parser = ["ignored", "mpi"])]
        parts: Vec<String>,
        /// Pass `--locked` to cargo (CI: Cargo.lock must not change).
        #[arg(long)]
        locked: bool,
    },
    /// One target's campaign, run by `fuzz` in a child process.
    #[command(hide = true)]
    FuzzWorker {
        target: String,
        #[arg(long)]
        time: f64,
        #[arg(long)]
        runs: u64,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        messages: usize,
    },
}

/// What every suite command takes (validate, demo, experiment).
#[derive(clap::Args)]
struct SuiteRun {
    /// The cases (default: all; an unknown name lists them).
    cases: Vec<String>,
    /// Run the stage binaries found in this directory instead of building them in release mode
    /// first.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The data directory holding the suite's directory (validation/, demo/, experiments/;
    /// default: the workspace's data/).
    #[arg(long)]
    data: Option<PathBuf>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// The case directory: `data/<case>` if it exists, else `case` as a path.
fn case_dir(case: &str) -> Result<PathBuf> {
    let named = workspace_root().join("data").join(case);
    let dir = if named.join("pipeline.toml").is_file() {
        named
    } else {
        PathBuf::from(case)
    };
    if !dir.join("pipeline.toml").is_file() {
        bail!("no pipeline.toml in data/{case} nor in {case}");
    }
    Ok(dir)
}

/// The directories to put in front of `PATH` for the stages: `bin_dir` if given, else the
/// workspace binaries freshly built in release mode (in `CARGO_TARGET_DIR` when it is set); and
/// xtask's own directory (for stages that call `xtask`).
///
/// The build selects the whole workspace, xtask included: its dependencies' features are then
/// unified as in `cargo xtask`'s own release build (xtask's proptest turns on `std` in rand and
/// tempfile), so the libraries are that build's artifacts and only the stage binaries are
/// compiled (without xtask, grain, fem, rand and everything above them were compiled again).
fn stage_path(bin_dir: Option<PathBuf>) -> Result<Vec<PathBuf>> {
    let root = workspace_root();
    let bins = match bin_dir {
        Some(dir) => dir,
        None => {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "--release", "--bins", "--workspace"])
                .current_dir(&root)
                .status()
                .context("cannot run cargo build")?;
            if !status.success() {
                bail!("building the workspace binaries failed");
            }
            // A relative CARGO_TARGET_DIR is cargo's: from the directory it was started in.
            match std::env::var_os("CARGO_TARGET_DIR") {
                Some(dir) => std::env::current_dir()?.join(dir),
                None => root.join("target"),
            }
            .join("release")
        }
    };
    let xtask_dir = std::env::current_exe()?
        .parent()
        .context("xtask's directory")?
        .to_path_buf();
    Ok(vec![bins, xtask_dir])
}

/// The parts of `cargo xtask slow-tests`, in the order they run: each one's name and the
/// arguments of its `cargo test` (`mpi::`: the tests of dem-run's tests/it/mpi.rs). A test is
/// slow when it is marked `#[ignore = "slow (why): run by cargo xtask slow-tests"]`
/// (tests/tests/suite.rs checks that every ignored test says so), or behind dem-run's feature
/// `mpi`.
const SLOW_TESTS: [(&str, &str); 2] = [
    ("ignored", "--workspace -- --ignored"),
    ("mpi", "-p dem-run --features mpi --test it mpi::"),
];

/// Runs the parts of [`SLOW_TESTS`] named (all when none is), each whatever the others gave;
/// `Ok(false)` when one failed.
fn slow_tests(parts: &[String], locked: bool) -> Result<bool> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut failed = Vec::new();
    for (part, args) in SLOW_TESTS {
        if !parts.is_empty() && !parts.iter().any(|p| p == part) {
            continue;
        }
        let args = format!("test{} {args}", if locked { " --locked" } else { "" });
        println!("cargo {args}");
        let status = Command::new(&cargo)
            .args(args.split_whitespace())
            .current_dir(workspace_root())
            .status()
            .context("cannot run cargo test")?;
        if !status.success() {
            failed.push(part);
        }
    }
    if failed.is_empty() {
        return Ok(true);
    }
    eprintln!("xtask: slow tests failed: {}", failed.join(", "));
    if failed.contains(&"mpi") {
        eprintln!(
            "xtask: the mpi part needs OpenMPI and libclang (docs/mpi.md); `cargo xtask slow-tests ignored` runs the others"
        );
    }
    Ok(false)
}

/// Runs a suite's cases on `data` (default: the workspace's data/); failure when a row fails.
fn run_suite(suite: &suite::Suite, run: SuiteRun, variant: &str) -> Result<ExitCode> {
    let data = run.data.unwrap_or_else(|| workspace_root().join("data"));
    let path = stage_path(run.bin_dir)?;
    Ok(if suite.run(&data, &run.cases, variant, &path)? {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Cmd::Pipeline {
            case,
            force,
            bin_dir,
        } => {
            let dir = case_dir(&case)?;
            let pipeline = Pipeline::read(&dir.join("pipeline.toml"))?;
            let path = stage_path(bin_dir)?;
            println!(
                "pipeline {} ({} stages)",
                dir.display(),
                pipeline.stages.len()
            );
            match pipeline.run(&dir, &path, force, None, &mut std::io::stdout())? {
                Outcome::Done { .. } => Ok(ExitCode::SUCCESS),
                Outcome::Failed { code, .. } => Ok(ExitCode::from(u8::try_from(code).unwrap_or(1))),
            }
        }
        Cmd::Plot(args) => {
            plot::plot(&args)?;
            println!("wrote {}", args.out.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Fem { case } => {
            fem::run(&case, &workspace_root())?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { suite } => {
            let runs: Vec<Vec<&str>> = match suite.as_deref() {
                Some("dem") => vec![vec!["dem-run"]],
                Some("mpi") => vec![vec!["dem-run", "--features", "mpi", "--bench", "mpi"]],
                Some(other) => vec![vec![other]],
                None => vec![vec!["dem-run"], vec!["jaeger"], vec!["mode-extract"]],
            };
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            for args in runs {
                let krate = args[0];
                println!("cargo bench -p {}", args.join(" "));
                let status = Command::new(&cargo)
                    .args(["bench", "-p"])
                    .args(&args)
                    .current_dir(workspace_root())
                    .status()
                    .context("cannot run cargo bench")?;
                if !status.success() {
                    bail!("the {krate} benchmark failed");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Validate {
            run,
            quick: _,
            full,
        } => run_suite(&validate::SUITE, run, if full { "full" } else { "quick" }),
        Cmd::Fuzz {
            targets,
            time,
            runs,
            seed,
            messages,
            semantic,
        } => {
            let clean = if semantic {
                let cases = if runs == u64::MAX { 200 } else { runs as usize };
                xtask::semantic::run(&targets, cases, seed, messages)?
            } else {
                fuzz::run(&targets, time, runs, seed, messages)?
            };
            Ok(if clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Cmd::Layers { root, verbose } => {
            let root = root.unwrap_or_else(workspace_root);
            Ok(if xtask::layers::report(&root, verbose)? {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Cmd::FuzzCorpus { dir, targets } => {
            let names: Vec<String> = if targets.is_empty() {
                fuzz::targets().iter().map(|t| t.name.to_string()).collect()
            } else {
                targets
            };
            for name in &names {
                fuzz::write_seeds(&workspace_root(), name, &dir.join(name))?;
            }
            println!(
                "seeds of {} targets written under {}",
                names.len(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::SlowTests { parts, locked } => Ok(if slow_tests(&parts, locked)? {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
        Cmd::FuzzWorker {
            target,
            time,
            runs,
            seed,
            messages,
        } => {
            fuzz::worker(&workspace_root(), &target, (time, runs, seed), messages)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo { run, quick } => {
            run_suite(&demo::SUITE, run, if quick { "quick" } else { "standard" })
        }
        Cmd::Experiment { run, full } => {
            run_suite(&experiment::SUITE, run, if full { "full" } else { "quick" })
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
