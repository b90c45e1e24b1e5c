//! Periodic cells (dem_core::cell): a grain meets another's image across a face with the forces
//! of the same pair placed side by side without a cell, to round-off, and keeps its contact
//! history as the grains are wrapped back into the cell.

use dem_core::sim::Simulation;

use crate::common::{brick, simulation};

/// Two bricks stacked on a floor under gravity, the lower at `a` sliding along +x, the upper
/// at `b` along -x, in frictional contact (shear springs) all along; each grain's velocity is
/// increased by `extra(position)`; `cell` is an extra scene section.
fn pair_at(
    dir: &std::path::Path,
    a: [f64; 3],
    b: [f64; 3],
    extra: impl Fn([f64; 3]) -> [f64; 3],
    cell: &str,
) -> Simulation {
    let v = |own: [f64; 3], x: [f64; 3]| {
        let e = extra(x);
        [0, 1, 2].map(|k| own[k] + e[k])
    };
    simulation(
        dir,
        &format!(
            r#"
[run]
dt = 1e-3
steps = 1
gravity = [0, 0, -1]
[contact]
law = "linear-springs"
kn = 1e4
ks = 5e3
friction = 0.4
{cell}
[[walls]]
kind = "plane"
point = [0, 0, 2.5]
normal = [0, 0, 1]
[[grains]]
bundle = "brick.grain"
position = {a:?}
velocity = {:?}
angular_velocity = [0.0, 0.0, 0.1]
[[grains]]
bundle = "brick.grain"
position = {b:?}
velocity = {:?}
"#,
            v([0.4, 0.02, 0.0], a),
            v([-0.3, 0.0, 0.0], b),
        ),
    )
}

/// [`pair_at`] across x.
fn pair(dir: &std::path::Path, x1: f64, x2: f64, cell: &str) -> Simulation {
    pair_at(dir, [x1, 3.0, 2.795], [x2, 3.0, 3.39], |_| [0.0; 3], cell)
}

#[test]
fn a_pair_across_a_periodic_face_has_the_forces_of_the_pair_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    brick(dir.path(), "brick", [0.6, 0.4, 0.3], 0.05, 600);
    // Stacked across the face x = 6 of a cell periodic along x and y: the upper grain is
    // placed at its image inside the cell, and the pair meets across the face; without the
    // cell, it meets side by side.
    let cell = "[cell]\nsize = [6, 6, 6]\nperiodic = [true, true, false]\n";
    let periodic = pair(dir.path(), 5.9, 6.1, cell);
    let reference = pair(dir.path(), 5.9, 6.1, "");
    assert!(
        periodic.world.bodies[1].position.x < 6.0,
        "placed inside the cell"
    );
    assert_eq!(periodic.world.bodies[1].image, [1, 0, 0]);
    // The same contacts from centres that differ by the cell's 6 in their last bits: the same
    // forces and torques to round-off, against the weight.
    let weight = periodic.world.shapes[0].mass;
    assert!(reference.last.contacts > 10, "{}", reference.last.contacts);
    assert_eq!(periodic.last.contacts, reference.last.contacts);
    crate::common::assert_same_pair_forces(&periodic, &reference, weight);
}

/// A 3 x 3 x 3 cubic lattice of spheres overlapping their neighbours and, across the faces,
/// their images, with small velocities of their own, and all drifting at `drift`.
fn lattice(dir: &std::path::Path, drift: [f64; 3]) -> Simulation {
    let mut grains = String::new();
    for i in 0..27 {
        let x = [i % 3, (i / 3) % 3, i / 9].map(|c| 0.99 + 1.98 * c as f64);
        let s = i as f64;
        let own = [
            0.02 * (1.3 * s).sin(),
            0.02 * (2.1 * s).cos(),
            0.02 * (0.7 * s + 1.0).sin(),
        ];
        let v = [0, 1, 2].map(|k| own[k] + drift[k]);
        grains +=
            &format!("[[grains]]\nbundle = \"ball.grain\"\nposition = {x:?}\nvelocity = {v:?}\n");
    }
    simulation(
        dir,
        &format!(
            "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\nks = 5e3\nfriction = 0.8\n\
             [cell]\nsize = [5.94, 5.94, 5.94]\n{grains}"
        ),
    )
}

#[test]
fn contact_histories_survive_wrapping_through_the_faces() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.1, 400);
    // The same lattice at rest and drifting through the cell: by Galilean invariance (no
    // damping on absolute velocities), the same relative motion and forces; the drifting
    // grains are wrapped through every face, their pairs re-keyed, their shear springs kept.
    let drift = [1.3, -0.9, 0.7];
    let mut still = lattice(dir.path(), [0.0; 3]);
    let mut moving = lattice(dir.path(), drift);
    let weight = still.world.shapes[0].mass;
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        still.step(false);
        moving.step(false);
        for (a, b) in still.world.bodies.iter().zip(&moving.world.bodies) {
            worst = worst.max((a.force - b.force).norm() / weight);
        }
    }
    let wraps: i32 = moving
        .world
        .bodies
        .iter()
        .map(|b| b.image.iter().map(|n| n.abs()).sum::<i32>())
        .sum();
    println!(
        "{wraps} wraps; largest force difference {worst:.1e} of the weight; {} node contacts",
        still.last.contacts
    );
    // The grains of the layer next to each face the drift crosses: 9 per axis.
    assert!(wraps >= 27, "{wraps}");
    assert!(still.last.contacts > 0);
    assert!(worst < 1e-6, "{worst:e}");
}

#[test]
fn a_cell_narrower_than_two_grains_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    brick(dir.path(), "brick", [0.6, 0.4, 0.3], 0.1, 200);
    let path = crate::common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [cell]\nsize = [2.5, 6, 6]\n[[grains]]\nbundle = \"brick.grain\"\nposition = [1, 3, 3]\n",
    );
    let e = dem_run::build::from_scene(&dem_run::Scene::read(&path).unwrap(), &path)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cell") && e.contains("periodic axis 1"), "{e}");
}

/// A simple cubic lattice, 3 x 3 x 3 unit spheres at spacing 1.98 (a total overlap of 0.02 with
/// each of the six neighbours, three of them images across the faces), frictionless Hertz
/// (`hertz-mindlin`, `friction = 0`), in a cell deformed by the velocity gradient `l`.
fn hertz_lattice(dir: &std::path::Path, l: [[f64; 3]; 3]) -> Simulation {
    let mut grains = String::new();
    for i in 0..27 {
        let x = [i % 3, (i / 3) % 3, i / 9].map(|c| 0.99 + 1.98 * c as f64);
        grains += &format!("[[grains]]\nbundle = \"ball.grain\"\nposition = {x:?}\n");
    }
    simulation(
        dir,
        &format!(
            "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"hertz-mindlin\"\nshear_modulus = 1e4\n\
             poisson_ratio = 0.3\n[cell]\nsize = [5.94, 5.94, 5.94]\nvelocity_gradient = {l:?}\n{grains}"
        ),
    )
}

#[test]
fn a_lattice_in_a_deforming_cell_has_the_stress_of_its_hertz_contacts_in_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.1, 400);
    // Compression along the three axes, and a simple shear dv_x/dy.
    let l = [[-0.02, 0.05, 0.0], [0.0, -0.01, 0.0], [0.0, 0.0, -0.01]];
    let mut sim = hertz_lattice(dir.path(), l);
    let (dt, steps) = (1e-3, 1000);
    for _ in 0..steps {
        sim.step(false);
    }
    // The reference, from the velocity gradient alone: the cell vectors H = (I + L dt)^n H_0
    // (the cell's rate H' = L H held over each step), the lattice's bonds its columns over 3
    // (a Bravais lattice is a centre of symmetry at each grain: no net force, the grains
    // follow the cell affinely), each bond along c carrying Hertz's force
    // N = 4/3 E* sqrt(R/2) (2R - |c|)^(3/2), E* = G / (1 - nu), while shorter than 2R, and the
    // Love-Weber stress sigma = -(27 / V) sum_bonds N |c| c c^T / |c|^2.
    let step = nalgebra::Matrix3::identity() + nalgebra::Matrix3::from_fn(|i, j| l[i][j]) * dt;
    let h = step.pow(steps) * nalgebra::Matrix3::from_diagonal_element(5.94);
    let e_star = 1e4 / (1.0 - 0.3);
    let mut sigma = nalgebra::Matrix3::zeros();
    for k in 0..3 {
        let c = h.column(k) / 3.0;
        let delta = 2.0 - c.norm();
        assert!(delta > 0.0, "bond {k} open: {delta}");
        let n = 4.0 / 3.0 * e_star * 0.5f64.sqrt() * delta.powf(1.5);
        sigma -= n * c * c.transpose() / c.norm();
    }
    sigma *= 27.0 / h.determinant();
    let cell = sim.world.cell.as_ref().unwrap();
    let cell_error = (cell.vectors - h).norm() / h.norm();
    let inverse = cell.vectors.try_inverse().unwrap();
    let mut drift: f64 = 0.0;
    for (i, b) in sim.world.bodies.iter().enumerate() {
        let s0 =
            nalgebra::Vector3::from([i % 3, (i / 3) % 3, i / 9].map(|c| (0.5 + c as f64) / 3.0));
        drift = drift.max((inverse * (b.position - cell.origin) - s0).norm());
    }
    let m = sim.measures();
    let stress = m.sample.unwrap().stress;
    let stress_error = (stress - sigma).norm() / sigma.norm();
    let e = sim.energies();
    println!(
        "cell {cell_error:.1e}, fractional drift {drift:.1e}, stress {:?} against {:?}: {stress_error:.1e}; \
         ledger residual {:.2e} of the work {:.3e}",
        stress.as_slice(),
        sigma.as_slice(),
        sim.totals.ledger.residual(&e),
        sim.totals.ledger.work
    );
    assert!(cell_error < 1e-12, "{cell_error:e}");
    assert!(drift < 1e-9, "{drift:e}");
    assert!(stress_error < 1e-9, "{stress_error:e}");
    // The work of the cell (the images' forces on their moving positions and the affine
    // velocity field's kinetic energy) closes the energy balance to the step's order.
    assert!(
        sim.totals.ledger.work.abs() > 0.1 * e.contact,
        "{}",
        sim.totals.ledger.work
    );
    assert!(sim.totals.ledger.residual(&e).abs() < 1e-4 * sim.totals.ledger.work.abs());
}

#[test]
fn a_pair_across_the_face_of_a_shearing_cell_has_the_forces_of_the_pair_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    brick(dir.path(), "brick", [0.6, 0.4, 0.3], 0.05, 600);
    // Simple shear dv_x/dy = 0.05 of a cell periodic along x and y: the image across the face
    // y = 6 slides by H' (0, 1, 0) = (0.3, 0, 0) faster than its grain. The reference is the
    // same pair without a cell, each grain given the affine velocity at its place, which the
    // cell's grains get at the first step (crate::cell): the pair side by side then moves as
    // the pair across the face, to round-off, while the friction springs load and slip.
    let rate = 0.05;
    let cell = format!(
        "[cell]\nsize = [6, 6, 6]\nperiodic = [true, true, false]\n\
         velocity_gradient = [[0, {rate}, 0], [0, 0, 0], [0, 0, 0]]\n"
    );
    let (a, b) = ([3.0, 5.9, 2.799999], [3.1, 6.1, 3.399998]);
    let mut periodic = pair_at(dir.path(), a, b, |_| [0.0; 3], &cell);
    let mut reference = pair_at(dir.path(), a, b, |x| [rate * x[1], 0.0, 0.0], "");
    assert_eq!(periodic.world.bodies[1].image, [0, 1, 0]);
    let weight = periodic.world.shapes[0].mass;
    let mut worst: f64 = 0.0;
    let mut friction: f64 = 0.0;
    let mut touching = 0;
    // The bricks chatter on the floor and on each other (hundreds of node contacts made and
    // broken every few steps), which amplifies round-off about tenfold every 20 steps: over
    // 300 steps the pair across a face of a cell at rest departs from its side-by-side copy by
    // 39 weights (measured). The comparison runs 40.
    for _ in 0..40 {
        periodic.step(false);
        reference.step(false);
        for k in 0..2 {
            let (p, r) = (&periodic.world.bodies[k], &reference.world.bodies[k]);
            worst =
                worst.max((p.force - r.force).norm().max((p.torque - r.torque).norm()) / weight);
        }
        friction = friction.max(reference.world.bodies[1].force.x.abs() / weight);
        touching += usize::from(reference.last.contacts > 10);
    }
    println!(
        "largest difference {worst:.1e} of the weight; tangential force up to {friction:.2} of it; \
         {touching} steps in contact"
    );
    assert!(touching >= 35, "{touching}");
    assert!(friction > 0.1, "{friction}");
    assert!(worst < 1e-8, "{worst:e}");
}

/// A loose packing of 60 spheres of three sizes in a periodic cell 12 on a side, frictional
/// Hertz, compressed by the cell's servo to `pressure` on every axis; `extra` ends `[cell]`.
fn compressed(dir: &std::path::Path, pressure: [f64; 3], extra: &str) -> Simulation {
    simulation(
        dir,
        &format!(
            r#"
[run]
dt = 2e-3
steps = 1
[contact]
law = "hertz-mindlin"
shear_modulus = 1e5
poisson_ratio = 0.3
friction = 0.3
local_damping = 0.3
[cell]
size = [12, 12, 12]
servo = {{ pressure = {pressure:?}, max_rate = 0.2 }}
{extra}
[[packings]]
seed = 2
count = 60
region = {{ kind = "cell" }}
bundles = [{{ bundle = "ball.grain" }}]
sizes = [[0.8, 0.3], [1.0, 0.4], [1.2, 0.3]]
"#
        ),
    )
}

#[test]
fn the_cell_servo_reaches_its_stresses_and_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.2, 300);
    // An anisotropic target, 100 on x and y, 150 on z (E* = 1.4e5: overlaps of about 1 % of
    // the radius).
    let target = [100.0, 100.0, 150.0];
    let mut sim = compressed(dir.path(), target, "");
    let stress = |sim: &Simulation| {
        let s = sim.measures().sample.unwrap().stress;
        [0, 1, 2].map(|k| -s[(k, k)])
    };
    let error = |s: [f64; 3]| {
        (0..3)
            .map(|k| (s[k] / target[k] - 1.0).abs())
            .fold(0.0, f64::max)
    };
    // Settled: within 1 % of every target from some step on, and still at the end.
    let mut path = Vec::new();
    while sim.world.time < 8.0 {
        sim.step(false);
        path.push((sim.world.time, error(stress(&sim))));
    }
    let last_out = path.iter().rposition(|&(_, e)| e >= 0.01);
    let settled = last_out.map_or(0.0, |i| path.get(i + 1).map_or(f64::INFINITY, |p| p.0));
    let m = sim.measures();
    let sample = m.sample.as_ref().unwrap();
    println!(
        "settled within 1 % from t = {settled:.2}; at the end {:?} (error {:.1e}), solid fraction {:.3}, \
         coordination {:.2}, unbalanced {:.1e}, rate {:?}",
        stress(&sim),
        error(stress(&sim)),
        sample.solid_fraction,
        m.coordination,
        m.unbalanced.unwrap_or(f64::NAN),
        sim.world.cell.as_ref().unwrap().rate.diagonal().as_slice()
    );
    assert!(settled < 6.0, "{settled}");
    assert!(error(stress(&sim)) < 1e-4, "{:?}", stress(&sim));
    // Jammed: a solid fraction and coordination of a compressed packing, not a lattice.
    assert!(sample.solid_fraction > 0.5, "{}", sample.solid_fraction);
    assert!(
        m.mechanical_coordination > 4.0,
        "{}",
        m.mechanical_coordination
    );
}

#[test]
fn periodic_runs_restart_and_thread_counts_give_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.2, 300);
    // The servo on the three axes and a simple shear, grains wrapped through the faces: every
    // part of a deforming cell's state (its vectors and rate, the grains' image counts, the
    // re-keyed contact histories) goes through the checkpoint.
    let text = std::fs::read_to_string({
        compressed(
            dir.path(),
            [100.0; 3],
            "velocity_gradient = [[0, 0.1, 0], [0, 0, 0], [0, 0, 0]]",
        );
        dir.path().join("scene.toml")
    })
    .unwrap()
    .replace("count = 60", "count = 80")
    .replace(
        "steps = 1",
        "steps = 3000\n[output]\ncheckpoint_every = 2000\nhistory_every = 100",
    );
    let path = crate::common::scene_file(dir.path(), &text);
    let run = |out: &str, threads: usize, restart: Option<std::path::PathBuf>| {
        let options = crate::common::run_options(&dir.path().join(out), Some(threads), restart);
        dem_run::run(&path, &options, &std::sync::atomic::AtomicBool::new(false)).unwrap();
        std::fs::read_to_string(dir.path().join(out).join("history.csv")).unwrap()
    };
    let one = run("one", 1, None);
    let two = run("two", 2, None);
    assert!(one == two, "1 and 2 threads differ");
    let checkpoint = dir.path().join("one/checkpoint/step_0000002000.json");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).unwrap()).unwrap();
    let wrapped = state["state"]["bodies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["image"] != serde_json::json!([0, 0, 0]))
        .count();
    println!("{wrapped} grains wrapped by step 2000");
    assert!(wrapped > 0);
    let restarted = run("restarted", 2, Some(checkpoint));
    let rows = |h: &str| h.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    let (all, tail) = (rows(&one), rows(&restarted));
    assert_eq!(tail.len(), 10, "rows after step 2000");
    assert!(all.ends_with(&tail), "the restart departs from the run");
}

#[test]
fn the_run_writes_the_deforming_cell_for_paraview() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    // One grain in a cell sheared at dv_x/dy = 0.5 for 100 steps of 1e-3: the cell's edge
    // a_2 = (0, 6, 0) tilts to (0.3, 6, 0) (H' = L H: a_2' = (3, 0, 0)).
    let path = crate::common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 100\n[output]\nvtk_every = 50\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [cell]\nsize = [6, 6, 6]\nvelocity_gradient = [[0, 0.5, 0], [0, 0, 0], [0, 0, 0]]\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [2.5, 2.5, 2.5]\n",
    );
    let out = dir.path().join("out");
    let options = crate::common::run_options(&out, Some(1), None);
    dem_run::run(&path, &options, &std::sync::atomic::AtomicBool::new(false)).unwrap();
    let series = grain::vtk::read_pvd(&out.join("cell.pvd")).unwrap();
    assert_eq!(series.len(), 3, "steps 0, 50 and 100");
    use vtkio::model::{DataSet, PolyDataPiece, Vtk};
    let vtk = Vtk::import(out.join(&series[2].file)).unwrap();
    let DataSet::PolyData { pieces, .. } = vtk.data else {
        panic!("not poly data")
    };
    let piece: PolyDataPiece = pieces[0].clone().into_loaded_piece_data(None).unwrap();
    let points: Vec<f64> = piece.points.into_vec().unwrap();
    let lines = piece.lines.unwrap().into_legacy();
    assert_eq!(lines.0, 12, "twelve edges");
    // Corner (0, 1, 1) (bits: a_2 and a_3) at a_2 + a_3 = (0.3, 6, 6).
    let corner = &points[3 * 0b110..3 * 0b110 + 3];
    println!("corner a_2 + a_3 at {corner:?}");
    for (c, e) in corner.iter().zip([0.3, 6.0, 6.0]) {
        assert!((c - e).abs() < 1e-12, "{corner:?}");
    }
}

#[test]
fn a_run_stops_when_its_sheared_cell_gets_too_narrow() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    // A sphere of bounding radius r (1.25 for this bake) in a cell of width 5.5 sheared at
    // dv_x/dy = 1: the width across a_1, 5.5 / sqrt(1 + t^2), falls below 4 r at
    // t = sqrt((5.5 / 4 r)^2 - 1) (0.458 for r = 1.25).
    let path = crate::common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1000\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [cell]\nsize = [5.5, 5.5, 5.5]\nvelocity_gradient = [[0, 1, 0], [0, 0, 0], [0, 0, 0]]\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [2.75, 2.75, 2.75]\n",
    );
    let options = crate::common::run_options(&dir.path().join("out"), Some(1), None);
    let radius = dem_run::build::from_scene(&dem_run::Scene::read(&path).unwrap(), &path)
        .unwrap()
        .world
        .shapes[0]
        .bounding_radius;
    let e = dem_run::run(&path, &options, &std::sync::atomic::AtomicBool::new(false)).unwrap_err();
    let expected = ((5.5 / (4.0 * radius)).powi(2) - 1.0).sqrt();
    match e {
        dem_run::RunError::Cell { time, .. } => {
            println!("{e}");
            assert!(
                (time - expected).abs() <= 1.5e-3,
                "{time} against {expected}"
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_deformable_pair_across_a_face_deforms_as_the_pair_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    // Two modes (a dilation and a stretch along x), the level sets semi-Lagrangian: the image
    // shares its grain's deformation (View::image), and its contact forces load both grains'
    // modes as the pair side by side does.
    let diagonal = |a: f64, b: f64| ndarray::arr2(&[[a, 0.0], [0.0, b]]);
    crate::common::deformable_sphere_with(
        dir.path(),
        "soft",
        0.5,
        0.05,
        400,
        crate::common::TestMode::DilationAndStretch,
        levelset_bake::Modal {
            mass: diagonal(0.05, 0.05),
            stiffness: diagonal(20.0, 30.0),
            damping: diagonal(0.0, 0.0),
            internal_force: grain::InternalForce::Linear,
            material: None,
            flexibility: None,
        },
        &[],
    );
    let scene = |b: [f64; 3], cell: &str| {
        simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 50\nks = 20\nfriction = 0.5\n{cell}\
                 [[grains]]\nbundle = \"soft.grain\"\nposition = [5.5, 3.0, 3.0]\nvelocity = [0.1, 0.0, 0.0]\n\
                 modes = {{ amplitudes = [0.02, -0.01], rates = [0.0, 0.1] }}\n\
                 [[grains]]\nbundle = \"soft.grain\"\nposition = {b:?}\nvelocity = [-0.1, 0.02, 0.0]\n\
                 angular_velocity = [0.0, 0.0, 0.3]\nmodes = {{ amplitudes = [-0.01, 0.0] }}\n"
            ),
        )
    };
    let b = [6.45, 3.1, 3.05];
    let mut periodic = scene(b, "[cell]\nsize = [6, 6, 6]\n");
    let mut reference = scene(b, "");
    assert_eq!(periodic.world.bodies[1].image, [1, 0, 0]);
    let (mut worst, mut moved, mut touching): (f64, f64, usize) = (0.0, 0.0, 0);
    for _ in 0..200 {
        periodic.step(false);
        reference.step(false);
        touching += usize::from(reference.last.contacts > 0);
        for k in 0..2 {
            let (p, r) = (&periodic.world.bodies[k], &reference.world.bodies[k]);
            let (ep, er) = (
                &p.modes.as_ref().unwrap().eps,
                &r.modes.as_ref().unwrap().eps,
            );
            worst = worst
                .max((p.force - r.force).norm())
                .max((p.torque - r.torque).norm())
                .max(100.0 * (ep[0] - er[0]).abs().max((ep[1] - er[1]).abs()));
            moved = moved.max(r.force.norm());
        }
    }
    println!(
        "largest difference {worst:.1e} against forces up to {moved:.2e}; {touching} steps in contact"
    );
    assert!(moved > 0.1 && touching > 20, "{moved}, {touching}");
    assert!(worst < 1e-9 * moved, "{worst:e}");
}

/// A unit sphere falling freely under gravity along z through a fully periodic cell 6 on a
/// side; `extra` ends `[cell]`.
fn falling(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    crate::common::sphere(dir, "ball", 1.0, 0.25, 200);
    crate::common::scene_file(
        dir,
        &format!(
            "[run]\ndt = 1e-3\nsteps = 3000\ngravity = [0, 0, -10]\n[output]\ncheckpoint_every = 1000\n\
             [contact]\nlaw = \"linear-springs\"\nkn = 1\n[cell]\nsize = [6, 6, 6]\n{extra}\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [3, 3, 3]\nvelocity = [0.3, 0, 0]\n"
        ),
    )
}

#[test]
fn gravity_in_a_deforming_cell_keeps_the_ledger_closed_through_the_wraps() {
    let dir = tempfile::tempdir().unwrap();
    // The cell stretches along z (L_33 = 0.1) while the grain falls through its z faces: its
    // unwrapped position X + H image moves with H, and the cell's work on gravity's potential
    // is booked (without it, the residual is m g . dH image summed over the steps: 8.5 % of the
    // energy supplied here), and each wrap's velocity change at the step's end velocity (booked
    // at the half-step velocity, it left m H' g dt / 2 per wrap: 1.4e-2 each here).
    let path = falling(
        dir.path(),
        "velocity_gradient = [[0, 0, 0], [0, 0, 0], [0, 0, 0.1]]",
    );
    let sim = {
        let mut sim =
            dem_run::build::from_scene(&dem_run::Scene::read(&path).unwrap(), &path).unwrap();
        for _ in 0..3000 {
            sim.step(false);
        }
        sim
    };
    let e = sim.energies();
    let b = &sim.world.bodies[0];
    println!(
        "images {:?}; residual {:.2e} of the energy supplied {:.3e}",
        b.image,
        sim.totals.ledger.residual(&e),
        sim.totals.ledger.supplied(&e)
    );
    assert!(b.image[2] <= -2, "{:?}", b.image);
    assert!(sim.totals.ledger.residual(&e).abs() < 1e-9 * sim.totals.ledger.supplied(&e));
}

#[test]
fn a_restart_into_a_cell_at_rest_stops_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let path = falling(
        dir.path(),
        "velocity_gradient = [[0.2, 0, 0], [0, 0, 0], [0, 0, 0]]",
    );
    let options = |out: &str, restart: Option<std::path::PathBuf>| {
        crate::common::run_options(&dir.path().join(out), Some(1), restart)
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    dem_run::run(&path, &options("moving", None), &stop).unwrap();
    // The same scene with its cell at rest, restarted from the moving cell's checkpoint: the
    // cell keeps the checkpoint's shape and stops (its rate zero, the grain's affine velocity
    // taken away) from the first step on.
    let still = falling(dir.path(), "");
    let checkpoint = dir.path().join("moving/checkpoint/step_0000001000.json");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).unwrap()).unwrap();
    let saved = &state["state"]["cell"];
    assert_ne!(saved["rate"][0], 0.0, "{saved}");
    let vx = state["state"]["bodies"][0]["velocity"][0].as_f64().unwrap();
    let restarted = options("still", Some(checkpoint));
    let summary = dem_run::run(&still, &restarted, &stop).unwrap();
    let last = dir.path().join("still/checkpoint/step_0000003000.json");
    let end: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(last).unwrap()).unwrap();
    let cell = &end["state"]["cell"];
    println!(
        "{} steps; vectors {} -> {}; rate {}; velocity x {vx} -> {}",
        summary.steps,
        saved["vectors"],
        cell["vectors"],
        cell["rate"],
        end["state"]["bodies"][0]["velocity"][0]
    );
    // nalgebra serializes a matrix as its column-major array.
    assert_eq!(cell["vectors"], saved["vectors"]);
    assert!(cell["rate"].as_array().unwrap().iter().all(|x| x == 0.0));
    // The affine velocity at the grain's place, 0.2 (x - origin), is gone; what is left is the
    // grain's velocity about the field, which the stretching cell slowed while it ran: with no
    // force, u = v - L x obeys du/dt = -L v + L (L x) = -L u, so u = 0.3 exp(-0.2 t) at t = 1
    // (to the step's order).
    let after = end["state"]["bodies"][0]["velocity"][0].as_f64().unwrap();
    let expected = 0.3 * (-0.2f64).exp();
    assert!(
        (after / expected - 1.0).abs() < 1e-4,
        "{after} against {expected}"
    );
}

#[test]
fn a_held_grain_in_a_deforming_cell_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let path = crate::common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [cell]\nsize = [6, 6, 6]\nvelocity_gradient = [[0, 0.1, 0], [0, 0, 0], [0, 0, 0]]\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [3, 3, 3]\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [3, 3, 5.5]\nhold = [\"x\"]\n",
    );
    let e = dem_run::build::from_scene(&dem_run::Scene::read(&path).unwrap(), &path)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("grains[1].hold") && e.contains("deforming cell"),
        "{e}"
    );
    // And a velocity gradient along an axis that is not periodic.
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "size = [6, 6, 6]",
        "size = [6, 6, 6]\nperiodic = [true, false, true]",
    );
    let path = crate::common::scene_file(dir.path(), &text);
    let e = dem_run::Scene::read(&path).err().unwrap().to_string();
    assert!(
        e.contains("cell.velocity_gradient") && e.contains("L_01"),
        "{e}"
    );
}

/// The error of building the scene `text` (bundle paths relative to `dir`), or "accepted".
fn refusal(dir: &std::path::Path, text: &str) -> String {
    let path = crate::common::scene_file(dir, text);
    match dem_run::Scene::read(&path) {
        Err(e) => e.to_string(),
        Ok(scene) => match dem_run::build::from_scene(&scene, &path) {
            Err(e) => e.to_string(),
            Ok(_) => "accepted".into(),
        },
    }
}

/// One unit sphere in a cell 6 on a side, at rest, with `cell` ending `[cell]`.
fn lone_in_cell(cell: &str) -> String {
    format!(
        "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [cell]\nsize = [6, 6, 6]\n{cell}\n[[grains]]\nbundle = \"ball.grain\"\nposition = [3, 3, 3]\n"
    )
}

#[test]
fn a_cell_servo_target_in_tension_is_refused_as_a_servo_walls_is() {
    // issue #33: the cell's servo took a tensile target, which cohesionless grains cannot
    // carry: the cell opened at its largest rate for the whole run (90 times its volume in 3
    // time units), as a servo wall asked for one would have (refused).
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let e = refusal(
        dir.path(),
        &lone_in_cell("servo = { pressure = [1, -1, 1], max_rate = 0.1 }"),
    );
    let rule = "a stress >= 0 (compression positive): the contacts are cohesionless and carry no tension, got -1";
    assert!(
        e.ends_with(&format!("cell.servo.pressure[1]: {rule}")),
        "{e}"
    );
    let wall = "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
                [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\n\
                [[walls]]\nkind = \"plane\"\npoint = [0, 0, 2]\nnormal = [0, 0, -1]\n\
                servo = { pressure = -1, max_speed = 1, area = 1 }\n";
    let e = refusal(dir.path(), wall);
    assert!(
        e.ends_with(&format!("walls[0].servo.pressure: {rule}")),
        "{e}"
    );
    // An axis the servo does not set keeps its number unread.
    let e = refusal(
        dir.path(),
        &lone_in_cell(
            "servo = { pressure = [1, -1, 1], axes = [true, false, true], max_rate = 0.1 }",
        ),
    );
    assert_eq!(e, "accepted");
}

#[test]
fn a_cell_deformed_more_than_its_contacts_follow_in_a_step_is_refused() {
    // issue #33: L_11 dt = -2 turned the cell inside out in its first step, reported as "-6e0
    // across periodic axis 1 ... a larger cell"; L_11 dt = -1 flattened it and the step
    // panicked; L_11 = L_22 with L dt = -3 passed the cell through flat and back (det(I + L dt)
    // = 4 > 0) and ran to its end. Like a wall, a cell may move two grains in contact (their
    // centres at most 2 r apart) by at most 0.1 r per step relative to each other: |L| 2 r dt
    // <= 0.1 r, |L| <= 0.05 / dt = 50 here for any radius.
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let gradient = |l: f64| {
        lone_in_cell(&format!(
            "velocity_gradient = [[{l}, 0, 0], [0, 0, 0], [0, 0, 0]]"
        ))
    };
    assert_eq!(refusal(dir.path(), &gradient(-0.99 * 50.0)), "accepted");
    let e = refusal(dir.path(), &gradient(-1.01 * 50.0));
    assert!(
        e.contains("cell.velocity_gradient: it moves grains in contact"),
        "{e}"
    );
    let e = refusal(dir.path(), &gradient(-2000.0));
    assert!(
        e.contains("L dt has the eigenvalue -2e0 <= -1: the cell goes flat within the step")
            && e.contains("det(I + L dt) = -1e0"),
        "{e}"
    );
    let e = refusal(dir.path(), &gradient(-1000.0));
    assert!(e.contains("det(I + L dt) = 0e0"), "{e}");
    let e = refusal(
        dir.path(),
        &lone_in_cell("velocity_gradient = [[-3000, 0, 0], [0, -3000, 0], [0, 0, 0]]"),
    );
    assert!(
        e.contains("the eigenvalue -3e0") && e.contains("det(I + L dt) = 4e0"),
        "{e}"
    );
    // The servo's rate, by its key (its entries anywhere in [-max_rate, max_rate]).
    let servo = |rate: f64| {
        lone_in_cell(&format!(
            "servo = {{ pressure = [1, 1, 1], max_rate = {rate} }}"
        ))
    };
    assert_eq!(refusal(dir.path(), &servo(0.99 * 50.0)), "accepted");
    let e = refusal(dir.path(), &servo(1.01 * 50.0));
    assert!(
        e.contains("cell.servo.max_rate: it moves grains in contact"),
        "{e}"
    );
}

#[test]
fn a_cell_beyond_floating_point_is_refused_by_its_key() {
    // issue #33: a cell 1e300 long was called "0e0 across periodic axis 2" (its faces' cross
    // products overflowed), and one at the origin 1e308 saturated its grains' image counts
    // and ran. A cell's corners, like every grain, lie within 1e8 of the smallest grain's
    // radius from the origin.
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let r = dem_run::build::from_scene(
        &dem_run::Scene::read(&crate::common::scene_file(dir.path(), &lone_in_cell(""))).unwrap(),
        &dir.path().join("scene.toml"),
    )
    .unwrap()
    .world
    .shapes[0]
        .bounding_radius;
    let range = format!("a cell within [-{:e}, {:e}] on each axis", 1e8 * r, 1e8 * r);
    let e = refusal(
        dir.path(),
        &lone_in_cell("").replace("size = [6, 6, 6]", "size = [1e300, 6, 6]"),
    );
    assert!(
        e.contains("cell.size: the cell reaches 1e300 from the origin") && e.contains(&range),
        "{e}"
    );
    let e = refusal(dir.path(), &lone_in_cell("origin = [1e308, 0, 0]"));
    assert!(
        e.contains("cell.origin: the cell reaches 1e308 from the origin"),
        "{e}"
    );
    let e = refusal(
        dir.path(),
        &lone_in_cell("").replace(
            "size = [6, 6, 6]",
            "vectors = [[6, 0, 0], [0, 6, 0], [0, 0, 2e8]]",
        ),
    );
    assert!(e.contains("cell.vectors: the cell reaches 2e8"), "{e}");
    // The widths from the vectors' proportions: the distances between the faces whatever
    // their size (closed form: a_1 = (2, 0, 0), a_2 = (2, 3, 0), a_3 = (0, 0, 5) times s, of
    // volume 30 s^3, have the widths V / |a_2 x a_3| = 6 s / sqrt(13), V / |a_3 x a_1| = 3 s
    // and V / |a_1 x a_2| = 5 s), to the round-off of a few operations.
    for scale in [1e-300, 1.0, 1e300] {
        let spec = dem_core::cell::CellSpec {
            origin: [0.0; 3],
            size: None,
            vectors: Some([
                [2.0 * scale, 0.0, 0.0],
                [2.0 * scale, 3.0 * scale, 0.0],
                [0.0, 0.0, 5.0 * scale],
            ]),
            periodic: [true; 3],
            velocity_gradient: None,
            servo: None,
        };
        spec.check().unwrap();
        let w = spec.cell().widths();
        let expected = [6.0 / 13f64.sqrt(), 3.0, 5.0].map(|x| x * scale);
        for k in 0..3 {
            assert!(
                (w[k] / expected[k] - 1.0).abs() < 1e-14,
                "{scale}: {w:?} against {expected:?}"
            );
        }
    }
}

#[test]
fn a_cell_servo_target_out_of_the_grains_reach_is_reported_with_the_stress_they_carry() {
    // issue #33: a cell servo asked for 1e30 compressed the cell until it was too narrow for
    // its grains, and the run advised "a larger cell". It now also gives the servo's targets
    // and the stresses the grains carried, the target being what to change.
    let dir = tempfile::tempdir().unwrap();
    crate::common::sphere(dir.path(), "ball", 1.0, 0.25, 200);
    let path = crate::common::scene_file(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 30000\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\nlocal_damping = 0.5\n\
         [cell]\nsize = [6, 6, 6]\nservo = { pressure = [1e30, 1e30, 1e30], max_rate = 0.5 }\n\
         [[lattices]]\nbundle = \"ball.grain\"\norigin = [1, 1, 1]\ncounts = [3, 3, 3]\nspacing = [1.99, 1.99, 1.99]\n",
    );
    let options = crate::common::run_options(&dir.path().join("out"), Some(1), None);
    let e = dem_run::run(&path, &options, &std::sync::atomic::AtomicBool::new(false)).unwrap_err();
    println!("{e}");
    match &e {
        dem_run::RunError::Cell { message, .. } => assert!(
            message.contains(
                "a larger cell, or a servo target the grains carry (its servo asks for the pressures [1e30, 1e30, 1e30]; they carry ["
            ),
            "{message}"
        ),
        other => panic!("{other}"),
    }
}
