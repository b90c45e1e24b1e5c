//! Decomposed runs over MPI (feature `mpi`; docs/mpi.md) against the run in one process: the
//! same scene through `mpirun -n 2` and `-n 4` (oversubscribed on a small machine) and through
//! `dem-run` alone on one thread. The grains, walls and contact histories must come out bit for
//! bit (each grain's forces are summed in the same pair order in every process that owns it);
//! the energies, which each process sums over its own grains, to round-off.

use std::path::Path;
use std::process::Command;

use crate::common::{TestMode, deformable_sphere, scene_file, sphere};

/// 150 grains of two sizes thrown by a slanted gravity against two walls, so that they cross
/// the subdomains' cuts (migrating with their contacts) and pile up in frictional contact.
const SCENE: &str = r#"
[run]
dt = 2e-4
steps = 3000
gravity = [-30, 0, -5]
[output]
history_every = 100
checkpoint_every = 1500
vtk_every = 3000
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

/// Runs `dir/scene.toml` on `processes` (1: `dem-run` alone) into `dir/<name>.run`, with
/// `extra` arguments; returns the checkpoint at `step`.
fn run_as(
    dir: &Path,
    processes: usize,
    name: &str,
    extra: &[&str],
    step: u64,
) -> serde_json::Value {
    let out = dir.join(format!("{name}.run"));
    let dem_run = env!("CARGO_BIN_EXE_dem-run");
    let args = ["scene.toml", "--threads", "1", "--quiet", "--out"];
    let mut command = if processes == 1 {
        Command::new(dem_run)
    } else {
        let mut c = Command::new("mpirun");
        c.args(["--allow-run-as-root", "--oversubscribe", "-n"])
            .arg(processes.to_string())
            .arg(dem_run);
        c
    };
    let status = own_session(&mut command, dir)
        .args(args)
        .arg(&out)
        .args(extra)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{processes} processes: {status}");
    let checkpoint = out.join(format!("checkpoint/step_{step:010}.json"));
    serde_json::from_slice(&std::fs::read(checkpoint).unwrap()).unwrap()
}

/// Open MPI's session directory in the test's own `dir`: tests that start MPI at the same
/// moment (a singleton `dem-run` too) otherwise race to create the same directory under /tmp,
/// and the loser fails with "mkdir ... File exists" (seen once in CI).
fn own_session<'c>(command: &'c mut Command, dir: &Path) -> &'c mut Command {
    command.env("OMPI_MCA_orte_tmpdir_base", dir)
}

fn run(dir: &Path, processes: usize) -> serde_json::Value {
    run_as(dir, processes, &format!("p{processes}"), &[], 3000)
}

/// Two checkpoints' states: the grains, walls, contact histories, the cell's shape and rate,
/// step and time bit for bit; what each process sums over its own grains and pairs (the energy
/// ledger, the cell's measured stress, stiffness and images' forces) to round-off.
fn same(one: &serde_json::Value, many: &serde_json::Value, what: &str) {
    let (a, b) = (&one["state"], &many["state"]);
    for part in ["bodies", "walls", "histories", "step", "time"] {
        assert_eq!(a[part], b[part], "{what}: {part}");
    }
    let numbers = |v: &serde_json::Value| -> Vec<f64> {
        let mut x = Vec::new();
        flatten(v, &mut x);
        x
    };
    let mut sums = vec![(numbers(&a["ledger"]), numbers(&b["ledger"]))];
    if let (Some(x), Some(y)) = (a["cell"].as_object(), b["cell"].as_object()) {
        for (key, value) in x {
            if key == "measured" {
                for (k, v) in value.as_object().unwrap() {
                    sums.push((numbers(v), numbers(&y[key][k])));
                }
            } else {
                assert_eq!(value, &y[key], "{what}: cell.{key}");
            }
        }
    }
    for (x, y) in sums {
        let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        assert_eq!(x.len(), y.len());
        for (u, v) in x.iter().zip(&y) {
            assert!((u - v).abs() <= 1e-12 * scale, "{what}: {x:?} {y:?}");
        }
    }
}

/// The numbers of a JSON value, in order.
fn flatten(v: &serde_json::Value, into: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(n) => into.push(n.as_f64().unwrap()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| flatten(x, into)),
        serde_json::Value::Object(o) => o.values().for_each(|x| flatten(x, into)),
        _ => {}
    }
}

fn history(dir: &Path, name: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(dir.join(format!("{name}.run/history.csv"))).unwrap();
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
    let (_, reference) = nodes(&dir.path().join("p1.run/vtk/nodes_0000003000.vtp"));
    for processes in [2, 4] {
        let many = run(dir.path(), processes);
        same(&one, &many, &format!("{processes} processes"));
        // The processes' VTK pieces hold the run's nodes, forces included.
        let pvtp = format!("p{processes}.run/vtk/nodes_0000003000.pvtp");
        let (pieces, together) = nodes(&dir.path().join(pvtp));
        assert_eq!(pieces, processes);
        assert_eq!(together, reference, "{processes} processes: the nodes");
        histories_agree(dir.path(), "p1", &format!("p{processes}"));
    }
    // The bits above come from neighbour lists kept over many steps, in every process count
    // (a search at every step would give the same bits, and test less).
    for processes in [1, 2, 4] {
        let summary = dir.path().join(format!("p{processes}.run/summary.json"));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
        let searches = summary["neighbour_searches"].as_u64().unwrap();
        eprintln!("{processes} processes: {searches} neighbour searches in 3000 steps");
        assert!((2..500).contains(&searches), "{processes}: {searches}");
    }
}

/// Each node of a VTK piece as the bits of its grain, position and force (sortable).
fn rows_of(piece: vtkio::model::PolyDataPiece) -> Vec<Vec<u64>> {
    let points = piece.points.into_vec::<f64>().unwrap();
    let array = |name: &str| {
        let found = piece.data.point.iter().find(|a| a.name() == name).unwrap();
        match found {
            vtkio::model::Attribute::DataArray(d) => d.data.clone().into_vec::<f64>().unwrap(),
            other => panic!("{other:?}"),
        }
    };
    let (grain, force) = (array("grain"), array("force"));
    (0..grain.len())
        .map(|k| {
            [grain[k]]
                .into_iter()
                .chain(points[3 * k..3 * k + 3].iter().copied())
                .chain(force[3 * k..3 * k + 3].iter().copied())
                .map(f64::to_bits)
                .collect()
        })
        .collect()
}

/// The pieces of a VTK file (`.vtp`, or a `.pvtp` and its pieces) and their nodes, sorted
/// ([`rows_of`]).
fn nodes(path: &Path) -> (usize, Vec<Vec<u64>>) {
    let mut vtk = vtkio::Vtk::import(path).unwrap();
    // A .pvtp's pieces are files of their own.
    vtk.load_all_pieces().unwrap();
    let vtkio::model::DataSet::PolyData { pieces, .. } = vtk.data else {
        panic!("not poly data")
    };
    let count = pieces.len();
    let mut rows: Vec<Vec<u64>> = pieces
        .into_iter()
        .flat_map(|p| rows_of(p.into_loaded_piece_data(None).unwrap()))
        .collect();
    rows.sort_unstable();
    assert!(
        rows.iter()
            .any(|r| r[4..].iter().any(|&f| f64::from_bits(f) != 0.0))
    );
    (count, rows)
}

#[test]
fn a_decomposed_run_restarts_on_another_process_count() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    scene_file(dir.path(), &SCENE.replace("vtk_every = 3000", ""));
    let one = run(dir.path(), 1);
    // Half the run on 2 processes, the rest on 4 from its checkpoint; and on 1 from a
    // checkpoint of 4.
    run_as(dir.path(), 2, "half", &[], 1500);
    let half = dir.path().join("half.run/checkpoint/step_0000001500.json");
    let half = half.to_str().unwrap();
    let four = run_as(dir.path(), 4, "rest4", &["--restart", half], 3000);
    same(&one, &four, "2 processes, then 4");
    let again = run_as(dir.path(), 4, "quarter", &[], 1500);
    drop(again);
    let quarter = dir
        .path()
        .join("quarter.run/checkpoint/step_0000001500.json");
    let serial = run_as(
        dir.path(),
        1,
        "rest1",
        &["--restart", quarter.to_str().unwrap()],
        3000,
    );
    same(&one, &serial, "4 processes, then 1");
}

/// 24 deformable spheres (one dilation mode, level sets followed semi-Lagrangian) thrown
/// against the walls: the amplitudes and rates travel with the ghosts.
#[test]
fn deformable_grains_give_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    deformable_sphere(
        dir.path(),
        "soft",
        1.0,
        0.25,
        200,
        TestMode::Dilation,
        [1.0, 1e5, 1.0],
        &[],
    );
    let scene = SCENE
        .replace("count = 150", "count = 24")
        .replace("max = [16, 12, 14]", "max = [12, 8, 8]")
        .replace(
            "bundles = [{ bundle = \"ball.grain\" }]",
            "bundles = [{ bundle = \"soft.grain\", modes = { levelset = \"semi-lagrangian\" } }]",
        )
        .replace("sizes = [[0.8, 0.5], [1.2, 0.5]]", "sizes = [[1.0, 1.0]]")
        .replace("vtk_every = 3000", "");
    scene_file(dir.path(), &scene);
    let one = run(dir.path(), 1);
    let moving = (one["state"]["bodies"].as_array().unwrap().iter())
        .filter(|b| b["modes"]["eps"][0].as_f64().unwrap().abs() > 1e-6)
        .count();
    assert!(moving > 12, "{moving} grains deformed");
    for processes in [2, 4] {
        let many = run(dir.path(), processes);
        same(&one, &many, &format!("{processes} processes"));
    }
}

/// Grains whose contacts are coupled through their bodies (`hertz-patches` and a residual
/// flexibility, docs/physics.md section 2): a pair across a cut takes the other grain's part of
/// its overlap correction from that grain's owner, and the run keeps the bits of one process.
#[test]
fn coupled_contacts_across_the_cuts_give_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    // A flexibility between the six axis points, stronger on the diagonal (a fraction of the
    // half space's patch compliance 3 (1 - nu^2) / (5 rho E) = 2.8e-6), patches reaching every
    // point of the surface.
    let matrix = ndarray::Array2::from_shape_fn((6, 6), |(i, j)| if i == j { 2e-7 } else { 1e-7 });
    crate::common::flexible_sphere(dir.path(), "flex", 0.25, 400, matrix, 1.0, [2e6, 0.25]);
    let scene = SCENE
        .replace("count = 150", "count = 24")
        .replace("max = [16, 12, 14]", "max = [12, 8, 8]")
        .replace("gravity = [-30, 0, -5]", "gravity = [-300, 0, -50]")
        .replace(
            "law = \"linear-springs\"\nkn = 1e5\nks = 5e4\nfriction = 0.4",
            "law = \"hertz-patches\"\nlocal_damping = 0.7",
        )
        .replace(
            "bundles = [{ bundle = \"ball.grain\" }]",
            "bundles = [{ bundle = \"flex.grain\" }]",
        )
        .replace("sizes = [[0.8, 0.5], [1.2, 0.5]]", "sizes = [[1.0, 1.0]]")
        .replace("vtk_every = 3000", "");
    assert!(scene.contains("hertz-patches") && scene.contains("flex.grain"));
    scene_file(dir.path(), &scene);
    let one = run(dir.path(), 1);
    // The coupling acts: with the modes off (the mode is inert, the flexibility then unused)
    // the grains end elsewhere.
    scene_file(
        dir.path(),
        &scene.replace(
            "\"flex.grain\" }",
            "\"flex.grain\", modes = { active = false } }",
        ),
    );
    let uncoupled = run_as(dir.path(), 1, "uncoupled", &[], 3000);
    assert_ne!(one["state"]["bodies"], uncoupled["state"]["bodies"]);
    scene_file(dir.path(), &scene);
    let histories = one["state"]["histories"].as_array().unwrap().len();
    assert!(histories >= 20, "{histories} pairs in contact");
    for processes in [2, 4] {
        let many = run(dir.path(), processes);
        same(&one, &many, &format!("{processes} processes"));
    }
}

/// A periodic cell sheared at a constant rate (its vectors the same bits everywhere), grains
/// driven along x by gravity through its faces (wrapped, and across the subdomains' cuts) and
/// meeting the shearing images across the y faces.
#[test]
fn a_sheared_periodic_cell_gives_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let scene = r#"
[run]
dt = 2e-3
steps = 1000
gravity = [-3, 0, 0]
[output]
history_every = 100
checkpoint_every = 1000
[contact]
law = "hertz-mindlin"
shear_modulus = 1e5
poisson_ratio = 0.3
friction = 0.3
[cell]
size = [12, 12, 12]
velocity_gradient = [[0, 0.5, 0], [0, 0, 0], [0, 0, 0]]
[[packings]]
seed = 2
count = 110
region = { kind = "cell" }
bundles = [{ bundle = "ball.grain" }]
sizes = [[0.8, 0.3], [1.0, 0.4], [1.2, 0.3]]
"#;
    scene_file(dir.path(), scene);
    let one = run_as(dir.path(), 1, "p1", &[], 1000);
    let wrapped = (one["state"]["bodies"].as_array().unwrap().iter())
        .filter(|b| b.get("image").is_some())
        .count();
    let (header, rows) = history(dir.path(), "p1");
    let column = header.iter().position(|c| c == "node_contacts").unwrap();
    let touching = rows.iter().filter(|r| r[column] > 0.0).count();
    assert!(
        wrapped > 20 && touching > 5,
        "{wrapped} grains wrapped, contacts in {touching} of {} rows",
        rows.len()
    );
    for processes in [2, 4] {
        let many = run_as(dir.path(), processes, &format!("p{processes}"), &[], 1000);
        same(&one, &many, &format!("{processes} processes"));
        // Rebalanced as the cell shears: the cuts move, the grid's shape stays.
        let name = format!("r{processes}");
        let moved = run_as(dir.path(), processes, &name, &["--rebalance", "100"], 1000);
        same(&one, &moved, &format!("{processes} processes, rebalanced"));
    }
}

/// The grains pile against the wall at x = -1.5: cuts balanced at the start leave one process
/// most of them; moved to the quantiles every 500 steps they share them again, and the run
/// keeps the bits of one process.
#[test]
fn rebalanced_cuts_follow_the_grains() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    scene_file(dir.path(), &SCENE.replace("vtk_every = 3000", ""));
    let one = run(dir.path(), 1);
    let owned = |name: &str| -> Vec<u64> {
        let path = dir.path().join(format!("{name}.run/summary.json"));
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        (summary["processes"]["owned"].as_array().unwrap().iter())
            .map(|n| n.as_u64().unwrap())
            .collect()
    };
    run_as(dir.path(), 2, "fixed", &[], 3000);
    let moved = run_as(dir.path(), 2, "moved", &["--rebalance", "500"], 3000);
    same(&one, &moved, "rebalanced");
    let (fixed, moved) = (owned("fixed"), owned("moved"));
    assert_eq!(fixed.iter().sum::<u64>(), 150);
    assert_eq!(moved.iter().sum::<u64>(), 150);
    let spread = |n: &[u64]| n.iter().max().unwrap() - n.iter().min().unwrap();
    // Quantile cuts at the last rebalance (step 3000): an even split up to grains on the cut.
    assert!(spread(&moved) <= 2, "{moved:?}");
    assert!(spread(&fixed) > 40, "{fixed:?}");
}

/// A 4 x 4 x 4 lattice (`[[lattices]]`) pressed by a servo wall: the servo reads the walls'
/// forces, summed in key order over the processes, so the wall moves by the same bits.
#[test]
fn a_lattice_under_a_servo_wall_gives_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let plane = |point: [f64; 3], normal: [f64; 3], extra: &str| {
        format!("[[walls]]\nkind = \"plane\"\npoint = {point:?}\nnormal = {normal:?}\n{extra}\n")
    };
    let walls = [
        plane([-4.0, 0.0, 0.0], [1.0, 0.0, 0.0], ""),
        plane([4.0, 0.0, 0.0], [-1.0, 0.0, 0.0], ""),
        plane([0.0, -4.0, 0.0], [0.0, 1.0, 0.0], ""),
        plane([0.0, 4.0, 0.0], [0.0, -1.0, 0.0], ""),
        plane([0.0, 0.0, -4.0], [0.0, 0.0, 1.0], ""),
        plane(
            [0.0, 0.0, 4.3],
            [0.0, 0.0, -1.0],
            "servo = { pressure = 5.0, max_speed = 0.1 }",
        ),
    ]
    .concat();
    let scene = format!(
        "[run]\ndt = 2e-3\nsteps = 3000\ngravity = [0.3, 0.2, -1]\n[output]\nhistory_every = 100\n\
         checkpoint_every = 3000\nvtk_every = 1500\n[contact]\nlaw = \"linear-springs\"\n\
         kn = 1e4\nks = 5e3\nfriction = 0.3\nlocal_damping = 0.3\n[[lattices]]\n\
         bundle = \"ball.grain\"\norigin = [-2.94, -2.94, -2.94]\ncounts = [4, 4, 4]\n\
         spacing = [1.96, 1.96, 1.96]\n{walls}"
    );
    scene_file(dir.path(), &scene);
    let one = run(dir.path(), 1);
    let top = one["state"]["walls"][5]["displacement"][2]
        .as_f64()
        .unwrap();
    assert!(top < -0.2, "the servo wall moved by {top}");
    // The lattice starts pressed together: the first row counts the build's contacts once.
    let (header, rows) = history(dir.path(), "p1");
    let column = header.iter().position(|c| c == "node_contacts").unwrap();
    assert!(rows[0][column] > 0.0, "no contact at the start");
    let (_, reference) = nodes(&dir.path().join("p1.run/vtk/nodes_0000000000.vtp"));
    for processes in [2, 4] {
        same(
            &one,
            &run(dir.path(), processes),
            &format!("{processes} processes"),
        );
        histories_agree(dir.path(), "p1", &format!("p{processes}"));
        let pvtp = format!("p{processes}.run/vtk/nodes_0000000000.pvtp");
        let (pieces, together) = nodes(&dir.path().join(pvtp));
        assert_eq!(pieces, processes);
        assert_eq!(
            together, reference,
            "{processes} processes: the first nodes"
        );
    }
}

/// A periodic cell under its stress servo: the servo reads the sample's stress, which each
/// process sums over its own pairs, so the runs agree to round-off, not bit for bit.
#[test]
fn a_periodic_cell_under_its_servo_agrees_to_round_off() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let scene = r#"
[run]
dt = 2e-3
steps = 1000
[output]
history_every = 100
checkpoint_every = 1000
[contact]
law = "hertz-mindlin"
shear_modulus = 1e5
poisson_ratio = 0.3
friction = 0.3
local_damping = 0.3
[cell]
size = [12, 12, 12]
servo = { pressure = [100, 100, 150], max_rate = 0.2 }
[[packings]]
seed = 2
count = 100
region = { kind = "cell" }
bundles = [{ bundle = "ball.grain" }]
sizes = [[0.8, 0.3], [1.0, 0.4], [1.2, 0.3]]
"#;
    scene_file(dir.path(), scene);
    let one = run_as(dir.path(), 1, "p1", &[], 1000);
    let positions = |c: &serde_json::Value| -> Vec<f64> {
        let mut x = Vec::new();
        for b in c["state"]["bodies"].as_array().unwrap() {
            flatten(&b["position"], &mut x);
        }
        flatten(&c["state"]["cell"]["vectors"], &mut x);
        x
    };
    let (reference, pairs) = (
        positions(&one),
        one["state"]["histories"].as_array().unwrap().len(),
    );
    assert!(pairs > 30, "{pairs} pairs in contact");
    for processes in [2, 4] {
        let many = run_as(dir.path(), processes, &format!("p{processes}"), &[], 1000);
        let x = positions(&many);
        let worst = (reference.iter().zip(&x))
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        // The cell is 12 across: 1e-9 of it is a thousand times the round-off of one step.
        assert!(
            worst < 1.2e-8,
            "{processes} processes: positions apart by {worst:e}"
        );
        eprintln!("{processes} processes: positions and cell apart by {worst:e}");
    }
}

/// A failure met by the first process alone (the run directory holds an earlier run) stops
/// every process, with the first's message: no process is left waiting in an exchange.
#[test]
fn a_failure_in_one_process_stops_them_all() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    scene_file(
        dir.path(),
        &SCENE
            .replace("steps = 3000", "steps = 10")
            .replace("vtk_every = 3000", ""),
    );
    let dem_run = env!("CARGO_BIN_EXE_dem-run");
    let start = || {
        own_session(&mut Command::new("mpirun"), dir.path())
            .args(["--allow-run-as-root", "--oversubscribe", "-n", "2", dem_run])
            .args([
                "scene.toml",
                "--threads",
                "1",
                "--quiet",
                "--out",
                "same.run",
            ])
            .current_dir(dir.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    assert!(start().wait().unwrap().success());
    let mut again = start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while again.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            again.kill().unwrap();
            panic!("the processes did not stop");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = again.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("dem-run (process 0)") && stderr.contains("holds an earlier run"),
        "{stderr}"
    );
}

/// The history.csv of runs `one` and `many` (directories `<name>.run` in `dir`): the grains',
/// walls' and counts' columns bit for bit, the sums over grains and pairs to round-off.
fn histories_agree(dir: &Path, one: &str, many: &str) {
    let ((header, rows), (h, r)) = (history(dir, one), history(dir, many));
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
            // The sample measures summed over pairs and grains: round-off of their own size.
            let measure = header[k].starts_with("fabric")
                || header[k].starts_with("stress")
                || ["unbalanced", "pressure", "deviator", "solid_fraction"].contains(&&*header[k]);
            if sum {
                assert!((x - y).abs() <= 1e-12 * scale, "{}: {x} {y}", header[k]);
            } else if measure {
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                    "{}: {x} {y}",
                    header[k]
                );
            } else {
                assert_eq!(x, y, "{many}: {} at step {}", header[k], a[0]);
            }
        }
    }
}

/// Two prescribed grains ploughing along x through the packing, across the cuts: their work
/// goes with them when they migrate, and the ledger agrees with one process's.
#[test]
fn prescribed_grains_crossing_the_cuts_keep_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let ploughs = "[[grains]]\nbundle = \"ball.grain\"\nscale = 1.5\nposition = [-0.5, 3, 2]\n\
                   motion = { velocity = [50, 0, 0] }\n[[grains]]\nbundle = \"ball.grain\"\n\
                   scale = 1.5\nposition = [-0.5, 9, 5]\nmotion = { velocity = [50, 0, 0] }\n";
    let scene = SCENE
        .replace("steps = 3000", "steps = 1000")
        .replace("checkpoint_every = 1500", "checkpoint_every = 1000")
        .replace("vtk_every = 3000", "")
        .replace("gravity = [-30, 0, -5]", "gravity = [0, 0, -5]");
    scene_file(dir.path(), &format!("{scene}{ploughs}"));
    let one = run_as(dir.path(), 1, "p1", &[], 1000);
    let work = one["state"]["ledger"]["work"].as_f64().unwrap();
    assert!(work.abs() > 1.0, "the ploughs did {work} of work");
    for processes in [2, 4] {
        let many = run_as(dir.path(), processes, &format!("p{processes}"), &[], 1000);
        same(&one, &many, &format!("{processes} processes"));
        histories_agree(dir.path(), "p1", &format!("p{processes}"));
    }
}
