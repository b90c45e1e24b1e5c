//! `jaeger replay`: the contact law on a recorded movement history, for users to check it on
//! their own data. A thin layer over the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use jaeger::{ContactForce, ContactParams, JaegerContact, SpringState};

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

#[derive(Clone, Copy, ValueEnum)]
enum Model {
    /// Jäger's algorithm (exact Cattaneo-Mindlin-Deresiewicz).
    Jaeger,
    /// Hertz with an incremental Mindlin spring capped by Coulomb friction.
    Baseline,
}

/// One row of the input (columns found by name, so their order does not matter).
struct Movement {
    /// Its line in the file.
    line: u64,
    delta: f64,
    ux: f64,
    uy: f64,
}

fn read_movements(args: &ReplayArgs) -> Result<Vec<Movement>, String> {
    let name = args.input.display().to_string();
    let reader: Box<dyn std::io::Read> = if name == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(&args.input).map_err(|e| format!("{name}: {e}"))?)
    };
    let mut csv = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(reader);
    let header = csv.headers().map_err(|e| format!("{name}: {e}"))?.clone();
    let column = |c: &str| {
        header
            .iter()
            .position(|h| h == c)
            .ok_or_else(|| format!("{name}: line 1: no column `{c}` (expected header delta,ux,uy)"))
    };
    let (id, ix, iy) = (column("delta")?, column("ux")?, column("uy")?);
    let mut rows = Vec::new();
    for record in csv.records() {
        let record = record.map_err(|e| {
            let line = e
                .position()
                .map_or(String::new(), |p| format!("line {}: ", p.line()));
            format!("{name}: {line}{e} (expected delta,ux,uy)")
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |i: usize, c: &str| -> Result<f64, String> {
            let text = record.get(i).unwrap_or("");
            text.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    format!("{name}: line {line}: column `{c}`: `{text}` is not a finite number")
                })
        };
        rows.push(Movement {
            line,
            delta: field(id, "delta")?,
            ux: field(ix, "ux")?,
            uy: field(iy, "uy")?,
        });
    }
    Ok(rows)
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
    let movements = read_movements(args)?;

    let mut contact = JaegerContact::new(params);
    let mut spring = SpringState::default();
    let mut out = String::from("fn,tx,ty,history_len\n");
    let mut previous = movements.first().map_or([0.0; 2], |m| [m.ux, m.uy]);
    let name = args.input.display();
    for m in &movements {
        let du = [m.ux - previous[0], m.uy - previous[1]];
        previous = [m.ux, m.uy];
        // Finite inputs can still overflow (a step of 2e308, a force beyond f64): refused, so
        // that no non-finite number is written.
        let overflow = |what: &str| {
            format!(
                "{name}: line {}: {what} is not finite (delta {:e}, ux {:e}, uy {:e}): the movement is too large for floating point",
                m.line, m.delta, m.ux, m.uy
            )
        };
        if !du.iter().all(|x| x.is_finite()) {
            return Err(overflow("the displacement since the previous row"));
        }
        let (f, legs): (ContactForce, usize) = match args.model {
            Model::Jaeger => (contact.step(m.delta, du), contact.history_len()),
            Model::Baseline => (spring.step(&params, m.delta, du), 0),
        };
        if !(f.normal.is_finite() && f.tangential.iter().all(|x| x.is_finite())) {
            return Err(overflow("the force"));
        }
        // `{:?}` prints the shortest decimal that reads back to the same f64.
        out.push_str(&format!(
            "{:?},{:?},{:?},{legs}\n",
            f.normal, f.tangential[0], f.tangential[1]
        ));
    }
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
