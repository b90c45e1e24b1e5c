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
//! [`Curvature::smoothed`] is the mean of the nodes' `kappa_k` within `r` of the point, weighted
//! by `(1 - d^2 / r^2)^2` ([`Cloud::weights`]): continuous in the point, so that a law reading
//! it gives forces without jumps between nodes. The curvature is the reference shape's: a
//! deformable grain's modes do not change it.
//!
//! A contact reads it at every node in contact, and the neighbour search cost a fifth of a dense
//! packing's step (measured): [`Curvature::at`] is instead the trilinear interpolant of a table
//! at the nodes of the grain's level-set grid within `r + sqrt(3) h` of its surface (`h` the
//! spacing), continuous too. A grid node's entry is `smoothed` at the closest point of the
//! surface, `y - phi grad phi / |grad phi|^2` iterated (the curvature extended constant along
//! the normals, as level-set methods extend a surface quantity: Adalsteinsson and Sethian,
//! *J. Comput. Phys.* 148, 1999): a grid node farther than `r` from every surface node (a grain
//! whose nodes are finer than its grid) has an entry too, and the surface's cells are all
//! tabulated. `smoothed` itself serves a cell with a corner outside the band (a point deep in
//! the grain, or off the grid): the only place where `at` can jump, by the table's
//! interpolation error. Exact for a sphere (a constant field); elsewhere within `O(h^2)` of the
//! extended field times its second derivatives (tests).
//!
//! The neighbour search and the smoothing are [`crate::cloud`]'s.

use grain::{LevelSetGrid, Located};
use nalgebra::{Point3, SMatrix, SVector, Vector3};

use crate::cloud::Cloud;

/// The nodes' curvatures and the lookup of the curvature near the surface.
#[derive(Debug, Clone, PartialEq)]
pub struct Curvature {
    /// `kappa_k = sqrt(max(K, 0))` at each node (length^-1).
    pub nodes: Vec<f64>,
    /// The nodes, with the fit and smoothing radius `r`.
    cloud: Cloud,
    /// [`Curvature::smoothed`] at the level-set grid's nodes near the surface, infinite
    /// elsewhere (not NaN: the field compares equal to itself).
    table: Vec<f64>,
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
    /// The curvatures at `nodes` with unit outward `normals`, from the node `areas`, tabulated
    /// on the nodes of the shape's level-set `grid` (module docs). An empty node list gives an
    /// empty field.
    ///
    /// Cost: a fit per node (a 15 x 15 normal matrix over its ~30 neighbours) and a lookup per
    /// grid node in the band.
    pub fn new(
        nodes: &[Vector3<f64>],
        normals: &[Vector3<f64>],
        areas: &[f64],
        grid: &LevelSetGrid,
    ) -> Curvature {
        let mut spacing: Vec<f64> = areas.iter().map(|a| a.sqrt()).collect();
        spacing.sort_by(f64::total_cmp);
        let radius = 3.0 * spacing.get(spacing.len() / 2).copied().unwrap_or(1.0);
        let mut field = Curvature {
            nodes: Vec::new(),
            cloud: Cloud::new(nodes.to_vec(), radius),
            table: Vec::new(),
        };
        field.nodes = (0..nodes.len())
            .map(|k| field.fit(k, &normals[k]))
            .collect();
        let band = radius + 3f64.sqrt() * grid.spec().spacing;
        field.table = (grid.values().iter().enumerate())
            .map(|(n, phi)| {
                if phi.abs() > band {
                    return f64::INFINITY;
                }
                let y = closest_point(grid, grid.node_position(n));
                if field.cloud.reaches(&y) {
                    field.smoothed(&y)
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        field
    }

    /// The table's value at a located point: the trilinear interpolant of its cell's entries,
    /// if all 8 are tabulated (module docs).
    fn tabulated(&self, at: &Located) -> Option<f64> {
        let value: f64 = (at.corners.iter().zip(at.weights()))
            .map(|(&n, w)| w * self.table[n])
            .sum();
        // A corner outside the band makes the sum infinite or NaN, whatever its weight.
        (at.is_inside() && value.is_finite()).then_some(value)
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

    /// The smoothed curvature at point `y` of the grain's frame, near its surface (module
    /// docs): the definition [`Curvature::at`] interpolates.
    pub fn smoothed(&self, y: &Vector3<f64>) -> f64 {
        (self.cloud.weights(y).iter())
            .map(|&(k, w)| w * self.nodes[k])
            .sum()
    }

    /// The curvature at point `y` of the grain's frame, near its surface, located on the
    /// level-set grid the field was built with (`at`): the table's trilinear interpolant, or
    /// [`Curvature::smoothed`] where the cell is not all tabulated (module docs).
    pub fn at(&self, y: &Vector3<f64>, at: &Located) -> f64 {
        debug_assert!(
            at.corners[7] < self.table.len(),
            "located on another grid than the curvature's"
        );
        self.tabulated(at).unwrap_or_else(|| self.smoothed(y))
    }
}

/// The closest point of the level set's zero surface to `y`: three steps of
/// `y - phi grad phi / |grad phi|^2` (exact in one for a signed distance; `y` itself where the
/// gradient vanishes).
fn closest_point(grid: &LevelSetGrid, y: Point3<f64>) -> Vector3<f64> {
    let mut y = y;
    for _ in 0..3 {
        let (phi, g) = grid.value_and_gradient(&y);
        let g2 = g.norm_squared();
        if g2 == 0.0 || !phi.is_finite() {
            break;
        }
        y -= g * (phi / g2);
    }
    y.coords
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

    /// A level-set grid of spacing `h` over the cube `[-half, half]^3` with values `phi`.
    fn grid(h: f64, half: f64, phi: impl Fn(Vector3<f64>) -> f64) -> LevelSetGrid {
        let n = (2.0 * half / h).round() as usize + 1;
        let spec = grain::GridSpec {
            origin: [-half; 3],
            spacing: h,
            dims: [n; 3],
        };
        LevelSetGrid::from_fn(spec, |p| phi(p.coords)).unwrap()
    }

    /// `Curvature::at` at local point `y` on `grid`.
    fn at(field: &Curvature, grid: &LevelSetGrid, y: &Vector3<f64>) -> f64 {
        field.at(y, &grid.locate(&(*y).into()))
    }

    #[test]
    fn a_sphere_has_the_inverse_of_its_radius_everywhere() {
        let r = 10.0;
        let unit = unit_sphere(1000);
        let nodes: Vec<_> = unit.iter().map(|u| u * r).collect();
        let areas = vec![4.0 * std::f64::consts::PI * r * r / 1000.0; 1000];
        let g = grid(1.0, 12.0, |x| x.norm() - r);
        let c = Curvature::new(&nodes, &unit, &areas, &g);
        for kappa in &c.nodes {
            assert!((kappa * r - 1.0).abs() < 0.003, "{kappa}");
        }
        // Between nodes and a little inside the surface: the table, and the smoothing itself
        // deeper than the table's band.
        let y = Vector3::new(0.3, -0.2, 0.93).normalize() * (r - 0.1);
        assert!((at(&c, &g, &y) * r - 1.0).abs() < 0.003);
        assert!((c.smoothed(&y) * r - 1.0).abs() < 0.003);
        let deep = y.normalize() * 4.0;
        assert_eq!(at(&c, &g, &deep), c.smoothed(&deep));
    }

    /// Nodes finer than the grid (a smoothing radius `r` = 0.85 below the spacing 1.0, the
    /// validation ball's proportions): the grid nodes next to the surface have no surface node
    /// within `r`, yet every cell the surface crosses is tabulated, with the sphere's `1 / R`.
    /// (Tabulating `smoothed` at the grid nodes themselves left such cells to the neighbour
    /// search.)
    #[test]
    fn nodes_finer_than_the_grid_are_tabulated_all_over_the_surface() {
        let r = 10.0;
        let count = 16_000;
        let unit = unit_sphere(count);
        let nodes: Vec<_> = unit.iter().map(|u| u * r).collect();
        let areas = vec![4.0 * std::f64::consts::PI * r * r / count as f64; count];
        let g = grid(1.0, 12.0, |x| x.norm() - r);
        let c = Curvature::new(&nodes, &unit, &areas, &g);
        assert!(c.cloud.radius < 0.9, "{}", c.cloud.radius);
        for (u, depth) in unit_sphere(500).iter().zip([-0.3, 0.0, 0.3].iter().cycle()) {
            let y = u * (r + depth);
            let value = c.tabulated(&g.locate(&y.into()));
            assert!(
                value.is_some_and(|k| (k * r - 1.0).abs() < 0.003),
                "{y}: {value:?}"
            );
        }
    }

    #[test]
    fn the_table_interpolates_the_smoothed_curvature_of_an_ellipsoid() {
        // At 1,000 points from the surface to 0.2 inside, the trilinear table is within h^2 / 8
        // times the smoothed field's second derivatives of it: 0.31 % at most on this 0.5 grid
        // (measured; bounded at 0.5 %). The smoothing's own error there, against the closed
        // form of the next test, is larger: 1.28 % between the surface nodes, the mean over
        // `r` of a varying curvature (measured, not asserted: the table's business is to
        // reproduce `smoothed`, which the nodes' fits check).
        let (a, b, c) = (10.0, 8.0, 6.0);
        let (nodes, normals, areas) = ellipsoid(a, b, c, 4000);
        // A first-order distance: the band only needs the nodes near the surface.
        let phi = |x: Vector3<f64>| {
            let q = Vector3::new(x.x / a, x.y / b, x.z / c);
            let gradient = Vector3::new(q.x / a, q.y / b, q.z / c) / q.norm().max(1e-9);
            (q.norm() - 1.0) / gradient.norm().max(1e-9)
        };
        let g = grid(0.5, 11.0, phi);
        let field = Curvature::new(&nodes, &normals, &areas, &g);
        let mut worst: f64 = 0.0;
        for (u, depth) in unit_sphere(1000)
            .iter()
            .zip([0.0, 0.05, 0.2].iter().cycle())
        {
            let x = Vector3::new(a * u.x, b * u.y, c * u.z);
            let n = Vector3::new(x.x / (a * a), x.y / (b * b), x.z / (c * c)).normalize();
            let y = x - n * *depth;
            let (table, smoothed) = (at(&field, &g, &y), field.smoothed(&y));
            assert_ne!(table, smoothed, "the table served {y}");
            worst = worst.max((table / smoothed - 1.0).abs());
        }
        assert!(worst < 0.005, "worst relative difference {worst}");
        // Continuity across a face: the two cells' interpolants agree on it.
        let face = Vector3::new(0.5 * 13.0 - 11.0 + 1e-12, 3.1, 0.0);
        let face =
            face + Vector3::z() * (c * (1.0 - (face.x / a).powi(2) - (face.y / b).powi(2)).sqrt());
        let below = face - Vector3::x() * 2e-12;
        assert!((at(&field, &g, &face) - at(&field, &g, &below)).abs() < 1e-12);
    }

    /// `count` nodes on the ellipsoid of semi-axes `a`, `b`, `c` (the Fibonacci lattice
    /// stretched), their unit normals and equal shares of its area (Knud Thomsen's
    /// approximation, to 1 %: the spacing sets the fit's radius only).
    fn ellipsoid(
        a: f64,
        b: f64,
        c: f64,
        count: usize,
    ) -> (Vec<Vector3<f64>>, Vec<Vector3<f64>>, Vec<f64>) {
        let nodes: Vec<_> = (unit_sphere(count).iter())
            .map(|u| Vector3::new(a * u.x, b * u.y, c * u.z))
            .collect();
        let normals = (nodes.iter())
            .map(|x| Vector3::new(x.x / (a * a), x.y / (b * b), x.z / (c * c)).normalize())
            .collect();
        let p = 1.6075;
        let area = 4.0
            * std::f64::consts::PI
            * (((a * b).powf(p) + (a * c).powf(p) + (b * c).powf(p)) / 3.0).powf(1.0 / p);
        (nodes, normals, vec![area / count as f64; count])
    }

    #[test]
    fn an_ellipsoid_has_its_closed_form_gaussian_curvature() {
        // K = 1 / ((a b c)^2 (x^2/a^4 + y^2/b^4 + z^2/c^4)^2) (do Carmo, section 3-3, exercise).
        let (a, b, c) = (10.0, 8.0, 6.0);
        let (nodes, normals, areas) = ellipsoid(a, b, c, 4000);
        let field = Curvature::new(&nodes, &normals, &areas, &grid(2.0, 12.0, |_| 0.0));
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
        let g = grid(1.0, 6.0, |x| x.z);
        let field = Curvature::new(&nodes, &normals, &vec![0.25; nodes.len()], &g);
        assert_eq!(at(&field, &g, &Vector3::zeros()), 0.0);
        let flat: Vec<_> = nodes.iter().map(|x| Vector3::new(x.x, x.y, 0.0)).collect();
        let field = Curvature::new(&flat, &normals, &vec![0.25; nodes.len()], &g);
        assert!(at(&field, &g, &Vector3::new(0.1, 0.2, 0.0)) < 1e-9);
    }
}
