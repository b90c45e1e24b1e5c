//! Deformable grains (docs/physics.md sections 1-6): modal dynamics against closed forms, generalized
//! forces against finite differences of the contact energy, the level-set updates against the
//! recomputed level set, the energy ledger, and rigid trajectories when no load reaches a mode.

use crate::common::{self, TestMode};

use dem_core::sim::Simulation;
use nalgebra::{Point3, Vector3};

/// A scene with one grain `grain` (TOML of its `[[grains]]` entry), no gravity, no contact.
fn lone(dir: &std::path::Path, dt: f64, steps: u64, grain: &str) -> Simulation {
    common::simulation(
        dir,
        &format!(
            "[run]\ndt = {dt}\nsteps = {steps}\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
             [[grains]]\n{grain}\n"
        ),
    )
}

/// Free vibration without contact: `M eps'' + K eps = 0` from `eps0` at rest is
/// `eps0 cos(omega t)`, `omega = sqrt(K / M)`; with damping `C` (ratio `zeta = C / (2 sqrt(KM))`)
/// it is `eps0 e^(-zeta omega t) (cos(omega_d t) + zeta / sqrt(1 - zeta^2) sin(omega_d t))`,
/// `omega_d = omega sqrt(1 - zeta^2)` (any vibrations text). Velocity Verlet with 250 steps per
/// period keeps the undamped phase error `(omega dt)^2 omega t / 24` below 1e-4 over 10 periods.
#[test]
fn free_vibration_follows_the_closed_form_over_ten_periods() {
    let dir = tempfile::tempdir().unwrap();
    let (m, k): (f64, f64) = (2.0, 50.0);
    let omega = (k / m).sqrt();
    for zeta in [0.0f64, 0.05] {
        let c = zeta * 2.0 * (k * m).sqrt();
        common::deformable_sphere(
            dir.path(),
            "ball",
            1.0,
            0.25,
            100,
            TestMode::Dilation,
            [m, k, c],
            &[],
        );
        let period = 2.0 * std::f64::consts::PI / omega;
        let dt = period / 2500.0;
        let steps = 25_000;
        let eps0 = 0.01;
        let mut sim = lone(
            dir.path(),
            dt,
            steps,
            &format!(
                "bundle = \"ball.grain\"\nposition = [0, 0, 0]\nangular_velocity = [0.3, -1, 2]\nmodes = {{ amplitudes = [{eps0}] }}"
            ),
        );
        let wd = omega * (1.0 - zeta * zeta).sqrt();
        let exact = |t: f64| {
            eps0 * (-zeta * omega * t).exp()
                * ((wd * t).cos() + zeta / (1.0 - zeta * zeta).sqrt() * (wd * t).sin())
        };
        let mut worst: f64 = 0.0;
        for _ in 0..steps {
            sim.step(false);
            let eps = sim.world.bodies[0].modes.as_ref().unwrap().eps[0];
            worst = worst.max((eps - exact(sim.world.time)).abs() / eps0);
        }
        println!("zeta {zeta}: largest error over 10 periods {worst:.2e} of eps0");
        assert!(worst < 1e-4, "zeta {zeta}: {worst}");
        // A spinning, drifting grain: no load reaches the dilation mode, which vibrates as if
        // at rest (above), and the centre does not move.
        assert_eq!(sim.world.bodies[0].position, Vector3::zeros());
    }
}

/// Two overlapping dilation spheres (radius 1, overlap about 0.05), frictionless linear springs,
/// both grains giving nodes; `update` is the level-set update of both.
fn pressed_pair(dir: &std::path::Path, update: &str, eps: [f64; 2]) -> Simulation {
    common::simulation(
        dir,
        &format!(
            "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\n\
             modes = {{ levelset = \"{update}\", amplitudes = [{}] }}\n\
             [[grains]]\nbundle = \"ball.grain\"\nposition = [1.96, 0.03, -0.02]\n\
             orientation = [0.9238795325112867, 0, 0.3826834323650898, 0]\n\
             modes = {{ levelset = \"{update}\", amplitudes = [{}] }}\n",
            eps[0], eps[1]
        ),
    )
}

/// The generalized contact forces are minus the derivatives of the contact energy with respect
/// to each grain's amplitude (docs/physics.md section 3): central differences of the energy of the
/// same scene (step 1e-6, an O(h^2) error far below the tolerance). Each grain gives nodes
/// (Eq. 41, exact: the nodes move linearly with eps) and has its level set penetrated (the exact
/// derivative of the update's interpolant), so both forms are checked, for both updates.
#[test]
fn generalized_forces_are_minus_the_derivatives_of_the_contact_energy() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "ball",
        1.0,
        0.1,
        1500,
        TestMode::Dilation,
        [1.0, 100.0, 0.0],
        &[-0.02, -0.01, 0.01, 0.02],
    );
    let eps = [0.013, -0.007];
    for update in ["semi-lagrangian", "precomputed", "rigid"] {
        let sim = pressed_pair(dir.path(), update, eps);
        assert!(
            sim.last.contacts > 20,
            "{update}: {} node contacts",
            sim.last.contacts
        );
        let h = 1e-6;
        for g in 0..2 {
            let energy = |d: f64| {
                let mut e = eps;
                e[g] += d;
                pressed_pair(dir.path(), update, e).last.contact_energy
            };
            let fd = -(energy(h) - energy(-h)) / (2.0 * h);
            let f = sim.world.bodies[g].modes.as_ref().unwrap().contact[0];
            println!("{update}, grain {g}: F_eps {f:.9e}, -dE/deps {fd:.9e}");
            assert!(
                (f - fd).abs() <= 1e-6 * fd.abs(),
                "{update}, grain {g}: {f} vs {fd}"
            );
        }
    }
}

/// The level set of a grain dilated by `eps` (radius 1, grid spacing `h` = 0.1), three ways, at
/// points within two cells of the surface (a 40^3 lattice through the grid box):
/// - recomputed: levelset-bake's exact distance to the deformed (facetted) surface on the same
///   grid (the sample at `eps` of a bundle baked with that sample), interpolated trilinearly;
/// - precomputed: the blend of samples at -0.08, 0 and 0.08 added to the exact reference;
/// - semi-Lagrangian: the exact reference at the pulled-back point, times the normal stretch
///   `1 + n^T (grad u) n` (docs/physics.md section 5).
///
/// Bounds: the pulled-back reference distance is stretched by `1 / (1 + eps)` (a dilation);
/// the normal stretch, `1 + eps` at every grid node (central differences of a linear field are
/// exact), undoes it exactly, so the semi-Lagrangian
/// value differs from the recomputed distance by the trilinear errors of both grids alone,
/// `h^2 / (2 r)` with `r` about 1 near the surface. The value without the normalisation
/// (`phi_0(X)`, the semi-Lagrangian value over `1 + eps`) is checked to exceed that bound, so
/// the test tells the two apart.
/// The distance of a dilated sphere is linear in `eps`, so the blend's increment is exact but
/// for the samples' discretization, and the precomputed value differs from the recomputed one
/// by the facets' error (the reference is the exact sphere, the recomputed surface facetted):
/// at most that of the undeformed surface, measured here as the largest `|phi(0) - phi_0|`
/// at the grid nodes near the surface, times `2 + eps` (once in the recomputed level set,
/// scaled by the dilation, once in the increment's start).
#[test]
fn semi_lagrangian_precomputed_and_recomputed_level_sets_agree_near_the_surface() {
    let dir = tempfile::tempdir().unwrap();
    let (r, h, eps) = (1.0f64, 0.1, 0.05);
    common::deformable_sphere(
        dir.path(),
        "blend",
        r,
        h,
        1500,
        TestMode::Dilation,
        [1.0, 1.0, 0.0],
        &[-0.08, 0.08],
    );
    common::deformable_sphere(
        dir.path(),
        "exact",
        r,
        h,
        1500,
        TestMode::Dilation,
        [1.0, 1.0, 0.0],
        &[eps],
    );
    let grain = |bundle: &str, update: &str| {
        lone(
            dir.path(),
            1e-3,
            1,
            &format!(
                "bundle = \"{bundle}.grain\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"{update}\", amplitudes = [{eps}] }}"
            ),
        )
    };
    let exact = grain::GrainBundle::read(&dir.path().join("exact.grain")).unwrap();
    let sample = exact.deformation.unwrap().precomputed[0]
        .iter()
        .find(|s| s.amplitude == eps)
        .unwrap()
        .values
        .clone();
    let rec = grain::LevelSetGrid::new(
        exact.levelset.spec().clone(),
        sample.into_raw_vec_and_offset().0,
    )
    .unwrap();
    let blended = grain("blend", "precomputed");
    let remapped = grain("blend", "semi-lagrangian");
    fn view(s: &Simulation) -> dem_core::view::View<'_> {
        dem_core::view::View::new(&s.world.bodies[0], &s.world.shapes[0])
    }
    let (pre, sl) = (view(&blended), view(&remapped));
    let (mut worst_pre, mut worst_sl, mut worst_raw, mut checked): (f64, f64, f64, usize) =
        (0.0, 0.0, 0.0, 0);
    let n = 40;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let y = Point3::from([i, j, k].map(|c| -1.4 + 2.8 * (c as f64 + 0.37) / n as f64));
                let phi = rec.value(&y);
                if phi.abs() > 2.0 * h {
                    continue;
                }
                checked += 1;
                let sl_bound = h * h / 2.0;
                let psi = sl.level_set(&y).0;
                worst_sl = worst_sl.max((psi - phi).abs() / sl_bound);
                worst_raw = worst_raw.max((psi / (1.0 + eps) - phi).abs() / sl_bound);
                worst_pre = worst_pre.max((pre.level_set(&y).0 - phi).abs());
            }
        }
    }
    let blend = grain::GrainBundle::read(&dir.path().join("blend.grain")).unwrap();
    let zero = &blend.deformation.as_ref().unwrap().precomputed[0][1];
    assert_eq!(zero.amplitude, 0.0);
    let facets = zero
        .values
        .iter()
        .zip(blend.levelset.values())
        .filter(|(_, p)| p.abs() < 2.0 * h)
        .map(|(f, p)| (f - p).abs())
        .fold(0.0, f64::max);
    let chord = (2.0 + eps) * facets;
    println!(
        "{checked} points within 2h: semi-Lagrangian at {worst_sl:.2} of its bound ({worst_raw:.2} unnormalised), precomputed within {worst_pre:.2e} (facet bound {chord:.2e})"
    );
    assert!(checked > 1000);
    assert!(worst_sl <= 1.0, "{worst_sl}");
    assert!(worst_raw > 1.0, "{worst_raw}");
    assert!(worst_pre <= chord, "{worst_pre} vs {chord}");
}

/// `flat.grain` in `dir`: the unit sphere (grid spacing 0.1, 1,500 nodes) with the flattening
/// mode ([`TestMode::Flatten`]), its modal mass, stiffness and damping `mkc`, level sets
/// precomputed at `samples`.
fn flat_grain(dir: &std::path::Path, mkc: [f64; 3], samples: &[f64]) {
    common::deformable_sphere(dir, "flat", 1.0, 0.1, 1500, TestMode::Flatten, mkc, samples);
}

/// A contact-localised mode (the poles of a unit sphere flattened over a width of 0.4,
/// `|grad u|_2 = eps |grad Phi_z|`, `grad Phi_z = e (2 x z / w^2, 2 y z / w^2, -1)`,
/// `e = exp(-r^2 / w^2)`: on the surface its largest value is 2.16, at `r = 0.26` (scanned in
/// `r`), so 0.32 at eps = 0.15; grid spacing 0.1). The fold bound must exceed that and is
/// checked to stay within about 1.5 times it. Within a quarter cell of the deformed surface the
/// semi-Lagrangian level set agrees with the recomputed one (levelset-bake's exact distance to
/// the deformed facetted surface, interpolated) to the interpolation errors alone: the
/// reference's and the recomputed grid's trilinear error `h^2 / (4 r)` each (curvature radius
/// `r` about 1, the flattened pole flatter), the facets' chord error measured on the undeformed
/// sample, and the mode field's trilinear error `eps h^2 / 8 |d^2 Phi|` with
/// `|d^2 Phi| <= 2 / w^2 + 1`. The normalised value is the deformed distance to second order in
/// `phi` (docs/physics.md section 5), and `phi^2 <= (h/4)^2` here is below a tenth of those
/// errors. Two values the test tells apart, with a looser tolerance: a pulled-back distance is
/// not a distance, so `phi_0(X)` unnormalised is `phi` stretched by up to `1 / (1 - G)` (`G`
/// the fold bound of the amplitudes; tolerance `G / (1 - G) |phi|` plus the interpolation
/// errors); the first-order map of the paper (`phi_0(y - u(y))`) is checked to exceed even that.
/// (So near the surface the stretch of `phi_0(X)` is small, 0.36 of the interpolation errors
/// here: the dilation test of the normalisation is the one above.)
#[test]
fn a_contact_localised_mode_keeps_the_semi_lagrangian_surface_on_the_deformed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (h, eps) = (0.1f64, 0.15);
    flat_grain(dir.path(), [1.0, 1.0, 0.0], &[eps]);
    let sim = lone(
        dir.path(),
        1e-3,
        1,
        &format!(
            "bundle = \"flat.grain\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"semi-lagrangian\", amplitudes = [{eps}] }}"
        ),
    );
    let bundle = grain::GrainBundle::read(&dir.path().join("flat.grain")).unwrap();
    let d = bundle.deformation.as_ref().unwrap();
    let sample = |a: f64| {
        let s = d.precomputed[0].iter().find(|s| s.amplitude == a).unwrap();
        grain::LevelSetGrid::new(
            bundle.levelset.spec().clone(),
            s.values.iter().copied().collect(),
        )
        .unwrap()
    };
    let (rec, zero) = (sample(eps), sample(0.0));
    let facets = zero
        .values()
        .iter()
        .zip(bundle.levelset.values())
        .filter(|(_, p)| p.abs() < 2.0 * h)
        .map(|(f, p)| (f - p).abs())
        .fold(0.0, f64::max);
    let shape = &sim.world.shapes[0];
    let modal = shape.modal.as_ref().unwrap();
    let amplitudes = [eps];
    let config = dem_core::path::Configuration::new(&modal.paths, &amplitudes);
    let fold = config.bounds().fold;
    let w2 = 0.16;
    let interpolation = 2.0 * h * h / 4.0 + 2.0 * facets + eps * h * h / 8.0 * (2.0 / w2 + 1.0);
    let view = dem_core::view::View::new(&sim.world.bodies[0], shape);
    let grid = &shape.levelset;
    let u = |n| config.grid_displacement(n);
    let (mut worst_exact, mut worst_first, mut checked) = (0.0f64, 0.0f64, 0);
    let n = 60;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let y = Point3::from([i, j, k].map(|c| -1.3 + 2.6 * (c as f64 + 0.37) / n as f64));
                let phi = rec.value(&y);
                if phi.abs() > 0.25 * h {
                    continue;
                }
                checked += 1;
                let tolerance = fold / (1.0 - fold) * phi.abs() + interpolation;
                let exact = view.level_set(&y).0;
                worst_exact = worst_exact.max((exact - phi).abs() / interpolation);
                let first = grid.value(&(y - grid.displacement(&grid.locate(&y), u).0));
                worst_first = worst_first.max((first - phi).abs() / tolerance);
            }
        }
    }
    println!(
        "{checked} points within h/4 of the deformed surface (fold bound {fold:.3}, interpolation {interpolation:.2e}): semi-Lagrangian at {worst_exact:.2} of the interpolation errors, the first-order map at {worst_first:.2} of the looser tolerance"
    );
    assert!((0.32..0.5).contains(&fold), "{fold}");
    assert!(checked > 500);
    assert!(worst_exact <= 1.0, "{worst_exact}");
    assert!(worst_first > 1.0, "{worst_first}");
}

/// The radius a node test leaves out beyond (`View::reach_within`) and the pair search's
/// (`View::search_radius`) on the contact-localised mode above, bulging (`eps < 0`) and
/// flattening the poles, for both updates, against the deformed level set itself: along 600
/// directions the farthest point where the level set is below the margin (scanned inward
/// from 1.5 in steps of `h / 50`) lies within the radius, and every deformed node and the
/// radius at any smaller margin within the search radius.
/// While the level set's shift bound plus the stretched margin is below a spacing (checked
/// at `|eps| = 0.02`, margins up to `0.3 h`) the radius is the derived one, at least half a
/// spacing inside the padded radius plus the margin; past it (`|eps| = 0.15`) it is the
/// padded one.
#[test]
fn a_deformed_grains_reach_holds_its_level_set_below_the_margin() {
    let dir = tempfile::tempdir().unwrap();
    let h = 0.1;
    flat_grain(
        dir.path(),
        [1.0, 1.0, 0.0],
        &[-0.15, -0.05, 0.0, 0.05, 0.15],
    );
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    let directions: Vec<Vector3<f64>> = (0..600)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / 600.0;
            let (s, a) = ((1.0 - z * z).sqrt(), golden * i as f64);
            Vector3::new(s * a.cos(), s * a.sin(), z)
        })
        .collect();
    for update in ["semi-lagrangian", "precomputed"] {
        for eps in [-0.15f64, -0.05, -0.02, 0.02, 0.05, 0.15] {
            let sim = lone(
                dir.path(),
                1e-3,
                1,
                &format!(
                    "bundle = \"flat.grain\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"{update}\", amplitudes = [{eps}] }}"
                ),
            );
            let view = dem_core::view::View::new(&sim.world.bodies[0], &sim.world.shapes[0]);
            for margin in [0.0, 0.3 * h, 0.8 * h] {
                let radius = view.reach_within(margin);
                let farthest = (directions.iter())
                    .filter_map(|d| {
                        (0..=1000)
                            .map(|i| 1.5 - i as f64 * h / 50.0)
                            .find(|&r| view.level_set(&Point3::from(r * d)).0 < margin)
                    })
                    .fold(0.0, f64::max);
                println!(
                    "{update}, eps {eps}, margin {margin}: farthest sampled {farthest:.4}, radius {radius:.4}, padded {:.4}",
                    view.reach + margin
                );
                assert!(
                    farthest > 0.9 && farthest <= radius,
                    "{farthest} > {radius}"
                );
                let derived = radius < view.reach + margin;
                match eps.abs() {
                    0.02 if margin < 0.5 * h => {
                        assert!(
                            derived && radius < view.reach + margin - 0.5 * h,
                            "{radius}"
                        )
                    }
                    0.15 => assert!(!derived),
                    _ => {}
                }
                let search = view.search_radius(margin);
                for k in 0..view.shape.nodes.len() {
                    assert!(view.node_local(k).norm() <= search, "node {k}");
                }
                for below in (0..=10).map(|i| margin * i as f64 / 10.0) {
                    assert!(search >= view.reach_within(below), "{below}");
                }
                assert!(view.halo_radius(search, margin) >= search);
            }
        }
    }
}

/// Between the grid nodes the semi-Lagrangian level set is exact to third order in the grid
/// spacing `h` on a surface the mode bends, at small strain (docs/physics.md section 5): the unit
/// sphere flattened at its poles by [`TestMode::Flatten`] at eps = 0.03 (`|grad u|_2` up to
/// 0.065), whose deformed surface is known in closed form, `y = X + eps Phi(X)` for `X` on the
/// sphere, where the level set must vanish. At 400 such points round a pole (polar angles up to
/// 40 degrees), the largest `|psi(y)|` falls by at least 6 when `h` halves from 0.1 to 0.05
/// (third order: 8; measured 8.04, from 7.5e-5 to 9.3e-6). The reference's correction alone,
/// without the mode field's (`phi_0` corrected at the trilinear pull-back's point), is checked
/// to fall by less than 5 (measured 4.24, from 8.3e-4: second order, the mode field's trilinear
/// error `eps h^2 / 8 |d^2 Phi|`), so the test tells the two apart. The mode field's correction
/// is exact to first order in the strain: at eps = 0.01, 0.06 and 0.15 (`|grad u|_2` up to
/// 0.32) the largest `|psi|` falls by 10.6, 6.8 and 5.5, a second-order remainder of about
/// `|grad u|` times the mode field's trilinear error, and 7 to 11 times below the reference's
/// correction alone at `h` = 0.1.
#[test]
fn the_semi_lagrangian_surface_converges_at_third_order_in_the_grid_spacing() {
    let dir = tempfile::tempdir().unwrap();
    let eps = 0.03;
    let mut worst = Vec::new();
    for (name, h) in [("coarse", 0.1), ("fine", 0.05)] {
        common::deformable_sphere(
            dir.path(),
            name,
            1.0,
            h,
            200,
            TestMode::Flatten,
            [1.0, 1.0, 0.0],
            &[],
        );
        let sim = lone(
            dir.path(),
            1e-3,
            1,
            &format!(
                "bundle = \"{name}.grain\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"semi-lagrangian\", amplitudes = [{eps}] }}"
            ),
        );
        let shape = &sim.world.shapes[0];
        let modal = shape.modal.as_ref().unwrap();
        let amplitudes = [eps];
        let config = dem_core::path::Configuration::new(&modal.paths, &amplitudes);
        let view = dem_core::view::View::new(&sim.world.bodies[0], shape);
        let grid = &shape.levelset;
        let u = |n| config.grid_displacement(n);
        let (mut consistent, mut reference_only) = (0.0f64, 0.0f64);
        for i in 0..20 {
            for j in 0..20 {
                let theta = (40.0f64).to_radians() * (i as f64 + 0.5) / 20.0;
                let azimuth = std::f64::consts::TAU * (j as f64 + 0.31) / 20.0;
                let x = Point3::new(
                    theta.sin() * azimuth.cos(),
                    theta.sin() * azimuth.sin(),
                    theta.cos(),
                );
                let g = (-(x.x * x.x + x.y * x.y) / 0.16).exp();
                let y = x + Vector3::new(0.0, 0.0, -eps * x.z * g);
                consistent = consistent.max(view.level_set(&y).0.abs());
                let back = grid.pull_back(&y, u).unwrap();
                reference_only = reference_only.max(grid.sample(&back.at).0.abs());
            }
        }
        println!(
            "h = {h}: largest |psi| {consistent:.3e}, reference corrected alone {reference_only:.3e}"
        );
        worst.push((consistent, reference_only));
    }
    let ratios = (worst[0].0 / worst[1].0, worst[0].1 / worst[1].1);
    println!(
        "falls by {:.2} (the reference corrected alone: {:.2})",
        ratios.0, ratios.1
    );
    assert!(ratios.0 >= 6.0, "{worst:?}");
    assert!(ratios.1 < 5.0, "{worst:?}");
}

/// The pull-back's convergence condition (docs/physics.md section 5): a query whose material
/// point lies in a grid cell where `|grad u|_2` reaches 1 is refused, never guessed, and the
/// fault names the grain, its amplitudes and the cell's gradient (the run then stops). The
/// flattening mode `u_z = -z exp(-r^2 / 0.16)` has `|grad u|_2` of about `2.15 eps` on the ring
/// `r = 0.28` round the pole, where the other grain's nodes reach: it folds there from
/// `eps = 0.47`. The bound over the whole band, from the mode field, is 0.40 at eps = 0.15 (the
/// test above) and 1.07 at 0.4: there it cannot vouch, and the cells the queries reach are
/// checked one by one. A rigid grain gives its nodes to the flattened pole.
#[test]
fn past_the_fold_bound_a_semi_lagrangian_query_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    flat_grain(dir.path(), [1.0, 1.0, 0.0], &[0.15]);
    for eps in [0.15, 0.4, 0.6] {
        // The pole sits at 1 - eps: the other grain overlaps it by 0.05.
        let above = 2.0 - eps - 0.05;
        let sim = common::simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
                 [[grains]]\nbundle = \"flat.grain\"\nposition = [0, 0, 0]\n\
                 modes = {{ levelset = \"semi-lagrangian\", amplitudes = [{eps}] }}\nnodes = \"receive\"\n\
                 [[grains]]\nbundle = \"flat.grain\"\nposition = [0, 0, {above}]\n\
                 modes = {{ active = false }}\nnodes = \"give\"\n"
            ),
        );
        match (&sim.last.fault, eps) {
            (None, 0.15 | 0.4) => assert!(sim.last.contacts > 0, "no contact at eps {eps}"),
            (Some((grain, fault)), 0.6) => {
                assert_eq!(*grain, 0);
                assert!(
                    matches!(fault, dem_core::levelset::LevelSetFault::Fold { .. }),
                    "{fault}"
                );
                let message = fault.to_string();
                // 1.072 measured: the cell's largest corner Jacobian.
                assert!(
                    message.contains("[0.6]") && message.contains("reaches 1.0"),
                    "{message}"
                );
            }
            (fault, _) => panic!("eps {eps}: {fault:?}"),
        }
    }
}

/// Two deformable spheres (dilation mode) collide head-on, frictionless and undamped, with a
/// stiff contact that excites their modes. The ledger's residual (energy total minus its start,
/// nothing being supplied or dissipated) is the integration error: it stays below 1e-4 of the
/// kinetic energy and shrinks with the step (velocity Verlet: by about 4 when dt halves; the
/// kinks of trilinear level sets add a first-order part), for both level-set updates. Measured:
/// 6.1e-6 and 2.5e-6 for dt = 1e-4 and 5e-5, with 37 % of the energy passing through the
/// modes.
#[test]
fn an_undamped_collision_of_deformable_grains_keeps_its_energy() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "ball",
        1.0,
        0.1,
        1000,
        TestMode::Dilation,
        [0.5, 200.0, 0.0],
        &[-0.02, -0.01, 0.01, 0.02],
    );
    for update in ["semi-lagrangian", "precomputed"] {
        let mut worst = Vec::new();
        for dt in [1e-4, 5e-5] {
            let steps = (0.12 / dt) as u64;
            let mut sim = common::simulation(
                dir.path(),
                &format!(
                    "[run]\ndt = {dt}\nsteps = {steps}\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
                     [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\nvelocity = [0.5, 0, 0]\n\
                     modes = {{ levelset = \"{update}\" }}\n\
                     [[grains]]\nbundle = \"ball.grain\"\nposition = [2.05, 0.1, 0]\nvelocity = [-0.5, 0, 0]\n\
                     modes = {{ levelset = \"{update}\" }}\n"
                ),
            );
            worst.push(collide(
                &mut sim,
                steps,
                1e-3,
                &format!("{update}, dt {dt:e}"),
            ));
        }
        assert!(worst[0] < 1e-4, "{update}: {worst:?}");
        assert!(worst[1] < 0.5 * worst[0], "{update}: {worst:?}");
    }
}

/// Runs a collision of `steps` steps and returns the ledger's largest residual over it, as a
/// fraction of the initial energy; the grains must have parted at the end, and the modes have
/// taken at least `excited` of the energy at some step (`label` names the run in the output).
fn collide(sim: &mut Simulation, steps: u64, excited: f64, label: &str) -> f64 {
    let e0 = sim.energies().total();
    let (mut largest, mut modal_peak) = (0.0f64, 0.0f64);
    let mut range = (0.0f64, 0.0f64);
    for _ in 0..steps {
        sim.step(false);
        let e = sim.energies();
        largest = largest.max(sim.totals.ledger.residual(&e).abs());
        modal_peak = modal_peak.max(e.modal_elastic + e.modal_kinetic);
        for m in sim.world.bodies.iter().filter_map(|b| b.modes.as_ref()) {
            range = (range.0.min(m.eps[0]), range.1.max(m.eps[0]));
        }
    }
    let apart = sim.last.contacts == 0;
    println!(
        "{label}: largest residual {:.3e} of the energy, modal energy peak {:.2e} of it, \
         amplitudes {:.2e} to {:.2e}, apart {apart}",
        largest / e0,
        modal_peak / e0,
        range.0,
        range.1
    );
    assert!(apart, "{label}: the grains should have separated");
    assert!(
        modal_peak > excited * e0,
        "{label}: the modes should be excited"
    );
    largest / e0
}

/// A path through points of a linear mode is that linear mode (docs/physics.md section 1): the
/// dilation given as a path through `(2^-10, 2^-10 Phi)` and `(2^-9, 2^-9 Phi)` collides like
/// the linear dilation (to round-off: the path's slopes and offsets are formed from the points),
/// starting at 0.0015 on the second segment and vibrating through both, for both level-set
/// updates; and the run records, at the step it happens, the amplitude
/// leaving the path's range `[0, 2^-9]` (the collision drives it to about -0.01). `Phi` is
/// rounded to f32 first and the points are powers of two, so that both grains keep the same
/// fields to the bit (a grain keeps its fields in f32, `dem_core::path::stored`); the path's
/// slopes and offsets are then exact too, so the gap measures the path's evaluation alone.
#[test]
fn a_path_through_a_linear_mode_moves_like_it_and_reports_leaving_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::deformable_sphere(
        dir.path(),
        "ball",
        1.0,
        0.1,
        1000,
        TestMode::Dilation,
        [0.5, 200.0, 0.0],
        &[-0.02, -0.01, 0.01, 0.02],
    );
    let mut b = grain::GrainBundle::read(&path).unwrap();
    let d = b.deformation.as_mut().unwrap();
    d.node_modes.mapv_inplace(dem_core::path::stored);
    d.grid_modes.mapv_inplace(dem_core::path::stored);
    b.clone().write(&path).unwrap();
    let d = b.deformation.as_mut().unwrap();
    let points = [1.0 / 1024.0, 1.0 / 512.0];
    let along = |a: &ndarray::ArrayD<f64>| {
        let mut shape = a.shape().to_vec();
        shape[0] = points.len();
        ndarray::ArrayD::from_shape_fn(shape, |i| {
            let mut j = i.clone();
            j[0] = 0;
            points[i[0]] * a[j]
        })
    };
    d.path = Some(grain::ModePath {
        amplitudes: points.to_vec(),
        nodes: along(&d.node_modes.clone().into_dyn())
            .into_dimensionality()
            .unwrap(),
        grid: along(&d.grid_modes.clone().into_dyn())
            .into_dimensionality()
            .unwrap(),
    });
    b.write(&dir.path().join("path.grain")).unwrap();
    for update in ["semi-lagrangian", "precomputed"] {
        let scene = |bundle: &str| {
            format!(
                "[run]\ndt = 1e-4\nsteps = 1200\n[contact]\nlaw = \"linear-springs\"\nkn = 1e4\n\
                 [[grains]]\nbundle = \"{bundle}.grain\"\nposition = [0, 0, 0]\nvelocity = [0.5, 0, 0]\n\
                 modes = {{ levelset = \"{update}\", amplitudes = [0.0015] }}\n\
                 [[grains]]\nbundle = \"{bundle}.grain\"\nposition = [2.05, 0.1, 0]\nvelocity = [-0.5, 0, 0]\n\
                 modes = {{ levelset = \"{update}\", amplitudes = [0.0015] }}\n"
            )
        };
        let mut linear = common::simulation(dir.path(), &scene("ball"));
        let mut along_path = common::simulation(dir.path(), &scene("path"));
        let (mut gap, mut lowest) = (0.0f64, 0.0f64);
        for _ in 0..1200 {
            linear.step(false);
            along_path.step(false);
            for (p, q) in linear.world.bodies.iter().zip(&along_path.world.bodies) {
                let (e, f) = (
                    &p.modes.as_ref().unwrap().eps,
                    &q.modes.as_ref().unwrap().eps,
                );
                gap = gap
                    .max((p.position - q.position).norm())
                    .max((e[0] - f[0]).abs());
                lowest = lowest.min(f[0]);
            }
        }
        println!(
            "{update}: largest gap {gap:.1e}, lowest amplitude {lowest:.2e}, excursions {:?}",
            along_path.totals.excursions
        );
        assert!(gap < 1e-12, "{update}: {gap}");
        assert!(lowest < -0.005, "{update}: {lowest}");
        assert!(
            linear
                .totals
                .excursions
                .iter()
                .all(|x| x.limit != dem_core::modal::Limit::Path)
        );
        let x: Vec<_> = (along_path.totals.excursions.iter())
            .filter(|x| x.limit == dem_core::modal::Limit::Path)
            .collect();
        assert_eq!(x.len(), 2, "{update}: one per grain");
        for x in x {
            assert_eq!(x.range, (0.0, 1.0 / 512.0));
            assert!((x.amplitude - lowest).abs() < 0.2 * lowest.abs(), "{x}");
            assert!(x.first_step > 1 && x.first_step < 1200);
        }
    }
}

/// Grains whose mode no load can reach (`Phi = 0`) keep zero amplitudes and follow the rigid
/// grains' trajectories to round-off: the same bundle with its modal data removed, in a
/// frictional, damped collision with a wall, for every level-set update.
#[test]
fn unloaded_modes_leave_the_rigid_trajectories_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::deformable_sphere(
        dir.path(),
        "zero",
        0.5,
        0.05,
        400,
        TestMode::Zero,
        [1.0, 10.0, 0.1],
        &[0.5],
    );
    let mut rigid = grain::GrainBundle::read(&path).unwrap();
    rigid.deformation = None;
    rigid.write(&dir.path().join("rigid.grain")).unwrap();
    let scene = |bundle: &str, modes: &str| {
        format!(
            "[run]\ndt = 2e-4\nsteps = 1\ngravity = [0, 0, -9.81]\n[contact]\nlaw = \"linear-springs\"\n\
             kn = 5000\nks = 2500\nfriction = 0.4\nnormal_damping = 2\n\
             [[grains]]\nbundle = \"{bundle}.grain\"\nposition = [0, 0, 0.49]\nvelocity = [0.5, 0.2, -0.3]\n\
             angular_velocity = [1, 2, 0]\n{modes}\n\
             [[grains]]\nbundle = \"{bundle}.grain\"\nposition = [0.3, 0.1, 1.45]\nvelocity = [0, 0, -1]\n{modes}\n\
             [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n"
        )
    };
    let mut reference = common::simulation(dir.path(), &scene("rigid", ""));
    let mut runs: Vec<Simulation> = ["rigid", "semi-lagrangian", "precomputed"]
        .iter()
        .map(|u| {
            common::simulation(
                dir.path(),
                &scene("zero", &format!("modes = {{ levelset = \"{u}\" }}")),
            )
        })
        .collect();
    let mut worst: f64 = 0.0;
    for _ in 0..1500 {
        reference.step(false);
        for sim in &mut runs {
            sim.step(false);
            for (a, b) in sim.world.bodies.iter().zip(&reference.world.bodies) {
                worst = worst
                    .max((a.position - b.position).norm())
                    .max((a.velocity - b.velocity).norm() * 1e-2);
                assert_eq!(a.modes.as_ref().unwrap().eps[0], 0.0);
            }
        }
    }
    println!("largest departure from the rigid run: {worst:.1e}");
    assert!(reference.last.contacts > 0);
    assert!(worst < 1e-12, "{worst}");
}

/// A wall acts on the modes like a grain: a deformable sphere pressed into a plane takes
/// `F_eps = -dE/deps` (central differences of the contact energy, as above).
#[test]
fn a_wall_loads_the_modes_by_the_contact_energy_derivative() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "ball",
        1.0,
        0.1,
        1500,
        TestMode::Dilation,
        [1.0, 100.0, 0.0],
        &[],
    );
    let pressed = |eps: f64| {
        common::simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"area-tractions\"\nkn = 1000\n\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [0.01, 0.02, 0.98]\n\
                 modes = {{ amplitudes = [{eps}] }}\n\
                 [[walls]]\nkind = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n"
            ),
        )
    };
    let (eps, h) = (0.013, 1e-6);
    let sim = pressed(eps);
    let fd =
        -(pressed(eps + h).last.contact_energy - pressed(eps - h).last.contact_energy) / (2.0 * h);
    let f = sim.world.bodies[0].modes.as_ref().unwrap().contact[0];
    println!(
        "wall: F_eps {f:.9e}, -dE/deps {fd:.9e}, {} nodes",
        sim.last.contacts
    );
    assert!(sim.last.contacts > 10);
    assert!((f - fd).abs() <= 1e-6 * fd.abs(), "{f} vs {fd}");
    // The wall pushes the sphere's surface in: a negative (compressive) generalized force.
    assert!(f < 0.0);
}

/// A deformable grain in rigid motion (thrown, spinning, under gravity, no contact) keeps its
/// amplitudes at zero: neither gravity nor the rotation loads the modes (the small-deformation
/// formulation of Eq. 38 has no inertial coupling, and a mode with zero mean displacement takes
/// no load from a uniform field).
#[test]
fn a_grain_in_rigid_motion_keeps_zero_amplitudes() {
    let dir = tempfile::tempdir().unwrap();
    common::deformable_sphere(
        dir.path(),
        "ball",
        1.0,
        0.25,
        100,
        TestMode::Dilation,
        [2.0, 50.0, 0.0],
        &[],
    );
    let mut sim = common::simulation(
        dir.path(),
        "[run]\ndt = 1e-3\nsteps = 1\ngravity = [0, 0, -9.81]\n[contact]\nlaw = \"linear-springs\"\nkn = 1\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\nvelocity = [1, 2, 3]\n\
         angular_velocity = [3, -1, 2]\n",
    );
    for _ in 0..2000 {
        sim.step(false);
    }
    let m = sim.world.bodies[0].modes.as_ref().unwrap();
    assert_eq!((m.eps[0], m.rate[0]), (0.0, 0.0));
    let v = sim.world.bodies[0].velocity;
    assert!((v.z - (3.0 - 9.81 * sim.world.time)).abs() < 1e-9, "{v}");
}

/// The three internal-force laws agree where they describe the same force: `K eps` (linear), a
/// table of `K eps` (both interpolations are exact for a straight line) and the polynomial
/// `U = K eps^2 / 2` give the same free vibration to round-off. A nonlinear table (a stiffening
/// `F = K eps + K3 eps^3`, tabulated to |eps| <= 0.01 and run to 0.012) conserves the energy
/// it integrates (its exact integral) and reports the excursion beyond its rows.
#[test]
fn table_and_polynomial_laws_match_the_linear_law_and_keep_their_energy() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::deformable_sphere(
        dir.path(),
        "linear",
        1.0,
        0.25,
        100,
        TestMode::Dilation,
        [2.0, 50.0, 0.0],
        &[],
    );
    let (k, k3) = (50.0, 2e5);
    let rows: Vec<f64> = (0..=20).map(|i| -0.01 + 0.001 * i as f64).collect();
    let laws = [
        (
            "table",
            grain::InternalForce::Table {
                interpolation: grain::TableInterpolation::MonotoneCubic,
                table: grain::ForceTable {
                    force: rows.iter().map(|e| k * e).collect(),
                    energy: vec![0.0; rows.len()],
                    eps: rows.clone(),
                },
            },
        ),
        (
            "polynomial",
            grain::InternalForce::Polynomial(grain::EnergyPolynomial {
                terms: vec![grain::Monomial {
                    powers: vec![2],
                    coefficient: 0.5 * k,
                }],
            }),
        ),
        (
            "stiffening",
            grain::InternalForce::Table {
                interpolation: grain::TableInterpolation::MonotoneCubic,
                table: grain::ForceTable {
                    force: rows.iter().map(|e| k * e + k3 * e * e * e).collect(),
                    energy: vec![0.0; rows.len()],
                    eps: rows.clone(),
                },
            },
        ),
    ];
    for (name, law) in laws {
        let mut b = grain::GrainBundle::read(&path).unwrap();
        b.deformation.as_mut().unwrap().internal_force = law;
        b.write(&dir.path().join(format!("{name}.grain"))).unwrap();
    }
    let run = |bundle: &str, rate: f64| {
        let mut sim = lone(
            dir.path(),
            1e-3,
            3000,
            &format!(
                "bundle = \"{bundle}.grain\"\nposition = [0, 0, 0]\nmodes = {{ amplitudes = [0.0], rates = [{rate}] }}"
            ),
        );
        let mut path = Vec::new();
        let mut worst: f64 = 0.0;
        let e0 = sim.energies().total();
        for _ in 0..3000 {
            sim.step(false);
            path.push(sim.world.bodies[0].modes.as_ref().unwrap().eps[0]);
            worst = worst.max(sim.totals.ledger.residual(&sim.energies()).abs() / e0);
        }
        (path, worst, sim)
    };
    // 0.03: an amplitude of 0.006 inside the table; 0.068: about 0.012 with the stiffening.
    let (reference, _, _) = run("linear", 0.03);
    for name in ["table", "polynomial"] {
        let (path, _, _) = run(name, 0.03);
        let gap = path
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!("{name}: largest gap to the linear law {gap:.1e}");
        assert!(gap < 1e-12, "{name}: {gap}");
    }
    let (path, worst, sim) = run("stiffening", 0.068);
    let peak = path.iter().map(|e| e.abs()).fold(0.0, f64::max);
    println!("stiffening table: peak |eps| {peak:.4}, largest energy residual {worst:.1e}");
    assert!(peak > 0.01, "the run should leave the table ({peak})");
    assert!(worst < 1e-4, "{worst}");
    let x = &sim.totals.excursions;
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].grain, 0);
    assert_eq!(x[0].limit, dem_core::modal::Limit::Table);
    assert_eq!(x[0].range, (-0.01, 0.01));
    assert!((x[0].amplitude.abs() - peak).abs() < 1e-3 * peak);
    // Damping proportional to the table's tangent stiffness dissipates what the ledger says:
    // the residual stays at the integration error while most of the energy is dissipated.
    let mut sim = lone(
        dir.path(),
        1e-3,
        3000,
        "bundle = \"stiffening.grain\"\nposition = [0, 0, 0]\nmodes = { rates = [0.068], damping = { tangent = 0.02 } }",
    );
    let e0 = sim.energies().total();
    let mut worst: f64 = 0.0;
    for _ in 0..3000 {
        sim.step(false);
        worst = worst.max(sim.totals.ledger.residual(&sim.energies()).abs() / e0);
    }
    println!(
        "tangent damping: dissipated {:.3} of the energy, largest residual {worst:.1e}",
        sim.totals.ledger.modal / e0
    );
    assert!(sim.totals.ledger.modal > 0.5 * e0);
    assert!(worst < 1e-3, "{worst}");
}

/// `dt = "auto"` with a stiff, damped mode: the modes' limit (crate::timestep) is
/// `(sqrt(1 + zeta^2) - zeta) / omega` with `omega^2 = K / M + k_patch r^2 / M` (`r` the largest
/// node displacement per unit amplitude, here the radius) and `zeta = (C + c_patch r^2) / M /
/// (2 omega)`; it is far below the rigid limit here, so it sets the step.
#[test]
fn the_automatic_step_follows_a_stiff_damped_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (m, k, c) = (1e-4, 1e4, 0.5);
    common::deformable_sphere(
        dir.path(),
        "ball",
        0.5,
        0.1,
        100,
        TestMode::Dilation,
        [m, k, c],
        &[],
    );
    let sim = common::simulation(
        dir.path(),
        "[run]\ndt = \"auto\"\nsafety = 0.3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
         [[grains]]\nbundle = \"ball.grain\"\nposition = [0, 0, 0]\n",
    );
    let r2 = sim.world.shapes[0]
        .nodes
        .iter()
        .map(|x| x.norm_squared())
        .fold(0.0, f64::max);
    // The patch: k_n per node on a cap of area 2 pi r (0.01 r), r the bounding radius 0.6.
    let patch =
        (sim.world.shapes[0].node_density * 2.0 * std::f64::consts::PI * 0.6 * 0.006).max(1.0);
    let omega = (k / m + 100.0 * patch * r2 / m).sqrt();
    let zeta = c / m / (2.0 * omega);
    let expected = 0.3 * ((1.0 + zeta * zeta).sqrt() - zeta) / omega;
    assert!(
        (sim.parameters.dt / expected - 1.0).abs() < 1e-9,
        "{} vs {expected}",
        sim.parameters.dt
    );
}

/// The bending mode of Eq. 51, baked by levelset-bake on a box beam (20 x 2 x 2, spacing 0.25),
/// runs in the solver: a sphere pressed on the middle of the beam, node roles both ways, loads
/// the mode by `-dE/deps` (central differences) with every level-set update, and the
/// load bends the beam the way the mode's sign says (`eps > 0` deflects the middle along -z).
#[test]
fn the_baked_bending_mode_is_loaded_by_the_contact_energy_derivative() {
    let dir = tempfile::tempdir().unwrap();
    let options = levelset_bake::BakeOptions {
        spacing: 0.25,
        pad_cells: 3,
        extent: levelset_bake::Extent::Full,
        nodes: levelset_bake::NodeChoice::Count(3000),
        density: 1.0,
        units: "test".into(),
        open: levelset_bake::OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let mut baked = levelset_bake::bake_primitive(
        &levelset_bake::Primitive::Cuboid {
            half: [10.0, 1.0, 1.0],
        },
        &options,
    )
    .unwrap();
    let mode = levelset_bake::BendingMode {
        length: 20.0,
        axis: 0,
        direction: 2,
        start: -10.0,
    };
    let modal = levelset_bake::Modal {
        mass: ndarray::Array2::from_elem((1, 1), 10.0),
        stiffness: ndarray::Array2::from_elem((1, 1), 100.0),
        damping: ndarray::Array2::zeros((1, 1)),
        internal_force: grain::InternalForce::Linear,
        material: None,
        flexibility: None,
    };
    levelset_bake::attach_modes(&mut baked, &mode, modal, &[-0.4, -0.2, 0.2, 0.4]).unwrap();
    baked.bundle.write(&dir.path().join("beam.grain")).unwrap();
    common::sphere(dir.path(), "ball", 1.0, 0.2, 800);
    let pressed = |update: &str, eps: f64| {
        common::simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"area-tractions\"\nkn = 100\n\
                 [[grains]]\nbundle = \"beam.grain\"\nposition = [0, 0, 0]\n\
                 modes = {{ levelset = \"{update}\", amplitudes = [{eps}] }}\n\
                 [[grains]]\nbundle = \"ball.grain\"\nposition = [0.3, 0.1, 1.93]\n\
                 motion = {{ velocity = [0, 0, 0] }}\n"
            ),
        )
    };
    let (eps, h) = (0.03, 1e-6);
    for update in ["semi-lagrangian", "precomputed"] {
        let sim = pressed(update, eps);
        let fd = -(pressed(update, eps + h).last.contact_energy
            - pressed(update, eps - h).last.contact_energy)
            / (2.0 * h);
        let f = sim.world.bodies[0].modes.as_ref().unwrap().contact[0];
        println!(
            "{update}: F_eps {f:.9e}, -dE/deps {fd:.9e}, {} nodes",
            sim.last.contacts
        );
        assert!(sim.last.contacts > 10, "{update}");
        assert!((f - fd).abs() <= 1e-6 * fd.abs(), "{update}: {f} vs {fd}");
        // Pressed down at mid-span, where Phi = (0, 0, -1): a positive generalized force.
        assert!(f > 0.0, "{update}: {f}");
    }
}

/// Two coupled modes (the dilation and a stretch along x, with non-diagonal `M` and `K`):
/// - free vibration from `eps0` at rest follows the modal superposition
///   `eps(t) = sum_i v_i (v_i^T M eps0) cos(omega_i t)`, `K v_i = omega_i^2 M v_i`,
///   `v_i^T M v_i = 1` (the eigenpairs here by nalgebra, an independent solver);
/// - the generalized forces of a pressed pair are `-dE/deps_a` for each grain and mode, for both
///   level-set updates: the precomputed one exercises the multi-mode completion
///   `phi = phi_0 + sum_a (phi^(a)(eps_a) - phi^(a)(0))`.
#[test]
fn two_coupled_modes_vibrate_and_take_their_energy_derivatives() {
    let dir = tempfile::tempdir().unwrap();
    let modal = levelset_bake::Modal {
        mass: ndarray::array![[2.0, 0.4], [0.4, 1.0]],
        stiffness: ndarray::array![[60.0, -10.0], [-10.0, 30.0]],
        damping: ndarray::Array2::zeros((2, 2)),
        internal_force: grain::InternalForce::Linear,
        material: None,
        flexibility: None,
    };
    common::deformable_sphere_with(
        dir.path(),
        "two",
        1.0,
        0.1,
        1500,
        TestMode::DilationAndStretch,
        modal,
        &[-0.02, -0.01, 0.01, 0.02],
    );
    // Free vibration.
    let eps0 = [0.01, -0.004];
    let dt = 2e-4;
    let mut sim = lone(
        dir.path(),
        dt,
        1,
        &format!(
            "bundle = \"two.grain\"\nposition = [0, 0, 0]\nmodes = {{ amplitudes = [{}, {}] }}",
            eps0[0], eps0[1]
        ),
    );
    let mm = nalgebra::Matrix2::<f64>::new(2.0, 0.4, 0.4, 1.0);
    let kk = nalgebra::Matrix2::<f64>::new(60.0, -10.0, -10.0, 30.0);
    let l = mm.cholesky().unwrap().l();
    let l_inv = l.try_inverse().unwrap();
    let eig = (l_inv * kk * l_inv.transpose()).symmetric_eigen();
    let e0 = nalgebra::Vector2::from(eps0);
    let exact = |t: f64| -> nalgebra::Vector2<f64> {
        (0..2)
            .map(|i| {
                let v = l_inv.transpose() * eig.eigenvectors.column(i);
                let w: f64 = eig.eigenvalues[i].sqrt();
                v * (v.dot(&(mm * e0))) * (w * t).cos()
            })
            .sum()
    };
    let mut worst: f64 = 0.0;
    for _ in 0..20_000 {
        sim.step(false);
        let e = &sim.world.bodies[0].modes.as_ref().unwrap().eps;
        let want = exact(sim.world.time);
        worst = worst.max((e[0] - want[0]).abs().max((e[1] - want[1]).abs()) / 0.01);
    }
    println!(
        "two modes over {:.1} time units: largest error {worst:.1e} of eps0",
        sim.world.time
    );
    assert!(worst < 1e-4, "{worst}");
    // Generalized forces of a pressed pair, every mode of both grains.
    let pair = |update: &str, eps: [[f64; 2]; 2]| {
        common::simulation(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n\
                 [[grains]]\nbundle = \"two.grain\"\nposition = [0, 0, 0]\n\
                 modes = {{ levelset = \"{update}\", amplitudes = {:?} }}\n\
                 [[grains]]\nbundle = \"two.grain\"\nposition = [1.95, 0.3, -0.1]\n\
                 orientation = [0.9238795325112867, 0, 0, 0.3826834323650898]\n\
                 modes = {{ levelset = \"{update}\", amplitudes = {:?} }}\n",
                eps[0], eps[1]
            ),
        )
    };
    let eps = [[0.013, -0.006], [-0.007, 0.004]];
    let h = 1e-6;
    for update in ["semi-lagrangian", "precomputed"] {
        let sim = pair(update, eps);
        assert!(sim.last.contacts > 20);
        for g in 0..2 {
            for a in 0..2 {
                let energy = |d: f64| {
                    let mut e = eps;
                    e[g][a] += d;
                    pair(update, e).last.contact_energy
                };
                let fd = -(energy(h) - energy(-h)) / (2.0 * h);
                let f = sim.world.bodies[g].modes.as_ref().unwrap().contact[a];
                assert!(
                    (f - fd).abs() <= 1e-6 * fd.abs(),
                    "{update}, grain {g}, mode {a}: {f} vs {fd}"
                );
            }
        }
    }
}

/// A grain of one deformation mode (one FEM loading's) left free to turn is told at build time,
/// naming its `hold` (docs/physics.md section 1): its mode is fixed in its body. Held against
/// turning, or of several modes, it is not; every grain of a lattice shares one warning. A
/// uniform dilation, which turns with the grain, is not told either.
#[test]
fn a_one_mode_grain_free_to_turn_is_warned_at_build_time() {
    let dir = tempfile::tempdir().unwrap();
    for (name, mode) in [("one", TestMode::Flatten), ("dilation", TestMode::Dilation)] {
        common::deformable_sphere(
            dir.path(),
            name,
            1.0,
            0.25,
            200,
            mode,
            [1.0, 1.0, 0.0],
            &[0.1],
        );
    }
    let warnings = |grains: &str| {
        let path = common::scene_file(
            dir.path(),
            &format!(
                "[run]\ndt = 1e-4\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 100\n{grains}"
            ),
        );
        dem_run::build::with_packings(&dem_run::Scene::read(&path).unwrap(), &path)
            .unwrap()
            .warnings
    };
    let free = warnings(
        "[[grains]]\nbundle = \"one.grain\"\nposition = [0, 0, 0]\n\
         [[grains]]\nbundle = \"one.grain\"\nposition = [5, 0, 0]\nhold = [\"rotation\"]\n\
         [[grains]]\nbundle = \"one.grain\"\nposition = [10, 0, 0]\nmodes = { active = false }\n\
         [[lattices]]\nbundle = \"one.grain\"\norigin = [0, 5, 0]\nspacing = [3, 3, 3]\ncounts = [2, 2, 1]\n",
    );
    assert_eq!(free.len(), 2, "{free:?}");
    assert!(free[0].starts_with("grains[0].hold: "), "{}", free[0]);
    assert!(free[0].contains("free to turn") && free[0].contains("hold = [\"rotation\"]"));
    assert!(free[1].starts_with("lattices[0].hold: "), "{}", free[1]);
    assert!(
        warnings(
            "[[grains]]\nbundle = \"one.grain\"\nposition = [0, 0, 0]\nhold = [\"rotation\"]\n"
        )
        .is_empty()
    );
    assert!(
        warnings(
            "[[grains]]\nbundle = \"dilation.grain\"\nposition = [0, 0, 0]\n\
             [[lattices]]\nbundle = \"dilation.grain\"\norigin = [0, 5, 0]\nspacing = [3, 3, 3]\ncounts = [2, 2, 1]\n"
        )
        .is_empty()
    );
    // A prescribed grain keeps its amplitudes: said, unless its modes are off.
    let moving = "motion = { velocity = [0, 0, 1] }";
    let prescribed = warnings(&format!(
        "[[grains]]\nbundle = \"one.grain\"\nposition = [0, 0, 0]\n{moving}\n\
         [[grains]]\nbundle = \"one.grain\"\nposition = [5, 0, 0]\n{moving}\nmodes = {{ active = false }}\n"
    ));
    assert_eq!(prescribed.len(), 1, "{prescribed:?}");
    assert!(
        prescribed[0].starts_with("grains[0].motion: ")
            && prescribed[0].contains("keeps its amplitudes"),
        "{}",
        prescribed[0]
    );
}

/// The grain of bundle `name` in `dir` (the flattening mode's, unit sphere, grid spacing 0.1,
/// or a path built on it) at amplitude `eps`, semi-Lagrangian.
fn flattened(dir: &std::path::Path, name: &str, eps: f64) -> Simulation {
    lone(
        dir,
        1e-3,
        1,
        &format!(
            "bundle = \"{name}\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"semi-lagrangian\", amplitudes = [{eps}] }}"
        ),
    )
}

/// What [`semi_lagrangian_derivatives`] measured.
struct Derivatives {
    /// The largest jump of the level set across a cell face.
    jump: f64,
    /// The largest departure of the gradient from central differences in `y`.
    grad: f64,
    /// The largest departure of the amplitude derivative from central differences in `eps`.
    eps: f64,
    /// Points off the faces checked, and those inside: the amplitude derivative is checked at
    /// all of them, inside and in the margin outside, where a law that loads nodes outside
    /// (hertz-patches) takes it (before, it was written inside only, and such a node's
    /// generalized force took the previous node's).
    checked: usize,
    inside: usize,
}

impl Derivatives {
    /// Continuous across faces to the slope times the distance, 1e-8; derivatives within 1e-7
    /// of central differences (whose own error is below 1e-9); enough points checked.
    fn assert_exact(&self) {
        assert!(
            self.checked > 20 && self.inside > 10 && self.checked - self.inside > 10,
            "{}, {}",
            self.checked,
            self.inside
        );
        assert!(self.jump <= 1e-8, "{}", self.jump);
        assert!(self.grad <= 1e-7, "{}", self.grad);
        assert!(self.eps <= 1e-7, "{}", self.eps);
    }
}

/// The semi-Lagrangian level set of bundle `name` in `dir` at amplitude `eps` near the
/// flattened poles: its jumps across cell faces (material points 1e-9 either side of a face,
/// mapped forward) and its gradient and amplitude derivative against central differences
/// (1e-6) at points whose material point is 1e-3 cell or more from a face.
fn semi_lagrangian_derivatives(dir: &std::path::Path, name: &str, eps: f64) -> Derivatives {
    let h = 0.1f64;
    let d = 1e-6;
    let sims = [eps - d, eps, eps + d].map(|e| flattened(dir, name, e));
    let views: Vec<_> = (sims.iter())
        .map(|s| dem_core::view::View::new(&s.world.bodies[0], &s.world.shapes[0]))
        .collect();
    let shape = &sims[1].world.shapes[0];
    let modal = shape.modal.as_ref().unwrap();
    let amplitudes = [eps];
    let config = dem_core::path::Configuration::new(&modal.paths, &amplitudes);
    let grid = &shape.levelset;
    let spec = grid.spec();
    assert_eq!(spec.spacing, h);
    let u = |n| config.grid_displacement(n);
    let forward = |x: &Point3<f64>| x + grid.displacement(&grid.locate(x), u).0;
    // Points near both flattened poles, within 0.03 of the reference surface.
    let mut bases = Vec::new();
    for (i, r) in [0.08f64, 0.17, 0.26, 0.34].iter().enumerate() {
        for (j, s) in [-0.03, -0.012, 0.01].iter().enumerate() {
            let t = 0.7 * i as f64 + 1.9 * j as f64;
            let z = (1.0 - r * r).sqrt() + s;
            bases.push(Point3::new(r * t.cos(), r * t.sin(), z));
            bases.push(Point3::new(r * t.sin(), -r * t.cos(), -z));
        }
    }
    let mut jump = 0.0f64;
    for base in &bases {
        for axis in 0..3 {
            // The face nearest the point along the axis.
            let o = spec.origin[axis];
            let plane = o + ((base[axis] - o) / h).round() * h;
            let side = |s: f64| {
                let mut x = *base;
                x[axis] = plane + s * 1e-9;
                views[1].level_set(&forward(&x)).0
            };
            jump = jump.max((side(1.0) - side(-1.0)).abs());
        }
    }
    let mut out = Derivatives {
        jump,
        grad: 0.0,
        eps: 0.0,
        checked: 0,
        inside: 0,
    };
    for base in &bases {
        for shift in [
            Vector3::new(0.013, -0.021, 0.004),
            Vector3::new(-0.031, 0.009, -0.017),
        ] {
            let y = forward(&(base + shift));
            let back = grid.pull_back(&y, u).unwrap();
            let x = back.point;
            let cell = (0..3).map(|a| ((x[a] - spec.origin[a]) / h).fract());
            if cell.clone().any(|t| !(1e-3..1.0 - 1e-3).contains(&t)) {
                continue;
            }
            // The derivative must be given at every point within the margin: a slope left at
            // `Zero` would be 0, which no point near this surface has.
            let mut slope = dem_core::levelset::Slope::default();
            let e = views[1].probe(&y, &y, 1.0, &mut slope).unwrap();
            let mut derivative = [f64::NAN];
            views[1].slope_values(&slope, &mut derivative);
            let fd = Vector3::from_fn(|a, _| {
                let step = Vector3::from_fn(|b, _| if a == b { d } else { 0.0 });
                (views[1].level_set(&(y + step)).0 - views[1].level_set(&(y - step)).0) / (2.0 * d)
            });
            out.grad = out.grad.max((fd - e.grad).amax());
            let fd = (views[2].level_set(&y).0 - views[0].level_set(&y).0) / (2.0 * d);
            let error = (fd - derivative[0]).abs();
            out.eps = if error.is_nan() || out.eps.is_nan() {
                f64::NAN
            } else {
                out.eps.max(error)
            };
            out.inside += usize::from(e.phi < 0.0);
            out.checked += 1;
        }
    }
    println!(
        "{name} at {eps}: largest jump across a face {:.2e}; {} points off the faces ({} inside): gradient within {:.2e}, amplitude derivative within {:.2e} of central differences",
        out.jump, out.checked, out.inside, out.grad, out.eps
    );
    out
}

/// The semi-Lagrangian level set of a mode that is not affine (the flattening mode at eps =
/// 0.15; grid spacing 0.1) is continuous where the material point crosses a grid cell's face,
/// and its gradient and amplitude derivative are its own derivatives (docs/physics.md
/// section 5).
/// - Continuity: material points `X` a hair (1e-9) either side of a face, on every axis, near
///   the flattened pole (within 0.03 of the surface), mapped forward (`y = X + u(X)`): the two
///   values differ by at most the slope times the distance, 1e-8 (measured 1.9e-9). With the
///   normalisation taken from the interpolants' own gradients (`|g0| / |J^-T g0|`, which jump
///   across faces) the values jumped there by `phi_0` times the jump of the stretch: 5.3e-4.
/// - Derivatives: central differences (1e-6) in `y` and in `eps` at points off the faces
///   (their material point 1e-3 cell or more from one, so that a difference stays in a cell),
///   to 1e-7 (the differences' error is below 1e-9).
#[test]
fn the_semi_lagrangian_level_set_is_continuous_across_cell_faces_with_exact_derivatives() {
    let dir = tempfile::tempdir().unwrap();
    flat_grain(dir.path(), [1.0, 1.0, 0.0], &[]);
    let d = semi_lagrangian_derivatives(dir.path(), "flat.grain", 0.15);
    d.assert_exact();
}

/// The precomputed level set's amplitude derivative is given wherever a law asks for it, inside
/// the grain and in the margin outside that `hertz-patches` loads (half a patch; before
/// 2026-11-29 it was written inside only, and a margin node's generalized force took the
/// previous query's): the flattening mode's grain with samples at 0.1 and 0.2, at eps = 0.15,
/// where the blend of the two samples is linear in eps, so that central differences (1e-6) of
/// the level set in eps are exact to rounding (1e-9); points near both poles, from 0.3 inside
/// the reference surface to 0.01 outside it (the poles are flattened by up to 0.14 at this
/// amplitude), probed with a margin of 1. The slope's buffer starts
/// as NaN and a `Slope::Zero` gives 0, so a derivative not written at a point fails.
#[test]
fn the_precomputed_amplitude_derivative_is_given_in_the_law_s_margin() {
    let dir = tempfile::tempdir().unwrap();
    flat_grain(dir.path(), [1.0, 1.0, 0.0], &[0.1, 0.2]);
    let (eps, d) = (0.15, 1e-6);
    let sims = [eps - d, eps, eps + d].map(|e| {
        lone(
            dir.path(),
            1e-3,
            1,
            &format!(
                "bundle = \"flat.grain\"\nposition = [0, 0, 0]\nmodes = {{ levelset = \"precomputed\", amplitudes = [{e}] }}"
            ),
        )
    });
    let views: Vec<_> = (sims.iter())
        .map(|s| dem_core::view::View::new(&s.world.bodies[0], &s.world.shapes[0]))
        .collect();
    let (mut inside, mut outside, mut error) = (0, 0, 0.0f64);
    for (i, r) in [0.08f64, 0.17, 0.26, 0.34].iter().enumerate() {
        for (j, s) in [-0.3, -0.22, -0.16, -0.05, 0.01].iter().enumerate() {
            let t = 0.7 * i as f64 + 1.9 * j as f64;
            let z = (1.0 - r * r).sqrt() + s;
            for y in [
                Point3::new(r * t.cos(), r * t.sin(), z),
                Point3::new(r * t.sin(), -r * t.cos(), -z),
            ] {
                let mut slope = dem_core::levelset::Slope::default();
                let e = views[1].probe(&y, &y, 1.0, &mut slope).unwrap();
                let mut derivative = [f64::NAN];
                views[1].slope_values(&slope, &mut derivative);
                let fd = (views[2].level_set(&y).0 - views[0].level_set(&y).0) / (2.0 * d);
                let departure = (fd - derivative[0]).abs();
                error = if departure.is_nan() {
                    f64::NAN
                } else {
                    error.max(departure)
                };
                if e.phi < 0.0 {
                    inside += 1;
                } else {
                    outside += 1;
                }
            }
        }
    }
    println!(
        "precomputed at {eps}: {inside} points inside, {outside} outside: amplitude derivative within {error:.2e} of central differences"
    );
    assert!(inside >= 10 && outside >= 10, "{inside}, {outside}");
    assert!(error <= 1e-7, "{error}");
}

/// The same on a nonlinear path of several segments (docs/physics.md section 1): the
/// flattening mode's grain given as a path through `u(e) = e Phi + 2 e^2 Psi` at `e` = 0.05,
/// 0.1, 0.15, 0.2 (`Psi(x) = (x, y, 0) / 2`, a lateral bulge that grows faster than the
/// flattening), at 0.125, inside the third segment, where the surface nodes' displacement is
/// the path's: the quadratic itself, which the C1 path through its points reproduces exactly
/// (the piecewise linear path missed it by `2 (0.125 - 0.1) (0.15 - 0.125) Psi`, 6e-4; a wrong
/// segment by 1e-2, while the derivative checks below would still pass on either), and the
/// level set, its gradient and its amplitude derivative (through the path's tangent and its
/// normal strain) must be exact as for a linear mode; and at the point 0.15 between two
/// segments the level set is continuous in the amplitude (the path is), within 1e-9 of it on
/// either side to the tangent's 1e-9 times.
#[test]
fn a_nonlinear_path_s_level_set_has_exact_derivatives_on_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let points = [0.05, 0.1, 0.15, 0.2];
    let b = quadratic_path(dir.path(), [1.0, 1.0, 0.0], &points, [2.0, 0.0]);
    let phi_nodes = &b.deformation.as_ref().unwrap().node_modes;
    let bulge_nodes = |k: usize, c: usize| if c < 2 { 0.5 * b.nodes[[k, c]] } else { 0.0 };
    // The shape at 0.125 is the path's: `u(e) = e Phi + 2 e^2 Psi` itself.
    let sim = flattened(dir.path(), "path.grain", 0.125);
    let shape = &sim.world.shapes[0];
    let config = dem_core::path::Configuration::new(&shape.modal.as_ref().unwrap().paths, &[0.125]);
    let mut off = 0.0f64;
    for (k, x0) in shape.nodes.iter().enumerate() {
        // The shape sorts the nodes into clusters: find this one in the bundle.
        let kb = (0..b.nodes.nrows())
            .find(|&j| (0..3).all(|c| b.nodes[[j, c]] == x0[c]))
            .unwrap();
        let e = 0.125;
        let expected =
            Vector3::from_fn(|c, _| e * phi_nodes[[0, kb, c]] + 2.0 * e * e * bulge_nodes(kb, c));
        // The grain keeps the points' fields rounded to f32: each value within 2^-24 of
        // itself, so the shape within that times the sum of the interpolant's |weights| times
        // the points' largest component at the node. At 0.125, the middle of a segment of
        // uniform points (0, 0.05, ..., 0.2), the cubic Hermite weights with the parabolas'
        // slopes are 9/16, 9/16, -1/16 and -1/16 (|sum| 1.25); 2 is allowed.
        let largest = (0..points.len())
            .flat_map(|p| {
                let e = points[p];
                (0..3).map(move |c| e * phi_nodes[[0, kb, c]] + 2.0 * e * e * bulge_nodes(kb, c))
            })
            .fold(0.0f64, |m, x| m.max(x.abs()));
        let rounding = 2.0 * largest * 2f64.powi(-24);
        off = off.max((config.node_displacement(k) - expected).amax() - rounding);
    }
    assert!(
        off <= 1e-12,
        "the shape is not the path's beyond the fields' rounding: {off:e}"
    );
    let d = semi_lagrangian_derivatives(dir.path(), "path.grain", 0.125);
    d.assert_exact();
    // Continuity in the amplitude at the point between the second and third segments.
    let sides = [0.15 - 1e-9, 0.15 + 1e-9].map(|e| flattened(dir.path(), "path.grain", e));
    let views: Vec<_> = (sides.iter())
        .map(|s| dem_core::view::View::new(&s.world.bodies[0], &s.world.shapes[0]))
        .collect();
    let mut worst = 0.0f64;
    for r in [0.0f64, 0.1, 0.2, 0.3] {
        for s in [-0.05, -0.02, 0.0] {
            let y = Point3::new(r, 0.3 * r, (1.0 - 1.09 * r * r).sqrt() - 0.15 + s);
            worst = worst.max((views[1].level_set(&y).0 - views[0].level_set(&y).0).abs());
        }
    }
    println!("across the segments' common point: the level set moves by at most {worst:.2e}");
    assert!(worst <= 1e-8, "{worst}");
}

/// The same collision on a path mode converges at second order in the step too: the path is C1
/// in its amplitude (docs/physics.md section 1), so the contact's force on the mode is
/// continuous as the amplitude crosses the path's points. The flattening mode given as the
/// path through `u(e) = (e + 5 e^2) Phi` at 0.01, 0.02, ..., 0.06 ([`quadratic_path`]; its
/// tangent grows from `Phi` to `1.6 Phi`), which the collision sweeps through (to 0.065 and back
/// to -0.008). Measured: order 1.99 (residuals 1.6e-5, 3.3e-6, 9.8e-7, 2.4e-7); the piecewise
/// linear path through the same points, whose tangent jumps by `0.1 Phi` at each, failed it
/// with order 0.73 (2.2e-4, 1.3e-4, 1.2e-4, 4.3e-5).
#[test]
fn an_undamped_collision_on_a_path_mode_converges_at_second_order() {
    let dir = tempfile::tempdir().unwrap();
    let points: Vec<f64> = (1..=6).map(|p| 0.01 * p as f64).collect();
    quadratic_path(dir.path(), [0.5, 2000.0, 0.0], &points, [0.0, 5.0]);
    let order = collision_order(dir.path(), "path.grain");
    assert!(order >= 1.5, "order {order}");
}

/// `path.grain` in `dir`: the grain of [`flat_grain`] (modal mass, stiffness, damping `mkc`)
/// with its flattening mode `Phi` given as a path through
/// `u(e) = e Phi + e^2 (bulge Psi + stretch Phi)` at the amplitudes `points` (`Psi(x) = (x, y,
/// 0) / 2`, a lateral bulge; `stretch` makes the flattening itself nonlinear); returns
/// `flat.grain`'s bundle.
fn quadratic_path(
    dir: &std::path::Path,
    mkc: [f64; 3],
    points: &[f64],
    [bulge, stretch]: [f64; 2],
) -> grain::GrainBundle {
    flat_grain(dir, mkc, &[]);
    let flat = grain::GrainBundle::read(&dir.join("flat.grain")).unwrap();
    let mut b = flat.clone();
    let spec = b.levelset.spec().clone();
    let d = b.deformation.as_mut().unwrap();
    let (phi_nodes, phi_grid) = (&d.node_modes, &d.grid_modes);
    let nodes =
        ndarray::Array3::from_shape_fn((points.len(), phi_nodes.shape()[1], 3), |(p, k, c)| {
            let (e, x) = (points[p], flat.nodes[[k, c]]);
            let psi = if c < 2 { 0.5 * x } else { 0.0 };
            (e + stretch * e * e) * phi_nodes[[0, k, c]] + bulge * e * e * psi
        });
    let s = phi_grid.shape();
    let grid =
        ndarray::Array5::from_shape_fn((points.len(), s[1], s[2], s[3], 3), |(p, i, j, k, c)| {
            let (e, x) = (points[p], spec.node(i, j, k)[c]);
            let psi = if c < 2 { 0.5 * x } else { 0.0 };
            (e + stretch * e * e) * phi_grid[[0, i, j, k, c]] + bulge * e * e * psi
        });
    d.path = Some(grain::ModePath {
        amplitudes: points.to_vec(),
        nodes,
        grid,
    });
    b.write(&dir.join("path.grain")).unwrap();
    flat
}

/// An undamped collision on the flattened pole of a non-affine mode converges at second order
/// in the step (docs/physics.md section 5): a rigid ball (the same bundle, modes off) strikes
/// the deformable grain's pole off-centre, its nodes crossing the grid cells of the grain's
/// semi-Lagrangian level set while the mode takes up to 76 % of the energy. The energy
/// ledger's largest residual over the run, at four steps each half the last, has a least-squares
/// order in the step (the slope of its logarithm) of at least 1.5, halfway between first and
/// second order: measured 1.91 (residuals 7.2e-6, 1.3e-6, 4.9e-7, 1.2e-7, the step-to-step
/// ratios 0.19, 0.37, 0.25: a run's largest residual is a noisy measure, hence the fit over four
/// steps). (The normalisation from the interpolants' gradients passed this case too, its jumps
/// across the faces being below the steps' error here; the test above is the one that tells the
/// two apart.)
#[test]
fn an_undamped_collision_on_a_non_affine_mode_converges_at_second_order() {
    let dir = tempfile::tempdir().unwrap();
    flat_grain(dir.path(), [0.5, 2000.0, 0.0], &[]);
    let order = collision_order(dir.path(), "flat.grain");
    assert!(order >= 1.5, "order {order}");
}

/// The order in the step of an undamped collision's energy residual: a rigid `flat.grain` (modes
/// off) strikes the deformable grain of `bundle` (in `dir`) off-centre on its pole, at four steps
/// each half the last; the least-squares slope of `log2` of [`collide`]'s largest residual
/// against the halvings (a run's largest residual is a noisy measure, hence the fit).
fn collision_order(dir: &std::path::Path, bundle: &str) -> f64 {
    let mut worst = Vec::new();
    for dt in [1e-4, 5e-5, 2.5e-5, 1.25e-5] {
        let steps = (0.2 / dt) as u64;
        let mut sim = common::simulation(
            dir,
            &format!(
                "[run]\ndt = {dt}\nsteps = {steps}\n[contact]\nlaw = \"linear-springs\"\nkn = 1e3\n\
                 [[grains]]\nbundle = \"{bundle}\"\nposition = [0, 0, 0]\nvelocity = [0, 0, 1.0]\n\
                 modes = {{ levelset = \"semi-lagrangian\" }}\n\
                 [[grains]]\nbundle = \"flat.grain\"\nposition = [0.11, 0.06, 2.04]\nvelocity = [0, 0, -1.0]\n\
                 modes = {{ active = false }}\n"
            ),
        );
        worst.push(collide(
            &mut sim,
            steps,
            1e-2,
            &format!("{bundle}, dt {dt:e}"),
        ));
    }
    let y: Vec<f64> = worst.iter().map(|r| r.log2()).collect();
    let mean = y.iter().sum::<f64>() / 4.0;
    let order = -(0..4)
        .map(|i| (i as f64 - 1.5) * (y[i] - mean))
        .sum::<f64>()
        / 5.0;
    println!("{bundle}: order {order:.2} (largest residuals {worst:?})");
    order
}
