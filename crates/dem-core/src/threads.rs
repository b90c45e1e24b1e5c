//! The pool's threads kept awake through a run's steps, so that each parallel stage starts on
//! all of them (docs/performance.md, "Threads kept awake through the steps").
//!
//! A step runs its stages in turn, most of them parallel, with short serial parts between them.
//! A rayon worker with no work spins for a few dozen microseconds and then sleeps; the next
//! parallel loop wakes it, and until it is awake the calling thread works alone. On the virtual
//! machines this project is measured on, a sleeping worker takes 140 to 170 us to join: a loop
//! of 640 us of work on 2 threads took 69 to 86 us more than half its work after a serial gap
//! of 50 us or more, and 3 us more with the other worker kept busy (`cargo bench -p dem-core
//! --bench wake`).
//!
//! [`kept_busy`] puts every other worker of the current pool in a loop that takes whatever work
//! the pool has ([`rayon::yield_now`]: its own queue, other workers' queues, injected jobs) until
//! its closure returns, and between two looks yields its processor to any other thread that
//! wants it ([`std::thread::yield_now`]), which keeps the processor awake without taking it from
//! other processes. It changes when work runs, never what it computes: a step's results are the
//! same bits for any thread count, with or without it. The cost: the pool's threads use their
//! processors for the whole closure, serial parts and file writes included, as a run of
//! `--threads N` asks for N processors.
//!
//! The loop must be each worker's outermost job: a worker that met it while waiting inside a
//! parallel loop's task would hold that task until the closure returned, which waits for the
//! task (a deadlock). So [`kept_busy`] starts the loops and waits until every one runs before it
//! calls its closure, when the pool has no other work; it is meant around many steps, not one.
//! Outside a pool's worker (a test stepping in the global pool, or a process of an MPI run,
//! whose steps run on the thread that makes the MPI calls) and inside another [`kept_busy`], it
//! only calls its closure: busy workers would take processors from a calling thread that is not
//! one of them.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    /// Whether this thread is inside [`kept_busy`] (its caller, or a worker's loop).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on this thread with the current pool's other workers busy until it returns; see the
/// module docs for when it only calls `f`. Call it when this thread has no parallel work under
/// way (the pool is idle).
pub fn kept_busy<R>(f: impl FnOnce() -> R) -> R {
    let (Some(me), true) = (
        rayon::current_thread_index(),
        rayon::current_num_threads() > 1,
    ) else {
        return f();
    };
    if INSIDE.get() {
        return f();
    }
    let done = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let (d, s) = (Arc::clone(&done), Arc::clone(&started));
    rayon::spawn_broadcast(move |worker| {
        if worker.index() == me {
            return;
        }
        INSIDE.set(true);
        s.fetch_add(1, Ordering::AcqRel);
        while !d.load(Ordering::Acquire) {
            if rayon::yield_now() == Some(rayon::Yield::Idle) {
                std::thread::yield_now();
            }
        }
        INSIDE.set(false);
    });
    // Raised however `f` ends, so that no worker spins on after it.
    struct Done(Arc<AtomicBool>);
    impl Drop for Done {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
            INSIDE.set(false);
        }
    }
    let _done = Done(done);
    INSIDE.set(true);
    // This thread's own copy of the broadcast waits in its queue until it next looks for work
    // (it returns at once); the others start theirs now, the pool having nothing else to do.
    let others = rayon::current_num_threads() - 1;
    while started.load(Ordering::Acquire) < others {
        std::thread::yield_now();
    }
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_inside_runs_on_every_worker_and_gives_the_sums_of_one_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let x: Vec<f64> = (0..100_000).map(|i| (i as f64).sin()).collect();
        let chunked = |c: &[f64]| c.iter().map(|v| v * v).sum::<f64>();
        let serial: f64 = x.chunks(1000).map(chunked).sum();
        for _ in 0..20 {
            let (sums, workers) = pool.install(|| {
                kept_busy(|| {
                    // Many parallel loops with serial parts between them, as in a run's steps.
                    let sums: Vec<f64> = (0..50)
                        .map(|_| x.par_chunks(1000).map(chunked).collect::<Vec<f64>>())
                        .map(|parts| parts.iter().sum())
                        .collect();
                    let workers: std::collections::BTreeSet<usize> = (0..64)
                        .into_par_iter()
                        .map(|_| {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            rayon::current_thread_index().unwrap()
                        })
                        .collect();
                    (sums, workers)
                })
            });
            assert!(sums.iter().all(|s| s.to_bits() == serial.to_bits()));
            // The busy workers take the loops' tasks: without that, only the caller would.
            assert_eq!(workers.len(), 3, "the 64 tasks ran on {workers:?}");
        }
    }

    #[test]
    fn outside_a_pool_with_one_thread_and_nested_it_only_calls() {
        assert_eq!(kept_busy(|| 7), 7);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(one.install(|| kept_busy(|| 8)), 8);
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert_eq!(two.install(|| kept_busy(|| kept_busy(|| 9))), 9);
    }
}
