//! `cargo bench -p dem-core --bench wake`: what a parallel loop loses to waking the pool's
//! sleeping workers, with and without [`dem_core::threads::kept_busy`].
//!
//! A step's parallel stage follows a serial part. Here the stage is 64 tasks of 10 us of busy
//! work (640 us: 320 us on 2 threads), after a serial part of `gap` us on the calling worker;
//! printed: the stage's time beyond an even share of its work, median and 90th percentile of
//! 400 stages, for each gap, with the other workers left to rayon (which puts them to sleep
//! after a few dozen microseconds without work) and kept busy (docs/performance.md, "Threads
//! kept awake through the steps").

use std::time::{Duration, Instant};

use rayon::prelude::*;

const TASKS: u64 = 64;
const TASK_US: u64 = 10;
const STAGES: usize = 400;

/// Busy for `us` microseconds.
fn busy(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

fn main() {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let share = (TASKS * TASK_US) as f64 / threads as f64;
    println!(
        "{threads} threads; a stage of {TASKS} tasks of {TASK_US} us ({share:.0} us on each thread) after a serial gap; the stage's time beyond {share:.0} us:"
    );
    for kept in [false, true] {
        for gap in [0, 20, 50, 200, 1000] {
            let mut lost: Vec<f64> = pool.install(|| {
                let stages = || {
                    (0..STAGES)
                        .map(|_| {
                            busy(gap);
                            let t = Instant::now();
                            (0..TASKS).into_par_iter().for_each(|_| busy(TASK_US));
                            t.elapsed().as_secs_f64() * 1e6 - share
                        })
                        .collect()
                };
                if kept {
                    dem_core::threads::kept_busy(stages)
                } else {
                    stages()
                }
            });
            lost.sort_by(f64::total_cmp);
            println!(
                "  workers {:<10} gap {gap:>4} us: median {:6.1} us, 90th percentile {:6.1} us",
                if kept { "kept busy" } else { "asleep" },
                lost[STAGES / 2],
                lost[STAGES * 9 / 10]
            );
        }
    }
}
