//! Random packings (`[[packings]]`, dem_run::packing): no overlap, checked with level sets the
//! generator never saw and with closed forms; the requested size distribution, measured by a
//! Kolmogorov-Smirnov distance; the same packing from the same seed; the written grains reusable.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use dem_core::sim::Simulation;
use dem_run::{RunOptions, Scene};
use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};
use nalgebra::{Point3, Vector3};

use crate::common::{brick, scene_file, sphere};

const HEADER: &str = r#"
[run]
dt = 1e-4
steps = 1
[contact]
law = "linear-springs"
kn = 1e5
ks = 0.0
friction = 0.0
"#;

fn build(dir: &Path, text: &str) -> Simulation {
    let path = scene_file(dir, text);
    dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path).unwrap()
}

/// The mass of bundle `name` in `dir`, as written.
fn unit_mass(dir: &Path, name: &str) -> f64 {
    grain::GrainBundle::read(&dir.join(format!("{name}.grain")))
        .unwrap()
        .properties
        .mass
}

/// The grain's scale factor, measured from its shape's mass against the unscaled bundle's.
fn scale_of(sim: &Simulation, i: usize, unit_mass: f64) -> f64 {
    (sim.world.shapes[sim.world.bodies[i].shape].mass / unit_mass).cbrt()
}

#[test]
fn spheres_of_three_sizes_do_not_overlap_by_the_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 300);
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[[packings]]
seed = 11
count = 120
region = {{ kind = "box", min = [0, 0, 0], max = [15, 15, 15] }}
bundles = [{{ bundle = "ball.grain" }}]
sizes = [[0.6, 0.3], [1.0, 0.4], [1.4, 0.3]]
"#
        ),
    );
    assert_eq!(sim.world.bodies.len(), 120);
    let m1 = unit_mass(dir.path(), "ball");
    // Each class's radius is its scale (the ball's radius is 1).
    let classes = [0.6, 1.0, 1.4];
    let radius: Vec<f64> = (0..120)
        .map(|i| {
            let s = scale_of(&sim, i, m1);
            classes
                .iter()
                .copied()
                .find(|c| (s / c - 1.0).abs() < 1e-9)
                .unwrap_or_else(|| panic!("scale {s} is no class"))
        })
        .collect();
    // Counts by largest remainders: 36, 48, 36.
    for (c, n) in classes.iter().zip([36, 48, 36]) {
        assert_eq!(radius.iter().filter(|&&r| r == *c).count(), n, "class {c}");
    }
    // Two spheres apart: centre distance >= r_i + r_j; inside the box: r from each face.
    for i in 0..120 {
        let x = sim.world.bodies[i].position;
        for d in 0..3 {
            assert!(
                x[d] >= radius[i] * (1.0 - 1e-6) && x[d] <= 15.0 - radius[i] * (1.0 - 1e-6),
                "grain {i} at {x:?} crosses the box"
            );
        }
        for j in 0..i {
            let gap = (x - sim.world.bodies[j].position).norm() - radius[i] - radius[j];
            assert!(
                gap >= -1e-6 * radius[i],
                "grains {i} and {j} overlap by {}",
                -gap
            );
        }
    }
    // And the solver sees no contact at the start.
    assert_eq!(sim.last.contacts, 0);
}

#[test]
fn spheres_in_a_skewed_periodic_cell_do_not_overlap_any_image_by_the_closed_form() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 300);
    let vectors = [[12.0, 0.0, 0.0], [3.0, 12.0, 0.0], [0.0, 2.0, 12.0]];
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[cell]
vectors = {vectors:?}
[[packings]]
seed = 5
count = 90
region = {{ kind = "cell" }}
bundles = [{{ bundle = "ball.grain" }}]
sizes = [[0.6, 0.3], [1.0, 0.4], [1.4, 0.3]]
"#
        ),
    );
    let m1 = unit_mass(dir.path(), "ball");
    let radius: Vec<f64> = (0..90).map(|i| scale_of(&sim, i, m1)).collect();
    let h = nalgebra::Matrix3::from_columns(&vectors.map(Vector3::from));
    let inverse = h.try_inverse().unwrap();
    // Centres in the cell; two spheres apart through every image (the cell vectors' integer
    // combinations -1, 0, 1, which reach every image within a cell's width):
    // |X_j + H n - X_i| >= r_i + r_j.
    let mut across = 0;
    for i in 0..90 {
        let x = sim.world.bodies[i].position;
        let s = inverse * x;
        assert!(s.iter().all(|c| (0.0..1.0).contains(c)), "grain {i}: {s:?}");
        for j in 0..90 {
            for n in 0..27 {
                let n = Vector3::new(n % 3, (n / 3) % 3, n / 9).map(|c| c as f64 - 1.0);
                if i == j && n == Vector3::zeros() {
                    continue;
                }
                let gap = (sim.world.bodies[j].position + h * n - x).norm() - radius[i] - radius[j];
                assert!(
                    gap >= -1e-9,
                    "grains {i} and {j} (image {n:?}) overlap by {}",
                    -gap
                );
                across += usize::from(n != Vector3::zeros() && gap < 0.5);
            }
        }
    }
    // The test means something: pairs within half a unit radius of touching across the faces.
    println!("{across} near pairs across the faces");
    assert!(across >= 10, "{across}");
    assert_eq!(sim.last.contacts, 0);
}

/// The level set of a cuboid baked by levelset-bake at the scaled size, on a grid of its own.
fn independent_brick(half: [f64; 3], spacing: f64) -> grain::GrainBundle {
    let options = BakeOptions {
        spacing,
        pad_cells: 3,
        extent: Extent::Full,
        nodes: NodeChoice::Count(200),
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_primitive(&Primitive::Cuboid { half }, &options)
        .unwrap()
        .bundle
}

#[test]
fn bricks_in_a_cylinder_do_not_overlap_by_level_sets_baked_apart() {
    let dir = tempfile::tempdir().unwrap();
    let half = [1.0, 0.6, 0.35];
    let h = 0.1;
    brick(dir.path(), "brick", half, h, 400);
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[[packings]]
seed = 3
count = 60
region = {{ kind = "cylinder", point = [0, 0, 0], axis = [0, 0, 1], radius = 5, length = 8 }}
bundles = [{{ bundle = "brick.grain" }}]
sizes = [[0.8, 0.5], [1.2, 0.5]]
"#
        ),
    );
    assert_eq!(sim.world.bodies.len(), 60);
    let m1 = unit_mass(dir.path(), "brick");
    // Each class's grain baked again at its size, on a grid 0.7 times as fine as the scaled
    // one: independent of the generator's (scaled) level sets.
    let independent: Vec<(f64, grain::GrainBundle)> = [0.8, 1.2]
        .map(|s| (s, independent_brick(half.map(|x| x * s), 0.7 * h * s)))
        .into();
    let of = |i: usize| -> &(f64, grain::GrainBundle) {
        let s = scale_of(&sim, i, m1);
        independent
            .iter()
            .find(|(c, _)| (s / c - 1.0).abs() < 1e-9)
            .unwrap()
    };
    // The generator keeps every node of one grain outside the other's interpolated level set
    // (scaled grid, spacing h s). A cuboid's signed distance is convex, so its trilinear
    // interpolant is at least the exact distance (Jensen), and at most the distance plus the
    // farthest cell corner, sqrt(3) h s: a node the generator accepted is at most sqrt(3) h s
    // inside the exact cuboid, and the independent interpolant, at least the exact distance,
    // reads no less than -sqrt(3) h s there.
    let mut worst: f64 = f64::INFINITY;
    for i in 0..sim.world.bodies.len() {
        let (bi, (si, _)) = (&sim.world.bodies[i], of(i));
        let nodes_i = &sim.world.shapes[bi.shape].nodes;
        for j in 0..sim.world.bodies.len() {
            let (bj, (sj, bundle_j)) = (&sim.world.bodies[j], of(j));
            let reach = (si + sj) * Vector3::from(half).norm() * 1.1;
            if i == j || (bi.position - bj.position).norm() > reach {
                continue;
            }
            let grid = &bundle_j.levelset;
            for x0 in nodes_i {
                let x = bi.to_global(x0);
                let y: Point3<f64> = bj.to_local(&x);
                let (phi, _) = grid.sample(&grid.locate(&y));
                worst = worst.min(phi);
                assert!(
                    phi >= -3f64.sqrt() * h * sj,
                    "a node of grain {i} is {} inside grain {j}",
                    -phi
                );
            }
        }
        // Inside the cylinder: every node within the radius and between the end planes.
        for x0 in nodes_i {
            let x = bi.to_global(x0);
            assert!(x.xy().norm() <= 5.0 && (0.0..=8.0).contains(&x.z), "{x:?}");
        }
    }
    assert_eq!(sim.last.contacts, 0);
    eprintln!("deepest node reading in a neighbour's independent level set: {worst:e}");
}

/// The Kolmogorov-Smirnov distance between the grains' mass-weighted distribution of scales
/// and a piecewise linear grading curve (cumulative mass fraction passing against scale): the
/// largest gap between the two cumulative functions, at the steps of the empirical one.
fn ks_distance(scales_masses: &[(f64, f64)], curve: &[[f64; 2]]) -> f64 {
    let passing = |s: f64| {
        let i = curve
            .partition_point(|p| p[0] < s)
            .clamp(1, curve.len() - 1);
        let (a, b) = (curve[i - 1], curve[i]);
        (a[1] + (b[1] - a[1]) * (s - a[0]) / (b[0] - a[0])).clamp(0.0, 1.0)
    };
    let total: f64 = scales_masses.iter().map(|p| p.1).sum();
    let mut sorted = scales_masses.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut below, mut worst) = (0.0, 0.0f64);
    for (k, &(s, m)) in sorted.iter().enumerate() {
        if k == 0 || s != sorted[k - 1].0 {
            worst = worst.max((below / total - passing(s)).abs());
        }
        below += m;
        if k + 1 == sorted.len() || sorted[k + 1].0 != s {
            worst = worst.max((below / total - passing(s)).abs());
        }
    }
    worst
}

#[test]
fn a_grading_curve_by_mass_is_followed_within_the_kolmogorov_smirnov_bound() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.3, 200);
    let curve = [[0.5, 0.0], [0.8, 0.3], [1.0, 0.7], [1.5, 1.0]];
    let classes = 6;
    let count = 400;
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[[packings]]
seed = 5
count = {count}
by = "mass"
region = {{ kind = "box", min = [0, 0, 0], max = [24, 24, 24] }}
bundles = [{{ bundle = "ball.grain" }}]
sieve = {curve:?}
classes = {classes}
"#
        ),
    );
    let m1 = unit_mass(dir.path(), "ball");
    let sample: Vec<(f64, f64)> = (0..sim.world.bodies.len())
        .map(|i| {
            // Rounded to 1e-9: the cube root of a mass ratio is not the scale to the last bit.
            let s = (scale_of(&sim, i, m1) * 1e9).round() / 1e9;
            (s, sim.world.shapes[sim.world.bodies[i].shape].mass)
        })
        .collect();
    let d = ks_distance(&sample, &curve);
    // Cut into k classes of equal mass share, each at its share's middle, the discrete
    // distribution is at most 1/(2k) from the curve; the counts' rounding moves each class's
    // mass share by less than one grain's mass over the total, at most the heaviest grain's
    // share per class boundary crossed.
    let total: f64 = sample.iter().map(|p| p.1).sum();
    let heaviest = sample.iter().map(|p| p.1).fold(0.0, f64::max);
    let bound = 0.5 / classes as f64 + classes as f64 * heaviest / total;
    eprintln!("Kolmogorov-Smirnov distance {d:.4}, bound {bound:.4}");
    assert!(d <= bound, "KS distance {d} beyond {bound}");
    // The bound is meaningful: the same grains against another curve (nothing finer than
    // scale 1) are far off.
    let other = ks_distance(&sample, &[[0.5, 0.0], [1.0, 0.0], [1.5, 1.0]]);
    assert!(other > 3.0 * bound, "{other}");
}

#[test]
fn the_same_seed_gives_the_same_packing_and_its_written_grains_restart_it() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.3, 200);
    brick(dir.path(), "brick", [1.0, 0.5, 0.5], 0.15, 300);
    let packing = |seed: u64| {
        format!(
            r#"{HEADER}
[[walls]]
kind = "plane"
point = [0, 0, -0.5]
normal = [0, 0, 1]

[[grains]]
bundle = "brick.grain"
scale = 2.0
position = [5, 5, 5]

[[packings]]
seed = {seed}
count = 40
by = "mass"
region = {{ kind = "box", min = [0, 0, 0], max = [10, 10, 10] }}
bundles = [{{ bundle = "ball.grain", fraction = 0.6 }}, {{ bundle = "brick.grain", fraction = 0.4, hold = ["rotation"] }}]
sizes = [[0.7, 0.5], [1.1, 0.5]]
"#
        )
    };
    let a = build(dir.path(), &packing(1));
    let b = build(dir.path(), &packing(1));
    let c = build(dir.path(), &packing(2));
    let poses = |s: &Simulation| -> Vec<[f64; 7]> {
        s.world
            .bodies
            .iter()
            .map(|b| {
                let q = b.orientation;
                let x = b.position;
                [x[0], x[1], x[2], q.w, q.i, q.j, q.k]
            })
            .collect()
    };
    assert!(poses(&a) == poses(&b), "the same seed gave another packing");
    assert!(poses(&a) != poses(&c), "another seed gave the same packing");
    // The scaled single grain is an obstacle: no contact anywhere at the start.
    assert_eq!(a.last.contacts, 0);
    // The run writes the grains; a scene with them in place of the packing starts the same.
    let path = scene_file(dir.path(), &packing(1));
    let out = dir.path().join("run");
    let options = RunOptions {
        out: out.clone(),
        threads: Some(1),
        restart: None,
        progress: false,
        overwrite: false,
    };
    dem_run::run(&path, &options, &AtomicBool::new(false)).unwrap();
    let written = std::fs::read_to_string(out.join("grains.toml")).unwrap();
    assert!(written.contains("hold = [\"rotation\"]"), "{written}");
    let reused = packing(1).split("[[packings]]").next().unwrap().to_string() + &written;
    let r = build(dir.path(), &reused);
    // The same bodies, bit for bit, of the same shapes (made in another order).
    let same = |s: &Simulation| -> Vec<(f64, [f64; 3], String)> {
        s.world
            .bodies
            .iter()
            .map(|b| {
                let shape = &s.world.shapes[b.shape];
                (shape.mass, shape.moments, format!("{:?}", b.drive))
            })
            .collect()
    };
    assert!(
        poses(&r) == poses(&a),
        "the reused grains are placed elsewhere"
    );
    assert!(
        same(&r) == same(&a),
        "the reused grains have other shapes or drives"
    );
}

#[test]
fn a_region_too_full_is_refused_with_the_solid_fraction_reached() {
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.3, 200);
    let path = scene_file(
        dir.path(),
        &format!(
            r#"{HEADER}
[[packings]]
seed = 1
count = 200
attempts = 200
region = {{ kind = "box", min = [0, 0, 0], max = [8, 8, 8] }}
bundles = [{{ bundle = "ball.grain" }}]
"#
        ),
    );
    let e = dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("packings[0].count") && e.contains("solid fraction"),
        "{e}"
    );
}

#[test]
fn packing_keys_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (body, key) in [
        (
            r#"count = 0
region = { kind = "box", min = [0, 0, 0], max = [1, 1, 1] }
bundles = [{ bundle = "ball.grain" }]"#,
            "packings[0].count",
        ),
        (
            r#"count = 5
region = { kind = "box", min = [0, 0, 0], max = [1, 0, 1] }
bundles = [{ bundle = "ball.grain" }]"#,
            "packings[0].region",
        ),
        (
            r#"count = 5
region = { kind = "box", min = [0, 0, 0], max = [1, 1, 1] }
bundles = [{ bundle = "ball.grain" }]
sieve = [[0.5, 0.0], [0.4, 1.0]]
classes = 4"#,
            "packings[0].sieve",
        ),
        (
            r#"count = 5
region = { kind = "box", min = [0, 0, 0], max = [1, 1, 1] }
bundles = [{ bundle = "ball.grain" }]
sieve = [[0.5, 0.0], [1.0, 1.0]]"#,
            "packings[0].classes",
        ),
        (
            r#"count = 5
region = { kind = "box", min = [0, 0, 0], max = [1, 1, 1] }
bundles = [{ bundle = "ball.grain", modes = { amplitudes = [0.1] } }]"#,
            "packings[0].bundles[0].modes",
        ),
        (
            r#"count = 5
region = { kind = "box", min = [0, 0, 0], max = [1, 1, 1] }
bundles = [{ bundle = "ball.grain" }]
sizes = [[-1.0, 1.0]]"#,
            "packings[0].sizes[0]",
        ),
    ] {
        let path = scene_file(
            dir.path(),
            &format!("{HEADER}\n[[packings]]\nseed = 1\n{body}\n"),
        );
        let e = Scene::read(&path).err().unwrap().to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

#[test]
fn fractions_of_1e308_split_the_count_by_their_ratio() {
    // issue #33: bundle and size fractions of 1e308 summed to infinity, each share became 0
    // and 20 requested grains became 2 (one per class of the largest remainders). Equal
    // fractions split the count equally (Hamilton's method, closed form): 10 and 10; four
    // classes of equal shares, 5 each.
    assert_eq!(dem_run::packing::counts(&[1e308, 1e308], 20), [10, 10]);
    assert_eq!(dem_run::packing::counts(&[f64::MAX; 3], 20), [7, 7, 6]);
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 300);
    sphere(dir.path(), "small", 0.7, 0.1, 300);
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[[packings]]
seed = 3
count = 20
region = {{ kind = "box", min = [0, 0, 0], max = [20, 20, 20] }}
bundles = [{{ bundle = "ball.grain", fraction = 1e308 }}, {{ bundle = "small.grain", fraction = 1e308 }}]
sizes = [[1.0, 1e308], [0.8, 1e308]]
"#
        ),
    );
    assert_eq!(sim.world.shapes.len(), 4);
    for s in 0..4 {
        let n = sim.world.bodies.iter().filter(|b| b.shape == s).count();
        assert_eq!(n, 5, "shape {s}");
    }
}

#[test]
fn a_region_beyond_floating_point_or_longer_than_a_period_is_refused() {
    // issue #33: a box region of +-1.7e308 panicked ("a box or a closed cylinder encloses its
    // volume"), and a box three periods of the cell long placed grains onto each other's
    // images (contacts and elastic energy at step 0).
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 300);
    let error = |region: &str, cell: &str| {
        let path = scene_file(
            dir.path(),
            &format!(
                "{HEADER}\n{cell}\n[[packings]]\nseed = 1\ncount = 10\nregion = {region}\nbundles = [{{ bundle = \"ball.grain\" }}]\n"
            ),
        );
        match dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.to_string(),
        }
    };
    let e = error(
        r#"{ kind = "box", min = [-1.7e308, -1.7e308, -1.7e308], max = [1.7e308, 1.7e308, 1.7e308] }"#,
        "",
    );
    assert!(
        e.contains("packings[0].region: it reaches 1.7e308 from the origin")
            && e.contains("a region within [-1.2"),
        "{e}"
    );
    let e = error(
        r#"{ kind = "cylinder", point = [0, 0, 0], axis = [0, 0, 1], radius = 1e308, length = 1 }"#,
        "",
    );
    assert!(e.contains("packings[0].region: it reaches 1e308"), "{e}");
    let cell = "[cell]\nsize = [10, 10, 10]";
    let e = error(
        r#"{ kind = "box", min = [0, 0, 0], max = [30, 10, 10] }"#,
        cell,
    );
    assert!(
        e.contains("packings[0].region: it spans 3.000000 periods of the cell along a_1"),
        "{e}"
    );
    // A cylinder along a_3 of diameter 12 spans 1.2 periods along a_1 and a_2.
    let e = error(
        r#"{ kind = "cylinder", point = [5, 5, 0], axis = [0, 0, 1], radius = 6, length = 10 }"#,
        cell,
    );
    assert!(
        e.contains("it spans 1.200000 periods of the cell along a_1"),
        "{e}"
    );
    // One period, wherever it starts; across an axis that is not periodic, any length.
    for (region, cell) in [
        (
            r#"{ kind = "box", min = [5, -5, 0], max = [15, 5, 10] }"#,
            cell,
        ),
        (
            r#"{ kind = "box", min = [0, 0, 0], max = [10, 10, 30] }"#,
            "[cell]\nsize = [10, 10, 10]\nperiodic = [true, true, false]",
        ),
    ] {
        assert_eq!(error(region, cell), "accepted", "{region}");
    }
}

#[test]
fn a_packing_judges_its_places_against_the_grains_the_cell_wraps() {
    // issue #33: grains of the scene placed outside a periodic cell are wrapped into it by the
    // build, but the packing judged its places against them where the scene put them: a
    // packed grain could sit on a wrapped grain. Checked by the closed form: every pair of
    // unit spheres at least 2 apart through the cell's images.
    let dir = tempfile::tempdir().unwrap();
    sphere(dir.path(), "ball", 1.0, 0.25, 300);
    let sim = build(
        dir.path(),
        &format!(
            r#"{HEADER}
[cell]
size = [10, 10, 10]
[[lattices]]
bundle = "ball.grain"
origin = [12.5, 2.5, 2.5]
counts = [2, 2, 2]
spacing = [5, 5, 5]
[[packings]]
seed = 4
count = 30
region = {{ kind = "cell" }}
bundles = [{{ bundle = "ball.grain" }}]
"#
        ),
    );
    assert_eq!(sim.world.bodies.len(), 38);
    let mut closest = f64::INFINITY;
    for i in 0..38 {
        for j in 0..i {
            let d = sim.world.bodies[i].position - sim.world.bodies[j].position;
            let image = d.map(|x| x - 10.0 * (x / 10.0).round());
            closest = closest.min(image.norm());
        }
    }
    println!("closest centres {closest}");
    assert!(closest >= 2.0 * (1.0 - 1e-6), "{closest}");
    assert_eq!(sim.last.contacts, 0);
}

#[test]
fn attempts_beyond_the_limit_are_refused() {
    // issue #33: `attempts` near i64::MAX made an impossible packing search for ever.
    let dir = tempfile::tempdir().unwrap();
    let path = scene_file(
        dir.path(),
        &format!(
            "{HEADER}\n[[packings]]\nseed = 1\ncount = 100\nattempts = 9223372036854775807\n\
             region = {{ kind = \"box\", min = [0, 0, 0], max = [6, 6, 6] }}\n\
             bundles = [{{ bundle = \"ball.grain\" }}]\n"
        ),
    );
    let e = Scene::read(&path).err().unwrap().to_string();
    assert!(
        e.contains(&format!(
            "packings[0].attempts: between 1 and {}",
            dem_run::packing::MAX_ATTEMPTS
        )) && e.ends_with("got 9223372036854775807"),
        "{e}"
    );
}
