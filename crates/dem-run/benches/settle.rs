//! `cargo bench -p dem-run` (or `cargo xtask bench dem`): 216 spheres of 402 surface nodes, a
//! 6 x 6 x 6 lattice settling under gravity in a box, the scene of the YADE anchor in issue #6.
//!
//! The lattice first falls and piles up for `SETTLE` steps (untimed, all threads); from that
//! state, `TIMED` steps are timed on 1 thread and on 2 threads, back to back, in `REPEATS`
//! rounds (the medians are reported: this machine kind's timings vary by tens of percent from
//! run to run), and the end states are compared bit for bit. Reported: steps per second, the
//! 2-thread speed-up (the median of the rounds' own ratios, which the machine's drift between
//! rounds does not enter), and the time per node in two units:
//! - per node candidate: every surface node of a grain, for every grain or wall its bounding
//!   sphere meets (what a narrow phase without node clusters tests, as YADE's does);
//! - per node test: the nodes actually transformed and checked, after the cluster filter.
//!
//! Then the deformable grains (issue #10): the same scene with a deformable sphere (a dilation
//! mode, the simplest compaction mode: `Phi(x) = x`, modal mass `int rho |x|^2 dV`, stiffness
//! 1e9, 10 % damping, level sets precomputed at -0.02, -0.01, 0.01, 0.02), run with its modes
//! off (rigid), semi-Lagrangian and precomputed: each settles `SETTLE` steps, then each is timed
//! for `TIMED` steps on 2 threads, in turn, `REPEATS` times (medians). Reported: steps/s, ns per
//! node test, and the ratios to the rigid run, each the median of the rounds' own ratios
//! (goals: <= 1.3 semi-Lagrangian, <= 1.15 precomputed).
//!
//! When `yade` (2023.02a, with its LevelSet module) is installed, the same scene runs in it
//! (benches/settle_yade.py, 1 thread, the same settling steps, then the same timed steps) and
//! the ratio of steps per second is printed. YADE's contact model differs (one contact point
//! per grain pair, no viscous damping), so its pile is similar, not identical. dem-run's 1-thread
//! steps are timed again after YADE's run, and the ratio given against both.
//!
//! `DEM_BENCH_KEEP=DIR` keeps the bench's grains and scenes in `DIR` for a profiler
//! (docs/performance.md, "Locating a point without closures").

mod side_by_side;
mod work_dir;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use dem_core::sim::Simulation;
use dem_run::Scene;
use levelset_bake::{
    BakeOptions, Extent, Modal, ModeField, NodeChoice, OpenMesh, Primitive, attach_modes,
    bake_primitive,
};
use nalgebra::{Point3, Vector3};

/// Seconds spent per stage of the step since the run began, by name.
type Stages = std::collections::BTreeMap<String, f64>;

/// The simulation's [`dem_core::sim::Timings`], by stage name.
fn stage_seconds(sim: &Simulation) -> Stages {
    let timings = serde_json::to_value(sim.totals.timings).unwrap();
    (timings.as_object().unwrap().iter())
        .map(|(stage, s)| (stage.clone(), s.as_f64().unwrap()))
        .collect()
}

const SETTLE: u64 = 4000;
const TIMED: u64 = 1000;
const REPEATS: usize = 5;

fn main() {
    let dir = work_dir::WorkDir::new();
    let options = BakeOptions {
        spacing: 0.1,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(402),
        density: 2650.0,
        units: "m, kg, s".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let mut baked = bake_primitive(&Primitive::Sphere { radius: 1.0 }, &options).unwrap();
    let bundle = &mut baked.bundle;
    // Exactly 402 nodes, as in the anchor scene: a Fibonacci sphere with equal areas (the
    // geodesic triangulations of levelset-bake give 362 or 492).
    let nodes = 402;
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    bundle.nodes = ndarray::Array2::from_shape_fn((nodes, 3), |(k, c)| {
        let z = 1.0 - (2 * k + 1) as f64 / nodes as f64;
        let r = (1.0 - z * z).sqrt();
        let t = golden * k as f64;
        [r * t.cos(), r * t.sin(), z][c]
    });
    bundle.node_areas =
        ndarray::Array1::from_elem(nodes, 4.0 * std::f64::consts::PI / nodes as f64);
    bundle.write(&dir.path().join("ball.grain")).unwrap();
    // The deformable sphere: M = rho 4 pi / 5 (the dilation of a unit ball), K = 1e9,
    // zeta = 0.1.
    let (m, k) = (2650.0 * 4.0 * std::f64::consts::PI / 5.0, 1e9);
    let modal = Modal {
        mass: ndarray::Array2::from_elem((1, 1), m),
        stiffness: ndarray::Array2::from_elem((1, 1), k),
        damping: ndarray::Array2::from_elem((1, 1), 0.2 * (k * m).sqrt()),
        internal_force: grain::InternalForce::Linear,
        material: None,
        flexibility: None,
    };
    attach_modes(&mut baked, &Dilation, modal, &[-0.02, -0.01, 0.01, 0.02]).unwrap();
    baked.bundle.write(&dir.path().join("soft.grain")).unwrap();
    // Radius 1, lattice spacing 2.2 (gaps of 0.2); a 13.2-wide box, floor at z = 0.
    let scene = r#"
[run]
dt = 5e-4
steps = 1
gravity = [0, 0, -9.81]
[contact]
law = "linear-springs"
kn = 5e6
ks = 2.5e6
friction = 0.5
normal_damping = 5e4
[[lattices]]
bundle = "ball.grain"
origin = [-5.5, -5.5, 1.2]
counts = [6, 6, 6]
spacing = [2.2, 2.2, 2.2]
[[walls]]
kind = "plane"
point = [0, 0, 0]
normal = [0, 0, 1]
[[walls]]
kind = "plane"
point = [-6.6, 0, 0]
normal = [1, 0, 0]
[[walls]]
kind = "plane"
point = [6.6, 0, 0]
normal = [-1, 0, 0]
[[walls]]
kind = "plane"
point = [0, -6.6, 0]
normal = [0, 1, 0]
[[walls]]
kind = "plane"
point = [0, 6.6, 0]
normal = [0, -1, 0]
"#;
    let path = dir.path().join("scene.toml");
    std::fs::write(&path, scene).unwrap();
    let mut sim = dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path).unwrap();
    println!(
        "216 spheres of {nodes} nodes in a box, dt {:e}: settling {SETTLE} steps (untimed)",
        sim.parameters.dt
    );
    for _ in 0..SETTLE {
        sim.step(false);
    }
    let start = sim.state();
    println!(
        "after settling: {} node contacts, kinetic energy {:.3e}",
        sim.last.contacts,
        sim.energies().translational
    );
    // `cargo bench -p dem-run --bench settle -- profile`: PROFILED steps on one thread, alone, for
    // callgrind (docs/performance.md, "Instructions per step").
    if std::env::args().any(|a| a == "profile") {
        profiled_steps(&mut sim);
        return;
    }
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        })
        .collect();
    let mut rates = [Vec::new(), Vec::new()];
    let mut stages = [Stages::new(), Stages::new()];
    let mut ends = Vec::new();
    let (mut tests, mut candidates, mut queries) = (0, 0, 0);
    for round in 0..REPEATS {
        // Each round times both thread counts on the same steps, back to back, the first of
        // them alternating between rounds: the ratio of a round is taken within a few seconds,
        // while this machine kind's speed drifts over minutes.
        for p in [round % 2, 1 - round % 2] {
            let (t0, c0) = (sim.totals.node_tests, sim.totals.node_candidates);
            let q0 = sim.totals.node_queries;
            let before = stage_seconds(&sim);
            rates[p].push(timed(&mut sim, &start, &pools[p]));
            for (stage, seconds) in stage_seconds(&sim) {
                *stages[p].entry(stage.clone()).or_default() += seconds - before[&stage];
            }
            (tests, candidates) = (sim.totals.node_tests - t0, sim.totals.node_candidates - c0);
            queries = sim.totals.node_queries - q0;
            ends.push(serde_json::to_string(&sim.state()).unwrap());
        }
    }
    for (p, threads) in [1, 2].iter().enumerate() {
        let (rate, low, high) = side_by_side::spread(&rates[p]);
        let spread = format!("{low:.0} to {high:.0}");
        let per_step_ns = 1e9 / rate;
        println!(
            "{threads} thread(s): {rate:.0} steps/s (median of {REPEATS}: {spread}); {:.2} ns per node candidate ({:.0} per step), {:.1} ns per node test ({:.0} per step)",
            per_step_ns * TIMED as f64 / candidates as f64,
            candidates as f64 / TIMED as f64,
            per_step_ns * TIMED as f64 / tests as f64,
            tests as f64 / TIMED as f64,
        );
        println!(
            "  {:.0} node queries per step (past the bounding-sphere test)",
            queries as f64 / TIMED as f64
        );
        let total: f64 = stages[p].values().sum();
        let mut shares: Vec<_> = stages[p].iter().filter(|(_, s)| **s > 0.0).collect();
        shares.sort_by(|a, b| b.1.total_cmp(a.1));
        let shares: Vec<String> = (shares.iter())
            .map(|(stage, s)| format!("{stage} {:.1} %", 100.0 * **s / total))
            .collect();
        println!("  by stage (sim.totals.timings): {}", shares.join(", "));
    }
    let (speed_up, each) = side_by_side::ratio(&rates[1], &rates[0]);
    println!(
        "2-thread speed-up: {speed_up:.2} (goal >= 1.85; the median of the rounds' own ratios, {}); {} node contacts at the end; end states {}",
        side_by_side::listed(&each),
        sim.last.contacts,
        if ends.iter().all(|e| *e == ends[0]) {
            "bit-identical"
        } else {
            "DIFFER"
        }
    );
    // `cargo bench -p dem-run --bench settle -- rigid`: the rigid runs alone (for a profiler).
    if std::env::args().any(|a| a == "rigid") {
        return;
    }
    deformable(dir.path(), scene);
    match yade_rate() {
        Some(rate) => {
            // dem-run on 1 thread again right after YADE: its run takes minutes, over which this
            // machine kind's speed drifts by tens of percent, so its rate is set against dem-run's
            // on both sides of it.
            let after: Vec<f64> = (0..REPEATS)
                .map(|_| timed(&mut sim, &start, &pools[0]))
                .collect();
            let before = side_by_side::spread(&rates[0]).0;
            let after = side_by_side::spread(&after).0;
            println!(
                "YADE 2023.02a, same scene after the same settling steps, 1 thread: {rate:.1} steps/s; dem-run on 1 thread ({before:.0} steps/s before YADE's run, {after:.0} after it) is {:.1} and {:.1} x faster (goal >= 40)",
                before / rate,
                after / rate
            )
        }
        None => println!(
            "yade is not installed (apt-get install yade): no side-by-side figure; issue #6's anchor on this machine kind is about 45 steps/s on 1 core"
        ),
    }
}

/// Steps per second over [`TIMED`] steps of `sim` from `start`, in `pool`.
fn timed(sim: &mut Simulation, start: &dem_core::state::State, pool: &rayon::ThreadPool) -> f64 {
    sim.restore(start.clone()).unwrap();
    let t = Instant::now();
    pool.install(|| sim.steps(TIMED));
    TIMED as f64 / t.elapsed().as_secs_f64()
}

/// Steps timed and counted for a profiler after the settling.
const PROFILED: u64 = 100;

/// [`PROFILED`] steps on one thread, with the counts per step a profile is divided by.
fn profiled_steps(sim: &mut Simulation) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let totals = |sim: &Simulation| {
        let t = &sim.totals;
        [t.node_candidates, t.node_tests, t.node_queries]
    };
    let before = totals(sim);
    let start = Instant::now();
    pool.install(|| profiled(sim));
    let seconds = start.elapsed().as_secs_f64() / PROFILED as f64;
    let per_step: Vec<f64> = (totals(sim).iter().zip(before))
        .map(|(after, before)| (after - before) as f64 / PROFILED as f64)
        .collect();
    println!(
        "{PROFILED} steps on 1 thread, {seconds:.3e} s per step; per step {:.0} node candidates, {:.0} node tests, {:.0} node queries; {} node contacts at the end",
        per_step[0], per_step[1], per_step[2], sim.last.contacts
    );
}

/// The profiled steps themselves, on the pool's thread: what
/// `valgrind --tool=callgrind --toggle-collect='settle::profiled'` counts.
#[inline(never)]
fn profiled(sim: &mut Simulation) {
    for _ in 0..PROFILED {
        sim.step(false);
    }
}

/// Uniform dilation, `Phi(x) = x`.
struct Dilation;

impl ModeField for Dilation {
    fn count(&self) -> usize {
        1
    }
    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        vec![x.coords]
    }
}

/// The scene with the deformable sphere: modes off, semi-Lagrangian, precomputed, side by side.
fn deformable(dir: &Path, scene: &str) {
    let variants = [
        ("rigid (modes off)", "{ active = false }"),
        ("semi-Lagrangian", "{ levelset = \"semi-lagrangian\" }"),
        ("precomputed", "{ levelset = \"precomputed\" }"),
    ];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut sims: Vec<Simulation> = variants
        .iter()
        .map(|(name, modes)| {
            let text = scene.replace(
                "bundle = \"ball.grain\"",
                &format!("bundle = \"soft.grain\"\nmodes = {modes}"),
            );
            let path = dir.join(format!("{}.toml", name.split(' ').next().unwrap()));
            side_by_side::advanced(&path, &text, &pool, SETTLE)
        })
        .collect();
    let (rates, counts) = side_by_side::in_turn(&mut sims, &pool, TIMED, REPEATS);
    println!("deformable spheres (dilation mode), 2 threads, after {SETTLE} settling steps each:");
    for (v, (name, _)) in variants.iter().enumerate() {
        let (rate, low, high) = side_by_side::spread(&rates[v]);
        let eps = sims[v]
            .world
            .bodies
            .iter()
            .filter_map(|b| b.modes.as_ref())
            .map(|m| m.eps[0].abs())
            .fold(0.0, f64::max);
        println!(
            "  {name}: {rate:.0} steps/s ({low:.0} to {high:.0}), {:.1} ns per node test ({:.0} per step, {:.0} queries), {} node contacts, largest |eps| {eps:.2e}, time / rigid {:.2}",
            1e9 / rate * TIMED as f64 / counts[v].tests as f64,
            counts[v].tests as f64 / TIMED as f64,
            counts[v].queries as f64 / TIMED as f64,
            sims[v].last.contacts,
            side_by_side::ratio(&rates[0], &rates[v]).0,
        );
    }
    let (semi, each_semi) = side_by_side::ratio(&rates[0], &rates[1]);
    let (pre, each_pre) = side_by_side::ratio(&rates[0], &rates[2]);
    println!(
        "  goals: semi-Lagrangian / rigid <= 1.3 ({semi:.2}; rounds {}), precomputed / rigid <= 1.15 ({pre:.2}; rounds {}), the medians of the rounds' own ratios",
        side_by_side::listed(&each_semi),
        side_by_side::listed(&each_pre),
    );
}

/// YADE's steps per second on the same scene (benches/settle_yade.py), after the same settling,
/// or `None` without `yade` on the PATH.
fn yade_rate() -> Option<f64> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/settle_yade.py");
    println!("running YADE on the same scene (1 thread, {SETTLE} + {TIMED} steps)...");
    let out = Command::new("yade")
        .args(["-j1", "-n", "-x"])
        .arg(&script)
        .args([SETTLE.to_string(), TIMED.to_string()])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("YADE_STEPS_PER_SECOND "))
        .and_then(|v| v.trim().parse().ok())
}
