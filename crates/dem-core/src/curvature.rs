//! The curvature of a grain's surface, for the contact laws that need it (`hertz-patches`,
//! docs/physics.md section 4).
//!
//! # At a node
//! The nodes within `r` of node `x_k` are written in a frame of its tangent plane, `(u, v)`
//! along it and `w = (x - x_k) . n_k` along its unit outward normal `n_k` (the level set's
//! gradient), and fitted by least squares with the quadric
//! `w = c_0 + c_1 u + c_2 v + a u^2 / 2 + b u v + c v^2 / 2 + (the cubic and quartic terms)`:
//! the quartic terms take up a sphere's `rho^4 / 8 R^3`, which biased a quadratic fit by 2 %.
//! The surface's Gaussian curvature there is `K = (a c - b^2) / (1 + c_1^2 + c_2^2)^2` (do Carmo, *Differential Geometry of Curves
//! and Surfaces*, 1976, section 3-3, the graph of a function), and the node keeps
//! `kappa_k = sqrt(max(K, 0))`: `1 / sqrt(R_1 R_2)`, the inverse of the equivalent radius of
//! Hertz's theory (Johnson, *Contact Mechanics*, 1985, section 4.2). Where the surface is flat,
//! saddle-shaped or concave, `kappa_k = 0`.
//!
//! `r` is 3 times the median node spacing (`sqrt` of the node areas), widened for a node with
//! fewer than 24 neighbours. On a sphere of 1,000 nodes and an ellipsoid of 4,000 the fit is
//! within 0.3 % of the closed form (tests).
//!
//! # Anywhere near the surface
//! [`Curvature::at`] is the mean of the nodes' `kappa_k` within `r` of the point, weighted by
//! `(1 - d^2 / r^2)^2` ([`Cloud::weights`]): continuous in the point, so that a law reading it
//! gives forces without jumps between nodes. The curvature is the reference shape's: a deformable grain's modes do not
//! change it.
//!
//! The neighbour search and the smoothing are [`crate::cloud`]'s.

use nalgebra::{SMatrix, SVector, Vector3};

use crate::cloud::Cloud;

/// The nodes' curvatures and the lookup of the curvature near the surface.
#[derive(Debug, Clone, PartialEq)]
pub struct Curvature {
    /// `kappa_k = sqrt(max(K, 0))` at each node (length^-1).
    pub nodes: Vec<f64>,
    /// The nodes, with the fit and smoothing radius `r`.
    cloud: Cloud,
}

/// The quartic's terms `u^p v^q`, the tangent plane's first.
const POWERS: [(i32, i32); TERMS] = [
    (0, 0),
    (1, 0),
    (0, 1),
    (2, 0),
    (1, 1),
    (0, 2),
    (3, 0),
    (2, 1),
    (1, 2),
    (0, 3),
    (4, 0),
    (3, 1),
    (2, 2),
    (1, 3),
    (0, 4),
];

/// The quartic's coefficients.
const TERMS: usize = 15;

/// The fewest neighbours (the node included) a fit is made with.
const FEWEST: usize = 24;

impl Curvature {
    /// The curvatures at `nodes` with unit outward `normals`, from the node `areas` (module
    /// docs). An empty node list gives an empty field.
    pub fn new(nodes: &[Vector3<f64>], normals: &[Vector3<f64>], areas: &[f64]) -> Curvature {
        let mut spacing: Vec<f64> = areas.iter().map(|a| a.sqrt()).collect();
        spacing.sort_by(f64::total_cmp);
        let radius = 3.0 * spacing.get(spacing.len() / 2).copied().unwrap_or(1.0);
        let mut field = Curvature {
            nodes: Vec::new(),
            cloud: Cloud::new(nodes.to_vec(), radius),
        };
        field.nodes = (0..nodes.len())
            .map(|k| field.fit(k, &normals[k]))
            .collect();
        field
    }

    /// `kappa` at node `k` (module docs), widening the neighbourhood until it holds
    /// [`FEWEST`] nodes.
    fn fit(&self, k: usize, n: &Vector3<f64>) -> f64 {
        let x = self.cloud.points[k];
        let t1 = n.cross(&if n.x.abs() < 0.9 {
            Vector3::x()
        } else {
            Vector3::y()
        });
        let t1 = t1.normalize();
        let t2 = n.cross(&t1);
        let mut reach = self.cloud.radius;
        loop {
            let mut normal = SMatrix::<f64, TERMS, TERMS>::zeros();
            let mut rhs = SVector::<f64, TERMS>::zeros();
            let mut count = 0;
            self.cloud.near(&x, reach, |j, _| {
                let d = (self.cloud.points[j] - x) / reach;
                let (u, v, w) = (d.dot(&t1), d.dot(&t2), d.dot(n));
                let row = SVector::<f64, TERMS>::from_fn(|i, _| {
                    let (p, q) = POWERS[i];
                    u.powi(p) * v.powi(q)
                });
                normal += row * row.transpose();
                rhs += row * w;
                count += 1;
            });
            if count >= FEWEST || reach > 8.0 * self.cloud.radius {
                let Some(c) = normal.cholesky().map(|l| l.solve(&rhs)) else {
                    return 0.0;
                };
                // The fit is in units of `reach`: w_uu = 2 c[3] / reach, and so on.
                let (fuu, fuv, fvv) = (2.0 * c[3], c[4], 2.0 * c[5]);
                // A concave dimple (bending towards its outward normal) has K > 0 too.
                if fuu + fvv >= 0.0 {
                    return 0.0;
                }
                let k = (fuu * fvv - fuv * fuv) / (1.0 + c[1] * c[1] + c[2] * c[2]).powi(2);
                return k.max(0.0).sqrt() / reach;
            }
            reach *= 1.5;
        }
    }

    /// The curvature at point `y` of the grain's frame, near its surface (module docs).
    pub fn at(&self, y: &Vector3<f64>) -> f64 {
        (self.cloud.weights(y).iter())
            .map(|&(k, w)| w * self.nodes[k])
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` points spread evenly over the unit sphere (a Fibonacci lattice).
    fn unit_sphere(count: usize) -> Vec<Vector3<f64>> {
        let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
        (0..count)
            .map(|i| {
                let z = 1.0 - 2.0 * (i as f64 + 0.5) / count as f64;
                let r = (1.0 - z * z).sqrt();
                let t = golden * i as f64;
                Vector3::new(r * t.cos(), r * t.sin(), z)
            })
            .collect()
    }

    #[test]
    fn a_sphere_has_the_inverse_of_its_radius_everywhere() {
        let r = 10.0;
        let unit = unit_sphere(1000);
        let nodes: Vec<_> = unit.iter().map(|u| u * r).collect();
        let areas = vec![4.0 * std::f64::consts::PI * r * r / 1000.0; 1000];
        let c = Curvature::new(&nodes, &unit, &areas);
        for kappa in &c.nodes {
            assert!((kappa * r - 1.0).abs() < 0.003, "{kappa}");
        }
        // Between nodes and a little inside the surface.
        let y = Vector3::new(0.3, -0.2, 0.93).normalize() * (r - 0.1);
        assert!((c.at(&y) * r - 1.0).abs() < 0.003);
    }

    #[test]
    fn an_ellipsoid_has_its_closed_form_gaussian_curvature() {
        // K = 1 / ((a b c)^2 (x^2/a^4 + y^2/b^4 + z^2/c^4)^2) (do Carmo, section 3-3, exercise).
        let (a, b, c) = (10.0, 8.0, 6.0);
        let unit = unit_sphere(4000);
        let nodes: Vec<_> = (unit.iter())
            .map(|u| Vector3::new(a * u.x, b * u.y, c * u.z))
            .collect();
        let normals: Vec<_> = (nodes.iter())
            .map(|x| Vector3::new(x.x / (a * a), x.y / (b * b), x.z / (c * c)).normalize())
            .collect();
        // The ellipsoid's area (Knud Thomsen's approximation, to 1 %) shared evenly: the spacing
        // sets the fit's radius only.
        let p = 1.6075;
        let area = 4.0
            * std::f64::consts::PI
            * (((a * b).powf(p) + (a * c).powf(p) + (b * c).powf(p)) / 3.0).powf(1.0 / p);
        let areas = vec![area / 4000.0; 4000];
        let field = Curvature::new(&nodes, &normals, &areas);
        let mut worst: f64 = 0.0;
        for (x, kappa) in nodes.iter().zip(&field.nodes) {
            let s = x.x * x.x / a.powi(4) + x.y * x.y / b.powi(4) + x.z * x.z / c.powi(4);
            let exact = 1.0 / (a * b * c * s);
            worst = worst.max((kappa / exact - 1.0).abs());
        }
        assert!(worst < 0.003, "worst relative error {worst}");
    }

    #[test]
    fn a_plane_is_flat_and_a_saddle_counts_as_flat() {
        let mut nodes = Vec::new();
        for i in -10..=10 {
            for j in -10..=10 {
                let (u, v) = (i as f64 * 0.5, j as f64 * 0.5);
                nodes.push(Vector3::new(u, v, 0.02 * (u * u - v * v)));
            }
        }
        let normals = vec![Vector3::z(); nodes.len()];
        let field = Curvature::new(&nodes, &normals, &vec![0.25; nodes.len()]);
        assert_eq!(field.at(&Vector3::zeros()), 0.0);
        let flat: Vec<_> = nodes.iter().map(|x| Vector3::new(x.x, x.y, 0.0)).collect();
        let field = Curvature::new(&flat, &normals, &vec![0.25; nodes.len()]);
        assert!(field.at(&Vector3::new(0.1, 0.2, 0.0)) < 1e-9);
    }
}
