//! Degenerate movements (docs/jaeger.md sections 4.5, 8.4, 11.6) give finite, correct forces.

use jaeger::{ContactParams, JaegerContact};

fn contact(mu: f64) -> JaegerContact {
    JaegerContact::new(ContactParams::new(1.0, 1.0, 1.0, 0.3, mu).unwrap())
}

#[test]
fn normal_loading_and_unloading_without_tangential_movement_keeps_t_zero() {
    // Section 4.5: a literal port of Kuhn's DEMPLA returns NaN here (0/0 slope).
    let mut c = contact(0.4);
    for d in [1e-3, 2e-3, 3e-3, 2.5e-3, 1e-3, 2e-3, 0.5e-3] {
        let f = c.step(d, [0.0, 0.0]);
        assert_eq!(f.tangential, [0.0, 0.0], "at delta {d}");
        assert_eq!(f.normal, c.params().normal_force(d));
    }
    // Unloading cuts the history at the new overlap: only legs below it remain.
    let legs = c.parts().0.history(c.parts().1);
    assert!(
        legs.iter()
            .all(|l| l.overlap <= 0.5e-3 && l.slope == [0.0, 0.0]),
        "{legs:?}"
    );
}

#[test]
fn frictionless_contact_has_no_tangential_force() {
    let mut c = contact(0.0);
    for (d, du) in [
        (1e-3, [0.0, 0.0]),
        (2e-3, [1e-4, 0.0]),
        (1.5e-3, [-3e-4, 2e-4]),
        (1.5e-3, [1e-4, 1e-4]),
    ] {
        let f = c.step(d, du);
        assert_eq!(f.tangential, [0.0, 0.0]);
        assert!(f.normal > 0.0);
    }
}

#[test]
fn loss_of_contact_and_recontact_start_afresh() {
    let mut c = contact(0.4);
    c.step(1e-3, [0.0, 0.0]);
    c.step(1e-3, [2e-4, 0.0]);
    let f = c.step(-1e-4, [1.0, 1.0]);
    assert_eq!(
        (f.normal, f.tangential, c.history_len()),
        (0.0, [0.0, 0.0], 0)
    );
    // A fresh contact reproduces the first one's forces.
    let mut fresh = contact(0.4);
    for (d, du) in [
        (1e-3, [0.0, 0.0]),
        (1e-3, [2e-4, 0.0]),
        (1.2e-3, [-1e-4, 1e-4]),
    ] {
        assert_eq!(c.step(d, du), fresh.step(d, du));
    }
}

#[test]
fn continuing_along_a_slip_leg_extends_it() {
    // The new point lies on the top slip leg's line beyond its end: the apex formula returns a
    // point past the top (section 11.6); the kernel takes the top point, which gives the exact
    // gross-sliding force, T = mu N.
    let p = ContactParams::new(1.0, 1.0, 1.0, 0.3, 0.4).unwrap();
    let mut c = JaegerContact::new(p);
    let d = 1e-3;
    let s_slip = 0.4 * p.kappa() * d;
    c.step(d, [0.0, 0.0]);
    c.step(d, [1.5 * s_slip, 0.0]); // gross sliding: one slip leg of slope mu
    let slope = 0.4 * p.kappa(); // along the slip leg: du/d(delta) = mu kappa
    for k in 1..=3 {
        let f = c.step(d + k as f64 * 1e-4, [slope * 1e-4, 0.0]);
        let mu_n = 0.4 * f.normal;
        assert!((f.tangential[0] - mu_n).abs() <= 1e-12 * mu_n, "{f:?}");
        assert!(f.tangential.iter().all(|x| x.is_finite()));
    }
}

/// Issue #23: a finite but huge tangential displacement slides the contact fully: `|T| = mu N`
/// along it (Coulomb), for steps up to the largest finite numbers, in any direction. `|du|^2`
/// overflows past 1e154; the force used to come out zero.
#[test]
fn huge_tangential_displacements_slide_at_mu_n() {
    let mu = 0.4;
    for size in [1e3, 1e160, 1e300, f64::MAX / 2.0] {
        for dir in [[1.0, 0.0], [0.6, -0.8], [-1.0, 1.0]] {
            let mut c = contact(mu);
            c.step(1e-3, [0.0, 0.0]);
            let f = c.step(1e-3, [dir[0] * size, dir[1] * size]);
            let t = f.tangential[0].hypot(f.tangential[1]);
            assert!(
                (t - mu * f.normal).abs() <= 1e-12 * mu * f.normal,
                "|du| {size:e} along {dir:?}: |T| {t:e}, mu N {:e}",
                mu * f.normal
            );
            let along =
                (f.tangential[0] * dir[0] + f.tangential[1] * dir[1]) / dir[0].hypot(dir[1]);
            assert!(
                (along - t).abs() <= 1e-12 * t,
                "{:?} vs {dir:?}",
                f.tangential
            );
        }
    }
}
