//! The generalized internal force (docs/physics.md section 7; paper Section 4.2, Eqs. 56 and 58), from
//! FEM strain energies or from reaction forces: a table for one mode, a polynomial energy for
//! several.
//!
//! One mode:
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
//!
//! Several modes (a table over a grid of `A` amplitudes would need far more snapshots than FEM
//! runs give): `U_theta` is a polynomial with every monomial of total degree 2 to `degree` in the
//! amplitudes ([`grain::EnergyPolynomial`]), fitted by linear least squares, which is what Eqs. 56
//! and 58 become for a model linear in its coefficients:
//! - energy fit: `sum_i (U_theta(eps^i) - PE^i)^2`;
//! - reaction-force fit: `sum_i |grad U_theta(eps^i) - F^i|^2`, with `F^i = J^T R^i` by virtual
//!   work: `J` is the least-squares linear map from the amplitudes to the boundaries'
//!   displacements (`d^i = J eps^i`), so `J_ba` is boundary `b`'s displacement per unit `eps_a`.
//!
//! The amplitudes are scaled to `[-1, 1]` before the monomials are formed (conditioning). If the
//! snapshots do not determine every coefficient (too few of them, or amplitudes that never vary
//! independently), the fit is refused rather than given an arbitrary minimum-norm answer.

use grain::table::{hermite_integrals, monotone_slopes};
use grain::{EnergyPolynomial, ForceTable, Monomial};
use nalgebra::{DMatrix, DVector};
use ndarray::Array2;

/// Why a fit of the internal force was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Two snapshots at one amplitude: a table is a function of the amplitude.
    #[error("two snapshots have the same amplitude; a table needs distinct amplitudes")]
    SameAmplitude,
    /// Fewer equations than coefficients.
    #[error(
        "a degree-{degree} polynomial in {modes} amplitudes has {terms} coefficients, but there are only {equations} equations; add snapshots or lower --degree"
    )]
    TooFewEquations {
        /// The polynomial's degree.
        degree: u32,
        /// The amplitudes.
        modes: usize,
        /// Its coefficients.
        terms: usize,
        /// The equations the snapshots give.
        equations: usize,
    },
    /// The snapshots do not determine every coefficient.
    #[error(
        "the snapshots determine only {rank} of the {terms} coefficients of the polynomial (their amplitudes do not vary independently enough); add snapshots or lower --degree"
    )]
    Underdetermined {
        /// The coefficients determined.
        rank: usize,
        /// The coefficients.
        terms: usize,
    },
    /// The amplitudes do not vary independently: a boundary's displacement per amplitude is
    /// undetermined.
    #[error(
        "the amplitudes of the snapshots do not vary independently, so the boundaries' displacement per unit of each amplitude is undetermined"
    )]
    Dependent,
    /// The least-squares solve failed (nalgebra's message).
    #[error("the least-squares solve failed: {0}")]
    Solve(String),
}

/// Sorted sample points with the origin added (the undeformed state, zero force and energy).
fn with_origin(eps: &[f64], values: &[f64]) -> Result<(Vec<f64>, Vec<f64>), FitError> {
    let mut pairs: Vec<(f64, f64)> = eps.iter().copied().zip(values.iter().copied()).collect();
    if !pairs.iter().any(|p| p.0 == 0.0) {
        pairs.push((0.0, 0.0));
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pairs.windows(2).any(|w| w[1].0 <= w[0].0) {
        return Err(FitError::SameAmplitude);
    }
    Ok(pairs.into_iter().unzip())
}

/// The energy fit: the table from strain energies `energy[i]` at amplitudes `eps[i]`.
pub fn energy_fit(eps: &[f64], energy: &[f64]) -> Result<ForceTable, FitError> {
    let (x, u) = with_origin(eps, energy)?;
    let force = monotone_slopes(&x, &u);
    Ok(ForceTable {
        eps: x,
        force,
        energy: u,
    })
}

/// The reaction-force fit: the table from generalized forces `force[i]` at amplitudes `eps[i]`.
pub fn force_fit(eps: &[f64], force: &[f64]) -> Result<ForceTable, FitError> {
    let (x, f) = with_origin(eps, force)?;
    let d = monotone_slopes(&x, &f);
    // The integral from the first row, shifted so that U(0) = 0 (the origin is a row).
    let mut energy = hermite_integrals(&x, &f, &d);
    let at_origin = energy[x.iter().position(|&e| e == 0.0).expect("origin added")];
    energy.iter_mut().for_each(|u| *u -= at_origin);
    Ok(ForceTable {
        eps: x,
        force: f,
        energy,
    })
}

/// Where a boundary's displacement turns back while the amplitude grows: the input indices
/// `(i, j)` of two snapshots, consecutive in amplitude, across which it moves against its
/// overall direction (the sign of its largest move from the origin), if any. Moves below
/// `1e-9` of the largest displacement count as still.
pub fn turns_back(eps: &[f64], displacement: &[f64]) -> Option<(usize, usize)> {
    let mut order: Vec<usize> = (0..eps.len()).collect();
    order.sort_by(|&a, &b| eps[a].total_cmp(&eps[b]));
    let largest = displacement
        .iter()
        .copied()
        .fold(0.0f64, |m, d| if d.abs() > m.abs() { d } else { m });
    let still = 1e-9 * largest.abs();
    order.windows(2).find_map(|w| {
        let step = displacement[w[1]] - displacement[w[0]];
        (step * largest.signum() < -still).then_some((w[0], w[1]))
    })
}

/// Generalized forces by virtual work (Eq. 58): for each snapshot, the sum over boundaries of
/// the reaction times the derivative of that boundary's displacement with respect to the
/// amplitude (the monotone cubic's slope through the snapshots' `(eps, u)`).
pub fn generalized_forces(
    eps: &[f64],
    boundaries: &[(Vec<f64>, Vec<f64>)],
) -> Result<Vec<f64>, FitError> {
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

/// The difference of two tables' forces at each of the amplitudes `at`, relative to the first
/// table's largest force (both interpolated linearly between their rows: exact at the rows).
pub fn disagreement(a: &ForceTable, b: &ForceTable, at: &[f64]) -> Vec<f64> {
    let scale = a
        .force
        .iter()
        .fold(0.0f64, |m, f| m.max(f.abs()))
        .max(f64::MIN_POSITIVE);
    let linear = |t: &ForceTable, x: f64| {
        let k = t.eps.partition_point(|&e| e < x).clamp(1, t.eps.len() - 1);
        let s = (x - t.eps[k - 1]) / (t.eps[k] - t.eps[k - 1]);
        t.force[k - 1] + s * (t.force[k] - t.force[k - 1])
    };
    at.iter()
        .map(|&x| (linear(b, x) - linear(a, x)) / scale)
        .collect()
}

/// The secant ratio `sum_i eps_i . F_i / sum_i eps_i . K eps_i` of forces `F_i` at amplitudes
/// `eps_i` to the modal stiffness `K`: for one mode, the least-squares slope of force against
/// amplitude through the origin over `K`; 1 for a linear problem.
pub fn secant_ratio(eps: &[Vec<f64>], force: &[Vec<f64>], stiffness: &Array2<f64>) -> f64 {
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    let (work, elastic) = eps.iter().zip(force).fold((0.0, 0.0), |(w, k), (e, f)| {
        let ke: Vec<f64> = (0..e.len())
            .map(|p| (0..e.len()).map(|q| stiffness[[p, q]] * e[q]).sum())
            .collect();
        (w + dot(e, f), k + dot(e, &ke))
    });
    work / elastic
}

/// Each amplitude's largest magnitude (1 where it is always zero): the scaling to `[-1, 1]`.
fn scales(eps: &[Vec<f64>]) -> Vec<f64> {
    let modes = eps.first().map_or(0, Vec::len);
    (0..modes)
        .map(|a| {
            let m = eps.iter().fold(0.0f64, |m, e| m.max(e[a].abs()));
            if m > 0.0 { m } else { 1.0 }
        })
        .collect()
}

fn monomial(powers: &[u32], x: &[f64]) -> f64 {
    powers
        .iter()
        .zip(x)
        .map(|(&p, &v)| v.powi(p as i32))
        .product()
}

/// Least squares `design w = rhs`, refusing a rank-deficient design; then the coefficients of
/// the unscaled amplitudes, `a_t = w_t / prod_a s_a^p_ta`.
fn solve_terms(
    design: DMatrix<f64>,
    rhs: DVector<f64>,
    exponents: Vec<Vec<u32>>,
    s: &[f64],
) -> Result<EnergyPolynomial, FitError> {
    let terms = exponents.len();
    if design.nrows() < terms {
        return Err(FitError::TooFewEquations {
            degree: exponents
                .iter()
                .map(|p| p.iter().sum::<u32>())
                .max()
                .unwrap_or(0),
            modes: s.len(),
            terms,
            equations: design.nrows(),
        });
    }
    // Columns to unit norm, so that the rank test does not depend on the terms' sizes.
    let norms: Vec<f64> = design
        .column_iter()
        .map(|c| c.norm().max(f64::MIN_POSITIVE))
        .collect();
    let mut scaled = design;
    for (j, n) in norms.iter().enumerate() {
        scaled.column_mut(j).unscale_mut(*n);
    }
    let svd = scaled.svd(true, true);
    let largest = svd.singular_values.max();
    let rank = svd
        .singular_values
        .iter()
        .filter(|&&v| v > 1e-10 * largest)
        .count();
    if rank < terms {
        return Err(FitError::Underdetermined { rank, terms });
    }
    let w = svd
        .solve(&rhs, 0.0)
        .map_err(|e| FitError::Solve(e.to_string()))?;
    Ok(EnergyPolynomial {
        terms: exponents
            .into_iter()
            .enumerate()
            .map(|(t, powers)| {
                let coefficient = w[t] / norms[t] / monomial(&powers, s);
                Monomial {
                    powers,
                    coefficient,
                }
            })
            .collect(),
    })
}

/// The energy fit for several modes: `U_theta` through the strain energies `energy[i]` at the
/// amplitudes `eps[i]` (least squares).
pub fn polynomial_energy_fit(
    eps: &[Vec<f64>],
    energy: &[f64],
    degree: u32,
) -> Result<EnergyPolynomial, FitError> {
    let s = scales(eps);
    let exponents = EnergyPolynomial::exponents(s.len(), degree);
    let design = DMatrix::from_fn(eps.len(), exponents.len(), |i, t| {
        let x: Vec<f64> = eps[i].iter().zip(&s).map(|(e, s)| e / s).collect();
        monomial(&exponents[t], &x)
    });
    solve_terms(design, DVector::from_column_slice(energy), exponents, &s)
}

/// The reaction-force fit for several modes: `grad U_theta` through the generalized forces
/// `force[i]` at the amplitudes `eps[i]` (least squares over every component).
pub fn polynomial_force_fit(
    eps: &[Vec<f64>],
    force: &[Vec<f64>],
    degree: u32,
) -> Result<EnergyPolynomial, FitError> {
    let s = scales(eps);
    let modes = s.len();
    let exponents = EnergyPolynomial::exponents(modes, degree);
    // Row (i, a): d/dx_a of each scaled monomial, equal to s_a F_ia.
    let design = DMatrix::from_fn(eps.len() * modes, exponents.len(), |r, t| {
        let (i, a) = (r / modes, r % modes);
        let p = &exponents[t];
        if p[a] == 0 {
            return 0.0;
        }
        let x: Vec<f64> = eps[i].iter().zip(&s).map(|(e, s)| e / s).collect();
        let mut lowered = p.clone();
        lowered[a] -= 1;
        p[a] as f64 * monomial(&lowered, &x)
    });
    let rhs = DVector::from_fn(eps.len() * modes, |r, _| {
        s[r % modes] * force[r / modes][r % modes]
    });
    solve_terms(design, rhs, exponents, &s)
}

/// Generalized forces by virtual work for several modes: `F^i = J^T R^i`, with `J` the
/// least-squares linear map (through the origin) from the amplitudes to each boundary's
/// displacement. `boundaries` holds (reactions, displacements) per boundary, per snapshot.
pub fn linear_generalized_forces(
    eps: &[Vec<f64>],
    boundaries: &[(Vec<f64>, Vec<f64>)],
) -> Result<Vec<Vec<f64>>, FitError> {
    let modes = eps.first().map_or(0, Vec::len);
    let c = DMatrix::from_fn(eps.len(), modes, |i, a| eps[i][a]);
    let svd = c.clone().svd(true, true);
    let largest = svd.singular_values.max();
    if svd.singular_values.iter().any(|&v| v <= 1e-12 * largest) {
        return Err(FitError::Dependent);
    }
    let mut forces = vec![vec![0.0; modes]; eps.len()];
    for (reaction, displacement) in boundaries {
        let j = svd
            .solve(&DVector::from_column_slice(displacement), 0.0)
            .map_err(|e| FitError::Solve(e.to_string()))?;
        for (i, f) in forces.iter_mut().enumerate() {
            for a in 0..modes {
                f[a] += reaction[i] * j[a];
            }
        }
    }
    Ok(forces)
}

/// The norm of the difference of two polynomial laws' forces at each of the amplitudes `eps`,
/// relative to the largest force of the first (the several-mode form of [`disagreement`]).
pub fn polynomial_disagreement(
    eps: &[Vec<f64>],
    a: &EnergyPolynomial,
    b: &EnergyPolynomial,
) -> Vec<f64> {
    let norm = |v: Vec<f64>| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let scale = eps
        .iter()
        .map(|e| norm(a.force(e)))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    eps.iter()
        .map(|e| {
            let (fa, fb) = (a.force(e), b.force(e));
            norm(fa.iter().zip(&fb).map(|(x, y)| x - y).collect()) / scale
        })
        .collect()
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
        let points: Vec<Vec<f64>> = t.eps.iter().map(|&e| vec![e]).collect();
        let forces: Vec<Vec<f64>> = t.force.iter().map(|&f| vec![f]).collect();
        assert!((secant_ratio(&points, &forces, &ndarray::array![[7.0]]) - 1.0).abs() < 0.01);
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

    /// `U = 3 x^2 - x y + 2 y^2 + 0.5 x^3 - 4 x y^2 + y^3` over scattered amplitudes of very
    /// different sizes (x ~ 1e-3, y ~ 1): degree 3 in two amplitudes, 7 terms.
    fn cubic() -> (EnergyPolynomial, Vec<Vec<f64>>) {
        let coefficients = [3.0, -1.0, 2.0, 0.5, 0.0, -4.0, 1.0];
        let law = EnergyPolynomial {
            terms: EnergyPolynomial::exponents(2, 3)
                .into_iter()
                .zip(coefficients)
                .map(|(powers, coefficient)| Monomial {
                    powers,
                    coefficient,
                })
                .collect(),
        };
        let eps = (0..12)
            .map(|i| {
                let t = i as f64;
                vec![1e-3 * (0.7 * t).sin(), (1.3 * t + 0.4).cos()]
            })
            .collect();
        (law, eps)
    }

    /// Each term's error at the largest amplitudes `scales`, against a bound `u_max` of the
    /// data's energies (a term far smaller than the data is only determined relative to them).
    fn assert_same_law(got: &EnergyPolynomial, want: &EnergyPolynomial, scales: [f64; 2]) {
        // |U| <= 3e-6 + 1e-3 + 2 + 5e-10 + 4e-3 + 1 < 7 for |x| <= 1e-3, |y| <= 1.
        let u_max = 7.0;
        for (g, w) in got.terms.iter().zip(&want.terms) {
            assert_eq!(g.powers, w.powers);
            let size = monomial(&w.powers, &scales);
            assert!(
                ((g.coefficient - w.coefficient) * size).abs() < 1e-12 * u_max,
                "{:?}: {} vs {}",
                w.powers,
                g.coefficient,
                w.coefficient
            );
        }
    }

    #[test]
    fn polynomial_fits_recover_a_known_energy_from_energies_or_reactions() {
        let (law, eps) = cubic();
        let energy: Vec<f64> = eps.iter().map(|e| law.energy(e)).collect();
        let fitted = polynomial_energy_fit(&eps, &energy, 3).unwrap();
        assert_same_law(&fitted, &law, [1e-3, 1.0]);
        // Two walls with displacements d = J eps; reactions R with J^T R = grad U (Eq. 58).
        let j = [[2.0, 0.5], [-1.0, 3.0]];
        let det = j[0][0] * j[1][1] - j[0][1] * j[1][0];
        let mut walls = vec![(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        for e in &eps {
            let f = law.force(e);
            // R = J^-T F.
            let r = [
                (j[1][1] * f[0] - j[1][0] * f[1]) / det,
                (-j[0][1] * f[0] + j[0][0] * f[1]) / det,
            ];
            for b in 0..2 {
                walls[b].0.push(r[b]);
                walls[b].1.push(j[b][0] * e[0] + j[b][1] * e[1]);
            }
        }
        let forces = linear_generalized_forces(&eps, &walls).unwrap();
        for (e, f) in eps.iter().zip(&forces) {
            let want = law.force(e);
            assert!(
                (f[0] - want[0]).abs() < 1e-9 * want[0].abs().max(1.0),
                "{f:?}"
            );
            assert!(
                (f[1] - want[1]).abs() < 1e-9 * want[1].abs().max(1.0),
                "{f:?}"
            );
        }
        let by_force = polynomial_force_fit(&eps, &forces, 3).unwrap();
        assert_same_law(&by_force, &law, [1e-3, 1.0]);
        assert!(
            polynomial_disagreement(&eps, &by_force, &fitted)
                .iter()
                .all(|d| *d < 1e-9)
        );
    }

    #[test]
    fn underdetermined_polynomial_fits_are_refused() {
        let (law, eps) = cubic();
        let energy: Vec<f64> = eps.iter().map(|e| law.energy(e)).collect();
        let e = polynomial_energy_fit(&eps[..5], &energy[..5], 3).unwrap_err();
        assert_eq!(
            e,
            FitError::TooFewEquations {
                degree: 3,
                modes: 2,
                terms: 7,
                equations: 5
            }
        );
        // Amplitudes that always move together: x y and y^2 cannot be told apart.
        let line: Vec<Vec<f64>> = (1..10)
            .map(|i| vec![0.1 * i as f64, 0.2 * i as f64])
            .collect();
        let energy: Vec<f64> = line.iter().map(|e| law.energy(e)).collect();
        let e = polynomial_energy_fit(&line, &energy, 2).unwrap_err();
        assert_eq!(e, FitError::Underdetermined { rank: 1, terms: 3 });
        let walls = vec![(vec![1.0; 9], line.iter().map(|e| e[0]).collect())];
        let e = linear_generalized_forces(&line, &walls).unwrap_err();
        assert_eq!(e, FitError::Dependent);
    }
}
