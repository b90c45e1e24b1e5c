//! `cargo xtask validate --quick`: the paper's validation cases run in the test suite, from a copy
//! of data/validation (so that the suite never writes into data/), with the debug binaries.

use std::process::Command;

use e2e::{binary, workspace_root};

/// Three-point bending with the analytic mode (the paper's Table 1): every row of the report
/// passes, and the report and the plot are written.
#[test]
fn quick_bending_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("validation/bending");
    std::fs::create_dir_all(&case).unwrap();
    let data = workspace_root().join("data/validation/bending");
    for file in ["pipeline.toml", "quick.toml", "full.toml"] {
        std::fs::copy(data.join(file), case.join(file)).unwrap();
    }
    let out = Command::new(binary("xtask"))
        .args(["validate", "--quick", "bending", "--data"])
        .arg(dir.path())
        .arg("--bin-dir")
        .arg(binary("dem-run").parent().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| bending"))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows.iter().all(|r| r.ends_with("| pass |")), "{stdout}");
    let report =
        std::fs::read_to_string(dir.path().join("validation/out/report-quick.md")).unwrap();
    assert!(report.contains("slope after the contact compliance"));
    let svg = std::fs::read_to_string(dir.path().join("validation/out/bending-quick.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("Eq. 52"));
}
