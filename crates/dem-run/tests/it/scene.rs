//! Malformed scenes are refused with the file, the key's path and what was expected.

use crate::common;

use dem_run::Scene;

const GOOD: &str = r#"
[run]
dt = 1e-4
steps = 10
[contact]
law = "linear-springs"
kn = 100
[[grains]]
bundle = "ball.grain"
position = [0, 0, 0]
[[walls]]
kind = "plane"
point = [0, 0, -1]
normal = [0, 0, 1]
"#;

const HERTZ: &str = "law = \"hertz-jaeger\"\nshear_modulus = 1e6\npoisson_ratio = 0.2";

/// The error of a scene text, or "accepted".
fn error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 50);
    common::brick(dir.path(), "brick", [0.5, 0.3, 0.2], 0.1, 50);
    // A bundle whose manifest was edited to a mass of 0 (the writer refuses one).
    let massless = dir.path().join("massless.grain");
    std::fs::create_dir(&massless).unwrap();
    for entry in std::fs::read_dir(dir.path().join("ball.grain")).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(&from, massless.join(from.file_name().unwrap())).unwrap();
    }
    let manifest = massless.join("grain.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    json["properties"]["mass"] = 0.0.into();
    std::fs::write(&manifest, json.to_string()).unwrap();
    let path = common::scene_file(dir.path(), text);
    match Scene::read(&path) {
        Err(e) => e.to_string(),
        Ok(scene) => match dem_run::build::from_scene(&scene, &path) {
            Err(e) => e.to_string(),
            Ok(_) => "accepted".into(),
        },
    }
}

#[test]
fn malformed_scenes_name_the_key_and_what_was_expected() {
    let cases = [
        (GOOD.to_string(), vec![]),
        (
            GOOD.replace("kn = 100", "kn = 100\nkm = 3"),
            vec![
                "scene.toml: contact.km: unknown field `km`, expected one of `kn`, `ks`, `friction`, `normal_damping`, `nodes` (law = \"linear-springs\")",
            ],
        ),
        (
            GOOD.replace("[run]\ndt = 1e-4\nsteps = 10\n", ""),
            vec!["missing field `run`"],
        ),
        (
            GOOD.replace("position = [0, 0, 0]", "position = [0, 0]"),
            vec!["grains[0].position"],
        ),
        (
            GOOD.replace("position = [0, 0, 0]", "position = \"origin\""),
            vec!["grains[0].position"],
        ),
        (
            GOOD.replace("steps = 10", "steps = 10\nduration = 1.0"),
            vec!["scene.toml: run: give exactly one of `steps` and `duration`"],
        ),
        (
            GOOD.replace("dt = 1e-4", "dt = -1e-4"),
            vec!["run.dt: a time step > 0 or \"auto\", got -0.0001"],
        ),
        (GOOD.replace("dt = 1e-4", "dt = \"fast\""), vec!["run.dt"]),
        (
            GOOD.replace(
                "position = [0, 0, 0]",
                "position = [0, 0, 0]\nhold = [\"rotation\"]\nmotion = { velocity = [0, 0, 1] }",
            ),
            vec!["grains[0].hold: a prescribed grain follows its motion"],
        ),
        (
            GOOD.replace(
                "position = [0, 0, 0]",
                "position = [0, 0, 0]\nhold = [\"rotation\"]\nangular_velocity = [0, 1, 0]",
            ),
            vec!["grains[0].angular_velocity: [0, 0, 0] with the rotation held"],
        ),
        (
            GOOD.replace(
                "position = [0, 0, 0]",
                "position = [0, 0, 0]\nhold = [\"x\", \"z\"]\nvelocity = [0, 1, 2]",
            ),
            vec!["grains[0].velocity: 0 along the held axes [X, Z], got [0.0, 1.0, 2.0]"],
        ),
        (
            GOOD.replace(
                "position = [0, 0, 0]",
                "position = [0, 0, 0]\nhold = [\"spin\"]",
            ),
            vec!["grains[0].hold", "unknown variant `spin`"],
        ),
        (
            GOOD.replace("kn = 100", "kn = 0"),
            vec!["contact.kn: a stiffness > 0"],
        ),
        (
            GOOD.replace("law = \"linear-springs\"", "law = \"hooke\""),
            vec!["contact.law", "unknown variant `hooke`"],
        ),
        (
            GOOD.replace(
                "position = [0, 0, 0]",
                "position = [0, 0, 0]\norientation = [1, 1, 0, 0]",
            ),
            vec!["grains[0].orientation: a unit quaternion"],
        ),
        (
            GOOD.replace("normal = [0, 0, 1]", "normal = [0, 0, 0]"),
            vec!["walls[0].normal: a non-zero direction"],
        ),
        (
            GOOD.replace(
                "normal = [0, 0, 1]",
                "normal = [0, 0, 1]\nmotion = { table = [[0, 0, 0, 0], [0, 0, 0, 1]] }",
            ),
            vec!["walls[0].motion.table[1]: times must increase"],
        ),
        (
            GOOD.replace("kind = \"plane\"", "kind = \"sphere\""),
            vec!["walls[0]", "unknown variant `sphere`"],
        ),
        (
            GOOD.replace("ball.grain", "missing.grain"),
            vec!["scene.toml: grains[0].bundle:", "missing.grain"],
        ),
        (
            GOOD.replace("ball.grain", "massless.grain"),
            vec![
                "scene.toml: grains[0].bundle:",
                "massless.grain/grain.json: `properties.mass`: expected a positive number, got 0",
            ],
        ),
        (
            GOOD.replace("[contact]", "[contact"),
            vec!["scene.toml: (syntax)", "line 5"],
        ),
        (
            GOOD.replace("law = \"linear-springs\"\nkn = 100", HERTZ),
            vec![],
        ),
        (
            GOOD.replace(
                "law = \"linear-springs\"\nkn = 100",
                "law = \"hertz-jaeger\"\nshear_modulus = 1e6",
            ),
            vec!["contact.poisson_ratio: missing field `poisson_ratio` (law = \"hertz-jaeger\")"],
        ),
        (
            GOOD.replace(
                "law = \"linear-springs\"\nkn = 100",
                &format!("{HERTZ}\nks = 3"),
            ),
            vec!["contact.ks: unknown field `ks`", "(law = \"hertz-jaeger\")"],
        ),
        (
            GOOD.replace("kn = 100", "kn = 100\nshear_modulus = 1e6"),
            vec![
                "contact.shear_modulus: unknown field `shear_modulus`",
                "(law = \"linear-springs\")",
            ],
        ),
        (
            GOOD.replace("law = \"linear-springs\"\nkn = 100", HERTZ)
                .replace(
                    "kind = \"plane\"\npoint = [0, 0, -1]\nnormal = [0, 0, 1]",
                    "kind = \"cylinder\"\npoint = [0, 0, 0]\naxis = [0, 0, 1]\nradius = 3",
                ),
            vec!["walls[0]: hertz-jaeger meets flat walls (planes) only"],
        ),
        (
            GOOD.replace("law = \"linear-springs\"\nkn = 100", HERTZ)
                .replace("ball.grain", "brick.grain"),
            vec!["contact.law: hertz-jaeger needs spherical grains; grain 0 is not a sphere"],
        ),
        // A neighbour-list skin must be a length >= 0, and not so large that it lists every
        // pair of a large scene.
        (
            GOOD.replace("steps = 10", "steps = 10\nskin = -0.1"),
            vec!["run.skin: a length >= 0, got -0.1"],
        ),
        (
            GOOD.replace("steps = 10", "steps = 10\nskin = 1e6"),
            vec![
                "run.skin: at most 2 x the largest grain's bounding radius",
                "got 1e6: a larger skin lists pairs far out of reach",
            ],
        ),
        (GOOD.replace("steps = 10", "steps = 10\nskin = 0"), vec![]),
        // Found by mutating inputs (issue #14): accepted, then a hang or an exhausted memory.
        (
            GOOD.replace("steps = 10", "steps = 10\nthreads = 4294967297"),
            vec!["run.threads: at most 1024 (0: one per core), got 4294967297"],
        ),
        (
            format!(
                "{GOOD}[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 5]\ncounts = [100000000, 1, 1]\nspacing = [2, 2, 2]\n"
            ),
            vec![
                "lattices[0].counts: the scene's grains and lattices make more than 10000000 grains (this lattice: [100000000, 1, 1])",
            ],
        ),
        (
            format!(
                "{GOOD}[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 5]\ncounts = [4294967296, 4294967296, 2]\nspacing = [2, 2, 2]\n"
            ),
            vec!["lattices[0].counts"],
        ),
        // Found by the fuzz campaign (issue #14): an origin of 1e308 put a lattice's 3,000
        // grains on one point (1e308 + 22 k == 1e308), and the first step ran for minutes.
        (
            format!(
                "{GOOD}[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 1e308]\ncounts = [1, 1, 3000]\nspacing = [2, 2, 2]\n"
            ),
            vec![
                "lattices[0].origin: the grain would sit at [0.0, 0.0, 1e308], more than 1e8 times its radius",
                "move the scene nearer the origin",
            ],
        ),
        (
            format!(
                "{GOOD}[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 5]\ncounts = [1, 1, 3000]\nspacing = [2, 2, 1e-320]\n"
            ),
            vec![
                "lattices[0].spacing: 1e-320 along z puts the grains on top of each other: at least 1e-3 times their radius",
            ],
        ),
        (
            GOOD.replace("position = [0, 0, 0]", "position = [0, -1e9, 0]"),
            vec!["grains[0].position: the grain would sit at [0.0, -1000000000.0, 0.0]"],
        ),
    ];
    let mut failures = Vec::new();
    for (text, wanted) in cases {
        let e = error(&text);
        if wanted.is_empty() && e != "accepted" {
            failures.push(format!("refused a good scene: {e}"));
        }
        if !wanted.is_empty() && e == "accepted" {
            failures.push(format!("accepted:\n{text}"));
        }
        for w in wanted {
            if !e.contains(w) {
                failures.push(format!("`{w}` not in: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Deformable options are checked against the bundles, naming the key (issue: a deformable
/// option on a rigid bundle, an amplitude outside a table's range at start, hertz-jaeger with a
/// deformable grain, a precomputed update on a bundle without samples).
#[test]
fn deformable_options_that_do_not_fit_the_bundle_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 50);
    let soft = common::deformable_sphere(
        dir.path(),
        "soft",
        0.5,
        0.1,
        50,
        common::TestMode::Dilation,
        [1.0, 10.0, 0.0],
        &[],
    );
    let mut table = grain::GrainBundle::read(&soft).unwrap();
    table.deformation.as_mut().unwrap().internal_force = grain::InternalForce::Table {
        interpolation: grain::TableInterpolation::MonotoneCubic,
        table: grain::ForceTable {
            eps: vec![-0.1, 0.0, 0.5, 1.0],
            force: vec![-1.0, 0.0, 6.0, 20.0],
            energy: vec![0.0; 4],
        },
    };
    table.write(&dir.path().join("table.grain")).unwrap();
    // Issue #23: a bundle whose stiffness is not positive, or whose damping feeds energy in.
    let mut bad = grain::GrainBundle::read(&soft).unwrap();
    bad.deformation.as_mut().unwrap().modal_stiffness[[0, 0]] = -10.0;
    bad.write(&dir.path().join("negative-k.grain")).unwrap();
    bad.deformation.as_mut().unwrap().modal_stiffness[[0, 0]] = 10.0;
    bad.deformation.as_mut().unwrap().modal_damping[[0, 0]] = -0.5;
    bad.write(&dir.path().join("negative-c.grain")).unwrap();
    // A mode field past f32's range, which the solver keeps the fields in.
    bad.deformation.as_mut().unwrap().modal_damping[[0, 0]] = 0.5;
    bad.deformation.as_mut().unwrap().grid_modes[[0, 1, 1, 1, 2]] = -1e39;
    bad.write(&dir.path().join("huge-field.grain")).unwrap();
    let scene = |bundle: &str, modes: &str, law: &str| {
        format!(
            "[run]\ndt = 1e-4\nsteps = 10\n[contact]\n{law}\n\
             [[grains]]\nbundle = \"{bundle}.grain\"\nposition = [0, 0, 0]\n{modes}\n"
        )
    };
    let springs = "law = \"linear-springs\"\nkn = 100";
    let error = |text: String| {
        let path = common::scene_file(dir.path(), &text);
        match Scene::read(&path) {
            Err(e) => e.to_string(),
            Ok(scene) => match dem_run::build::from_scene(&scene, &path) {
                Err(e) => e.to_string(),
                Ok(_) => "accepted".into(),
            },
        }
    };
    let cases = [
        (scene("soft", "", springs), "accepted"),
        (
            scene(
                "table",
                "modes = { amplitudes = [0.7], damping = { tangent = 0.1 } }",
                springs,
            ),
            "accepted",
        ),
        (
            scene("soft", "modes = { active = false }", HERTZ),
            "accepted",
        ),
        (
            scene(
                "ball",
                "modes = { levelset = \"semi-lagrangian\" }",
                springs,
            ),
            "grains[0].modes: the bundle is rigid (no modes)",
        ),
        (
            scene("soft", "modes = { levelset = \"precomputed\" }", springs),
            "grains[0].modes.levelset: \"precomputed\" needs level sets baked at sampled amplitudes",
        ),
        (
            scene("table", "modes = { amplitudes = [1.5] }", springs),
            "grains[0].modes.amplitudes: amplitude 1.5 is outside the internal-force table's range [-0.1, 1]",
        ),
        (
            scene("soft", "", HERTZ),
            "contact.law: hertz-jaeger needs rigid spheres; grain 0 is deformable",
        ),
        (
            scene("soft", "modes = { amplitudes = [0.1, 0.2] }", springs),
            "grains[0].modes.amplitudes: one value per mode (1), got 2",
        ),
        (
            scene(
                "soft",
                "modes = { active = false, levelset = \"rigid\" }",
                springs,
            ),
            "grains[0].modes.active: `active = false` runs the grain rigid",
        ),
        (
            scene("soft", "modes = { damping = { stiffness = -1 } }", springs),
            "grains[0].modes.damping: a coefficient >= 0, got -1",
        ),
        (
            scene(
                "soft",
                "modes = { damping = { matrix = [[1, 2]] } }",
                springs,
            ),
            "grains[0].modes.damping.matrix: a symmetric, positive semi-definite 1 x 1 matrix",
        ),
        (
            scene(
                "soft",
                "modes = { damping = { matrix = [[-0.5]] } }",
                springs,
            ),
            "grains[0].modes.damping.matrix: a symmetric, positive semi-definite 1 x 1 matrix (one row per mode; negative damping feeds energy in)",
        ),
        (
            scene("negative-k", "", springs),
            "the modal stiffness is not symmetric positive definite",
        ),
        (
            scene("negative-c", "", springs),
            "the modal damping is not symmetric positive semi-definite",
        ),
        (
            scene("huge-field", "", springs),
            "a mode field holds -1e39, beyond the magnitude 3.4e38",
        ),
        (
            scene("soft", "modes = { levelset = \"advected\" }", springs),
            "grains[0].modes.levelset: unknown level-set update `advected`, expected one of `rigid`, `semi-lagrangian`, `precomputed`",
        ),
    ];
    let mut failures = Vec::new();
    for (text, wanted) in cases {
        let e = error(text.clone());
        if !e.contains(wanted) {
            failures.push(format!("wanted `{wanted}`, got: {e}\n{text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Found by mutating inputs (issue #14): a byte that is not UTF-8 was reported without a
/// position. The message gives its line and column.
#[test]
fn a_scene_that_is_not_utf8_is_refused_with_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scene.toml");
    let mut bytes = GOOD.as_bytes().to_vec();
    let at = GOOD.find("kn = 100").unwrap() + 5;
    bytes[at] = 0xff;
    std::fs::write(&path, bytes).unwrap();
    let e = Scene::read(&path).unwrap_err().to_string();
    assert!(
        e.contains("scene.toml: line 7, column 6: not UTF-8 text (byte 0xff)"),
        "{e}"
    );
}

/// Issue #23: a grain whose centre starts behind a wall (it would be launched) and a wall that
/// moves more than a tenth of the smallest grain's radius per step (it overruns its contacts)
/// are refused, naming the grain or the wall; the same scenes within the limits run.
#[test]
fn grains_behind_walls_and_walls_that_overrun_grains_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 50);
    let scene = |z: f64, speed: f64| {
        format!(
            "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, {z}]\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n\
             motion = {{ velocity = [0, 0, {speed}] }}\n"
        )
    };
    let build = |text: String| {
        let path = common::scene_file(dir.path(), &text);
        dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path)
    };
    let r = build(scene(0.6, 1.0)).unwrap().world.shapes[0].bounding_radius;
    let e = build(scene(-0.1, 0.0)).err().unwrap().to_string();
    assert!(
        e.contains("grains[0]: a grain's centre is 1e-1 behind walls[0]"),
        "{e}"
    );
    // A tenth of the bounding radius per step of 1e-3.
    let limit = 0.1 * r / 1e-3;
    build(scene(0.6, 0.99 * limit)).unwrap();
    let e = build(scene(0.6, 1.01 * limit)).err().unwrap().to_string();
    assert!(
        e.contains("walls[0].motion: it moves")
            && e.contains(&format!(
                "more than 0.1 of the smallest grain's radius {r:e}"
            )),
        "{e}"
    );
}

/// Issue #33: a grain scaled by 1e-65 had moments of inertia of 0 (`s^5` underflowed) and the
/// run "diverged", to be cured with a smaller step; by 1e62, infinite ones. The scale is refused
/// under its own key, with the quantity and the scales that keep `I s^5` normal: the ball's
/// moments are `2/5 m r^2 = pi / 60`.
#[test]
fn a_scale_the_grain_cannot_take_is_refused_under_its_key() {
    let moment = std::f64::consts::PI / 60.0;
    let range = format!(
        "here it must lie between about {:.3e} and {:.3e}",
        (f64::MIN_POSITIVE / moment).powf(0.2),
        (f64::MAX.powf(0.2) / moment.powf(0.2))
    );
    let small = error(&GOOD.replace(
        "position = [0, 0, 0]",
        "position = [0, 0, 0]\nscale = 1e-65",
    ));
    assert!(
        small.contains("scene.toml: grains[0].scale: ")
            && small.contains(
                "ball.grain: the scale 1e-65 makes the principal moments of inertia 5.24e-327, which is not a normal floating-point number"
            )
            && small.ends_with(&range),
        "{small}"
    );
    let large = error(&format!(
        "{GOOD}[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 5e62]\ncounts = [1, 1, 1]\nspacing = [2, 2, 2]\nscale = 1e62\n"
    ));
    assert!(
        large.contains("scene.toml: lattices[0].scale: ")
            && large.contains("the scale 1e62 makes the principal moments of inertia 5.24e308")
            && large.ends_with(&range),
        "{large}"
    );
}
