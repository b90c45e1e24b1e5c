//! The `levelset-bake` command line: a thin layer over the `levelset_bake` library.

use std::process::ExitCode;

use clap::Parser;

/// Signed distance grids, surface nodes, mass properties and mode data of grains.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Arguments of the commands to come (see DESIGN.md, "Command lines").
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    Cli::parse();
    eprintln!("levelset-bake: not built yet (issue #4); nothing was read or written");
    ExitCode::from(2)
}
