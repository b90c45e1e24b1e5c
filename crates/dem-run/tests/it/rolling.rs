//! A sphere rolling down an inclined plane without slipping accelerates at 5/7 g sin(alpha)
//! (solid sphere, I = 2/5 m R^2; needs mu >= 2/7 tan(alpha)).

use crate::common;

/// Node laws see the rolling contact as a patch of node springs that keeps renewing itself:
/// each node enters with no shear, so the sphere creeps a little and the patch's nodes come and
/// go one by one. Tolerance: 2 % of the acceleration (measured with 7,842 nodes and about 90 in
/// contact: -0.63 % for area tractions, -1.58 % for node springs). With a patch of 2 or 3 nodes
/// (stiff contact, coarse nodes) the sphere hops from node to node instead, 3 % slower.
#[test]
fn a_sphere_rolls_down_an_incline_at_five_sevenths_g_sin_alpha() {
    let dir = tempfile::tempdir().unwrap();
    common::sphere(dir.path(), "ball", 0.5, 0.05, 8000);
    let alpha: f64 = 20f64.to_radians();
    let g = 9.81;
    // The plane through the origin tilted about y: normal (sin a, 0, cos a); downhill is
    // (cos a, 0, -sin a). The sphere starts resting on it, slightly pressed in.
    // Started at rest at the static penetration h of kn pi R h^2 = m g cos(alpha) (area
    // tractions; the node springs' kn times the node density is about the same).
    let r: f64 = 0.5;
    let m = 4.0 / 3.0 * std::f64::consts::PI * r.powi(3);
    let h = (m * g * alpha.cos() / (2e4 * std::f64::consts::PI * r)).sqrt();
    let (nx, nz) = (alpha.sin(), alpha.cos());
    for law in ["area-tractions", "linear-springs"] {
        let kn = if law == "area-tractions" { 2e4 } else { 8.0 };
        let mut sim = common::simulation(
            dir.path(),
            &format!(
                r#"
[run]
dt = 1e-4
steps = 1
gravity = [0, 0, {minus_g}]
[contact]
law = "{law}"
kn = {kn}
ks = {kn}
friction = 0.8
[[grains]]
bundle = "ball.grain"
position = [{x}, 0, {z}]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [{nx}, 0, {nz}]
"#,
                minus_g = -g,
                x = (r - h) * nx,
                z = (r - h) * nz,
            ),
        );
        let downhill = nalgebra::Vector3::new(alpha.cos(), 0.0, -alpha.sin());
        // The acceleration: least-squares slope of the speed over 0.4 s (the contact's shear
        // springs ring, undamped, with a period near 0.09 s).
        let speed = |sim: &dem_core::sim::Simulation| sim.world.bodies[0].velocity.dot(&downhill);
        let samples: Vec<(f64, f64)> = (0..4_000)
            .map(|_| {
                sim.step(false);
                (sim.world.time, speed(&sim))
            })
            .collect();
        let n = samples.len() as f64;
        let (st, sv) = samples
            .iter()
            .fold((0.0, 0.0), |(a, b), (t, v)| (a + t, b + v));
        let (tm, vm) = (st / n, sv / n);
        let (num, den) = samples.iter().fold((0.0, 0.0), |(a, b), (t, v)| {
            (a + (t - tm) * (v - vm), b + (t - tm) * (t - tm))
        });
        let a = num / den;
        let expected = 5.0 / 7.0 * g * alpha.sin();
        let omega = sim.world.bodies[0].spin().y;
        let slip = speed(&sim) - omega * r;
        println!(
            "{law}: a = {a:.4}, 5/7 g sin(alpha) = {expected:.4} ({:+.2} %), slip speed {slip:.2e} at v = {:.3}",
            100.0 * (a / expected - 1.0),
            speed(&sim)
        );
        assert!(
            (a / expected - 1.0).abs() < 0.02,
            "{law}: {a} vs {expected}"
        );
    }
}
