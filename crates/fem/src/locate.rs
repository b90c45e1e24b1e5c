//! Locating points in a mesh and interpolating nodal fields with the element shape functions.

use std::collections::HashMap;

use grain::FemMesh;
use nalgebra::{Matrix3, Point3, Vector3};

use crate::shape::{centre, outside_by, shape};

/// Where a point is in the mesh.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Location {
    /// Element block.
    pub block: usize,
    /// Element within the block.
    pub element: usize,
    /// Natural coordinates of the point in the element.
    pub natural: Point3<f64>,
    /// How far outside the element the natural coordinates are (0 when inside).
    pub outside: f64,
}

/// Element bounding boxes hashed into a uniform grid, for point queries.
pub struct Locator<'a> {
    mesh: &'a FemMesh,
    cell: f64,
    buckets: HashMap<[i64; 3], Vec<(usize, usize)>>,
}

impl<'a> Locator<'a> {
    /// Indexes the mesh (bucket size: the mean element extent).
    pub fn new(mesh: &'a FemMesh) -> Self {
        let mut boxes = Vec::new();
        let mut size = 0.0;
        for (b, block) in mesh.blocks.iter().enumerate() {
            for (e, row) in block.connectivity.rows().into_iter().enumerate() {
                let pts: Vec<Point3<f64>> = row.iter().map(|&i| node(mesh, i as usize)).collect();
                let lo = pts.iter().fold(pts[0], |a, p| a.inf(p));
                let hi = pts.iter().fold(pts[0], |a, p| a.sup(p));
                size += (hi - lo).max();
                boxes.push((b, e, lo, hi));
            }
        }
        let cell = (size / boxes.len().max(1) as f64).max(f64::MIN_POSITIVE);
        let mut buckets: HashMap<[i64; 3], Vec<(usize, usize)>> = HashMap::new();
        let key = |p: f64| (p / cell).floor() as i64;
        for (b, e, lo, hi) in boxes {
            let pad = 1e-9 * cell;
            for i in key(lo.x - pad)..=key(hi.x + pad) {
                for j in key(lo.y - pad)..=key(hi.y + pad) {
                    for k in key(lo.z - pad)..=key(hi.z + pad) {
                        buckets.entry([i, j, k]).or_default().push((b, e));
                    }
                }
            }
        }
        Locator {
            mesh,
            cell,
            buckets,
        }
    }

    /// The element containing `p` (natural coordinates within `tolerance` of the element), or,
    /// among the elements whose boxes contain `p`, the one it is least outside of.
    pub fn locate(&self, p: &Point3<f64>, tolerance: f64) -> Option<Location> {
        let key = [p.x, p.y, p.z].map(|v| (v / self.cell).floor() as i64);
        let mut best: Option<Location> = None;
        for &(block, element) in self.buckets.get(&key)? {
            let t = self.mesh.blocks[block].element_type;
            // Newton may wander off for a point far from the element: no location there.
            let Some(natural) = self.natural_coordinates(block, element, p) else {
                continue;
            };
            let outside = outside_by(t, &natural);
            let here = Location {
                block,
                element,
                natural,
                outside,
            };
            if outside <= tolerance {
                return Some(here);
            }
            if best.is_none_or(|b| outside < b.outside) {
                best = Some(here);
            }
        }
        best
    }

    /// Natural coordinates of `p` in an element, by Newton's method on the isoparametric map
    /// (exact in one step for linear tetrahedra; a few steps for curved quadratic elements), or
    /// `None` where it does not converge: the mapped point then stays more than `1e-9` of the
    /// element's extent from `p`. (A point far outside a curved element can send the iterates
    /// anywhere, inside the reference element too: taken as found, a point 4.7 mm outside a ball
    /// of radius 10 was given the field of an element on its surface.)
    pub fn natural_coordinates(
        &self,
        block: usize,
        element: usize,
        p: &Point3<f64>,
    ) -> Option<Point3<f64>> {
        let t = self.mesh.blocks[block].element_type;
        let row = self.mesh.blocks[block].connectivity.row(element);
        let xs: Vec<Vector3<f64>> = row
            .iter()
            .map(|&i| node(self.mesh, i as usize).coords)
            .collect();
        let lo = xs.iter().fold(xs[0], |a, x| a.inf(x));
        let hi = xs.iter().fold(xs[0], |a, x| a.sup(x));
        let tolerance = 1e-9 * (hi - lo).max();
        let (mut n, mut g) = (Vec::new(), Vec::new());
        let mut x = centre(t);
        for _ in 0..30 {
            shape(t, &x, &mut n, &mut g);
            let mapped: Vector3<f64> = xs.iter().zip(&n).map(|(xa, na)| xa * *na).sum();
            let jacobian: Matrix3<f64> =
                xs.iter().zip(&g).map(|(xa, ga)| xa * ga.transpose()).sum();
            let Some(inverse) = jacobian.try_inverse() else {
                break;
            };
            let step = inverse * (mapped - p.coords);
            x -= step;
            if step.norm() < 1e-14 {
                break;
            }
        }
        shape(t, &x, &mut n, &mut g);
        let mapped: Vector3<f64> = xs.iter().zip(&n).map(|(xa, na)| xa * *na).sum();
        ((mapped - p.coords).norm() <= tolerance).then_some(x)
    }

    /// A nodal vector field (one `[f64; 3]` per node) interpolated at a location.
    pub fn interpolate(&self, at: &Location, field: &[[f64; 3]]) -> Vector3<f64> {
        self.interpolate_with_gradient(at, field).0
    }

    /// A nodal vector field interpolated at a location, and its gradient there (column `j` is
    /// `du/dx_j`): `u = sum_a N_a u_a`, `grad u = sum_a u_a (J^-T dN_a/dxi)^T` with
    /// `J = sum_a x_a (dN_a/dxi)^T` the element map's Jacobian. A degenerate element (singular
    /// `J`) gives a zero gradient.
    pub fn interpolate_with_gradient(
        &self,
        at: &Location,
        field: &[[f64; 3]],
    ) -> (Vector3<f64>, Matrix3<f64>) {
        let block = &self.mesh.blocks[at.block];
        let (mut n, mut g) = (Vec::new(), Vec::new());
        shape(block.element_type, &at.natural, &mut n, &mut g);
        let row = block.connectivity.row(at.element);
        let jacobian: Matrix3<f64> = row
            .iter()
            .zip(&g)
            .map(|(&i, ga)| node(self.mesh, i as usize).coords * ga.transpose())
            .sum();
        let inverse_t = jacobian
            .try_inverse()
            .map_or(Matrix3::zeros(), |j| j.transpose());
        let (mut value, mut gradient) = (Vector3::zeros(), Matrix3::zeros());
        for ((&i, na), ga) in row.iter().zip(&n).zip(&g) {
            let u = Vector3::from(field[i as usize]);
            value += u * *na;
            gradient += u * (inverse_t * ga).transpose();
        }
        (value, gradient)
    }
}

/// Node `i` of a mesh as a point.
pub fn node(mesh: &FemMesh, i: usize) -> Point3<f64> {
    Point3::new(mesh.nodes[[i, 0]], mesh.nodes[[i, 1]], mesh.nodes[[i, 2]])
}
