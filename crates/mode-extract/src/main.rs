//! The `mode-extract` command line: a thin layer over the `mode_extract` library.

use std::process::ExitCode;

use clap::Parser;

/// Deformation modes, modal mass and stiffness, and fitted internal forces from FEM snapshots.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Arguments of the commands to come (see DESIGN.md, "Command lines").
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    Cli::parse();
    eprintln!("mode-extract: not built yet (issue #5); nothing was read or written");
    ExitCode::from(2)
}
