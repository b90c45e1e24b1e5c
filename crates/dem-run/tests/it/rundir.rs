//! Issue #33: the run directory contract (dem_run::rundir), the checkpoint's identity, and
//! stop conditions that mean what they say. Each case is one a user met: files that were never
//! the run's destroyed, restarts and stages taking another experiment's state, stops met by
//! states they do not describe.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use dem_run::{RunOptions, Status, run};

use crate::common;
use crate::run::{options, scene};

/// Every file below `dir` with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

/// A user's files where a run writes: FEM snapshots in `vtk/`, notes in `checkpoint/` and at
/// the top.
const USER_FILES: [(&str, &str); 3] = [
    ("vtk/snapshot_1.vtu", "<VTKFile/>"),
    ("checkpoint/notes.txt", "the loading of run 3"),
    ("README.md", "my experiment"),
];

fn go(path: &Path, out: &Path, overwrite: bool) -> Result<dem_run::Summary, String> {
    let o = RunOptions {
        overwrite,
        ..options(out, None)
    };
    run(path, &o, &AtomicBool::new(false)).map_err(|e| e.to_string())
}

/// A directory holding a user's `vtk/` and `checkpoint/` folders is not "an earlier run": the
/// run writes beside them, and `--overwrite` removes the earlier run's files only (the user's
/// stay byte for byte, and so do their folders).
#[test]
fn a_run_and_its_overwrite_leave_a_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let out = dir.path().join("run");
    for (name, text) in USER_FILES {
        std::fs::create_dir_all(out.join(name).parent().unwrap()).unwrap();
        std::fs::write(out.join(name), text).unwrap();
    }
    let before = files(&out);
    go(&path, &out, false).unwrap();
    let after = files(&out);
    for (p, bytes) in &before {
        assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
    }
    assert!(out.join("checkpoint/step_0000001000.json").is_file());
    // A second run is refused, naming the earlier run's files.
    let e = go(&path, &out, false).unwrap_err();
    assert!(
        e.contains("holds an earlier run") && e.contains("history.csv"),
        "{e}"
    );
    // --overwrite replaces the run's files and nothing else: a file the earlier run wrote and
    // this one does not (a checkpoint at another step) is gone, the user's are as they were.
    let stale = out.join("checkpoint/step_0000000500.json");
    let scene_text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        scene_text.replace("checkpoint_every = 500", "checkpoint_every = 0"),
    )
    .unwrap();
    go(&path, &out, true).unwrap();
    assert!(!stale.exists() && !out.join("checkpoint/step_0000001000.json").exists());
    let again = files(&out);
    for (p, bytes) in &before {
        assert_eq!(again.get(p), Some(bytes), "{} changed", p.display());
    }
    // The run's files are its manifest's; nothing of the earlier run's remains unlisted.
    let manifest = std::fs::read_to_string(out.join("manifest.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = (manifest.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["schema"], 1);
    let listed: Vec<&str> = (lines[1..].iter())
        .filter_map(|l| l["file"].as_str())
        .collect();
    assert!(listed.contains(&"history.csv") && listed.contains(&"summary.json"));
    for p in again.keys() {
        let rel = p.strip_prefix(&out).unwrap().to_str().unwrap();
        let user = USER_FILES.iter().any(|(n, _)| *n == rel);
        assert!(
            user || listed.contains(&rel) || rel == "manifest.jsonl" || rel == ".lock",
            "{rel} is neither the user's nor listed"
        );
    }
}

/// A file at a name a run writes that no manifest lists (a user's history.csv, a node cloud or
/// checkpoint of another program, a run of a dem-run before manifests) is never replaced, even
/// with --overwrite: the run is refused before it writes anything.
#[test]
fn a_file_at_a_runs_name_that_no_manifest_lists_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    for name in [
        "history.csv",
        "summary.json",
        "vtk/nodes_0000000250.vtp",
        "checkpoint/step_0000000500.json",
    ] {
        let out = dir.path().join(name.replace('/', "_"));
        std::fs::create_dir_all(out.join(name).parent().unwrap()).unwrap();
        std::fs::write(out.join(name), "mine").unwrap();
        let e = go(&path, &out, true).unwrap_err();
        assert!(e.contains(name) && e.contains("never replaces"), "{e}");
        assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), "mine");
        let left: Vec<_> = files(&out).into_keys().collect();
        assert_eq!(left, vec![out.join(".lock"), out.join(name)], "{name}");
    }
    // A file where a run keeps a folder (found by the semantic campaign: the run started and
    // failed at its first checkpoint), and a manifest that is not dem-run's.
    for (name, expected) in [
        ("vtk", "a folder of its outputs"),
        ("checkpoint", "a folder of its outputs"),
        ("manifest.jsonl", "not a manifest of dem-run's"),
    ] {
        let out = dir.path().join(format!("{name}-file"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(name), "mine").unwrap();
        let e = go(&path, &out, true).unwrap_err();
        assert!(e.contains(name) && e.contains(expected), "{e}");
        assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), "mine");
        assert!(!out.join("history.csv").exists());
    }
}

/// A packing's `grains.toml` overwrote a scene file of that name when `--out` was the scene's
/// folder: now refused, the scene untouched.
#[test]
fn a_packing_does_not_write_over_a_scene_named_like_its_output() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.3, 200);
    let text = r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "linear-springs"
kn = 1e5
[[packings]]
seed = 1
count = 5
region = { kind = "box", min = [0, 0, 0], max = [10, 10, 10] }
bundles = [{ bundle = "ball.grain", fraction = 1.0 }]
"#;
    let path = dir.path().join("grains.toml");
    std::fs::write(&path, text).unwrap();
    let e = go(&path, dir.path(), true).unwrap_err();
    assert!(
        e.contains("grains.toml") && e.contains("never replaces"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Into a folder of its own it writes the grains.
    go(&path, &dir.path().join("packed"), false).unwrap();
    assert!(dir.path().join("packed/grains.toml").is_file());
}

/// A run that fails leaves files that agree: summary.json says it failed, why, and at which
/// step history.csv ends; a failed restart in its own directory no longer leaves the old
/// summary (1000 steps, finished) beside a history cut back to the checkpoint.
#[test]
fn a_failed_run_says_so_in_its_summary_and_where_its_history_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let out = dir.path().join("run");
    let s = go(&path, &out, false).unwrap();
    assert_eq!(
        (s.status, s.steps, s.history_last_step),
        (Status::Finished, 1000, Some(1000))
    );
    // Restarted at step 500 with a step far too large: the run becomes unstable.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("dt = 4e-4", "dt = 0.2")).unwrap();
    let e = run(
        &path,
        &options(&out, Some(out.join("checkpoint/step_0000000500.json"))),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    let summary: dem_run::Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.status, Status::Failed);
    assert_eq!(summary.error.as_deref(), Some(e.as_str()));
    let history = std::fs::read_to_string(out.join("history.csv")).unwrap();
    let last: u64 = (history.lines().last().unwrap().split(',').next().unwrap())
        .parse()
        .unwrap();
    assert_eq!(summary.history_last_step, Some(last), "{e}");
    assert!(
        last > 500 && last <= summary.steps,
        "{last} {}",
        summary.steps
    );
    // The restart rewound the directory to its checkpoint: the later checkpoint is gone, so
    // --restart RUN_DIR takes the one the history continues from, and run.pvd lists only node
    // clouds that exist (those after the checkpoint were removed).
    assert!(!out.join("checkpoint/step_0000001000.json").exists());
    let pvd = std::fs::read_to_string(out.join("run.pvd")).unwrap();
    let listed: Vec<&str> = (pvd.split("file=\"").skip(1))
        .map(|t| t.split('"').next().unwrap())
        .collect();
    assert!(listed.len() >= 3, "{pvd}");
    for f in listed {
        assert!(out.join(f).is_file(), "run.pvd lists {f}, which is gone");
    }
}

/// `--restart A --out C` truncated run C's history: a restart into a directory holding another
/// run gets a fresh run's check. A stage restarted into the directory of the stage it
/// continues ran 0 steps, exited 0 and erased `stopped`: refused, and so is any restart that
/// would take no step.
#[test]
fn restarts_into_another_runs_directory_or_with_nothing_to_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let (a, c) = (dir.path().join("a"), dir.path().join("c"));
    go(&path, &a, false).unwrap();
    go(&path, &c, false).unwrap();
    let c_files = files(&c);
    let middle = a.join("checkpoint/step_0000000500.json");
    let e = run(&path, &options(&c, Some(middle)), &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("holds an earlier run") && e.contains("--overwrite"),
        "{e}"
    );
    assert_eq!(files(&c), c_files, "refused before any write");
    // Its own latest checkpoint is the run's end: nothing left.
    let e = run(
        &path,
        &options(&a, Some(a.clone())),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nothing is left to run") && e.contains("run.steps"),
        "{e}"
    );
    // A stage (its own scene) restarted into the directory of the run it continues.
    let stage = dir.path().join("stage.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &stage,
        text.replace("steps = 1000", "steps = 100\nstage = true"),
    )
    .unwrap();
    let e = run(
        &stage,
        &options(&a, Some(a.clone())),
        &AtomicBool::new(false),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("a stage (run.stage = true) starts its own run directory"),
        "{e}"
    );
    let summary = std::fs::read_to_string(a.join("summary.json")).unwrap();
    assert!(summary.contains("\"status\": \"finished\""), "{summary}");
    // In a directory of its own it runs its 100 steps.
    let s = run(
        &stage,
        &options(&dir.path().join("stage"), Some(a.clone())),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(s.steps, 1100);
}

/// A checkpoint carries what identifies its experiment; a scene of other grains (rods for
/// balls, another scale, another count), another law or another cell is refused naming what
/// differs, while a change of dt, coefficients or loading is allowed.
#[test]
fn a_restart_refuses_another_experiments_scene_and_says_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), 1, 500);
    let out = dir.path().join("run");
    go(&path, &out, false).unwrap();
    let checkpoint = out.join("checkpoint/step_0000000500.json");
    let text = std::fs::read_to_string(&path).unwrap();
    // Rods of the same count and similar size, baked as another bundle.
    common::brick(dir.path(), "rod", [0.2, 0.2, 0.45], 0.05, 300);
    let restart = |edited: String, name: &str| {
        let p = dir.path().join(format!("{name}.toml"));
        std::fs::write(&p, edited).unwrap();
        run(
            &p,
            &options(&dir.path().join(name), Some(checkpoint.clone())),
            &AtomicBool::new(false),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    let e = restart(text.replace("ball.grain", "rod.grain"), "rods").unwrap_err();
    assert!(
        e.contains("grain 0: the checkpoint's grain is ball.grain at scale 1")
            && e.contains("the scene's rod.grain at scale 1")
            && e.contains("another experiment"),
        "{e}"
    );
    let e = restart(
        text.replace(
            "bundle = \"ball.grain\"",
            "bundle = \"ball.grain\"\nscale = 1.1",
        ),
        "scaled",
    )
    .unwrap_err();
    assert!(e.contains("the scene's ball.grain at scale 1.1"), "{e}");
    // The same bundle baked again (the same grain, another file) is the same experiment.
    std::fs::create_dir(dir.path().join("copy")).unwrap();
    for f in files(&dir.path().join("ball.grain")).keys() {
        let rel = f.strip_prefix(dir.path().join("ball.grain")).unwrap();
        let to = dir.path().join("copy/ball.grain").join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, to).unwrap();
    }
    restart(
        text.replace("\"ball.grain\"", "\"copy/ball.grain\""),
        "copied",
    )
    .unwrap();
    let e = restart(
        text.replace("law = \"linear-springs\"", "law = \"area-tractions\""),
        "law",
    )
    .unwrap_err();
    assert!(
        e.contains("contact.law: the checkpoint's run has law \"linear-springs\""),
        "{e}"
    );
    // dt and the law's coefficients may change, and do.
    restart(
        text.replace("dt = 4e-4", "dt = 2e-4")
            .replace("friction = 0.4", "friction = 0.2"),
        "changed",
    )
    .unwrap();
}

/// With no contact the unbalanced-force ratio read 0, so `[stop] unbalanced = 0.01` stopped
/// grains in free fall at the first check (and wrote the checkpoint a next stage starts from).
/// Undefined measures now meet no condition; values no state can take are refused.
#[test]
fn stop_conditions_need_a_state_that_meets_them() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.05, 300);
    let falling = |stop: &str| {
        format!(
            "[run]\ndt = 1e-4\nsteps = 300\ngravity = [0, 0, -9.81]\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 5]\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n[stop]\n{stop}\nevery = 50\n"
        )
    };
    let path = common::scene_file(dir.path(), &falling("unbalanced = 0.01"));
    let s = go(&path, &dir.path().join("fall"), false).unwrap();
    assert_eq!(
        (s.status, s.steps),
        (Status::Finished, 300),
        "{:?}",
        s.stopped
    );
    for (stop, key, expected) in [
        ("unbalanced = 0", "stop.unbalanced", "> 0"),
        ("unbalanced = -1", "stop.unbalanced", "> 0"),
        (
            "pressure = -49",
            "stop.pressure",
            "> 0 (the mean stress of a cohesionless sample",
        ),
        (
            "solid_fraction = 55",
            "stop.solid_fraction",
            "a fraction, not a percentage",
        ),
    ] {
        let path = common::scene_file(dir.path(), &falling(stop));
        let e = go(&path, &dir.path().join("refused"), false).unwrap_err();
        assert!(e.contains(key) && e.contains(expected), "{stop}: {e}");
    }
}
