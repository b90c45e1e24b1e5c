//! What the benchmarks that compare variants of one scene share: timing them in turn.

use std::time::Instant;

use dem_core::sim::Simulation;

/// Times `steps` steps of each simulation in turn, `repeats` rounds, in `pool` (in turn, so
/// that the machine's drift reaches every variant alike): per simulation its rates (steps per
/// second, sorted: the median is `[repeats / 2]`) and its node tests in the last round.
pub fn in_turn(
    sims: &mut [Simulation],
    pool: &rayon::ThreadPool,
    steps: u64,
    repeats: usize,
) -> (Vec<Vec<f64>>, Vec<u64>) {
    let mut rates = vec![Vec::new(); sims.len()];
    let mut tests = vec![0; sims.len()];
    for _ in 0..repeats {
        for (v, sim) in sims.iter_mut().enumerate() {
            let t0 = sim.totals.node_tests;
            let t = Instant::now();
            pool.install(|| {
                for _ in 0..steps {
                    sim.step(false);
                }
            });
            rates[v].push(steps as f64 / t.elapsed().as_secs_f64());
            tests[v] = sim.totals.node_tests - t0;
        }
    }
    for r in &mut rates {
        r.sort_by(f64::total_cmp);
    }
    (rates, tests)
}

/// The scene `text`, written to `path`, built and advanced by `steps` steps in `pool` (the
/// untimed start of each variant).
pub fn advanced(
    path: &std::path::Path,
    text: &str,
    pool: &rayon::ThreadPool,
    steps: u64,
) -> Simulation {
    std::fs::write(path, text).unwrap();
    let scene = dem_run::Scene::read(path).unwrap();
    let mut sim = dem_run::build::from_scene(&scene, path).unwrap();
    pool.install(|| {
        for _ in 0..steps {
            sim.step(false);
        }
    });
    sim
}
