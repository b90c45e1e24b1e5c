//! The sphere laws (hertz-jaeger, hertz-mindlin) against Hertz's and Mindlin's closed forms.

use crate::common;

/// Two unit spheres of `ball.grain` in `dir` meeting head on at relative speed 1, under the
/// `[contact]` lines `contact`.
fn head_on(dir: &std::path::Path, contact: &str) -> dem_core::sim::Simulation {
    common::simulation(
        dir,
        &format!(
            "[run]\ndt = 2e-5\nsteps = 1\n[contact]\n{contact}\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [-1.001, 0, 0]\nvelocity = [0.5, 0, 0]\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [1.001, 0, 0]\nvelocity = [-0.5, 0, 0]\n"
        ),
    )
}

/// A unit sphere of `ball.grain` in `dir` pressed into a plane by `delta` over the first time
/// unit, then slid along x by `travel` over the second, under the `[contact]` lines `contact`.
fn slide(
    dir: &std::path::Path,
    contact: &str,
    delta: f64,
    travel: f64,
) -> dem_core::sim::Simulation {
    common::simulation(
        dir,
        &format!(
            "[run]\ndt = 1e-3\nsteps = 1\n[contact]\n{contact}\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 1]\n\
             motion = {{ table = [[0, 0, 0, 0], [1, 0, 0, {}], [2, {travel}, 0, {}]] }}\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n",
            -delta, -delta
        ),
    )
}

const MATERIAL: &str = "law = \"hertz-jaeger\"\nshear_modulus = 1e6\npoisson_ratio = 0.25\n";

/// Two identical spheres (R = 1, density 1) meet head on at relative speed V = 1. Hertz (Johnson,
/// Contact Mechanics, 1985, eq. 11.24): the contact lasts t_c = 2.868 (m^2 / (R E*^2 V))^(1/5)
/// with m = m1 m2 / (m1 + m2), 1/R = 1/R1 + 1/R2, E* = G / (1 - nu) for one material; the
/// rebound is elastic and momentum is conserved.
#[test]
fn hertz_impact_lasts_johnsons_time_and_rebounds_elastically() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let mut sim = head_on(dir.path(), &format!("{MATERIAL}friction = 0.3\n"));
    let m1 = sim.world.shapes[0].mass;
    let (m, r, e_star, v) = (0.5 * m1, 0.5, 1e6 / 0.75, 1.0);
    let exact = 2.868 * (m * m / (r * e_star * e_star * v)).powf(0.2);
    let (mut start, mut end) = (None, None);
    for _ in 0..200_000 {
        sim.step(false);
        if sim.last.contacts > 0 && start.is_none() {
            start = Some(sim.world.time);
        }
        if start.is_some() && sim.last.contacts == 0 {
            end = Some(sim.world.time);
            break;
        }
    }
    let duration = end.unwrap() - start.unwrap();
    let p = sim.momentum();
    let e = sim.world.bodies[1].velocity.x - sim.world.bodies[0].velocity.x;
    println!(
        "contact {duration:.5} against Hertz {exact:.5} ({:+.3} %), restitution {e:.6}",
        100.0 * (duration / exact - 1.0)
    );
    // The duration is counted in whole steps of dt = 2e-5 (0.01 % of it).
    assert!((duration / exact - 1.0).abs() < 2e-3);
    assert!((e - 1.0).abs() < 1e-3);
    assert!(p.norm() < 1e-12 * m1);
    assert!(
        sim.world.bodies[0].spin().norm() < 1e-12,
        "no torque head on"
    );
}

/// A sphere (R = 1) pressed into a plane of the same material by delta, then slid sideways by u
/// at that depth. Mindlin (Johnson 1985, eq. 7.63 for one material): T = mu N [1 - (1 - u /
/// u*)^(3/2)] up to u* = 3 mu N (2 - nu) / (8 G a), a = sqrt(R delta), then T = mu N.
#[test]
fn a_sphere_slid_on_a_plane_follows_mindlin() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let (delta, g, nu, mu): (f64, f64, f64, f64) = (1e-3, 1e6, 0.25, 0.3);
    let n = 4.0 / 3.0 * g / (1.0 - nu) * delta * delta.sqrt();
    let a = delta.sqrt();
    let u_star = 3.0 * mu * n * (2.0 - nu) / (8.0 * g * a);
    let mut sim = slide(
        dir.path(),
        &format!("{MATERIAL}friction = {mu}\n"),
        delta,
        1.5 * u_star,
    );
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        sim.step(false);
        let f = sim.world.bodies[0].force;
        if sim.world.time > 1.0 + 1e-9 {
            let u = (sim.world.time - 1.0) * 1.5 * u_star;
            let t = if u < u_star {
                mu * n * (1.0 - (1.0 - u / u_star).powf(1.5))
            } else {
                mu * n
            };
            assert!((f.z / n - 1.0).abs() < 1e-9, "normal {} against {n}", f.z);
            worst = worst.max((-f.x - t).abs() / (mu * n));
            assert!(f.y.abs() < 1e-12 * n);
        }
    }
    println!("largest tangential error {worst:.2e} mu N");
    assert!(worst < 1e-9);
    // The wall carries the opposite force.
    assert!((sim.world.walls[0].force + sim.world.bodies[0].force).norm() < 1e-12 * n);
}

const MINDLIN: &str = "law = \"hertz-mindlin\"\nshear_modulus = 1e6\npoisson_ratio = 0.25\n";

/// `hertz-mindlin` slid on a plane at fixed depth: the incremental spring grows at Mindlin's
/// initial stiffness `k_t = 4 G a / (2 - nu)` until it reaches `mu N`, then holds there (no partial
/// slip: this is where it departs from Jäger's law, the previous test). The normal force is
/// Hertz's, as for `hertz-jaeger`.
#[test]
fn hertz_mindlin_slides_on_its_spring_up_to_coulomb() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let (delta, g, nu, mu): (f64, f64, f64, f64) = (1e-3, 1e6, 0.25, 0.3);
    let n = 4.0 / 3.0 * g / (1.0 - nu) * delta * delta.sqrt();
    let k_t = 4.0 * g * delta.sqrt() / (2.0 - nu);
    let u_slip = mu * n / k_t;
    let mut sim = slide(
        dir.path(),
        &format!("{MINDLIN}friction = {mu}\n"),
        delta,
        2.0 * u_slip,
    );
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        sim.step(false);
        let f = sim.world.bodies[0].force;
        if sim.world.time > 1.0 + 1e-9 {
            let u = (sim.world.time - 1.0) * 2.0 * u_slip;
            let t = (k_t * u).min(mu * n);
            assert!((f.z / n - 1.0).abs() < 1e-9, "normal {} against {n}", f.z);
            worst = worst.max((-f.x - t).abs() / (mu * n));
        }
    }
    println!("largest tangential error {worst:.2e} mu N");
    assert!(worst < 1e-9);
}

/// Head-on impact with Tsuji's damping (`restitution = 0.6`): the rebound speed over the impact
/// speed against the same model integrated independently here (the relative approach `x` of two
/// spheres of mass `m` each: `m* x'' = -k x^(3/2) - c x^(1/4) x'`, `k = 4/3 E* sqrt(R*)`,
/// `c = -2 sqrt(5/6) beta sqrt(3/2 k m*)`, by RK4 with a 1e-7 step), and the energy ledger's
/// viscous dissipation against the kinetic energy lost. Tsuji's form makes the restitution
/// independent of the speed but not equal to `e` for a Hertz contact, hence the ODE.
#[test]
fn hertz_mindlin_damping_matches_its_equation_and_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let e: f64 = 0.6;
    let mut sim = head_on(
        dir.path(),
        &format!("{MINDLIN}friction = 0.3\nrestitution = {e}\n"),
    );
    let m = 0.5 * sim.world.shapes[0].mass;
    let e0 = sim.energies().total();
    let mut touched = false;
    for _ in 0..200_000 {
        sim.step(false);
        touched |= sim.last.contacts > 0;
        if touched && sim.last.contacts == 0 {
            break;
        }
    }
    // The impact speed is 1: the rebound speed is the restitution.
    let dem = sim.world.bodies[1].velocity.x - sim.world.bodies[0].velocity.x;
    // The reference: the same model's equation, integrated here.
    let k = 4.0 / 3.0 * (1e6 / 0.75) * 0.5f64.sqrt();
    let l = e.ln();
    let beta = l / (l * l + std::f64::consts::PI.powi(2)).sqrt();
    let accel = |x: f64, v: f64| {
        let stiffness = 1.5 * k * x.sqrt();
        let c = -2.0 * (5.0f64 / 6.0).sqrt() * beta * (stiffness * m).sqrt();
        (-(k * x.powf(1.5)) - c * v).min(0.0) / m
    };
    let (mut x, mut v, h) = (0.0f64, 1.0f64, 1e-7);
    loop {
        let (k1x, k1v) = (v, accel(x, v));
        let (k2x, k2v) = (
            v + 0.5 * h * k1v,
            accel(x + 0.5 * h * k1x, v + 0.5 * h * k1v),
        );
        let (k3x, k3v) = (
            v + 0.5 * h * k2v,
            accel(x + 0.5 * h * k2x, v + 0.5 * h * k2v),
        );
        let (k4x, k4v) = (v + h * k3v, accel(x + h * k3x, v + h * k3v));
        x += h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
        v += h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
        if x <= 0.0 {
            break;
        }
    }
    let reference = -v;
    let residual = sim.totals.ledger.residual(&sim.energies()) / e0;
    println!(
        "restitution: DEM {dem:.5}, the model's equation {reference:.5} (e = {e}); ledger residual {residual:.1e}"
    );
    assert!((dem / reference - 1.0).abs() < 2e-3, "{dem} vs {reference}");
    assert!(residual.abs() < 2e-3, "{residual}");
}
