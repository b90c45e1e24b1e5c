//! Contact mechanics against closed forms.

use crate::common;

use common::{simulation, sphere};
use nalgebra::Vector3;

/// Two identical spheres (R = 1, density 1) approach head on at +-0.5 with linear node springs,
/// no damping, no friction. References: momentum conservation (exact for equal and opposite
/// pair forces) and the restitution coefficient 1 of an elastic, undamped contact.
#[test]
fn head_on_collision_conserves_momentum_and_rebounds_elastically() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.1, 400);
    let mut sim = simulation(
        dir.path(),
        r#"
[run]
dt = 2e-4
steps = 1
[contact]
law = "linear-springs"
kn = 2000
[[grains]]
bundle = "ball.grain"
position = [-1.05, 0, 0]
velocity = [0.5, 0, 0]
[[grains]]
bundle = "ball.grain"
position = [1.05, 0, 0]
velocity = [-0.5, 0, 0]
"#,
    );
    let m = sim.world.shapes[0].mass;
    let mut touched = false;
    for _ in 0..20_000 {
        sim.step(false);
        touched |= sim.last.contacts > 0;
        if touched && sim.last.contacts == 0 {
            break;
        }
    }
    assert!(
        touched && sim.last.contacts == 0,
        "the spheres did not separate"
    );
    let p = sim.momentum();
    assert!(p.norm() < 1e-12 * m, "momentum {p}");
    let relative = sim.world.bodies[1].velocity - sim.world.bodies[0].velocity;
    // Before: v_2 - v_1 = -1; e = -(v_2 - v_1)_after / (v_2 - v_1)_before.
    let e = relative.x;
    println!("restitution {e:.6}, after {} steps", sim.world.step);
    assert!((e - 1.0).abs() < 1e-3, "restitution {e}");
    assert!(relative.y.abs() + relative.z.abs() < 1e-9, "{relative}");
}

/// A sphere of radius R pressed by h into a plane with area tractions carries kn pi R h^2 in the
/// limit of fine nodes: the integral of kn (h - R (1 - cos theta)) over the cap is exactly
/// kn pi R h^2 (docs/physics.md section 4). The error must fall as the nodes are refined.
#[test]
fn area_tractions_converge_to_the_sphere_on_plane_force() {
    let dir = tempfile::tempdir().unwrap();
    let (r, h, kn) = (1.0, 0.1, 1e4);
    let exact = kn * std::f64::consts::PI * r * h * h;
    let mut errors = Vec::new();
    for nodes in [500, 2000, 8000] {
        let name = format!("ball{nodes}");
        sphere(dir.path(), &name, r, 0.05, nodes);
        let sim = simulation(
            dir.path(),
            &format!(
                r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "area-tractions"
kn = {kn}
[[grains]]
bundle = "{name}.grain"
position = [0, 0, {z}]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
"#,
                z = r - h
            ),
        );
        let f = -sim.world.walls[0].force.z;
        let error = f / exact - 1.0;
        println!(
            "{} nodes: F = {f:.4}, kn pi R h^2 = {exact:.4}, error {:+.3} %",
            sim.world.shapes[0].nodes.len(),
            100.0 * error
        );
        assert!(
            sim.world.walls[0].force.x.abs() < 1e-9 * f
                && sim.world.walls[0].force.y.abs() < 1e-9 * f
        );
        errors.push(error.abs());
    }
    assert!(errors[2] < errors[0], "no convergence: {errors:?}");
    assert!(errors[2] < 0.01, "finest error {:?}", errors[2]);
}

/// Two overlapping boxes turned together by many rigid rotations: the node-to-level-set contact
/// is evaluated in the grains' frames, so the force magnitude cannot change (frame
/// indifference), and the force turns with the pair.
#[test]
fn a_glued_pair_rotated_rigidly_keeps_its_contact_force() {
    let dir = tempfile::tempdir().unwrap();
    common::brick(dir.path(), "brick", [1.0, 0.6, 0.4], 0.1, 800);
    let scene = |q: nalgebra::UnitQuaternion<f64>| {
        let c = q.coords;
        let [w, x, y, z] = [c.w, c.x, c.y, c.z];
        // Off the grid planes: the gradient of a trilinear level set jumps across cell faces,
        // so a node lying exactly on one would take either side's gradient by rounding.
        let p = q * Vector3::new(1.9, 0.3171, 0.1234);
        // The second brick is turned by 0.3 rad about z relative to the first.
        let q2 = q * nalgebra::UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.3);
        let d = q2.coords;
        format!(
            r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "area-tractions"
kn = 1e4
nodes = "both"
[[grains]]
bundle = "brick.grain"
position = [0, 0, 0]
orientation = [{w}, {x}, {y}, {z}]
[[grains]]
bundle = "brick.grain"
position = [{}, {}, {}]
orientation = [{}, {}, {}, {}]
"#,
            p.x, p.y, p.z, d.w, d.x, d.y, d.z
        )
    };
    let reference = simulation(dir.path(), &scene(nalgebra::UnitQuaternion::identity()));
    let f0 = reference.world.bodies[0].force;
    assert!(f0.norm() > 0.0 && reference.last.contacts > 0);
    for k in 0..20 {
        let t = k as f64;
        let axis = nalgebra::Unit::new_normalize(Vector3::new(t.sin(), (1.3 * t).cos(), 0.4));
        let q = nalgebra::UnitQuaternion::from_axis_angle(&axis, 0.37 * t + 0.1);
        let sim = simulation(dir.path(), &scene(q));
        let f = sim.world.bodies[0].force;
        assert!(
            (f - q * f0).norm() < 1e-9 * f0.norm(),
            "rotation {k}: {f} against {}",
            q * f0
        );
        assert_eq!(sim.last.contacts, reference.last.contacts);
    }
}

/// The exact one-sided force of area tractions: sphere `a` (radius `ra`, centre 0) meets sphere
/// `b` (radius `rb`, centre `(d, 0, 0)`); the traction `k_n (r_b - |x - X_b|)` along `b`'s normal,
/// integrated over `a`'s surface inside `b` (axisymmetric: Simpson's rule on the polar angle).
fn one_sided(ra: f64, rb: f64, d: f64, kn: f64) -> f64 {
    let n = 200_000;
    let top = 1.0f64; // radians: beyond every cap here
    let f = |t: f64| {
        let (x, y) = (ra * t.cos(), ra * t.sin());
        let dist = ((x - d).powi(2) + y * y).sqrt();
        let depth = (rb - dist).max(0.0);
        depth * (d - x) / dist * 2.0 * std::f64::consts::PI * ra * ra * t.sin()
    };
    let h = top / n as f64;
    let sum: f64 = (0..=n)
        .map(|i| {
            let w = if i == 0 || i == n {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            w * f(i as f64 * h)
        })
        .sum();
    kn * sum * h / 3.0
}

/// Which grain gives the nodes (`nodes = "finer"`, or each grain's own `nodes = "give"` /
/// `"receive"`, which decide unless both claim the same role): spheres of radii 1 and 0.6 overlapping by
/// h = 0.05, area tractions. Swapping the node densities swaps the node giver. Each one-sided
/// force must approach its own continuum limit (the traction integrated over the giver's cap,
/// by quadrature); the two limits differ by O(h / R), 3.5 % here, a discretization error of the
/// node-to-level-set method that vanishes with the overlap.
#[test]
fn exchanging_the_node_roles_changes_the_force_within_discretization_error() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r2, h, kn) = (1.0f64, 0.6f64, 0.05f64, 1e4);
    // About 0.025 between nodes on the fine spheres, 0.032 on the coarse ones.
    common::sphere(dir.path(), "big_fine", r1, 0.025, 20_000);
    common::sphere(dir.path(), "big_coarse", r1, 0.025, 12_000);
    common::sphere(dir.path(), "small_fine", r2, 0.025, 7_200);
    common::sphere(dir.path(), "small_coarse", r2, 0.025, 4_300);
    let d = r1 + r2 - h;
    // `own`: the grains' own roles (`[[grains]] nodes`), which override the scene's rule.
    let force_with = |big: &str, small: &str, roles: &str, own: [&str; 2]| {
        let sim = common::simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"area-tractions\"\nkn = {kn}\nnodes = \"{roles}\"\n\
                 [[grains]]\nbundle = \"{big}.grain\"\nposition = [0, 0, 0]\n{}\
                 [[grains]]\nbundle = \"{small}.grain\"\nposition = [{d}, 0, 0]\n{}",
                own[0], own[1]
            ),
        );
        -sim.world.bodies[0].force.x
    };
    let force = |big: &str, small: &str, roles: &str| force_with(big, small, roles, ["", ""]);
    let big_gives = force("big_fine", "small_coarse", "finer");
    let small_gives = force("big_coarse", "small_fine", "finer");
    let both = force("big_fine", "small_fine", "both");
    // The same level sets (same primitive, same grid) and the same giver: the same bits.
    let give = "nodes = \"give\"\n";
    let receive = "nodes = \"receive\"\n";
    assert_eq!(
        force_with("big_coarse", "small_fine", "both", ["", give]),
        small_gives
    );
    assert_eq!(
        force_with("big_coarse", "small_fine", "both", [receive, ""]),
        small_gives
    );
    assert_eq!(
        force_with("big_fine", "small_coarse", "finer", [give, give]),
        big_gives
    );
    assert_eq!(
        force_with("big_coarse", "small_fine", "finer", [receive, give]),
        small_gives
    );
    assert_eq!(
        force_with("big_fine", "small_fine", "both", [give, give]),
        both
    );
    let (big_exact, small_exact) = (one_sided(r1, r2, d, kn), one_sided(r2, r1, d, kn));
    println!(
        "big sphere's nodes {big_gives:.4} (limit {big_exact:.4}, {:+.2} %), small sphere's {small_gives:.4} (limit {small_exact:.4}, {:+.2} %), both {both:.4} (mean limit {:.4}, {:+.2} %)",
        100.0 * (big_gives / big_exact - 1.0),
        100.0 * (small_gives / small_exact - 1.0),
        0.5 * (big_exact + small_exact),
        100.0 * (both / (0.5 * (big_exact + small_exact)) - 1.0),
    );
    assert!((big_gives / big_exact - 1.0).abs() < 0.015);
    assert!((small_gives / small_exact - 1.0).abs() < 0.015);
    assert!((both / (0.5 * (big_exact + small_exact)) - 1.0).abs() < 0.015);
    assert!(
        (small_exact / big_exact - 1.0).abs() < 0.04,
        "the limits themselves"
    );
}

/// Normal viscous damping dissipates: the head-on rebound of the undamped test loses speed,
/// more with more damping.
#[test]
fn normal_damping_lowers_the_restitution() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.1, 400);
    let restitution = |damping: f64| {
        let mut sim = simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 2e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 2000\nnormal_damping = {damping}\n\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [-1.05, 0, 0]\nvelocity = [0.5, 0, 0]\n\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [1.05, 0, 0]\nvelocity = [-0.5, 0, 0]\n"
            ),
        );
        let mut touched = false;
        for _ in 0..20_000 {
            sim.step(false);
            touched |= sim.last.contacts > 0;
            if touched && sim.last.contacts == 0 {
                break;
            }
        }
        sim.world.bodies[1].velocity.x - sim.world.bodies[0].velocity.x
    };
    let (e0, e1, e2) = (restitution(0.0), restitution(2.0), restitution(8.0));
    println!("restitution: {e0:.4} undamped, {e1:.4} and {e2:.4} damped");
    assert!(e0 > e1 && e1 > e2 && e2 > 0.0, "{e0} {e1} {e2}");
}

/// The tie rule (docs/physics.md section 4): a plate whose nodes lie symmetric about the planes
/// x = 0 and y = 0, one of them on both, pressed onto a sphere whose grid has nodes on those
/// planes (to round-off) and which is held only against rotation, pushes it straight down: the
/// lateral force stays at round-off and the sphere does not slide. Without the rule the node on
/// the planes takes one cell's gradient: the test measures that tilt just off the plane (the
/// normal's lateral part: the corrected level set's fourth differences, 4.5e-5 here, where the
/// plain trilinear one's was about h / (2 R), 1.6e-2), which would push the sphere sideways by
/// that fraction of the node's force.
#[test]
fn a_symmetric_plate_pushes_a_sphere_straight_down() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.1, 400);
    let plate = common::brick(dir.path(), "plate", [0.6, 0.6, 0.2], 0.1, 400);
    // The plate's nodes: an 11 x 11 lattice on its lower face, symmetric about x = 0 and y = 0.
    let mut b = grain::GrainBundle::read(&plate).unwrap();
    let (n, step) = (11usize, 0.1);
    b.nodes = ndarray::Array2::from_shape_fn((n * n, 3), |(k, c)| match c {
        0 => (k / n) as f64 * step - 0.5,
        1 => (k % n) as f64 * step - 0.5,
        _ => -0.2,
    });
    b.node_areas = ndarray::Array1::from_elem(n * n, step * step);
    b.write(&plate).unwrap();
    let ball = grain::GrainBundle::read(&dir.path().join("ball.grain")).unwrap();
    let spec = ball.levelset.spec();
    let plane = (0..spec.dims[0])
        .map(|i| spec.node(i, 0, 0).x)
        .fold(f64::INFINITY, |a, x| if x.abs() < a.abs() { x } else { a });
    assert!(
        plane.abs() < 1e-15,
        "the sphere's grid has a plane at x = {plane}"
    );
    // One cell's gradient just off the plane (beyond the tie's reach): the tilt the rule removes.
    let (_, g) = ball
        .levelset
        .value_and_gradient(&nalgebra::Point3::new(1e-6, 0.0, 0.99));
    let tilt = g.x.hypot(g.y) / g.norm();
    let mut sim = common::simulation(
        dir.path(),
        "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"area-tractions\"\nkn = 1e5\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\nhold = [\"rotation\"]\n\
         nodes = \"receive\"\n\
         [[grains]]\nbundle = \"plate.grain\"\nposition = [0, 0, 1.2]\n\
         motion = { velocity = [0, 0, -0.5] }\n\
         [[walls]]\nkind = \"plane\"\npoint = [0, 0, -1]\nnormal = [0, 0, 1]\n",
    );
    let mut worst: f64 = 0.0;
    for _ in 0..300 {
        sim.step(false);
        let f = sim.world.bodies[0].force;
        worst = worst.max(f.x.hypot(f.y) / f.z.abs().max(f64::MIN_POSITIVE));
    }
    let ball = &sim.world.bodies[0];
    println!(
        "one cell's tilt {tilt:.2e}; lateral / normal force at most {worst:.1e}; the sphere at {:?}, {} node contacts",
        ball.position, sim.last.contacts
    );
    assert!(tilt > 1e-6, "{tilt}");
    assert!(sim.last.contacts > 5, "{}", sim.last.contacts);
    assert!(worst < 1e-10, "{worst}");
    assert!(ball.position.x.abs() < 1e-15 && ball.position.y.abs() < 1e-15);
}
