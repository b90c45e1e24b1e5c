//! `cargo xtask validate --quick`: the paper's validation cases run from a copy of data/validation
//! (so that the tests never write into data/), with the debug binaries. The bending case (a few
//! seconds) and the squeeze cases (under a minute together) are in the default suite; the sphere
//! and packing cases (a minute and two on 2 cores) are slow tests, run by `cargo xtask
//! slow-tests`.

use e2e::{workspace_root, xtask};

/// Copies `files` of `data/<from>` to `<to>/<from>`.
fn copy(to: &std::path::Path, from: &str, files: &[&str]) {
    let dir = to.join(from);
    std::fs::create_dir_all(&dir).unwrap();
    for file in files {
        std::fs::copy(
            workspace_root().join("data").join(from).join(file),
            dir.join(file),
        )
        .unwrap();
    }
}

/// Runs `xtask validate --quick CASE` on a copy of the data and checks that the command
/// succeeded, wrote the report and the plot, and printed `rows` rows for the case, all passing.
fn validate(data: &std::path::Path, case: &str, rows: usize) {
    let stdout = xtask([
        "validate".as_ref(),
        "--quick".as_ref(),
        case.as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
    ]);
    let report = std::fs::read_to_string(data.join("validation/out/report-quick.md")).unwrap();
    assert!(report.contains(&format!("## {case}")));
    let svg =
        std::fs::read_to_string(data.join(format!("validation/out/{case}-quick.svg"))).unwrap();
    assert!(svg.starts_with("<svg"));
    let printed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(&format!("| {case} |")))
        .collect();
    assert_eq!(printed.len(), rows, "{printed:?}");
    assert!(
        printed.iter().all(|r| r.ends_with("| pass |")),
        "{printed:?}"
    );
}

/// Three-point bending with the analytic mode (the paper's Table 1): every row of the report
/// passes.
#[test]
fn quick_bending_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    copy(
        dir.path(),
        "validation/bending",
        &["pipeline.toml", "quick.toml", "full.toml"],
    );
    validate(dir.path(), "bending", 3);
}

/// A copy of the sphere cases' scenes and of the data they read.
fn sphere_data(dir: &std::path::Path) {
    copy(
        dir,
        "validation/sphere",
        &[
            "pipeline.toml",
            "walls-quick.toml",
            "plates-quick.toml",
            "packing-quick.toml",
            "walls-full.toml",
            "plates-full.toml",
            "packing-full.toml",
        ],
    );
    copy(dir, "fem/sphere", &["sphere.frd.gz", "sphere.inp"]);
    copy(dir, "reference", &["sphere_compaction_lookup_paper.csv"]);
}

/// One sphere with the paper's table squeezed by six walls, and by six plates giving the nodes
/// (Table 2): every row passes.
#[test]
#[ignore = "slow (a minute): run by cargo xtask slow-tests"]
fn quick_sphere_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    sphere_data(dir.path());
    validate(dir.path(), "sphere", 4);
}

/// 27 spheres squeezed by six walls (Appendix C): every row passes. The slowest case: 54 sphere
/// pairs, 85,000 steps (about 45 s on 2 cores in release mode, 1.5 minutes in debug).
#[test]
#[ignore = "slow (1.5 minutes): run by cargo xtask slow-tests"]
fn quick_packing_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    sphere_data(dir.path());
    validate(dir.path(), "packing", 2);
}

/// A copy of the squeeze cases' scenes and of the data they read.
fn squeeze_data(dir: &std::path::Path) {
    let mut scenes = vec![
        "pipeline.toml".to_string(),
        "two.toml".to_string(),
        "pair.toml".to_string(),
        "pair-quick.toml".to_string(),
    ];
    scenes.extend((1..=5).map(|i| format!("one-{i}.toml")));
    let scenes: Vec<&str> = scenes.iter().map(String::as_str).collect();
    copy(dir, "validation/squeeze", &scenes);
    copy(dir, "fem/ball", &["ball.inp"]);
    copy(
        dir,
        "fem/squeeze",
        &[
            "squeeze_plate.csv",
            "squeeze_linear_plate.csv",
            "two_plates.csv",
            "two_linear_plates.csv",
        ],
    );
}

/// The ball whose body is its free modes and residual flexibility, with Hertz's contacts,
/// squeezed by two plates at one random orientation of its mesh (the full variant: five)
/// against CalculiX's small-strain run: within 3 % at every increment past 10 % of the largest
/// force (measured 0.32 %).
#[test]
fn quick_squeeze_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    squeeze_data(dir.path());
    validate(dir.path(), "squeeze", 2);
}

/// The same ball pressed along two axes at once: each pair of plates within 3 % of CalculiX's
/// small-strain run (measured 0.50 % and 1.15 %; a rigid Hertz grain is 11.9 % and 17.3 % off).
#[test]
fn quick_two_axis_squeeze_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    squeeze_data(dir.path());
    validate(dir.path(), "squeeze-two", 4);
}

/// Grain on grain: two such balls stacked between two plates moved in steps, each ball
/// CalculiX's ball against a plane by symmetry: within 3 % at every fourth increment past 10 %
/// of the largest force (measured 1.25 %; the full variant, every increment: 1.51 %; rigid Hertz
/// balls 9.7 %).
#[test]
fn quick_grain_on_grain_squeeze_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    squeeze_data(dir.path());
    validate(dir.path(), "squeeze-pair", 2);
}

/// The ellipsoid built the same way, pressed along each of its axes and obliquely (two pairs of
/// plates at once), by walls and by box grains: each run within 3 % of CalculiX's small-strain
/// run (docs/validation.md; along z the grain's body stiffens the contact by 18 % over Hertz's).
#[test]
fn quick_egg_validation_passes() {
    let dir = tempfile::tempdir().unwrap();
    let loadings = ["x", "y", "z", "xz"];
    let mut scenes = vec!["pipeline.toml".to_string()];
    for l in loadings {
        scenes.push(format!("{l}.toml"));
        scenes.push(format!("{l}-boxes.toml"));
    }
    let scenes: Vec<&str> = scenes.iter().map(String::as_str).collect();
    copy(dir.path(), "validation/egg", &scenes);
    let tables: Vec<String> = loadings
        .iter()
        .map(|l| format!("egg_{l}_plate.csv"))
        .collect();
    let mut fem = vec!["whole.inp"];
    fem.extend(tables.iter().map(String::as_str));
    copy(dir.path(), "fem/egg", &fem);
    // Two rows (force, kinetic energy) per loading against walls, and for the oblique one's box
    // grains (the quick variant's; the full one has every loading's).
    validate(dir.path(), "egg", 2 * (loadings.len() + 1));
}
