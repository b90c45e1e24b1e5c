//! The `dem-run` command line: outputs of a run, and Ctrl-C.

use crate::common;

use std::process::Command;

const SCENE: &str = r#"
[run]
dt = 1e-4
duration = 1000.0
gravity = [0, 0, -9.81]
[output]
history_every = 1000
[contact]
law = "linear-springs"
kn = 1000
[[grains]]
bundle = "ball.grain"
position = [0, 0, 0.49]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
"#;

/// SIGINT (what Ctrl-C sends) makes dem-run write a checkpoint, report it, and exit with 130.
#[cfg(unix)]
#[test]
fn ctrl_c_writes_a_checkpoint_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    let scene = common::scene_file(dir.path(), SCENE);
    let child = Command::new(env!("CARGO_BIN_EXE_dem-run"))
        .arg(&scene)
        .args(["--out", "run", "--quiet"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way (its history has rows), then interrupt it.
    let history = dir.path().join("run/history.csv");
    for _ in 0..200 {
        if std::fs::metadata(&history).is_ok_and(|m| m.len() > 0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted; checkpoint "), "{stderr}");
    let checkpoints: Vec<_> = std::fs::read_dir(dir.path().join("run/checkpoint"))
        .unwrap()
        .collect();
    assert_eq!(checkpoints.len(), 1);
    let summary = std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap();
    assert!(summary.contains("\"interrupted\": true"), "{summary}");
}
