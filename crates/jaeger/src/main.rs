//! `jaeger replay`: the contact law on a recorded movement history, for users to check it on
//! their own data. A thin layer over the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use jaeger::ContactParams;
use jaeger::replay::{Model, read_movements};

#[derive(Parser)]
#[command(
    version,
    about = "The Jäger (Cattaneo-Mindlin-Deresiewicz) contact law for sphere pairs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a movement history and print the forces.
    ///
    /// Input: CSV with header `delta,ux,uy`, one row per step: the TOTAL normal overlap of the pair
    /// and its TOTAL relative tangential displacement in the contact frame, measured from the
    /// first row (the first contact). Output: CSV `fn,tx,ty,history_len`, one row per input row:
    /// normal force, tangential force (contact frame, along the accumulated displacement) and the
    /// number of legs in the equivalent history (0 for the baseline model).
    Replay(ReplayArgs),
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
struct ReplayArgs {
    /// Input CSV (`-` for standard input).
    input: PathBuf,
    /// Output CSV (default: standard output); written atomically.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Radius of the first sphere (length).
    #[arg(long)]
    r1: f64,
    /// Radius of the second sphere (length; default: r1).
    #[arg(long)]
    r2: Option<f64>,
    /// Shear modulus G of both spheres (force / length^2).
    #[arg(long = "shear-modulus", short = 'G')]
    shear_modulus: f64,
    /// Poisson's ratio of both spheres.
    #[arg(long = "poisson", alias = "nu")]
    poisson: f64,
    /// Friction coefficient.
    #[arg(long = "friction", alias = "mu")]
    friction: f64,
    /// Approximate history: merge elastic legs whose slopes dT/dN differ by less than this
    /// (absolute, same units as mu); 0 keeps the exact history.
    #[arg(long, default_value_t = 0.0)]
    approximation: f64,
    /// The contact law.
    #[arg(long, value_enum, default_value_t = Model::Jaeger)]
    model: Model,
}

fn replay(args: &ReplayArgs) -> Result<(), String> {
    let params = ContactParams::new(
        args.r1,
        args.r2.unwrap_or(args.r1),
        args.shear_modulus,
        args.poisson,
        args.friction,
    )
    .and_then(|p| p.with_approximation(args.approximation))
    .map_err(|e| e.to_string())?;
    let movements = read_movements(&args.input).map_err(|e| e.to_string())?;
    let out = jaeger::replay::replay(
        &params,
        args.model,
        &movements,
        &args.input.display().to_string(),
    )
    .map_err(|e| e.to_string())?;
    match &args.out {
        None => std::io::stdout()
            .write_all(out.as_bytes())
            .map_err(|e| e.to_string()),
        Some(path) => write_atomically(path, out.as_bytes()),
    }
}

/// Temporary sibling, then rename: an interrupted run never leaves a partial output.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Replay(args) => replay(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jaeger: {message}");
            ExitCode::FAILURE
        }
    }
}
