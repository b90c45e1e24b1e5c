//! The generalized internal force of a one-mode grain as a table (PHYSICS.md section 7; paper
//! Section 4.2, Eqs. 56 and 58), from FEM strain energies or from reaction forces.
//!
//! Both fits tabulate at the snapshots' amplitudes `eps_i` (sorted, with the origin added):
//! - energy fit (Eq. 56): the table passes through `(eps_i, U_i)` (the least-squares minimum of a
//!   tabulation is the interpolant), and the force is the derivative of the monotone piecewise
//!   cubic (Fritsch-Carlson) interpolant of the energy;
//! - reaction-force fit (Eq. 58): the generalized force of each snapshot by virtual work,
//!   `F_i = sum over loaded boundaries of R_i . du/d eps` (the derivative from the boundary
//!   displacements across snapshots), interpolated by a monotone cubic whose exact integral is
//!   the energy.
//!
//! The energy fit differentiates data, so its force is least accurate near the origin: on
//! uniform samples of spacing `h` the slope of a quadratic energy is off by `(h / 2x)^2`.
//! The stored law interpolates the force with the same monotone cubic
//! ([`grain::TableInterpolation::MonotoneCubic`]).

use grain::ForceTable;

/// Fritsch-Carlson slopes of the monotone piecewise cubic Hermite interpolant through
/// `(x_i, y_i)` (x strictly increasing): harmonic means of neighbouring secants where they
/// agree in sign, zero at extrema, one-sided three-point formulas at the ends (limited).
pub fn monotone_slopes(x: &[f64], y: &[f64]) -> Vec<f64> {
    let n = x.len();
    let h: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let delta: Vec<f64> = (0..n - 1).map(|i| (y[i + 1] - y[i]) / h[i]).collect();
    if n == 2 {
        return vec![delta[0]; 2];
    }
    let mut d = vec![0.0; n];
    for i in 1..n - 1 {
        if delta[i - 1] * delta[i] > 0.0 {
            let (w1, w2) = (2.0 * h[i] + h[i - 1], h[i] + 2.0 * h[i - 1]);
            d[i] = (w1 + w2) / (w1 / delta[i - 1] + w2 / delta[i]);
        }
    }
    let end = |h0: f64, h1: f64, d0: f64, d1: f64| {
        let s = ((2.0 * h0 + h1) * d0 - h0 * d1) / (h0 + h1);
        if s * d0 <= 0.0 {
            0.0
        } else if d0 * d1 <= 0.0 && s.abs() > 3.0 * d0.abs() {
            3.0 * d0
        } else {
            s
        }
    };
    d[0] = end(h[0], h[1], delta[0], delta[1]);
    d[n - 1] = end(h[n - 2], h[n - 3], delta[n - 2], delta[n - 3]);
    d
}

/// Exact integrals of the cubic Hermite interpolant from `x_0` to each `x_i`.
fn hermite_integrals(x: &[f64], y: &[f64], d: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0];
    for i in 0..x.len() - 1 {
        let h = x[i + 1] - x[i];
        let piece = 0.5 * h * (y[i] + y[i + 1]) + h * h / 12.0 * (d[i] - d[i + 1]);
        out.push(out[i] + piece);
    }
    out
}

/// Sorted sample points with the origin added (the undeformed state, zero force and energy).
fn with_origin(eps: &[f64], values: &[f64]) -> Result<(Vec<f64>, Vec<f64>), String> {
    let mut pairs: Vec<(f64, f64)> = eps.iter().copied().zip(values.iter().copied()).collect();
    if !pairs.iter().any(|p| p.0 == 0.0) {
        pairs.push((0.0, 0.0));
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pairs.windows(2).any(|w| w[1].0 <= w[0].0) {
        return Err(
            "two snapshots have the same amplitude; a table needs distinct amplitudes".into(),
        );
    }
    Ok(pairs.into_iter().unzip())
}

/// The energy fit: the table from strain energies `energy[i]` at amplitudes `eps[i]`.
pub fn energy_fit(eps: &[f64], energy: &[f64]) -> Result<ForceTable, String> {
    let (x, u) = with_origin(eps, energy)?;
    let force = monotone_slopes(&x, &u);
    Ok(ForceTable {
        eps: x,
        force,
        energy: u,
    })
}

/// The reaction-force fit: the table from generalized forces `force[i]` at amplitudes `eps[i]`.
pub fn force_fit(eps: &[f64], force: &[f64]) -> Result<ForceTable, String> {
    let (x, f) = with_origin(eps, force)?;
    let d = monotone_slopes(&x, &f);
    let energy = hermite_integrals(&x, &f, &d);
    Ok(ForceTable {
        eps: x,
        force: f,
        energy,
    })
}

/// Generalized forces by virtual work (Eq. 58): for each snapshot, the sum over boundaries of
/// the reaction times the derivative of that boundary's displacement with respect to the
/// amplitude (the monotone cubic's slope through the snapshots' `(eps, u)`).
pub fn generalized_forces(
    eps: &[f64],
    boundaries: &[(Vec<f64>, Vec<f64>)],
) -> Result<Vec<f64>, String> {
    let mut order: Vec<usize> = (0..eps.len()).collect();
    order.sort_by(|&a, &b| eps[a].total_cmp(&eps[b]));
    let mut total = vec![0.0; eps.len()];
    for (reaction, displacement) in boundaries {
        let (x, u) = with_origin(
            &order.iter().map(|&i| eps[i]).collect::<Vec<_>>(),
            &order.iter().map(|&i| displacement[i]).collect::<Vec<_>>(),
        )?;
        let slopes = monotone_slopes(&x, &u);
        for &i in &order {
            let k = x.iter().position(|&v| v == eps[i]).expect("sample present");
            total[i] += reaction[i] * slopes[k];
        }
    }
    Ok(total)
}

/// Largest difference between two tables' forces at the first one's amplitudes, relative to its
/// largest force (the second is interpolated linearly between its samples).
pub fn disagreement(a: &ForceTable, b: &ForceTable) -> f64 {
    let scale = a
        .force
        .iter()
        .fold(0.0f64, |m, f| m.max(f.abs()))
        .max(f64::MIN_POSITIVE);
    a.eps
        .iter()
        .zip(&a.force)
        .map(|(&x, &f)| {
            let k = b.eps.partition_point(|&e| e < x).clamp(1, b.eps.len() - 1);
            let t = (x - b.eps[k - 1]) / (b.eps[k] - b.eps[k - 1]);
            let g = b.force[k - 1] + t * (b.force[k] - b.force[k - 1]);
            (f - g).abs() / scale
        })
        .fold(0.0, f64::max)
}

/// Least-squares slope through the origin of force against amplitude (to compare with K).
pub fn slope(table: &ForceTable) -> f64 {
    let (sxy, sxx) = table
        .eps
        .iter()
        .zip(&table.force)
        .fold((0.0, 0.0), |(a, b), (x, f)| (a + x * f, b + x * x));
    sxy / sxx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotone_cubic_is_exact_for_linear_data_and_close_for_smooth_data() {
        let x = [0.0, 0.1, 0.25, 0.3, 0.6, 1.0];
        let y: Vec<f64> = x.iter().map(|v| 3.0 * v).collect();
        assert!(
            monotone_slopes(&x, &y)
                .iter()
                .all(|d| (d - 3.0).abs() < 1e-14)
        );
        // A linear force integrates to the exact quadratic energy.
        let t = force_fit(&x[1..], &y[1..]).unwrap();
        for (e, u) in t.eps.iter().zip(&t.energy) {
            assert!((u - 1.5 * e * e).abs() < 1e-14);
        }
        // Energy 1/2 k x^2 on 40 uniform points (spacing h): the harmonic-mean slope at x is
        // k (x^2 - h^2/4) / x, within 1 % of k x from x = 5 h on.
        let x: Vec<f64> = (1..=40).map(|i| 0.025 * i as f64).collect();
        let u: Vec<f64> = x.iter().map(|v| 0.5 * 7.0 * v * v).collect();
        let t = energy_fit(&x, &u).unwrap();
        for (e, f) in t.eps.iter().zip(&t.force).skip(5).take(34) {
            assert!((f / (7.0 * e) - 1.0).abs() < 0.01, "{e}: {f}");
        }
        assert!((slope(&t) / 7.0 - 1.0).abs() < 0.01);
    }

    #[test]
    fn virtual_work_of_proportional_boundaries() {
        // Two walls moving 2 eps and 0.5 eps with reactions R1, R2: F = 2 R1 + 0.5 R2.
        let eps = [0.3, 0.1, 0.2];
        let walls = vec![
            (
                vec![3.0, 1.0, 2.0],
                eps.iter().map(|e| 2.0 * e).collect::<Vec<_>>(),
            ),
            (vec![6.0, 2.0, 4.0], eps.iter().map(|e| 0.5 * e).collect()),
        ];
        let f = generalized_forces(&eps, &walls).unwrap();
        assert!(
            f.iter()
                .zip([9.0, 3.0, 6.0])
                .all(|(a, b)| (a - b).abs() < 1e-12),
            "{f:?}"
        );
    }
}
