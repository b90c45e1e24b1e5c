//! Shape functions of the solid elements, in Abaqus node order, and their derivatives with
//! respect to the natural coordinates.
//!
//! Natural coordinates: tetrahedra use `(r, s, t)` with corners at the origin and the unit
//! points (volume coordinates `L = (1 - r - s - t, r, s, t)`); hexahedra use `(xi, eta, zeta)` in
//! `[-1, 1]^3`. Node order (Abaqus, Analysis User's Guide, "Three-dimensional solid element
//! library"):
//! - C3D4: corners 1-4; C3D10: corners, then mid-edge nodes of 1-2, 2-3, 3-1, 1-4, 2-4, 3-4;
//! - C3D8: face zeta = -1 counter-clockwise (1-4), then face zeta = +1 (5-8); C3D20: corners,
//!   then mid-edges 1-2, 2-3, 3-4, 4-1, 5-6, 6-7, 7-8, 8-5, 1-5, 2-6, 3-7, 4-8.

use grain::ElementType;
use nalgebra::{Point3, Vector3};

/// Natural coordinates of the nodes of an element type, in node order.
pub fn node_coordinates(element: ElementType) -> Vec<Point3<f64>> {
    let corners: &[[f64; 3]] = match element {
        ElementType::Tet4 | ElementType::Tet10 => &[
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ],
        ElementType::Hex8
        | ElementType::Hex8Reduced
        | ElementType::Hex20
        | ElementType::Hex20Reduced => &[
            [-1.0, -1.0, -1.0],
            [1.0, -1.0, -1.0],
            [1.0, 1.0, -1.0],
            [-1.0, 1.0, -1.0],
            [-1.0, -1.0, 1.0],
            [1.0, -1.0, 1.0],
            [1.0, 1.0, 1.0],
            [-1.0, 1.0, 1.0],
        ],
    };
    let c: Vec<Point3<f64>> = corners.iter().map(|p| Point3::from(*p)).collect();
    let mid_sides = element
        .mid_side_edges()
        .iter()
        .map(|&(a, b)| nalgebra::center(&c[a], &c[b]));
    c.iter().copied().chain(mid_sides).collect()
}

/// Shape function values `N_a` and natural-coordinate gradients `dN_a/d(r, s, t)` at `x`.
pub fn shape(
    element: ElementType,
    x: &Point3<f64>,
    values: &mut Vec<f64>,
    gradients: &mut Vec<Vector3<f64>>,
) {
    values.clear();
    gradients.clear();
    match element {
        ElementType::Tet4 => {
            values.extend([1.0 - x.x - x.y - x.z, x.x, x.y, x.z]);
            gradients.extend([
                Vector3::new(-1.0, -1.0, -1.0),
                Vector3::x(),
                Vector3::y(),
                Vector3::z(),
            ]);
        }
        ElementType::Tet10 => {
            let l = [1.0 - x.x - x.y - x.z, x.x, x.y, x.z];
            let dl = [
                Vector3::new(-1.0, -1.0, -1.0),
                Vector3::x(),
                Vector3::y(),
                Vector3::z(),
            ];
            for i in 0..4 {
                values.push(l[i] * (2.0 * l[i] - 1.0));
                gradients.push(dl[i] * (4.0 * l[i] - 1.0));
            }
            for &(i, j) in ElementType::Tet10.mid_side_edges() {
                values.push(4.0 * l[i] * l[j]);
                gradients.push((dl[i] * l[j] + dl[j] * l[i]) * 4.0);
            }
        }
        ElementType::Hex8
        | ElementType::Hex8Reduced
        | ElementType::Hex20
        | ElementType::Hex20Reduced => {
            let serendipity = element.node_count() == 20;
            for n in node_coordinates(element) {
                let (a, b, c) = (n.x, n.y, n.z);
                let (p, q, r) = (x.x, x.y, x.z);
                if !serendipity {
                    let (fa, fb, fc) = (1.0 + a * p, 1.0 + b * q, 1.0 + c * r);
                    values.push(0.125 * fa * fb * fc);
                    gradients.push(Vector3::new(a * fb * fc, b * fa * fc, c * fa * fb) * 0.125);
                } else if a != 0.0 && b != 0.0 && c != 0.0 {
                    // Corner: 1/8 (1 + a p)(1 + b q)(1 + c r)(a p + b q + c r - 2).
                    let (fa, fb, fc) = (1.0 + a * p, 1.0 + b * q, 1.0 + c * r);
                    let s = a * p + b * q + c * r - 2.0;
                    values.push(0.125 * fa * fb * fc * s);
                    gradients.push(
                        Vector3::new(
                            a * fb * fc * (s + fa),
                            b * fa * fc * (s + fb),
                            c * fa * fb * (s + fc),
                        ) * 0.125,
                    );
                } else {
                    // Mid-edge: the coordinate that is 0 enters as (1 - x^2).
                    let f = |nat: f64, v: f64| {
                        if nat == 0.0 {
                            (1.0 - v * v, -2.0 * v)
                        } else {
                            (1.0 + nat * v, nat)
                        }
                    };
                    let ((fa, da), (fb, db), (fc, dc)) = (f(a, p), f(b, q), f(c, r));
                    values.push(0.25 * fa * fb * fc);
                    gradients.push(Vector3::new(da * fb * fc, fa * db * fc, fa * fb * dc) * 0.25);
                }
            }
        }
    }
}

/// Whether natural coordinates `x` lie in the element (with tolerance `tol`), and how far out
/// they are (0 inside).
pub fn outside_by(element: ElementType, x: &Point3<f64>) -> f64 {
    match element {
        ElementType::Tet4 | ElementType::Tet10 => {
            let l = [1.0 - x.x - x.y - x.z, x.x, x.y, x.z];
            l.iter().map(|&v| (-v).max(0.0)).fold(0.0, f64::max)
        }
        _ => x
            .iter()
            .map(|&v| (v.abs() - 1.0).max(0.0))
            .fold(0.0, f64::max),
    }
}

/// The natural coordinates of the element's centre.
pub fn centre(element: ElementType) -> Point3<f64> {
    match element {
        ElementType::Tet4 | ElementType::Tet10 => Point3::new(0.25, 0.25, 0.25),
        _ => Point3::origin(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_functions_interpolate_nodes_sum_to_one_and_differentiate_right() {
        for element in ElementType::ALL {
            let nodes = node_coordinates(element);
            assert_eq!(nodes.len(), element.node_count());
            let (mut n, mut g) = (Vec::new(), Vec::new());
            // Kronecker delta at the nodes.
            for (a, p) in nodes.iter().enumerate() {
                shape(element, p, &mut n, &mut g);
                for (b, v) in n.iter().enumerate() {
                    assert!(
                        (v - if a == b { 1.0 } else { 0.0 }).abs() < 1e-14,
                        "{element:?} N{b} at node {a}"
                    );
                }
            }
            // Partition of unity, linear completeness, and gradients against central differences.
            let x = Point3::new(0.21, 0.17, 0.33);
            shape(element, &x, &mut n, &mut g);
            assert!((n.iter().sum::<f64>() - 1.0).abs() < 1e-14);
            let interp: Vector3<f64> = nodes.iter().zip(&n).map(|(p, v)| p.coords * *v).sum();
            assert!((interp - x.coords).norm() < 1e-14, "{element:?}");
            let h = 1e-6;
            for d in 0..3 {
                let (mut plus, mut minus, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
                let mut xp = x;
                xp[d] += h;
                shape(element, &xp, &mut plus, &mut scratch);
                let mut xm = x;
                xm[d] -= h;
                shape(element, &xm, &mut minus, &mut scratch);
                for a in 0..n.len() {
                    let fd = (plus[a] - minus[a]) / (2.0 * h);
                    assert!(
                        (fd - g[a][d]).abs() < 1e-8,
                        "{element:?} dN{a}/dx{d}: {fd} vs {}",
                        g[a][d]
                    );
                }
            }
        }
    }
}
