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
//! its closure returns, and between two looks offers its processor to other threads
//! ([`std::thread::yield_now`]): two runs of 2 threads each sharing 2 cores were not slowed by
//! it. It changes when work runs, never what it computes: a step's results are the same bits for
//! any thread count, with or without it. The cost: the pool's threads use their processors for
//! the whole closure, serial parts and file writes included, as a run of `--threads N` asks for
//! N processors.
//!
//! The loop must be each worker's outermost job: a worker that met it while waiting inside a
//! parallel loop's task would hold that task until the closure returned, which waits for the
//! task (a deadlock, met by a first version that kept the workers busy one step at a time). So
//! [`kept_busy`] starts the loops, waits until every one runs, and only then calls its closure;
//! it must be called when no parallel work is under way in the pool, and is meant around many
//! steps (a run's, a bench's timed loop: [`crate::sim::Simulation::steps`]). It only calls its
//! closure:
//! - on a thread that is not one of a pool's workers (a test stepping in the global pool, a
//!   process of an MPI run, whose steps run on the thread that makes the MPI calls): busy
//!   workers would take processors from a caller that is not one of them;
//! - in a pool of one thread;
//! - inside another [`kept_busy`] (a task it runs, or its own closure): the loops already run;
//! - while another [`kept_busy`] runs anywhere in the process: two callers waiting for each
//!   other's workers to start would wait forever.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    /// Whether this thread runs inside [`kept_busy`] (its caller, or a worker's loop).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Whether a [`kept_busy`] runs in this process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Runs `f` on this thread with the current pool's other workers busy until it returns. Call it
/// when no parallel work is under way in the pool; see the module docs for when it only calls
/// `f`.
pub fn kept_busy<R>(f: impl FnOnce() -> R) -> R {
    let Some(me) = rayon::current_thread_index() else {
        return f();
    };
    let threads = rayon::current_num_threads();
    if threads == 1 || INSIDE.get() || ACTIVE.swap(true, Ordering::Acquire) {
        return f();
    }
    // Raised however `f` ends, so that no worker loops on after it, and the process's flag
    // released.
    struct Done(Arc<AtomicBool>);
    impl Drop for Done {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
            INSIDE.set(false);
            ACTIVE.store(false, Ordering::Release);
        }
    }
    let done = Done(Arc::new(AtomicBool::new(false)));
    let started = Arc::new(AtomicUsize::new(0));
    let (d, s) = (Arc::clone(&done.0), Arc::clone(&started));
    rayon::spawn_broadcast(move |worker| {
        if worker.index() == me {
            return;
        }
        let was = INSIDE.replace(true);
        s.fetch_add(1, Ordering::AcqRel);
        while !d.load(Ordering::Acquire) {
            if rayon::yield_now() == Some(rayon::Yield::Idle) {
                std::thread::yield_now();
            }
        }
        INSIDE.set(was);
    });
    INSIDE.set(true);
    // This thread's own copy of the broadcast waits in its queue until it next looks for work
    // (it returns at once); the others start theirs now, the pool having nothing else to do.
    while started.load(Ordering::Acquire) < threads - 1 {
        std::thread::yield_now();
    }
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// One test at a time: a [`kept_busy`] of one test would make another's plain calls.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Whether each of the pool's workers is inside a loop of [`kept_busy`] (run on each).
    fn inside(pool: &rayon::ThreadPool) -> Vec<bool> {
        pool.broadcast(|_| INSIDE.get())
    }

    /// Waits until no worker of `pool` is inside a loop any more (false after 10 s).
    fn loops_end(pool: &rayon::ThreadPool) -> bool {
        let start = Instant::now();
        while inside(pool).contains(&true) {
            if start.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    #[test]
    fn every_worker_loops_through_the_closure_and_stops_after_it() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool(3);
        let during = pool.install(|| kept_busy(|| inside(&pool)));
        assert_eq!(during, [true; 3]);
        assert!(
            loops_end(&pool),
            "a worker still loops after kept_busy returned"
        );
        // A closure that panics ends the loops too, and the next call keeps the workers again.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| kept_busy(|| panic!("the closure's own panic")))
        }));
        assert!(caught.is_err());
        assert!(loops_end(&pool), "a worker still loops after a panic");
        assert_eq!(pool.install(|| kept_busy(|| inside(&pool))), [true; 3]);
        assert!(loops_end(&pool));
    }

    #[test]
    fn the_looping_workers_take_the_pool_s_work() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Inside, the caller's own parallel loops run on every worker: the loops take them.
        let pool = pool(3);
        let workers: std::collections::BTreeSet<usize> = pool.install(|| {
            kept_busy(|| {
                (0..64)
                    .into_par_iter()
                    .map(|_| {
                        std::thread::sleep(Duration::from_micros(200));
                        rayon::current_thread_index().unwrap()
                    })
                    .collect()
            })
        });
        assert_eq!(workers.len(), 3, "the 64 tasks ran on {workers:?}");
        assert!(loops_end(&pool));
    }

    #[test]
    fn many_short_calls_each_starting_with_a_parallel_loop_end() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Liveness over many calls, each followed at once by parallel work. (The handshake's
        // hazard, a worker meeting its loop inside a task, is a race this does not provoke
        // reliably: without the handshake it passes too; dem-run's steps hung at once.)
        let pool = pool(2);
        // Tasks of 2 us, so that the workers split, steal and wait inside each other's tasks.
        let task = |i: usize| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_micros(2) {}
            i
        };
        pool.install(|| {
            for _ in 0..2000 {
                let y: Vec<usize> = kept_busy(|| (0..64).into_par_iter().map(task).collect());
                assert_eq!(y[63], 63);
            }
        });
        assert!(loops_end(&pool));
    }

    #[test]
    fn nested_concurrent_outside_and_one_thread_calls_only_call() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(kept_busy(|| 7), 7);
        assert_eq!(pool(1).install(|| kept_busy(|| 8)), 8);
        let pool = pool(2);
        // Nested in the closure, and in the tasks the loops run.
        let sum: usize = pool.install(|| {
            kept_busy(|| {
                (0..64)
                    .into_par_iter()
                    .map(|i| kept_busy(|| kept_busy(|| i)))
                    .sum()
            })
        });
        assert_eq!(sum, 2016);
        // Two callers at once on one pool: the second only calls (it would wait forever for
        // the first's workers to start its loops).
        let (a, b) = pool.install(|| rayon::join(|| kept_busy(|| 1), || kept_busy(|| 2)));
        assert_eq!((a, b), (1, 2));
        assert!(loops_end(&pool));
    }
}
