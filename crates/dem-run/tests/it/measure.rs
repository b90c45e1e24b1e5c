//! Sample measures (dem_core::measure): the Love-Weber stress of a walled box at rest against the
//! walls' forces over their areas; coordination and fabric of a cubic lattice in closed form;
//! the volume of a dilated deformable grain.

use dem_core::measure::grain_volume;

use std::sync::atomic::AtomicBool;

use dem_run::{RunOptions, Scene};

use crate::common::{TestMode, deformable_sphere, scene_file, simulation, sphere};

/// A 3 x 3 x 3 simple cubic lattice of unit spheres, touching, between six walls that close in
/// by `dx` (x walls), `dy`, `dz` over the first half of the run and then hold.
fn squeezed_lattice(dir: &std::path::Path, d: [f64; 3]) -> dem_core::sim::Simulation {
    simulation(dir, &squeezed_scene(dir, d, ""))
}

/// The scene of [`squeezed_lattice`], `extra` appended.
fn squeezed_scene(dir: &std::path::Path, [dx, dy, dz]: [f64; 3], extra: &str) -> String {
    sphere(dir, "ball", 1.0, 0.2, 400);
    let mut walls = String::new();
    for (axis, d) in [dx, dy, dz].into_iter().enumerate() {
        for side in [-1.0, 1.0] {
            let mut point = [0.0; 3];
            point[axis] = 3.0 * side;
            let mut normal = [0.0; 3];
            normal[axis] = -side;
            let mut moved = [0.0; 3];
            moved[axis] = -side * d;
            walls += &format!(
                "[[walls]]\nkind = \"plane\"\npoint = {point:?}\nnormal = {normal:?}\nmotion = {{ table = [[0, 0, 0, 0], [1.5, {}, {}, {}]] }}\n",
                moved[0], moved[1], moved[2]
            );
        }
    }
    format!(
        r#"
[run]
dt = 2e-3
steps = 1
[contact]
law = "linear-springs"
kn = 1e4
ks = 0.0
friction = 0.0
local_damping = 0.7
[[lattices]]
bundle = "ball.grain"
origin = [-2, -2, -2]
counts = [3, 3, 3]
spacing = [2, 2, 2]
{walls}{extra}"#
    )
}

#[test]
fn the_stress_of_a_walled_box_at_rest_is_its_wall_forces_over_their_areas() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = squeezed_lattice(dir.path(), [0.015, 0.02, 0.03]);
    while sim.world.time < 3.0 {
        sim.step(false);
    }
    let m = sim.measures();
    let sample = m.sample.as_ref().expect("six walls enclose a box");
    // The box from the walls' positions: x walls are 0 and 1, y 2 and 3, z 4 and 5.
    let side = |axis: usize| {
        let (lo, hi) = (&sim.world.walls[2 * axis], &sim.world.walls[2 * axis + 1]);
        (6.0 + hi.displacement[axis] - lo.displacement[axis]).abs()
    };
    let (lx, ly, lz) = (side(0), side(1), side(2));
    assert!((sample.volume - lx * ly * lz).abs() < 1e-12 * sample.volume);
    // The reference: each wall pair's mean normal force over its face's area (compression
    // negative), from the forces the grains exert on the walls.
    let area = [ly * lz, lx * lz, lx * ly];
    let walls_stress = |axis: usize| {
        let f = (sim.world.walls[2 * axis].force[axis] - sim.world.walls[2 * axis + 1].force[axis])
            / 2.0;
        f / area[axis]
    };
    // Love-Weber equals the walls' stress for grains in equilibrium with contact points on the
    // walls' planes. The two departures, bounded from the state: the grains' net forces
    // (sum |X_p| |F_p| / V about the box's centre) and the penetration of the nodes beyond the
    // planes (deepest penetration times the walls' summed force over V).
    let residual: f64 = sim
        .world
        .bodies
        .iter()
        .map(|b| b.position.norm() * b.force.norm())
        .sum::<f64>()
        / sample.volume;
    let penetration = (sim.world.bodies.iter())
        .flat_map(|b| {
            let nodes = &sim.world.shapes[b.shape].nodes;
            nodes.iter().map(|x0| b.to_global(x0))
        })
        .flat_map(|x| sim.world.walls.iter().map(move |w| -w.distance(&x).0))
        .fold(0.0, f64::max);
    let deepest =
        sim.world.walls.iter().map(|w| w.force.norm()).sum::<f64>() * penetration / sample.volume;
    for axis in 0..3 {
        let (lw, reference) = (sample.stress[(axis, axis)], walls_stress(axis));
        println!(
            "sigma_{axis}{axis}: Love-Weber {lw:.6e}, walls {reference:.6e}, bound {residual:.2e} + {deepest:.2e} (penetration {penetration:.2e})"
        );
        assert!(reference < 0.0, "the box is compressed along {axis}");
        assert!(
            (lw - reference).abs() <= residual + deepest,
            "axis {axis}: {lw} against {reference}"
        );
    }
    // At rest: the bounds are small against the stress itself, so the comparison has teeth.
    let smallest = (0..3)
        .map(|a| walls_stress(a).abs())
        .fold(f64::MAX, f64::min);
    assert!(
        residual + deepest < 0.05 * smallest,
        "{residual} {deepest} {smallest}"
    );
    // Near rest by the usual criterion of quasi-static DEM (YADE's unbalancedForce < 0.01).
    let unbalanced = m.unbalanced.expect("grains in contact");
    assert!(unbalanced < 0.01, "{unbalanced}");
}

#[test]
fn a_cubic_lattice_has_coordination_four_and_an_isotropic_fabric() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = squeezed_lattice(dir.path(), [0.02, 0.02, 0.02]);
    while sim.world.time < 2.0 {
        sim.step(false);
    }
    let m = sim.measures();
    // 3 x 3 x 3 simple cubic: 3 x (2 x 3 x 3) = 54 contacts among 27 grains, Z = 4; every grain
    // has at least three, so no rattler and Z_m = Z.
    assert_eq!(sim.last.sample_sums.grain_contacts, 54);
    assert_eq!(m.coordination, 4.0);
    assert_eq!(m.rattlers, 0);
    assert_eq!(m.mechanical_coordination, 4.0);
    // Normals along the axes, a third each: F = I / 3.
    for i in 0..3 {
        for j in 0..3 {
            let expected = if i == j { 1.0 / 3.0 } else { 0.0 };
            assert!((m.fabric[(i, j)] - expected).abs() < 1e-6, "{}", m.fabric);
        }
    }
    // The solid fraction: 27 grains of the baked ball's volume in the box.
    let sample = m.sample.unwrap();
    let expected = 27.0 * sim.world.shapes[0].volume / sample.volume;
    assert!((sample.solid_fraction - expected).abs() < 1e-12);
}

#[test]
fn a_dilated_grain_has_the_dilated_volume() {
    let dir = tempfile::tempdir().unwrap();
    deformable_sphere(
        dir.path(),
        "soft",
        1.0,
        0.1,
        300,
        TestMode::Dilation,
        [1.0, 1e3, 0.0],
        &[],
    );
    let eps: f64 = 0.05;
    let sim = simulation(
        dir.path(),
        &format!(
            r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "linear-springs"
kn = 100
[[grains]]
bundle = "soft.grain"
position = [0, 0, 0]
modes = {{ amplitudes = [{eps}] }}
"#
        ),
    );
    let v0 = sim.world.shapes[0].volume;
    let v = grain_volume(&sim.world.shapes[0], &sim.world.bodies[0]);
    // u = eps x: det(I + grad u) = (1 + eps)^3 everywhere. The change is integrated over the
    // grid's cells weighted by their inside part, which matches the shape's volume to the
    // level set's resolution: within 1 % of the change.
    let expected = v0 * (1.0 + eps).powi(3);
    println!("volume {v:.6}, expected {expected:.6}, reference {v0:.6}");
    assert!(
        (v - expected).abs() < 0.01 * (expected - v0),
        "{v} against {expected}"
    );
}

#[test]
fn a_run_stops_when_its_stop_conditions_first_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (text, options, s, history) = run_to_stop(
        dir.path(),
        "[stop]\nunbalanced = 0.01\npressure = 4.0\nafter = 200\nevery = 50\n",
    );
    let out = options.out.clone();
    let stopped = s
        .stopped
        .clone()
        .expect("the conditions are met within the duration");
    assert!(s.steps < 10_000, "{}", s.steps);
    // Every row from step 200 on fails a condition but the last, which meets both.
    let (rows, column) = (&history.rows, |name| history.column(name));
    let (step, unbalanced, pressure) = (column("step"), column("unbalanced"), column("pressure"));
    let meets = |r: &Vec<f64>| r[unbalanced] <= 0.01 && r[pressure] >= 4.0;
    let last = rows.last().unwrap();
    assert_eq!(last[step] as u64, s.steps, "{stopped}");
    assert!(meets(last), "{stopped}");
    for r in &rows[..rows.len() - 1] {
        assert!(
            r[step] < 200.0 || !meets(r),
            "step {} met them first",
            r[step]
        );
    }
    println!("{stopped}");
    // The stop leaves a checkpoint of the state it describes, and a next stage (run.stage)
    // restarted from the run directory (its latest checkpoint) counts its steps from there.
    assert_eq!(
        s.last_checkpoint.unwrap(),
        out.join(format!("checkpoint/step_{:010}.json", s.steps))
    );
    let next = text
        .replace("duration = 20", "steps = 30\nstage = true")
        .replace("[stop]", "[stop]\nsolid_fraction = 0.99");
    let next_path = dir.path().join("next.toml");
    std::fs::write(&next_path, next).unwrap();
    let stage = |restart: &std::path::Path, interrupt: bool| {
        dem_run::run(
            &next_path,
            &RunOptions {
                out: dir.path().join("next"),
                restart: Some(restart.to_path_buf()),
                ..options.clone()
            },
            &AtomicBool::new(interrupt),
        )
        .unwrap()
    };
    // Interrupted after its first step, then resumed in its own directory: it still ends 30
    // steps after the checkpoint it started from.
    let interrupted = stage(&out, true);
    assert_eq!(interrupted.status, dem_run::Status::Interrupted);
    assert_eq!(interrupted.steps, s.steps + 1);
    assert_eq!(stage(&dir.path().join("next"), false).steps, s.steps + 30);
}

/// `[stop] creep` (dem_core::measure::Stop): the run stops at the first check where the solid
/// fraction has changed by at most the given fraction of itself since the check `over` steps
/// before, with the other conditions; a window that is not a multiple of the checks' interval
/// is refused, naming the key.
#[test]
fn a_creep_stop_waits_until_the_compaction_has_ceased() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _, s, history) = run_to_stop(
        dir.path(),
        "[stop]\npressure = 4.0\ncreep = { solid_fraction = 1e-4, over = 200 }\nafter = 200\n\
         every = 50\n",
    );
    let stopped = s
        .stopped
        .clone()
        .expect("the compaction ceases within the duration");
    let (rows, column) = (&history.rows, |name| history.column(name));
    let (step, pressure, phi) = (column("step"), column("pressure"), column("solid_fraction"));
    // Row `i` meets both if the row 200 steps (4 rows) before it changed by at most 1e-4.
    let meets = |i: usize| {
        i >= 4
            && rows[i][pressure] >= 4.0
            && rows[i - 4][step] + 200.0 == rows[i][step]
            && (rows[i][phi] - rows[i - 4][phi]).abs() <= 1e-4 * rows[i][phi]
    };
    let last = rows.len() - 1;
    assert_eq!(rows[last][step] as u64, s.steps, "{stopped}");
    assert!(meets(last), "{stopped}");
    let first_at_pressure = (0..rows.len())
        .find(|&i| rows[i][step] >= 200.0 && rows[i][pressure] >= 4.0)
        .unwrap();
    for (i, r) in rows.iter().enumerate().take(last) {
        assert!(
            r[step] < 200.0 || !meets(i),
            "step {} met them first",
            r[step]
        );
    }

    println!(
        "{stopped}; the pressure first held at step {}",
        rows[first_at_pressure][step]
    );
    assert!(
        first_at_pressure < last,
        "the creep condition waited for nothing"
    );
    let bad = scene_file(dir.path(), &text.replace("over = 200", "over = 120"));
    let e = Scene::read(&bad).unwrap_err().to_string();
    assert!(
        e.contains("stop.creep.over") && e.contains("multiple"),
        "{e}"
    );
}

/// A run's history.csv: its column names and its rows.
struct History {
    header: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl History {
    fn column(&self, name: &str) -> usize {
        self.header.iter().position(|c| c == name).unwrap()
    }
}

/// The squeezed scene of [`squeezed_scene`] in `dir` with the section `stop` (a history row every
/// 50 steps), run on 1 thread for at most 20 time units into `dir/run`: the scene's text, the
/// options, the summary and the history.
fn run_to_stop(
    dir: &std::path::Path,
    stop: &str,
) -> (String, RunOptions, dem_run::Summary, History) {
    let text = squeezed_scene(
        dir,
        [0.02, 0.02, 0.02],
        &format!("{stop}[output]\nhistory_every = 50\n"),
    )
    .replace("steps = 1", "duration = 20");
    let path = scene_file(dir, &text);
    let options = RunOptions {
        out: dir.join("run"),
        threads: Some(1),
        restart: None,
        progress: false,
        overwrite: false,
    };
    let s = dem_run::run(&path, &options, &AtomicBool::new(false)).unwrap();
    let csv = std::fs::read_to_string(options.out.join("history.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (text, options, s, History { header, rows })
}

#[test]
fn a_stop_on_the_pressure_needs_a_sample_volume() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let path = scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 10\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\n[stop]\npressure = 1.0\n",
    );
    let e = Scene::read(&path).unwrap_err().to_string();
    assert!(e.contains("stop.pressure") && e.contains("volume"), "{e}");
}
