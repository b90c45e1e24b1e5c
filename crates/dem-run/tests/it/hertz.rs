//! The hertz-jaeger law against Hertz's and Mindlin's closed forms.

use crate::common;

const MATERIAL: &str = "law = \"hertz-jaeger\"\nshear_modulus = 1e6\npoisson_ratio = 0.25\n";

/// Two identical spheres (R = 1, density 1) meet head on at relative speed V = 1. Hertz (Johnson,
/// Contact Mechanics, 1985, eq. 11.24): the contact lasts t_c = 2.868 (m^2 / (R E*^2 V))^(1/5)
/// with m = m1 m2 / (m1 + m2), 1/R = 1/R1 + 1/R2, E* = G / (1 - nu) for one material; the
/// rebound is elastic and momentum is conserved.
#[test]
fn hertz_impact_lasts_johnsons_time_and_rebounds_elastically() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 200);
    let mut sim = common::simulation(
        dir.path(),
        &format!(
            "[run]\ndt = 2e-5\nsteps = 1\n[contact]\n{MATERIAL}friction = 0.3\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [-1.001, 0, 0]\nvelocity = [0.5, 0, 0]\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [1.001, 0, 0]\nvelocity = [-0.5, 0, 0]\n"
        ),
    );
    let m1 = sim.shapes[0].mass;
    let (m, r, e_star, v) = (0.5 * m1, 0.5, 1e6 / 0.75, 1.0);
    let exact = 2.868 * (m * m / (r * e_star * e_star * v)).powf(0.2);
    let (mut start, mut end) = (None, None);
    for _ in 0..200_000 {
        sim.step(false);
        if sim.contacts > 0 && start.is_none() {
            start = Some(sim.time);
        }
        if start.is_some() && sim.contacts == 0 {
            end = Some(sim.time);
            break;
        }
    }
    let duration = end.unwrap() - start.unwrap();
    let p = sim.momentum();
    let e = sim.bodies[1].velocity.x - sim.bodies[0].velocity.x;
    println!(
        "contact {duration:.5} against Hertz {exact:.5} ({:+.3} %), restitution {e:.6}",
        100.0 * (duration / exact - 1.0)
    );
    // The duration is counted in whole steps of dt = 2e-5 (0.01 % of it).
    assert!((duration / exact - 1.0).abs() < 2e-3);
    assert!((e - 1.0).abs() < 1e-3);
    assert!(p.norm() < 1e-12 * m1);
    assert!(sim.bodies[0].spin().norm() < 1e-12, "no torque head on");
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
    let mut sim = common::simulation(
        dir.path(),
        &format!(
            "[run]\ndt = 1e-3\nsteps = 1\n[contact]\n{MATERIAL}friction = {mu}\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 1]\n\
             motion = {{ table = [[0, 0, 0, 0], [1, 0, 0, {}], [2, {}, 0, {}]] }}\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n",
            -delta,
            1.5 * u_star,
            -delta
        ),
    );
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        sim.step(false);
        let f = sim.bodies[0].force;
        if sim.time > 1.0 + 1e-9 {
            let u = (sim.time - 1.0) * 1.5 * u_star;
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
    assert!((sim.walls[0].force + sim.bodies[0].force).norm() < 1e-12 * n);
}
