//! Quadrature rules on the reference elements, in the natural coordinates of [`crate::shape`].
//!
//! Tetrahedra (reference volume 1/6): the 1-point centroid rule (degree 1), the 4-point rule
//! (degree 2) and the 14-point rule with positive weights (degree 5; Walkington, "Quadrature on
//! simplices of arbitrary dimension", 2000; the rule also listed by Keast, CMAME 55, 1986).
//! Hexahedra (reference volume 8): tensor Gauss-Legendre rules, 2 x 2 x 2 (degree 3 per axis)
//! and 3 x 3 x 3 (degree 5 per axis).

use nalgebra::Point3;

/// Points and weights of a rule.
pub type Rule = Vec<(Point3<f64>, f64)>;

/// All permutations of barycentric coordinates `l`, as (r, s, t) = (l1, l2, l3), deduplicated.
fn permutations(l: [f64; 4], weight: f64) -> Rule {
    let mut out: Rule = Vec::new();
    let idx = [0, 1, 2, 3];
    for a in idx {
        for b in idx {
            for c in idx {
                for d in idx {
                    let p = [a, b, c, d];
                    if (0..4).any(|i| (i + 1..4).any(|j| p[i] == p[j])) {
                        continue;
                    }
                    let point = Point3::new(l[p[1]], l[p[2]], l[p[3]]);
                    if !out.iter().any(|(q, _)| (q - point).norm() < 1e-15) {
                        out.push((point, weight));
                    }
                }
            }
        }
    }
    out
}

/// Tetrahedron: 1 point, exact for degree 1.
pub fn tet1() -> Rule {
    vec![(Point3::new(0.25, 0.25, 0.25), 1.0 / 6.0)]
}

/// Tetrahedron: 4 points, exact for degree 2.
pub fn tet4() -> Rule {
    let a = (5.0 + 3.0 * 5f64.sqrt()) / 20.0;
    let b = (5.0 - 5f64.sqrt()) / 20.0;
    permutations([a, b, b, b], 1.0 / 24.0)
}

/// Tetrahedron: 14 points, positive weights, exact for degree 5.
pub fn tet14() -> Rule {
    let (a1, w1) = (0.092_735_250_310_891_2, 0.012_248_840_519_393_66);
    let (a2, w2) = (0.310_885_919_263_300_6, 0.018_781_320_953_002_64);
    let (b, w3) = (0.045_503_704_125_649_6, 0.007_091_003_462_846_911);
    let mut rule = permutations([1.0 - 3.0 * a1, a1, a1, a1], w1);
    rule.extend(permutations([1.0 - 3.0 * a2, a2, a2, a2], w2));
    rule.extend(permutations([0.5 - b, 0.5 - b, b, b], w3));
    rule
}

/// Hexahedron: `n x n x n` Gauss-Legendre points (n = 2 or 3).
pub fn hex_gauss(n: usize) -> Rule {
    let line: Vec<(f64, f64)> = match n {
        2 => vec![(-1.0 / 3f64.sqrt(), 1.0), (1.0 / 3f64.sqrt(), 1.0)],
        3 => vec![
            (-(0.6f64).sqrt(), 5.0 / 9.0),
            (0.0, 8.0 / 9.0),
            ((0.6f64).sqrt(), 5.0 / 9.0),
        ],
        _ => panic!("hex_gauss supports 2 or 3 points per axis"),
    };
    let mut rule = Vec::with_capacity(n * n * n);
    for &(x, wx) in &line {
        for &(y, wy) in &line {
            for &(z, wz) in &line {
                rule.push((Point3::new(x, y, z), wx * wy * wz));
            }
        }
    }
    rule
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factorial(n: u32) -> f64 {
        (1..=n).map(f64::from).product()
    }

    #[test]
    fn tetrahedron_rules_integrate_monomials_exactly_to_their_degree() {
        // Integral of r^a s^b t^c over the unit tetrahedron: a! b! c! / (a + b + c + 3)!.
        for (rule, degree) in [(tet1(), 1), (tet4(), 2), (tet14(), 5)] {
            assert!(rule.iter().all(|(_, w)| *w > 0.0));
            for a in 0..=degree {
                for b in 0..=degree - a {
                    for c in 0..=degree - a - b {
                        let exact =
                            factorial(a) * factorial(b) * factorial(c) / factorial(a + b + c + 3);
                        let got: f64 = rule
                            .iter()
                            .map(|(p, w)| {
                                w * p.x.powi(a as i32) * p.y.powi(b as i32) * p.z.powi(c as i32)
                            })
                            .sum();
                        assert!(
                            (got - exact).abs() < 1e-15,
                            "{} points, r^{a} s^{b} t^{c}: {got} vs {exact}",
                            rule.len()
                        );
                    }
                }
            }
        }
        assert_eq!((tet4().len(), tet14().len()), (4, 14));
    }

    #[test]
    fn hexahedron_rules_integrate_monomials_exactly_to_their_degree() {
        for (n, degree) in [(2usize, 3), (3, 5)] {
            let rule = hex_gauss(n);
            for a in 0..=degree {
                for b in 0..=degree {
                    let exact = |k: i32| {
                        if k % 2 == 1 {
                            0.0
                        } else {
                            2.0 / (k as f64 + 1.0)
                        }
                    };
                    let got: f64 = rule
                        .iter()
                        .map(|(p, w)| w * p.x.powi(a) * p.y.powi(b) * p.z.powi(2))
                        .sum();
                    assert!((got - exact(a) * exact(b) * exact(2)).abs() < 1e-14);
                }
            }
        }
    }
}
