//! The level-set grid: a signed distance function sampled on a regular grid, with a value and
//! gradient at any point, and the trilinear interpolation of fields given on its nodes.
//!
//! Conventions: the grid has `dims = [nx, ny, nz]` nodes (from 2 to 2^32 - 1 per axis), node `(i, j, k)`
//! sits at `origin + spacing * (i, j, k)`, and values are stored in C order of `(nx, ny, nz)`
//! (`k` fastest), the layout of `levelset.npy`. Values are negative inside the grain.
//!
//! **The level set between nodes** ([`LevelSetGrid::sample`]) is the trilinear interpolant
//! corrected by the node values' second differences (docs/physics.md section 4):
//!
//! `phi = T[phi] - 1/2 sum_a t_a (1 - t_a) T[Delta_a phi]` at a point `x`,
//!
//! with `T[.]` the trilinear interpolant of node values over the cell, `t_a` the point's local
//! coordinate in the cell along axis `a`, and `Delta_a phi(n) = phi(n + e_a) - 2 phi(n) +
//! phi(n - e_a)` the second difference at a node (at a node on the box's face, that of its
//! neighbour across the cell), used only where the level set is smooth along `a` there (within
//! a factor 2 of its neighbours' and of their sign, chosen once from the grid's own values;
//! elsewhere 0: at a kink of the distance the correction would bulge the surface out, and the
//! trilinear value is kept). Trilinear interpolation alone reproduces `1, x, y, z, xy, yz, zx,
//! xyz` and misses the pure squares: on a surface of curvature `kappa` it overestimates the
//! distance by up to `h^2 kappa / 4` (a signed distance is convex across a convex surface), a
//! systematic error in every overlap that does not vanish as the overlap does. The correction
//! makes the interpolant exact for every polynomial of degree 2 (and for `x^2` times any
//! bilinear term of the other axes), so the error is third order in `h`. The correction
//! vanishes at the nodes and is continuous across cell faces, and so are the derivatives along a
//! face. The derivative across a face is the central difference interpolated over the face,
//! from either side, plus the other axes' corrections, whose derivative across it jumps by
//! `1/2 sum_{a != b} t_a (1 - t_a) T[Delta_a Delta_b phi] / h`: fourth differences, `O(h^3)`
//! where the trilinear gradient jumps by `Delta_b phi / h`, `O(h)`. The grid's own second
//! differences are stored per node (8 values and 8 triples per query); another level set on the
//! grid (a deformed one) is added to them as node values with their second differences
//! ([`LevelSetGrid::node_lanes`], [`LevelSetGrid::sample_offset`]) or as shifts of the
//! differences ([`LevelSetGrid::sample_shifted`]). [`LevelSetGrid::trilinear_value`] is the plain trilinear value, within
//! [`LevelSetGrid::interpolation_gap`] of it, for early-outs.
//!
//! Points outside the grid box get a documented, continuous extension with no panic:
//! `phi(p) = phi(c) + |p - c|`, where `c` is the closest point of the box (each coordinate
//! clamped). Far from the grain this is an upper bound of the distance (for a box that contains the
//! grain with padding, the border values are positive), so a point outside the box is reported
//! outside the grain, which is what a contact search needs. Its gradient is the exact gradient of
//! that extension: the gradient at `c` along the axes that were not clamped, plus
//! `(p - c) / |p - c|`.

use nalgebra::{Matrix3, Point3, Vector3};
use serde::{Deserialize, Serialize};

/// Where the grid sits and how it is sampled: the `grid` field of `grain.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    /// Position of node `(0, 0, 0)`, in the grain's local frame (length units).
    pub origin: [f64; 3],
    /// Distance between neighbouring nodes, the same on every axis (length units).
    pub spacing: f64,
    /// Node counts `[nx, ny, nz]`, each at least 2 and below 2^32.
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

    /// Checks the spec; the error ([`GridError::Spec`]) names the offending field.
    pub fn validate(&self) -> Result<(), GridError> {
        let spec = |field: &'static str, message: String| Err(GridError::Spec { field, message });
        if !(self.spacing.is_finite() && self.spacing > 0.0) {
            return spec(
                "spacing",
                format!("must be finite and > 0, got {}", self.spacing),
            );
        }
        if self.origin.iter().any(|x| !x.is_finite()) {
            return spec("origin", format!("must be finite, got {:?}", self.origin));
        }
        if self.dims.iter().any(|&n| n < 2) {
            return spec(
                "dims",
                format!("need at least 2 nodes per axis, got {:?}", self.dims),
            );
        }
        // `LevelSetGrid::locate` finds a cell index through `u32`.
        if self.dims.iter().any(|&n| u32::try_from(n).is_err()) {
            return spec(
                "dims",
                format!("at most 2^32 - 1 nodes per axis, got {:?}", self.dims),
            );
        }
        Ok(())
    }
}

/// A signed distance function on a regular grid. See the [module docs](self) for conventions.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSetGrid {
    spec: GridSpec,
    values: Vec<f64>,
    /// Per node, the axes whose second difference the interpolant uses (`smooth_nodes`).
    smooth: Vec<u8>,
    /// Per node, its value and the second differences of the values the interpolant uses
    /// along x, y, z (`node_second_differences` of the grid's own values), side by side: a
    /// corner's four lanes are one read of 32 bytes.
    lanes: Vec<Lanes>,
    /// [`LevelSetGrid::interpolation_gap`].
    gap: f64,
    /// The box's upper corner, [`GridSpec::upper`] (kept: every location clamps to it, and
    /// computing it took three conversions and products a query).
    upper: [f64; 3],
    /// `1 / spacing`, which locations and gradients multiply by: a division's latency (13 to
    /// 20 cycles) delayed each query that waited for its cell, about 6 % of the settle bench's
    /// rigid step in time (docs/performance.md, "Divisions out of the queries").
    inverse_spacing: f64,
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
/// nodes (a level set, a mode's displacement, a normal strain) are interpolated at the
/// point from their values at [`Located::corners`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Located {
    /// Linear indices of the cell's 8 corner nodes, ordered `[4*a + 2*b + c]` for offsets
    /// `(a, b, c)` along x, y, z.
    pub corners: [usize; 8],
    /// Local coordinates of `c` in the cell, in `[0, 1]^3`.
    pub t: [f64; 3],
    /// Where the point lies outside the box.
    outside: Outside,
    /// Per axis, whether the grid has a layer of nodes below the cell (`[0]`) and above it
    /// (`[1]`): the tie rule's cell across a grid plane needs one.
    layers: [[bool; 2]; 3],
    /// Per axis, whether the point lies on an interior grid plane, where the trilinear
    /// interpolant's derivative along the axis jumps: `-1` on the cell's lower face (a cell
    /// below), `1` on its upper face (a cell above), `0` off the planes; within [`TIE`] of a
    /// plane counts as on it.
    tie: [i8; 3],
}

/// The cell of a point ([`LevelSetGrid::cell`]): what the plain trilinear value
/// ([`LevelSetGrid::trilinear_value`]) needs, without [`Located`]'s corner list and tie rule,
/// so that an early-out that rejects the point pays for no more.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Grid coordinates of the cell's first corner.
    first: [usize; 3],
    /// Local coordinates of `c` in the cell, in `[0, 1]^3`.
    t: [f64; 3],
    /// Where the point lies outside the box.
    outside: Outside,
}

/// Where a point lies outside the grid box: what [`Cell`] and [`Located`] share.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Outside {
    /// Which axes were clamped (the point is outside the box along them).
    clamped: [bool; 3],
    /// `p - c`.
    out: Vector3<f64>,
}

impl Outside {
    /// Whether the point lies in the closed grid box.
    #[inline]
    fn is_inside(&self) -> bool {
        !self.clamped.iter().any(|&c| c)
    }

    /// `|p - c|`, the distance from the point to the grid box.
    #[inline]
    fn distance_to_box(&self) -> f64 {
        // Scaled norm: finite for any finite point, even where the squares overflow.
        let scale = self.out.amax();
        scale * (self.out / scale).norm()
    }
}

impl Located {
    /// The trilinear weights of the corners at the (clamped) point; they sum to 1.
    #[inline(always)]
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
        self.outside.is_inside()
    }

    /// Whether the point is outside the box along axis `d` (its value there is the one at the
    /// box's face).
    #[inline]
    pub fn is_clamped(&self, d: usize) -> bool {
        self.outside.clamped[d]
    }

    /// `|p - c|`, the distance from the point to the grid box.
    #[inline]
    fn distance_to_box(&self) -> f64 {
        self.outside.distance_to_box()
    }
}

/// Values the grid interpolates: scalars (level sets) and vectors (mode fields).
pub trait NodeValue:
    Copy
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<f64, Output = Self>
{
}

impl<T> NodeValue for T where
    T: Copy
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<f64, Output = T>
{
}

/// Four node values interpolated together, lane by lane ([`NodeValue`]): a level set's value
/// and its three second differences ([`LevelSetGrid::sample`]), or a displacement's three
/// components and a scalar field carried with it ([`LevelSetGrid::pull_back_from`]). One
/// interpolation of four lanes does each lane's arithmetic in the order of a scalar one, so a
/// lane's bits are those of the scalar field interpolated alone. The compiler keeps them in two
/// halves of a register, or in four scalars; a caller with a vector unit passes its own
/// register type instead ([`FourLanes`]: the deformable level sets' queries, `dem_core::lanes`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Lanes(pub [f64; 4]);

/// Four lanes interpolated together: [`Lanes`], or the same four values held in a caller's
/// vector register, whose arithmetic ([`NodeValue`]) is then the register's, lane by lane in
/// the order of [`Lanes`]'s, so that either gives the same bits. What the pull-back
/// ([`LevelSetGrid::pull_back_from`]) and the corrected samples ([`LevelSetGrid::sample_offset`])
/// interpolate: a caller compiled for a vector unit passes its values in it, and the
/// interpolations run in its registers, where the compiler splits [`Lanes`] into halves
/// (docs/performance.md, "The cell's interpolations in the vector unit").
pub trait FourLanes: NodeValue {
    /// The four values.
    fn lanes(self) -> Lanes;
    /// Four values `x` held as `self` is (in the same vector unit).
    fn like(self, x: Lanes) -> Self;
}

impl FourLanes for Lanes {
    #[inline(always)]
    fn lanes(self) -> Lanes {
        self
    }
    #[inline(always)]
    fn like(self, x: Lanes) -> Lanes {
        x
    }
}

impl Lanes {
    /// A vector's components in the first three lanes, `w` in the fourth.
    #[inline(always)]
    pub fn from_vector(v: Vector3<f64>, w: f64) -> Lanes {
        Lanes([v.x, v.y, v.z, w])
    }

    /// The first three lanes.
    #[inline(always)]
    pub fn vector(self) -> Vector3<f64> {
        Vector3::new(self.0[0], self.0[1], self.0[2])
    }
}

impl std::ops::Add for Lanes {
    type Output = Lanes;
    #[inline(always)]
    fn add(self, b: Lanes) -> Lanes {
        Lanes(std::array::from_fn(|i| self.0[i] + b.0[i]))
    }
}

impl std::ops::Sub for Lanes {
    type Output = Lanes;
    #[inline(always)]
    fn sub(self, b: Lanes) -> Lanes {
        Lanes(std::array::from_fn(|i| self.0[i] - b.0[i]))
    }
}

impl std::ops::Mul<f64> for Lanes {
    type Output = Lanes;
    #[inline(always)]
    fn mul(self, w: f64) -> Lanes {
        Lanes(std::array::from_fn(|i| self.0[i] * w))
    }
}

impl GridSpec {
    /// The node `(i, j, k)` of linear index `n`.
    #[inline]
    pub fn coordinates(&self, n: usize) -> [usize; 3] {
        let [_, ny, nz] = self.dims;
        [n / (ny * nz), (n / nz) % ny, n % nz]
    }

    /// The distance between neighbouring nodes along axis `d`, in linear indices.
    #[inline]
    fn stride(&self, d: usize) -> usize {
        match d {
            0 => self.dims[1] * self.dims[2],
            1 => self.dims[2],
            _ => 1,
        }
    }

    /// The trilinear interpolant of the node values `value(n)` (`n` a linear index) at a located
    /// point, and its partial derivatives along x, y and z (at the clamped point outside the box).
    ///
    /// The interpolant is continuous, its derivative along an axis jumps across the grid planes
    /// normal to it. The tie rule: on an interior grid plane (within [`TIE`] of a cell of it,
    /// on either side) the derivative across it is the mean of the two cells' (the central
    /// difference of the face's nodes and their neighbours on either side, interpolated
    /// bilinearly over the face), so that it does not depend on which cell claims the point and
    /// a field symmetric about the plane has a zero derivative across it (docs/physics.md
    /// section 4). On the box's faces, the one cell's.
    ///
    /// Cost: 8 reads, and 4 more per tied axis.
    #[inline(always)]
    pub fn interpolate_nodes<T: NodeValue>(
        &self,
        at: &Located,
        value: impl Fn(usize) -> T,
    ) -> (T, [T; 3]) {
        let (c, inverse) = (
            std::array::from_fn(|i| value(at.corners[i])),
            1.0 / self.spacing,
        );
        self.interpolate_corners(at, &c, inverse, value)
    }

    /// [`GridSpec::interpolate_nodes`] from the corner values `c` already read, `inverse` the
    /// spacing's reciprocal (a grid keeps it: a division's latency delays the query that waits
    /// for it); `value` reads the neighbours a tie needs.
    #[inline(always)]
    fn interpolate_corners<T: NodeValue>(
        &self,
        at: &Located,
        c: &[T; 8],
        inverse: f64,
        value: impl Fn(usize) -> T,
    ) -> (T, [T; 3]) {
        let (v, mut d) = trilinear(c, at.t, inverse);
        if at.tie.iter().any(|&t| t != 0) {
            for axis in (0..3).filter(|&a| at.tie[a] != 0) {
                // The neighbouring cell's derivative along the axis on the shared face: the
                // differences across it, interpolated bilinearly over the face.
                let bit = 4 >> axis;
                let stride = self.stride(axis);
                let face = |i: usize| -> f64 {
                    (0..3)
                        .filter(|&b| b != axis)
                        .map(|b| {
                            let t = at.t[b];
                            if i & (4 >> b) != 0 { t } else { 1.0 - t }
                        })
                        .product()
                };
                let mut other: Option<T> = None;
                for (i, (&ci, &n)) in c.iter().zip(&at.corners).enumerate() {
                    let term = match (at.tie[axis], i & bit != 0) {
                        (-1, false) => (ci - value(n - stride)) * face(i),
                        (1, true) => (value(n + stride) - ci) * face(i),
                        _ => continue,
                    };
                    other = Some(other.map_or(term, |o| o + term));
                }
                let other = other.expect("a face has 4 corners") * inverse;
                d[axis] = (d[axis] + other) * 0.5;
            }
        }
        (v, d)
    }
}

/// The second difference `Delta_a v(n) = v(n + e_a) - 2 v(n) + v(n - e_a)` from the two
/// neighbours (in either order: the sum is formed first, so that every path gives the same bits)
/// and the node's value.
#[inline(always)]
fn second_difference(neighbour: f64, node: f64, other: f64) -> f64 {
    (neighbour + other) - 2.0 * node
}

/// [`second_difference`] at an interior node of `values` along the axis of `stride`.
#[inline(always)]
fn second_difference_at(values: &[f64], n: usize, stride: usize) -> f64 {
    second_difference(values[n - stride], values[n], values[n + stride])
}

/// Which second differences of the level set's node values the interpolant uses (module docs):
/// per node, bit `a` set where `Delta_a phi` is smooth along `a`, within a factor 2 of, and of
/// the sign of, its neighbours' along `a` (or zero). A kink of the distance (a polyhedron's edge,
/// a centre) makes one node's second difference of order `h` beside zeros: there the correction
/// would bulge the surface out by up to `h / 8`, and trilinear interpolation is kept. Nodes on
/// the box's faces along `a` have no second difference along `a`.
fn smooth_nodes(spec: &GridSpec, values: &[f64]) -> Vec<u8> {
    let mut smooth = vec![0u8; values.len()];
    let [nx, ny, nz] = spec.dims;
    for axis in 0..3 {
        let stride = spec.stride(axis);
        let len = spec.dims[axis];
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    let along = [i, j, k][axis];
                    if along == 0 || along + 1 == len {
                        continue;
                    }
                    let n = spec.index(i, j, k);
                    let d = second_difference_at(values, n, stride);
                    let agrees = |m: usize| {
                        let e = second_difference_at(values, m, stride);
                        e * d > 0.0 && d.abs() <= 2.0 * e.abs() && e.abs() <= 2.0 * d.abs()
                    };
                    let below = along < 2 || agrees(n - stride);
                    let above = along + 2 >= len || agrees(n + stride);
                    if d == 0.0 || (below && above) {
                        smooth[n] |= 1 << axis;
                    }
                }
            }
        }
    }
    smooth
}

/// The second differences the interpolant uses at node `n` along x, y and z: its own where
/// `smooth` has the axis, 0 where it has not; on the box's faces along an axis, those of the
/// neighbour inside (0 if the grid has two nodes along it), which is what a cell's corner on
/// that face takes from the corner across the cell.
fn node_second_differences(spec: &GridSpec, smooth: &[u8], values: &[f64], n: usize) -> [f64; 3] {
    let at = spec.coordinates(n);
    std::array::from_fn(|axis| {
        let stride = spec.stride(axis);
        let last = spec.dims[axis] - 1;
        let m = match at[axis] {
            0 if last > 1 => n + stride,
            i if i == last && last > 1 => n - stride,
            i if i == 0 || i == last => return 0.0,
            _ => n,
        };
        if smooth[m] & (1 << axis) == 0 {
            0.0
        } else {
            second_difference_at(values, m, stride)
        }
    })
}

/// The largest `|phi - T[phi]|` of the corrected interpolant at points where `T[phi] >= -h`
/// (module docs): at most `1/2 sum_a t_a (1 - t_a) max |Delta_a phi| <= 3/8 max |Delta_a phi|`
/// over the second differences used, at the nodes a cell's stencil reaches from such a point
/// (within `4 h` in the 1-norm: `phi >= -(1 + 4 L) h`, `L` the largest difference between
/// neighbouring nodes over `h`).
fn interpolation_gap(spec: &GridSpec, values: &[f64], smooth: &[u8]) -> f64 {
    let h = spec.spacing;
    let mut lipschitz: f64 = 0.0;
    for axis in 0..3 {
        let stride = spec.stride(axis);
        for (n, v) in values.iter().enumerate() {
            if spec.coordinates(n)[axis] + 1 < spec.dims[axis] {
                lipschitz = lipschitz.max((values[n + stride] - v).abs() / h);
            }
        }
    }
    let floor = -(1.0 + 4.0 * lipschitz) * h;
    let mut largest: f64 = 0.0;
    for axis in 0..3 {
        let stride = spec.stride(axis);
        for (n, &v) in values.iter().enumerate() {
            if smooth[n] & (1 << axis) != 0 && v >= floor {
                largest = largest.max(second_difference_at(values, n, stride).abs());
            }
        }
    }
    0.375 * largest
}

impl LevelSetGrid {
    /// Builds a grid from its spec and values in C order (`k` fastest).
    pub fn new(spec: GridSpec, values: Vec<f64>) -> Result<Self, GridError> {
        spec.validate()?;
        if values.len() != spec.len() {
            return Err(GridError::Length {
                dims: spec.dims,
                expected: spec.len(),
                found: values.len(),
            });
        }
        if let Some(n) = values.iter().position(|v| !v.is_finite()) {
            return Err(GridError::NonFinite {
                node: spec.coordinates(n),
            });
        }
        let smooth = smooth_nodes(&spec, &values);
        let gap = interpolation_gap(&spec, &values, &smooth);
        let lanes = node_lanes(&spec, &smooth, &values);
        Ok(LevelSetGrid {
            upper: spec.upper().into(),
            inverse_spacing: 1.0 / spec.spacing,
            spec,
            values,
            smooth,
            lanes,
            gap,
        })
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
    /// Cost: [`LevelSetGrid::cell`], then the corners' indices and the tie rule's tests; no
    /// allocation.
    #[inline(always)]
    pub fn locate(&self, p: &Point3<f64>) -> Located {
        self.located(self.cell(p))
    }

    /// The cell of `p`, as [`LevelSetGrid::locate`] finds it, without the corners' indices and
    /// the tie rule ([`Cell`]).
    ///
    /// Cost: a clamp and three truncations.
    #[inline(always)]
    pub fn cell(&self, p: &Point3<f64>) -> Cell {
        let (c, clamped) = self.clamp(p);
        let s = &self.spec;
        let mut first = [0usize; 3];
        let mut t = [0.0; 3];
        for d in 0..3 {
            let x = (c[d] - s.origin[d]) * self.inverse_spacing;
            // `as` truncates toward zero and saturates negatives and NaN to 0: for the clamped
            // point (x >= 0 up to rounding) it is floor(x).max(0), without a libm call. Through
            // `u32` (a grid axis holds fewer than 2^32 nodes): 8 instructions on x86-64 with the
            // `min`, against 17 through `usize`, three times per query (docs/performance.md).
            let i = (x as u32 as usize).min(s.dims[d] - 2);
            first[d] = i;
            t[d] = x - i as f64;
        }
        Cell {
            first,
            t,
            outside: Outside {
                clamped,
                out: p - c,
            },
        }
    }

    /// The location of a point in `cell` ([`LevelSetGrid::locate`]).
    #[inline(always)]
    pub fn located(&self, cell: Cell) -> Located {
        let (idx, t) = (cell.first, cell.t);
        let layers = self.layers(idx);
        // A loop, not `std::array::from_fn`, whose closure was not inlined here (with the
        // layers' alike, 3.6 % more instructions in the rigid step of `cargo bench -p dem-run
        // --bench modes`, docs/performance.md).
        let mut tie = [0i8; 3];
        for d in 0..3 {
            tie[d] = if t[d] < TIE && layers[d][0] {
                -1
            } else if t[d] > 1.0 - TIE && layers[d][1] {
                1
            } else {
                0
            };
        }
        Located {
            corners: self.corner_indices(self.spec.index(idx[0], idx[1], idx[2])),
            t,
            outside: cell.outside,
            layers,
            tie,
        }
    }

    /// Per axis, whether the grid has a layer of nodes below and above the cell of first
    /// corner `idx` ([`Located`]).
    #[inline(always)]
    fn layers(&self, idx: [usize; 3]) -> [[bool; 2]; 3] {
        let dims = self.spec.dims;
        let mut layers = [[false; 2]; 3];
        for d in 0..3 {
            layers[d] = [idx[d] > 0, idx[d] + 2 < dims[d]];
        }
        layers
    }

    /// The 8 corner node indices of a cell, ordered `[4*a + 2*b + c]` for offsets `(a, b, c)`.
    #[inline(always)]
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
        let [i, j, k] = self.spec.coordinates(n);
        self.spec.node(i, j, k)
    }

    /// The closest point of the grid box to `p`, and which axes were clamped.
    #[inline(always)]
    fn clamp(&self, p: &Point3<f64>) -> (Point3<f64>, [bool; 3]) {
        let (lo, hi) = (self.spec.origin, self.upper);
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

    /// The level set at `p` (the corrected interpolant of the module docs, extended outside the
    /// box as they say).
    #[inline]
    pub fn value(&self, p: &Point3<f64>) -> f64 {
        self.sample_value(&self.locate(p))
    }

    /// The level set at `p` and its exact gradient (module docs).
    #[inline]
    pub fn value_and_gradient(&self, p: &Point3<f64>) -> (f64, Vector3<f64>) {
        self.sample(&self.locate(p))
    }

    /// The grid's level set at a located point: the trilinear interpolant corrected by the
    /// second differences, and its exact gradient (module docs); outside the box
    /// `phi(c) + |p - c|`.
    ///
    /// The interpolant is linear in the node values. Its derivative across a grid plane is the
    /// central difference, up to fourth differences, from either cell (where the second
    /// differences are used); on an interior grid plane (within [`TIE`] of it) it is the mean
    /// of the two cells', as for fields ([`GridSpec::interpolate_nodes`]), so that a level set
    /// symmetric about the plane has a zero derivative across it whichever cell claims the
    /// point.
    ///
    /// Cost: 8 values and 8 stored triples of second differences read, one trilinear
    /// interpolation of four lanes ([`Lanes`]); twice that per tied axis.
    #[inline(always)]
    pub fn sample(&self, at: &Located) -> (f64, Vector3<f64>) {
        self.sample_by(
            at,
            #[inline(always)]
            |at| self.stored(at),
        )
    }

    /// [`LevelSetGrid::sample`] of the grid's node values plus other node values with their
    /// second differences, `offset(n)` (lanes `[value, Delta_x, Delta_y, Delta_z]`, such as
    /// [`LevelSetGrid::node_lanes`] gives for a deformed level set's increment): linear in the
    /// offsets, its value and gradient exact for their sum. An offset of `-0.0` in every lane
    /// gives the bits of [`LevelSetGrid::sample`].
    ///
    /// Cost: [`LevelSetGrid::sample`]'s and 8 calls of `offset`; twice that per tied axis.
    #[inline(always)]
    pub fn sample_offset<V: FourLanes>(
        &self,
        at: &Located,
        offset: impl Fn(usize) -> V,
    ) -> (f64, Vector3<f64>) {
        self.sample_by(
            at,
            #[inline(always)]
            |at| {
                // A loop over an array of the first corner's: `std::array::from_fn` called its
                // closure for values in a vector unit's register (docs/performance.md).
                let stored = self.stored(at);
                let mut c = [offset(at.corners[0]); 8];
                for (i, (c, &n)) in c.iter_mut().zip(&at.corners).enumerate() {
                    let o = if i == 0 { *c } else { offset(n) };
                    *c = o.like(stored[i]) + o;
                }
                c
            },
        )
    }

    /// [`LevelSetGrid::sample`] with each node's second differences less `shift(n)`: the level
    /// set at a point whose cell coordinates carry an interpolation error of their own, `1/2
    /// sum_a t_a (1 - t_a) T[shift_a]` to first order (the semi-Lagrangian update's pulled-back
    /// point, whose trilinear displacement errs by `1/2 sum_a t_a (1 - t_a) T[Delta_a u]`, so
    /// that its `shift_a` is `grad phi . Delta_a u`). The value and gradient are exact for the
    /// shifted differences, as [`LevelSetGrid::sample`]'s are.
    ///
    /// The interpolation runs in the lanes of `unit` ([`FourLanes`]; its values are not read).
    ///
    /// Cost: [`LevelSetGrid::sample`]'s and 8 calls of `shift`; twice that per tied axis.
    #[inline(always)]
    pub fn sample_shifted<V: FourLanes>(
        &self,
        at: &Located,
        unit: V,
        shift: impl Fn(usize) -> [f64; 3],
    ) -> (f64, Vector3<f64>) {
        // `d + (-x)` is `d - x` and `v + (-0.0)` is `v`, to the bit.
        self.sample_offset(
            at,
            #[inline(always)]
            |n| {
                let [x, y, z] = shift(n);
                unit.like(Lanes([-0.0, -x, -y, -z]))
            },
        )
    }

    /// The second differences of other node values on this grid at every node, along the axes
    /// where the grid's own are used (the same mask and the same treatment of the box's faces
    /// as [`LevelSetGrid::sample`]'s; 0 elsewhere).
    pub fn node_second_differences(&self, values: &[f64]) -> Vec<[f64; 3]> {
        (0..values.len())
            .map(|n| node_second_differences(&self.spec, &self.smooth, values, n))
            .collect()
    }

    /// Other node values on this grid with their second differences
    /// ([`LevelSetGrid::node_second_differences`]), node by node in lanes `[value, Delta_x,
    /// Delta_y, Delta_z]`: what [`LevelSetGrid::sample_offset`] and
    /// [`LevelSetGrid::interpolate_lanes`] read, once per node instead of from 32 neighbours
    /// per query.
    pub fn node_lanes(&self, values: &[f64]) -> Vec<Lanes> {
        node_lanes(&self.spec, &self.smooth, values)
    }

    /// The value alone of [`LevelSetGrid::sample`].
    #[inline(always)]
    pub fn sample_value(&self, at: &Located) -> f64 {
        let v = corrected_value(at, &self.stored(at));
        if at.is_inside() {
            v
        } else {
            v + at.distance_to_box()
        }
    }

    /// The corrected interpolant of other node values with their second differences,
    /// `value(n)` (lanes as [`LevelSetGrid::node_lanes`] gives them), at the located point (the
    /// closest point of the box), without the extension outside it: linear in the node values,
    /// what a deformed level set's derivative with respect to its node values needs.
    ///
    /// `value` may give its lanes in a vector unit's register ([`FourLanes`], where they are
    /// computed); the interpolation takes them as [`Lanes`]: the same bits either way.
    ///
    /// Cost: 8 calls of `value` and one trilinear interpolation of four lanes.
    #[inline(always)]
    pub fn interpolate_lanes<V: FourLanes>(&self, at: &Located, value: impl Fn(usize) -> V) -> f64 {
        // A loop, not `std::array::from_fn` (as `stored`).
        let mut c = [Lanes::default(); 8];
        for (c, &n) in c.iter_mut().zip(&at.corners) {
            *c = value(n).lanes();
        }
        corrected_value(at, &c)
    }

    /// A cell's corner values and their second differences (lanes `[value, Delta_x, Delta_y,
    /// Delta_z]`), as stored.
    #[inline(always)]
    fn stored(&self, at: &Located) -> [Lanes; 8] {
        // A loop, not `std::array::from_fn`, which was compiled as a function of its own
        // returning the 256 bytes through memory (3.3 % of the rigid step's samples by `perf`,
        // docs/performance.md).
        let mut c = [Lanes::default(); 8];
        for (c, &n) in c.iter_mut().zip(&at.corners) {
            *c = self.lanes[n];
        }
        c
    }

    /// The level set from a cell's corner values and second differences (`read`), with the
    /// tie rule and the extension outside the box.
    #[inline(always)]
    fn sample_by<V: FourLanes>(
        &self,
        at: &Located,
        read: impl Fn(&Located) -> [V; 8],
    ) -> (f64, Vector3<f64>) {
        let (v, mut grad) = self.corrected(at, &read(at));
        for axis in (0..3).filter(|&a| at.tie[a] != 0) {
            let other = self.across(at, axis);
            grad[axis] = 0.5 * (grad[axis] + self.corrected(&other, &read(&other)).1[axis]);
        }
        if at.is_inside() {
            return (v, grad);
        }
        let dist = at.distance_to_box();
        for d in 0..3 {
            if at.outside.clamped[d] {
                grad[d] = at.outside.out[d] / dist;
            }
        }
        (v + dist, grad)
    }

    /// The corrected interpolant and its gradient in the located cell (module docs), from the
    /// corner values and their second differences `c` (lanes `[value, Delta_x, Delta_y,
    /// Delta_z]`), all four in one trilinear interpolation.
    #[inline(always)]
    fn corrected<V: FourLanes>(&self, at: &Located, c: &[V; 8]) -> (f64, Vector3<f64>) {
        let inverse = self.inverse_spacing;
        let (v4, d) = trilinear(c, at.t, inverse);
        let (Lanes(v4), d) = (v4.lanes(), [d[0].lanes(), d[1].lanes(), d[2].lanes()]);
        let mut v = v4[0];
        let mut grad = Vector3::new(d[0].0[0], d[1].0[0], d[2].0[0]);
        for axis in 0..3 {
            let t = at.t[axis];
            let dv = v4[1 + axis];
            let dg = Vector3::new(d[0].0[1 + axis], d[1].0[1 + axis], d[2].0[1 + axis]);
            let q = 0.5 * t * (1.0 - t);
            v -= q * dv;
            grad[axis] -= (0.5 - t) * inverse * dv;
            grad -= dg * q;
        }
        (v, grad)
    }

    /// The cell across the grid plane that `at` is tied to along `axis` (`at.tie[axis] != 0`),
    /// the point on its face.
    #[cold]
    fn across(&self, at: &Located, axis: usize) -> Located {
        let s = &self.spec;
        let mut idx = s.coordinates(at.corners[0]);
        let mut t = at.t;
        if at.tie[axis] < 0 {
            idx[axis] -= 1;
            t[axis] = 1.0;
        } else {
            idx[axis] += 1;
            t[axis] = 0.0;
        }
        Located {
            corners: self.corner_indices(s.index(idx[0], idx[1], idx[2])),
            t,
            layers: self.layers(idx),
            tie: [0; 3],
            ..*at
        }
    }

    /// The trilinear interpolant of the grid's node values at a point of `cell`
    /// ([`LevelSetGrid::cell`]; plus `|p - c|` outside the box), within
    /// [`LevelSetGrid::interpolation_gap`] of [`LevelSetGrid::sample_value`]. What an
    /// early-out needs.
    ///
    /// Cost: 8 reads and 7 interpolations.
    #[inline(always)]
    pub fn trilinear_value(&self, cell: &Cell) -> f64 {
        let [i, j, k] = cell.first;
        let corners = self.corner_indices(self.spec.index(i, j, k));
        let v = lerps(&std::array::from_fn(|c| self.values[corners[c]]), cell.t).2;
        if cell.outside.is_inside() {
            v
        } else {
            v + cell.outside.distance_to_box()
        }
    }

    /// A reach about `centre` for margins up to `margin`: a radius `r` such that every point
    /// where the level set ([`LevelSetGrid::value`], its extension outside the box included)
    /// is at most `m`, for any `0 <= m <= margin`, lies within `r + m` of `centre`. It bounds
    /// `|y - centre| - max(phi(y), 0)` over the points with `phi(y) <= margin`, cell by cell
    /// from the corrected interpolant: a bound derived from the grid, not a pad chosen by
    /// judgement (docs/performance.md, "A reach derived from the level set").
    ///
    /// In a cell the interpolant is a polynomial. In a box of the cell of centre `y_c` and
    /// half-diagonal `rho`, with `phi_c` and `g` its value and gradient at `y_c` and `K` a
    /// bound of its Hessian's spectral norm, Taylor's theorem gives `phi >= L` with `L(y) =
    /// phi_c + g . (y - y_c) - K rho^2 / 2`. So the box's points with `phi <= margin` lie where
    /// `L <= margin`, and there `|y - centre| - max(phi, 0) <= |y - centre| - max(L, 0)`, a
    /// convex function on each of the two polytopes `L <= 0` and `0 <= L <= margin` of the box:
    /// its largest value is at one of their vertices (the box's corners, and where the planes
    /// `L = 0` and `L = margin` cross its 12 edges). `K` bounds each Hessian entry from the
    /// corner values and second differences (`T[v]` is multilinear: no pure second
    /// derivatives, its mixed ones between the corners' mixed differences; the correction's
    /// `t (1 - t) / 2` and its derivatives bounded by `1/8`, `1/2` and `1`), then takes the
    /// entries' Frobenius norm. A box that could raise the radius is cut in 8, twice
    /// (`REACH_DEPTH`): the slack, `K rho^2 / 2` and the curvature of `|y|` over the box,
    /// falls by about 4 a cut. A cell whose corners bound the interpolant above `margin` (`min
    /// v - sum_a max(Delta_a, 0) / 8`) is skipped. Outside the box the extension `phi(c) + |p -
    /// c|` gives `|p - centre| - max(phi(p), 0) <= |c - centre| - phi(c)` at the point's box
    /// point `c`: the box's bound covers it where `phi(c) >= 0`; a cell on the box's faces that
    /// can be negative adds its farthest corner's distance less its lower bound.
    ///
    /// Measured slack over the largest sampled point (tests): 0.007 of a spacing on a unit
    /// sphere at spacing 0.1 (margin 0), 0.05 at a box's corners.
    ///
    /// Cost: one pass over the cells (8 reads each), and for each cell the surface's band may
    /// cross, one to 73 corrected values and gradients. Returns 0 for a grid above `margin`
    /// everywhere.
    pub fn reach(&self, centre: &Point3<f64>, margin: f64) -> f64 {
        let s = &self.spec;
        let h = s.spacing;
        let [nx, ny, nz] = s.dims;
        let mut radius: f64 = 0.0;
        for i in 0..nx - 1 {
            for j in 0..ny - 1 {
                for k in 0..nz - 1 {
                    let corners = self.corner_indices(s.index(i, j, k));
                    let c = corners.map(|n| self.lanes[n]);
                    let lane = |l: usize| c.map(|x| x.0[l]);
                    let v = lane(0);
                    let delta = [lane(1), lane(2), lane(3)];
                    let lower = v.iter().copied().fold(f64::INFINITY, f64::min)
                        - (delta.iter())
                            .map(|d| 0.125 * d.iter().copied().fold(0.0, f64::max))
                            .sum::<f64>()
                        - REACH_GUARD * h;
                    if lower > margin {
                        continue;
                    }
                    let first = s.node(i, j, k);
                    let on_face = [i, j, k]
                        .iter()
                        .zip(s.dims)
                        .any(|(&x, n)| x == 0 || x == n - 2);
                    // Where the face can be negative, a point beyond it at the depth there
                    // scores more than any point of the box; elsewhere the box's bound below
                    // covers the face's points, and so the extension's.
                    if on_face && lower < 0.0 {
                        let far = (0..8)
                            .map(|o| (first + box_corner(o, [0.0; 3], 1.0, h) - centre).norm())
                            .fold(0.0, f64::max);
                        radius = radius.max(far - lower);
                    }
                    let cell = Block {
                        corners,
                        c,
                        first,
                        bound: hessian_bound(&v, &delta) / (h * h),
                    };
                    self.reach_in(
                        &cell,
                        centre,
                        margin,
                        [0.0; 3],
                        1.0,
                        REACH_DEPTH,
                        &mut radius,
                    );
                }
            }
        }
        radius
    }

    /// Raises `radius` to [`LevelSetGrid::reach`]'s bound over the box `[lo, lo + size]^3`
    /// (cell coordinates) of `cell`; a box that could raise it is cut in 8, `depth` more times.
    #[allow(clippy::too_many_arguments)]
    fn reach_in(
        &self,
        cell: &Block,
        centre: &Point3<f64>,
        margin: f64,
        lo: [f64; 3],
        size: f64,
        depth: u32,
        radius: &mut f64,
    ) {
        let h = self.spec.spacing;
        let at = Located {
            corners: cell.corners,
            t: std::array::from_fn(|d| lo[d] + 0.5 * size),
            outside: Outside {
                clamped: [false; 3],
                out: Vector3::zeros(),
            },
            layers: [[true; 2]; 3],
            tie: [0; 3],
        };
        let (phi, g) = self.corrected(&at, &cell.c);
        let mid = cell.first + Vector3::from(at.t) * h;
        let rho2 = 0.75 * (size * h) * (size * h);
        // Taylor's lower bound `L` at a point, less a guard for the rounding of these sums.
        let floor = phi - 0.5 * cell.bound * rho2 - REACH_GUARD * h;
        let point = |o: usize| cell.first + box_corner(o, lo, size, h);
        let below = |y: Point3<f64>| floor + g.dot(&(y - mid));
        let mut far: f64 = f64::NEG_INFINITY;
        for o in 0..8 {
            let (y, l) = (point(o), below(point(o)));
            if l <= margin {
                far = far.max((y - centre).norm() - l.max(0.0));
            }
        }
        for axis in [4, 2, 1] {
            for o in (0..8).filter(|o| o & axis == 0) {
                let (p0, p1) = (point(o), point(o | axis));
                let (l0, l1) = (below(p0), below(p1));
                for level in [0.0, margin] {
                    if (l0 <= level) != (l1 <= level) {
                        let y = p0 + (p1 - p0) * ((l0 - level) / (l0 - l1));
                        far = far.max((y - centre).norm() - level);
                    }
                }
            }
        }
        if far <= *radius {
            return;
        }
        if depth == 0 {
            *radius = far;
            return;
        }
        let half = 0.5 * size;
        for o in 0..8 {
            let lo = std::array::from_fn(|d| lo[d] + box_corner(o, [0.0; 3], half, 1.0)[d]);
            self.reach_in(cell, centre, margin, lo, half, depth - 1, radius);
        }
    }

    /// The largest difference between the level set ([`LevelSetGrid::sample`] of the grid's
    /// values) and their trilinear interpolant ([`LevelSetGrid::trilinear_value`]) at points
    /// where the trilinear value is at least `-h` (not deep inside: where early-outs decide):
    /// `3/8` of the largest second difference used at the nodes such a point's stencil reads
    /// (module docs). For a signed
    /// distance with spacing `h` it is at most `3 h / 4` (at a kink such as a centre or an
    /// edge), and about `3 h^2 kappa / 8` where the largest curvature `kappa` is a smooth
    /// surface's.
    pub fn interpolation_gap(&self) -> f64 {
        self.gap
    }

    /// The displacement field with node values `u(n)` at a located point: its trilinear value
    /// and its gradient `grad u` (column `j` is `du/dx_j`, tie rule included). Outside the box
    /// the field is continued by its value at the box (constant along the clamped axes, whose
    /// columns are zero).
    #[inline(always)]
    pub fn displacement(
        &self,
        at: &Located,
        u: impl Fn(usize) -> Vector3<f64>,
    ) -> (Vector3<f64>, Matrix3<f64>) {
        let field = |n| Lanes::from_vector(u(n), 0.0);
        let c: [Lanes; 8] = std::array::from_fn(|i| field(at.corners[i]));
        let (value, grad) = self.field_corners(at, &c, field);
        (value.vector(), jacobian(&grad))
    }

    /// The largest spectral norm `|grad u|_2` of the trilinear field with node values `u(n)`
    /// over the cell of `at`. Inside a cell `grad u` is the trilinear combination, with the
    /// point's own weights, of the cell's 8 corner Jacobians (at a corner, column `j` is the
    /// difference of `u` along the cell's edge in `j` through it, over `h`): each column
    /// interpolates its 4 edge differences with the weights of the other two axes, the sums of
    /// the corner weights over the third. A norm is convex, so the cell's largest is the largest
    /// of the 8. An axis along which `at` was clamped contributes no column (outside the box
    /// the field is constant along it). On a grid plane the gradient is the mean of two cells'
    /// ([`LevelSetGrid::displacement`]); this is the located cell's alone.
    ///
    /// Cost: 8 node reads, 8 symmetric 3 x 3 eigenvalue problems.
    pub fn cell_gradient_norm(&self, at: &Located, u: impl Fn(usize) -> Vector3<f64>) -> f64 {
        let c: [Vector3<f64>; 8] = std::array::from_fn(|i| u(at.corners[i]));
        // A field that is not finite has no bound.
        if c.iter().any(|v| !v.iter().all(|x| x.is_finite())) {
            return f64::NAN;
        }
        let h = self.spec.spacing;
        let mut largest: f64 = 0.0;
        for corner in 0..8 {
            let columns: [Vector3<f64>; 3] = std::array::from_fn(|axis| {
                let bit = 4 >> axis;
                if at.outside.clamped[axis] {
                    Vector3::zeros()
                } else {
                    (c[corner | bit] - c[corner & !bit]) / h
                }
            });
            let g = Matrix3::from_columns(&columns);
            let norm = (g.transpose() * g)
                .symmetric_eigenvalues()
                .max()
                .max(0.0)
                .sqrt();
            largest = largest.max(norm);
        }
        largest
    }

    /// The trilinear interpolant of the four-lane field with node values `field(n)` at a located
    /// point, from its corner values `c` already read, and its partial derivatives (element `j`
    /// is `d/dx_j`; tie rule included, [`GridSpec::interpolate_nodes`]); along the axes where
    /// `at` was clamped the derivatives are zero (outside the box the field is continued by its
    /// value at the box).
    #[inline(always)]
    fn field_corners<V: FourLanes>(
        &self,
        at: &Located,
        c: &[V; 8],
        field: impl Fn(usize) -> V,
    ) -> (Lanes, [Lanes; 3]) {
        let (value, grad) = (self.spec).interpolate_corners(at, c, self.inverse_spacing, field);
        let mut grad = [grad[0].lanes(), grad[1].lanes(), grad[2].lanes()];
        for (g, clamped) in grad.iter_mut().zip(at.outside.clamped) {
            if clamped {
                *g = Lanes::default();
            }
        }
        (value.lanes(), grad)
    }

    /// The material point `X` of a deformed grain now at `y`: the root of `X + u(X) = y` for the
    /// displacement field with node values `u(n)` ([`LevelSetGrid::displacement`]), the exact
    /// inverse of the deformation that the semi-Lagrangian level set needs (docs/physics.md
    /// section 5; the paper's Eq. 47 takes `y - u(y)`, exact only to first order in `grad u`).
    ///
    /// Damped Newton's method on `r(X) = X + u(X) - y` from `X = y` (its first step is the
    /// linearized inverse `y - (I + grad u(y))^-1 u(y)`), to `|r|_inf <= 1e-9 h`
    /// ([`PULL_BACK_TOLERANCE`], where the choice is argued): each step is halved (up to 8
    /// times) until `|r|_inf` decreases, which keeps a step that crosses a cell face, where the trilinear field's gradient jumps,
    /// from throwing the iteration off; where the full and halved Newton steps all fail (or
    /// `I + grad u` is not invertible) the fixed-point direction `-r` is tried the same way, for
    /// that step only. Exact in one step where `u` is affine over the cell.
    ///
    /// Convergence: the map `X -> X + u(X)` is one-to-one and the fixed-point iteration
    /// contracts where `|grad u| < 1` in an induced norm, i.e. where the deformation does not
    /// fold (strains below 100 %); the caller checks that bound. Failure (no convergence within
    /// [`PULL_BACK_ITERATIONS`] evaluations, or no step that decreases the residual above the
    /// tolerance) is returned, never a guess.
    ///
    /// Cost: two evaluations of the field (8 node reads each) where it is affine over a cell,
    /// three or four near a contact-localised mode from `y`; from a good guess
    /// ([`LevelSetGrid::pull_back_from`]) two, rarely more.
    #[inline(always)]
    pub fn pull_back(
        &self,
        y: &Point3<f64>,
        u: impl Fn(usize) -> Vector3<f64>,
    ) -> Result<PullBack, PullBackFailure> {
        self.pull_back_from(y, y, |n| Lanes::from_vector(u(n), 0.0))
    }

    /// [`LevelSetGrid::pull_back`] through the displacement in the first three lanes of
    /// `field(n)`, with the iteration started at `start` instead of `y` (a guess of `X`, such
    /// as `y` less the displacement found at a neighbouring point), and the fourth lane (a
    /// scalar field on the grid nodes, such as a normal strain) interpolated at `X` with its
    /// gradient ([`PullBack::carried`]) at no extra cost: the four lanes are one interpolation.
    /// Newton's error falls with the square of the start's (each evaluation of a field whose
    /// gradient changes little between the points squares it), so a start `|u|` closer saves
    /// about one evaluation. Where the deformation does not fold the root is unique, and the
    /// answer is the same to the tolerance from any start.
    #[inline(always)]
    pub fn pull_back_from<V: FourLanes>(
        &self,
        y: &Point3<f64>,
        start: &Point3<f64>,
        field: impl Fn(usize) -> V,
    ) -> Result<PullBack, PullBackFailure> {
        let h = self.spec.spacing;
        // The last cell (its first corner) and its corner values: the iterates mostly stay in
        // one cell, and a node's value can sum many modes.
        let mut cached: Option<(usize, [V; 8])> = None;
        // The last point whose residual decreased, where the steps start, and its residual.
        let mut base = *start;
        let mut best: Option<Residual> = None;
        // The directions from `base` (Newton's where `I + grad u` is invertible, then the
        // fixed point's), the one being tried, its step and how many steps it has taken: each
        // halved until `|r|` decreases.
        let mut directions = [None, None];
        let (mut direction, mut step, mut tries) = (0, 1.0, 0);
        let mut x = *start;
        let mut iterations = 0;
        // One evaluation site: a copy of the residual's code at two sites made the
        // semi-Lagrangian query's code miss the instruction cache (callgrind's cache
        // simulation, docs/performance.md).
        loop {
            let next = self.pull_back_residual(&x, y, &mut cached, &field);
            iterations += 1;
            // A NaN residual is no decrease.
            if best.as_ref().is_none_or(|b| next.residual < b.residual) {
                if next.residual <= PULL_BACK_TOLERANCE * h
                    && let Some(inverse_jacobian) = next.inverse
                {
                    return Ok(PullBack {
                        point: x,
                        at: next.at,
                        inverse_jacobian,
                        iterations,
                        carried: next.value.0[3],
                        carried_gradient: Vector3::new(
                            next.grad[0].0[3],
                            next.grad[1].0[3],
                            next.grad[2].0[3],
                        ),
                    });
                }
                directions = [
                    next.inverse.map(|inverse| -(inverse * next.r)),
                    Some(-next.r),
                ];
                direction = if directions[0].is_some() { 0 } else { 1 };
                (step, tries) = (1.0, 0);
                base = x;
                best = Some(next);
            } else {
                tries += 1;
                if tries > HALVINGS {
                    (direction, step, tries) = (direction + 1, 1.0, 0);
                } else {
                    step *= 0.5;
                }
            }
            // No step decreases the residual, or the evaluations are spent: no root here.
            let (Some(Some(d)), true) =
                (directions.get(direction), iterations < PULL_BACK_ITERATIONS)
            else {
                return Err(PullBackFailure {
                    point: *y,
                    residual: best.map_or(f64::NAN, |b| b.residual),
                    iterations,
                });
            };
            x = base + d * step;
        }
    }

    /// [`LevelSetGrid::pull_back_from`]'s residual `r = X + u(X) - y` at `x`, its size, and
    /// what a step needs, with the last cell's first corner and corner values in `cached`. A
    /// cell's corners follow from its first ([`LevelSetGrid::locate`]).
    #[inline(always)]
    fn pull_back_residual<V: FourLanes>(
        &self,
        x: &Point3<f64>,
        y: &Point3<f64>,
        cached: &mut Option<(usize, [V; 8])>,
        field: &impl Fn(usize) -> V,
    ) -> Residual {
        let at = self.locate(x);
        let c = match cached {
            Some((first, c)) if *first == at.corners[0] => *c,
            _ => {
                // A loop, as in `sample_offset`.
                let mut c = [field(at.corners[0]); 8];
                for (c, &n) in c.iter_mut().zip(&at.corners).skip(1) {
                    *c = field(n);
                }
                *cached = Some((at.corners[0], c));
                c
            }
        };
        let (value, grad) = self.field_corners(&at, &c, field);
        let r = x.coords + value.vector() - y.coords;
        let inverse = orientation_preserving_inverse(&(Matrix3::identity() + jacobian(&grad)));
        // `amax` passes over a NaN component (and a sum has it): a residual with one is NaN.
        let residual = if (r.x + r.y + r.z).is_nan() {
            f64::NAN
        } else {
            r.amax()
        };
        Residual {
            at,
            value,
            grad,
            r,
            residual,
            inverse,
        }
    }
}

/// One evaluation of a pull-back's residual ([`LevelSetGrid::pull_back_from`]).
struct Residual {
    at: Located,
    /// The field's four lanes at the point, and their derivatives along x, y, z.
    value: Lanes,
    grad: [Lanes; 3],
    /// `X + u(X) - y`, and its largest component (NaN if any is).
    r: Vector3<f64>,
    residual: f64,
    /// `(I + grad u)^-1`, where its determinant is positive.
    inverse: Option<Matrix3<f64>>,
}

/// The displacement gradient `grad u` (row `k` component `k`, column `j` `d/dx_j`) from the
/// derivatives of a four-lane field whose first three lanes are the displacement.
#[inline(always)]
fn jacobian(grad: &[Lanes; 3]) -> Matrix3<f64> {
    let [gx, gy, gz] = grad.map(|g| g.0);
    Matrix3::new(
        gx[0], gy[0], gz[0], gx[1], gy[1], gz[1], gx[2], gy[2], gz[2],
    )
}

/// `j^-1` if `det j > 0` (the adjugate over the determinant, computed once).
#[inline(always)]
fn orientation_preserving_inverse(j: &Matrix3<f64>) -> Option<Matrix3<f64>> {
    let c00 = j.m22 * j.m33 - j.m23 * j.m32;
    let c01 = j.m23 * j.m31 - j.m21 * j.m33;
    let c02 = j.m21 * j.m32 - j.m22 * j.m31;
    let det = j.m11 * c00 + j.m12 * c01 + j.m13 * c02;
    // NaN fails too.
    if det.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let inv = 1.0 / det;
    Some(
        Matrix3::new(
            c00,
            j.m13 * j.m32 - j.m12 * j.m33,
            j.m12 * j.m23 - j.m13 * j.m22,
            c01,
            j.m11 * j.m33 - j.m13 * j.m31,
            j.m13 * j.m21 - j.m11 * j.m23,
            c02,
            j.m12 * j.m31 - j.m11 * j.m32,
            j.m11 * j.m22 - j.m12 * j.m21,
        ) * inv,
    )
}

/// How close to a grid plane, in cells, a point counts as on it for the tie rule of
/// [`GridSpec::interpolate_nodes`]: a node placed on a symmetry plane lands within round-off of
/// it, on either side.
pub const TIE: f64 = 1e-9;

/// The pull-back's tolerance on `|X + u(X) - y|_inf`, in grid spacings: `X` is then within
/// `1e-9 h / (1 - |grad u|)` of the root, and a pulled-back level set within about as much of
/// its exact value at `y` (its gradient is about 1 near the surface), five to six orders below
/// the trilinear fields' own interpolation error. Newton's second evaluation from a start near
/// the root lands below it almost always (a third found the last digits' `1e-12 h` before: 7 %
/// more of a 20-mode grain's step, docs/performance.md, "The pull-back's tolerance"). Below
/// `1e-9 h` a stalled iteration is at the coordinates' round-off floor.
pub const PULL_BACK_TOLERANCE: f64 = 1e-9;

/// The most field evaluations a pull-back takes.
pub const PULL_BACK_ITERATIONS: u32 = 100;

/// How many times a pull-back step is halved along one direction before the next direction
/// (or failure).
const HALVINGS: u32 = 8;

/// A point pulled back through a displacement field ([`LevelSetGrid::pull_back`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PullBack {
    /// The material point `X`, `X + u(X) = y`.
    pub point: Point3<f64>,
    /// Where `X` falls on the grid.
    pub at: Located,
    /// `(I + grad u(X))^-1`: `dX/dy`, for the pulled-back level set's gradient
    /// (`J^-T grad phi_0(X)`).
    pub inverse_jacobian: Matrix3<f64>,
    /// Field evaluations taken.
    pub iterations: u32,
    /// The fourth lane of the field at `X` ([`LevelSetGrid::pull_back_from`]; 0 for
    /// [`LevelSetGrid::pull_back`]).
    pub carried: f64,
    /// Its gradient at `X` (zero along the axes where `X` is outside the box).
    pub carried_gradient: Vector3<f64>,
}

/// A pull-back that did not converge: the deformation folds near the point.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error(
    "the pull-back of the point {point} (local frame) did not converge: |X + u(X) - y| = {residual:e} after {iterations} evaluations of the displacement field (the deformed grain folds near the point, or the field is not finite)"
)]
pub struct PullBackFailure {
    /// The deformed point `y`.
    pub point: Point3<f64>,
    /// The last residual.
    pub residual: f64,
    /// Field evaluations taken.
    pub iterations: u32,
}

/// Trilinear value and partial derivatives from the 8 corner values of a cell (ordered as
/// `corner_indices`), local coordinates `t` in `[0, 1]^3` and `inv` the reciprocal of the cell
/// size.
#[inline(always)]
fn trilinear<T: NodeValue>(c: &[T; 8], [tx, ty, tz]: [f64; 3], inv: f64) -> (T, [T; 3]) {
    let ([c00, c01, c10, c11], [c0, c1], value) = lerps(c, [tx, ty, tz]);
    let dx = c1 - c0;
    let dy = (c01 - c00) * (1.0 - tx) + (c11 - c10) * tx;
    let dz0 = (c[1] - c[0]) * (1.0 - ty) + (c[3] - c[2]) * ty;
    let dz1 = (c[5] - c[4]) * (1.0 - ty) + (c[7] - c[6]) * ty;
    let dz = dz0 * (1.0 - tx) + dz1 * tx;
    (value, [dx * inv, dy * inv, dz * inv])
}

/// The trilinear value from the 8 corner values (ordered as `corner_indices`) and the
/// intermediate interpolants the gradient reuses: along z (`c00, c01, c10, c11`), then y
/// (`c0, c1`), then x (the value).
#[inline(always)]
fn lerps<T: NodeValue>(c: &[T; 8], [tx, ty, tz]: [f64; 3]) -> ([T; 4], [T; 2], T) {
    let c00 = c[0] + (c[1] - c[0]) * tz;
    let c01 = c[2] + (c[3] - c[2]) * tz;
    let c10 = c[4] + (c[5] - c[4]) * tz;
    let c11 = c[6] + (c[7] - c[6]) * tz;
    let c0 = c00 + (c01 - c00) * ty;
    let c1 = c10 + (c11 - c10) * ty;
    ([c00, c01, c10, c11], [c0, c1], c0 + (c1 - c0) * tx)
}

/// Times [`LevelSetGrid::reach`] cuts a cell the surface may cross that could raise
/// its radius: each cut divides the bound's slack by about 4.
const REACH_DEPTH: u32 = 2;

/// [`LevelSetGrid::reach`]'s guard against the rounding of its sums, in spacings: far above
/// their rounding error, far below the bound's slack.
const REACH_GUARD: f64 = 1e-9;

/// Corner `o` (ordered as `corner_indices`) of the box `[lo, lo + size]^3` in cell
/// coordinates, as an offset in lengths from the cell's first corner (spacing `h`).
fn box_corner(o: usize, lo: [f64; 3], size: f64, h: f64) -> Vector3<f64> {
    let bit = [4, 2, 1].map(|b| if o & b != 0 { size } else { 0.0 });
    Vector3::from(std::array::from_fn(|d| (lo[d] + bit[d]) * h))
}

/// A cell as [`LevelSetGrid::reach`] bounds it: its corners, their lanes, its first
/// corner's position and the bound of the interpolant's Hessian over it.
struct Block {
    corners: [usize; 8],
    c: [Lanes; 8],
    first: Point3<f64>,
    bound: f64,
}

/// A bound, in cell coordinates `t` (multiply by `1 / h^2` for lengths), of the Frobenius norm
/// of the corrected interpolant's Hessian over a cell, from its corner values `v` and second
/// differences `delta` (ordered as `corner_indices`): entry by entry, with `D_a = T[Delta_a]`,
/// `q = t (1 - t) / 2` (`|q| <= 1/8`, `|q'| <= 1/2`, `q'' = -1`),
/// `|H_aa| <= max|D_a| + max|d_a D_a|` and `|H_ab| <= max|d_a d_b T[v]| + (max|d_b D_a| +
/// max|d_a D_b|) / 2 + sum_e max|d_a d_b D_e| / 8`; a multilinear field's first derivatives lie
/// between its edges' differences, its mixed ones between its faces' mixed differences
/// ([`LevelSetGrid::reach`]).
fn hessian_bound(v: &[f64; 8], delta: &[[f64; 8]; 3]) -> f64 {
    const BIT: [usize; 3] = [4, 2, 1];
    let largest = |f: &[f64; 8]| f.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let edge = |f: &[f64; 8], a: usize| {
        (0..8)
            .filter(|o| o & BIT[a] == 0)
            .fold(0.0_f64, |m, o| m.max((f[o | BIT[a]] - f[o]).abs()))
    };
    let mixed = |f: &[f64; 8], a: usize, b: usize| {
        let (x, y) = (BIT[a], BIT[b]);
        (0..8).filter(|o| o & (x | y) == 0).fold(0.0_f64, |m, o| {
            m.max((f[o | x | y] - f[o | x] - f[o | y] + f[o]).abs())
        })
    };
    let mut sum = 0.0;
    for a in 0..3 {
        let diagonal = largest(&delta[a]) + edge(&delta[a], a);
        sum += diagonal * diagonal;
        for b in a + 1..3 {
            let off = mixed(v, a, b)
                + 0.5 * (edge(&delta[a], b) + edge(&delta[b], a))
                + 0.125 * (0..3).map(|e| mixed(&delta[e], a, b)).sum::<f64>();
            sum += 2.0 * off * off;
        }
    }
    sum.sqrt()
}

/// Node values on a grid of spec `spec` (interpolant's mask `smooth`) with their second
/// differences, node by node in lanes `[value, Delta_x, Delta_y, Delta_z]`
/// ([`LevelSetGrid::node_lanes`]; a grid's own, [`LevelSetGrid::new`]).
fn node_lanes(spec: &GridSpec, smooth: &[u8], values: &[f64]) -> Vec<Lanes> {
    (0..values.len())
        .map(|n| {
            let [dx, dy, dz] = node_second_differences(spec, smooth, values, n);
            Lanes([values[n], dx, dy, dz])
        })
        .collect()
}

/// The value of [`LevelSetGrid::sample`]'s corrected interpolant from a cell's corner values
/// and second differences `c` (the same arithmetic as its value).
#[inline(always)]
fn corrected_value(at: &Located, c: &[Lanes; 8]) -> f64 {
    let Lanes(v4) = lerps(c, at.t).2;
    let mut v = v4[0];
    for axis in 0..3 {
        let t = at.t[axis];
        v -= 0.5 * t * (1.0 - t) * v4[1 + axis];
    }
    v
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
    fn a_shifted_level_set_is_the_level_set_without_a_shift_and_its_gradient_is_exact() {
        // No shift: the same bits as `sample` (inside, on grid planes, outside). A shift that
        // varies over the nodes: the gradient is the value's, by central differences within a
        // cell (the shift's own interpolant moves with the point).
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), |p| (p.x * p.y).sin() + p.z * p.z).unwrap();
        let shift = |n: usize| {
            let p = grid.node_position(n);
            [0.1 * p.x * p.y, -0.05 * p.z, 0.02 * (p.x + p.z)]
        };
        let mut points = probe_points(&s);
        points.push(grid.node_position(s.index(2, 3, 1)));
        points.push(Point3::new(-3.0, 0.4, 7.5));
        let mut differenced = 0;
        for p in points {
            let at = grid.locate(&p);
            let (v, g) = grid.sample(&at);
            let (vs, gs) = grid.sample_shifted(&at, Lanes::default(), |_| [0.0; 3]);
            assert_eq!(
                (vs.to_bits(), gs.map(f64::to_bits)),
                (v.to_bits(), g.map(f64::to_bits)),
                "{p}"
            );
            // Central differences within one cell (off its faces, the box's too).
            if !at.is_inside() || at.t.iter().any(|t| !(1e-3..=1.0 - 1e-3).contains(t)) {
                continue;
            }
            differenced += 1;
            let (_, gs) = grid.sample_shifted(&at, Lanes::default(), shift);
            let e = 1e-6;
            let value = |q: Point3<f64>| {
                grid.sample_shifted(&grid.locate(&q), Lanes::default(), shift)
                    .0
            };
            for d in 0..3 {
                let mut step = Vector3::zeros();
                step[d] = e;
                let fd = (value(p + step) - value(p - step)) / (2.0 * e);
                assert!(
                    (fd - gs[d]).abs() <= 1e-7,
                    "{p} axis {d}: {fd} vs {}",
                    gs[d]
                );
            }
        }
        assert!(differenced > 10, "{differenced} points differenced");
    }

    #[test]
    fn an_offset_level_set_is_exact_for_quadratic_fields() {
        // The corrected interpolant reproduces a quadratic exactly (its second differences are
        // `2 h^2` times its curvature, its trilinear error `-t (1 - t) h^2` times it) and a
        // bilinear term exactly: so where the grid's own values are a quadratic whose second
        // differences are all used (constant and of one sign along each axis), the level set
        // offset by another quadratic `w` in lanes is `phi + w` and its gradient, the closed
        // forms, at every point of the box; and `interpolate_lanes` is `w` alone. A zero
        // offset gives the bits of `sample`.
        let s = spec();
        let phi = |p: Point3<f64>| p.x * p.x + 2.0 * p.y * p.y + 3.0 * p.z * p.z;
        let grad_phi = |p: Point3<f64>| Vector3::new(2.0 * p.x, 4.0 * p.y, 6.0 * p.z);
        let w =
            |p: Point3<f64>| 0.3 * p.x * p.x - 0.2 * p.y * p.z + 0.5 * p.x - 0.7 * p.z * p.z + 1.0;
        let grad_w =
            |p: Point3<f64>| Vector3::new(0.6 * p.x + 0.5, -0.2 * p.z, -0.2 * p.y - 1.4 * p.z);
        let grid = LevelSetGrid::from_fn(s.clone(), phi).unwrap();
        let offsets = grid.node_lanes(
            &(0..grid.values().len())
                .map(|n| w(grid.node_position(n)))
                .collect::<Vec<_>>(),
        );
        let mut points = probe_points(&s);
        points.push(grid.node_position(s.index(2, 3, 1)));
        let mut checked = 0;
        for p in points {
            let at = grid.locate(&p);
            let (v, g) = grid.sample(&at);
            let (vz, gz) = grid.sample_offset(&at, |_| Lanes([-0.0; 4]));
            assert_eq!(
                (vz.to_bits(), gz.map(f64::to_bits)),
                (v.to_bits(), g.map(f64::to_bits)),
                "{p}"
            );
            if !at.is_inside() {
                continue;
            }
            checked += 1;
            let (vo, go) = grid.sample_offset(&at, |n| offsets[n]);
            assert!((vo - phi(p) - w(p)).abs() < 1e-12, "{p}: {vo}");
            assert!((go - grad_phi(p) - grad_w(p)).norm() < 1e-11, "{p}: {go}");
            assert!((grid.interpolate_lanes(&at, |n| offsets[n]) - w(p)).abs() < 1e-12);
        }
        assert!(checked > 10, "{checked} points inside");
    }

    #[test]
    fn the_value_alone_is_the_value_of_value_and_gradient_to_the_bit() {
        // The early-outs decide on `sample_value`, the contacts use `sample`: the two must agree
        // exactly, inside the box, on grid planes (the tie rule changes only the gradient) and
        // outside it.
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), |p| (p.x * p.y).sin() + p.z * p.z).unwrap();
        let mut points = probe_points(&s);
        points.push(grid.node_position(s.index(2, 3, 1)));
        points.push(Point3::new(-3.0, 0.4, 7.5));
        points.push(Point3::new(s.node(3, 0, 0).x, 0.1, 1.1));
        let lanes = grid.node_lanes(grid.values());
        for p in points {
            let at = grid.locate(&p);
            let value = grid.sample_value(&at);
            let v = grid.value_and_gradient(&p).0;
            assert_eq!(value.to_bits(), v.to_bits(), "{p}");
            // The grid's own values in lanes with their second differences: the same bits.
            if at.is_inside() {
                let i = grid.interpolate_lanes(&at, |n| lanes[n]);
                assert_eq!(i.to_bits(), v.to_bits(), "{p}");
            }
        }
    }

    #[test]
    fn located_weights_reproduce_the_interpolated_field() {
        // Inside the box a field's value is the weighted sum of the corner values, the weights
        // of a cell summing to 1 (the trilinear interpolant written as a partition of unity).
        let s = spec();
        let f = |p: Point3<f64>| p.x * p.y * p.z + p.x * p.x;
        let grid = LevelSetGrid::from_fn(s.clone(), f).unwrap();
        for p in probe_points(&s) {
            let at = grid.locate(&p);
            let w = at.weights();
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
            let c = at.corners.map(|n| grid.values()[n]);
            let sum: f64 = w.iter().zip(&c).map(|(w, c)| w * c).sum();
            let field = s.interpolate_nodes(&at, |n| grid.values()[n]).0;
            assert!((sum - field).abs() < 1e-13, "{p}");
            assert!((sum - grid.trilinear_value(&grid.cell(&p))).abs() < 1e-13);
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
    fn the_level_set_is_exact_for_quadratics_with_exact_gradient() {
        // Every polynomial of degree 2 (the module docs' correction of the trilinear
        // interpolant), and x^2 y z, which the correction also reproduces; the boundary cells
        // included (their second differences are their neighbours').
        let s = spec();
        let f = |p: Point3<f64>| {
            0.7 * p.x * p.x - 1.3 * p.y * p.y + 0.4 * p.z * p.z + 0.9 * p.x * p.y - 0.2 * p.y * p.z
                + 1.1 * p.z * p.x
                - 0.5 * p.x
                + 0.3
                + 0.25 * p.x * p.x * p.y * p.z
        };
        let exact = |p: Point3<f64>| {
            Vector3::new(
                1.4 * p.x + 0.9 * p.y + 1.1 * p.z - 0.5 + 0.5 * p.x * p.y * p.z,
                -2.6 * p.y + 0.9 * p.x - 0.2 * p.z + 0.25 * p.x * p.x * p.z,
                0.8 * p.z - 0.2 * p.y + 1.1 * p.x + 0.25 * p.x * p.x * p.y,
            )
        };
        let grid = LevelSetGrid::from_fn(s.clone(), f).unwrap();
        for p in probe_points(&s) {
            let (v, g) = grid.value_and_gradient(&p);
            assert!((v - f(p)).abs() <= 1e-12, "{p}: {v} vs {}", f(p));
            assert!((g - exact(p)).norm() <= 1e-11, "{p}: {g} vs {}", exact(p));
        }
        // The plain trilinear interpolant is not exact (the check above can fail).
        let p = Point3::new(0.1, 0.05, 1.0);
        assert!((grid.trilinear_value(&grid.cell(&p)) - f(p)).abs() > 1e-3);
    }

    #[test]
    fn across_a_cell_face_the_level_set_is_continuous_and_its_derivative_jumps_by_fourth_differences()
     {
        // A smooth convex field that no interpolant reproduces (its second differences are all
        // used), approached from either side of interior grid planes: the value and the
        // derivatives along the plane agree; the derivative across it jumps only through the
        // other axes' corrections, by at most 1/4 max |Delta_a Delta_b phi| / h (module docs),
        // where the trilinear one jumps by Delta_b phi / h.
        let s = spec();
        let f = |p: Point3<f64>| {
            (0.9 * p.x - 0.6 * p.y + 0.4 * p.z).exp()
                + (p.x * p.x + p.y * p.y + p.z * p.z).powf(1.5)
        };
        let grid = LevelSetGrid::from_fn(s.clone(), f).unwrap();
        let h = s.spacing;
        let e = |a: usize| Vector3::from_fn(|i, _| if i == a { h } else { 0.0 });
        // Fourth mixed differences of f at the grid's scale (f is smooth: its values at nodes
        // and between them give the same bound to the digits that matter here).
        let mut fourth: f64 = 0.0;
        for p in probe_points(&s) {
            for a in 0..3 {
                for b in (0..3).filter(|&b| b != a) {
                    let d = |q: Point3<f64>| f(q + e(a)) - 2.0 * f(q) + f(q - e(a));
                    fourth = fourth.max((d(p + e(b)) - 2.0 * d(p) + d(p - e(b))).abs());
                }
            }
        }
        let (mut checked, mut largest, mut trilinear) = (0, 0.0_f64, 0.0_f64);
        for p in probe_points(&s).into_iter().skip(3).take(100) {
            for axis in 0..3 {
                let i = ((p[axis] - s.origin[axis]) / h).round();
                if i < 1.0 || i > (s.dims[axis] - 2) as f64 {
                    continue;
                }
                let on = s.origin[axis] + i * h;
                let (mut below, mut above) = (p, p);
                below[axis] = on - 1e-7;
                above[axis] = on + 1e-7;
                let (v0, g0) = grid.value_and_gradient(&below);
                let (v1, g1) = grid.value_and_gradient(&above);
                // The value's change over the 2e-7 step is its slope's.
                let slope = 0.5 * (g0[axis] + g1[axis]) * 2e-7;
                assert!(
                    (v1 - v0 - slope).abs() < 1e-10,
                    "{p} axis {axis}: {v0} {v1}"
                );
                for d in (0..3).filter(|&d| d != axis) {
                    assert!((g0[d] - g1[d]).abs() < 1e-5, "{p} axis {axis}: {g0} {g1}");
                }
                largest = largest.max((g0[axis] - g1[axis]).abs());
                let mut mid = below;
                mid[axis] = on;
                trilinear =
                    trilinear.max((f(mid + e(axis)) - 2.0 * f(mid) + f(mid - e(axis))).abs() / h);
                checked += 1;
            }
        }
        println!(
            "{checked} crossings: jump {largest:.2e}, bound {:.2e}, trilinear's about {trilinear:.2e}",
            0.25 * fourth / h
        );
        assert!(checked > 200, "{checked}");
        assert!(largest <= 0.25 * fourth / h * 1.01, "{largest} {fourth}");
    }

    #[test]
    fn a_box_s_level_set_does_not_bulge_at_its_edges() {
        // The signed distance of a box kinks at its edges: the second difference of the node
        // just inside an edge is of order h beside zeros, and used it would pull the faces out
        // near the edge by up to h / 8. Such nodes keep trilinear interpolation (`smooth_nodes`):
        // on the faces the level set is the exact 0 or above it (the trilinear rounding of the
        // edge), never below.
        let half = Vector3::new(0.6, 0.4, 0.3);
        let distance = |p: Point3<f64>| {
            let q = p.coords.abs() - half;
            q.map(|x| x.max(0.0)).norm() + q.max().min(0.0)
        };
        let s = GridSpec {
            origin: [-0.83, -0.61, -0.52],
            spacing: 0.05,
            dims: [35, 27, 23],
        };
        let grid = LevelSetGrid::from_fn(s.clone(), distance).unwrap();
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(5);
        let mut lowest = f64::INFINITY;
        for _ in 0..5000 {
            let axis = rng.random_range(0..3usize);
            let mut p = Point3::from(half.map(|h| h * rng.random_range(-1.0..1.0)));
            p[axis] = half[axis] * if rng.random::<bool>() { 1.0 } else { -1.0 };
            lowest = lowest.min(grid.value(&p));
        }
        println!("lowest value on the faces: {lowest:.2e}");
        assert!(lowest > -1e-12, "{lowest}");
    }

    #[test]
    fn on_a_sphere_the_level_set_converges_at_third_order_and_stays_within_its_gap() {
        // The signed distance of a sphere of radius 1 sampled at spacing h: near the surface
        // the trilinear interpolant errs by about h^2 / 4 (second order, always outside), the
        // corrected one at third order; both stay within the gap of each other.
        let mut errors = Vec::new();
        for h in [0.1, 0.05, 0.025] {
            let n = (3.0 / h) as usize + 1;
            let s = GridSpec {
                origin: [-1.5, -1.5, -1.5],
                spacing: h,
                dims: [n, n, n],
            };
            let grid = LevelSetGrid::from_fn(s.clone(), |p| p.coords.norm() - 1.0).unwrap();
            let (mut worst, mut worst_trilinear): (f64, f64) = (0.0, 0.0);
            for p in probe_points(&s) {
                let r = p.coords.norm();
                let at = grid.locate(&p);
                let v = grid.sample_value(&at);
                let t = grid.trilinear_value(&grid.cell(&p));
                // The gap bounds the points that are not deep inside.
                if t >= -h {
                    assert!((v - t).abs() <= grid.interpolation_gap(), "{p}");
                }
                if (r - 1.0).abs() < 0.2 {
                    worst = worst.max((v - (r - 1.0)).abs());
                    worst_trilinear = worst_trilinear.max((t - (r - 1.0)).abs());
                }
            }
            println!("h {h}: corrected {worst:.3e}, trilinear {worst_trilinear:.3e}");
            errors.push((worst, worst_trilinear));
        }
        for pair in errors.windows(2) {
            assert!(pair[1].0 < pair[0].0 / 5.0, "{errors:?}");
            assert!(pair[1].1 > pair[0].1 / 6.0, "{errors:?}");
        }
    }

    #[test]
    fn pull_back_through_a_translation_and_a_dilation_is_exact() {
        // X + u(X) = y in closed form: a uniform u gives X = y - u; u = e x gives X = y / (1 + e)
        // (trilinear interpolation reproduces both fields; Newton is exact in one step, the
        // second evaluation confirms it).
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let shift = Vector3::new(0.05, -0.1, 0.02);
        let e = 0.07;
        let inner = |p: &Point3<f64>| {
            let m = Vector3::repeat(s.spacing);
            grid.contains(&(p - m)) && grid.contains(&(p + m))
        };
        for y in probe_points(&s).into_iter().filter(inner) {
            let b = grid.pull_back(&y, |_| shift).unwrap();
            assert!((b.point - (y - shift)).amax() <= 1e-12 * s.spacing, "{y}");
            assert!(b.iterations <= 2);
            assert!((b.inverse_jacobian - Matrix3::identity()).amax() < 1e-15);
            let b = grid
                .pull_back(&y, |n| grid.node_position(n).coords * e)
                .unwrap();
            assert!((b.point - y / (1.0 + e)).amax() <= 1e-12 * s.spacing, "{y}");
            assert!(b.iterations <= 2, "{}", b.iterations);
            let expected = Matrix3::identity() / (1.0 + e);
            assert!((b.inverse_jacobian - expected).amax() < 1e-13);
        }
    }

    /// The grid of `spec()` with `u(x) = 0.12 (y z, x^2, sin(x + y))` at its nodes (`|grad u|`
    /// about 0.3): the spec, the grid and the node values.
    fn nonlinear_field() -> (GridSpec, LevelSetGrid, Vec<Vector3<f64>>) {
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let f = |p: Point3<f64>| Vector3::new(p.y * p.z, p.x * p.x, (p.x + p.y).sin()) * 0.12;
        let nodes = (0..s.len()).map(|n| f(grid.node_position(n))).collect();
        (s, grid, nodes)
    }

    /// The root of `X + u(X) = y` by 200 plain fixed-point iterations `X <- y - u(X)` (a
    /// contraction where `|grad u| < 1`, converged to round-off): an independent solution.
    fn fixed_point(y: &Point3<f64>, field: impl Fn(&Point3<f64>) -> Vector3<f64>) -> Point3<f64> {
        let mut x = *y;
        for _ in 0..200 {
            x = y - field(&x);
        }
        x
    }

    #[test]
    fn pull_back_through_a_nonlinear_field_solves_its_equation() {
        // u(x) = a (y z, x^2, sin(x + y)) on the grid, |grad u| about 0.3: the result satisfies
        // X + u_h(X) = y for the interpolated field u_h to the tolerance, and agrees with an
        // independent solution, 200 plain fixed-point iterations X <- y - u_h(X) (a contraction,
        // converged to round-off), within what the tolerance allows: `|X - X*| <= |r| / (1 -
        // |grad u|) < 2 |r|`.
        let (s, grid, nodes) = nonlinear_field();
        let u = |n: usize| nodes[n];
        let field = |p: &Point3<f64>| grid.displacement(&grid.locate(p), u).0;
        let inner = |p: &Point3<f64>| {
            let m = Vector3::repeat(2.0 * s.spacing);
            grid.contains(&(p - m)) && grid.contains(&(p + m))
        };
        let mut most = 0;
        for y in probe_points(&s).into_iter().filter(inner) {
            let b = grid.pull_back(&y, u).unwrap();
            let r = b.point + field(&b.point) - y;
            assert!(r.amax() <= PULL_BACK_TOLERANCE * s.spacing, "{y}: {r}");
            let x = fixed_point(&y, field);
            let error = (x - b.point).amax();
            assert!(
                error < 2.0 * PULL_BACK_TOLERANCE * s.spacing,
                "{y}: {} vs {}",
                x,
                b.point
            );
            most = most.max(b.iterations);
        }
        assert!(most <= 5, "{most} evaluations");
    }

    #[test]
    fn pull_back_from_a_neighbours_displacement_finds_the_same_point_in_fewer_evaluations() {
        // The field of the test above, queried along a line of points 0.3 spacings apart, each
        // started from y less the displacement found at the point before (what the narrow phase
        // does along a cluster of nodes): the same material point as from y, to the tolerance
        // (checked against the fixed-point solution above, within `2 |r|` of it as there), in
        // fewer evaluations in total.
        let (s, grid, nodes) = nonlinear_field();
        let u = |n: usize| nodes[n];
        let field = |p: &Point3<f64>| grid.displacement(&grid.locate(p), u).0;
        let first = grid.node_position(s.index(2, 2, 2));
        let step = Vector3::new(0.3, 0.2, 0.1) * s.spacing;
        let (mut from_y, mut from_guess) = (0, 0);
        let mut displacement = Vector3::zeros();
        for i in 0..20 {
            let y = first + step * i as f64;
            let plain = grid.pull_back(&y, u).unwrap();
            let guessed = (grid)
                .pull_back_from(&y, &(y - displacement), |n| Lanes::from_vector(u(n), 0.0))
                .unwrap();
            let x = fixed_point(&y, field);
            let tolerance = PULL_BACK_TOLERANCE * s.spacing;
            assert!((guessed.point - x).amax() < 2.0 * tolerance, "{y}");
            assert!(
                (guessed.point - plain.point).amax() <= 4.0 * tolerance,
                "{y}"
            );
            displacement = y - guessed.point;
            from_y += plain.iterations;
            from_guess += guessed.iterations;
        }
        assert!(
            from_guess < from_y,
            "{from_guess} against {from_y} evaluations"
        );
    }

    #[test]
    fn pull_back_converges_wherever_the_field_does_not_fold() {
        // Two fields scaled so that the largest spectral norm of grad u over the grid is
        // `target` (its largest over the cells' 8 corner Jacobians: inside a cell grad u is
        // their trilinear combination, and the norm is convex): random node values, whose
        // gradient jumps across every cell face (the worst case for Newton's method), and a
        // smooth field whose displacements span several cells. Where |grad u|_2 < 1 everywhere,
        // X -> X + u(X) is one-to-one: each query must find its material point, within a few
        // evaluations.
        use rand::{RngExt, SeedableRng};
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(11);
        let rough: Vec<Vector3<f64>> = (0..s.len())
            .map(|_| Vector3::from_fn(|_, _| rng.random::<f64>() - 0.5))
            .collect();
        let smooth: Vec<Vector3<f64>> = (0..s.len())
            .map(|n| {
                let p = grid.node_position(n);
                Vector3::new(
                    (3.0 * p.x + 2.0 * p.y).sin(),
                    (4.0 * p.y - 3.0 * p.z).cos(),
                    (2.5 * p.z + 3.5 * p.x).sin() * (1.0 + p.y),
                )
            })
            .collect();
        let [nx, ny, nz] = s.dims;
        let steepest = |raw: &[Vector3<f64>]| {
            let mut steepest: f64 = 0.0;
            for i in 0..nx - 1 {
                for j in 0..ny - 1 {
                    for k in 0..nz - 1 {
                        let at = |a: usize, b: usize, c: usize| raw[s.index(i + a, j + b, k + c)];
                        for corner in 0..8 {
                            let (a, b, c) = (corner >> 2, (corner >> 1) & 1, corner & 1);
                            let g = Matrix3::from_columns(&[
                                at(1, b, c) - at(0, b, c),
                                at(a, 1, c) - at(a, 0, c),
                                at(a, b, 1) - at(a, b, 0),
                            ]) / s.spacing;
                            let norm = (g.transpose() * g).symmetric_eigenvalues().max().sqrt();
                            steepest = steepest.max(norm);
                        }
                    }
                }
            }
            steepest
        };
        let inner = |p: &Point3<f64>| {
            let m = Vector3::repeat(2.0 * s.spacing);
            grid.contains(&(p - m)) && grid.contains(&(p + m))
        };
        for raw in [&rough, &smooth] {
            let scale = 1.0 / steepest(raw);
            for target in [0.5, 0.85, 0.95] {
                let nodes: Vec<Vector3<f64>> = raw.iter().map(|v| v * (target * scale)).collect();
                let u = |n: usize| nodes[n];
                for y in probe_points(&s).into_iter().filter(inner) {
                    let b = grid
                        .pull_back(&y, u)
                        .unwrap_or_else(|e| panic!("|grad u|_2 <= {target}: {e}"));
                    let (ux, _) = grid.displacement(&b.at, u);
                    let r = b.point.coords + ux - y.coords;
                    assert!(r.amax() <= 1e-9 * s.spacing, "{y}: residual {r}");
                    assert!(b.iterations <= 8, "{y}: {} evaluations", b.iterations);
                }
            }
        }
    }

    #[test]
    fn a_cell_s_gradient_norm_is_its_largest_inside() {
        // Affine u = A x: |A|_2 in every cell. A random field: the largest |grad u|_2 over a
        // lattice of points inside a cell (the interpolant's own gradient) reaches the cell's
        // bound at the lattice points next to the corners, and never exceeds it.
        use rand::{RngExt, SeedableRng};
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let a = Matrix3::new(0.3, -0.2, 0.1, 0.05, 0.4, -0.3, 0.2, 0.1, -0.25);
        let norm = |g: &Matrix3<f64>| (g.transpose() * g).symmetric_eigenvalues().max().sqrt();
        let affine = |n: usize| a * grid.node_position(n).coords;
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(5);
        let nodes: Vec<Vector3<f64>> = (0..s.len())
            .map(|_| Vector3::from_fn(|_, _| rng.random::<f64>() - 0.5))
            .collect();
        let random = |n: usize| nodes[n];
        for (i, j, k) in [(0, 0, 0), (3, 7, 2), (7, 11, 5)] {
            let lo = s.node(i, j, k);
            let centre = lo + Vector3::repeat(0.5 * s.spacing);
            let at = grid.locate(&centre);
            assert!((grid.cell_gradient_norm(&at, affine) - norm(&a)).abs() < 1e-12);
            let bound = grid.cell_gradient_norm(&at, random);
            let mut inside: f64 = 0.0;
            let steps = 20;
            for p in 0..=steps {
                for q in 0..=steps {
                    for r in 0..=steps {
                        let t = Vector3::new(p as f64, q as f64, r as f64) / steps as f64;
                        let t = t.map(|v| 1e-6 + (1.0 - 2e-6) * v);
                        let x = lo + t * s.spacing;
                        let (_, g) = grid.displacement(&grid.locate(&x), random);
                        inside = inside.max(norm(&g));
                    }
                }
            }
            assert!(inside <= bound * (1.0 + 1e-9), "{inside} > {bound}");
            assert!(inside >= bound * (1.0 - 1e-4), "{inside} < {bound}");
        }
    }

    #[test]
    fn a_newton_step_across_a_kink_is_damped() {
        // u_x zigzags from node to node (0, 0.9 h, 0, 0.9 h, ... along x): X -> X + u(X) has
        // slopes 1.9 and 0.1 in turn, one-to-one with |grad u| = 0.9 < 1. From a cell of slope
        // 0.1, Newton's full step overshoots by up to 9 cells and raises the residual; the
        // fixed point then contracts by 0.9 a step, 100 steps short of 1e-12 h. Halving the
        // step finds every root within a few evaluations.
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let h = s.spacing;
        let zigzag = |n: usize| {
            let i = ((grid.node_position(n).x - s.origin[0]) / h).round() as usize;
            Vector3::new(0.9 * h * (i % 2) as f64, 0.0, 0.0)
        };
        let inner = |p: &Point3<f64>| {
            let m = Vector3::repeat(2.0 * h);
            grid.contains(&(p - m)) && grid.contains(&(p + m))
        };
        let mut most = 0;
        for y in probe_points(&s).into_iter().filter(inner) {
            let b = grid
                .pull_back(&y, zigzag)
                .unwrap_or_else(|e| panic!("{y}: {e}"));
            let (ux, _) = grid.displacement(&b.at, zigzag);
            assert!((b.point.coords + ux - y.coords).amax() <= 1e-12 * h, "{y}");
            most = most.max(b.iterations);
        }
        assert!(most <= 30, "{most} evaluations");
    }

    #[test]
    fn a_field_carried_through_the_pull_back_is_its_interpolant_at_the_material_point_to_the_bit() {
        // The nonlinear field's pull-back with a scalar field in the fourth lane: the point and
        // its evaluations are those of the plain pull-back, and the carried value and gradient
        // are the bits of `interpolate_nodes` of the scalar alone at the material point (the
        // tie rule's mean on grid planes), its gradient zero along clamped axes. Points on grid
        // planes (ties) and outside the box (clamped) included.
        let (s, grid, nodes) = nonlinear_field();
        let u = |n: usize| nodes[n];
        let w = |n: usize| {
            let p = grid.node_position(n);
            (1.7 * p.x - p.y * p.z).cos() + 0.3 * p.y
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // Without a displacement the material point is `y` itself: points on interior grid
        // planes (a node, a point on a face) stay on them.
        let zero = |_: usize| Vector3::zeros();
        let on_planes = [
            s.node(3, 5, 2) + Vector3::new(0.1, 0.07, 0.0),
            s.node(4, 6, 3),
        ];
        let outside = Point3::from(s.upper()) + Vector3::new(0.3, -0.2, 0.1);
        let cases = (probe_points(&s)
            .into_iter()
            .chain([outside])
            .map(|y| (y, &u as &dyn Fn(usize) -> Vector3<f64>)))
        .chain(on_planes.map(|y| (y, &zero as &dyn Fn(usize) -> Vector3<f64>)));
        let (mut ties, mut clamped) = (0, 0);
        for (y, u) in cases {
            let field = |n: usize| Lanes::from_vector(u(n), w(n));
            // The field does not fold: every point pulls back.
            let plain = grid.pull_back(&y, u).unwrap();
            let carried = grid.pull_back_from(&y, &y, field).unwrap();
            assert_eq!(plain.point, carried.point, "{y}");
            assert_eq!(plain.iterations, carried.iterations, "{y}");
            assert_eq!(plain.inverse_jacobian, carried.inverse_jacobian, "{y}");
            let at = &carried.at;
            let (value, gradient) = s.interpolate_nodes(at, w);
            let gradient: [f64; 3] =
                std::array::from_fn(|d| if at.is_clamped(d) { 0.0 } else { gradient[d] });
            assert_eq!(bits(&[carried.carried]), bits(&[value]), "{y}");
            assert_eq!(
                bits(carried.carried_gradient.as_slice()),
                bits(&gradient),
                "{y}"
            );
            ties += at.tie.iter().any(|&t| t != 0) as usize;
            clamped += !at.is_inside() as usize;
        }
        assert!(ties > 0 && clamped > 0, "ties {ties}, clamped {clamped}");
    }

    #[test]
    fn pull_back_never_returns_a_point_that_misses_its_equation() {
        // u = (-2 x, 0, 0) folds the grid (I + grad u has a negative determinant): no Newton
        // step is trusted, and the fixed-point steps walk out of the box, where the field is
        // constant and the root of the continued map is found. Whatever it returns satisfies
        // X + u(X) = y; a field that is not finite fails with the residual named.
        let s = spec();
        let grid = LevelSetGrid::from_fn(s.clone(), linear).unwrap();
        let fold = |n: usize| Vector3::new(-2.0 * grid.node_position(n).x, 0.0, 0.0);
        for y in probe_points(&s) {
            if let Ok(b) = grid.pull_back(&y, fold) {
                let (u, _) = grid.displacement(&b.at, fold);
                assert!(
                    (b.point.coords + u - y.coords).amax() <= 1e-9 * s.spacing,
                    "{y}"
                );
            }
        }
        let y = s.node(4, 6, 3);
        let e = grid
            .pull_back(&y, |_| Vector3::repeat(f64::NAN))
            .unwrap_err();
        assert!(e.to_string().contains("did not converge"), "{e}");
    }

    #[test]
    fn on_a_grid_plane_a_field_s_gradient_is_the_mean_of_the_two_cells_and_the_level_set_s_is_continuous()
     {
        // f = (x - x_3)^2 + (y - y_5)^2 z is symmetric about the grid planes x = x_3 and
        // y = y_5: on them the derivative across the plane vanishes (each cell alone gives
        // +-h); elsewhere nothing changes.
        let s = spec();
        let (x3, y5) = (s.node(3, 0, 0).x, s.node(0, 5, 0).y);
        let f = |p: Point3<f64>| (p.x - x3).powi(2) + (p.y - y5).powi(2) * p.z;
        let grid = LevelSetGrid::from_fn(s.clone(), f).unwrap();
        let on_both = Point3::new(x3, y5, 1.1);
        let (_, g) = grid.value_and_gradient(&on_both);
        assert_eq!(g.x, 0.0);
        assert_eq!(g.y, 0.0);
        // z is not tied: the one cell's exact derivative of the interpolant.
        assert!((g.z - 0.0).abs() < 1e-15);
        let on_x = Point3::new(x3, y5 + 0.3 * s.spacing, 1.1);
        let (_, g) = grid.value_and_gradient(&on_x);
        assert!(g.x.abs() < 1e-14, "{g}");
        // Within round-off of the plane, on either side (the lower cell or the upper one claims
        // the point): the same rule.
        for dx in [-1e-15, 1e-15, -1e-12] {
            let near = Point3::new(x3 + dx, y5 - 0.2 * s.spacing, 1.1);
            let (_, g) = grid.value_and_gradient(&near);
            assert!(g.x.abs() < 1e-9, "{dx}: {g}");
        }
        // Just off the plane, the same (the level set is C1; it is exact for this field).
        let off = Point3::new(x3 + 1e-9, y5 + 0.3 * s.spacing, 1.1);
        let (_, g_off) = grid.value_and_gradient(&off);
        assert!((g_off.x - 2e-9).abs() < 1e-12, "{g_off}");
        // Vector fields (the displacement) follow the tie rule: each cell alone gives the
        // jump, just off the plane the cell's own derivative (h - 2 d along x is about h).
        let (_, grad) = grid.displacement(&grid.locate(&off), |n| {
            Vector3::repeat(f(grid.node_position(n)))
        });
        assert!((grad[(0, 0)] - s.spacing).abs() < 1e-6, "{grad}");
        // Vector fields (the displacement) follow the same rule.
        let (_, grad) = grid.displacement(&grid.locate(&on_both), |n| {
            Vector3::repeat(f(grid.node_position(n)))
        });
        assert_eq!(grad.column(0), Vector3::zeros());
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
        // An axis of 2^32 nodes (`locate` finds a cell index through `u32`), refused before
        // its values are looked at; one node fewer passes the spec's check.
        #[cfg(target_pointer_width = "64")]
        {
            let with = |n| {
                GridSpec {
                    dims: [2, 2, n],
                    ..spec()
                }
                .validate()
            };
            assert!(with(u32::MAX as usize).is_ok());
            match with(1 << 32) {
                Err(GridError::Spec { field: "dims", .. }) => {}
                other => panic!("{other:?}"),
            }
        }
        let e = LevelSetGrid::new(spec(), vec![0.0; 5]).unwrap_err();
        assert!(e.to_string().contains("needs 819 values, got 5"), "{e}");
        let mut v = vec![0.0; spec().len()];
        v[spec().index(2, 3, 4)] = f64::NAN;
        let e = LevelSetGrid::new(spec(), v).unwrap_err();
        assert_eq!(e, GridError::NonFinite { node: [2, 3, 4] });
    }
}

#[cfg(test)]
mod reach_tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Signed distances: a unit sphere, a box of half-sides 1, 0.6, 0.4 (edges and corners,
    /// where the second differences are dropped) and two overlapping spheres (a concave crease
    /// outside the grain, where the distance's gradient turns).
    type Distance = Box<dyn Fn(Point3<f64>) -> f64>;

    fn shapes() -> Vec<(&'static str, Distance)> {
        vec![
            ("sphere", Box::new(|p: Point3<f64>| p.coords.norm() - 1.0)),
            (
                "box",
                Box::new(|p: Point3<f64>| {
                    let q = p.coords.abs() - Vector3::new(1.0, 0.6, 0.4);
                    q.map(|x| x.max(0.0)).norm() + q.max().min(0.0)
                }),
            ),
            (
                "two spheres",
                Box::new(|p: Point3<f64>| {
                    let a = (p - Point3::new(0.45, 0.0, 0.0)).norm() - 0.7;
                    let b = (p - Point3::new(-0.45, 0.1, 0.0)).norm() - 0.7;
                    a.min(b)
                }),
            ),
        ]
    }

    /// The largest `|y| - max(phi(y), 0)` over sampled points with `phi(y) <= margin`: over
    /// the grid box and 0.3 beyond it, and near the points of the zero set farthest from the
    /// origin found by the first pass.
    fn sampled(grid: &LevelSetGrid, margin: f64, seed: u64) -> f64 {
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed);
        let (lo, hi) = (Point3::from(grid.spec().origin), grid.spec().upper());
        let mut best = (f64::NEG_INFINITY, Point3::origin());
        let score = |p: Point3<f64>, best: &mut (f64, Point3<f64>)| {
            let phi = grid.value(&p);
            if phi <= margin {
                let s = p.coords.norm() - phi.max(0.0);
                if s > best.0 {
                    *best = (s, p);
                }
            }
        };
        for _ in 0..200_000 {
            let p = Point3::from(Vector3::from_fn(|d, _| {
                rng.random_range(lo[d] - 0.3..hi[d] + 0.3)
            }));
            score(p, &mut best);
        }
        for scale in [0.1, 0.02] {
            let around = best.1;
            for _ in 0..50_000 {
                let p = around + Vector3::from_fn(|_, _| rng.random_range(-scale..scale));
                score(p, &mut best);
            }
        }
        best.0
    }

    fn grid(f: &dyn Fn(Point3<f64>) -> f64, h: f64, half_width: f64) -> LevelSetGrid {
        let n = (2.0 * half_width / h).round() as usize + 1;
        // Off the shapes' symmetry planes, so that no node lies on a kink by construction.
        let spec = GridSpec {
            origin: [
                -half_width - 0.013,
                -half_width + 0.007,
                -half_width - 0.003,
            ],
            spacing: h,
            dims: [n; 3],
        };
        LevelSetGrid::from_fn(spec, f).unwrap()
    }

    /// Reference: sampling (an independent method: the level set queried as the solver queries
    /// it). Every sampled point at or below each margin lies within the reach plus its own
    /// level; on a padded sphere the bound is within 0.02 of a spacing of the sampled value.
    #[test]
    fn every_point_at_or_below_the_margin_lies_within_the_reach() {
        for (name, f) in shapes() {
            for (h, half_width) in [(0.1, 1.5), (0.25, 1.5), (0.1, 0.9)] {
                let g = grid(&f, h, half_width);
                for margin in [0.0, 0.5 * h, h] {
                    let r = g.reach(&Point3::origin(), margin);
                    let s = sampled(&g, margin, 7);
                    assert!(
                        s <= r,
                        "{name}, h {h}, box {half_width}, margin {margin}: sampled {s} > reach {r}"
                    );
                    if name == "sphere" && half_width > 1.0 && h == 0.1 {
                        assert!(r - s < 0.02 * h, "{name}, margin {margin}: slack {}", r - s);
                    }
                }
            }
        }
    }

    /// A grid positive everywhere has no point to reach.
    #[test]
    fn a_grid_above_its_margin_everywhere_reaches_nothing() {
        let g = grid(&|p: Point3<f64>| p.coords.norm() + 1.0, 0.25, 1.0);
        assert_eq!(g.reach(&Point3::origin(), 0.5), 0.0);
    }
}
