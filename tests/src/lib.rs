//! Helpers for the end-to-end tests in `tests/tests/`: the workspace's binaries, built once.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
}

/// The path of a workspace binary (debug profile). The first call builds all of them with the
/// cargo that runs the tests; `cargo test` no longer holds the build lock while tests run.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--workspace", "--bins"])
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --workspace --bins failed");
    });
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from);
    target.join("debug").join(name)
}

/// Runs the debug `xtask` with `args` and the workspace's debug stage binaries (`--bin-dir`),
/// prints its standard output and returns it once the command has succeeded (else panics
/// with both streams).
pub fn xtask<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = Command::new(binary("xtask"))
        .args(args)
        .arg("--bin-dir")
        .arg(
            binary("dem-run")
                .parent()
                .expect("a binary sits in a directory"),
        )
        .output()
        .expect("run xtask");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
