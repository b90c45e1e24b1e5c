//! The kernel against the closed forms of Cattaneo, Mindlin and Deresiewicz (docs/jaeger.md section 8,
//! derived there from the theory and independent of this code), each branch taken in large steps
//! (1 to 4 steps for a whole branch) and in small ones (1000 steps).
//!
//! Error measure: |T - T_ref| / (mu N), the tangential force error as a fraction of the friction
//! limit (T itself vanishes at the start of a branch, where a relative error is meaningless).
//! Acceptance: 1e-12.

use jaeger::{ContactParams, JaegerContact};

const TOL: f64 = 1e-12;
const MU: f64 = 0.4;
const NU: f64 = 0.25;

fn params() -> ContactParams {
    ContactParams::new(2.0e-3, 1.0e-3, 29.0e9, NU, MU).unwrap()
}

/// `1 - (1 - x)^(3/2)` without cancellation for small x.
fn one_minus_pow(x: f64) -> f64 {
    -(1.5 * (-x).ln_1p()).exp_m1()
}

/// A contact pressed to total overlap `d` with no tangential movement.
fn pressed(d: f64) -> JaegerContact {
    let mut c = JaegerContact::new(params());
    c.step(d, [0.0, 0.0]);
    c
}

/// Steps the tangential displacement (along the unit `dir`) from `s0` to `s1` in `n` equal steps
/// at fixed overlap; checks `T` against `reference(s)` after each step.
fn tangential_branch(
    c: &mut JaegerContact,
    d: f64,
    s0: f64,
    s1: f64,
    n: usize,
    dir: [f64; 2],
    reference: impl Fn(f64) -> f64,
) {
    let mu_n = MU * c.params().normal_force(d);
    for k in 1..=n {
        let (a, b) = (
            s0 + (s1 - s0) * (k - 1) as f64 / n as f64,
            s0 + (s1 - s0) * k as f64 / n as f64,
        );
        let f = c.step(d, [(b - a) * dir[0], (b - a) * dir[1]]);
        let t_ref = reference(b);
        let err =
            ((f.tangential[0] - t_ref * dir[0]).hypot(f.tangential[1] - t_ref * dir[1])) / mu_n;
        assert!(
            err <= TOL,
            "n = {n}, step {k}, s = {b}: T = {:?}, reference {t_ref}, error {err:e}",
            f.tangential
        );
    }
}

#[test]
fn cattaneo_mindlin_monotonic_loading() {
    let d = 2.0e-6;
    let p = params();
    let (n, s_slip) = (p.normal_force(d), MU * p.kappa() * d);
    let t_cm = |s: f64| {
        if s < s_slip {
            MU * n * one_minus_pow(s / s_slip)
        } else {
            MU * n
        }
    };
    let dir = [0.6, -0.8];
    for steps in [1, 2, 3, 4, 1000] {
        let mut c = pressed(d);
        tangential_branch(&mut c, d, 0.0, 0.9 * s_slip, steps, dir, t_cm);
        // On to gross sliding and beyond: T stays at mu N.
        tangential_branch(&mut c, d, 0.9 * s_slip, 1.5 * s_slip, steps, dir, t_cm);
    }
}

#[test]
fn masing_unloading_and_reloading() {
    let d = 2.0e-6;
    let p = params();
    let (n, s_slip) = (p.normal_force(d), MU * p.kappa() * d);
    let s_star = 0.7 * s_slip;
    let t_star = MU * n * one_minus_pow(s_star / s_slip);
    let unload = |s: f64| t_star - 2.0 * MU * n * one_minus_pow((s_star - s) / (2.0 * s_slip));
    let reload = |s: f64| -t_star + 2.0 * MU * n * one_minus_pow((s + s_star) / (2.0 * s_slip));
    for steps in [1, 2, 4, 1000] {
        let mut c = pressed(d);
        tangential_branch(&mut c, d, 0.0, s_star, steps, [1.0, 0.0], |s| {
            MU * n * one_minus_pow(s / s_slip)
        });
        tangential_branch(&mut c, d, s_star, 0.0, steps, [1.0, 0.0], unload);
        // Mid-unloading: stick, loading slip and unloading slip legs (docs/jaeger.md 8.2).
        assert_eq!(c.history_len(), 3, "{steps} steps");
        tangential_branch(&mut c, d, 0.0, -s_star, steps, [1.0, 0.0], unload);
        tangential_branch(&mut c, d, -s_star, s_star, steps, [1.0, 0.0], reload);
        // A full reload wipes out the unloading leg: the next unloading repeats the first.
        tangential_branch(&mut c, d, s_star, -s_star, steps, [1.0, 0.0], unload);
        // Unloading from s* to -s* puts its apex exactly at the loading apex (zeta (1 - s*/S)):
        // the loading slip leg is wiped, leaving the stick leg and the unloading slip leg.
        assert_eq!(c.history_len(), 2, "{steps} steps");
    }
}

/// Gauss-Legendre nodes and weights on [-1, 1] (Newton on the Legendre recurrence).
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (1..=n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
            let mut dp = 0.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let k = k as f64;
                    (p0, p1) = (p1, ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k);
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

#[test]
fn energy_lost_per_masing_cycle() {
    // W = closed integral of T ds over the cycle +-s* (docs/jaeger.md 8.2). T on each branch is taken
    // from the kernel in ONE step from the branch's start (steps of any size are exact), at the
    // nodes of a 24-point Gauss rule: the integrand is smooth, so the rule is exact to round-off.
    let d = 2.0e-6;
    let p = params();
    let (n, s_slip) = (p.normal_force(d), MU * p.kappa() * d);
    let s_star = 0.7 * s_slip;
    let t_star = MU * n * one_minus_pow(s_star / s_slip);
    let r: f64 = 1.0 - s_star / s_slip;
    let w_ref =
        8.0 * MU * n * (s_star - 0.4 * s_slip * (1.0 - r.powf(2.5))) - 4.0 * t_star * s_star;

    let mut loaded = pressed(d);
    loaded.step(d, [s_star, 0.0]);
    let mut unloaded = loaded.clone();
    unloaded.step(d, [-2.0 * s_star, 0.0]);
    let rule = gauss_legendre(24);
    let branch = |start: &JaegerContact, from: f64, to: f64| -> f64 {
        let (mid, half) = (0.5 * (from + to), 0.5 * (to - from));
        rule.iter()
            .map(|&(x, w)| {
                let s = mid + half * x;
                let mut c = start.clone();
                w * half * c.step(d, [s - from, 0.0]).tangential[0]
            })
            .sum()
    };
    let w = branch(&loaded, s_star, -s_star) + branch(&unloaded, -s_star, s_star);
    let err = (w / w_ref - 1.0).abs();
    assert!(
        err <= TOL,
        "W = {w:e}, reference {w_ref:e}, relative error {err:e}"
    );
}

#[test]
fn proportional_loading_then_unloading() {
    // docs/jaeger.md 8.3: load along s = K1 d to d*, unload along s = s* - K2 (d* - d).
    let p = params();
    let kappa = p.kappa();
    let (k1, d_star) = (0.5 * MU * kappa, 2.0e-6);
    let s_star = k1 * d_star;
    for k2 in [k1, 0.0, -k1, 2.0 * k1, 0.9 * MU * kappa] {
        let reference = |d: f64| -> f64 {
            if k2 == k1 {
                return k1 / kappa * p.normal_force(d);
            }
            let delta = (k1 - k2) * (d_star - d);
            let (u, sigma) = if delta >= 0.0 {
                (delta / (MU * kappa - k1), 1.0)
            } else {
                (-delta / (MU * kappa + k1), -1.0)
            };
            let d_a = d - u;
            if d_a <= 0.0 {
                sigma * MU * p.normal_force(d)
            } else {
                k1 / kappa * p.normal_force(d_a)
                    + sigma * MU * (p.normal_force(d) - p.normal_force(d_a))
            }
        };
        for steps in [1, 2, 4, 1000] {
            let mut c = JaegerContact::new(p);
            for k in 1..=steps {
                let d = d_star * k as f64 / steps as f64;
                let f = c.step(d, [k1 * d_star / steps as f64, 0.0]);
                let err = (f.tangential[0] - k1 / kappa * f.normal).abs() / (MU * f.normal);
                assert!(
                    err <= TOL && f.tangential[1] == 0.0,
                    "loading, {steps} steps: {err:e}"
                );
            }
            // Unload to 5 % of d*: deep enough for gross slip in the steeper cases.
            let d_end = 0.05 * d_star;
            let mut prev_s = s_star;
            for k in 1..=steps {
                let d = d_star + (d_end - d_star) * k as f64 / steps as f64;
                let s = s_star - k2 * (d_star - d);
                let f = c.step(d, [s - prev_s, 0.0]);
                prev_s = s;
                let err = (f.tangential[0] - reference(d)).abs() / (MU * f.normal);
                assert!(
                    err <= TOL,
                    "K2 = {k2}, {steps} steps, step {k}: T = {}, reference {}, {err:e}",
                    f.tangential[0],
                    reference(d)
                );
            }
        }
    }
}
