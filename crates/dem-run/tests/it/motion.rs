//! Rigid-body integration without contacts, and the automatic time step.

use crate::common;

use nalgebra::Vector3;

/// A free brick spinning near its intermediate axis (the unstable one: it flips over and over).
/// Torque-free: the angular momentum in the global frame is constant, and the splitting
/// integrator keeps it to round-off (each sub-step turns the body and its momentum together);
/// the kinetic energy is kept to O(dt^2) without drift.
#[test]
fn a_free_asymmetric_top_keeps_its_angular_momentum_and_energy() {
    let dir = tempfile::tempdir().unwrap();
    common::brick(dir.path(), "brick", [1.0, 0.6, 0.3], 0.1, 200);
    let mut sim = common::simulation(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [[grains]]\nbundle = \"brick.grain\"\nposition = [0, 0, 0]\nangular_velocity = [0.01, 5, 0.02]\n",
    );
    let momentum = |sim: &dem_core::sim::Simulation| {
        let b = &sim.world.bodies[0];
        let i = sim.world.shapes[0].moments;
        b.orientation.transform_vector(&Vector3::new(
            i[0] * b.angular_velocity[0],
            i[1] * b.angular_velocity[1],
            i[2] * b.angular_velocity[2],
        ))
    };
    let (l0, e0) = (momentum(&sim), sim.energies().rotational);
    let mut flipped = false;
    let mut worst: f64 = 0.0;
    for _ in 0..20_000 {
        sim.step(false);
        flipped |= sim.world.bodies[0].angular_velocity[1] < 0.0;
        worst = worst.max((sim.energies().rotational / e0 - 1.0).abs());
    }
    let l = momentum(&sim);
    println!(
        "after 20,000 steps: |L - L0| / |L0| = {:.1e}, largest energy error {worst:.1e}",
        (l - l0).norm() / l0.norm()
    );
    assert!(flipped, "the intermediate axis should be unstable");
    assert!((l - l0).norm() < 1e-12 * l0.norm());
    assert!(worst < 1e-4);
    assert_eq!(sim.world.bodies[0].position, Vector3::zeros());
}

/// `dt = "auto"`: safety x sqrt(m_eff / k), m_eff half the smaller of the mass and I / r^2 at
/// the bounding radius, k the stiffness of a patch of nodes: k_n times the nodes on a cap of
/// area 2 pi r (0.01 r) (docs/physics.md section 6; dem_core::timestep). For a sphere of radius 0.5
/// (density 1, grid spacing 0.1): m = pi / 6, I = m R^2 (2/5), r = 0.6.
#[test]
fn the_automatic_step_follows_the_lightest_grain_and_the_stiffness() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    let sim = common::simulation(
        dir.path(),
        "[run]\ndt = \"auto\"\nsafety = 0.3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\n",
    );
    let m = std::f64::consts::PI / 6.0;
    let m_eff = 0.5 * (0.4 * m * 0.25 / 0.36);
    let nodes_on_cap = sim.world.shapes[0].node_density * 2.0 * std::f64::consts::PI * 0.6 * 0.006;
    assert!(nodes_on_cap > 1.0, "{nodes_on_cap}");
    let expected = 0.3 * (m_eff / (100.0 * nodes_on_cap)).sqrt();
    assert!(
        (sim.parameters.dt / expected - 1.0).abs() < 1e-12,
        "{} vs {expected}",
        sim.parameters.dt
    );
    assert_eq!(sim.world.shapes.len(), 1);
}

/// Cundall's local damping with fraction alpha on a grain falling freely: the force m g is
/// reduced by alpha |m g| against the motion, so it accelerates at g (1 - alpha) exactly.
#[test]
fn local_damping_scales_a_free_fall_by_one_minus_alpha() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 100);
    let mut sim = common::simulation(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1\ngravity = [0, 0, -10]\n[contact]\nlaw = \"linear-springs\"\nkn = 1\nlocal_damping = 0.3\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\nvelocity = [0, 0, -1]\n",
    );
    for _ in 0..1000 {
        sim.step(false);
    }
    let v = sim.world.bodies[0].velocity.z;
    assert!(
        (v - (-1.0 - 10.0 * 0.7 * sim.world.time)).abs() < 1e-12,
        "{v}"
    );
}

/// `hold = ["rotation"]`: a tilted brick dropped corner first on a frictionless plane. Held, it
/// keeps its orientation to the bit and bounces as a point mass on the contact springs: it leaves
/// at its impact speed (undamped springs conserve energy; velocity Verlet is time-reversible), and
/// the ledger closes. Free, the same impact turns it (the corner force has a lever arm), which is
/// what the constraint removes.
#[test]
fn a_grain_whose_rotation_is_held_bounces_without_turning() {
    let dir = tempfile::tempdir().unwrap();
    common::brick(dir.path(), "brick", [0.5, 0.3, 0.2], 0.1, 200);
    let (s, c) = (10f64.to_radians().sin(), 10f64.to_radians().cos());
    let scene = |hold: &str| {
        format!(
            "[run]\ndt = 5e-5\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
             [[grains]]\nbundle = \"brick.grain\"\nposition = [0, 0, 1]\norientation = [{c}, {s}, 0, 0]\n\
             velocity = [0, 0, -1]\nhold = [{hold}]\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n"
        )
    };
    let mut held = common::simulation(dir.path(), &scene("\"rotation\""));
    let mut free = common::simulation(dir.path(), &scene(""));
    let q0 = held.world.bodies[0].orientation;
    let worst = side_by_side(&mut held, &mut free, 30_000);
    let b = &held.world.bodies[0];
    println!(
        "held: v = {:?}, ledger residual {worst:.1e}; free: |omega| = {:.3}",
        b.velocity,
        free.world.bodies[0].angular_velocity.norm()
    );
    assert!(b.position.z > 1.0, "it should have bounced back up");
    assert_eq!(b.orientation, q0);
    assert_eq!(b.angular_velocity, Vector3::zeros());
    assert!((b.velocity.z - 1.0).abs() < 1e-3, "{:?}", b.velocity);
    assert!(b.velocity.xy().norm() < 1e-12);
    assert!(worst < 1e-3);
    assert!(free.world.bodies[0].angular_velocity.norm() > 0.1);
}

/// `hold = ["x"]`: a ball dropped on a frictionless plane tilted about y. Free, the plane's
/// normal force pushes it along x; held in x, its x stays at its initial value to the bit while it
/// bounces along z, and the ledger closes (the constraint does no work).
#[test]
fn a_grain_held_in_x_does_not_slide_down_a_tilted_plane() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.1, 200);
    let (s, c) = (20f64.to_radians().sin(), 20f64.to_radians().cos());
    let scene = |hold: &str| {
        format!(
            "[run]\ndt = 5e-5\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 1]\nvelocity = [0, 0, -1]\nhold = [{hold}]\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [{s}, 0, {c}]\n"
        )
    };
    let mut held = common::simulation(dir.path(), &scene("\"x\""));
    let mut free = common::simulation(dir.path(), &scene(""));
    let worst = side_by_side(&mut held, &mut free, 30_000);
    let (h, f) = (&held.world.bodies[0], &free.world.bodies[0]);
    println!(
        "held: x {}, v {:?}; free: x {}; ledger {worst:.1e}",
        h.position.x, h.velocity, f.position.x
    );
    assert_eq!(h.position.x, 0.0);
    assert_eq!(h.velocity.x, 0.0);
    assert!(
        h.velocity.z > 0.5,
        "it should have bounced: {:?}",
        h.velocity
    );
    assert!(f.position.x > 0.05, "free, it slides: {}", f.position.x);
    assert!(worst < 1e-3);
}

/// Steps a held and a free run side by side; the held run's largest ledger residual relative to
/// its initial energy.
fn side_by_side(
    held: &mut dem_core::sim::Simulation,
    free: &mut dem_core::sim::Simulation,
    steps: usize,
) -> f64 {
    let e0 = held.energies().total();
    let mut worst: f64 = 0.0;
    for _ in 0..steps {
        held.step(false);
        free.step(false);
        worst = worst.max(held.totals.ledger.residual(&held.energies()).abs() / e0);
    }
    worst
}
