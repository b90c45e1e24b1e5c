//! `cargo bench -p dem-run --features mpi --bench mpi` (or `cargo xtask bench mpi`): weak and
//! strong scaling of a decomposed run on 2 MPI processes, with each step's time split into
//! compute, waiting for the slowest process, migration and the ghosts' exchange, and the
//! communication model of docs/mpi.md fitted to it and extrapolated to 8 to 64 processes.
//!
//! The sample: spheres of radius 1 at scales 0.8, 1 and 1.25 (200 surface nodes), solid
//! fraction 0.3, `linear-springs`, random velocities of 0.3 so that contacts open and close and
//! grains cross the cuts, in a periodic cell (the bulk of a large sample: no walls). `PER`
//! grains per process: one process on a cube `L^3`, two processes on `2L x L x L` (weak
//! scaling: the same work per process), and one process on `2L x L x L` (strong scaling: the
//! same sample on 1 and 2 processes). Each process runs one thread (`--threads 1`). A fourth
//! run, two independent 1-process runs of the cube started together, measures what sharing the
//! machine leaves of weak scaling without MPI. The runs go in rounds, each kind once per round,
//! and the ratios are per round (docs/mpi.md, "Scaling": this machine's speed drifts between
//! minutes). `DEM_BENCH_KEEP=DIR` keeps the grains and scenes in `DIR` for a profiler.

use std::path::Path;
use std::process::Command;

use dem_run::Scene;

mod common;
mod work_dir;

/// Grains per process.
const PER: usize = 4000;
/// Steps per run.
const STEPS: u64 = 200;
/// Rounds of the runs (each round runs every configuration once).
const REPEATS: usize = 5;
/// The grains' largest reach: the largest scale times the sphere's bounding radius (its
/// farthest node plus a grid spacing, 1.2).
const LARGEST_REACH: f64 = 1.25 * 1.2;
/// The neighbour list's skin: the default fraction of the smallest bounding radius.
const SKIN: f64 = dem_run::scene::SKIN_DEFAULT * 0.8 * 1.2;

/// The stages of the step (crate::sim::Timings) that are computation.
const STAGES: [&str; 7] = [
    "integrate",
    "views",
    "broad",
    "narrow",
    "reduce",
    "body_forces",
    "ledger",
];

/// One round of the bench's runs.
struct Round {
    one: Measured,
    two_on_one: Measured,
    two: Measured,
    /// Seconds per step of the slower of two 1-process runs of `one` started together.
    alongside: f64,
}

/// What a run reported (summary.json).
struct Measured {
    /// Seconds per step in each of [`STAGES`].
    stages: [f64; 7],
    /// Seconds per step: all, compute (the stages of the step), waiting (at the barrier before
    /// the exchanges, and in the sums after the reduction), migration, ghosts.
    per_step: [f64; 5],
    /// Per process and step: ghosts and their bytes sent with the parcels' (the pairs across
    /// the cuts' forces), migrants.
    traffic: [f64; 3],
}

fn main() {
    let dir = work_dir::WorkDir::new();
    common::bake_ball(dir.path());
    let volume = common::mean_volume(&[0.8, 1.0, 1.25]);
    let side = (PER as f64 * volume / 0.3).cbrt();
    write_scene(dir.path(), "one", [side, side, side], PER);
    write_scene(dir.path(), "two", [2.0 * side, side, side], 2 * PER);
    // Rounds of the four runs one after the other: this machine's speed drifts by tens of
    // percent over minutes, so the ratios are taken within a round (side by side), and the
    // table shows the fastest run of each kind (the noise only ever slows a run down).
    let rounds: Vec<Round> = (0..REPEATS)
        .map(|_| Round {
            one: run(dir.path(), "one", 1),
            two_on_one: run(dir.path(), "two", 1),
            two: run(dir.path(), "two", 2),
            // The machine's own ceiling for weak scaling: two independent copies of the
            // 1-process run at once share the processor's caches and memory as the 2
            // processes do, without MPI.
            alongside: run_alongside(dir.path(), "one"),
        })
        .collect();
    let fastest = |kind: fn(&Round) -> &Measured| {
        (rounds.iter().map(kind))
            .min_by(|a, b| a.per_step[0].total_cmp(&b.per_step[0]))
            .expect("rounds")
    };
    let one = fastest(|r| &r.one);
    let two_on_one = fastest(|r| &r.two_on_one);
    let two = fastest(|r| &r.two);
    println!(
        "{PER} grains per process, {STEPS} steps, 1 thread per process; seconds per step:\n\
         {:<28} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9}",
        "run",
        "step",
        "compute",
        "wait+sums",
        "migrate",
        "ghosts",
        "other",
        "ghosts/step",
        "migrants"
    );
    for (name, m) in [
        ("1 process, L^3", &one),
        ("1 process, 2L x L x L", &two_on_one),
        ("2 processes, 2L x L x L", &two),
    ] {
        let [all, compute, wait, migrate, ghosts] = m.per_step;
        println!(
            "{name:<28} {all:>9.2e} {compute:>9.2e} {wait:>9.2e} {migrate:>9.2e} {ghosts:>9.2e} {:>9.2e} {:>11.0} {:>9.2}",
            all - compute - wait - migrate - ghosts,
            m.traffic[0],
            m.traffic[2],
        );
    }
    println!("compute by stage, seconds per step:");
    for (name, m) in [
        ("1 process, L^3", &one),
        ("1 process, 2L x L x L", &two_on_one),
        ("2 processes, 2L x L x L", &two),
    ] {
        let stages: Vec<String> = (STAGES.iter().zip(m.stages))
            .map(|(s, t)| format!("{s} {t:.2e}"))
            .collect();
        println!("{name:<28} {}", stages.join(", "));
    }
    // Per round: weak scaling, strong-scaling speedup, the machine's ceiling, and weak scaling
    // against that ceiling.
    let ratios: Vec<[f64; 4]> = (rounds.iter())
        .map(|r| {
            let step = |m: &Measured| m.per_step[0];
            [
                step(&r.one) / step(&r.two),
                step(&r.two_on_one) / step(&r.two),
                step(&r.one) / r.alongside,
                r.alongside / step(&r.two),
            ]
        })
        .collect();
    let median = |i: usize| {
        let mut v: Vec<f64> = ratios.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        // The middle one of the odd number of rounds.
        v[v.len() / 2]
    };
    let each = |i: usize| {
        (ratios.iter().map(|r| format!("{:.3}", r[i])))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "weak-scaling efficiency at 2 processes, per round: {} (median {:.3}; goal 0.9)",
        each(0),
        median(0)
    );
    println!(
        "strong-scaling speedup, per round: {} (median {:.3}, efficiency {:.3})",
        each(1),
        median(1),
        median(1) / 2.0
    );
    println!(
        "two independent 1-process runs at once (the slower of the two) against one alone, per round: {} (median {:.3}): what sharing the machine leaves of weak scaling without MPI",
        each(2),
        median(2)
    );
    println!(
        "the 2 processes against the two independent runs, per round: {} (median {:.3}): the decomposition's own share of the loss",
        each(3),
        median(3)
    );
    println!(
        "migration: {:.1} % of the step (goal <= 10 %); waiting: {:.1} %",
        100.0 * two.per_step[3] / two.per_step[0],
        100.0 * two.per_step[2] / two.per_step[0]
    );
    model(side, one, two);
}

/// The communication model (docs/mpi.md, "Scaling"): fitted to the runs on 1 and 2 processes,
/// extrapolated to cubic subdomains of `L^3` on 8 to 64 processes.
fn model(side: f64, one: &Measured, two: &Measured) {
    let n = PER as f64 / side.powi(3);
    // The halo: ghosts go out to 2 x (1.1 x the largest reach + half the skin)
    // (crate::sim::GHOST_MARGIN, docs/mpi.md).
    let halo = 2.0 * (1.1 * LARGEST_REACH + 0.5 * SKIN);
    // Two processes cut a periodic 2L x L x L cell across x twice (at x = L and x = 0): each
    // receives the grains within the halo of both its faces.
    let slab = n * 2.0 * halo * side * side;
    println!(
        "ghosts per process and step at 2 processes: {:.0} measured, {slab:.0} by the geometry n 2 h L^2 (h = {halo:.2})",
        two.traffic[0]
    );
    // Compute per owned grain-step, and the marginal compute per ghost (its view, its share of
    // the broad phase, its pairs with this process's grains: each computed by one process).
    let per_grain = one.per_step[1] / PER as f64;
    // (The serial run's compute is its step: one.per_step[1] ~ one.per_step[0].)
    let per_ghost = (two.per_step[1] - one.per_step[1]) / two.traffic[0];
    // The parcels' bytes counted with the ghosts': they go with the cuts' pairs, as ghosts do.
    let bytes_per_ghost = two.traffic[1] / two.traffic[0];
    let migrant_share = two.per_step[3] / one.per_step[0];
    println!(
        "fitted: compute {per_grain:.2e} s per grain-step, {per_ghost:.2e} s per ghost ({:.2} of a grain), {bytes_per_ghost:.0} bytes per ghost",
        per_ghost / per_grain
    );
    // What the 2-process run adds besides: waiting for the slower process (a share of the
    // compute) and the run's own checks and sums each step.
    let wait = two.per_step[2] / two.per_step[1];
    let other = two.per_step[0] - two.per_step.iter().skip(1).sum::<f64>();
    println!(
        "measured at 2 processes: waiting {:.1} % of the compute, {other:.2e} s per step of checks and sums",
        100.0 * wait
    );
    // A cluster's network (InfiniBand class), assumed: latency and inverse bandwidth.
    let (alpha, beta) = (2e-6, 1e-10);
    println!(
        "model on a cluster (alpha = {alpha:e} s, beta = {beta:e} s/byte; compute per grain and ghost as measured here):\n\
         {:>9} {:>9} {:>7} {:>12} {:>10} {:>10} {:>10} {:>10}",
        "grains", "processes", "grid", "ghosts/proc", "compute", "comm", "migrate", "efficiency"
    );
    for per in [PER, 20_000, 100_000] {
        // The side of a cube of `per` grains at this density.
        let l = side * (per as f64 / PER as f64).cbrt();
        for p in [2usize, 8, 27, 64] {
            let d = (p as f64).cbrt().round() as usize;
            let (grid, ghosts, faces) = if p == 2 {
                ("2x1x1".to_string(), n * 2.0 * halo * l * l, 2.0)
            } else {
                let shell = n * ((l + 2.0 * halo).powi(3) - l.powi(3));
                (format!("{d}x{d}x{d}"), shell, 6.0)
            };
            let compute = (per_grain * per as f64 + per_ghost * ghosts) * (1.0 + wait);
            // Per step: three count exchanges (MPI_Alltoall, P - 1 messages each: migration,
            // ghosts, the forces' parcels), their data to the neighbours (26 in a 3-D grid, 1
            // for the periodic slab of 2), about ten small collectives (log2 P rounds each),
            // and the ghosts' and parcels' bytes.
            let neighbours = if p == 2 { 1.0 } else { 26.0 };
            let rounds = (p as f64).log2().ceil();
            let comm = alpha * (3.0 * (p as f64 - 1.0) + 3.0 * neighbours + 10.0 * rounds)
                + beta * bytes_per_ghost * ghosts
                + other;
            // Migration goes with the subdomain's faces: 2 of L^2 for the slab measured, 6 for
            // a cube.
            let migrate = migrant_share * one.per_step[0] * (faces / 2.0) * (l / side).powi(2);
            let efficiency = per_grain * per as f64 / (compute + comm + migrate);
            println!(
                "{per:>9} {p:>9} {grid:>7} {ghosts:>12.0} {compute:>10.2e} {comm:>10.2e} {migrate:>10.2e} {efficiency:>10.3}"
            );
        }
    }
}

/// A periodic cell of `size` with `count` grains packed in it, moving at random.
fn write_scene(dir: &Path, name: &str, size: [f64; 3], count: usize) {
    let header = format!(
        "[run]\ndt = 1e-3\nsteps = {STEPS}\n[output]\nhistory_every = {STEPS}\n\
         [contact]\nlaw = \"linear-springs\"\nkn = 1e3\nks = 5e2\nfriction = 0.5\n\
         [cell]\nsize = {size:?}\n"
    );
    let packing = format!(
        "{header}[[packings]]\nseed = 4\ncount = {count}\nregion = {{ kind = \"cell\" }}\n\
         bundles = [{{ bundle = \"ball.grain\" }}]\nsizes = [[0.8, 1], [1.0, 1], [1.25, 1]]\n"
    );
    let path = dir.join(format!("{name}-packing.toml"));
    std::fs::write(&path, packing).unwrap();
    let mut packed = dem_run::build::with_packings(&Scene::read(&path).unwrap(), &path)
        .unwrap()
        .packings;
    for (i, g) in packed[0].grains.iter_mut().enumerate() {
        let t = i as f64;
        g.spec.velocity = [(1.3 * t).sin(), (2.1 * t).cos(), (0.7 * t).sin()].map(|v| 0.3 * v);
    }
    let grains = dem_run::packing::grains_toml(&path, &packed);
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("{header}{grains}"),
    )
    .unwrap();
}

/// The command that runs `dir/<name>.toml` on `processes` into `out`, one thread each.
fn command(dir: &Path, name: &str, processes: usize, out: &Path) -> Command {
    let dem_run = env!("CARGO_BIN_EXE_dem-run");
    let mut command = if processes == 1 {
        Command::new(dem_run)
    } else {
        let mut c = Command::new("mpirun");
        c.args(["--allow-run-as-root", "-n", &processes.to_string(), dem_run]);
        c
    };
    command
        .arg(dir.join(format!("{name}.toml")))
        .args(["--threads", "1", "--quiet", "--overwrite", "--out"])
        .arg(out)
        .stderr(std::process::Stdio::null());
    command
}

/// Two 1-process runs of `dir/<name>.toml` started together: the slower one's seconds per step.
fn run_alongside(dir: &Path, name: &str) -> f64 {
    let outs = [0, 1].map(|i| dir.join(format!("{name}-alongside-{i}.run")));
    let children = outs
        .each_ref()
        .map(|out| command(dir, name, 1, out).spawn().unwrap());
    // Both waited for before either is judged: a failed one leaves no run behind.
    let statuses = children.map(|mut child| child.wait().unwrap());
    for status in statuses {
        assert!(status.success(), "{name} alongside: {status}");
    }
    outs.iter()
        .map(|out| measured(out, 1).per_step[0])
        .fold(0.0, f64::max)
}

/// Runs `dir/<name>.toml` on `processes` and reads its summary.
fn run(dir: &Path, name: &str, processes: usize) -> Measured {
    let out = dir.join(format!("{name}-{processes}.run"));
    let status = command(dir, name, processes, &out).status().unwrap();
    assert!(status.success(), "{name} on {processes}: {status}");
    measured(&out, processes)
}

/// What the run in `out` on `processes` reported.
fn measured(out: &Path, processes: usize) -> Measured {
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let t = &summary["timings"];
    let seconds = |k: &str| t[k].as_f64().unwrap_or(0.0) / STEPS as f64;
    let stages = STAGES.map(seconds);
    let compute = stages.iter().sum();
    let traffic = &summary["processes"]["traffic"];
    let per = |k: &str| traffic[k].as_f64().unwrap_or(0.0) / (STEPS as f64 * processes as f64);
    Measured {
        stages,
        per_step: [
            summary["wall_seconds"].as_f64().unwrap() / STEPS as f64,
            compute,
            seconds("wait") + seconds("sums"),
            seconds("migrate"),
            seconds("ghosts"),
        ],
        traffic: [
            per("ghosts"),
            per("ghost_bytes") + per("parcel_bytes"),
            per("migrants"),
        ],
    }
}
