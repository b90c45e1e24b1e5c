//! Malformed scenes are refused with the file, the key's path and what was expected.

mod common;

use dem_run::{Scene, Simulation};

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

fn error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 50);
    let path = common::scene_file(dir.path(), text);
    match Scene::read(&path) {
        Err(e) => e.to_string(),
        Ok(scene) => match Simulation::from_scene(&scene, &path) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted:\n{text}"),
        },
    }
}

#[test]
fn malformed_scenes_name_the_key_and_what_was_expected() {
    let cases = [
        (
            GOOD.replace("kn = 100", "kn = 100\nkm = 3"),
            vec!["scene.toml: contact.km: unknown field `km`, expected one of `law`"],
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
            GOOD.replace("[contact]", "[contact"),
            vec!["scene.toml: (syntax)", "line 5"],
        ),
    ];
    let mut failures = Vec::new();
    for (text, wanted) in cases {
        let e = error(&text);
        for w in wanted {
            if !e.contains(w) {
                failures.push(format!("`{w}` not in: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
