//! Invariants of the equivalent history on long random 2-D histories (docs/jaeger.md section 3.3-3.4),
//! and the exact reversal of an elastic step (section 8.4).

use jaeger::{ContactParams, ContactState, HELD_LEGS, HistoryStore, JaegerContact, Leg};
use proptest::prelude::*;

const MU: f64 = 0.35;

fn params() -> ContactParams {
    ContactParams::new(1.0, 0.7, 1.0, 0.2, MU).unwrap()
}

/// One random step: overlap change and tangential increment, in units of a reference overlap.
fn step_strategy() -> impl Strategy<Value = (f64, f64, f64)> {
    (-1.0f64..1.2, -1.0f64..1.0, -1.0f64..1.0)
}

/// Checks the invariants of section 3.3-3.4 on a history; `t` is the returned force.
fn check(legs: &[Leg], p: &ContactParams, n: f64, t: [f64; 2]) -> Result<(), TestCaseError> {
    let mu_n = MU * n;
    let t_norm = t[0].hypot(t[1]);
    prop_assert!(
        t_norm <= mu_n * (1.0 + 1e-12),
        "|T| = {t_norm} > mu N = {mu_n}"
    );
    // Legs from the first (bottom) up: strictly increasing indentations, slopes within mu.
    let mut sum = [0.0, 0.0];
    let mut below = (0.0, 0.0);
    for leg in legs.iter().rev() {
        prop_assert!(
            leg.overlap > below.0,
            "indentations not increasing: {legs:?}"
        );
        let slope = leg.slope[0].hypot(leg.slope[1]);
        prop_assert!(slope <= MU * (1.0 + 1e-12), "slope {slope} > mu");
        let n_k = p.normal_force(leg.overlap);
        sum[0] += leg.slope[0] * (n_k - below.1);
        sum[1] += leg.slope[1] * (n_k - below.1);
        below = (leg.overlap, n_k);
    }
    // T = sum_k p_k (N_k - N_(k-1)) (section 3.4), to round-off of the incremental updates.
    let err = (sum[0] - t[0]).hypot(sum[1] - t[1]);
    prop_assert!(
        err <= 1e-11 * mu_n.max(f64::MIN_POSITIVE),
        "T = {t:?} but the history sums to {sum:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_histories_keep_the_invariants(
        steps in prop::collection::vec(step_strategy(), 1..400),
        scale in 0.05f64..3.0,
        pdif in prop_oneof![Just(0.0), 0.0f64..0.3],
    ) {
        let p = params().with_approximation(pdif).unwrap();
        let mut store = HistoryStore::with_capacity(4);
        let mut state = ContactState::new();
        // The same movement through the one-contact wrapper, whose count of legs is O(1).
        let mut single = JaegerContact::new(p);
        let d0 = 1e-3;
        let mut delta = 0.0f64;
        for (dd, ux, uy) in steps {
            // A drift upward keeps most contacts closed; some steps open them.
            delta = (delta + 0.3 * d0 * dd).max(-0.1 * d0);
            let du = [scale * 0.1 * d0 * ux, scale * 0.1 * d0 * uy];
            let f = store.step(&p, &mut state, delta, du);
            let legs = store.history(&state);
            if delta <= 0.0 {
                prop_assert!(legs.is_empty() && f.tangential == [0.0, 0.0] && f.normal == 0.0);
            } else {
                prop_assert_eq!(f.normal, p.normal_force(delta));
                check(&legs, &p, f.normal, f.tangential)?;
            }
            // The contact state holds the top legs, at least two while the arena holds any and
            // at most HELD_LEGS; the arena holds the rest.
            let held = legs.len() - store.len();
            prop_assert!(held <= HELD_LEGS && (held >= 2 || store.is_empty()), "{held} held");
            prop_assert_eq!(single.step(delta, du), f);
            prop_assert_eq!(single.history_len(), legs.len());
        }
    }

    #[test]
    fn an_elastic_step_and_its_reverse_restore_the_state(
        steps in prop::collection::vec(step_strategy(), 0..60),
        forward in (0.01f64..1.0, -1.0f64..1.0, -1.0f64..1.0),
    ) {
        let p = params();
        let mut c = JaegerContact::new(p);
        let d0 = 1e-3;
        let mut delta = d0;
        c.step(delta, [0.0, 0.0]);
        for (dd, ux, uy) in steps {
            delta = (delta + 0.2 * d0 * dd).max(0.2 * d0);
            c.step(delta, [0.05 * d0 * ux, 0.05 * d0 * uy]);
        }
        let before = c.clone();
        let (store0, state0) = before.parts();
        // An elastic step: |du| < mu kappa d(delta) (section 4.1).
        let dd = 0.1 * d0 * forward.0;
        let room = 0.99 * MU * p.kappa() * dd;
        let du = [room * forward.1 / 2f64.sqrt(), room * forward.2 / 2f64.sqrt()];
        c.step(delta + dd, du);
        prop_assert_eq!(c.history_len(), store0.history_len(state0) + 1, "the step was not elastic");
        let back = c.step(delta, [-du[0], -du[1]]);
        let (store1, state1) = c.parts();
        // The history is restored bit for bit.
        prop_assert_eq!(store1.history(state1), store0.history(state0));
        // The force is restored to round-off: T_old + dT - dT is not always T_old in floating
        // point, and the 28-byte entries keep no copy of past forces.
        let t0 = state0.tangential_force();
        let err = (back.tangential[0] - t0[0]).hypot(back.tangential[1] - t0[1]);
        prop_assert!(err <= 4.0 * f64::EPSILON * MU * back.normal, "T {:?} vs {:?}", back.tangential, t0);
        prop_assert_eq!(back.normal, p.normal_force(delta));
    }
}

/// The approximate history's merges that reach below the held legs: a merge into the leg below
/// the top reads the leg under that one, which sits in the arena when the state holds two legs,
/// and the pop that follows brings legs back from the arena. On histories of mostly elastic
/// loading with a slowly turning direction (so that consecutive slopes are close and merge),
/// every step keeps the invariants, among them `T = sum p_k (N_k - N_(k-1))`, which a merge
/// weighted with a wrong `N_k` breaks; the test counts the elastic steps whose merges reached a
/// leg in the arena, and requires them.
#[test]
fn merges_that_reach_into_the_arena_keep_the_invariants() {
    use rand::{RngExt, SeedableRng};
    let mut reached = 0;
    for seed in 0..40u64 {
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed);
        let p = params()
            .with_approximation(rng.random_range(0.05..0.3))
            .unwrap();
        let mut store = HistoryStore::with_capacity(4);
        let mut state = ContactState::new();
        let (d0, mut delta, mut angle) = (1e-3, 0.0f64, 0.0f64);
        for _ in 0..1500 {
            angle += rng.random_range(-0.6..0.6);
            let unload = rng.random_range(0..6) == 0;
            let dd = if unload {
                -rng.random_range(0.0..0.5)
            } else {
                rng.random_range(0.01..0.2)
            };
            let mag = rng.random_range(0.0..1.0) * if unload { 0.2 } else { 0.05 };
            let before = (state.held_legs(), store.len(), store.history_len(&state));
            delta = (delta + 0.3 * d0 * dd).max(1e-6);
            let f = store.step(
                &p,
                &mut state,
                delta,
                [mag * d0 * angle.cos(), mag * d0 * angle.sin()],
            );
            let legs = store.history(&state);
            check(&legs, &p, f.normal, f.tangential).unwrap();
            let elastic = f.tangential[0].hypot(f.tangential[1]) < MU * f.normal * (1.0 - 1e-9);
            // An elastic step pushes a leg onto `h` held ones; its merges read the arena from
            // the `h`-th, which leaves the history `h - 1` legs shorter than before.
            let shorter = before.2 as i64 - legs.len() as i64;
            if !unload && elastic && before.1 > 0 && shorter >= before.0 as i64 - 1 {
                reached += 1;
            }
        }
    }
    assert!(reached >= 10, "{reached} merges reached into the arena");
}
