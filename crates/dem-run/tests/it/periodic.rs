//! Periodic cells (dem_run::cell): a grain meets another's image across a face with the forces
//! of the same pair placed side by side without a cell, to round-off, and keeps its contact
//! history as the grains are wrapped back into the cell.

use dem_run::Simulation;

use crate::common::{brick, simulation};

/// Two bricks stacked on a floor under gravity, the lower at `x1` sliding along +x, the upper
/// at `x2` along -x, in frictional contact (shear springs) all along; `cell` is an extra scene
/// section.
fn pair(dir: &std::path::Path, x1: f64, x2: f64, cell: &str) -> Simulation {
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
position = [{x1}, 3.0, 2.795]
velocity = [0.4, 0.02, 0.0]
angular_velocity = [0.0, 0.0, 0.1]
[[grains]]
bundle = "brick.grain"
position = [{x2}, 3.0, 3.39]
velocity = [-0.3, 0.0, 0.0]
"#
        ),
    )
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
        periodic.bodies[1].position.x < 6.0,
        "placed inside the cell"
    );
    assert_eq!(periodic.bodies[1].image, [1, 0, 0]);
    // The same contacts from centres that differ by the cell's 6 in their last bits: the same
    // forces and torques to round-off, against the weight.
    let weight = periodic.shapes[0].mass;
    assert!(reference.contacts > 10, "{}", reference.contacts);
    assert_eq!(periodic.contacts, reference.contacts);
    for k in 0..2 {
        let (p, r) = (&periodic.bodies[k], &reference.bodies[k]);
        let d = (p.force - r.force).norm().max((p.torque - r.torque).norm()) / weight;
        println!(
            "grain {k}: force {:?}, difference {d:.1e} of the weight",
            r.force.as_slice()
        );
        assert!(d < 1e-12, "grain {k}: {d:e}");
    }
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
    let weight = still.shapes[0].mass;
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        still.step(false);
        moving.step(false);
        for (a, b) in still.bodies.iter().zip(&moving.bodies) {
            worst = worst.max((a.force - b.force).norm() / weight);
        }
    }
    let wraps: i32 = moving
        .bodies
        .iter()
        .map(|b| b.image.iter().map(|n| n.abs()).sum::<i32>())
        .sum();
    println!(
        "{wraps} wraps; largest force difference {worst:.1e} of the weight; {} node contacts",
        still.contacts
    );
    // The grains of the layer next to each face the drift crosses: 9 per axis.
    assert!(wraps >= 27, "{wraps}");
    assert!(still.contacts > 0);
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
    let e = Simulation::from_scene(&dem_run::Scene::read(&path).unwrap(), &path)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cell") && e.contains("periodic axis 1"), "{e}");
}
