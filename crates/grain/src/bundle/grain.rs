//! The grain bundle `<name>.grain/`, written by levelset-bake and read by dem-run.
//!
//! | file | content |
//! |---|---|
//! | `grain.json` | manifest: schema, grid, node count, [`GrainProperties`], modal data if deformable (a polynomial internal-force law inline, see [`crate::polynomial`]; the modes' material) |
//! | `levelset.npy` | `(nx, ny, nz)` signed distance, negative inside, local frame |
//! | `nodes.npy` | `(k, 3)` surface node reference positions, local frame |
//! | `node_areas.npy` | `(k)` surface area carried by each node |
//! | `node_modes.npy` | `(A, k, 3)` mode vectors at the nodes (deformable only) |
//! | `grid_modes.npy` | `(A, nx, ny, nz, 3)` mode displacement on the grid, extended outside (deformable only) |
//! | `precomputed/mode{a}_sample{p}.npy` | `(nx, ny, nz)` level set at amplitude `p` of mode `a` |
//! | `path_nodes.npy`, `path_grid.npy` | `(P, k, 3)`, `(P, nx, ny, nz, 3)` the displacement at each point of a path mode ([`ModePath`]) |
//! | `internal_force.csv` | tabulated `F_int` (one mode, tabulated law only) |
//! | `flexibility.npy`, `flexibility_points.npy` | `(S, S)` the residual flexibility between `(S, 3)` surface points, local frame ([`GrainFlexibility`]) |
//! | `grain.vti`, `nodes.vtp` | the same data for ParaView |

use std::path::Path;

use ndarray::{Array1, Array2, Array3, Array5};
use serde::{Deserialize, Serialize};

use super::manifest::{
    FlexibilityEntry, InternalForce, InternalForceEntry, Material, check_patch_radius,
    check_symmetric, nested_rows, read_internal_force, read_manifest, square_matrix,
    write_internal_force, write_manifest,
};
use crate::atomic::write_dir_atomically;
use crate::error::{FormatError, Result};
use crate::grid::{GridSpec, LevelSetGrid};
use crate::npy::{read_array, write_array};
use crate::vtk::{PointData, write_vti, write_vtp};

/// The grain bundle schema version this build writes: 2 adds the modes' material; 3 marks a path
/// mode's precomputed level sets as sampled on the C1 path ([`path_weights`]; before, on the
/// piecewise linear one).
pub const GRAIN_SCHEMA: u64 = 3;

/// The first schema whose path modes' precomputed samples follow [`path_weights`].
const C1_PATH_SCHEMA: u64 = 3;

/// The oldest grain bundle schema this build reads.
pub const GRAIN_SCHEMA_OLDEST: u64 = 1;

/// A rigid transform `x_local = rotation * x_input + translation`, taking input-frame
/// coordinates (the mesh, image or primitive as given) to the grain's local frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigidTransform {
    /// Rotation matrix, row-major (`rotation[r][c]`), proper orthogonal.
    pub rotation: [[f64; 3]; 3],
    /// Translation (length units).
    pub translation: [f64; 3],
}

impl RigidTransform {
    /// The identity transform.
    pub fn identity() -> Self {
        RigidTransform {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            translation: [0.0; 3],
        }
    }
}

/// Mass properties and bookkeeping of a grain, in its local frame (principal axes of inertia,
/// origin at the centre of mass).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrainProperties {
    /// Free-text unit system, e.g. `"mm, N, s, t"`; the pipeline never converts units.
    pub units: String,
    /// From the input frame to the local frame.
    pub input_frame: RigidTransform,
    /// Volume (length^3).
    pub volume: f64,
    /// Density (mass / length^3).
    pub density: f64,
    /// Mass (`density * volume`).
    pub mass: f64,
    /// Principal moments of inertia about the centre of mass (mass x length^2), along local x, y, z.
    pub principal_moments: [f64; 3],
}

/// Modal data of a deformable grain (docs/physics.md sections 1-3, 5).
#[derive(Clone, Debug, PartialEq)]
pub struct Deformation {
    /// `M_eps` (A x A, symmetric), Eq. 8.
    pub modal_mass: Array2<f64>,
    /// `K` (A x A, symmetric), Eq. 4.
    pub modal_stiffness: Array2<f64>,
    /// `C_eps` (A x A, symmetric), modal damping.
    pub modal_damping: Array2<f64>,
    /// The internal-force law.
    pub internal_force: InternalForce,
    /// `(A, k, 3)` mode vectors `Phi_a` at the surface nodes, local frame.
    pub node_modes: Array3<f64>,
    /// `(A, nx, ny, nz, 3)` mode displacement at the grid nodes, extended outside the grain.
    pub grid_modes: Array5<f64>,
    /// For each mode, the level sets precomputed at sampled amplitudes (Eqs. 49-50); may be
    /// empty for a mode that only uses the semi-Lagrangian update. levelset-bake includes
    /// amplitude 0 (the undeformed surface computed like the others), from which a solver
    /// takes the increments of the blend.
    pub precomputed: Vec<Vec<SampledLevelSet>>,
    /// For a one-mode grain, the path its mode follows, if it has one (the mode is then
    /// `node_modes` only for the modal matrices: the displacement at an amplitude is the path's).
    pub path: Option<ModePath>,
    /// The material the modes were made with (the modes bundle's; none in schema 1 bundles):
    /// the grain's elasticity for the contact laws that need it.
    pub material: Option<Material>,
    /// The residual flexibility of the grain's body beyond its modes, if the modes bundle has
    /// one.
    pub flexibility: Option<GrainFlexibility>,
}

/// The residual flexibility of a grain between points of its surface (docs/physics.md section 2),
/// in the grain's frame: `G_ts`, the inward normal displacement at point `t` per unit inward
/// normal force at point `s` (each spread over a patch of radius `patch_radius`) that the modes
/// leave out of the body's static response with inertia relief. Symmetric; length / force.
#[derive(Clone, Debug, PartialEq)]
pub struct GrainFlexibility {
    /// `(S, 3)` the points, local frame.
    pub points: Array2<f64>,
    /// The load patches' radius `rho` (length).
    pub patch_radius: f64,
    /// `(S, S)` `G_ts`.
    pub matrix: Array2<f64>,
}

impl Deformation {
    /// The material and the flexibility, checked (bundle directory `dir`): a material of an
    /// elastic solid; a positive patch radius, finite points and a symmetric matrix.
    fn check_elasticity(&self, dir: &Path) -> Result<()> {
        let manifest = dir.join("grain.json");
        if let Some(m) = &self.material {
            m.check(&manifest, "deformable.material")?;
        }
        if let Some(f) = &self.flexibility {
            check_patch_radius(
                &manifest,
                "deformable.flexibility.patch_radius",
                f.patch_radius,
            )?;
            for (file, values) in [
                ("flexibility_points", &f.points),
                ("flexibility", &f.matrix),
            ] {
                if values.iter().any(|x| !x.is_finite()) {
                    return Err(FormatError::invalid(
                        dir.join(format!("{file}.npy")),
                        file,
                        "a value is not finite",
                    ));
                }
            }
            check_symmetric(&dir.join("flexibility.npy"), "flexibility", &f.matrix)?;
        }
        Ok(())
    }
}

/// A mode that follows its FEM run (docs/physics.md section 1): the displacement at each of the
/// run's amplitudes `eps_p` (increasing, above 0), at the surface nodes and at the grid nodes
/// (extended outside the grain, like `grid_modes`). Between the points, and from `(0, 0)` to the
/// first, the displacement follows [`path_weights`] (C1 in the amplitude, through every point);
/// beyond the last point and below the origin, the path's end tangents.
#[derive(Clone, Debug, PartialEq)]
pub struct ModePath {
    /// The amplitudes `eps_p`, strictly increasing and positive.
    pub amplitudes: Vec<f64>,
    /// `(P, k, 3)` displacement at the surface nodes, local frame.
    pub nodes: Array3<f64>,
    /// `(P, nx, ny, nz, 3)` displacement at the grid nodes, local frame.
    pub grid: Array5<f64>,
}

/// Where amplitude `eps` falls on a path through the origin and points at `amplitudes`
/// (increasing, positive), and the path's form there: the one rule of docs/physics.md section 1
/// that the baker and the solver share. Knots `e_0 = 0 < e_1 < ... < e_P` are the origin and
/// the points, `U_i` the displacement at knot `i` (`U_0 = 0`), `m_i` the path's tangent there
/// ([`knot_tangent`]).
///
/// - One point (a linear mode): `u = (eps / e_1) U_1`.
/// - More: the cubic Hermite interpolant through the knots with tangents `m_i`, C1 in `eps`,
///   through every point, exact for a path quadratic in `eps`; below the origin and beyond the
///   last point the path continues along its end tangent. (A piecewise linear path's tangent
///   jumps at the points: its force on a contact did, and an undamped run's energy converged at
///   first order in the step.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathPiece {
    /// One point: `u = scale U_1`, `du/d eps = U_1 / e_1`.
    Linear {
        /// `eps / e_1`.
        scale: f64,
    },
    /// Below the origin: `u = eps m_0`.
    Below {
        /// The amplitude.
        eps: f64,
    },
    /// Beyond the last point: `u = U_P + excess m_P`.
    Beyond {
        /// `eps - e_P`.
        excess: f64,
    },
    /// On a segment between two knots.
    Inside {
        /// The segment `[e_(s-1), e_s]`.
        s: usize,
        /// `u = a_0 U_(s-1) + a_1 U_s + a_2 m_(s-1) + a_3 m_s`: the Hermite basis at `t = (eps
        /// - e_(s-1)) / Delta`, times `Delta = e_s - e_(s-1)` for the tangents.
        a: [f64; 4],
        /// `du/d eps = b_0 U_(s-1) + ... + b_3 m_s`: its derivative in `eps`.
        b: [f64; 4],
    },
}

/// The piece of a path that serves `eps` ([`PathPiece`]).
pub fn path_piece(amplitudes: &[f64], eps: f64) -> PathPiece {
    let count = amplitudes.len();
    let knot = |i: usize| if i == 0 { 0.0 } else { amplitudes[i - 1] };
    if count == 1 {
        return PathPiece::Linear {
            scale: eps / amplitudes[0],
        };
    }
    if eps <= 0.0 {
        return PathPiece::Below { eps };
    }
    if eps >= knot(count) {
        return PathPiece::Beyond {
            excess: eps - knot(count),
        };
    }
    // The segment `[e_(s-1), e_s]` that holds `eps`.
    let s = (amplitudes.partition_point(|a| *a < eps) + 1).clamp(1, count);
    let h = knot(s) - knot(s - 1);
    let t = (eps - knot(s - 1)) / h;
    let (t2, t3) = (t * t, t * t * t);
    PathPiece::Inside {
        s,
        a: [
            2.0 * t3 - 3.0 * t2 + 1.0,
            -2.0 * t3 + 3.0 * t2,
            h * (t3 - 2.0 * t2 + t),
            h * (t3 - t2),
        ],
        b: [
            (6.0 * t2 - 6.0 * t) / h,
            (-6.0 * t2 + 6.0 * t) / h,
            3.0 * t2 - 4.0 * t + 1.0,
            3.0 * t2 - 2.0 * t,
        ],
    }
}

/// The tangent `m_i` of a path of two points or more at knot `i` ([`PathPiece`]) as weights of
/// the knots' values, `m_i = sum w_j U_j` over three knots `(j, w_j)`: the slope at knot `i` of
/// the parabola through it and its two neighbours (at the ends, through the two nearest),
/// `(Delta_b s_a + Delta_a s_b) / (Delta_a + Delta_b)` inside and `((2 Delta_a + Delta_b) s_a -
/// Delta_a s_b) / (Delta_a + Delta_b)` at an end, `s_a`, `s_b` the chords' slopes of the
/// segments `a` (the nearer one at an end) and `b`, `Delta` their widths.
pub fn knot_tangent(amplitudes: &[f64], i: usize) -> [(usize, f64); 3] {
    let count = amplitudes.len();
    let knot = |i: usize| if i == 0 { 0.0 } else { amplitudes[i - 1] };
    // Segment `j` joins knots `j - 1` and `j`.
    let (a, b) = match i {
        0 => (1, 2),
        i if i == count => (count, count - 1),
        i => (i, i + 1),
    };
    let (da, db) = (knot(a) - knot(a - 1), knot(b) - knot(b - 1));
    let (fa, fb) = if i == 0 || i == count {
        ((2.0 * da + db) / (da + db), -da / (da + db))
    } else {
        (db / (da + db), da / (da + db))
    };
    // `fa s_a + fb s_b` over the knots `lo..lo + 3` the two segments span.
    let lo = a.min(b) - 1;
    let mut w = [(lo, 0.0), (lo + 1, 0.0), (lo + 2, 0.0)];
    for (segment, f, width) in [(a, fa, da), (b, fb, db)] {
        w[segment - lo].1 += f / width;
        w[segment - 1 - lo].1 -= f / width;
    }
    w
}

/// The weights of a path's point values in its displacement and its tangent at amplitude `eps`
/// ([`path_piece`], [`knot_tangent`]): `u(eps) = sum c_p u_p` and `du/d eps = sum d_p u_p`, as
/// `(p, c_p, d_p)` for the points that enter (`p` indexing `amplitudes`; the origin's value is
/// zero).
///
/// Cost: a few dozen flops; no allocation.
pub fn path_weights(amplitudes: &[f64], eps: f64) -> PathWeights {
    let count = amplitudes.len();
    let mut out = PathWeights::default();
    // Weights over the knots (knot `i >= 1` is point `i - 1`), accumulated by knot.
    let mut knots = [(0usize, 0.0, 0.0); 6];
    let mut used = 0;
    let mut add = |i: usize, c: f64, d: f64| match knots[..used].iter_mut().find(|k| k.0 == i) {
        Some(k) => {
            k.1 += c;
            k.2 += d;
        }
        None => {
            knots[used] = (i, c, d);
            used += 1;
        }
    };
    let tangent = |i: usize, c: f64, d: f64, add: &mut dyn FnMut(usize, f64, f64)| {
        for (j, w) in knot_tangent(amplitudes, i) {
            add(j, c * w, d * w);
        }
    };
    match path_piece(amplitudes, eps) {
        PathPiece::Linear { scale } => add(1, scale, 1.0 / amplitudes[0]),
        PathPiece::Below { eps } => tangent(0, eps, 1.0, &mut add),
        PathPiece::Beyond { excess } => {
            add(count, 1.0, 0.0);
            tangent(count, excess, 1.0, &mut add);
        }
        PathPiece::Inside { s, a, b } => {
            add(s - 1, a[0], b[0]);
            add(s, a[1], b[1]);
            tangent(s - 1, a[2], b[2], &mut add);
            tangent(s, a[3], b[3], &mut add);
        }
    }
    // In knot order, the origin (zero) left out.
    knots[..used].sort_by_key(|k| k.0);
    for &(i, c, d) in knots[..used].iter().filter(|k| k.0 > 0) {
        out.push(i - 1, c, d);
    }
    out
}

/// The points of [`path_weights`] with their weights `(p, c_p, d_p)`: at most four.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathWeights {
    entries: [(usize, f64, f64); 4],
    len: usize,
}

impl PathWeights {
    fn push(&mut self, p: usize, c: f64, d: f64) {
        self.entries[self.len] = (p, c, d);
        self.len += 1;
    }

    /// The entries `(p, c_p, d_p)`.
    pub fn iter(&self) -> impl Iterator<Item = &(usize, f64, f64)> {
        self.entries[..self.len].iter()
    }
}

/// The displacement of a path at amplitude `eps`, from the point values `at(p)` (one point's
/// displacement, `p` indexing `amplitudes`): [`path_weights`]'s `sum c_p u_p`.
pub fn path_displacement<T>(amplitudes: &[f64], eps: f64, at: impl Fn(usize) -> T) -> T
where
    T: std::ops::Add<Output = T> + std::ops::Mul<f64, Output = T>,
{
    let weights = path_weights(amplitudes, eps);
    let mut entries = weights.iter();
    let &(p, c, _) = entries.next().expect("a path has a point");
    entries.fold(at(p) * c, |sum, &(p, c, _)| sum + at(p) * c)
}

/// Checks a path of a bundle with `modes` modes: one mode only, and amplitudes that are at
/// least one, finite, positive, strictly increasing. `field` names the manifest's field.
pub(crate) fn check_path(path: &Path, field: &str, modes: usize, amplitudes: &[f64]) -> Result<()> {
    if modes != 1 {
        return Err(FormatError::invalid(
            path,
            field,
            format!("a path mode needs a one-mode bundle, this one has {modes} modes"),
        ));
    }
    if amplitudes.is_empty()
        || amplitudes.iter().any(|x| !x.is_finite())
        || amplitudes[0] <= 0.0
        || amplitudes.windows(2).any(|w| w[1] <= w[0])
    {
        return Err(FormatError::invalid(
            path,
            field,
            format!(
                "a path's amplitudes must be finite, positive and strictly increasing, got {amplitudes:?}"
            ),
        ));
    }
    Ok(())
}

/// A level set precomputed at one amplitude of one mode.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledLevelSet {
    /// The amplitude `eps_a,p`; a mode's samples are strictly increasing.
    pub amplitude: f64,
    /// `(nx, ny, nz)` signed distance of the grain deformed by that amplitude alone.
    pub values: Array3<f64>,
}

/// A grain bundle in memory. See the [module docs](self) for the files.
#[derive(Clone, Debug, PartialEq)]
pub struct GrainBundle {
    /// Mass properties and frames.
    pub properties: GrainProperties,
    /// The reference signed distance grid.
    pub levelset: LevelSetGrid,
    /// `(k, 3)` reference surface node positions.
    pub nodes: Array2<f64>,
    /// `(k)` node areas (they sum to the surface area).
    pub node_areas: Array1<f64>,
    /// Modal data; `None` for a rigid grain.
    pub deformation: Option<Deformation>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    schema: u64,
    properties: GrainProperties,
    grid: GridSpec,
    node_count: usize,
    deformable: Option<DeformableManifest>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeformableManifest {
    mode_count: usize,
    modal_mass: Vec<Vec<f64>>,
    modal_stiffness: Vec<Vec<f64>>,
    modal_damping: Vec<Vec<f64>>,
    internal_force: InternalForceEntry,
    /// Per mode, the amplitudes of the precomputed level sets.
    precomputed_amplitudes: Vec<Vec<f64>>,
    /// The amplitudes of a path mode's points (one mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_amplitudes: Option<Vec<f64>>,
    /// The modes' material (schema 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    material: Option<Material>,
    /// The residual flexibility's point count and patch radius (schema 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flexibility: Option<FlexibilityEntry>,
}

fn sample_file(mode: usize, sample: usize) -> String {
    format!("precomputed/mode{mode}_sample{sample}.npy")
}

fn check_amplitudes(path: &Path, amplitudes: &[Vec<f64>], modes: usize) -> Result<()> {
    let field = "precomputed_amplitudes";
    if amplitudes.len() != modes {
        return Err(FormatError::invalid(
            path,
            field,
            format!(
                "expected one list per mode ({modes}), got {}",
                amplitudes.len()
            ),
        ));
    }
    for (a, list) in amplitudes.iter().enumerate() {
        if list.iter().any(|x| !x.is_finite()) || list.windows(2).any(|w| w[1] <= w[0]) {
            return Err(FormatError::invalid(
                path,
                field,
                format!("mode {a}: amplitudes must be finite and strictly increasing"),
            ));
        }
    }
    Ok(())
}

/// A grain bundle's digest, in hex: SHA-256 over `grain.json` and every `.npy` array below the
/// bundle directory `dir` (each file's path relative to `dir`, then its length and bytes, the
/// files in path order). Bundles with the same digest describe the same grain; the VTK views
/// (`grain.vti`, `nodes.vtp`) only show the arrays and are left out, as is any other file (a
/// user's notes in the bundle do not change the grain). Checkpoints carry it to tell whether a
/// restart's scene has the grains of the run it continues. Cost: one read of the bundle.
pub fn bundle_digest(dir: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    fn arrays(root: &Path, dir: &Path, found: &mut Vec<std::path::PathBuf>) -> Result<()> {
        for entry in std::fs::read_dir(dir).map_err(|e| FormatError::io(dir, e))? {
            let path = entry.map_err(|e| FormatError::io(dir, e))?.path();
            if path.is_dir() {
                arrays(root, &path, found)?;
            } else if path.extension().is_some_and(|x| x == "npy") {
                found.push(
                    path.strip_prefix(root)
                        .expect("below the root")
                        .to_path_buf(),
                );
            }
        }
        Ok(())
    }
    let mut files = vec![std::path::PathBuf::from("grain.json")];
    arrays(dir, dir, &mut files)?;
    files[1..].sort();
    let mut hash = Sha256::new();
    for file in &files {
        let path = dir.join(file);
        let bytes = std::fs::read(&path).map_err(|e| FormatError::io(&path, e))?;
        hash.update(file.to_string_lossy().as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

impl GrainBundle {
    /// Number of surface nodes `k`.
    pub fn node_count(&self) -> usize {
        self.nodes.nrows()
    }

    /// Number of modes `A` (0 for a rigid grain).
    pub fn mode_count(&self) -> usize {
        self.deformation
            .as_ref()
            .map_or(0, |d| d.modal_mass.nrows())
    }

    /// Checks every array against the others (node count, mode count, grid dims) and the values'
    /// ranges; `path` is used in messages.
    fn check(&self, path: &Path) -> Result<()> {
        let k = self.node_count();
        let [nx, ny, nz] = self.levelset.spec().dims;
        let shape = |array: &str, expected: Vec<usize>, found: &[usize]| {
            if expected == found {
                Ok(())
            } else {
                Err(FormatError::Shape {
                    path: path.to_path_buf(),
                    array: array.into(),
                    expected,
                    found: found.to_vec(),
                })
            }
        };
        shape("nodes", vec![k, 3], self.nodes.shape())?;
        shape("node_areas", vec![k], self.node_areas.shape())?;
        self.check_body(&path.join("grain.json"))?;
        let Some(d) = &self.deformation else {
            return Ok(());
        };
        let a = self.mode_count();
        for (field, m) in [
            ("modal_mass", &d.modal_mass),
            ("modal_stiffness", &d.modal_stiffness),
            ("modal_damping", &d.modal_damping),
        ] {
            square_matrix(path, field, &nested_rows(m), a)?;
        }
        d.check_elasticity(path)?;
        if let Some(f) = &d.flexibility {
            let s = f.points.nrows();
            shape("flexibility_points", vec![s, 3], f.points.shape())?;
            shape("flexibility", vec![s, s], f.matrix.shape())?;
        }
        shape("node_modes", vec![a, k, 3], d.node_modes.shape())?;
        shape("grid_modes", vec![a, nx, ny, nz, 3], d.grid_modes.shape())?;
        let amplitudes = self.amplitudes();
        check_amplitudes(path, &amplitudes, a)?;
        for (m, samples) in d.precomputed.iter().enumerate() {
            for (p, s) in samples.iter().enumerate() {
                shape(&sample_file(m, p), vec![nx, ny, nz], s.values.shape())?;
            }
        }
        if let Some(p) = &d.path {
            check_path(path, "path_amplitudes", a, &p.amplitudes)?;
            let n = p.amplitudes.len();
            shape("path_nodes", vec![n, k, 3], p.nodes.shape())?;
            shape("path_grid", vec![n, nx, ny, nz, 3], p.grid.shape())?;
        }
        Ok(())
    }

    /// Checks that the manifest's body is one the arrays can describe (issue #23: an edited
    /// manifest was run as written): volume, density and mass positive with `m = rho V`;
    /// principal moments positive, each at most the sum of the other two (`I_c <= I_a + I_b`
    /// holds for every body: `I_a + I_b - I_c = 2 int z_c^2 dm`), and their sum `2 int r^2 dm`
    /// at most `2 m r_max^2` for the farthest grid corner `r_max` (the body lies in its grid);
    /// the surface nodes inside the grid and on its zero level set (`|phi| <= h`: a grid interpolates a
    /// distance to O(h^2 / R) on smooth parts, and to a fraction of `h` at a sharp edge), with areas
    /// `>= 0`; the level set negative somewhere and a distance (the median of
    /// `|grad phi|` at the nodes within [2/3, 3/2]: a spacing edited by a factor 3/2 or more
    /// breaks it). `manifest` names the file in messages.
    fn check_body(&self, manifest: &Path) -> Result<()> {
        let invalid = |field: &str, message: String| {
            Err(FormatError::invalid(
                manifest,
                format!("properties.{field}"),
                message,
            ))
        };
        let p = &self.properties;
        for (field, v) in [
            ("volume", p.volume),
            ("density", p.density),
            ("mass", p.mass),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return invalid(field, format!("expected a positive number, got {v}"));
            }
        }
        if (p.mass / (p.density * p.volume) - 1.0).abs() > 1e-9 {
            return invalid(
                "mass",
                format!(
                    "{:e} is not density x volume = {:e} x {:e} = {:e}",
                    p.mass,
                    p.density,
                    p.volume,
                    p.density * p.volume
                ),
            );
        }
        let i = p.principal_moments;
        if !i.iter().all(|m| m.is_finite() && *m > 0.0) {
            return invalid(
                "principal_moments",
                format!("expected three positive numbers, got {i:?}"),
            );
        }
        for c in 0..3 {
            let (a, b) = (i[(c + 1) % 3], i[(c + 2) % 3]);
            if i[c] > (a + b) * (1.0 + 1e-9) {
                return invalid(
                    "principal_moments",
                    format!(
                        "{:e} exceeds the sum of the other two, {a:e} + {b:e}: no body has these moments",
                        i[c]
                    ),
                );
            }
        }
        let spec = self.levelset.spec();
        let (lo, hi): ([f64; 3], [f64; 3]) = (spec.origin, spec.upper().coords.into());
        let r_max2: f64 = (0..3).map(|d| lo[d].abs().max(hi[d].abs()).powi(2)).sum();
        if i.iter().sum::<f64>() > 2.0 * p.mass * r_max2 * (1.0 + 1e-9) {
            return invalid(
                "principal_moments",
                format!(
                    "their sum {:e} exceeds 2 m r^2 = {:e} for the grid's farthest corner (r = {:e}): the body would reach beyond its grid",
                    i.iter().sum::<f64>(),
                    2.0 * p.mass * r_max2,
                    r_max2.sqrt()
                ),
            );
        }
        let values = self.levelset.values();
        if !values.iter().any(|v| *v < 0.0) {
            return Err(FormatError::invalid(
                manifest,
                "levelset.npy",
                "no value is negative: the level set has no inside",
            ));
        }
        let h = spec.spacing;
        // Each finite node's position, level-set value and slope.
        let mut at_nodes = Vec::with_capacity(self.node_count());
        for (n, (x, a)) in self
            .nodes
            .rows()
            .into_iter()
            .zip(&self.node_areas)
            .enumerate()
        {
            let x = nalgebra::Point3::new(x[0], x[1], x[2]);
            // Non-finite values are the arrays' own check (by flat index, on read and write).
            if !(x.iter().all(|c| c.is_finite()) && a.is_finite()) {
                continue;
            }
            if *a < 0.0 {
                return Err(FormatError::invalid(
                    manifest,
                    format!("node_areas.npy[{n}]"),
                    format!("expected an area >= 0, got {a}"),
                ));
            }
            if !self.levelset.contains(&x) {
                return Err(FormatError::invalid(
                    manifest,
                    format!("nodes.npy[{n}]"),
                    format!("{x} is not inside the grid {lo:?} .. {hi:?}"),
                ));
            }
            let (phi, gradient) = self.levelset.value_and_gradient(&x);
            at_nodes.push((n, x, phi, gradient.norm()));
        }
        // The median slope: 1 for a distance sampled at its spacing.
        let mut slopes: Vec<f64> = at_nodes.iter().map(|n| n.3).collect();
        let median = (!slopes.is_empty()).then(|| {
            let mid = slopes.len() / 2;
            *slopes.select_nth_unstable_by(mid, f64::total_cmp).1
        });
        let slope = median.filter(|m| !(2.0 / 3.0..=1.5).contains(m)).map(|m| {
            format!(
                "the level set's slope |grad phi| at the nodes is {m:.3} (median), a signed distance's is 1: `grid.spacing` {h:e} does not match levelset.npy"
            )
        });
        // A wrong spacing also moves the nodes off the surface: both are said.
        if let Some((n, x, phi, _)) = at_nodes.iter().find(|n| n.2.abs() > h) {
            return Err(FormatError::invalid(
                manifest,
                format!("nodes.npy[{n}]"),
                format!(
                    "{x} is {phi:e} from the level set's surface, more than the spacing {h:e}: the nodes do not lie on this grain's surface{}",
                    slope.map_or(String::new(), |s| format!(", or {s}"))
                ),
            ));
        }
        match slope {
            Some(s) => Err(FormatError::invalid(manifest, "grid.spacing", s)),
            None => Ok(()),
        }
    }

    fn amplitudes(&self) -> Vec<Vec<f64>> {
        self.deformation.as_ref().map_or(vec![], |d| {
            d.precomputed
                .iter()
                .map(|s| s.iter().map(|x| x.amplitude).collect())
                .collect()
        })
    }

    /// Writes the bundle directory atomically (replacing an existing bundle whole).
    pub fn write(&self, dir: &Path) -> Result<()> {
        self.check(dir)?;
        write_dir_atomically(dir, |tmp| self.write_files(tmp))
    }

    fn write_files(&self, dir: &Path) -> Result<()> {
        let spec = self.levelset.spec();
        let levelset = Array3::from_shape_vec(spec.dims, self.levelset.values().to_vec())
            .expect("a LevelSetGrid has nx*ny*nz values");
        write_array(dir, "levelset.npy", &levelset)?;
        write_array(dir, "nodes.npy", &self.nodes)?;
        write_array(dir, "node_areas.npy", &self.node_areas)?;

        let mut grid_vectors = Vec::new();
        let mut node_vectors = Vec::new();
        let deformable = match &self.deformation {
            None => None,
            Some(d) => {
                write_array(dir, "node_modes.npy", &d.node_modes)?;
                write_array(dir, "grid_modes.npy", &d.grid_modes)?;
                if d.precomputed.iter().any(|s| !s.is_empty()) {
                    let sub = dir.join("precomputed");
                    std::fs::create_dir(&sub).map_err(|e| FormatError::io(&sub, e))?;
                }
                for (m, samples) in d.precomputed.iter().enumerate() {
                    for (p, s) in samples.iter().enumerate() {
                        write_array(dir, &sample_file(m, p), &s.values)?;
                    }
                }
                if let Some(p) = &d.path {
                    write_array(dir, "path_nodes.npy", &p.nodes)?;
                    write_array(dir, "path_grid.npy", &p.grid)?;
                }
                if let Some(f) = &d.flexibility {
                    write_array(dir, "flexibility.npy", &f.matrix)?;
                    write_array(dir, "flexibility_points.npy", &f.points)?;
                }
                for a in 0..self.mode_count() {
                    let standard = |x: ndarray::ArrayViewD<f64>| {
                        x.as_standard_layout().iter().copied().collect::<Vec<f64>>()
                    };
                    grid_vectors.push((
                        format!("mode{a}"),
                        standard(d.grid_modes.index_axis(ndarray::Axis(0), a).into_dyn()),
                    ));
                    node_vectors.push((
                        format!("mode{a}"),
                        standard(d.node_modes.index_axis(ndarray::Axis(0), a).into_dyn()),
                    ));
                }
                Some(DeformableManifest {
                    mode_count: self.mode_count(),
                    modal_mass: nested_rows(&d.modal_mass),
                    modal_stiffness: nested_rows(&d.modal_stiffness),
                    modal_damping: nested_rows(&d.modal_damping),
                    internal_force: write_internal_force(
                        dir,
                        &d.internal_force,
                        self.mode_count(),
                    )?,
                    precomputed_amplitudes: self.amplitudes(),
                    path_amplitudes: d.path.as_ref().map(|p| p.amplitudes.clone()),
                    material: d.material.clone(),
                    flexibility: d.flexibility.as_ref().map(|f| FlexibilityEntry {
                        surface_nodes: f.points.nrows(),
                        patch_radius: f.patch_radius,
                    }),
                })
            }
        };

        let mut grid_data = vec![PointData::Scalars("phi", self.levelset.values())];
        grid_data.extend(grid_vectors.iter().map(|(n, v)| PointData::Vectors(n, v)));
        write_vti(&dir.join("grain.vti"), spec, &grid_data)?;
        let points: Vec<f64> = self.nodes.as_standard_layout().iter().copied().collect();
        let areas = self.node_areas.to_vec();
        let mut node_data = vec![PointData::Scalars("area", &areas)];
        node_data.extend(node_vectors.iter().map(|(n, v)| PointData::Vectors(n, v)));
        write_vtp(&dir.join("nodes.vtp"), &points, &node_data)?;

        let manifest = Manifest {
            schema: GRAIN_SCHEMA,
            properties: self.properties.clone(),
            grid: spec.clone(),
            node_count: self.node_count(),
            deformable,
        };
        write_manifest(&dir.join("grain.json"), &manifest)
    }

    /// Reads a bundle directory, checking the schema version and every array's shape against
    /// `grain.json`.
    pub fn read(dir: &Path) -> Result<GrainBundle> {
        let manifest_path = dir.join("grain.json");
        let m: Manifest = read_manifest(&manifest_path, GRAIN_SCHEMA_OLDEST, GRAIN_SCHEMA)?;
        m.grid.validate().map_err(|e| match e {
            crate::GridError::Spec { field, message } => {
                FormatError::invalid(&manifest_path, format!("grid.{field}"), message)
            }
            other => FormatError::invalid(&manifest_path, "grid", other.to_string()),
        })?;
        let [nx, ny, nz] = m.grid.dims;
        let k = m.node_count;
        let levelset: Array3<f64> = read_array(dir, "levelset.npy", &[nx, ny, nz])?;
        let levelset = LevelSetGrid::new(m.grid.clone(), levelset.into_raw_vec_and_offset().0)
            .expect("shape and values checked");
        let nodes = read_array(dir, "nodes.npy", &[k, 3])?;
        let node_areas = read_array(dir, "node_areas.npy", &[k])?;
        let deformation = match m.deformable {
            None => None,
            Some(d) => {
                let a = d.mode_count;
                check_amplitudes(&manifest_path, &d.precomputed_amplitudes, a)?;
                let mut precomputed = Vec::with_capacity(a);
                for (mode, amplitudes) in d.precomputed_amplitudes.iter().enumerate() {
                    let mut samples = Vec::with_capacity(amplitudes.len());
                    for (p, &amplitude) in amplitudes.iter().enumerate() {
                        samples.push(SampledLevelSet {
                            amplitude,
                            values: read_array(dir, &sample_file(mode, p), &[nx, ny, nz])?,
                        });
                    }
                    precomputed.push(samples);
                }
                Some(Deformation {
                    modal_mass: square_matrix(&manifest_path, "modal_mass", &d.modal_mass, a)?,
                    modal_stiffness: square_matrix(
                        &manifest_path,
                        "modal_stiffness",
                        &d.modal_stiffness,
                        a,
                    )?,
                    modal_damping: square_matrix(
                        &manifest_path,
                        "modal_damping",
                        &d.modal_damping,
                        a,
                    )?,
                    internal_force: read_internal_force(dir, d.internal_force, a)?,
                    node_modes: read_array(dir, "node_modes.npy", &[a, k, 3])?,
                    grid_modes: read_array(dir, "grid_modes.npy", &[a, nx, ny, nz, 3])?,
                    precomputed,
                    path: match d.path_amplitudes {
                        None => None,
                        Some(amplitudes) => {
                            check_path(
                                &manifest_path,
                                "deformable.path_amplitudes",
                                a,
                                &amplitudes,
                            )?;
                            // Samples off the path's points, baked on the piecewise linear
                            // path, are not the C1 path's surfaces.
                            let off_points = (d.precomputed_amplitudes.iter().flatten())
                                .find(|e| **e != 0.0 && !amplitudes.contains(e));
                            if let (true, Some(e)) = (m.schema < C1_PATH_SCHEMA, off_points) {
                                return Err(FormatError::invalid(
                                    &manifest_path,
                                    "deformable.precomputed_amplitudes",
                                    format!(
                                        "a level set precomputed at amplitude {e}, between the path's points, by a levelset-bake of schema {} (the path then linear between its points, now C1 through them, docs/physics.md section 1): bake the bundle again",
                                        m.schema
                                    ),
                                ));
                            }
                            let n = amplitudes.len();
                            Some(ModePath {
                                nodes: read_array(dir, "path_nodes.npy", &[n, k, 3])?,
                                grid: read_array(dir, "path_grid.npy", &[n, nx, ny, nz, 3])?,
                                amplitudes,
                            })
                        }
                    },
                    material: d.material,
                    flexibility: match d.flexibility {
                        None => None,
                        Some(f) => {
                            let s = f.surface_nodes;
                            Some(GrainFlexibility {
                                points: read_array(dir, "flexibility_points.npy", &[s, 3])?,
                                patch_radius: f.patch_radius,
                                matrix: read_array(dir, "flexibility.npy", &[s, s])?,
                            })
                        }
                    },
                })
            }
        };
        let bundle = GrainBundle {
            properties: m.properties,
            levelset,
            nodes,
            node_areas,
            deformation,
        };
        bundle.check_body(&manifest_path)?;
        if let Some(d) = &bundle.deformation {
            d.check_elasticity(dir)?;
        }
        Ok(bundle)
    }
}
