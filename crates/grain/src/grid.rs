//! The level-set grid: a signed distance function sampled on a regular grid, with trilinear value
//! and gradient at any point.
//!
//! Conventions: the grid has `dims = [nx, ny, nz]` nodes (at least 2 per axis), node `(i, j, k)`
//! sits at `origin + spacing * (i, j, k)`, and values are stored in C order of `(nx, ny, nz)`
//! (`k` fastest), the layout of `levelset.npy`. Values are negative inside the grain.
//!
//! Points outside the grid box get a documented, continuous extension with no panic:
//! `phi(p) = phi(c) + |p - c|`, where `c` is the closest point of the box (each coordinate
//! clamped). Far from the grain this is an upper bound of the distance (for a box that contains the
//! grain with padding, the border values are positive), so a point outside the box is reported
//! outside the grain, which is what a contact search needs. Its gradient is the exact gradient of
//! that extension: the trilinear gradient at `c` along the axes that were not clamped, plus
//! `(p - c) / |p - c|`.

use nalgebra::{Point3, Vector3};
use serde::{Deserialize, Serialize};

/// Where the grid sits and how it is sampled: the `grid` field of `grain.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    /// Position of node `(0, 0, 0)`, in the grain's local frame (length units).
    pub origin: [f64; 3],
    /// Distance between neighbouring nodes, the same on every axis (length units).
    pub spacing: f64,
    /// Node counts `[nx, ny, nz]`, each at least 2.
    pub dims: [usize; 3],
}

impl GridSpec {
    /// Total node count `nx * ny * nz`.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether the grid has no nodes (never true for a validated spec).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Linear index of node `(i, j, k)` in C order.
    #[inline]
    pub fn index(&self, i: usize, j: usize, k: usize) -> usize {
        (i * self.dims[1] + j) * self.dims[2] + k
    }

    /// Position of node `(i, j, k)`.
    pub fn node(&self, i: usize, j: usize, k: usize) -> Point3<f64> {
        Point3::new(
            self.origin[0] + self.spacing * i as f64,
            self.origin[1] + self.spacing * j as f64,
            self.origin[2] + self.spacing * k as f64,
        )
    }

    /// The far corner of the grid box, node `(nx-1, ny-1, nz-1)`.
    pub fn upper(&self) -> Point3<f64> {
        self.node(self.dims[0] - 1, self.dims[1] - 1, self.dims[2] - 1)
    }

    /// Checks the spec; the error names the offending field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.spacing.is_finite() && self.spacing > 0.0) {
            return Err((
                "spacing",
                format!("must be finite and > 0, got {}", self.spacing),
            ));
        }
        if self.origin.iter().any(|x| !x.is_finite()) {
            return Err(("origin", format!("must be finite, got {:?}", self.origin)));
        }
        if self.dims.iter().any(|&n| n < 2) {
            return Err((
                "dims",
                format!("need at least 2 nodes per axis, got {:?}", self.dims),
            ));
        }
        Ok(())
    }
}

/// A signed distance function on a regular grid. See the [module docs](self) for conventions.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSetGrid {
    spec: GridSpec,
    values: Vec<f64>,
}

/// Why a [`LevelSetGrid`] could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GridError {
    /// A field of the [`GridSpec`] is out of range.
    #[error("grid `{field}`: {message}")]
    Spec {
        /// The field.
        field: &'static str,
        /// What was expected.
        message: String,
    },
    /// The value count is not `nx * ny * nz`.
    #[error("grid of dims {dims:?} needs {expected} values, got {found}")]
    Length {
        /// The grid's dims.
        dims: [usize; 3],
        /// `nx * ny * nz`.
        expected: usize,
        /// The number given.
        found: usize,
    },
    /// A value is NaN or infinite.
    #[error("grid value at node {node:?} is not finite")]
    NonFinite {
        /// The node `(i, j, k)`.
        node: [usize; 3],
    },
}

/// Where a point falls on the grid ([`LevelSetGrid::locate`]): the cell holding the closest
/// point `c` of the grid box, and, outside the box, the offset `p - c`. Fields given on the grid
/// nodes (the level set, a mode's displacement, a precomputed level set) are interpolated at the
/// point from their values at [`Located::corners`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Located {
    /// Linear indices of the cell's 8 corner nodes, ordered `[4*a + 2*b + c]` for offsets
    /// `(a, b, c)` along x, y, z.
    pub corners: [usize; 8],
    /// Local coordinates of `c` in the cell, in `[0, 1]^3`.
    pub t: [f64; 3],
    /// Which axes were clamped (the point is outside the box along them).
    clamped: [bool; 3],
    /// `p - c`.
    out: Vector3<f64>,
}

impl Located {
    /// The trilinear weights of the corners at the (clamped) point; they sum to 1.
    #[inline]
    pub fn weights(&self) -> [f64; 8] {
        let [tx, ty, tz] = self.t;
        let w = |a: usize, b: usize, c: usize| {
            (if a == 1 { tx } else { 1.0 - tx })
                * (if b == 1 { ty } else { 1.0 - ty })
                * (if c == 1 { tz } else { 1.0 - tz })
        };
        std::array::from_fn(|i| w(i >> 2, (i >> 1) & 1, i & 1))
    }

    /// Whether the point lies in the closed grid box.
    #[inline]
    pub fn is_inside(&self) -> bool {
        !self.clamped.iter().any(|&c| c)
    }
}

impl LevelSetGrid {
    /// Builds a grid from its spec and values in C order (`k` fastest).
    pub fn new(spec: GridSpec, values: Vec<f64>) -> Result<Self, GridError> {
        spec.validate()
            .map_err(|(field, message)| GridError::Spec { field, message })?;
        if values.len() != spec.len() {
            return Err(GridError::Length {
                dims: spec.dims,
                expected: spec.len(),
                found: values.len(),
            });
        }
        if let Some(n) = values.iter().position(|v| !v.is_finite()) {
            let [_, ny, nz] = spec.dims;
            return Err(GridError::NonFinite {
                node: [n / (ny * nz), (n / nz) % ny, n % nz],
            });
        }
        Ok(LevelSetGrid { spec, values })
    }

    /// Samples `f` at every node.
    pub fn from_fn(spec: GridSpec, f: impl Fn(Point3<f64>) -> f64) -> Result<Self, GridError> {
        let [nx, ny, nz] = spec.dims;
        let mut values = Vec::with_capacity(nx * ny * nz);
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    values.push(f(spec.node(i, j, k)));
                }
            }
        }
        Self::new(spec, values)
    }

    /// The grid's placement.
    pub fn spec(&self) -> &GridSpec {
        &self.spec
    }

    /// The node values in C order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Consumes the grid, returning spec and values.
    pub fn into_parts(self) -> (GridSpec, Vec<f64>) {
        (self.spec, self.values)
    }

    /// Locates `p`: the cell of its closest point in the grid box (points on the upper faces
    /// belong to the last cell, so every point of the closed box has a cell).
    ///
    /// Cost: a clamp and three truncations; no allocation.
    #[inline]
    pub fn locate(&self, p: &Point3<f64>) -> Located {
        let (c, clamped) = self.clamp(p);
        let s = &self.spec;
        let mut idx = [0usize; 3];
        let mut t = [0.0; 3];
        for d in 0..3 {
            let x = (c[d] - s.origin[d]) / s.spacing;
            // `as` truncates toward zero and saturates negatives and NaN to 0: for the clamped
            // point (x >= 0 up to rounding) it is floor(x).max(0), without a libm call.
            let i = (x as usize).min(s.dims[d] - 2);
            idx[d] = i;
            t[d] = x - i as f64;
        }
        Located {
            corners: self.corner_indices(s.index(idx[0], idx[1], idx[2])),
            t,
            clamped,
            out: p - c,
        }
    }

    /// The 8 corner node indices of a cell, ordered `[4*a + 2*b + c]` for offsets `(a, b, c)`.
    #[inline]
    fn corner_indices(&self, base: usize) -> [usize; 8] {
        let [_, ny, nz] = self.spec.dims;
        let (di, dj) = (ny * nz, nz);
        [
            base,
            base + 1,
            base + dj,
            base + dj + 1,
            base + di,
            base + di + 1,
            base + di + dj,
            base + di + dj + 1,
        ]
    }

    /// Position of node `n` (linear index).
    #[inline]
    pub fn node_position(&self, n: usize) -> Point3<f64> {
        let [_, ny, nz] = self.spec.dims;
        self.spec.node(n / (ny * nz), (n / nz) % ny, n % nz)
    }

    /// The closest point of the grid box to `p`, and which axes were clamped.
    #[inline]
    fn clamp(&self, p: &Point3<f64>) -> (Point3<f64>, [bool; 3]) {
        let lo = self.spec.origin;
        let hi = self.spec.upper();
        let mut c = *p;
        let mut clamped = [false; 3];
        for d in 0..3 {
            if p[d] < lo[d] {
                c[d] = lo[d];
                clamped[d] = true;
            } else if p[d] > hi[d] {
                c[d] = hi[d];
                clamped[d] = true;
            }
        }
        (c, clamped)
    }

    /// Whether `p` lies in the closed grid box.
    pub fn contains(&self, p: &Point3<f64>) -> bool {
        let (_, clamped) = self.clamp(p);
        !clamped.iter().any(|&c| c)
    }

    /// The level set's values at a cell's corners.
    #[inline]
    pub fn corner_values(&self, at: &Located) -> [f64; 8] {
        at.corners.map(|n| self.values[n])
    }

    /// The interpolated signed distance at `p` (extended outside the box as in the module docs).
    #[inline]
    pub fn value(&self, p: &Point3<f64>) -> f64 {
        self.value_and_gradient(p).0
    }

    /// The interpolated signed distance at `p` and its gradient (the exact gradient of the
    /// trilinear interpolant; on a cell face, the one of the cell on the lower side, except on the
    /// upper faces of the box). Outside the box, the extension of the module docs.
    ///
    /// Cost: one cell lookup and 8 value reads; no allocation.
    #[inline]
    pub fn value_and_gradient(&self, p: &Point3<f64>) -> (f64, Vector3<f64>) {
        let at = self.locate(p);
        self.interpolate(&at, &self.corner_values(&at))
    }

    /// The level set of the grain deformed by the displacement field `u` (given at the grid
    /// nodes by linear index), by the semi-Lagrangian remap of docs/physics.md section 5
    /// (paper Eqs. 47-48): each corner `c` of the cell holding `p` takes the reference value at
    /// `c - u(c)`, and those 8 values are interpolated trilinearly at `p`, which also gives the
    /// gradient. Outside the grid box, the extension of the module docs applied to the remapped
    /// field.
    ///
    /// Accuracy: the result is the reference distance pulled back through the deformation, not
    /// a distance: it differs from the deformed grain's true signed distance by about
    /// `|grad u| (|phi| + |u|)` plus the trilinear interpolation error, and its zero level set
    /// follows the surface to that order. For a uniform dilation `u = eps x` of a sphere of
    /// radius `R` the first part is exactly `eps (phi + eps R)`; levelset-bake's tests check the
    /// whole bound `|eps| (|phi| + |eps| R) + h^2 / (2 r)` within two cells of the surface.
    pub fn remapped_value_and_gradient(
        &self,
        p: &Point3<f64>,
        u: impl Fn(usize) -> Vector3<f64>,
    ) -> (f64, Vector3<f64>) {
        let at = self.locate(p);
        let c = at
            .corners
            .map(|n| self.value(&(self.node_position(n) - u(n))));
        self.interpolate(&at, &c)
    }

    /// The trilinear interpolant of the corner values `c` (ordered as [`Located::corners`]) at
    /// a located point, with its exact gradient, and the outside-the-box extension of the module
    /// docs (`value(c) + |p - c|`).
    #[inline]
    pub fn interpolate(&self, at: &Located, c: &[f64; 8]) -> (f64, Vector3<f64>) {
        let (value, mut grad) = trilinear(c, at.t, self.spec.spacing);
        if at.is_inside() {
            return (value, grad);
        }
        let out = at.out;
        // Scaled norm: finite for any finite point, even where the squares overflow.
        let scale = out.amax();
        let dist = scale * (out / scale).norm();
        for d in 0..3 {
            if at.clamped[d] {
                grad[d] = out[d] / dist;
            }
        }
        (value + dist, grad)
    }
}

/// Trilinear value and gradient from the 8 corner values of a cell (ordered as
/// `corner_indices`), local coordinates `t` in `[0, 1]^3` and the cell size `h`.
#[inline]
fn trilinear(c: &[f64; 8], [tx, ty, tz]: [f64; 3], h: f64) -> (f64, Vector3<f64>) {
    // Interpolate along z, then y, then x; keep the differences for the gradient.
    let c00 = c[0] + tz * (c[1] - c[0]);
    let c01 = c[2] + tz * (c[3] - c[2]);
    let c10 = c[4] + tz * (c[5] - c[4]);
    let c11 = c[6] + tz * (c[7] - c[6]);
    let c0 = c00 + ty * (c01 - c00);
    let c1 = c10 + ty * (c11 - c10);
    let value = c0 + tx * (c1 - c0);

    let dx = c1 - c0;
    let dy = (1.0 - tx) * (c01 - c00) + tx * (c11 - c10);
    let dz0 = (1.0 - ty) * (c[1] - c[0]) + ty * (c[3] - c[2]);
    let dz1 = (1.0 - ty) * (c[5] - c[4]) + ty * (c[7] - c[6]);
    let dz = (1.0 - tx) * dz0 + tx * dz1;
    (value, Vector3::new(dx, dy, dz) / h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> GridSpec {
        GridSpec {
            origin: [-1.0, -2.0, 0.5],
            spacing: 0.25,
            dims: [9, 13, 7],
        }
    }

    fn linear(p: Point3<f64>) -> f64 {
        0.3 * p.x - 1.7 * p.y + 2.1 * p.z + 0.4
    }

    /// A deterministic spread of points, some exactly on nodes and faces.
    fn probe_points(spec: &GridSpec) -> Vec<Point3<f64>> {
        use rand::{RngExt, SeedableRng};
        let lo = Point3::from(spec.origin);
        let ext = spec.upper() - lo;
        let mut pts = vec![lo, spec.upper(), spec.node(3, 5, 2)];
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(3);
        for _ in 0..500 {
            let r: [f64; 3] = [rng.random(), rng.random(), rng.random()];
            pts.push(lo + ext.component_mul(&Vector3::from(r)));
        }
        pts
    }

    #[test]
    fn trilinear_is_exact_for_linear_fields_with_exact_gradient() {
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let exact_grad = Vector3::new(0.3, -1.7, 2.1);
        for p in probe_points(&s) {
            let (v, g) = grid.value_and_gradient(&p);
            assert!(
                (v - linear(p)).abs() <= 1e-13,
                "value at {p}: {v} vs {}",
                linear(p)
            );
            assert!((g - exact_grad).norm() <= 1e-12, "gradient at {p}: {g}");
        }
    }

    #[test]
    fn trilinear_reproduces_the_bilinear_term_xyz() {
        // The trilinear interpolant is exact for x*y*z (it spans 1, x, y, z, xy, yz, zx, xyz).
        let s = spec();
        let f = |p: Point3<f64>| p.x * p.y * p.z;
        let grid = LevelSetGrid::from_fn(s.clone(), f).unwrap();
        for p in probe_points(&s) {
            let (v, g) = grid.value_and_gradient(&p);
            assert!((v - f(p)).abs() <= 1e-12);
            let exact = Vector3::new(p.y * p.z, p.x * p.z, p.x * p.y);
            assert!((g - exact).norm() <= 1e-11, "{g} vs {exact}");
        }
    }

    #[test]
    fn located_weights_reproduce_the_interpolated_value() {
        // Inside the box the value is the weighted sum of the corner values, the weights of a
        // cell summing to 1 (the trilinear interpolant written as a partition of unity).
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), |p| p.x * p.y * p.z + p.x).unwrap();
        for p in probe_points(&s) {
            let at = grid.locate(&p);
            let w = at.weights();
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
            let c = grid.corner_values(&at);
            let sum: f64 = w.iter().zip(&c).map(|(w, c)| w * c).sum();
            assert!((sum - grid.value(&p)).abs() < 1e-13, "{p}");
            for (n, corner) in at.corners.iter().enumerate() {
                let x = grid.node_position(*corner);
                let offset = (x - grid.node_position(at.corners[0])) / s.spacing;
                assert_eq!(
                    offset.map(|v| v.round() as usize),
                    Vector3::new(n >> 2, (n >> 1) & 1, n & 1)
                );
            }
        }
    }

    #[test]
    fn remap_by_a_uniform_displacement_translates_the_field() {
        // A translation moves the level set rigidly: phi(x) = phi_0(x - u), exact for a linear
        // field (trilinear interpolation reproduces it), gradient unchanged.
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let u = Vector3::new(0.05, -0.1, 0.02);
        // Points whose whole cell, shifted back by u, stays in the grid (no extension involved).
        let margin = Vector3::repeat(s.spacing);
        let inside =
            |p: &Point3<f64>| grid.contains(&(p - u - margin)) && grid.contains(&(p - u + margin));
        for p in probe_points(&s).into_iter().filter(inside) {
            let (v, g) = grid.remapped_value_and_gradient(&p, |_| u);
            assert!((v - linear(p - u)).abs() < 1e-13, "{p}");
            assert!((g - Vector3::new(0.3, -1.7, 2.1)).norm() < 1e-12);
            let (v0, _) = grid.remapped_value_and_gradient(&p, |_| Vector3::zeros());
            assert_eq!(v0, grid.value(&p));
        }
    }

    #[test]
    fn outside_points_get_border_value_plus_distance_to_box() {
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let upper = s.upper();
        // Beyond the +x face only: value = f(clamped) + distance, gradient x-component = 1.
        let p = Point3::new(upper.x + 2.0, -1.0, 1.0);
        let c = Point3::new(upper.x, -1.0, 1.0);
        let (v, g) = grid.value_and_gradient(&p);
        assert!((v - (linear(c) + 2.0)).abs() < 1e-13);
        assert!((g - Vector3::new(1.0, -1.7, 2.1)).norm() < 1e-12);
        // Beyond a corner: all three components from the outward direction.
        let p = Point3::new(-4.0, -6.0, -2.5);
        let out = p - Point3::from(s.origin);
        let (v, g) = grid.value_and_gradient(&p);
        assert!((v - (linear(Point3::from(s.origin)) + out.norm())).abs() < 1e-12);
        assert!((g - out.normalize()).norm() < 1e-15);
        assert!(!grid.contains(&p));
        assert!(grid.contains(&upper));
        // Far-away and huge coordinates are finite, not a panic.
        let (v, g) = grid.value_and_gradient(&Point3::new(1e300, -1e300, 0.0));
        assert!(v.is_finite() && g.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn bad_grids_are_refused_with_the_field_named() {
        let mut s = spec();
        s.spacing = 0.0;
        let e = LevelSetGrid::new(s, vec![]).unwrap_err();
        assert!(e.to_string().contains("spacing"), "{e}");
        let mut s = spec();
        s.dims[1] = 1;
        assert!(
            LevelSetGrid::new(s, vec![0.0; 63])
                .unwrap_err()
                .to_string()
                .contains("dims")
        );
        let e = LevelSetGrid::new(spec(), vec![0.0; 5]).unwrap_err();
        assert!(e.to_string().contains("needs 819 values, got 5"), "{e}");
        let mut v = vec![0.0; spec().len()];
        v[spec().index(2, 3, 4)] = f64::NAN;
        let e = LevelSetGrid::new(spec(), v).unwrap_err();
        assert_eq!(e, GridError::NonFinite { node: [2, 3, 4] });
    }
}
