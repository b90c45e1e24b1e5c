//! `cargo bench -p jaeger`: cost of one contact update for Jäger exact, Jäger approximate and the
//! baseline spring law, measured side by side on the same DEM-like histories; history lengths,
//! memory, and the force error of the approximation.
//!
//! The history generator (documented here because the figures depend on it): `CONTACTS`
//! persistent contacts stepped `STEPS` times, as a DEM loop does (every contact once per step).
//! Per contact and step:
//! - the overlap grows slowly with noise, as in a quasi-static compression:
//!   `delta += D0 (0.0004 + 0.001 g)`, `g` uniform in [-1, 1] (about 30 % of steps unload);
//! - the tangential increment has magnitude `0.0003 D0 u`, `u` uniform in [0, 1), along a
//!   direction that persists and jumps to a new random angle with probability 0.02 per step.
//!
//! Only the update loops are timed; the movements of a step are generated before the clock runs.
//!
//! `cargo bench -p jaeger --bench contact_updates -- --exact-only` runs the baseline and the exact
//! law alone (for a profiler or a cache simulator such as `valgrind --tool=cachegrind`, whose
//! figures are then those of the exact kernel and the generator only). The update loops are the
//! functions `Jaeger::step_all` and `Baseline::step_all`: `valgrind --tool=callgrind
//! --cache-sim=yes --toggle-collect='*::step_all'` counts their instructions and cache misses
//! alone.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

use jaeger::{
    BYTES_PER_ENTRY, ContactParams, ContactState, HELD_LEGS, HistoryStore, LEGS_PER_CHUNK,
    SpringState,
};

const CONTACTS: usize = 8600; // Kuhn's assembly (Section 4)
const STEPS: usize = 2000;
const D0: f64 = 1e-6;

struct Generator {
    rng: XorShiftRng,
    delta: Vec<f64>,
    angle: Vec<f64>,
}

impl Generator {
    fn new() -> Self {
        let mut rng = XorShiftRng::seed_from_u64(0x5eed);
        let delta = (0..CONTACTS)
            .map(|_| D0 * (1.0 + 0.2 * rng.random_range(-1.0..1.0)))
            .collect();
        let angle = (0..CONTACTS)
            .map(|_| std::f64::consts::PI * rng.random_range(-1.0..1.0))
            .collect();
        Generator { rng, delta, angle }
    }

    /// The movements of every contact for the next step.
    fn step(&mut self, out: &mut Vec<(f64, [f64; 2])>) {
        out.clear();
        for c in 0..CONTACTS {
            let d = &mut self.delta[c];
            *d += D0 * (0.0004 + 0.001 * self.rng.random_range(-1.0..1.0));
            if self.rng.random::<f64>() < 0.02 {
                self.angle[c] = std::f64::consts::PI * self.rng.random_range(-1.0..1.0);
            }
            let m = 0.0003 * D0 * self.rng.random::<f64>();
            out.push((*d, [m * self.angle[c].cos(), m * self.angle[c].sin()]));
        }
    }
}

struct Jaeger {
    name: String,
    params: ContactParams,
    store: HistoryStore,
    states: Vec<ContactState>,
    forces: Vec<[f64; 2]>,
    time: Duration,
    /// Sum over samples of the mean history length (top legs included), number of samples.
    history: (f64, usize),
    /// Sum over samples of the arena bytes in use per contact.
    memory: f64,
    max_error: f64,
    /// FNV-1a over the bits of every force computed: equal checksums of two builds mean
    /// bit-identical results on this history.
    checksum: u64,
}

impl Jaeger {
    fn new(params: ContactParams, pdif: f64) -> Self {
        Jaeger {
            name: if pdif == 0.0 {
                "jaeger exact".into()
            } else {
                format!("jaeger pdif={pdif}")
            },
            params: params.with_approximation(pdif).unwrap(),
            store: HistoryStore::with_capacity(CONTACTS * 64),
            states: vec![ContactState::new(); CONTACTS],
            forces: vec![[0.0; 2]; CONTACTS],
            time: Duration::ZERO,
            history: (0.0, 0),
            memory: 0.0,
            max_error: 0.0,
            checksum: 0xcbf2_9ce4_8422_2325,
        }
    }

    #[inline(never)]
    fn step_all(&mut self, moves: &[(f64, [f64; 2])]) {
        let start = Instant::now();
        for (c, &(d, du)) in moves.iter().enumerate() {
            self.forces[c] = self
                .store
                .step(&self.params, &mut self.states[c], d, du)
                .tangential;
        }
        self.time += start.elapsed();
    }

    /// Folds this step's forces into the checksum (untimed).
    fn fold_checksum(&mut self) {
        for t in &self.forces {
            for x in t {
                for byte in x.to_bits().to_le_bytes() {
                    self.checksum = (self.checksum ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
                }
            }
        }
    }

    /// Samples the mean history length and memory in O(contacts), reading the contact states
    /// but not the arena: walking every history here would evict the arena from the caches
    /// between two timed steps, which a DEM step does not do.
    fn sample_history(&mut self) {
        let held: usize = self.states.iter().map(ContactState::held_legs).sum();
        self.history.0 += (self.store.len() + held) as f64 / CONTACTS as f64;
        self.history.1 += 1;
        self.memory += self.store.bytes_in_use() as f64 / CONTACTS as f64;
    }

    /// The longest history (walks them all: once, at the end).
    fn longest_history(&self) -> usize {
        let len = |s| self.store.history_len(s);
        self.states.iter().map(len).max().unwrap_or(0)
    }
}

struct Baseline {
    params: ContactParams,
    states: Vec<SpringState>,
    time: Duration,
}

impl Baseline {
    #[inline(never)]
    fn step_all(&mut self, moves: &[(f64, [f64; 2])]) {
        let start = Instant::now();
        for (s, &(d, du)) in self.states.iter_mut().zip(moves) {
            black_box(s.step(&self.params, d, du));
        }
        self.time += start.elapsed();
    }
}

fn main() {
    let params = ContactParams::new(1e-3, 1e-3, 29e9, 0.15, 0.5).unwrap();
    let mut baseline = Baseline {
        params,
        states: vec![SpringState::default(); CONTACTS],
        time: Duration::ZERO,
    };
    let exact_only = std::env::args().any(|a| a == "--exact-only");
    let pdifs: &[f64] = if exact_only {
        &[0.0]
    } else {
        &[0.0, 0.05, 0.1, 0.2, 0.5, 1.0]
    };
    let mut jaegers: Vec<Jaeger> = pdifs
        .iter()
        .copied()
        .map(|p| Jaeger::new(params, p))
        .collect();
    let mut generator = Generator::new();
    let mut moves = Vec::with_capacity(CONTACTS);
    for step in 0..STEPS {
        generator.step(&mut moves);
        let moves = black_box(&moves);
        // Alternate the order, so that no model always runs right after the generator.
        if step % 2 == 0 {
            baseline.step_all(moves);
        }
        for j in &mut jaegers {
            j.step_all(moves);
            j.fold_checksum();
        }
        if step % 2 == 1 {
            baseline.step_all(moves);
        }
        let (exact, approximate) = jaegers.split_first_mut().unwrap();
        for a in approximate {
            for (c, &(d, _)) in moves.iter().enumerate() {
                let (t, u) = (exact.forces[c], a.forces[c]);
                let mu_n = params.friction() * params.normal_force(d);
                a.max_error = a.max_error.max((t[0] - u[0]).hypot(t[1] - u[1]) / mu_n);
            }
        }
        if step % 20 == 19 {
            for j in &mut jaegers {
                j.sample_history();
            }
        }
    }

    let updates = (CONTACTS * STEPS) as f64;
    let ns = |t: Duration| t.as_secs_f64() * 1e9 / updates;
    println!(
        "{CONTACTS} contacts x {STEPS} steps of DEM-like histories (generator in the bench's docs)"
    );
    println!(
        "bytes per history entry (zeta, p): {BYTES_PER_ENTRY}, in chunks of {LEGS_PER_CHUNK} with a \
         4-byte link; per contact state, which holds the top {HELD_LEGS} legs: {}",
        size_of::<ContactState>()
    );
    println!(
        "{:<18} {:>10} {:>12} {:>13} {:>12} {:>15} {:>16}",
        "model",
        "ns/update",
        "vs baseline",
        "mean history",
        "max history",
        "bytes/contact",
        "max err / mu N"
    );
    println!(
        "{:<18} {:>10.1} {:>12.2} {:>13} {:>12} {:>15} {:>16}",
        "baseline spring",
        ns(baseline.time),
        1.0,
        "-",
        "-",
        size_of::<SpringState>(),
        "-"
    );
    let exact_mean = jaegers[0].history.0 / jaegers[0].history.1 as f64;
    for j in &jaegers {
        println!("{:<18} checksum of the forces {:016x}", j.name, j.checksum);
    }
    for j in &jaegers {
        let mean = j.history.0 / j.history.1 as f64;
        let bytes = size_of::<ContactState>() as f64 + j.memory / j.history.1 as f64;
        let err = if j.params.approximation() == 0.0 {
            "-".to_string()
        } else {
            format!("{:.2e}", j.max_error)
        };
        println!(
            "{:<18} {:>10.1} {:>12.2} {:>13.1} {:>12} {:>15.0} {:>16}",
            j.name,
            ns(j.time),
            j.time.as_secs_f64() / baseline.time.as_secs_f64(),
            mean,
            j.longest_history(),
            bytes,
            err
        );
        if j.params.approximation() > 0.0 {
            println!(
                "{:<18} mean history {:.0} % shorter than exact",
                "",
                100.0 * (1.0 - mean / exact_mean)
            );
        }
    }
}
