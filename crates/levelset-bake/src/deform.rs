//! Deformable grains: the mode fields on the surface nodes and on the grid, and level sets
//! precomputed at sampled amplitudes (docs/physics.md sections 1 and 5).
//!
//! A mode is a displacement field `Phi_a(x)` on the grain's reference configuration, here always
//! evaluated in the grain's local frame. Two sources:
//! - [`FemModes`]: the modes of a modes bundle, interpolated with the element shape functions
//!   after locating the point in its element; outside the FEM mesh, the value at the closest
//!   point of the mesh's boundary (docs/physics.md section 5: the grid field is extended outside);
//! - [`BendingMode`]: the analytic bending mode of docs/physics.md section 2 (paper Eq. 51), defined
//!   everywhere by its formula.

use grain::derived::Derived;
use grain::{
    Deformation, ForceTable, GrainFlexibility, InternalForce, LevelSetGrid, Material, ModePath,
    ModesBundle, RigidTransform, SampledLevelSet, TableInterpolation, TableLaw,
};
use nalgebra::{Matrix3, Point3, Vector3};
use ndarray::{Array2, Array3, Array5};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::bake::{Baked, in_range, require, resolution};
use crate::error::BakeError;
use crate::mass::MassProperties;
use crate::sdf::{DistanceField, Signing};
use crate::shell::NormalShell;
use crate::surface::TriangleMesh;

/// Mode fields evaluated in the grain's local frame.
pub trait ModeField: Sync {
    /// Number of modes `A`.
    fn count(&self) -> usize;
    /// The `A` mode vectors at a local point.
    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>>;
    /// For one mode that follows a path ([`grain::ModePath`]), the amplitudes of its points
    /// (empty: the mode is linear).
    fn path_amplitudes(&self) -> &[f64] {
        &[]
    }
    /// The path's displacement at each of its points, at a local point.
    fn path_values(&self, _x: &Point3<f64>) -> Vec<Vector3<f64>> {
        Vec::new()
    }
}

/// The bending mode of a beam (docs/physics.md section 2, paper Eq. 51): with `s` the coordinate
/// along the beam axis measured from one support (`s` in `[0, L]` over the span `L` between the
/// supports; a beam may overhang them) and `z` the coordinate along the deflection direction
/// measured from the mid-plane,
/// `u_axis = z (pi / L) cos(pi s / L)`, `u_direction = -sin(pi s / L)`, other component 0.
/// Unit amplitude deflects the middle of the beam by -1 along the direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BendingMode {
    /// The span `L` between the supports (the beam's length when it rests on its ends).
    pub length: f64,
    /// Local axis along the beam (0, 1, 2 for x, y, z).
    pub axis: usize,
    /// Local axis of the deflection.
    pub direction: usize,
    /// Local coordinate of the support where `s = 0` (`-L/2` for a centred span).
    pub start: f64,
}

impl ModeField for BendingMode {
    fn count(&self) -> usize {
        1
    }

    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        let k = std::f64::consts::PI / self.length;
        let s = x[self.axis] - self.start;
        let mut u = Vector3::zeros();
        u[self.axis] = x[self.direction] * k * (k * s).cos();
        u[self.direction] = -(k * s).sin();
        vec![u]
    }
}

impl BendingMode {
    /// Modal mass and stiffness of the mode on a cuboid beam of cross-section `b x h` (`h` along
    /// the deflection direction), docs/physics.md section 2:
    /// `K = (lambda + 2 mu) (pi/L)^4 (L/2) (b h^3 / 12)`,
    /// `M = rho [(pi/L)^2 (L/2) (b h^3 / 12) + (L/2) b h]`.
    pub fn cuboid_mass_stiffness(
        &self,
        b: f64,
        h: f64,
        density: f64,
        youngs: f64,
        poisson: f64,
    ) -> (f64, f64) {
        let (l, k) = (self.length, std::f64::consts::PI / self.length);
        let second_moment = b * h.powi(3) / 12.0;
        // lambda + 2 mu = E (1 - nu) / ((1 + nu)(1 - 2 nu)): uniaxial strain modulus.
        let p_modulus = youngs * (1.0 - poisson) / ((1.0 + poisson) * (1.0 - 2.0 * poisson));
        let stiffness = p_modulus * k.powi(4) * 0.5 * l * second_moment;
        let mass = density * (k * k * 0.5 * l * second_moment + 0.5 * l * b * h);
        (mass, stiffness)
    }
}

/// How far outside the FEM mesh [`FemModes`]' continuation is linear, in grid spacings: one
/// (farther, its own growth, the distance times the field's mixed derivative at the surface,
/// folded it before the body at a cell's diagonal, `sqrt(3)`; docs/physics.md section 5).
pub const CONTINUATION_REACH: f64 = 1.0;

/// The modes of a modes bundle on a grain baked from the same FEM mesh: inside the mesh, the
/// element interpolation; outside it (the grid nodes around the grain, which the semi-Lagrangian
/// level set and the material points interpolate between), the first-order continuation from the
/// foot `c` of the node on the mesh's boundary along its normal shell ([`NormalShell`]: the vertex
/// normals interpolated over each facet), `u(x) = u(c) + grad u(c) (x - c)`, out to the distance
/// `reach` from the boundary; beyond it the offset `x - c` is scaled by `reach` over the distance
/// (about constant along the shell's ray). A constant continuation (`u(c)`) is first-order wrong
/// across the surface: in the cells the surface cuts, the trilinear field then misses the FEM's by
/// about `h |du/dn| / 2`, which moved a flattened contact patch by micrometres against a penalty
/// overclosure of 0.07 um (docs/physics.md section 5). A foot taken as the closest point of the
/// facets instead stretched the continuation in stripes (faces swept at the point's rate, edges'
/// wedges held still), and it folded at amplitudes further below the body's own fold than the
/// shell's does (the same section).
pub struct FemModes<'a> {
    bundle: &'a ModesBundle,
    /// How far outside the mesh the continuation is linear.
    reach: f64,
    locator: fem::Locator<'a>,
    /// Input-frame rotation and translation of the grain (`x_local = R x + t`).
    rotation: Matrix3<f64>,
    translation: Vector3<f64>,
    /// The FEM mesh's boundary in the local frame, for the extension outside.
    boundary: NormalShell,
    /// How many queries outside the mesh no prism of the shell held (each continued from the
    /// closest point instead).
    closest_feet: AtomicUsize,
    /// Mode vectors per node: `phi[a][n]`.
    phi: Vec<Vec<[f64; 3]>>,
    /// The path's displacements per node: `path[p][n]` (empty without a path).
    path: Vec<Vec<[f64; 3]>>,
}

impl<'a> FemModes<'a> {
    /// Prepares the interpolation. `frame` is the grain's recorded input frame; `reach` how far
    /// outside the mesh the continuation is linear (the bake takes [`CONTINUATION_REACH`] grid
    /// spacings).
    pub fn new(bundle: &'a ModesBundle, frame: &RigidTransform, reach: f64) -> Self {
        let rotation = Matrix3::from_fn(|i, j| frame.rotation[i][j]);
        let translation = Vector3::from(frame.translation);
        let b = fem::boundary(&bundle.mesh);
        let mut local = TriangleMesh {
            vertices: (0..bundle.mesh.nodes.nrows())
                .map(|n| fem::node(&bundle.mesh, n))
                .collect(),
            triangles: b.triangles,
        };
        local.transform(&rotation, &translation);
        let per_node = |a: &ndarray::Array3<f64>, i: usize| -> Vec<[f64; 3]> {
            (0..bundle.mesh.nodes.nrows())
                .map(|n| [0, 1, 2].map(|d| a[[i, n, d]]))
                .collect()
        };
        let phi = (0..bundle.mode_count())
            .map(|a| per_node(&bundle.phi, a))
            .collect();
        let path = bundle.path.as_ref().map_or(Vec::new(), |p| {
            (0..p.amplitudes.len())
                .map(|i| per_node(&p.displacement, i))
                .collect()
        });
        FemModes {
            bundle,
            reach,
            locator: fem::Locator::new(&bundle.mesh),
            rotation,
            translation,
            boundary: NormalShell::new(&local),
            closest_feet: AtomicUsize::new(0),
            phi,
            path,
        }
    }

    /// The fields `fields` (per node) interpolated at a local point: with the element shape
    /// functions in the FEM mesh, outside it continued from its foot on the boundary along the
    /// normal shell (the type's docs).
    fn interpolate(&self, x: &Point3<f64>, fields: &[Vec<[f64; 3]>]) -> Vec<Vector3<f64>> {
        let to_input = |p: &Point3<f64>| {
            Point3::from(self.rotation.transpose() * (p.coords - self.translation))
        };
        if let Some(at) = self.locator.locate(&to_input(x), 1e-9)
            && at.outside <= 1e-9
        {
            return fields
                .iter()
                .map(|field| self.rotation * self.locator.interpolate(&at, field))
                .collect();
        }
        let foot = self.boundary.foot(x);
        if foot.closest {
            self.closest_feet.fetch_add(1, Ordering::Relaxed);
        }
        let at = self
            .locator
            .locate(&to_input(&foot.point), 1e-6)
            .expect("a boundary point lies in an element");
        // The offset from the foot, in the input frame, linear while the point is within `reach`
        // of the boundary and cut in proportion beyond.
        let offset = x - foot.point;
        let step = self.rotation.transpose()
            * if foot.distance > self.reach {
                offset * (self.reach / foot.distance)
            } else {
                offset
            };
        fields
            .iter()
            .map(|field| {
                let (u, gradient) = self.locator.interpolate_with_gradient(&at, field);
                self.rotation * (u + gradient * step)
            })
            .collect()
    }
}

impl ModeField for FemModes<'_> {
    fn count(&self) -> usize {
        self.bundle.mode_count()
    }

    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        self.interpolate(x, &self.phi)
    }

    fn path_amplitudes(&self) -> &[f64] {
        self.bundle.path.as_ref().map_or(&[], |p| &p.amplitudes)
    }

    fn path_values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        self.interpolate(x, &self.path)
    }
}

/// The modal masses of a modes bundle's grain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModalMass {
    /// The bundle's own.
    Bundle,
    /// One mode only: this modal mass instead of the bundle's (mass scaling, as the paper's
    /// Table 2 does; `--modal-mass`).
    Given(f64),
    /// Any number of modes: every modal mass times this factor (selective mass scaling for
    /// quasi-static loading: the modes' frequencies divided by its square root, their static
    /// response, `K` and the residual flexibility, unchanged; `--modal-mass-scale`).
    Scaled(f64),
}

/// Modal matrices and law of a deformable grain.
#[derive(Debug, Clone, PartialEq)]
pub struct Modal {
    /// `M_eps` (A x A).
    pub mass: Array2<f64>,
    /// `K` (A x A).
    pub stiffness: Array2<f64>,
    /// `C_eps` (A x A).
    pub damping: Array2<f64>,
    /// `F_int`.
    pub internal_force: InternalForce,
    /// The material the modes were made with, if known.
    pub material: Option<Material>,
    /// The residual flexibility beyond the modes, in the grain's frame, if the modes bundle has
    /// one.
    pub flexibility: Option<GrainFlexibility>,
}

/// Makes a baked grain deformable: mode vectors at its nodes and grid nodes, and for every mode
/// the level sets of the surface deformed by each amplitude in `samples` alone (exact signed
/// distance of the deformed surface on the same grid, same extent). `samples` must increase
/// strictly; empty means no precomputed level sets. When there are samples, amplitude 0 is
/// added if missing: the undeformed surface's distance by the same computation, so that a
/// solver blending the samples takes increments `phi(eps) - phi(0)` free of the difference
/// between the reference level set (exact, for a primitive) and the facetted samples.
pub fn attach_modes(
    baked: &mut Baked,
    field: &dyn ModeField,
    modal: Modal,
    samples: &[f64],
) -> Result<(), BakeError> {
    let a = field.count();
    if samples.iter().any(|s| !s.is_finite()) || samples.windows(2).any(|w| w[1] <= w[0]) {
        return Err(BakeError::parameter(
            "--samples",
            "amplitudes must be finite and strictly increasing",
        ));
    }
    let mut samples = samples.to_vec();
    if !samples.is_empty() && !samples.contains(&0.0) {
        samples.push(0.0);
        samples.sort_by(f64::total_cmp);
    }
    let g = &baked.bundle;
    let spec = g.levelset.spec().clone();
    let [nx, ny, nz] = spec.dims;
    // The mode fields on the grid (built per node, then as one array: 2 x 24 bytes per mode and
    // node, and a list per node), the path's the same, and the precomputed level sets: refused
    // before they are allocated when they cannot fit.
    let path_points = field.path_amplitudes().len();
    let per_node = 48 * (a + path_points) + 2 * 40 + 8 * a * samples.len();
    let needed = spec.len().saturating_mul(per_node);
    let available = grain::memory::available();
    if needed > available {
        return Err(BakeError::parameter(
            "--modes",
            format!(
                "{a} modes ({path_points} path points, {} samples) on a grid of {} nodes need about {:.1} GB, more than the {:.1} GB available to this process: use a larger --spacing or fewer samples",
                samples.len(),
                spec.len(),
                needed as f64 / 1e9,
                available as f64 / 1e9
            ),
        ));
    }
    let nodes: Vec<Point3<f64>> = g
        .nodes
        .rows()
        .into_iter()
        .map(|r| Point3::new(r[0], r[1], r[2]))
        .collect();
    let at_nodes: Vec<Vec<Vector3<f64>>> = nodes.par_iter().map(|p| field.values(p)).collect();
    let at_grid: Vec<Vec<Vector3<f64>>> = (0..spec.len())
        .into_par_iter()
        .map(|n| field.values(&spec.node(n / (ny * nz), (n / nz) % ny, n % nz)))
        .collect();
    let node_modes = Array3::from_shape_fn((a, nodes.len(), 3), |(m, k, d)| at_nodes[k][m][d]);
    let grid_modes = Array5::from_shape_fn((a, nx, ny, nz, 3), |(m, i, j, k, d)| {
        at_grid[spec.index(i, j, k)][m][d]
    });
    // A path: its displacements at the nodes and on the grid, like the modes.
    let amplitudes = field.path_amplitudes();
    let path = (!amplitudes.is_empty()).then(|| {
        let p = amplitudes.len();
        let at_nodes: Vec<Vec<Vector3<f64>>> =
            nodes.par_iter().map(|x| field.path_values(x)).collect();
        let at_grid: Vec<Vec<Vector3<f64>>> = (0..spec.len())
            .into_par_iter()
            .map(|n| field.path_values(&spec.node(n / (ny * nz), (n / nz) % ny, n % nz)))
            .collect();
        ModePath {
            amplitudes: amplitudes.to_vec(),
            nodes: Array3::from_shape_fn((p, nodes.len(), 3), |(i, k, d)| at_nodes[k][i][d]),
            grid: Array5::from_shape_fn((p, nx, ny, nz, 3), |(q, i, j, k, d)| {
                at_grid[spec.index(i, j, k)][q][d]
            }),
        }
    });

    // Precomputed level sets: deform the surface by one mode at one amplitude (along its path,
    // for a path mode).
    let surface = &baked.surface;
    let at_vertices: Vec<Vec<Vector3<f64>>> = surface
        .vertices
        .par_iter()
        .map(|p| field.values(p))
        .collect();
    let path_at_vertices: Vec<Vec<Vector3<f64>>> = match &path {
        Some(_) => surface
            .vertices
            .par_iter()
            .map(|p| field.path_values(p))
            .collect(),
        None => Vec::new(),
    };
    let displacement = |m: usize, v: usize, amplitude: f64| match &path {
        Some(p) => grain::path_displacement(&p.amplitudes, amplitude, |i| path_at_vertices[v][i]),
        None => at_vertices[v][m] * amplitude,
    };
    let mut precomputed = Vec::with_capacity(a);
    for m in 0..a {
        let mut levels = Vec::with_capacity(samples.len());
        for &amplitude in &samples {
            let deformed = TriangleMesh {
                vertices: (surface.vertices.iter().enumerate())
                    .map(|(v, p)| p + displacement(m, v, amplitude))
                    .collect(),
                triangles: surface.triangles.clone(),
            };
            let what = || format!("mode {m} at amplitude {amplitude:e}");
            // The grid must hold the deformed surface: beyond its box the samples would all
            // look alike to the solver, which reads the grid only.
            let (lo, hi) = (spec.origin, spec.upper());
            if let Some(v) = deformed
                .vertices
                .iter()
                .find(|p| (0..3).any(|d| p[d] < lo[d] || p[d] > hi[d]))
            {
                return Err(BakeError::parameter(
                    "--samples",
                    format!(
                        "{}: the deformed surface reaches ({:e}, {:e}, {:e}), outside the grid [{:e}, {:e}, {:e}] .. [{:e}, {:e}, {:e}]: use smaller amplitudes, or a larger --pad",
                        what(),
                        v.x,
                        v.y,
                        v.z,
                        lo[0],
                        lo[1],
                        lo[2],
                        hi[0],
                        hi[1],
                        hi[2]
                    ),
                ));
            }
            let values =
                DistanceField::new(&deformed, Signing::PseudoNormal).grid(&spec, baked.extent);
            let grid = LevelSetGrid::new(spec.clone(), values)
                .map_err(|e| BakeError::parameter("--samples", format!("{}: {e}", what())))?;
            require(
                resolution(&grid, MassProperties::of_mesh(&deformed).volume),
                &what(),
                baked.allow_unresolved,
                &mut baked.unresolved,
            )?;
            levels.push(SampledLevelSet {
                amplitude,
                values: Array3::from_shape_vec((nx, ny, nz), grid.into_parts().1)
                    .expect("grid shape"),
            });
        }
        precomputed.push(levels);
    }
    baked.bundle.deformation = Some(Deformation {
        modal_mass: modal.mass,
        modal_stiffness: modal.stiffness,
        modal_damping: modal.damping,
        internal_force: modal.internal_force,
        node_modes,
        grid_modes,
        precomputed,
        path,
        material: modal.material,
        flexibility: modal.flexibility,
    });
    Ok(())
}

/// Where a grain's modes come from (the command line's choices).
#[derive(Debug, Clone, PartialEq)]
pub enum ModeSource {
    /// A rigid grain.
    None,
    /// A modes bundle on the grain's FEM mesh, with what replaces its own data.
    Bundle {
        /// The bundle directory.
        dir: std::path::PathBuf,
        /// The modal masses: the bundle's, or changed ([`ModalMass`]).
        mass: ModalMass,
        /// One mode only: its internal force instead of the bundle's, as a table of `eps,force`
        /// (the energy column optional, see `grain::ForceTable::read_csv`; scaled with `eps`)
        /// and a factor on `eps` (a table given in units of a length, such as the paper's in units of the
        /// radius). The modal stiffness `K` becomes the table's tangent at its last row (the
        /// paper's `K_g` of a numerical mode, Section 4.2).
        table: Option<(std::path::PathBuf, f64)>,
    },
    /// The analytic bending mode, with its modal mass and stiffness given, or from the closed
    /// forms (box grains only; the stiffness needs Young's modulus and Poisson's ratio).
    Bending {
        /// The mode.
        mode: BendingMode,
        /// Modal mass, if given.
        mass: Option<f64>,
        /// Modal stiffness, if given.
        stiffness: Option<f64>,
        /// For the closed-form stiffness.
        youngs_modulus: Option<f64>,
        /// For the closed-form stiffness.
        poisson: Option<f64>,
    },
}

/// Modal damping `C_eps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Damping {
    /// `C = c I`.
    Constant(f64),
    /// `C = beta K`.
    StiffnessProportional(f64),
}

/// Where to precompute level sets (levelset-bake `--samples`).
#[derive(Debug, Clone, PartialEq)]
pub enum Samples {
    /// At these amplitudes (strictly increasing; empty: none).
    At(Vec<f64>),
    /// At the amplitudes of the mode's path, its FEM snapshots (`--samples path`): the level
    /// sets of the surfaces the FEM run computed, the blend between them following the path.
    Path,
}

impl Samples {
    /// The amplitudes for the modes `field`.
    pub fn amplitudes(&self, field: &dyn ModeField) -> Result<Vec<f64>, BakeError> {
        match self {
            Samples::At(a) => Ok(a.clone()),
            Samples::Path if field.path_amplitudes().is_empty() => Err(BakeError::parameter(
                "--samples",
                "`path` needs a path mode (a modes bundle that mode-extract --single wrote with its path)",
            )),
            Samples::Path => Ok(field.path_amplitudes().to_vec()),
        }
    }

    /// Whether no level set is to be precomputed.
    pub fn is_empty(&self) -> bool {
        matches!(self, Samples::At(a) if a.is_empty())
    }
}

/// `--samples` as written: `path`, or finite amplitudes separated by commas. Anything else is
/// refused whole (issue #33: `0.005,path` was taken as `path`, the 0.005 dropped).
impl std::str::FromStr for Samples {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "path" {
            return Ok(Samples::Path);
        }
        s.split(',')
            .map(|a| a.parse::<f64>().ok().filter(|a| a.is_finite()))
            .collect::<Option<Vec<f64>>>()
            .map(Samples::At)
            .ok_or_else(|| {
                format!(
                    "expected `path` alone (the path mode's own amplitudes) or finite amplitudes separated by commas (e.g. `0.4,0.8,1.2`), got `{s}`"
                )
            })
    }
}

/// Everything that makes a baked grain deformable.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeRequest {
    /// The modes.
    pub source: ModeSource,
    /// Where to precompute level sets.
    pub samples: Samples,
    /// Modal damping.
    pub damping: Damping,
}

impl ModeRequest {
    /// Attaches the requested modes to a baked grain (nothing for [`ModeSource::None`]).
    /// `density` is the grain's; `cuboid` its half sides when it is a box primitive.
    pub fn apply(
        &self,
        baked: &mut Baked,
        density: f64,
        cuboid: Option<[f64; 3]>,
    ) -> Result<(), BakeError> {
        // Negative damping feeds energy into the modes.
        let (flag, value) = match self.damping {
            Damping::Constant(c) => ("--modal-damping", c),
            Damping::StiffnessProportional(beta) => ("--damping-beta", beta),
        };
        if !(value.is_finite() && value >= 0.0) {
            return Err(BakeError::parameter(
                flag,
                format!("a number >= 0 (negative damping feeds energy in), got {value}"),
            ));
        }
        let damping = |k: &Array2<f64>| match self.damping {
            Damping::Constant(c) => Array2::eye(k.nrows()) * c,
            Damping::StiffnessProportional(beta) => k * beta,
        };
        match &self.source {
            ModeSource::None if self.samples.is_empty() => Ok(()),
            ModeSource::None => Err(BakeError::parameter(
                "--samples",
                "needs --modes or --bending-mode",
            )),
            ModeSource::Bundle { dir, mass, table } => {
                let bundle = ModesBundle::read(dir)?;
                let reach = CONTINUATION_REACH * baked.bundle.levelset.spec().spacing;
                let field = FemModes::new(&bundle, &baked.bundle.properties.input_frame, reach);
                let one_mode = |flag: &str| {
                    if bundle.mass.nrows() == 1 {
                        Ok(())
                    } else {
                        Err(BakeError::parameter(
                            flag,
                            format!(
                                "replaces the data of one mode; {} has {}",
                                dir.display(),
                                bundle.mass.nrows()
                            ),
                        ))
                    }
                };
                let mut modal = Modal {
                    damping: Array2::zeros((0, 0)),
                    mass: bundle.mass.clone(),
                    stiffness: bundle.stiffness.clone(),
                    internal_force: bundle.internal_force.clone(),
                    material: Some(bundle.info.material.clone()),
                    flexibility: bundle.flexibility.as_ref().map(|f| {
                        let frame = &baked.bundle.properties.input_frame;
                        let rotation = Matrix3::from_fn(|i, j| frame.rotation[i][j]);
                        let translation = Vector3::from(frame.translation);
                        let points: Vec<Vector3<f64>> = (f.nodes.iter())
                            .map(|&n| {
                                rotation * fem::node(&bundle.mesh, n as usize).coords + translation
                            })
                            .collect();
                        GrainFlexibility {
                            points: Array2::from_shape_fn((points.len(), 3), |(k, d)| points[k][d]),
                            patch_radius: f.patch_radius,
                            matrix: f.matrix.clone(),
                        }
                    }),
                };
                let positive = |flag: &str, value: f64| {
                    if value.is_finite() && value > 0.0 {
                        Ok(value)
                    } else {
                        Err(BakeError::parameter(
                            flag,
                            format!("a positive number, got {value}"),
                        ))
                    }
                };
                match *mass {
                    ModalMass::Bundle => {}
                    ModalMass::Given(m) => {
                        one_mode("--modal-mass")?;
                        modal.mass = Array2::from_elem((1, 1), positive("--modal-mass", m)?);
                    }
                    ModalMass::Scaled(f) => modal.mass *= positive("--modal-mass-scale", f)?,
                }
                if let Some((path, scale)) = table {
                    one_mode("--internal-force")?;
                    let scale = positive("--table-eps-scale", *scale)?;
                    // U = integral of F d eps: scaling eps scales the energies by the same factor
                    // (the file's own, or those read_csv integrated).
                    let t = ForceTable::read_csv(path)?;
                    t.check_physics().map_err(|m| {
                        BakeError::input(path, format!("internal force table: {m}"))
                    })?;
                    let t = ForceTable {
                        eps: t.eps.iter().map(|e| e * scale).collect(),
                        force: t.force,
                        energy: t.energy.iter().map(|u| u * scale).collect(),
                    };
                    let interpolation = TableInterpolation::MonotoneCubic;
                    let last = *t.eps.last().expect("a valid table has rows");
                    let k = TableLaw::new(&t, interpolation).tangent(last);
                    modal.stiffness = Array2::from_elem((1, 1), k);
                    modal.internal_force = InternalForce::Table {
                        interpolation,
                        table: t,
                    };
                }
                modal.damping = damping(&modal.stiffness);
                let samples = self.samples.amplitudes(&field)?;
                attach_modes(baked, &field, modal, &samples)?;
                let closest = field.closest_feet.load(Ordering::Relaxed);
                if closest > 0 {
                    baked.notes.push(format!(
                        "{closest} mode queries outside the FEM mesh (grid and surface nodes) found no prism of the boundary's normal shell holding their point; those were continued from the point's closest point on the boundary instead (docs/physics.md section 5)"
                    ));
                }
                Ok(())
            }
            ModeSource::Bending {
                mode,
                mass,
                stiffness,
                youngs_modulus,
                poisson,
            } => {
                if mode.axis == mode.direction {
                    return Err(BakeError::parameter(
                        "--bending-direction",
                        "must differ from --bending-axis",
                    ));
                }
                let section = |what: &str| {
                    cuboid
                        .map(|half| {
                            (
                                2.0 * half[3 - mode.axis - mode.direction],
                                2.0 * half[mode.direction],
                            )
                        })
                        .ok_or_else(|| {
                            BakeError::parameter(
                                what,
                                "give it: the closed form exists for `box` grains only",
                            )
                        })
                };
                let closed_form = |flag, value, name, unit| {
                    let quantity = Derived {
                        name,
                        power: 1,
                        values: &[unit],
                    };
                    in_range(flag, value, &[quantity]).map(|()| value * unit)
                };
                let mass = match mass {
                    Some(m) => *m,
                    None => {
                        let (b, h) = section("--modal-mass")?;
                        let unit = mode.cuboid_mass_stiffness(b, h, 1.0, 1.0, 0.0).0;
                        closed_form("--density", density, "bending mode's modal mass", unit)?
                    }
                };
                let stiffness = match (stiffness, youngs_modulus, poisson) {
                    (Some(k), _, _) if k.is_finite() && *k > 0.0 => *k,
                    (Some(k), _, _) => {
                        return Err(BakeError::parameter(
                            "--modal-stiffness",
                            format!(
                                "a positive number (a mode without stiffness is no deformation mode), got {k}"
                            ),
                        ));
                    }
                    (None, Some(e), Some(nu)) => {
                        if !(e.is_finite() && *e > 0.0 && *nu > -1.0 && *nu < 0.5) {
                            return Err(BakeError::parameter(
                                "--youngs-modulus/--poisson",
                                format!(
                                    "need a finite E > 0 and -1 < nu < 0.5 (else the stiffness is not positive), got {e} and {nu}"
                                ),
                            ));
                        }
                        let (b, h) = section("--modal-stiffness")?;
                        let unit = mode.cuboid_mass_stiffness(b, h, 1.0, 1.0, *nu).1;
                        closed_form(
                            "--youngs-modulus",
                            *e,
                            "bending mode's modal stiffness",
                            unit,
                        )?
                    }
                    _ => {
                        return Err(BakeError::parameter(
                            "--modal-stiffness",
                            "give it, or --youngs-modulus and --poisson for the closed form (box grains)",
                        ));
                    }
                };
                let k = Array2::from_elem((1, 1), stiffness);
                let modal = Modal {
                    mass: Array2::from_elem((1, 1), mass),
                    damping: damping(&k),
                    stiffness: k,
                    internal_force: InternalForce::Linear,
                    flexibility: None,
                    material: match (youngs_modulus, poisson) {
                        (&Some(youngs_modulus), &Some(poisson_ratio)) => Some(Material {
                            youngs_modulus,
                            poisson_ratio,
                            density,
                        }),
                        _ => None,
                    },
                };
                let samples = self.samples.amplitudes(mode)?;
                attach_modes(baked, mode, modal, &samples)
            }
        }
    }
}
