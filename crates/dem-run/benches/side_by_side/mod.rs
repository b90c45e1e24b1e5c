//! What the benchmarks that compare variants of one scene share: timing the variants in turn.

use std::path::Path;
use std::time::Instant;

use dem_core::sim::Simulation;

/// Times `steps` steps of each simulation in turn, `repeats` rounds, in `pool` (in turn, so
/// that the machine's drift reaches every variant alike): per simulation its rates (steps per
/// second) in round order, and its node counts in the last round.
pub fn in_turn(
    sims: &mut [Simulation],
    pool: &rayon::ThreadPool,
    steps: u64,
    repeats: usize,
) -> (Vec<Vec<f64>>, Vec<NodeCounts>) {
    let mut rates = vec![Vec::new(); sims.len()];
    let mut counts = vec![NodeCounts::default(); sims.len()];
    for _ in 0..repeats {
        for (v, sim) in sims.iter_mut().enumerate() {
            let (t0, q0) = (sim.totals.node_tests, sim.totals.node_queries);
            let t = Instant::now();
            pool.install(|| sim.steps(steps));
            rates[v].push(steps as f64 / t.elapsed().as_secs_f64());
            counts[v] = NodeCounts {
                tests: sim.totals.node_tests - t0,
                queries: sim.totals.node_queries - q0,
            };
        }
    }
    (rates, counts)
}

/// The median, smallest and largest of `values` (at least one).
pub fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Ratios to two decimals, comma-separated.
pub fn listed(ratios: &[f64]) -> String {
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    each.join(", ")
}

/// The median over the rounds of `a[r] / b[r]`, with the rounds' ratios in round order: each
/// ratio is taken within one round, seconds apart, so the machine's drift between rounds (tens
/// of percent over minutes on the machines these benches run on) does not enter it, as it
/// enters a ratio of the two medians.
pub fn ratio(a: &[f64], b: &[f64]) -> (f64, Vec<f64>) {
    let each: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    (spread(&each).0, each)
}

/// A variant's node tests (nodes whose cluster's bound passed) and node queries (tests that
/// asked the other side's level set or wall), over one round.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeCounts {
    /// Node tests.
    pub tests: u64,
    /// Node queries.
    pub queries: u64,
}

/// The scene `text`, written to `path`, built and advanced by `steps` steps in `pool` (the
/// untimed start of each variant).
pub fn advanced(path: &Path, text: &str, pool: &rayon::ThreadPool, steps: u64) -> Simulation {
    std::fs::write(path, text).unwrap();
    let scene = dem_run::Scene::read(path).unwrap();
    let mut sim = dem_run::build::from_scene(&scene, path).unwrap();
    pool.install(|| sim.steps(steps));
    sim
}
