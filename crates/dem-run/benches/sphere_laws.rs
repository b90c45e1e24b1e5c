//! `cargo bench -p dem-run --bench sphere_laws` (part of `cargo xtask bench dem`): the cost of
//! Jäger's exact history in a whole DEM step, against the incremental Mindlin spring of common
//! DEM codes, on the same frictional sphere assembly, side by side in one run.
//!
//! The assembly: 2,048 glass spheres (R = 1 mm, G = 29 GPa, nu = 0.15, mu = 0.5, density
//! 2650 kg/m^3) in a face-centred cubic packing of 8 x 8 x 8 cells, each sphere overlapping its 12
//! neighbours by 0.4 % of R, between six plane walls; Cundall's local damping 0.3 for both laws
//! (no viscous damping, which Jäger's law has not). After `SETTLE` untimed steps, the walls run
//! a slow cyclic oedometric path: the two x walls close by `A` each and open again, then the two
//! y walls do the same, twice (8 legs of `LEG` steps; a leg lasts about 13 wave transits of the
//! box). In the packing's 45-degree contacts every leg loads or unloads both the normal and the
//! tangential displacement, and the tangential direction turns from one axis's legs to the
//! other's: partial slip, Masing reversals, and histories that grow.
//!
//! Both laws' simulations advance in alternate blocks of `BLOCK` steps on one 2-thread pool, so
//! that both see the same machine. Reported: steps per second and the whole-step ratio
//! jaeger / mindlin (goal <= 1.5), the history memory per contact (each contact's history as the
//! solver holds it: the pair record and, for Jäger, its history store's allocation), and how far
//! the two macroscopic stress paths differ: `sigma_xx`, `sigma_yy` from the wall forces over the
//! current wall areas, the largest difference over the cyclic path relative to the largest stress.
//! The two paths are written as CSV (`sphere_laws.csv` in cargo's bench scratch directory, the
//! path is printed) for `cargo xtask plot`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use dem_core::sim::Simulation;
use dem_run::Scene;
use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};

const R: f64 = 1e-3;
const CELLS: usize = 8;
/// Overlap of neighbours, relative to R (total overlap 2 S R).
const S: f64 = 2e-3;
const SETTLE: u64 = 1000;
const LEG: u64 = 1000;
const LEGS: u64 = 8;
const BLOCK: u64 = 100;
/// Wall travel per leg (each wall), a strain of about 1e-3 of the box.
const A: f64 = 1.2e-5;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let options = BakeOptions {
        spacing: 2e-4,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(32),
        density: 2650.0,
        units: "m, kg, s".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_primitive(&Primitive::Sphere { radius: R }, &options)
        .unwrap()
        .bundle
        .write(&dir.path().join("glass.grain"))
        .unwrap();
    // The automatic step of this material (the same for both laws).
    let probe = simulation(dir.path(), "hertz-mindlin", "\"auto\"", 0.0);
    let dt = probe.parameters.dt;
    let mut sims = [
        (
            "hertz-mindlin",
            simulation(dir.path(), "hertz-mindlin", &dt.to_string(), dt),
        ),
        (
            "hertz-jaeger",
            simulation(dir.path(), "hertz-jaeger", &dt.to_string(), dt),
        ),
    ];
    let n = sims[0].1.world.bodies.len();
    println!(
        "{n} spheres (FCC {CELLS}^3 cells, R = 1 mm, glass, mu 0.5, overlaps {:.1} % of R), dt {dt:.3e} s, 2 threads",
        200.0 * S
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    println!(
        "settling {SETTLE} steps (untimed), then {LEGS} legs of {LEG} steps of cyclic oedometric loading, x then y, wall travel {A:e} m per leg"
    );
    for (_, sim) in &mut sims {
        pool.install(|| sim.steps(SETTLE));
    }
    let mut time = [Duration::ZERO; 2];
    let mut paths = [Vec::new(), Vec::new()];
    for _ in 0..(LEGS * LEG / BLOCK) {
        for (i, (_, sim)) in sims.iter_mut().enumerate() {
            let start = Instant::now();
            pool.install(|| sim.steps(BLOCK));
            time[i] += start.elapsed();
            paths[i].push(stresses(sim));
        }
    }
    let steps = (LEGS * LEG) as f64;
    println!(
        "{:<14} {:>9} {:>11} {:>13} {:>22}",
        "law", "steps/s", "us/step", "contacts", "history bytes/contact"
    );
    for (i, (name, sim)) in sims.iter().enumerate() {
        let bytes: usize = sim.world.histories.iter().map(|(_, h)| h.bytes()).sum();
        println!(
            "{name:<14} {:>9.0} {:>11.1} {:>13} {:>22.0}",
            steps / time[i].as_secs_f64(),
            time[i].as_secs_f64() * 1e6 / steps,
            sim.world.histories.len(),
            bytes as f64 / sim.world.histories.len() as f64
        );
    }
    println!(
        "whole-step ratio jaeger / mindlin: {:.2} (goal <= 1.5)",
        time[1].as_secs_f64() / time[0].as_secs_f64()
    );
    let mut report = String::new();
    for (axis, name) in ["sigma_xx", "sigma_yy"].iter().enumerate() {
        let largest = paths
            .iter()
            .flatten()
            .map(|s| s[axis].abs())
            .fold(0.0, f64::max);
        let difference = paths[0]
            .iter()
            .zip(&paths[1])
            .map(|(m, j)| (m[axis] - j[axis]).abs())
            .fold(0.0, f64::max);
        write!(
            report,
            "{}{name}: largest {:.3} MPa, largest |jaeger - mindlin| {:.2} % of it",
            if axis == 0 { "" } else { "; " },
            largest * 1e-6,
            100.0 * difference / largest
        )
        .unwrap();
    }
    println!("stress paths over the {} samples: {report}", paths[0].len());
    let csv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sphere_laws.csv");
    let mut text = String::from(
        "step,sigma_xx_mindlin_MPa,sigma_xx_jaeger_MPa,sigma_yy_mindlin_MPa,sigma_yy_jaeger_MPa\n",
    );
    for (i, (m, j)) in paths[0].iter().zip(&paths[1]).enumerate() {
        writeln!(
            text,
            "{},{},{},{},{}",
            SETTLE + (i as u64 + 1) * BLOCK,
            m[0] * 1e-6,
            j[0] * 1e-6,
            m[1] * 1e-6,
            j[1] * 1e-6
        )
        .unwrap();
    }
    std::fs::write(&csv, text).unwrap();
    println!(
        "stress paths: {} (cargo xtask plot {0} --x step --y sigma_xx_mindlin_MPa --y sigma_xx_jaeger_MPa --y sigma_yy_mindlin_MPa --y sigma_yy_jaeger_MPa --out sphere_laws.svg)",
        csv.display()
    );
}

/// `[sigma_xx, sigma_yy]` (Pa, compression positive): the mean force of the two walls of an axis
/// over the current area between the other walls.
fn stresses(sim: &Simulation) -> [f64; 2] {
    // Walls in the scene's order: x-, x+, y-, y+, z-, z+ (points at the faces of the box).
    let gap = |w: usize, axis: usize| {
        let (a, b) = (&sim.world.walls[w], &sim.world.walls[w + 1]);
        let point = |w: &dem_core::wall::Wall| match dem_core::wall::Kind::bound(
            &w.geometry,
            &w.displacement,
        ) {
            dem_core::wall::Bound::Plane { point, .. } => point[axis],
            _ => unreachable!("plane walls"),
        };
        point(b) - point(a)
    };
    let (lx, ly, lz) = (gap(0, 0), gap(2, 1), gap(4, 2));
    let force = |w: usize, axis: usize| {
        0.5 * (sim.world.walls[w + 1].force[axis] - sim.world.walls[w].force[axis])
    };
    [force(0, 0) / (ly * lz), force(2, 1) / (lx * lz)]
}

/// The assembly under `law`, with `dt` (a number or `"auto"`) and the walls' cyclic path for a
/// step `step` (none when 0).
fn simulation(dir: &Path, law: &str, dt: &str, step: f64) -> Simulation {
    let d = 2.0 * R * (1.0 - S); // neighbour distance
    let a = d * 2f64.sqrt(); // cubic cell
    let mut text = format!(
        "[run]\ndt = {dt}\nsteps = 1\nthreads = 2\n[contact]\nlaw = \"{law}\"\nshear_modulus = 29e9\npoisson_ratio = 0.15\nfriction = 0.5\nlocal_damping = 0.3\n"
    );
    let basis = [
        [0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.5, 0.0, 0.5],
        [0.0, 0.5, 0.5],
    ];
    for i in 0..CELLS {
        for j in 0..CELLS {
            for k in 0..CELLS {
                for b in basis {
                    let p = [
                        (i as f64 + b[0]) * a,
                        (j as f64 + b[1]) * a,
                        (k as f64 + b[2]) * a,
                    ];
                    writeln!(
                        text,
                        "[[grains]]\nbundle = \"glass.grain\"\nposition = [{}, {}, {}]",
                        p[0], p[1], p[2]
                    )
                    .unwrap();
                }
            }
        }
    }
    // Walls touch the outer spheres with half a neighbour overlap.
    let (low, high) = (-(R - S * R), (CELLS as f64 - 0.5) * a + R - S * R);
    let t0 = SETTLE as f64 * step;
    let leg = LEG as f64 * step;
    for axis in 0..3 {
        for (point, sign) in [(low, 1.0), (high, -1.0)] {
            let mut p = [0.0; 3];
            p[axis] = point;
            let mut normal = [0.0; 3];
            normal[axis] = sign;
            write!(
                text,
                "[[walls]]\nkind = \"plane\"\npoint = [{}, {}, {}]\nnormal = [{}, {}, {}]\n",
                p[0], p[1], p[2], normal[0], normal[1], normal[2]
            )
            .unwrap();
            if step > 0.0 && axis < 2 {
                // Legs: x closes, x opens, y closes, y opens; twice.
                let mut table = vec![[0.0; 4], [t0, 0.0, 0.0, 0.0]];
                for l in 0..LEGS {
                    let mut row = [t0 + (l + 1) as f64 * leg, 0.0, 0.0, 0.0];
                    if (l / 2) % 2 == axis as u64 && l % 2 == 0 {
                        row[1 + axis] = sign * A;
                    }
                    table.push(row);
                }
                let rows: Vec<String> = table
                    .iter()
                    .map(|r| format!("[{}, {}, {}, {}]", r[0], r[1], r[2], r[3]))
                    .collect();
                writeln!(text, "motion = {{ table = [{}] }}", rows.join(", ")).unwrap();
            }
        }
    }
    let path = dir.join(format!("{law}.toml"));
    std::fs::write(&path, text).unwrap();
    dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path).unwrap()
}
