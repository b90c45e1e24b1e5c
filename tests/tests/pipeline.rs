//! The README's main job, and the promise that unbuilt tools refuse to run rather than fake output.

use std::process::Command;

use e2e::{binary, workspace_root};

#[test]
fn failing_stages_write_nothing_and_unbuilt_tools_say_so() {
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
    let out = Command::new(binary("xtask")).arg("demo").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "xtask demo");
}

#[test]
fn shipped_sphere_compaction_pipeline_runs_then_skips() {
    // Run a copy of the case, so that the test never writes into data/.
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("sphere-compaction");
    let reference = dir.path().join("reference");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::create_dir_all(&reference).unwrap();
    let data = workspace_root().join("data");
    for file in ["pipeline.toml", "settle.toml"] {
        std::fs::copy(data.join("sphere-compaction").join(file), case.join(file)).unwrap();
    }
    let table = "sphere_compaction_lookup_paper.csv";
    std::fs::copy(data.join("reference").join(table), reference.join(table)).unwrap();
    let fem = dir.path().join("fem/sphere");
    std::fs::create_dir_all(&fem).unwrap();
    for file in ["sphere.frd.gz", "sphere.inp", "sphere_scalars.csv"] {
        std::fs::copy(data.join("fem/sphere").join(file), fem.join(file)).unwrap();
    }

    let run = || {
        let out = Command::new(binary("xtask"))
            .args(["pipeline", case.to_str().unwrap(), "--bin-dir"])
            .arg(binary("levelset-bake").parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run();
    assert!(
        first.contains("reference-plot: runs, output out/lookup_paper.svg is missing"),
        "{first}"
    );
    let svg = std::fs::read_to_string(case.join("out/lookup_paper.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("Appendix B"));
    // The FEM octant mirrored to the whole sphere, baked as a deformable grain.
    let modes = grain::ModesBundle::read(&case.join("out/sphere.modes")).unwrap();
    assert_eq!(modes.info.mirror_planes, "xyz");
    let grain = grain::GrainBundle::read(&case.join("out/sphere_fem.grain")).unwrap();
    let deformation = grain.deformation.expect("a deformable grain");
    assert_eq!(deformation.modal_stiffness, modes.stiffness);
    assert_eq!(deformation.internal_force, modes.internal_force);
    assert_eq!(
        deformation.precomputed[0].len(),
        4,
        "level sets at 0 (added), 0.25, 0.5, 1 mm"
    );
    // The 27 rigid spheres settle: the kinetic energy ends a thousand times below its peak.
    let history = std::fs::read_to_string(case.join("out/settle.run/history.csv")).unwrap();
    let kinetic: Vec<f64> = history
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    let peak = kinetic.iter().copied().fold(0.0, f64::max);
    assert!(*kinetic.last().unwrap() < 1e-3 * peak, "{kinetic:?}");
    assert!(case.join("out/settle.run/run.pvd").is_file());
    assert!(case.join("out/settle_energy.svg").is_file());
    let second = run();
    for stage in [
        "reference-plot",
        "bake-sphere",
        "modes-sphere",
        "plot-sphere-force",
        "bake-sphere-fem",
        "settle-spheres",
        "plot-settle",
    ] {
        assert!(
            second.contains(&format!("{stage}: skipped, up to date")),
            "{second}"
        );
    }
}
