//! The README's main job, and stages that fail without writing.

use std::process::Command;

use e2e::{binary, workspace_root};

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

/// `cargo xtask demo --quick` on a copy of the shipped data (so that the test never writes into
/// data/): every row passes, the report, the plots and the grain bundles are written, and a
/// second run skips every stage.
#[test]
fn the_demo_runs_its_quick_variant_then_skips_every_stage() {
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
    let run = || {
        let out = Command::new(binary("xtask"))
            .args(["demo", "--quick", "--data"])
            .arg(dir.path())
            .arg("--bin-dir")
            .arg(binary("dem-run").parent().unwrap())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let first = run();
    println!("{first}");
    let rows: Vec<&str> = first
        .lines()
        .filter(|l| {
            [
                "| sphere |",
                "| packing |",
                "| beam |",
                "| sphere-path |",
                "| ellipsoid |",
                "| pair |",
                "| granular |",
            ]
            .iter()
            .any(|c| l.starts_with(c))
        })
        .collect();
    assert_eq!(rows.len(), 29, "{rows:?}");
    assert!(rows.iter().all(|r| r.ends_with("| pass |")), "{rows:?}");
    let out = dir.path().join("demo/out");
    assert!(
        std::fs::read_to_string(out.join("report-quick.md"))
            .unwrap()
            .contains("## beam")
    );
    for plot in [
        "sphere-quick.svg",
        "packing-quick.svg",
        "beam-quick.svg",
        "sphere-path-quick.svg",
        "ellipsoid-quick.svg",
        "pair-quick.svg",
        "granular-quick.svg",
        "granular-volumetric-quick.svg",
    ] {
        assert!(
            std::fs::read_to_string(out.join(plot))
                .unwrap()
                .starts_with("<svg")
        );
    }
    let modes = grain::ModesBundle::read(&out.join("sphere.modes")).unwrap();
    assert_eq!(modes.info.mirror_planes, "xyz");
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
    let grain = grain::GrainBundle::read(&out.join("sphere.grain")).unwrap();
    let deformation = grain.deformation.expect("a deformable grain");
    assert_eq!(deformation.internal_force, modes.internal_force);
    let second = run();
    let stages: Vec<&str> = second.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!stages.is_empty());
    assert!(
        stages.iter().all(|l| l.ends_with("skipped, up to date")),
        "{second}"
    );
}
