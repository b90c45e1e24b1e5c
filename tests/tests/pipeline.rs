//! The README's main job, and stages that fail without writing.

use std::path::Path;
use std::process::Command;

use e2e::{binary, workspace_root, xtask};

#[test]
fn a_failing_stage_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(binary("dem-run"))
        .args(["scene.toml", "--out", "run"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dem-run: scene.toml: "), "{stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "dem-run wrote something"
    );
}

/// A copy of the shipped data that the demo reads (so that the tests never write into data/).
fn demo_data() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = workspace_root().join("data");
    let copy = |from: &str, files: &[&str]| {
        let to = dir.path().join(from);
        std::fs::create_dir_all(&to).unwrap();
        for file in files {
            std::fs::copy(data.join(from).join(file), to.join(file)).unwrap();
        }
    };
    copy(
        "demo",
        &[
            "pipeline.toml",
            "walls.toml",
            "packing.toml",
            "packing-quick.toml",
            "beam.toml",
            "sphere-path.toml",
            "ellipsoid.toml",
            "ellipsoid-plates-semi-lagrangian.toml",
            "ellipsoid-plates-precomputed.toml",
            "pair-semi-lagrangian.toml",
            "pair-precomputed.toml",
            "granular-compress-deformable.toml",
            "granular-compress-rigid.toml",
            "granular-shear-deformable.toml",
            "granular-shear-rigid.toml",
        ],
    );
    copy("reference", &["sphere_compaction_lookup_paper.csv"]);
    copy(
        "fem/sphere",
        &["sphere.frd.gz", "sphere.inp", "sphere_scalars.csv"],
    );
    copy("fem/beam", &["beam.frd", "beam.inp", "beam.dat"]);
    copy(
        "fem/ellipsoid",
        &["ellipsoid.frd.gz", "ellipsoid.inp", "ellipsoid_scalars.csv"],
    );
    copy(
        "fem/pair",
        &[
            "pair.frd.gz",
            "pair.inp",
            "pair_a_scalars.csv",
            "pair_b_scalars.csv",
            "pair_plates.csv",
        ],
    );
    dir
}

/// `xtask demo --quick CASES... --data DATA` with the debug binaries: its standard output, once
/// it has succeeded.
fn demo(data: &Path, cases: &[&str]) -> String {
    let mut args: Vec<&std::ffi::OsStr> = vec!["demo".as_ref(), "--quick".as_ref()];
    args.extend(cases.iter().map(std::ffi::OsStr::new));
    args.extend(["--data".as_ref(), data.as_os_str()]);
    xtask(args)
}

/// Checks the first run's table (`rows` rows of `cases`, all passing) and report, and that a
/// second run skips every stage.
fn check_then_rerun(data: &Path, cases: &[&str], rows: usize, plots: &[&str]) {
    let first = demo(data, cases);
    let printed: Vec<&str> = first
        .lines()
        .filter(|l| cases.iter().any(|c| l.starts_with(&format!("| {c} |"))))
        .collect();
    assert_eq!(printed.len(), rows, "{printed:?}");
    assert!(
        printed.iter().all(|r| r.ends_with("| pass |")),
        "{printed:?}"
    );
    let out = data.join("demo/out");
    let report = std::fs::read_to_string(out.join("report-quick.md")).unwrap();
    for case in cases {
        assert!(report.contains(&format!("## {case}\n")), "{case}");
    }
    for plot in plots {
        assert!(
            std::fs::read_to_string(out.join(plot))
                .unwrap()
                .starts_with("<svg")
        );
    }
    let modes = grain::ModesBundle::read(&out.join("sphere.modes")).unwrap();
    assert_eq!(modes.info.mirror_planes, "xyz");
    let grain = grain::GrainBundle::read(&out.join("sphere.grain")).unwrap();
    let deformation = grain.deformation.expect("a deformable grain");
    assert_eq!(deformation.internal_force, modes.internal_force);
    let second = demo(data, cases);
    let stages: Vec<&str> = second.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!stages.is_empty());
    assert!(
        stages.iter().all(|l| l.ends_with("skipped, up to date")),
        "{second}"
    );
}

/// The default suite's share of the demo: `cargo xtask demo --quick sphere beam` on a copy of
/// the shipped data (the stages every case shares, then the sphere between six walls against
/// CalculiX and the beam's mode and three-point bending; half a minute): every row passes, the
/// report, the plots and the grain bundles are written, and a second run skips every stage.
#[test]
fn the_demos_sphere_and_beam_run_then_skip_every_stage() {
    let dir = demo_data();
    check_then_rerun(
        dir.path(),
        &["sphere", "beam"],
        7,
        &["sphere-quick.svg", "beam-quick.svg"],
    );
}

/// `cargo xtask demo --quick` on a copy of the shipped data, every case (10 to 15 minutes
/// with the debug binaries on 2 cores): every row passes, the report, the plots and the grain
/// bundles are written, and a second run skips every stage.
#[test]
#[ignore = "slow (the whole demo): run by cargo xtask slow-tests"]
fn the_demo_runs_its_quick_variant_then_skips_every_stage() {
    let dir = demo_data();
    check_then_rerun(
        dir.path(),
        &[
            "sphere",
            "packing",
            "beam",
            "sphere-path",
            "ellipsoid",
            "pair",
            "granular",
        ],
        // 29, and a ledger row for each of the six path runs.
        35,
        &[
            "sphere-quick.svg",
            "packing-quick.svg",
            "beam-quick.svg",
            "sphere-path-quick.svg",
            "ellipsoid-quick.svg",
            "pair-quick.svg",
            "granular-quick.svg",
            "granular-volumetric-quick.svg",
        ],
    );
    let out = dir.path().join("demo/out");
    // The path modes carry their runs' increments: the sphere's 20, each pair grain's 20.
    let path = grain::ModesBundle::read(&out.join("sphere-path.modes")).unwrap();
    assert_eq!(path.path.map(|p| p.amplitudes.len()), Some(20));
    let capsule = grain::GrainBundle::read(&out.join("pair-a.grain")).unwrap();
    let capsule = capsule.deformation.and_then(|d| d.path);
    assert_eq!(capsule.map(|p| p.amplitudes.len()), Some(20));
    // The ellipsoid's level sets precomputed at its run's 10 increments and at 0.
    let ellipsoid = grain::GrainBundle::read(&out.join("ellipsoid.grain")).unwrap();
    let samples = ellipsoid.deformation.map(|d| d.precomputed[0].len());
    assert_eq!(samples, Some(11));
}
