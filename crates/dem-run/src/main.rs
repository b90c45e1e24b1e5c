//! The `dem-run` command line: a thin layer over the `dem_run` library.

use std::process::ExitCode;

use clap::Parser;

/// Level-set DEM solver with modal deformation degrees of freedom.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Arguments of the commands to come (see DESIGN.md, "Command lines").
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    Cli::parse();
    eprintln!("dem-run: not built yet (issue #6); nothing was read or written");
    ExitCode::from(2)
}
