//! The internal force of a grain with several modes: its strain energy as a polynomial in the
//! amplitudes, `U(eps) = sum_t a_t prod_a eps_a^(p_ta)`, and `F_int = grad U` (docs/physics.md
//! section 7, "a low-order polynomial" `U_theta` of Eqs. 56 and 58).
//!
//! Stored inline in the manifest as a list of terms `{"powers": [p_1, ..., p_A], "coefficient":
//! a}`. The fits write terms of total degree 2 and up only: the reference state is unstressed
//! (`U(0) = 0`, `F_int(0) = 0`). The quadratic part is `1/2 eps^T H eps`, with `H` the stiffness
//! at the origin (equal to the modal `K` for a linear problem).

use serde::{Deserialize, Serialize};

/// One term `coefficient * prod_a eps_a^powers[a]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Monomial {
    /// The exponent of each mode's amplitude (one per mode).
    pub powers: Vec<u32>,
    /// The coefficient (energy units divided by the amplitudes' units to the powers).
    pub coefficient: f64,
}

impl Monomial {
    /// Total degree.
    pub fn degree(&self) -> u32 {
        self.powers.iter().sum()
    }

    fn value(&self, eps: &[f64]) -> f64 {
        self.coefficient
            * self
                .powers
                .iter()
                .zip(eps)
                .map(|(&p, &e)| e.powi(p as i32))
                .product::<f64>()
    }
}

/// `U(eps)` as a sum of monomials.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergyPolynomial {
    /// The terms.
    pub terms: Vec<Monomial>,
}

impl EnergyPolynomial {
    /// Every exponent vector of `modes` variables with total degree in `2..=degree`, by degree,
    /// then in descending lexicographic order (`eps_1^2`, `eps_1 eps_2`, `eps_2^2`, ...).
    pub fn exponents(modes: usize, degree: u32) -> Vec<Vec<u32>> {
        fn fill(rest: u32, slots: usize, prefix: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
            if slots == 1 {
                prefix.push(rest);
                out.push(prefix.clone());
                prefix.pop();
                return;
            }
            for p in (0..=rest).rev() {
                prefix.push(p);
                fill(rest - p, slots - 1, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        for d in 2..=degree {
            fill(d, modes, &mut Vec::new(), &mut out);
        }
        out
    }

    /// The strain energy `U(eps)`.
    pub fn energy(&self, eps: &[f64]) -> f64 {
        self.terms.iter().map(|t| t.value(eps)).sum()
    }

    /// The generalized internal force `F_int = dU/d eps` (exact derivative of each term).
    pub fn force(&self, eps: &[f64]) -> Vec<f64> {
        (0..eps.len())
            .map(|a| {
                self.terms
                    .iter()
                    .filter(|t| t.powers[a] > 0)
                    .map(|t| {
                        let mut d = t.clone();
                        d.powers[a] -= 1;
                        t.powers[a] as f64 * d.value(eps)
                    })
                    .sum()
            })
            .collect()
    }

    /// The tangent stiffness `H_ab = d^2 U / d eps_a d eps_b` at `eps` (exact derivatives of
    /// each term).
    pub fn hessian(&self, eps: &[f64]) -> Vec<Vec<f64>> {
        let n = eps.len();
        let mut h = vec![vec![0.0; n]; n];
        for t in &self.terms {
            for (a, row) in h.iter_mut().enumerate() {
                for (b, entry) in row.iter_mut().enumerate() {
                    let mut d = t.clone();
                    let pa = d.powers[a];
                    if pa == 0 {
                        continue;
                    }
                    d.powers[a] -= 1;
                    let pb = d.powers[b];
                    if pb == 0 {
                        continue;
                    }
                    d.powers[b] -= 1;
                    *entry += (pa * pb) as f64 * d.value(eps);
                }
            }
        }
        h
    }

    /// The stiffness at the origin, `H = d^2 U / d eps^2 (0)`: the quadratic terms.
    pub fn stiffness_at_origin(&self, modes: usize) -> Vec<Vec<f64>> {
        let mut h = vec![vec![0.0; modes]; modes];
        for t in self.terms.iter().filter(|t| t.degree() == 2) {
            let ones: Vec<usize> = (0..modes).filter(|&a| t.powers[a] > 0).collect();
            match ones[..] {
                [a] => h[a][a] += 2.0 * t.coefficient,
                [a, b] => {
                    h[a][b] += t.coefficient;
                    h[b][a] += t.coefficient;
                }
                _ => unreachable!("a degree-2 term has one or two variables"),
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_count_the_monomials_of_each_degree() {
        // C(A + d - 1, d) monomials of degree d in A variables: 3 + 4 for A = 2, d = 2, 3.
        let e = EnergyPolynomial::exponents(2, 3);
        assert_eq!(
            e,
            vec![
                vec![2, 0],
                vec![1, 1],
                vec![0, 2],
                vec![3, 0],
                vec![2, 1],
                vec![1, 2],
                vec![0, 3]
            ]
        );
        assert_eq!(EnergyPolynomial::exponents(3, 4).len(), 6 + 10 + 15);
    }

    #[test]
    fn force_is_the_gradient_and_the_origin_stiffness_the_hessian() {
        // U = 2 x^2 + 3 x y + 5 y^3: F = (4 x + 3 y, 3 x + 15 y^2), H(0) = [[4, 3], [3, 0]].
        let p = EnergyPolynomial {
            terms: vec![
                Monomial {
                    powers: vec![2, 0],
                    coefficient: 2.0,
                },
                Monomial {
                    powers: vec![1, 1],
                    coefficient: 3.0,
                },
                Monomial {
                    powers: vec![0, 3],
                    coefficient: 5.0,
                },
            ],
        };
        let (x, y) = (0.3, -0.7);
        assert_eq!(
            p.energy(&[x, y]),
            2.0 * x * x + 3.0 * x * y + 5.0 * y * y * y
        );
        let f = p.force(&[x, y]);
        assert!((f[0] - (4.0 * x + 3.0 * y)).abs() < 1e-15);
        assert!((f[1] - (3.0 * x + 15.0 * y * y)).abs() < 1e-15);
        assert_eq!(
            p.stiffness_at_origin(2),
            vec![vec![4.0, 3.0], vec![3.0, 0.0]]
        );
        // H(x, y) = [[4, 3], [3, 30 y]].
        let h = p.hessian(&[x, y]);
        assert_eq!(h[0], vec![4.0, 3.0]);
        assert_eq!(h[1][0], 3.0);
        assert!((h[1][1] - 30.0 * y).abs() < 1e-15);
        assert_eq!(p.hessian(&[0.0, 0.0]), p.stiffness_at_origin(2));
    }
}
