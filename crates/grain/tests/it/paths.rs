//! The path rule shared by the baker and the solver ([`grain::path_weights`], docs/physics.md
//! section 1), against closed forms.

use grain::{path_displacement, path_weights};

/// `u(eps)` and `du/d eps` of a scalar path with point values `u` at `amplitudes`.
fn path(amplitudes: &[f64], u: &[f64], eps: f64) -> (f64, f64) {
    (path_weights(amplitudes, eps).iter()).fold((0.0, 0.0), |(v, t), &(p, c, d)| {
        (v + c * u[p], t + d * u[p])
    })
}

#[test]
fn a_quadratic_path_is_reproduced_exactly_with_its_slope() {
    // u = 0.7 eps - 0.4 eps^2 through uneven points: the Hermite interpolant with the parabolas'
    // tangents is exact for it, inside and at the points (beyond them it continues linearly).
    let q = |e: f64| 0.7 * e - 0.4 * e * e;
    let dq = |e: f64| 0.7 - 0.8 * e;
    let amplitudes = [0.3, 0.5, 1.2, 1.3, 2.0];
    let u: Vec<f64> = amplitudes.iter().map(|e| q(*e)).collect();
    for i in 0..=400 {
        let eps = 2.0 * i as f64 / 400.0;
        let (v, t) = path(&amplitudes, &u, eps);
        assert!((v - q(eps)).abs() < 1e-14, "{eps}: {v} against {}", q(eps));
        assert!(
            (t - dq(eps)).abs() < 1e-13,
            "{eps}: {t} against {}",
            dq(eps)
        );
    }
    // Beyond the ends, along the end tangents.
    for eps in [-0.5, -0.01, 2.01, 3.0] {
        let end = if eps < 0.0 { 0.0 } else { 2.0 };
        let (v, t) = path(&amplitudes, &u, eps);
        assert!((t - dq(end)).abs() < 1e-13);
        assert!((v - q(end) - (eps - end) * dq(end)).abs() < 1e-13);
    }
}

#[test]
fn any_path_passes_through_its_points_and_its_tangent_is_continuous() {
    // An irregular path, its tangent checked against finite differences of the displacement
    // on either side of every point: C1 (a piecewise linear path's tangent jumps there by the
    // slopes' difference, here up to 3.6).
    let amplitudes = [0.2, 0.9, 1.0, 1.7];
    let u = [0.5, -0.3, 0.4, 0.45];
    for (p, &e) in amplitudes.iter().enumerate() {
        assert!((path(&amplitudes, &u, e).0 - u[p]).abs() < 1e-15);
    }
    for &e in [0.0].iter().chain(&amplitudes) {
        let h = 1e-9;
        let (below, above) = (path(&amplitudes, &u, e - h), path(&amplitudes, &u, e + h));
        assert!((above.1 - below.1).abs() < 1e-6, "tangent jumps at {e}");
        let fd = (above.0 - below.0) / (2.0 * h);
        assert!((fd - path(&amplitudes, &u, e).1).abs() < 1e-6, "at {e}");
    }
    // path_displacement is the same sum.
    assert_eq!(
        path_displacement(&amplitudes, 0.95, |p| u[p]),
        path(&amplitudes, &u, 0.95).0
    );
}

#[test]
fn a_single_point_is_a_linear_mode() {
    let (v, t) = path(&[1.0], &[2.5], -0.3);
    assert_eq!((v, t), (-0.3 * 2.5, 2.5));
    let (v, t) = path(&[0.5], &[2.0], 0.2);
    assert_eq!((v, t), (0.2 / 0.5 * 2.0, 2.0 / 0.5 * 1.0));
}
