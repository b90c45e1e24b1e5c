//! The shared arena: contacts interleaved in one store behave exactly as contacts run alone; the
//! store grows when full, stops growing in steady state, and straightens on request.

use jaeger::{ContactFrame, ContactParams, ContactState, HistoryStore, JaegerContact};
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

fn params(k: usize) -> ContactParams {
    // Different radii per contact: polydisperse packings share one store.
    ContactParams::new(1.0 + 0.1 * (k % 7) as f64, 0.8, 1.0, 0.22, 0.45).unwrap()
}

fn rng(seed: u64) -> XorShiftRng {
    XorShiftRng::seed_from_u64(seed)
}

/// The movement of contact `k` at its own step `i`: (overlap, du). Deterministic per (k, i), so
/// the same contact sees the same movements wherever it runs.
fn movement(k: usize, i: usize) -> (f64, [f64; 2]) {
    let mut r = rng(((k as u64) << 32) + i as u64);
    let t = i as f64;
    let opens = r.random::<f64>() < 0.03;
    let delta = 1e-3 * (1.0 + 0.5 * (0.3 * t + k as f64).sin()) - if opens { 2e-3 } else { 0.0 };
    (
        delta,
        [
            2e-4 * (r.random::<f64>() - 0.5),
            2e-4 * (r.random::<f64>() - 0.5),
        ],
    )
}

#[test]
fn interleaved_contacts_match_contacts_run_alone_bit_for_bit() {
    const CONTACTS: usize = 60;
    const STEPS: usize = 200;
    // Alone: one JaegerContact each.
    let alone: Vec<Vec<(f64, [f64; 2])>> = (0..CONTACTS)
        .map(|k| {
            let mut c = JaegerContact::new(params(k));
            (0..STEPS)
                .map(|i| {
                    let (delta, du) = movement(k, i);
                    let f = c.step(delta, du);
                    (f.normal, f.tangential)
                })
                .collect()
        })
        .collect();

    // Together: one store, contacts started, stepped and deleted in a shuffled order.
    let mut store = HistoryStore::with_capacity(1);
    let mut states = vec![ContactState::new(); CONTACTS];
    let mut done = vec![0usize; CONTACTS];
    let mut got: Vec<Vec<(f64, [f64; 2])>> = vec![Vec::new(); CONTACTS];
    let mut order = rng(0xdead_beef);
    while done.iter().any(|&d| d < STEPS) {
        let k = order.random_range(0..CONTACTS);
        if done[k] == STEPS {
            continue;
        }
        let (delta, du) = movement(k, done[k]);
        let f = store.step(&params(k), &mut states[k], delta, du);
        got[k].push((f.normal, f.tangential));
        done[k] += 1;
        if done[k] == STEPS {
            store.release(&mut states[k]); // the contact is deleted: its legs are reused
        }
    }
    for k in 0..CONTACTS {
        assert_eq!(got[k], alone[k], "contact {k}");
    }
    assert!(store.is_empty());
}

#[test]
fn store_grows_when_full_then_stops_growing_in_steady_state() {
    let mut store = HistoryStore::with_capacity(1);
    let mut states = vec![ContactState::new(); 20];
    let mut capacity_after = Vec::new();
    for cycle in 0..6 {
        for i in 0..100 {
            for (k, s) in states.iter_mut().enumerate() {
                let (delta, du) = movement(k, i);
                store.step(&params(k), s, delta, du);
            }
        }
        // Every contact separates, and the next cycle starts again from nothing.
        for s in &mut states {
            store.release(s);
        }
        assert!(store.is_empty(), "cycle {cycle}");
        capacity_after.push(store.capacity());
    }
    assert!(capacity_after[0] > 1, "the store never grew");
    // The same movements need the same room: no growth (no allocation) after the first cycle.
    assert!(
        capacity_after.windows(2).all(|w| w[0] == w[1]),
        "{capacity_after:?}"
    );
}

#[test]
fn straighten_keeps_every_force_and_frees_the_history() {
    let mut store = HistoryStore::with_capacity(8);
    let ps: Vec<ContactParams> = (0..10).map(params).collect();
    let mut states = vec![ContactState::new(); 10];
    let mut last = [[0.0; 2]; 10];
    for i in 0..300 {
        for k in 0..10 {
            let (delta, du) = movement(k, i);
            // Keep every contact closed so that each has a long history to straighten.
            last[k] = store
                .step(&ps[k], &mut states[k], delta.abs().max(1e-4), du)
                .tangential;
        }
    }
    // Histories of several legs, some of them in the arena (beyond HELD_LEGS).
    let before: usize = states.iter().map(|s| store.history_len(s)).sum();
    assert!(
        before >= 2 * 10 && !store.is_empty(),
        "histories too short to test: {before}, {} in the arena",
        store.len()
    );
    store.straighten(ps.iter().zip(states.iter_mut()));
    // One leg per contact, kept in the contact state: the arena is empty.
    assert!(store.is_empty());
    for k in 0..10 {
        assert_eq!(store.history_len(&states[k]), 1);
        assert_eq!(states[k].tangential_force(), last[k]);
        // A step with no movement returns the same force.
        let delta = store.history(&states[k])[0].overlap;
        let f = store.step(&ps[k], &mut states[k], delta, [0.0, 0.0]);
        assert_eq!(f.tangential, last[k]);
        // The straightened leg reproduces the force: T = p N.
        let p = store.history(&states[k])[0].slope;
        let n = ps[k].normal_force(delta);
        assert!(
            (p[0] * n - last[k][0]).abs() <= 1e-15 * n
                && (p[1] * n - last[k][1]).abs() <= 1e-15 * n
        );
    }
}

/// Rodrigues' rotation of `v` by the rotation vector `w` (an independent reference for the frame).
fn rodrigues(v: [f64; 3], w: [f64; 3]) -> [f64; 3] {
    let angle = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
    if angle == 0.0 {
        return v;
    }
    let k = [w[0] / angle, w[1] / angle, w[2] / angle];
    let (c, s) = (angle.cos(), angle.sin());
    let kv = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
    let kxv = [
        k[1] * v[2] - k[2] * v[1],
        k[2] * v[0] - k[0] * v[2],
        k[0] * v[1] - k[1] * v[0],
    ];
    [0, 1, 2].map(|i| v[i] * c + kxv[i] * s + k[i] * kv * (1.0 - c))
}

#[test]
fn loaded_pair_tumbling_and_twirling_as_one_body_carries_its_force() {
    let p = params(0);
    let mut c = JaegerContact::new(p);
    let delta = 1e-3;
    c.step(delta, [0.0, 0.0]);
    let loaded = c.step(delta, [3e-4, -1e-4]);
    let mut n = [0.48, -0.6, 0.64];
    let mut frame = ContactFrame::new(n);
    let mut t_ref = frame.to_global(loaded.tangential);
    let magnitude = loaded.tangential[0].hypot(loaded.tangential[1]);
    let mut r = rng(7);
    for _ in 0..2000 {
        let spin = [0.0; 3].map(|_: f64| 0.2 * (r.random::<f64>() - 0.5));
        n = rodrigues(n, spin);
        t_ref = rodrigues(t_ref, spin);
        frame.update(n, spin, spin);
        // Glued: the contact points move together, so the relative displacement is zero.
        let du = frame.to_local([0.0; 3]);
        let f = c.step(delta, du);
        let t = frame.to_global(f.tangential);
        let err = (0..3).map(|i| (t[i] - t_ref[i]).abs()).fold(0.0, f64::max);
        assert!(err <= 1e-9 * magnitude, "{t:?} vs {t_ref:?}");
        assert!((f.tangential[0].hypot(f.tangential[1]) - magnitude).abs() <= 1e-15 * magnitude);
    }
}
