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
    assert!(summary.contains("\"status\": \"interrupted\""), "{summary}");
}

/// Issue #23: a lattice within the grain limit whose memory the process cannot have aborted in
/// the allocator. Under an address-space limit of 1 GB (`ulimit -v`), 8e6 grains (about 16 GB
/// at the measured 2 kB per grain) are refused before anything is allocated, naming the need;
/// 1000 run.
#[cfg(target_os = "linux")]
#[test]
fn a_lattice_larger_than_the_memory_is_refused_by_its_need() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    let run = |counts: &str| {
        let text = format!(
            "[run]\ndt = 1e-4\nsteps = 1\n[output]\nhistory_every = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1000\n[[lattices]]\nbundle = \"ball.grain\"\norigin = [0, 0, 0]\ncounts = {counts}\nspacing = [1.1, 1.1, 1.1]\n"
        );
        let scene = common::scene_file(dir.path(), &text);
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v 1000000 && exec {} {} --out run --quiet --overwrite",
                env!("CARGO_BIN_EXE_dem-run"),
                scene.display()
            ))
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let o = run("[200, 200, 200]");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("lattices: 8000000 grains need about 16.4 GB")
            && stderr.contains("available to this process"),
        "{stderr}"
    );
    let o = run("[10, 10, 10]");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Issue #33: an option of a feature this build lacks (`--rebalance`, of `mpi`) got clap's
/// "unexpected argument" with a wrong tip; and `mpirun -n 2` of a build without MPI ran the
/// whole scene twice into one directory. Both now say the build has no MPI.
#[cfg(not(feature = "mpi"))]
#[test]
fn options_and_launches_of_the_mpi_feature_say_the_build_lacks_it() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    let scene = common::scene_file(dir.path(), SCENE);
    for (args, env) in [
        (vec!["--rebalance", "100"], None),
        (vec![], Some(("OMPI_COMM_WORLD_SIZE", "2"))),
        (vec![], Some(("PMI_SIZE", "4"))),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dem-run"));
        command
            .arg(&scene)
            .args(["--out", "run", "--quiet"])
            .args(&args);
        if let Some((k, v)) = env {
            command.env(k, v);
        }
        let out = command.current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("this build has no MPI") && stderr.contains("--features mpi"),
            "{stderr}"
        );
        assert!(!dir.path().join("run").exists(), "nothing written");
    }
}

/// A run says its first `EXCURSIONS_SAID` excursions at the step they happen, that more follow,
/// and at its end how many there were in all, while summary.json lists every one: six grains
/// at rest at the amplitude 0.03, past their precomputed level sets' `[-0.02, 0.02]` by a
/// quarter of its width from the first step.
#[test]
fn a_run_says_its_first_excursions_and_how_many_there_were() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "ball",
        0.5,
        0.1,
        100,
        common::TestMode::Dilation,
        [1.0, 100.0, 0.0],
        &[-0.02, -0.01, 0.01, 0.02],
    );
    let grains: String = (0..6)
        .map(|i| {
            format!(
                "[[grains]]\nbundle = \"ball.grain\"\nposition = [{}, 0, 0]\n\
                 modes = {{ levelset = \"precomputed\", amplitudes = [0.03] }}\n",
                2 * i
            )
        })
        .collect();
    let text = format!(
        "[run]\ndt = 1e-4\nsteps = 5\n[contact]\nlaw = \"linear-springs\"\nkn = 1000\n{grains}"
    );
    let scene = common::scene_file(dir.path(), &text);
    let out = dir.path().join("run");
    let run = Command::new(env!("CARGO_BIN_EXE_dem-run"))
        .arg(&scene)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let said = stderr.lines().filter(|l| l.contains(" is past [")).count();
    assert_eq!(said, dem_run::run::EXCURSIONS_SAID, "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("more amplitudes"))
            .count(),
        1,
        "{stderr}"
    );
    let total = stderr
        .lines()
        .find(|l| l.contains("6 amplitudes left a range"))
        .unwrap_or_else(|| panic!("no total: {stderr}"));
    // 0.03 is past 0.02 by 0.01, a quarter of the width 0.04 (to the amplitude's drift in 5
    // steps).
    assert!(
        total.contains("of 6 grains; the farthest by 2.5"),
        "{total}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["excursions"].as_array().unwrap().len(), 6);
}

/// The narrow phase's node loops, the sums over the mode columns and the deformable level sets'
/// queries run in code compiled for AVX2 where the processor has it, else in the baseline's
/// (`dem_core::lanes`): the two give the same bits. Eight spheres in contact with each other
/// and the walls, 1,000 steps, rigid and deformable (a dilation mode, semi-Lagrangian and
/// precomputed level sets), each run with and without `DEM_BASELINE_CODE=1`: the same history and final
/// checkpoint, byte for byte. On a processor without AVX2 both runs take the baseline, and the
/// test says so.
#[test]
fn the_baseline_code_and_avx2_give_the_same_bits() {
    #[cfg(target_arch = "x86_64")]
    let wide = std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let wide = false;
    if !wide {
        eprintln!("this processor has no AVX2: both runs take the baseline code");
    }
    let dir = tempfile::tempdir().unwrap();
    for kind in ["rigid", "semi-lagrangian", "precomputed"] {
        let at = dir.path().join(kind);
        std::fs::create_dir(&at).unwrap();
        let scene = match kind {
            "rigid" => crate::run::scene(&at, 1, 1000),
            update => crate::run::deformable(&at, 1, 1000, update),
        };
        let mut outputs = Vec::new();
        for baseline in [false, true] {
            let out = at.join(format!("baseline-{baseline}"));
            let mut command = Command::new(env!("CARGO_BIN_EXE_dem-run"));
            command.arg(&scene).arg("--out").arg(&out).arg("--quiet");
            if baseline {
                command.env(dem_core::lanes::BASELINE_CODE, "1");
            } else {
                command.env_remove(dem_core::lanes::BASELINE_CODE);
            }
            let o = command.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let read = |f: &str| std::fs::read(out.join(f)).unwrap();
            outputs.push((read("history.csv"), read("checkpoint/step_0000001000.json")));
        }
        assert!(outputs[0].0 == outputs[1].0, "{kind}: the histories differ");
        assert!(
            outputs[0].1 == outputs[1].1,
            "{kind}: the final checkpoints differ"
        );
        let history = String::from_utf8(outputs[0].0.clone()).unwrap();
        assert_eq!(history.lines().count(), 1 + 1 + 10, "{kind}: {history}");
    }
}
