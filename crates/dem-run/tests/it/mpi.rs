//! Decomposed runs over MPI (feature `mpi`; docs/mpi.md) against the run in one process: the
//! same scene through `mpirun -n 2` and `-n 4` (oversubscribed on a small machine) and through
//! `dem-run` alone on one thread. The grains, walls and contact histories must come out bit for
//! bit (each grain's forces are summed in the same pair order in every process that owns it);
//! the energies, which each process sums over its own grains, to round-off.

use std::path::Path;
use std::process::Command;

use crate::common::{scene_file, sphere};

/// 150 grains of two sizes thrown by a slanted gravity against two walls, so that they cross
/// the subdomains' cuts (migrating with their contacts) and pile up in frictional contact.
const SCENE: &str = r#"
[run]
dt = 2e-4
steps = 3000
gravity = [-30, 0, -5]
[output]
history_every = 100
checkpoint_every = 3000
[contact]
law = "linear-springs"
kn = 1e5
ks = 5e4
friction = 0.4
[[packings]]
seed = 11
count = 150
region = { kind = "box", min = [0, 0, 0], max = [16, 12, 14] }
bundles = [{ bundle = "ball.grain" }]
sizes = [[0.8, 0.5], [1.2, 0.5]]
[[walls]]
kind = "plane"
point = [0, 0, -1]
normal = [0, 0, 1]
[[walls]]
kind = "plane"
point = [-1.5, 0, 0]
normal = [1, 0, 0]
"#;

fn run(dir: &Path, processes: usize) -> serde_json::Value {
    let out = dir.join(format!("p{processes}.run"));
    let dem_run = env!("CARGO_BIN_EXE_dem-run");
    let args = ["scene.toml", "--threads", "1", "--quiet", "--out"];
    let status = if processes == 1 {
        Command::new(dem_run)
            .args(args)
            .arg(&out)
            .current_dir(dir)
            .status()
    } else {
        Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-n"])
            .arg(processes.to_string())
            .arg(dem_run)
            .args(args)
            .arg(&out)
            .current_dir(dir)
            .status()
    }
    .unwrap();
    assert!(status.success(), "{processes} processes: {status}");
    let checkpoint = out.join("checkpoint/step_0000003000.json");
    serde_json::from_slice(&std::fs::read(checkpoint).unwrap()).unwrap()
}

fn history(dir: &Path, processes: usize) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(dir.join(format!("p{processes}.run/history.csv"))).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

#[test]
fn two_and_four_processes_give_the_bits_of_one() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    scene_file(dir.path(), SCENE);
    let one = run(dir.path(), 1);
    let state = &one["state"];
    // The run is one where decomposition matters: contacts at the end, and grains that moved
    // across the middle of the box (where 2 and 4 processes cut it).
    let histories = state["histories"].as_array().unwrap().len();
    assert!(histories >= 20, "{histories} pairs in contact");
    let x: Vec<f64> = (state["bodies"].as_array().unwrap().iter())
        .map(|b| b["position"][0].as_f64().unwrap())
        .collect();
    let crossed = x.iter().filter(|&&x| x < 4.0).count();
    eprintln!("{histories} pairs, {crossed} grains below x = 4");
    assert!(crossed > 50, "{crossed} grains below x = 4");
    let (header, rows) = history(dir.path(), 1);
    for processes in [2, 4] {
        let many = run(dir.path(), processes);
        for part in ["bodies", "walls", "histories", "cell"] {
            assert_eq!(
                state[part], many["state"][part],
                "{processes} processes: {part}"
            );
        }
        let (h, r) = history(dir.path(), processes);
        assert_eq!((&h, r.len()), (&header, rows.len()));
        for (a, b) in rows.iter().zip(&r) {
            for (k, (x, y)) in a.iter().zip(b).enumerate() {
                // Sums over grains, by process: round-off. The walls' forces (summed in key
                // order) and the counts: exact.
                let sum = header[k].starts_with("kinetic")
                    || header[k].starts_with("potential")
                    || header[k].starts_with("energy")
                    || header[k].starts_with("elastic")
                    || header[k].starts_with("work")
                    || header[k].starts_with("dissipated")
                    || header[k].starts_with("momentum");
                // The row's largest energy: the scale of the round-off in each.
                let scale = a[1..14].iter().fold(1.0f64, |m, v| m.max(v.abs()));
                // The sample measures over pairs and grains: round-off of their own size.
                let measure = header[k].starts_with("fabric") || header[k] == "unbalanced";
                if sum {
                    assert!((x - y).abs() <= 1e-12 * scale, "{}: {x} {y}", header[k]);
                } else if measure {
                    assert!(
                        (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                        "{}: {x} {y}",
                        header[k]
                    );
                } else {
                    assert_eq!(
                        x, y,
                        "{processes} processes: {} at step {}",
                        header[k], a[0]
                    );
                }
            }
        }
    }
}
