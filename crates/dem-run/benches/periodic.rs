//! `cargo bench -p dem-run --bench periodic` (or `cargo xtask bench dem`): the cost of a periodic
//! cell (docs/experiments.md section 4). One random packing of 4000 spheres (radius 1 at scales
//! 0.8, 1, 1.25; 200 surface nodes; solid fraction 0.3, `linear-springs`), with random
//! velocities so that contacts open and close, stepped between six walls and, the same grains,
//! in a periodic cell of the same box: the time per grain-step of each, side by side in one
//! run, on 1 and 2 threads. The periodic run adds ghost copies of the grains near the faces to
//! the broad phase, image views in the narrow phase, and the wrap (goal: within 10 % of the
//! walled run). Each is run with the default neighbour-list skin and with none (a search at
//! every step): the skin's gain, side by side.

use std::time::Instant;

use dem_run::Scene;

mod common;

const COUNT: usize = 4000;
const STEPS: u64 = 200;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    common::bake_ball(dir.path());
    let volume = common::mean_volume(&[0.8, 1.0, 1.25]);
    let side = (COUNT as f64 * volume / 0.3).cbrt();
    let header = "[run]\ndt = 1e-3\nsteps = 1\n[contact]\nlaw = \"linear-springs\"\nkn = 1e3\n\
                  ks = 5e2\nfriction = 0.5\n";
    // The packing, placed once in the box.
    let packing = format!(
        "{header}[[packings]]\nseed = 4\ncount = {COUNT}\n\
         region = {{ kind = \"box\", min = [0, 0, 0], max = [{side}, {side}, {side}] }}\n\
         bundles = [{{ bundle = \"ball.grain\" }}]\nsizes = [[0.8, 1], [1.0, 1], [1.25, 1]]\n"
    );
    let path = dir.path().join("packing.toml");
    std::fs::write(&path, packing).unwrap();
    let packed = dem_run::build::with_packings(&Scene::read(&path).unwrap(), &path)
        .unwrap()
        .packings;
    let grains = dem_run::packing::grains_toml(&path, &packed);
    let walls: String = (0..3)
        .flat_map(|d| {
            let e = |x: f64| {
                let mut v = [0.0; 3];
                v[d] = x;
                v
            };
            [(e(0.0), e(1.0)), (e(side), e(-1.0))]
        })
        .map(|(p, n)| format!("[[walls]]\nkind = \"plane\"\npoint = {p:?}\nnormal = {n:?}\n"))
        .collect();
    let cell = format!("[cell]\nsize = [{side}, {side}, {side}]\n");
    let build = |name: &str, boundary: &str, skin: &str| {
        let path = dir.path().join(name);
        let header = header.replacen("[contact]", &format!("{skin}[contact]"), 1);
        std::fs::write(&path, format!("{header}{boundary}{grains}")).unwrap();
        let mut sim = dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path).unwrap();
        // The same random velocities for both (speed 0.3, one step moves 3e-4).
        for (i, b) in sim.world.bodies.iter_mut().enumerate() {
            let t = i as f64;
            b.velocity =
                nalgebra::Vector3::new((1.3 * t).sin(), (2.1 * t).cos(), (0.7 * t).sin()) * 0.3;
        }
        sim
    };
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut per_grain_step = Vec::new();
        let runs = [
            ("walls", walls.as_str(), ""),
            ("cell", cell.as_str(), ""),
            ("walls, skin 0", walls.as_str(), "skin = 0\n"),
            ("cell, skin 0", cell.as_str(), "skin = 0\n"),
        ];
        for (name, boundary, skin) in runs {
            let mut sim = build(
                &format!("{}.toml", name.replace([',', ' '], "")),
                boundary,
                skin,
            );
            let start = Instant::now();
            pool.install(|| sim.steps(STEPS));
            let t = start.elapsed().as_secs_f64() / (STEPS as f64 * COUNT as f64);
            per_grain_step.push(t);
            let broad = sim.totals.timings.broad;
            println!(
                "{threads} thread(s), {name}: {:.2} us per grain-step, {} node contacts at the end; broad {broad:.2} s ({:.1} % of the step, {} searches), narrow {:.2} s",
                t * 1e6,
                sim.last.contacts,
                100.0 * broad / (t * (STEPS * COUNT as u64) as f64),
                sim.last.neighbours.builds(),
                sim.totals.timings.narrow
            );
        }
        println!(
            "{threads} thread(s): periodic / walls = {:.3} (goal <= 1.10); skin 0 / skin: walls {:.3}, cell {:.3}",
            per_grain_step[1] / per_grain_step[0],
            per_grain_step[2] / per_grain_step[0],
            per_grain_step[3] / per_grain_step[1]
        );
    }
}
