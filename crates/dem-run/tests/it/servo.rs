//! Servo walls (dem_core::wall::Servo): a wall pressed to a target stress reaches it and stays,
//! alone and while the other axes are strained; restarts and thread counts keep every bit.

use std::sync::atomic::AtomicBool;

use dem_run::RunOptions;

use crate::common::{scene_file, simulation, sphere};

/// A 3 x 3 x 3 cubic lattice of unit spheres, touching, between walls at -3 and 3 on x and y,
/// -3 below and `top` above; `x_walls` and `top_wall` are the extra keys of those walls.
fn scene(top: f64, x_walls: [&str; 2], top_wall: &str) -> String {
    let plane = |point: [f64; 3], normal: [f64; 3], extra: &str| {
        format!("[[walls]]\nkind = \"plane\"\npoint = {point:?}\nnormal = {normal:?}\n{extra}\n")
    };
    let walls = [
        plane([-3.0, 0.0, 0.0], [1.0, 0.0, 0.0], x_walls[0]),
        plane([3.0, 0.0, 0.0], [-1.0, 0.0, 0.0], x_walls[1]),
        plane([0.0, -3.0, 0.0], [0.0, 1.0, 0.0], ""),
        plane([0.0, 3.0, 0.0], [0.0, -1.0, 0.0], ""),
        plane([0.0, 0.0, -3.0], [0.0, 0.0, 1.0], ""),
        plane([0.0, 0.0, top], [0.0, 0.0, -1.0], top_wall),
    ]
    .concat();
    format!(
        r#"
[run]
dt = 2e-3
steps = 4000
[contact]
law = "linear-springs"
kn = 1e4
local_damping = 0.7
[[lattices]]
bundle = "ball.grain"
origin = [-2, -2, -2]
counts = [3, 3, 3]
spacing = [2, 2, 2]
{walls}"#
    )
}

/// The grains' push on the top wall over the area of the box's face, from the walls' positions.
fn top_stress(sim: &dem_core::sim::Simulation) -> f64 {
    let gap = |a: usize| {
        let (lo, hi) = (&sim.world.walls[2 * a], &sim.world.walls[2 * a + 1]);
        6.0 + hi.displacement[a] - lo.displacement[a]
    };
    sim.world.walls[5].force.z / (gap(0) * gap(1))
}

const PRESSURE: f64 = 0.5;

#[test]
fn a_servo_wall_reaches_its_pressure_and_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let servo = format!("servo = {{ pressure = {PRESSURE}, max_speed = 0.05 }}");
    let mut sim = simulation(dir.path(), &scene(3.2, ["", ""], &servo));
    // It first closes the 0.2 gap at its largest speed: 0.2 / 0.05 = 4 time units.
    let mut first_touch = None;
    let mut path = Vec::new();
    while sim.world.time < 8.0 {
        sim.step(false);
        if first_touch.is_none() && sim.world.walls[5].force.z != 0.0 {
            first_touch = Some(sim.world.time);
        }
        path.push((sim.world.time, top_stress(&sim)));
    }
    let touch = first_touch.expect("the wall reaches the grains");
    assert!((touch - 4.0).abs() < 0.1, "first contact at t = {touch}");
    // After the impact's transient, it enters 1 % of the target and never leaves it: settled
    // from the last step outside the band on, within 3 time units of the first contact.
    let outside = |s: f64| (s / PRESSURE - 1.0).abs() >= 0.01;
    let last_out = path.iter().rposition(|&(_, s)| outside(s)).unwrap();
    let settled = path[last_out + 1].0;
    let end = path.last().unwrap().1;
    println!(
        "first contact at t = {touch:.3}; settled within 1 % from t = {settled:.3}; at the end {end:.6}"
    );
    assert!(settled < touch + 3.0, "settled at {settled}");
    assert!((end / PRESSURE - 1.0).abs() < 1e-6, "{end}");
}

#[test]
fn a_servo_wall_holds_its_pressure_while_the_box_is_strained_sideways() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    // The x walls open by 0.5 each over t in [2, 6]: the face's area grows by a third, the
    // grains spread, and the servo must follow the new target force.
    let x = [
        "motion = { table = [[0, 0, 0, 0], [2, 0, 0, 0], [6, -0.5, 0, 0]] }",
        "motion = { table = [[0, 0, 0, 0], [2, 0, 0, 0], [6, 0.5, 0, 0]] }",
    ];
    let servo = format!("servo = {{ pressure = {PRESSURE}, max_speed = 0.05 }}");
    let mut sim = simulation(dir.path(), &scene(3.0, x, &servo));
    let mut worst: f64 = 0.0;
    while sim.world.time < 10.0 {
        sim.step(false);
        if sim.world.time >= 8.0 {
            worst = worst.max((top_stress(&sim) / PRESSURE - 1.0).abs());
        }
    }
    let area = (6.0 + sim.world.walls[1].displacement.x - sim.world.walls[0].displacement.x) * 6.0;
    println!("face area {area}, largest error from t = 8: {worst:.2e}");
    assert!((area - 42.0).abs() < 1e-9, "{area}");
    assert!(worst < 0.01, "{worst}");
}

#[test]
fn servo_runs_restart_and_thread_counts_give_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let servo = format!("servo = {{ pressure = {PRESSURE}, max_speed = 0.05 }}");
    let text = scene(3.2, ["", ""], &servo).replace(
        "steps = 4000",
        "steps = 4000\n[output]\ncheckpoint_every = 2500\nhistory_every = 100",
    );
    let path = scene_file(dir.path(), &text);
    let run = |out: &str, threads: usize, restart: Option<std::path::PathBuf>| {
        let options = RunOptions {
            out: dir.path().join(out),
            threads: Some(threads),
            restart,
            progress: false,
            overwrite: false,
        };
        dem_run::run(&path, &options, &AtomicBool::new(false)).unwrap();
        std::fs::read_to_string(dir.path().join(out).join("history.csv")).unwrap()
    };
    let one = run("one", 1, None);
    let two = run("two", 2, None);
    assert!(one == two, "1 and 2 threads differ");
    let checkpoint = dir.path().join("one/checkpoint/step_0000002500.json");
    let restarted = run("restarted", 2, Some(checkpoint));
    // Restarted elsewhere, the history starts at the checkpoint: its rows are the end of the
    // first run's.
    let rows = |h: &str| h.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    let (all, tail) = (rows(&one), rows(&restarted));
    assert_eq!(tail.len(), 15, "rows after step 2500");
    assert!(all.ends_with(&tail), "the restart departs from the run");
}

#[test]
fn a_servo_wall_asked_for_more_than_the_grains_carry_stops_naming_its_target() {
    // issue #33: a servo wall asked for 1e30 was driven through the grains and past the floor,
    // until the step panicked ("a servo's area is checked with the scene"). It now stops
    // where it passes a grain's centre: no contact holds a wall there.
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let servo = "servo = { pressure = 1e30, max_speed = 0.5 }";
    let text = scene(3.2, ["", ""], servo).replace("kn = 1e4", "kn = 1e3");
    let mut sim = simulation(dir.path(), &text);
    while sim.last.servo_fault.is_none() && sim.world.time < 40.0 {
        sim.step(false);
    }
    let fault = sim.last.servo_fault.clone().expect("the servo gives up");
    // The wall's plane z = 3.2 + u_z, its normal -z; it cannot have passed a centre of the
    // top layer (z = 2 at the start) before travelling 1.2 at its largest speed.
    let plane = 3.2 + sim.world.walls[5].displacement.z;
    match fault {
        dem_core::wall::ServoFault::ThroughGrains {
            wall,
            pressure,
            grain,
            depth,
        } => {
            assert_eq!((wall, pressure), (5, 1e30));
            let z = sim.world.bodies[grain].position.z;
            // The wall's signed distance, computed in another order: equal to round-off.
            assert!(
                (depth - (z - plane)).abs() <= 1e-12 * z.abs(),
                "grain {grain} at z = {z}, the wall at {plane}: depth {depth}"
            );
            assert!(depth >= 0.0);
        }
        other => panic!("{other}"),
    }
    assert!(sim.world.time >= 1.2 / 0.5, "{}", sim.world.time);
    let message = sim.last.servo_fault.unwrap().to_string();
    println!("t = {}: {message}", sim.world.time);
    assert!(
        message.starts_with("walls[5].servo: its target pressure 1e30 is out of reach"),
        "{message}"
    );
}

#[test]
fn a_servo_wall_whose_face_is_gone_stops_instead_of_panicking() {
    // issue #33: the servo took its face's area from the walls' enclosure with an `expect`;
    // once a wall meets its facing wall the walls enclose nothing and the step panicked.
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let servo = format!("servo = {{ pressure = {PRESSURE}, max_speed = 0.05 }}");
    let mut sim = simulation(dir.path(), &scene(3.2, ["", ""], &servo));
    // The floor (z = -3, facing the servo wall) moved past the servo wall at 3.2.
    sim.world.walls[4].displacement.z = 7.0;
    sim.step(false);
    assert_eq!(
        sim.last.servo_fault,
        Some(dem_core::wall::ServoFault::NoFace {
            wall: 5,
            pressure: PRESSURE
        })
    );
    // The wall stays where it was.
    assert_eq!(sim.world.walls[5].displacement.z, 0.0);
    assert_eq!(sim.world.walls[5].velocity.z, 0.0);
}

#[test]
fn a_servo_wall_too_fast_for_the_step_is_refused_by_its_own_key() {
    // issue #33: the refusal of a servo wall too fast for the step named `walls[5].motion`, a
    // key the wall does not have.
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let path = scene_file(
        dir.path(),
        &scene(3.2, ["", ""], "servo = { pressure = 0.5, max_speed = 1e3 }"),
    );
    let e = dem_run::build::from_scene(&dem_run::Scene::read(&path).unwrap(), &path)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("walls[5].servo.max_speed: it moves 2e0 per step"),
        "{e}"
    );
}

/// Issue #33: the run loop stops on the servo's fault (the step only records it) with its
/// message, and summary.json says the run failed there, before its last step.
#[test]
fn a_run_whose_servo_wall_is_out_of_reach_fails_with_the_servos_message() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 400);
    let servo = "servo = { pressure = 1e30, max_speed = 0.5 }";
    let text = scene(3.2, ["", ""], servo)
        .replace("kn = 1e4", "kn = 1e3")
        .replace("steps = 4000", "steps = 10000");
    let path = scene_file(dir.path(), &text);
    let out = dir.path().join("run");
    let options = crate::common::run_options(&out, Some(1), None);
    let e = dem_run::run(&path, &options, &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(e, dem_run::RunError::Servo { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("walls[5].servo: its target pressure 1e30 is out of reach"),
        "{e}"
    );
    let summary: dem_run::Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.status, dem_run::Status::Failed);
    assert!(summary.steps < 10_000, "{}", summary.steps);
}
