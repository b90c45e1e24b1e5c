//! `law = "hertz-patches"` against Hertz's closed forms (Johnson, *Contact Mechanics*, 1985,
//! section 4.2): rigid analytic grains given the law's material, in one step (the force of the
//! initial overlap).

use crate::common::{bake, simulation, sphere};
use levelset_bake::Primitive;

const E: f64 = 1.0e4;
const NU: f64 = 0.25;

/// Hertz's `F = (4/3) E* sqrt(R) delta^(3/2)`.
fn hertz(e_star: f64, r: f64, delta: f64) -> f64 {
    4.0 / 3.0 * e_star * r.sqrt() * delta.powf(1.5)
}

/// The force on the wall of a grain `bundle` at height `z` above the plane `z = 0`, turned by
/// the unit quaternion `orientation` (w, x, y, z).
fn on_plane(dir: &std::path::Path, bundle: &str, z: f64, orientation: [f64; 4]) -> f64 {
    let sim = simulation(
        dir,
        &format!(
            r#"
[run]
dt = 1e-6
steps = 1
[contact]
law = "hertz-patches"
youngs_modulus = {E}
poisson_ratio = {NU}
[[grains]]
bundle = "{bundle}"
position = [0, 0, {z}]
orientation = {orientation:?}
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
"#
        ),
    );
    let f = sim.world.walls[0].force;
    assert!(f.x.abs() < 1e-9 * f.z.abs() && f.y.abs() < 1e-9 * f.z.abs());
    -f.z
}

/// A sphere pressed into a plane by 2 % of its radius, at four orientations: the node quadrature
/// of Hertz's pressure converges to Hertz's force at second order in the node spacing (measured:
/// +15..18 %, +3.6..4.5 %, +0.8..1.0 %, +0.22..0.25 % at 500, 2,000, 8,000 and 32,000 nodes,
/// about 5, 20, 80 and 320 of them in contact), the same at every orientation.
#[test]
fn a_sphere_on_a_plane_converges_to_hertz() {
    let dir = tempfile::tempdir().unwrap();
    let (r, delta) = (1.0, 0.02);
    let exact = hertz(E / (1.0 - NU * NU), r, delta);
    let mut errors = Vec::new();
    for nodes in [500, 2000, 8000, 32000] {
        let name = format!("ball{nodes}.grain");
        sphere(dir.path(), &format!("ball{nodes}"), r, 0.05, nodes);
        let mut worst: f64 = 0.0;
        for q in [
            [1.0, 0.0, 0.0, 0.0],
            [0.5, 0.5, 0.5, 0.5],
            [0.9, 0.1, -0.3, 0.3],
            [0.2, 0.7, 0.1, -0.6],
        ] {
            let norm = (q.iter().map(|x| x * x).sum::<f64>()).sqrt();
            let f = on_plane(dir.path(), &name, r - delta, q.map(|x| x / norm));
            println!(
                "{nodes} nodes {q:?}: F / Hertz - 1 = {:+.4}",
                f / exact - 1.0
            );
            worst = worst.max((f / exact - 1.0).abs());
        }
        errors.push(worst);
    }
    for pair in errors.windows(2) {
        assert!(pair[1] < pair[0] / 3.0, "not second order: {errors:?}");
    }
    assert!(errors[3] < 0.003, "finest: {errors:?}");
}

/// Two spheres of radii 1 and 0.6, both giving nodes: Hertz with `1/R = 1/R_1 + 1/R_2` and
/// `1/E* = 2 (1 - nu^2) / E`, on level-set grids of two spacings. Each sphere's nodes penetrate
/// the other's level set by the overlap less the grid's interpolation error. Trilinear alone
/// overestimates a convex distance by `O(h^2 / R)`: measured with it, -0.88 % of Hertz at the
/// first spacings and +0.64 % at half of them, where the corrected interpolant (grain's grid
/// module) gives +1.13 % and +1.11 % at the first spacings and twice them: the nodes' own
/// quadrature error (a sphere on a plane with as many nodes: +0.8 to +1.0 %), whatever the grid.
#[test]
fn two_spheres_meet_as_hertz_says_whatever_their_grids() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r2, delta) = (1.0, 0.6, 0.02);
    let exact = hertz(E / (2.0 * (1.0 - NU * NU)), r1 * r2 / (r1 + r2), delta);
    let mut forces = Vec::new();
    for (h1, h2) in [(0.04, 0.03), (0.08, 0.06)] {
        sphere(dir.path(), "a", r1, h1, 8000);
        sphere(dir.path(), "b", r2, h2, 6000);
        let sim = simulation(
            dir.path(),
            &format!(
                r#"
[run]
dt = 1e-6
steps = 1
[contact]
law = "hertz-patches"
youngs_modulus = {E}
poisson_ratio = {NU}
[[grains]]
bundle = "a.grain"
position = [0, 0, 0]
[[grains]]
bundle = "b.grain"
position = [0, 0, {z}]
"#,
                z = r1 + r2 - delta
            ),
        );
        let f = sim.world.bodies[1].force.z;
        println!(
            "spacing {h1}, {h2}: F / Hertz - 1 = {:+.4}",
            f / exact - 1.0
        );
        assert!((f / exact - 1.0).abs() < 0.015, "{f} against {exact}");
        forces.push(f);
    }
    assert!(
        (forces[1] / forces[0] - 1.0).abs() < 0.002,
        "the grid moves the force: {forces:?}"
    );
}

/// A rigid grain touching a wall with no material for it is refused, naming the key that gives
/// it one.
#[test]
fn a_rigid_grain_and_a_wall_need_a_material() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.1, 300);
    let path = crate::common::scene_file(
        dir.path(),
        r#"
[run]
dt = 1e-6
steps = 1
[contact]
law = "hertz-patches"
[[grains]]
bundle = "ball.grain"
position = [0, 0, 2]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
"#,
    );
    let scene = dem_run::Scene::read(&path).unwrap();
    let Err(error) = dem_run::build::from_scene(&scene, &path) else {
        panic!("a rigid grain on a wall without a material was built");
    };
    let error = error.to_string();
    assert!(error.contains("contact.youngs_modulus"), "{error}");
}

/// The complete elliptic integrals `K(e)` and `E(e)` of modulus `e < 1` (composite Simpson on
/// `[0, pi/2]`, 4,000 intervals: the integrands are smooth, the error far below 1e-12).
fn elliptic(e: f64) -> (f64, f64) {
    let n = 4000;
    let h = std::f64::consts::FRAC_PI_2 / n as f64;
    let (mut k, mut ee) = (0.0, 0.0);
    for i in 0..=n {
        let s = (i as f64 * h).sin();
        let root = (1.0 - e * e * s * s).sqrt();
        let w = if i == 0 || i == n {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        };
        k += w / root;
        ee += w * root;
    }
    (k * h / 3.0, ee * h / 3.0)
}

/// Hertz's force between surfaces of relative principal radii `r1 >= r2` pressed by `delta`: the
/// elliptic contact (Johnson 1985, Eqs. 3.63-3.64 and section 4.2). With `A = 1 / (2 r1)`,
/// `B = 1 / (2 r2)`, the contact ellipse's eccentricity `e` solves
/// `B / A = (E / (1 - e^2) - K) / (K - E)`; then `delta = p_0 b K / E*`,
/// `a^2 = delta (K - E) / (K A e^2)`, `b = a sqrt(1 - e^2)` and `F = (2/3) pi a b p_0 =
/// (2/3) pi E* delta a / K`.
fn hertz_elliptic(e_star: f64, r1: f64, r2: f64, delta: f64) -> f64 {
    let (a_, b_) = (0.5 / r1, 0.5 / r2);
    let ratio = |e: f64| {
        let (k, ee) = elliptic(e);
        (ee / (1.0 - e * e) - k) / (k - ee)
    };
    let (mut lo, mut hi) = (1e-6, 1.0 - 1e-12);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if ratio(mid) < b_ / a_ {
            lo = mid
        } else {
            hi = mid
        }
    }
    let e = 0.5 * (lo + hi);
    let (k, ee) = elliptic(e);
    let a = (delta * (k - ee) / (k * a_ * e * e)).sqrt();
    2.0 / 3.0 * std::f64::consts::PI * e_star * delta * a / k
}

#[test]
fn the_elliptic_reference_has_the_spheres_limit() {
    let f = hertz_elliptic(1.0, 1.0 + 1e-9, 1.0, 1e-2);
    assert!((f / hertz(1.0, 1.0, 1e-2) - 1.0).abs() < 1e-6, "{f}");
}

/// An ellipsoid of semi-axes 1, 0.8, 0.6 on a plane by the tip of each axis: Hertz's elliptic
/// contact with the principal radii `b^2 / a` and `c^2 / a` at the tip of axis `a`. The law sums
/// the curvatures as `sqrt` of the Gaussian curvature (Hertz's equivalent radius `sqrt(r1 r2)`),
/// which leaves out the elliptic correction: its error against the exact elliptic force is
/// printed and bounded by what the correction is worth.
#[test]
fn an_ellipsoid_on_a_plane_along_each_axis() {
    let dir = tempfile::tempdir().unwrap();
    let axes = [1.0, 0.8, 0.6];
    bake(
        dir.path(),
        "egg",
        Primitive::Ellipsoid { semi_axes: axes },
        0.03,
        12000,
    );
    let delta = 0.01;
    let h = std::f64::consts::FRAC_1_SQRT_2;
    // The local axis turned to -z: x by a quarter turn about y, y by one about x.
    let turns = [[h, 0.0, h, 0.0], [h, -h, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]];
    for axis in 0..3 {
        let c = axes[axis];
        let (p, q) = (axes[(axis + 1) % 3], axes[(axis + 2) % 3]);
        let (r1, r2) = ((p * p / c).max(q * q / c), (p * p / c).min(q * q / c));
        let f = on_plane(dir.path(), "egg.grain", c - delta, turns[axis]);
        let e_star = E / (1.0 - NU * NU);
        let exact = hertz_elliptic(e_star, r1, r2, delta);
        let equivalent = hertz(e_star, (r1 * r2).sqrt(), delta);
        println!(
            "axis {axis}: r1/r2 = {:.3}, F / elliptic Hertz - 1 = {:+.4}, equivalent-radius Hertz / elliptic - 1 = {:+.4}",
            r1 / r2,
            f / exact - 1.0,
            equivalent / exact - 1.0
        );
        assert!(
            (f / equivalent - 1.0).abs() < 0.01,
            "axis {axis}: {f} against {equivalent}"
        );
        assert!(
            (f / exact - 1.0).abs() < 0.02,
            "axis {axis}: {f} against {exact}"
        );
    }
}

/// A deformable unit sphere (its one mode inert) of 8,000 nodes whose bundle carries a
/// residual flexibility of `c` between every pair of its six axis points (patches of radius
/// `rho`).
fn flexible_sphere(dir: &std::path::Path, c: f64, rho: f64) -> std::path::PathBuf {
    flexible_sphere_with(dir, ndarray::Array2::from_elem((6, 6), c), rho)
}

/// [`flexible_sphere`] with the flexibility `matrix` between its axis points.
fn flexible_sphere_with(
    dir: &std::path::Path,
    matrix: ndarray::Array2<f64>,
    rho: f64,
) -> std::path::PathBuf {
    crate::common::flexible_sphere(dir, "flexible", 0.05, 8000, matrix, rho, [E, NU])
}

/// Two fixed plates pressing a held sphere by `delta` each: the coupling through the grain's
/// body raises each contact's overlap by `e = -(G_pq F_q + G_own F_p) = (H - 2 c) F` for a
/// flexibility of `c` everywhere (`H = 3 (1 - nu^2) / (5 rho E)`, the half space's patch
/// compliance, which G_own takes out). The first step has no loads to couple (the forces `F_0`
/// are the law's alone); the lagged correction then settles where the force is the law's with
/// the plates moved in by `e` (checked against a run without the coupling at that overlap, to
/// round-off), near the fixed point `F = F_0 (1 + e / delta)^(3/2)` of Hertz's law: to the node
/// quadrature's departure from the 3/2 power between the two overlaps (with 8,000 nodes, the
/// law's force over Hertz's ranges over 0.9-1.3 % as the overlap goes from 0.018 to 0.024,
/// measured; 2.2e-3 between these two).
#[test]
fn the_coupling_raises_the_overlap_by_the_flexibility_s_displacements() {
    let dir = tempfile::tempdir().unwrap();
    let (rho, delta) = (0.5, 0.02);
    let half_space = 3.0 * (1.0 - NU * NU) / (5.0 * rho * E);
    let kappa = 5e-5;
    let c = (half_space - kappa) / 2.0;
    flexible_sphere(dir.path(), c, rho);
    let scene = |z: f64, law: &str| {
        format!(
            r#"
[run]
dt = 1e-4
steps = 60
[contact]
{law}
[[grains]]
bundle = "flexible.grain"
position = [0, 0, 0]
hold = ["x", "y", "z", "rotation"]
[[walls]]
kind = "plane"
point = [0, 0, {z}]
normal = [0, 0, -1]
[[walls]]
kind = "plane"
point = [0, 0, -{z}]
normal = [0, 0, 1]
"#
        )
    };
    let coupled = "law = \"hertz-patches\"";
    let mut sim = simulation(dir.path(), &scene(1.0 - delta, coupled));
    let f0 = sim.world.walls[0].force.z;
    let mut last = f0;
    for _ in 0..60 {
        last = sim.world.walls[0].force.z;
        sim.step(false);
    }
    let f = sim.world.walls[0].force.z;
    assert!((f / last - 1.0).abs() < 1e-12, "not settled: {last}, {f}");
    // The same law without a flexibility to couple: the plates moved in by e = kappa F.
    let rigid = "law = \"hertz-patches\"\nyoungs_modulus = 1e4\npoisson_ratio = 0.25";
    sphere(dir.path(), "plain", 1.0, 0.05, 8000);
    let moved = scene(1.0 - delta - kappa * f, rigid).replace("flexible.grain", "plain.grain");
    let uncoupled = simulation(dir.path(), &moved).world.walls[0].force.z;
    let mut fixed = f0;
    for _ in 0..100 {
        fixed = f0 * (1.0 + kappa * fixed / delta).powf(1.5);
    }
    println!("F_0 = {f0}, F = {f}, moved plates {uncoupled}, fixed point {fixed}");
    assert!(f / f0 > 1.1, "the case must couple: {f} against {f0}");
    assert!(
        (f / uncoupled - 1.0).abs() < 1e-9,
        "{f} against {uncoupled}"
    );
    assert!((f / fixed - 1.0).abs() < 4e-3, "{f} against {fixed}");
}

/// A grain with a flexibility under a law that does not couple is warned about, naming it.
#[test]
fn a_flexibility_another_law_leaves_out_is_warned() {
    let dir = tempfile::tempdir().unwrap();
    flexible_sphere(dir.path(), 1e-5, 0.5);
    let path = crate::common::scene_file(
        dir.path(),
        r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "area-tractions"
kn = 1e5
[[grains]]
bundle = "flexible.grain"
position = [0, 0, 0]
"#,
    );
    let scene = dem_run::Scene::read(&path).unwrap();
    let Ok(built) = dem_run::build::with_packings(&scene, &path) else {
        panic!("the scene is valid");
    };
    assert!(
        built
            .warnings
            .iter()
            .any(|w| w.starts_with("grains[0]:") && w.contains("residual flexibility")),
        "{:?}",
        built.warnings
    );
}

/// The coupling across a periodic face is the coupling side by side: two held flexible spheres
/// on a floor, pressed together across the face x = 6 of a cell periodic along x and y (the
/// second placed at its image inside the cell), each with two contacts (the floor at its -z
/// pole, the other grain at its x pole) coupled through its body, against the same pair without
/// the cell. The correction's local points on the image grain carry the cell's shift: a wrong
/// shift puts them far from the flexibility's points, and the coupling vanishes.
#[test]
fn the_coupling_across_a_periodic_face_is_the_coupling_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    // The -x pole (the image grain's contact) couples more strongly to itself and to the -z
    // pole than the +x pole does: a local point taken on the wrong side of the grain changes
    // the correction.
    let (rho, c) = (0.5, 5e-5);
    let mut matrix = ndarray::Array2::from_elem((6, 6), c);
    matrix[[1, 1]] = 1.5 * c;
    matrix[[1, 5]] = 2.0 * c;
    matrix[[5, 1]] = 2.0 * c;
    flexible_sphere_with(dir.path(), matrix, rho);
    let scene = |cell: &str, law: &str| {
        format!(
            r#"
[run]
dt = 1e-4
steps = 1
[contact]
{law}
{cell}
[[walls]]
kind = "plane"
point = [0, 0, 2.02]
normal = [0, 0, 1]
[[grains]]
bundle = "flexible.grain"
position = [5.01, 3, 3]
hold = ["x", "y", "z", "rotation"]
[[grains]]
bundle = "flexible.grain"
position = [6.99, 3, 3]
hold = ["x", "y", "z", "rotation"]
"#
        )
    };
    let cell = "[cell]\nsize = [6, 6, 6]\nperiodic = [true, true, false]";
    let coupled = "law = \"hertz-patches\"";
    let mut periodic = simulation(dir.path(), &scene(cell, coupled));
    let mut reference = simulation(dir.path(), &scene("", coupled));
    assert_eq!(periodic.world.bodies[1].image, [1, 0, 0]);
    // The first step has no loads to couple; the lagged correction acts from the second.
    for _ in 0..5 {
        periodic.step(false);
        reference.step(false);
    }
    let scale = reference.world.bodies[0].force.norm();
    crate::common::assert_same_pair_forces(&periodic, &reference, scale);
    assert_eq!(periodic.last.contacts, reference.last.contacts);
    // The case must couple: the same pair under the law without a flexibility carries more
    // (the floor's load at the -z pole draws the x poles in, by `c` times it).
    sphere(dir.path(), "plain", 1.0, 0.05, 8000);
    let rigid = format!("{coupled}\nyoungs_modulus = {E}\npoisson_ratio = {NU}");
    let mut plain = simulation(
        dir.path(),
        &scene(cell, &rigid).replace("flexible.grain", "plain.grain"),
    );
    for _ in 0..5 {
        plain.step(false);
    }
    let (f, f0) = (
        periodic.world.bodies[0].force.x.abs(),
        plain.world.bodies[0].force.x.abs(),
    );
    println!("pair force {f} coupled, {f0} without the flexibility");
    assert!(f / f0 < 0.9, "the case must couple: {f} against {f0}");
}
