//! Each mode's displacement as a function of its amplitude (docs/physics.md section 1): the
//! configuration map `x = x0 + sum_a u_a(x0; eps_a)` of a deformable grain.
//!
//! A mode is a path of displacement fields through the points `(eps_p, u_p)`, `p = 0..P`, and
//! the origin `(0, 0)`: `u(eps) = sum_p c_p(eps) u_p` and `du/d eps = sum_p d_p(eps) u_p` with
//! the weights of [`grain::path_weights`] (the rule the baker shares): C1 in `eps` (a cubic
//! Hermite interpolant through the points), continued along its end tangents below the origin
//! and beyond the last point (the run reports the excursion). The tangent `du/d eps` plays the
//! part of the mode vector `Phi_a` in every equation of motion (Eq. 41's generalized force, the
//! node velocities, the level-set derivatives): the map is the grain's generalized
//! coordinates, whatever its shape in `eps`.
//!
//! - a linear mode (Eq. 1) is one point `(1, Phi)`: `u = eps Phi`, `du/d eps = Phi`;
//! - a path mode follows the FEM run's own snapshots (`mode-extract --single` with the path,
//!   docs/physics.md section 7): at each snapshot's amplitude the grain has that snapshot's
//!   shape, so a contact patch that the FEM flattened against a loader is flat at every
//!   snapshot and moves with it, and the loader's reaction is the generalized force to the
//!   run's last increment.
//!
//! Fields are given at the shape's surface nodes and at its grid nodes (the grid's field,
//! extended outside the grain, serves the level sets and the material points).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use grain::{GridSpec, LevelSetGrid, Located, PathPiece};
use nalgebra::Vector3;

use smallvec::SmallVec;

use grain::Lanes;

use crate::lanes::{Quad, Unit, Wide, add_scaled, add_weighted_rows, in_lanes, in_unit, rows};

/// A displacement field at the surface nodes (the shape's order) and at the grid nodes (C
/// order).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// At the surface nodes.
    pub nodes: Vec<Vector3<f64>>,
    /// At the grid nodes.
    pub grid: Vec<Vector3<f64>>,
}

impl Field {
    /// The field as [`Paths`] keeps it: each component rounded to the nearest `f32`
    /// ([`stored`]).
    fn stored(self) -> Field {
        let round = |v: Vec<Vector3<f64>>| v.into_iter().map(|x| x.map(stored)).collect();
        Field {
            nodes: round(self.nodes),
            grid: round(self.grid),
        }
    }
}

/// `x` rounded to the nearest `f32`, as a grain's mode fields are kept ([`Paths`]): relative
/// error at most `2^-24` (about `6e-8`), far below the FEM's own; it halves the bytes a node
/// test reads per column (docs/physics.md section 1, "Precision of the mode fields").
pub fn stored(x: f64) -> f64 {
    f64::from(x as f32)
}

/// A bound over the grid nodes, and over the nodes of the band near the surface
/// (`phi_0 <= BAND_CELLS h`): the early-outs of [`crate::levelset`] use the band's where they
/// can.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bound {
    /// Over every grid node.
    pub all: f64,
    /// Over the nodes with `phi_0 <= BAND_CELLS h`.
    pub band: f64,
}

impl Bound {
    /// The largest `f(n)` over all nodes and over the band's (`phi0` the node values,
    /// `band` the band's width).
    pub fn over(phi0: &[f64], band: f64, f: impl Fn(usize) -> f64) -> Bound {
        let mut b = Bound::default();
        for (n, p) in phi0.iter().enumerate() {
            let v = f(n);
            b.all = b.all.max(v);
            if *p <= band {
                b.band = b.band.max(v);
            }
        }
        b
    }

    /// `self + s other`.
    fn plus(self, s: f64, other: Bound) -> Bound {
        Bound {
            all: self.all + s * other.all,
            band: self.band + s * other.band,
        }
    }
}

/// What bounds a field: `max_k |v(x0_k)|` over the surface nodes, `max_n |v(c_n)|_1` over the
/// grid (all, band), and `|grad v|_2` (the spectral norm) over the cells that reach the grain
/// (a corner with `phi_0 <= h`): in a cell, `dv_i/dx_j` interpolates the differences along the
/// cell's 4 edges in `j`, so the largest of those, `M_ij`, bounds it, and
/// `|grad v|_2 <= |grad v|_F <= |M|_F`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FieldBounds {
    /// Over the surface nodes (Euclidean norm).
    pub nodes: f64,
    /// Over the grid (1-norm).
    pub grid: Bound,
    /// A bound of `|grad v|_2` near the grain.
    pub fold: f64,
}

impl FieldBounds {
    fn of(field: &Field, levelset: &LevelSetGrid) -> FieldBounds {
        let phi0 = levelset.values();
        let band = BAND_CELLS * levelset.spec().spacing;
        FieldBounds {
            nodes: field.nodes.iter().map(|v| v.norm()).fold(0.0, f64::max),
            grid: Bound::over(phi0, band, |n| field.grid[n].abs().sum()),
            fold: fold_bound(levelset, &field.grid),
        }
    }
}

/// A bound of `|grad v|_2` of the trilinear field `v` (grid node values) over the cells with a
/// corner where `phi_0 <= h`: the largest `|M|_F` of [`FieldBounds`]. (The largest row sum of
/// `M`, a bound of `|grad v|_inf`, is up to `sqrt 3` larger: 0.90 against 0.79 at the end of the
/// CalculiX ellipsoid's run, where it stopped box grains past the run's last increment.)
fn fold_bound(levelset: &LevelSetGrid, v: &[Vector3<f64>]) -> f64 {
    let spec = levelset.spec();
    let [nx, ny, nz] = spec.dims;
    let (h, phi0) = (spec.spacing, levelset.values());
    let strides = [ny * nz, nz, 1];
    let mut largest: f64 = 0.0;
    for i in 0..nx - 1 {
        for j in 0..ny - 1 {
            for k in 0..nz - 1 {
                let base = spec.index(i, j, k);
                let corners: [usize; 8] = std::array::from_fn(|c| {
                    base + (c >> 2) * strides[0]
                        + ((c >> 1) & 1) * strides[1]
                        + (c & 1) * strides[2]
                });
                if corners.iter().all(|&n| phi0[n] > h) {
                    continue;
                }
                // Per axis, the largest edge difference of each component.
                let mut edges = [Vector3::<f64>::zeros(); 3];
                for (axis, e) in edges.iter_mut().enumerate() {
                    let bit = 4 >> axis;
                    for c in (0..8).filter(|c| c & bit == 0) {
                        *e = e.sup(&(v[corners[c | bit]] - v[corners[c]]).abs());
                    }
                }
                let frobenius =
                    (edges[0].norm_squared() + edges[1].norm_squared() + edges[2].norm_squared())
                        .sqrt();
                largest = largest.max(frobenius / h);
            }
        }
    }
    largest
}

/// A mode's displacement as a function of its amplitude (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ModePath {
    /// The amplitudes of the path's points (after the origin; `[1]` for a linear mode).
    pub amplitudes: Vec<f64>,
    /// The column of its first point ([`Paths`]); point `p` is column `first + p`.
    first: usize,
    /// The bounds of each point's field `U_p`.
    point_bounds: Vec<FieldBounds>,
    /// The bounds of the path's tangent field `m_i` at each knot, the origin's first
    /// ([`grain::knot_tangent`]; none for a linear mode).
    knot_bounds: Vec<FieldBounds>,
    /// `max_k |du/d eps (x0_k)|` at the path's points and the quarters between them (an
    /// estimate, [`ModePath::largest_node_tangent`]).
    largest_tangent: f64,
    /// The amplitudes the path's points span, beyond which it extrapolates (`None` for a
    /// linear mode, exact at any amplitude).
    pub range: Option<(f64, f64)>,
}

impl ModePath {
    /// A path through the origin and points at `amplitudes` with fields `points`, its first
    /// point column `first`.
    fn new(
        amplitudes: Vec<f64>,
        points: &[&Field],
        first: usize,
        levelset: &LevelSetGrid,
        range: Option<(f64, f64)>,
    ) -> ModePath {
        // The largest tangent at the nodes: at the points and at quarters of each segment
        // between them (the time step's estimate, not a bound), and along the end tangents.
        let mut samples = vec![0.0];
        let mut previous = 0.0;
        for &a in &amplitudes {
            samples.extend([0.25, 0.5, 0.75, 1.0].map(|t| previous + t * (a - previous)));
            previous = a;
        }
        let largest_tangent = (samples.iter())
            .map(|&eps| {
                let w = grain::path_weights(&amplitudes, eps);
                (0..points[0].nodes.len())
                    .map(|k| {
                        (w.iter())
                            .map(|&(p, _, d)| points[p].nodes[k] * d)
                            .sum::<Vector3<f64>>()
                            .norm()
                    })
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        // The knots' tangent fields, for the bounds: far tighter than their weights' sums of
        // the points' bounds, the neighbouring points nearly cancelling in them.
        let knot_bounds = (0..amplitudes.len() + 1)
            .filter(|_| amplitudes.len() > 1)
            .map(|i| {
                let w = grain::knot_tangent(&amplitudes, i);
                let combine = |field: fn(&Field) -> &Vec<Vector3<f64>>| -> Vec<Vector3<f64>> {
                    (0..field(points[0]).len())
                        .map(|n| {
                            (w.iter().filter(|(j, _)| *j > 0))
                                .map(|&(j, c)| field(points[j - 1])[n] * c)
                                .sum()
                        })
                        .collect()
                };
                let tangent = Field {
                    nodes: combine(|f| &f.nodes),
                    grid: combine(|f| &f.grid),
                };
                FieldBounds::of(&tangent, levelset)
            })
            .collect();
        ModePath {
            point_bounds: points
                .iter()
                .map(|f| FieldBounds::of(f, levelset))
                .collect(),
            knot_bounds,
            amplitudes,
            first,
            largest_tangent,
            range,
        }
    }

    /// The largest tangent at the surface nodes over the path (`max_k |du/d eps|`, at the
    /// points and quarters of the segments between them): the stiffest coupling of the mode to
    /// a contact (the time step).
    pub fn largest_node_tangent(&self) -> f64 {
        self.largest_tangent
    }
}

/// A grain's modes ([`ModePath`]) and their fields, node-major: every point of every path (a
/// linear mode's `Phi`) is a column `j`, and each node's columns are one record of rows of `C`
/// values (`C` columns): at a surface node the columns' x, y and z components, at a grid node
/// those, each column's normal strain and its three second differences along the reference
/// level set's gradient (`GridRow`). A node's displacement, velocity, generalized force and
/// level-set derivative are sums over a row (or of rows), read from one run of memory and in
/// independent lanes: with one array per mode, a grain of 20 modes cost 20 cache misses per node
/// and per use, and with the components interleaved the sums over the columns did not vectorise.
///
/// The records hold `f32` values: the fields are rounded once as they enter ([`stored`]), and
/// every bound and derived row is taken from the rounded fields, so the grain is the rounded
/// fields' grain, exactly; the sums over the columns convert each value to `f64` and run in
/// `f64` ([`crate::lanes::Stored`]). A node test of a 20-mode grain reads 240 bytes instead of
/// 480 (docs/performance.md, "Mode fields in f32").
#[derive(Debug, Clone, PartialEq)]
pub struct Paths {
    /// One per mode.
    pub modes: Vec<ModePath>,
    /// `C`.
    columns: usize,
    /// At the surface nodes: 3 rows of `C` per node (x, y, z).
    nodes: Vec<f32>,
    /// At the grid nodes: [`GRID_ROWS`] rows of `C` per node ([`GridRow`]).
    grid: Vec<f32>,
    /// Each column's largest second-difference component over the grid.
    curvature_max: Vec<f64>,
    /// Each column's largest normal strain magnitude over the grid ([`normal_strain`]).
    strain_max: Vec<f64>,
}

/// The rows of a grid node's record in [`Paths`]: `grid[(n R + r) C + j]` is row `r` of column
/// `j` at node `n`.
#[derive(Debug, Clone, Copy)]
enum GridRow {
    /// The displacement's x component (y and z follow).
    Displacement = 0,
    /// The normal strain ([`normal_strain`]).
    Strain = 3,
    /// The second differences along the gradient, x axis first ([`gradient_second_differences`]).
    Curvature = 4,
}

/// Rows per grid node: 3 displacement components, 1 strain, 3 second differences.
pub const GRID_ROWS: usize = 7;

impl Paths {
    /// Linear modes `u_a = eps_a Phi_a` (Eq. 1), one field `Phi_a` each: one point `(1, Phi_a)`.
    pub fn linear(phi: Vec<Field>, levelset: &LevelSetGrid) -> Paths {
        let phi: Vec<Field> = phi.into_iter().map(Field::stored).collect();
        let modes = (phi.iter().enumerate())
            .map(|(a, f)| ModePath::new(vec![1.0], &[f], a, levelset, None))
            .collect();
        Paths::new(modes, phi, levelset)
    }

    /// One mode along the path through `(0, 0)` and `points` (`(eps_p, u_p)`, amplitudes
    /// increasing from above 0; the caller checks them).
    pub fn through(points: Vec<(f64, Field)>, levelset: &LevelSetGrid) -> Paths {
        let amplitudes: Vec<f64> = points.iter().map(|p| p.0).collect();
        let range = Some((0.0, amplitudes[amplitudes.len() - 1]));
        let columns: Vec<Field> = points.into_iter().map(|p| p.1.stored()).collect();
        let fields: Vec<&Field> = columns.iter().collect();
        let mode = ModePath::new(amplitudes, &fields, 0, levelset, range);
        Paths::new(vec![mode], columns, levelset)
    }

    /// Whether every column is a uniform dilation about the body's origin (its centre of mass)
    /// at the surface nodes `x0` (local frame): `v_j(x0_k) = s_j x0_k` with one scale `s_j`
    /// per column, to `8 f32::EPSILON` (about `1e-6`) of the column's largest node
    /// displacement: the round-off of the stored fields (`2^-24` relative per component, twice
    /// with the fitted scale's), not a near-dilation from FEM data. Such a deformation turns
    /// with the grain (`v(R x) = R v(x)`) and moves every point of its surface: a contact
    /// anywhere, at any orientation, meets it as it met it at rest.
    pub fn is_uniform_dilation(&self, x0: &[Vector3<f64>]) -> bool {
        let c = self.columns;
        (0..c).all(|j| {
            let v: Vec<Vector3<f64>> = (0..x0.len())
                .map(|k| {
                    let r = self.node_record(k);
                    Vector3::new(r[j], r[c + j], r[2 * c + j]).cast::<f64>()
                })
                .collect();
            // The least-squares scale, then every node against it.
            let xx: f64 = x0.iter().map(|x| x.norm_squared()).sum();
            let vx: f64 = v.iter().zip(x0).map(|(v, x)| v.dot(x)).sum();
            let scale = if xx > 0.0 { vx / xx } else { 0.0 };
            let largest = v.iter().map(|v| v.norm()).fold(0.0, f64::max);
            v.iter()
                .zip(x0)
                .all(|(v, x)| (v - x * scale).norm() <= 8.0 * f64::from(f32::EPSILON) * largest)
        })
    }

    /// Lays the columns out node by node, with their normal strains and second differences at
    /// the grid nodes (the columns as [`Field::stored`] rounded them; the strains and
    /// differences rounded to `f32` as they are stored, the curvature's bound taken from the
    /// rounded values).
    fn new(modes: Vec<ModePath>, columns: Vec<Field>, levelset: &LevelSetGrid) -> Paths {
        let c = columns.len();
        let surface = columns.first().map_or(0, |f| f.nodes.len());
        let mut nodes = vec![0.0f32; surface * 3 * c];
        let grid_nodes = levelset.values().len();
        let mut grid = vec![0.0f32; grid_nodes * GRID_ROWS * c];
        // Row `r` of column `j` at node `n` of a record of `rows` rows.
        let at = |rows: usize, n: usize, r: usize, j: usize| (n * rows + r) * c + j;
        let (mut curvature_max, mut strain_max) = (Vec::with_capacity(c), Vec::with_capacity(c));
        let gradient = reference_gradient(levelset);
        for (j, field) in columns.iter().enumerate() {
            for (k, v) in field.nodes.iter().enumerate() {
                for d in 0..3 {
                    nodes[at(3, k, d, j)] = v[d] as f32;
                }
            }
            for (n, v) in field.grid.iter().enumerate() {
                for d in 0..3 {
                    grid[at(GRID_ROWS, n, GridRow::Displacement as usize + d, j)] = v[d] as f32;
                }
            }
            let mut largest_strain: f64 = 0.0;
            for (n, s) in normal_strain(&gradient, levelset, &field.grid)
                .into_iter()
                .enumerate()
            {
                let s = s as f32;
                largest_strain = largest_strain.max(f64::from(s).abs());
                grid[at(GRID_ROWS, n, GridRow::Strain as usize, j)] = s;
            }
            strain_max.push(largest_strain);
            let mut largest: f64 = 0.0;
            let second = gradient_second_differences(&gradient, levelset, &field.grid);
            for (n, v) in second.into_iter().enumerate() {
                for (a, x) in v.iter().enumerate() {
                    let x = *x as f32;
                    largest = largest.max(f64::from(x).abs());
                    grid[at(GRID_ROWS, n, GridRow::Curvature as usize + a, j)] = x;
                }
            }
            curvature_max.push(largest);
        }
        Paths {
            nodes,
            grid,
            curvature_max,
            strain_max,
            columns: c,
            modes,
        }
    }

    /// Surface node `k`'s record (3 rows of `C`).
    #[inline(always)]
    fn node_record(&self, k: usize) -> &[f32] {
        let size = 3 * self.columns;
        &self.nodes[k * size..(k + 1) * size]
    }

    /// Grid node `n`'s record ([`GRID_ROWS`] rows of `C`).
    #[inline(always)]
    fn grid_record(&self, n: usize) -> &[f32] {
        let size = GRID_ROWS * self.columns;
        &self.grid[n * size..(n + 1) * size]
    }
}

/// The strain `s = n^T (grad v) n` of the field `v` (grid node values) along the reference
/// level set's normal `n = grad phi_0 / |grad phi_0|`, at every grid node, both gradients by
/// central differences (`gradient` is [`reference_gradient`]; `s = 0` where `grad phi_0 = 0`). The
/// semi-Lagrangian update interpolates it trilinearly for its distance normalisation
/// ([`crate::levelset::semi_lagrangian`]): a field continuous across the cells, where the
/// interpolants' own gradients jump.
pub fn normal_strain(
    gradient: &[Vector3<f64>],
    levelset: &LevelSetGrid,
    v: &[Vector3<f64>],
) -> Vec<f64> {
    let spec = levelset.spec();
    (gradient.iter().enumerate())
        .map(|(n, g)| {
            let norm = g.norm();
            if norm == 0.0 {
                return 0.0;
            }
            let normal = g / norm;
            let dv = central_differences(spec, n, |m| v[m]);
            (0..3).map(|d| normal[d] * normal.dot(&dv[d])).sum()
        })
        .collect()
}

/// The second differences of the field `v` (grid node values) along the reference level set's
/// gradient, `grad phi_0 . Delta_a v` at every grid node (`gradient` is [`reference_gradient`],
/// `Delta_a v` where the level set's own second differences are used,
/// [`grain::LevelSetGrid::node_second_differences`]). The trilinear displacement errs by `1/2
/// sum_a t_a (1 - t_a) T[Delta_a u]` between the nodes, which moves the semi-Lagrangian
/// update's pulled-back point and its `phi_0` by these times the same weights: the update
/// takes them out with the reference's own interpolation error
/// ([`crate::levelset::semi_lagrangian`]).
pub fn gradient_second_differences(
    gradient: &[Vector3<f64>],
    levelset: &LevelSetGrid,
    v: &[Vector3<f64>],
) -> Vec<[f64; 3]> {
    let components: [Vec<[f64; 3]>; 3] = std::array::from_fn(|d| {
        let values: Vec<f64> = v.iter().map(|x| x[d]).collect();
        levelset.node_second_differences(&values)
    });
    (gradient.iter().enumerate())
        .map(|(n, g)| std::array::from_fn(|a| (0..3).map(|d| g[d] * components[d][n][a]).sum()))
        .collect()
}

/// The reference level set's gradient at every grid node, by `central_differences`.
pub fn reference_gradient(levelset: &LevelSetGrid) -> Vec<Vector3<f64>> {
    let (spec, phi) = (levelset.spec(), levelset.values());
    (0..phi.len())
        .map(|n| Vector3::from(central_differences(spec, n, |m| phi[m])))
        .collect()
}

/// Central differences of the node values `f` at grid node `n` along x, y and z, over the
/// grid spacing (one-sided on the box's faces; a grid has at least 2 nodes per axis).
fn central_differences<T>(spec: &GridSpec, n: usize, f: impl Fn(usize) -> T) -> [T; 3]
where
    T: Copy + std::ops::Sub<Output = T> + std::ops::Mul<f64, Output = T>,
{
    let at = spec.coordinates(n);
    std::array::from_fn(|d| {
        let (mut lo, mut hi) = (at, at);
        lo[d] = at[d].saturating_sub(1);
        hi[d] = (at[d] + 1).min(spec.dims[d] - 1);
        let inverse = 1.0 / ((hi[d] - lo[d]) as f64 * spec.spacing);
        (f(spec.index(hi[0], hi[1], hi[2])) - f(spec.index(lo[0], lo[1], lo[2]))) * inverse
    })
}

/// The modes of one grain at its current amplitudes: each column's coefficient in the
/// displacement and each mode's tangent as a combination of columns.
#[derive(Clone)]
pub struct Configuration<'a> {
    /// The amplitudes.
    pub eps: &'a [f64],
    paths: &'a Paths,
    /// The displacement's coefficient of each column: its point's `c_p`, 0 for the points of
    /// a path that do not enter.
    coefficients: FewColumns<f64>,
    /// The tangents `du/d eps_a = sum_p d_p u_p` ([`grain::path_weights`]) as terms: a linear
    /// mode's one term is its column with `d = 1`.
    terms: FewColumns<Term>,
    /// This configuration's key in the per-thread memo of grid nodes ([`GridNodes`]); its
    /// clones share it.
    key: u64,
    /// The processor's vector unit, which the sums over the columns run in
    /// ([`crate::lanes`]).
    wide: Wide,
}

/// One term of a mode's tangent: `d` times column `column`.
#[derive(Debug, Clone, Copy)]
struct Term {
    mode: usize,
    column: usize,
    d: f64,
}

/// The per-thread memo of grid nodes' columns combined (the [`GridRow`]s of the semi-Lagrangian
/// update's reads at the corners of each cell it visits: [`GridNodes::displacement_and_strain`],
/// [`GridNodes::curvature`]): direct-mapped by node index, keyed by the configuration and the
/// node. A grid node is a corner of the cells of several node tests of a
/// step and of both fields of each (the pull-back's and the shifted sample's), and combining
/// its columns reads `7 C` values (a tenth of a deformable packing's step for 20 modes,
/// measured); the memo gives the same bits as combining afresh. Its slots are cells, so that a
/// query reaches the thread's memo once ([`Configuration::with_grid_nodes`]) and then reads and
/// fills it through a shared reference: reaching it at every read cost about 50 instructions
/// of the 80 a read took (docs/performance.md). Each row is a cell of its own, so that a read
/// loads the key and its rows only (a cell of the whole record copied it at every read).
const MEMO_SLOTS: usize = 1 << MEMO_BITS;
const MEMO_BITS: u32 = 12;

/// A memo slot: the configuration's key and the node, and the node's rows combined. An empty
/// slot (the default) has the key `(0, 0)`, which no configuration's key matches (they count
/// from 1).
#[derive(Default)]
struct Slot {
    key: Cell<(u64, usize)>,
    rows: [Cell<f64>; GRID_ROWS],
}

thread_local! {
    // An array, not a slice: the hash's top bits index it without a bounds check. Made on the
    // heap (an array made first would take 288 kB of the thread's stack).
    static MEMO: Box<[Slot; MEMO_SLOTS]> =
        match (0..MEMO_SLOTS).map(|_| Slot::default()).collect::<Box<[Slot]>>().try_into() {
            Ok(memo) => memo,
            Err(_) => unreachable!("MEMO_SLOTS slots were made"),
        };
}

/// This thread's memo of combined grid nodes for one configuration
/// ([`Configuration::with_grid_nodes`]).
pub struct GridNodes<'c, 'a> {
    config: &'c Configuration<'a>,
    memo: &'c [Slot; MEMO_SLOTS],
}

impl GridNodes<'_, '_> {
    /// Grid node `n`'s slot, its rows combined afresh if it held another node or
    /// configuration.
    #[inline(always)]
    fn slot(&self, n: usize) -> &Slot {
        // Fibonacci hashing: `n % MEMO_SLOTS` would put a cell's corners in neighbouring
        // layers in one slot whenever a layer's node count is a multiple of the slots.
        let slot = &self.memo
            [((n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_BITS)) as usize];
        let key = (self.config.key, n);
        if slot.key.get() != key {
            let rows = self.config.combine_grid_node(n);
            for (cell, row) in slot.rows.iter().zip(rows) {
                cell.set(row);
            }
            slot.key.set(key);
        }
        slot
    }

    /// Rows `first..first + N` of grid node `n`.
    #[inline(always)]
    fn node_rows<const N: usize>(&self, n: usize, first: GridRow) -> [f64; N] {
        let rows = &self.slot(n).rows[first as usize..first as usize + N];
        std::array::from_fn(|i| rows[i].get())
    }

    /// The displacement at grid node `n` (local frame).
    #[inline(always)]
    pub fn displacement(&self, n: usize) -> Vector3<f64> {
        Vector3::from(self.node_rows::<3>(n, GridRow::Displacement))
    }

    /// The displacement at grid node `n` (local frame) in the first three lanes and its normal
    /// strain ([`normal_strain`]) in the fourth: the rows that follow each other in the record,
    /// what the semi-Lagrangian pull-back interpolates together.
    #[inline(always)]
    pub fn displacement_and_strain(&self, n: usize) -> Lanes {
        const { assert!(GridRow::Strain as usize == GridRow::Displacement as usize + 3) };
        Lanes(self.node_rows::<4>(n, GridRow::Displacement))
    }

    /// The displacement's second differences along the reference level set's gradient at grid
    /// node `n` ([`gradient_second_differences`]).
    #[inline(always)]
    pub fn curvature(&self, n: usize) -> [f64; 3] {
        self.node_rows::<3>(n, GridRow::Curvature)
    }
}

/// Weights of the grid rows ([`GRID_ROWS`] per node) added up over many queries, for one
/// [`Configuration::grid_rows_map`] at the end: a side's node contacts share cells (about 12 per
/// cell face on the modes bench's ball), so their generalized forces read each node's record
/// once instead of once per contact (docs/performance.md). Added up in two levels: per cell
/// (a query's 8 corners' weights, one lookup and 56 contiguous sums), then, when drained, the
/// cells' corners per grid node (a node is a corner of up to 8 cells). Cells and nodes are kept
/// in the order they were first added and the sums made in the order of the additions, so the
/// result depends on the order of the queries only, not on the indexes' hashing.
#[derive(Default)]
pub struct RowWeights {
    /// Per cell: its first corner, its corners, and their weights.
    cells: Vec<(usize, CellWeights)>,
    cell_index: Slots,
    /// Per grid node, filled from the cells when they are drained (kept for its buffer).
    nodes: Vec<(usize, [f64; GRID_ROWS])>,
    node_index: Slots,
    /// The last cell added (its first corner) and its entry: a side's neighbouring node
    /// contacts often pull back into one cell, and then it is not looked up again.
    last: Option<(usize, usize)>,
}

/// A cell's corners and their weights ([`RowWeights`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct CellWeights {
    corners: [usize; 8],
    weights: [[f64; GRID_ROWS]; 8],
}

impl RowWeights {
    /// Adds `scale` times the weights of a cell's 8 corners (a cell of one grid: its corners
    /// follow from its first, [`grain::LevelSetGrid::locate`]), in the lanes of `wide`
    /// ([`add_scaled`]: the same bits in AVX2 and in scalars).
    #[inline]
    pub fn add(
        &mut self,
        wide: Wide,
        corners: &[usize; 8],
        weights: &[[f64; GRID_ROWS]; 8],
        scale: f64,
    ) {
        let e = match self.last {
            Some((first, e)) if first == corners[0] => e,
            _ => {
                let e = self
                    .cell_index
                    .entry(&mut self.cells, corners[0], || CellWeights {
                        corners: *corners,
                        weights: [[0.0; GRID_ROWS]; 8],
                    });
                self.last = Some((corners[0], e));
                e
            }
        };
        let sums = self.cells[e].1.weights.as_flattened_mut();
        in_lanes!(wide, 8 * GRID_ROWS, |q| add_scaled(
            q,
            sums,
            weights.as_flattened(),
            scale
        ));
    }

    /// Whether no weight has been added since the last [`RowWeights::drain_into`].
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Adds the weights' map to `out` ([`Configuration::grid_rows_map`]) and empties them.
    pub fn drain_into(&mut self, config: &Configuration, out: &mut [f64]) {
        self.sum_nodes();
        config.grid_rows_map(self.nodes.iter().map(|(n, w)| (*n, w)), 1.0, out);
        self.clear();
    }

    /// The cells' corner weights added up per grid node, into `nodes`.
    fn sum_nodes(&mut self) {
        for (_, cell) in &self.cells {
            for (&n, w) in cell.corners.iter().zip(&cell.weights) {
                let e = (self.node_index).entry(&mut self.nodes, n, || [0.0; GRID_ROWS]);
                for (sum, w) in self.nodes[e].1.iter_mut().zip(w) {
                    *sum += w;
                }
            }
        }
    }

    /// Empties the weights, keeping the buffers (only the slots the entries took are reset).
    pub fn clear(&mut self) {
        self.cell_index.clear(&mut self.cells);
        self.node_index.clear(&mut self.nodes);
        self.last = None;
    }
}

/// An open-addressing index of a list of keyed entries (`(key, value)`, in the order they were
/// made): an entry's position per slot, `u32::MAX` for an empty slot; a power of two at least
/// twice the entries. Keys are hashed as the memo of grid nodes hashes them (Fibonacci hashing)
/// and probed linearly.
#[derive(Default)]
struct Slots(Vec<u32>);

impl Slots {
    /// The entry of `key` in `entries`, made with `value()` if new.
    #[inline]
    fn entry<T>(
        &mut self,
        entries: &mut Vec<(usize, T)>,
        key: usize,
        value: impl FnOnce() -> T,
    ) -> usize {
        if 2 * entries.len() >= self.0.len() {
            self.grow(entries);
        }
        let slot = self.probe(key, |e| e == u32::MAX || entries[e as usize].0 == key);
        if self.0[slot] == u32::MAX {
            self.0[slot] = entries.len() as u32;
            entries.push((key, value()));
        }
        self.0[slot] as usize
    }

    /// The first slot from `key`'s home whose content is `found`, stepping linearly.
    #[inline(always)]
    fn probe(&self, key: usize, found: impl Fn(u32) -> bool) -> usize {
        let mask = self.0.len() - 1;
        let mut slot = ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        while !found(self.0[slot]) {
            slot = (slot + 1) & mask;
        }
        slot
    }

    /// Doubles the index and enters the keys again, in place (the entries keep their order).
    fn grow<T>(&mut self, entries: &[(usize, T)]) {
        let size = (2 * self.0.len()).max(64);
        self.0.clear();
        self.0.resize(size, u32::MAX);
        for (e, (key, _)) in entries.iter().enumerate() {
            let slot = self.probe(*key, |x| x == u32::MAX);
            self.0[slot] = e as u32;
        }
    }

    /// Empties `entries` and the slots they took: a few entries after many cost a few resets,
    /// not the index's size.
    fn clear<T>(&mut self, entries: &mut Vec<(usize, T)>) {
        for (e, (key, _)) in entries.iter().enumerate() {
            let slot = self.probe(*key, |x| x as usize == e);
            self.0[slot] = u32::MAX;
        }
        entries.clear();
    }

    /// Whether every slot is empty.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&e| e == u32::MAX)
    }
}

/// The next configuration key (0 marks an empty memo slot).
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

impl<'a> Configuration<'a> {
    /// The configuration of modes `paths` at amplitudes `eps`.
    pub fn new(paths: &'a Paths, eps: &'a [f64]) -> Configuration<'a> {
        let mut coefficients: FewColumns<f64> = std::iter::repeat_n(0.0, paths.columns).collect();
        let mut terms = FewColumns::with_capacity(paths.columns);
        for (mode, (m, e)) in paths.modes.iter().zip(eps).enumerate() {
            for &(p, c, d) in grain::path_weights(&m.amplitudes, *e).iter() {
                coefficients[m.first + p] = c;
                terms.push(Term {
                    mode,
                    column: m.first + p,
                    d,
                });
            }
        }
        Configuration {
            eps,
            paths,
            coefficients,
            terms,
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            wide: Wide::detect(),
        }
    }

    /// The columns' weights that give `sum_a rate_a du/d eps_a` as `sum_j r_j u_j` (the node
    /// velocities' modal part, [`Configuration::node_sum`]).
    pub fn column_rates(&self, rate: &[f64]) -> FewColumns<f64> {
        let mut r: FewColumns<f64> = std::iter::repeat_n(0.0, self.paths.columns).collect();
        for t in &self.terms {
            r[t.column] += t.d * rate[t.mode];
        }
        r
    }

    /// `sum_j w_j u_j(x0_k)` at surface node `k` over the columns' fields `u_j`, local frame:
    /// the node's displacement for the coefficients, its modal velocity for
    /// [`Configuration::column_rates`]. In the lanes of `q`, the unit a caller is compiled for
    /// (any unit gives the same bits, [`crate::lanes`]; below four columns the sums take no
    /// lanes).
    #[inline(always)]
    pub fn node_sum<Q: Quad>(&self, q: Q, k: usize, weights: &[f64]) -> Vector3<f64> {
        debug_assert_eq!(weights.len(), self.paths.columns);
        rows::<3, _, _>(q, self.paths.node_record(k), weights).into()
    }

    /// The vector unit of the sums over a node's columns ([`Configuration::node_sum`],
    /// [`Configuration::add_node_force`]): none below four columns.
    #[inline(always)]
    pub fn node_unit(&self) -> Option<Unit> {
        self.wide.for_columns(self.paths.columns)
    }

    /// The displacement of surface node `k` (local frame).
    #[inline(always)]
    pub fn node_displacement(&self, k: usize) -> Vector3<f64> {
        in_unit!(self.node_unit(), |q| self.node_displacement_in(q, k))
    }

    /// [`Configuration::node_displacement`] in the lanes of `q` ([`Configuration::node_sum`]).
    #[inline(always)]
    pub fn node_displacement_in<Q: Quad>(&self, q: Q, k: usize) -> Vector3<f64> {
        self.node_sum(q, k, &self.coefficients)
    }

    /// Adds `u_j(x0_k) . f` to `columns[j]` for each column `j` (`f` local): a node force's
    /// generalized force (Eq. 41) in column space, for [`Configuration::map_columns`] once per
    /// side. Summed over the columns in the lanes of `q` (as [`Configuration::node_sum`]),
    /// where a sum per mode reads the record three times per term.
    #[inline(always)]
    pub fn add_node_force<Q: Quad>(&self, q: Q, k: usize, f: &Vector3<f64>, columns: &mut [f64]) {
        debug_assert_eq!(columns.len(), self.paths.columns);
        add_weighted_rows(q, columns, self.paths.node_record(k), &[f.x, f.y, f.z]);
    }

    /// Adds to `out[a]` the modes' share of the columns' values `sums` (`C` of them):
    /// `sum_p d_p sums[j_p]` over the terms of mode `a`'s tangent `du/d eps_a = sum_p d_p u_p`.
    #[inline]
    pub fn map_columns(&self, sums: &[f64], out: &mut [f64]) {
        for t in &self.terms {
            out[t.mode] += t.d * sums[t.column];
        }
    }

    /// Number of columns `C`.
    pub fn columns(&self) -> usize {
        self.paths.columns
    }

    /// The processor's vector unit ([`crate::lanes`]).
    #[inline(always)]
    pub fn wide(&self) -> Wide {
        self.wide
    }

    /// `f` with this thread's memo of combined grid nodes (`MEMO_SLOTS`): what a query reads
    /// at the corners of the cells it visits.
    #[inline(always)]
    pub fn with_grid_nodes<R>(&self, f: impl FnOnce(&GridNodes) -> R) -> R {
        MEMO.with(|memo| f(&GridNodes { config: self, memo }))
    }

    /// The displacement at grid node `n` (local frame), alone: its three rows combined afresh,
    /// without the memo (the same sums as [`GridNodes::displacement`]): what a pull-back of a
    /// contact point reads, whose neighbours are a few cells away (the precomputed update's
    /// contact velocity, [`crate::view::View::modes_at`]).
    #[inline(always)]
    pub fn grid_displacement(&self, n: usize) -> Vector3<f64> {
        let c = self.paths.columns;
        let record = &self.paths.grid_record(n)[GridRow::Displacement as usize * c..];
        Vector3::from(in_lanes!(self.wide, c, |q| rows::<3, _, _>(
            q,
            record,
            &self.coefficients
        )))
    }

    /// Grid node `n`'s columns combined with the coefficients, row by row ([`GridRow`]).
    fn combine_grid_node(&self, n: usize) -> [f64; GRID_ROWS] {
        let record = self.paths.grid_record(n);
        in_lanes!(self.wide, self.paths.columns, |q| rows(
            q,
            record,
            &self.coefficients
        ))
    }

    /// A bound of [`GridNodes::curvature`]'s components over the grid: the columns'
    /// largest, weighted by their coefficients' magnitudes.
    pub fn curvature_bound(&self) -> f64 {
        (self.coefficients.iter().zip(&self.paths.curvature_max))
            .map(|(k, m)| k.abs() * m)
            .sum()
    }

    /// A bound of the normal strain `s` over the grid (the fourth lane of
    /// [`GridNodes::displacement_and_strain`], interpolated between its nodes): the columns'
    /// largest, weighted by their coefficients' magnitudes.
    pub fn strain_bound(&self) -> f64 {
        (self.coefficients.iter().zip(&self.paths.strain_max))
            .map(|(k, m)| k.abs() * m)
            .sum()
    }

    /// The tangents `du/d eps_a` at a located point, trilinear from the grid's fields
    /// (outside the box, the value at its closest point), into `out` (emptied first).
    #[inline(always)]
    pub fn grid_tangents_at(&self, at: &Located, out: &mut PerMode<Vector3<f64>>) {
        let c = self.paths.columns;
        // The columns' values at the point, row by row (x, y, z).
        let (mut few, mut many) = ([0.0; 9], SmallVec::<[f64; 3 * INLINE_COLUMNS]>::new());
        let columns = zeros(3 * c, &mut few, &mut many);
        in_lanes!(self.wide, c, |q| {
            for (n, w) in at.corners.iter().zip(&at.weights()) {
                add_scaled(q, columns, self.paths.grid_record(*n), *w);
            }
        });
        out.clear();
        out.resize(self.paths.modes.len(), Vector3::zeros());
        for t in &self.terms {
            let j = t.column;
            out[t.mode] += Vector3::new(columns[j], columns[c + j], columns[2 * c + j]) * t.d;
        }
    }

    /// Adds to `out[a]`, per mode, `sum_n (t_a(n) . v_n + s_a(n) w_n + k_a(n) . z_n)` over the
    /// grid nodes `n` of `entries`, `t_a = du/d eps_a`, `s_a` its normal strain and `k_a` its
    /// second differences along the level set's gradient ([`GridNodes::curvature`]):
    /// a linear map of their node values (their interpolated values dotted with a vector, say),
    /// with each entry's weights `[v_n, w_n, z_n]` row by row (`GridRow`'s order). The map is
    /// taken column by column over each node's record, then the columns' sums combine into the
    /// modes' tangents. Linear in the weights: the weights of many queries added up per node
    /// give the sum of their maps, each node's record read once ([`RowWeights`]).
    /// The column sums are scaled by `scale` before they combine (`1.0` leaves their bits).
    #[inline]
    pub fn grid_rows_map<'w>(
        &self,
        entries: impl IntoIterator<Item = (usize, &'w [f64; GRID_ROWS])>,
        scale: f64,
        out: &mut [f64],
    ) {
        let c = self.paths.columns;
        let (mut few, mut many) = ([0.0; 3], PerColumn::new());
        let sums = zeros(c, &mut few, &mut many);
        in_lanes!(self.wide, c, |q| {
            for (n, w) in entries {
                add_weighted_rows(q, sums, self.paths.grid_record(n), w);
            }
        });
        for s in sums.iter_mut() {
            *s *= scale;
        }
        self.map_columns(sums, out);
    }

    /// Whether a query's corner weights wait in a side's [`RowWeights`] to be mapped once per
    /// grid node (four columns or more), or are mapped at once: a one-mode grain's records cost
    /// less to map per query than its weights cost to add up per node (the settle bench's
    /// semi-Lagrangian spheres, docs/performance.md).
    #[inline(always)]
    pub fn defers_rows(&self) -> bool {
        self.paths.columns >= 4
    }

    /// Bounds of the displacement at the amplitudes: over the surface nodes, over the grid
    /// (1-norm, all and band), and of its gradient near the grain, by the triangle inequality
    /// on the path's form ([`grain::PathPiece`]): a linear mode's `|eps|` times `Phi`'s bounds;
    /// a path's `|a_k|` times its two knots' points' and tangents' bounds on a segment (or `|eps|`
    /// times the first tangent's below the origin, the last point's and `|eps - e_P|` times the
    /// last tangent's beyond it). The modes add up.
    pub fn bounds(&self) -> FieldBounds {
        let mut b = FieldBounds::default();
        let mut add = |c: f64, bound: &FieldBounds| {
            b = FieldBounds {
                nodes: b.nodes + c.abs() * bound.nodes,
                grid: b.grid.plus(c.abs(), bound.grid),
                fold: b.fold + c.abs() * bound.fold,
            };
        };
        for (mode, &eps) in self.paths.modes.iter().zip(self.eps) {
            let (points, knots) = (&mode.point_bounds, &mode.knot_bounds);
            // Knot `i >= 1` is point `i - 1`; the origin's displacement is zero.
            let point = |i: usize| (i > 0).then(|| &points[i - 1]);
            match grain::path_piece(&mode.amplitudes, eps) {
                PathPiece::Linear { scale } => add(scale, &points[0]),
                PathPiece::Below { eps } => add(eps, &knots[0]),
                PathPiece::Beyond { excess } => {
                    add(1.0, &points[points.len() - 1]);
                    add(excess, &knots[knots.len() - 1]);
                }
                PathPiece::Inside { s, a, .. } => {
                    for (k, bound) in [point(s - 1), point(s)].into_iter().enumerate() {
                        if let Some(bound) = bound {
                            add(a[k], bound);
                        }
                    }
                    add(a[2], &knots[s - 1]);
                    add(a[3], &knots[s]);
                }
            }
        }
        b
    }
}

/// Columns a grain has before its scratch sums leave the stack.
const INLINE_COLUMNS: usize = 64;

/// `n` scratch sums from `+0.0`: in `few` where they fit (a grain of one to three columns),
/// else in `many`, grown. Built empty and then filled: `smallvec!` built the whole inline buffer
/// (1.5 kB) and copied it out, 170 instructions a call; `SmallVec::resize`, out of line, costs
/// about 55, more than a one-column kernel's arithmetic (docs/performance.md).
#[inline(always)]
fn zeros<'s, const N: usize, A: smallvec::Array<Item = f64>>(
    n: usize,
    few: &'s mut [f64; N],
    many: &'s mut SmallVec<A>,
) -> &'s mut [f64] {
    if n <= N {
        &mut few[..n]
    } else {
        many.resize(n, 0.0);
        many
    }
}

/// One value per mode, inline for up to 4 modes: the narrow phase fills one per pair and per
/// node test, where a heap allocation each would cost more than the arithmetic.
pub type PerMode<T> = SmallVec<[T; 4]>;

/// One value per column of a grain's modes ([`Paths`]), inline up to `INLINE_COLUMNS`.
pub type PerColumn = SmallVec<[f64; INLINE_COLUMNS]>;

/// What a configuration keeps per column, inline for a grain of up to four columns (as
/// [`PerMode`] per mode): a view is built per grain and step ([`crate::view::View`]), and with
/// a heap allocation for each vector a one-mode precomputed view took 2,934 instructions to
/// build, 2,037 without (docs/performance.md, "Allocations of a deformable view, a grid's corner records,
/// clusters in structure-of-arrays chunks").
pub type FewColumns<T> = SmallVec<[T; 4]>;

/// The width of the band near the surface, in cells.
pub const BAND_CELLS: f64 = 5.0;

#[cfg(test)]
mod tests {
    use super::*;

    /// The level set of the unit sphere on a grid over `[-1.5, 1.5]^3` of spacing `h`,
    /// `n` nodes per axis.
    fn unit_sphere(h: f64, n: usize) -> LevelSetGrid {
        let spec = GridSpec {
            origin: [-1.5; 3],
            spacing: h,
            dims: [n; 3],
        };
        LevelSetGrid::from_fn(spec, |p| p.coords.norm() - 1.0).unwrap()
    }

    /// A query's weights mapped at once ([`Configuration::grid_rows_map`] with the query's
    /// scale, what a grain below four columns does) and the same weights added up per grid
    /// node and mapped at the side's end ([`RowWeights`], four columns or more) are one linear
    /// map of the same weights: they agree to rounding, for 1 to 5 linear modes, scales of both
    /// signs, queries sharing cells.
    #[test]
    fn weights_mapped_at_once_equal_them_added_up_per_node() {
        let levelset = unit_sphere(0.25, 13);
        let count = levelset.values().len();
        for modes in 1..=5 {
            let fields: Vec<Field> = (0..modes)
                .map(|a| Field {
                    nodes: vec![Vector3::zeros(); 4],
                    grid: (0..count)
                        .map(|n| {
                            let p = levelset.node_position(n);
                            let k = (a + 1) as f64;
                            Vector3::new((k * p.x).sin(), p.y * p.z + k, p.x - 0.3 * k * p.z)
                        })
                        .collect(),
                })
                .collect();
            let paths = Paths::linear(fields, &levelset);
            let eps: Vec<f64> = (0..modes).map(|a| 0.01 * (a + 1) as f64).collect();
            let config = Configuration::new(&paths, &eps);
            assert_eq!(config.defers_rows(), modes >= 4);
            let (mut direct, mut deferred) = (vec![0.0; modes], vec![0.0; modes]);
            let mut rows = RowWeights::default();
            for q in 0..40 {
                let t = q as f64;
                let y = nalgebra::Point3::new(0.9 * (0.3 * t).cos(), 0.05 * t - 1.0, 0.02 * t);
                let corners = levelset.locate(&y).corners;
                let weights: [[f64; GRID_ROWS]; 8] = std::array::from_fn(|i| {
                    std::array::from_fn(|r| ((i * GRID_ROWS + r + q) % 11) as f64 - 4.7)
                });
                let scale = if q % 3 == 0 { -1.3 } else { 0.4 + 0.1 * t };
                config.grid_rows_map(corners.iter().copied().zip(&weights), scale, &mut direct);
                rows.add(config.wide(), &corners, &weights, scale);
            }
            rows.drain_into(&config, &mut deferred);
            for (d, e) in direct.iter().zip(&deferred) {
                assert!(
                    (d - e).abs() <= 1e-12 * d.abs().max(1.0),
                    "{modes} modes: {d} vs {e}"
                );
            }
        }
    }

    /// A grain keeps its mode fields in f32 ([`stored`]): a surface node's displacement
    /// `sum_j c_j u_j(x0_k)` is the f64 sum of the unrounded fields within `2^-24 sum_j |c_j
    /// u_j|` per component (each stored value within `2^-24` of itself, relative) plus the f64
    /// sum's own rounding, and no closer than a third of that bound for some node (the rounding
    /// is there: an f64 record would be within 1e-15). 7 linear modes (a chunk of four columns
    /// and three in scalars), fields of mixed magnitudes, amplitudes of both signs.
    #[test]
    fn a_node_displacement_from_f32_fields_is_within_their_rounding_of_the_f64_sum() {
        let levelset = unit_sphere(0.5, 7);
        let count = levelset.values().len();
        let nodes = 50;
        let value = |a: usize, k: usize, c: usize| {
            let t = (a * 131 + k * 17 + c * 7) as f64;
            (0.37 * t).sin() * 10f64.powi((k % 5) as i32 - 2) + 1e-3 * (t * 0.11).cos()
        };
        let fields: Vec<Field> = (0..7)
            .map(|a| Field {
                nodes: (0..nodes)
                    .map(|k| Vector3::from_fn(|c, _| value(a, k, c)))
                    .collect(),
                grid: vec![Vector3::zeros(); count],
            })
            .collect();
        let paths = Paths::linear(fields, &levelset);
        let eps = [0.3, -1.7, 0.011, 2.5, -0.4, 0.9, -3.1];
        let config = Configuration::new(&paths, &eps);
        let mut closest: f64 = 1.0;
        for k in 0..nodes {
            let u = config.node_displacement(k);
            for c in 0..3 {
                let exact: f64 = (0..7).map(|a| eps[a] * value(a, k, c)).sum();
                let scale: f64 = (0..7).map(|a| (eps[a] * value(a, k, c)).abs()).sum();
                let bound = 2f64.powi(-24) * scale + 8.0 * f64::EPSILON * scale;
                let off = (u[c] - exact).abs();
                assert!(off <= bound, "node {k}, component {c}: {off:e} > {bound:e}");
                closest = closest.min((bound - off) / bound);
            }
        }
        assert!(closest < 2.0 / 3.0, "no node shows the rounding: {closest}");
    }

    /// The dilation test tells the stored fields' round-off from a near-dilation: a field
    /// `s x0` is one (after its f32 rounding), and the same with one node's displacement off by
    /// 1e-5 of the largest (in any component) is not; nor is a field that is not radial.
    #[test]
    fn a_dilation_is_told_from_a_near_dilation_through_the_rounding() {
        let levelset = unit_sphere(0.5, 7);
        let count = levelset.values().len();
        let x0: Vec<Vector3<f64>> = (0..40)
            .map(|k| {
                let (t, z) = (0.7 * k as f64, 0.05 * k as f64 - 1.0);
                let r = (1.0 - z * z).sqrt();
                Vector3::new(r * t.cos(), r * t.sin(), z)
            })
            .collect();
        let paths = |nodes: Vec<Vector3<f64>>| {
            let grid = vec![Vector3::zeros(); count];
            Paths::linear(vec![Field { nodes, grid }], &levelset)
        };
        let dilation: Vec<Vector3<f64>> = x0.iter().map(|x| x * 0.0137).collect();
        assert!(paths(dilation.clone()).is_uniform_dilation(&x0));
        let largest = dilation.iter().map(|v| v.norm()).fold(0.0, f64::max);
        for c in 0..3 {
            let mut near = dilation.clone();
            near[17][c] += 1e-5 * largest;
            assert!(!paths(near).is_uniform_dilation(&x0), "component {c}");
        }
        let twisted: Vec<Vector3<f64>> = x0.iter().map(|x| Vector3::new(-x.y, x.x, 0.0)).collect();
        assert!(!paths(twisted).is_uniform_dilation(&x0));
    }

    /// A side's weights summed per cell, then per grid node, cells and nodes in the order first
    /// added, each sum in the order of the additions: against a plain scan doing the same sums,
    /// through the indexes' growth, and through their reuse after [`RowWeights::clear`] (a
    /// thread's next side, [`crate::law::surface::Scratch::for_side`]), which must leave every
    /// slot empty.
    #[test]
    fn row_weights_sum_per_cell_and_node_through_growth_and_reuse() {
        let mut rows = RowWeights::default();
        let wide = Wide::detect();
        for count in [500, 3, 200] {
            let mut cells: Vec<(usize, [usize; 8], [[f64; GRID_ROWS]; 8])> = Vec::new();
            for q in 0..count {
                // Neighbouring queries often share a cell, and cells share corners.
                let first = (q / 2 * 7) % 300;
                let corners: [usize; 8] =
                    std::array::from_fn(|i| first + [0, 1, 5, 6][i % 4] + 40 * (i / 4));
                let weights: [[f64; GRID_ROWS]; 8] = std::array::from_fn(|i| {
                    std::array::from_fn(|r| 0.1 * (i * GRID_ROWS + r) as f64 + q as f64)
                });
                let scale = 0.5 + q as f64 / 3.0;
                rows.add(wide, &corners, &weights, scale);
                let e = match cells.iter().position(|c| c.0 == first) {
                    Some(e) => e,
                    None => {
                        cells.push((first, corners, [[0.0; GRID_ROWS]; 8]));
                        cells.len() - 1
                    }
                };
                for (sums, w) in cells[e].2.iter_mut().zip(&weights) {
                    for (sum, w) in sums.iter_mut().zip(w) {
                        *sum += w * scale;
                    }
                }
            }
            let mut nodes: Vec<(usize, [f64; GRID_ROWS])> = Vec::new();
            for (_, corners, weights) in &cells {
                for (n, w) in corners.iter().zip(weights) {
                    let e = match nodes.iter().position(|(m, _)| m == n) {
                        Some(e) => e,
                        None => {
                            nodes.push((*n, [0.0; GRID_ROWS]));
                            nodes.len() - 1
                        }
                    };
                    for (sum, w) in nodes[e].1.iter_mut().zip(w) {
                        *sum += w;
                    }
                }
            }
            let made: Vec<_> = (rows.cells.iter())
                .map(|(f, c)| (*f, c.corners, c.weights))
                .collect();
            assert_eq!(made, cells);
            rows.sum_nodes();
            assert_eq!(rows.nodes, nodes);
            rows.clear();
            assert!(rows.is_empty() && rows.last.is_none() && rows.nodes.is_empty());
            assert!(rows.cell_index.is_empty() && rows.node_index.is_empty());
        }
    }
}
