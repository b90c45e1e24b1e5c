//! The modes bundle `<name>.modes/`, written by mode-extract and read by levelset-bake.
//!
//! | file | content |
//! |---|---|
//! | `modes.json` | manifest: schema, counts, element blocks, [`ModesInfo`], internal-force law (a polynomial law inline, see [`crate::polynomial`]) |
//! | `ref_nodes.npy` | `(n, 3)` FEM node coordinates, reference configuration, input frame |
//! | `elements{b}.npy` | `(m_b, nodes per element)` 0-based connectivity (uint64) of element block `b` |
//! | `phi.npy` | `(A, n, 3)` modes `Phi_a` at the FEM nodes |
//! | `mass.npy`, `stiffness.npy` | `(A, A)` symmetric modal mass (Eq. 8) and stiffness (Eq. 4) |
//! | `coords.npy` | `(S, A)` generalized coordinates of each snapshot |
//! | `internal_force.csv` | tabulated `F_int` (one mode, tabulated law only) |
//! | `path.npy` | `(P, n, 3)` the displacement at each point of a path mode ([`SnapshotPath`]) |
//! | `flexibility.npy` | `(S, S)` the residual flexibility between the surface nodes ([`SurfaceFlexibility`]) |
//! | `flexibility_nodes.npy` | `(S,)` the mesh node of each surface point (uint64) |
//! | `modes.vtu` | the mesh with every mode (and every point of a path) as a point vector, for ParaView |

use std::path::Path;

use ndarray::{Array2, Array3, Axis};
use serde::{Deserialize, Serialize};

use super::grain::check_path;
use super::manifest::{
    FlexibilityEntry, InternalForce, InternalForceEntry, Material, check_patch_radius,
    check_symmetric, read_internal_force, read_manifest, write_internal_force, write_manifest,
};
use crate::atomic::write_dir_atomically;
use crate::error::{FormatError, Result};
use crate::mesh::{ElementBlock, ElementType, FemMesh};
use crate::npy::{read_array, write_array};
use crate::vtk::{PointData, write_vtu};

/// The modes bundle schema version this build writes. Version 2 added free modes (no
/// snapshots, no reconstruction) and the residual flexibility; version 1 bundles are read as
/// they are.
pub const MODES_SCHEMA: u64 = 2;

/// The oldest modes bundle schema version this build reads.
pub const MODES_SCHEMA_OLDEST: u64 = 1;

/// An input file the modes were made from, with its checksum (so a stale bundle can be spotted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    /// The path as given on the command line.
    pub path: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
}

/// How the number of SVD modes was chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Truncation {
    /// A fixed count.
    Count {
        /// Modes kept.
        modes: usize,
    },
    /// The fewest modes whose squared singular values reach this fraction of the total.
    Energy {
        /// Captured fraction, in (0, 1].
        fraction: f64,
    },
}

/// How the modes were built (docs/physics.md section 7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ModeConstruction {
    /// Left singular vectors of the snapshot matrix.
    Svd {
        /// How many were kept.
        truncation: Truncation,
        /// All singular values, largest first.
        singular_values: Vec<f64>,
    },
    /// The snapshot at the largest deformation.
    Single {
        /// Its identifier.
        snapshot: String,
    },
    /// Differences of successive snapshots, pruned by modified Gram-Schmidt.
    Difference {
        /// The relative norm below which a difference is pruned.
        tolerance: f64,
    },
    /// The mesh's lowest free-free elastic modes, from its mass and stiffness alone (no
    /// snapshots; docs/physics.md section 2), mass-normalized.
    Free {
        /// `omega_a^2` of each mode (1 / time^2), ascending: the modal stiffness' diagonal.
        eigenvalues: Vec<f64>,
    },
}

/// How each mode is scaled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Normalization {
    /// Largest nodal displacement magnitude 1.
    UnitMax,
    /// Unit Euclidean norm of the nodal vector.
    UnitL2,
    /// Unit modal mass.
    Mass,
    /// `eps` equals the mean displacement of a node set along a direction (e.g. the
    /// indenter's).
    Control {
        /// The node set's name in the FEM deck.
        node_set: String,
        /// The direction (unit vector).
        direction: [f64; 3],
    },
    /// `eps` equals a loaded boundary's displacement, as the per-snapshot scalars give it
    /// (`displacement_<name>`): the paper's choice, eps the indenter's displacement, which
    /// makes that boundary's reaction the generalized force.
    Boundary {
        /// The boundary's name in the scalars file.
        name: String,
    },
}

/// As mode-extract's `--normalize` writes it (`unit-max`, `control=NSET:DX,DY,DZ`, ...).
impl std::fmt::Display for Normalization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Normalization::UnitMax => write!(f, "unit-max"),
            Normalization::UnitL2 => write!(f, "unit-l2"),
            Normalization::Mass => write!(f, "mass"),
            Normalization::Control {
                node_set,
                direction: [x, y, z],
            } => write!(f, "control={node_set}:{x},{y},{z}"),
            Normalization::Boundary { name } => write!(f, "boundary={name}"),
        }
    }
}

/// A snapshot the modes were fitted to or checked against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Identifier (file name and increment, or the scalars CSV's id).
    pub id: String,
    /// Held out of the fit, used for the out-of-sample check.
    pub holdout: bool,
}

/// Relative reconstruction errors over a set of snapshots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconstructionError {
    /// `||U - Phi c|| / ||U||` over the set (Frobenius).
    pub displacement: f64,
    /// Relative strain-energy error, when energies were given.
    pub strain_energy: Option<f64>,
}

/// Reconstruction errors of the fit (docs/physics.md section 7, "Quality").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconstruction {
    /// On the snapshots used for the modes.
    pub train: ReconstructionError,
    /// On the held-out snapshots, if any.
    pub holdout: Option<ReconstructionError>,
}

/// What a modes bundle records besides its arrays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModesInfo {
    /// Free-text unit system of the FEM model.
    pub units: String,
    /// The FEM material.
    pub material: Material,
    /// Input files with checksums.
    pub sources: Vec<SourceFile>,
    /// How the modes were built.
    pub construction: ModeConstruction,
    /// How they were scaled.
    pub normalization: Normalization,
    /// Whether the basis was rotated so that M and K are diagonal.
    pub energy_orthogonalized: bool,
    /// The snapshots, in the row order of `coords.npy`.
    pub snapshots: Vec<Snapshot>,
    /// Reconstruction errors; none for modes made without snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconstruction: Option<Reconstruction>,
    /// How the internal-force fits compare, when they were made.
    pub fit: Option<FitReport>,
    /// Coordinate planes through the origin the FEM part was mirrored across to make the whole
    /// grain, in order: `"xyz"` for an octant model, `""` when it was modelled whole.
    pub mirror_planes: String,
}

impl ModesInfo {
    /// Every figure finite: JSON has no NaN or infinity (they would be written as `null`), and a
    /// non-finite figure means a computation failed. The error names the field.
    fn check_finite(&self, path: &Path) -> Result<()> {
        let m = &self.material;
        let r = self.reconstruction.as_ref();
        let mut figures: Vec<(String, f64)> = vec![
            ("material.youngs_modulus".into(), m.youngs_modulus),
            ("material.poisson_ratio".into(), m.poisson_ratio),
            ("material.density".into(), m.density),
        ];
        let mut optional = |name: &str, v: Option<f64>| {
            if let Some(v) = v {
                figures.push((name.into(), v));
            }
        };
        optional(
            "reconstruction.train.displacement",
            r.map(|r| r.train.displacement),
        );
        optional(
            "reconstruction.train.strain_energy",
            r.and_then(|r| r.train.strain_energy),
        );
        optional(
            "reconstruction.holdout.displacement",
            r.and_then(|r| r.holdout.as_ref()).map(|h| h.displacement),
        );
        optional(
            "reconstruction.holdout.strain_energy",
            r.and_then(|r| r.holdout.as_ref())
                .and_then(|h| h.strain_energy),
        );
        if let Some(f) = &self.fit {
            optional("fit.energy_vs_force", f.energy_vs_force);
            figures.push(("fit.slope_over_stiffness".into(), f.slope_over_stiffness));
            for (i, d) in f.per_snapshot.iter().enumerate() {
                figures.push((format!("fit.per_snapshot[{i}].difference"), d.difference));
                for (a, e) in d.eps.iter().enumerate() {
                    figures.push((format!("fit.per_snapshot[{i}].eps[{a}]"), *e));
                }
            }
        }
        match &self.construction {
            ModeConstruction::Svd {
                singular_values, ..
            } => {
                for (i, v) in singular_values.iter().enumerate() {
                    figures.push((format!("construction.singular_values[{i}]"), *v));
                }
            }
            ModeConstruction::Difference { tolerance } => {
                figures.push(("construction.tolerance".into(), *tolerance));
            }
            ModeConstruction::Free { eigenvalues } => {
                for (i, v) in eigenvalues.iter().enumerate() {
                    figures.push((format!("construction.eigenvalues[{i}]"), *v));
                }
            }
            ModeConstruction::Single { .. } => {}
        }
        match figures.into_iter().find(|(_, v)| !v.is_finite()) {
            Some((field, v)) => Err(FormatError::invalid(
                path.join("modes.json"),
                &field,
                format!("{v}, not a finite number (a computation behind it failed)"),
            )),
            None => Ok(()),
        }
    }
}

/// Agreement of the internal-force fits (docs/physics.md section 7: "both fits of the same FEM run
/// must agree").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitReport {
    /// Largest difference of the energy and reaction-force fits' forces, relative to the
    /// largest force; `None` unless both data were given.
    pub energy_vs_force: Option<f64>,
    /// The secant ratio `sum_i eps_i . F(eps_i) / sum_i eps_i . K eps_i` of the fitted force
    /// to the modal stiffness `K` over the fitted amplitudes (for one mode: the least-squares
    /// slope through the origin over `K`); 1 for a linear problem.
    pub slope_over_stiffness: f64,
    /// Per fitted snapshot, the difference of the two fits' forces there, relative to the
    /// largest force (the norm of the difference for several modes); empty unless both data
    /// were given.
    #[serde(default)]
    pub per_snapshot: Vec<FitDifference>,
}

/// The two internal-force fits at one snapshot ([`FitReport::per_snapshot`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitDifference {
    /// The snapshot's identifier.
    pub snapshot: String,
    /// Its amplitudes.
    pub eps: Vec<f64>,
    /// The energy fit's force minus the reaction-force fit's, relative to the largest force.
    pub difference: f64,
}

/// A modes bundle in memory. See the [module docs](self) for the files.
#[derive(Clone, Debug, PartialEq)]
pub struct ModesBundle {
    /// Provenance, construction and quality.
    pub info: ModesInfo,
    /// The FEM mesh, reference configuration.
    pub mesh: FemMesh,
    /// `(A, n, 3)` modes at the FEM nodes.
    pub phi: Array3<f64>,
    /// `(A, A)` modal mass.
    pub mass: Array2<f64>,
    /// `(A, A)` modal stiffness.
    pub stiffness: Array2<f64>,
    /// `(S, A)` generalized coordinates of the snapshots.
    pub coords: Array2<f64>,
    /// The fitted internal-force law.
    pub internal_force: InternalForce,
    /// For one mode, the path it follows through the snapshots, if it has one.
    pub path: Option<SnapshotPath>,
    /// The residual flexibility between the mesh's surface nodes, if it was computed.
    pub flexibility: Option<SurfaceFlexibility>,
}

/// What the modes leave out of the grain's static response to a contact load, between its
/// surface nodes (docs/physics.md section 2, "Contacts anywhere"): `matrix[t][s]` is the inward
/// normal displacement at surface node `t` per unit inward normal force at surface node `s`
/// (each spread over a patch of radius `patch_radius` about its node), with inertia relief,
/// less the modes' part at the points. Symmetric; length / force.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceFlexibility {
    /// The mesh node of each surface point (0-based).
    pub nodes: Vec<u64>,
    /// The load patches' radius (length).
    pub patch_radius: f64,
    /// `(S, S)` the flexibility.
    pub matrix: Array2<f64>,
}

impl SurfaceFlexibility {
    /// Nodes in the mesh and distinct, a positive patch radius, a symmetric matrix.
    fn check(&self, path: &Path, node_count: usize) -> Result<()> {
        let file = path.join("flexibility_nodes.npy");
        let mut seen = vec![false; node_count];
        for &k in &self.nodes {
            match seen.get_mut(k as usize) {
                None => {
                    return Err(FormatError::invalid(
                        &file,
                        "flexibility_nodes",
                        format!("node index {k} is past the node count {node_count}"),
                    ));
                }
                Some(true) => {
                    return Err(FormatError::invalid(
                        &file,
                        "flexibility_nodes",
                        format!("node {k} is listed twice"),
                    ));
                }
                Some(s) => *s = true,
            }
        }
        check_patch_radius(
            &path.join("modes.json"),
            "flexibility.patch_radius",
            self.patch_radius,
        )?;
        check_symmetric(&path.join("flexibility.npy"), "flexibility", &self.matrix)
    }
}

/// A one-mode bundle's path (docs/physics.md section 1): the snapshots' displacements at their
/// amplitudes, through which the grain's shape is interpolated in the amplitude from `(0, 0)`
/// ([`crate::path_weights`]: C1, continued along its end tangents), so that at each snapshot's
/// amplitude the grain has that snapshot's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotPath {
    /// The amplitudes `eps_p`, strictly increasing and positive.
    pub amplitudes: Vec<f64>,
    /// `(P, n, 3)` the displacements at the FEM nodes.
    pub displacement: Array3<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockEntry {
    element_type: ElementType,
    count: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    schema: u64,
    mode_count: usize,
    node_count: usize,
    element_blocks: Vec<BlockEntry>,
    internal_force: InternalForceEntry,
    info: ModesInfo,
    /// The amplitudes of a path mode's points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_amplitudes: Option<Vec<f64>>,
    /// The residual flexibility's surface-node count and patch radius, when it is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flexibility: Option<FlexibilityEntry>,
}

fn block_file(b: usize) -> String {
    format!("elements{b}.npy")
}

fn check_connectivity(path: &Path, block: &ElementBlock, n: usize) -> Result<()> {
    match block.connectivity.iter().find(|&&i| i as usize >= n) {
        Some(i) => Err(FormatError::invalid(
            path,
            "connectivity",
            format!("node index {i} is past the node count {n}"),
        )),
        None => Ok(()),
    }
}

impl ModesBundle {
    /// Number of modes `A`.
    pub fn mode_count(&self) -> usize {
        self.phi.len_of(Axis(0))
    }

    fn check(&self, path: &Path) -> Result<()> {
        let a = self.mode_count();
        let n = self.mesh.nodes.nrows();
        let s = self.info.snapshots.len();
        for (array, expected, found) in [
            ("ref_nodes", vec![n, 3], self.mesh.nodes.shape()),
            ("phi", vec![a, n, 3], self.phi.shape()),
            ("mass", vec![a, a], self.mass.shape()),
            ("stiffness", vec![a, a], self.stiffness.shape()),
            ("coords", vec![s, a], self.coords.shape()),
        ] {
            if expected != found {
                return Err(FormatError::Shape {
                    path: path.to_path_buf(),
                    array: array.into(),
                    expected,
                    found: found.to_vec(),
                });
            }
        }
        for (b, block) in self.mesh.blocks.iter().enumerate() {
            let npe = block.element_type.node_count();
            if block.connectivity.ncols() != npe {
                return Err(FormatError::Shape {
                    path: path.to_path_buf(),
                    array: block_file(b).trim_end_matches(".npy").into(),
                    expected: vec![block.connectivity.nrows(), npe],
                    found: block.connectivity.shape().to_vec(),
                });
            }
            check_connectivity(path, block, n)?;
        }
        check_symmetric(path, "mass", &self.mass)?;
        check_symmetric(path, "stiffness", &self.stiffness)?;
        if let ModeConstruction::Free { eigenvalues } = &self.info.construction
            && (eigenvalues.len() != a || eigenvalues.iter().any(|l| *l <= 0.0))
        {
            return Err(FormatError::invalid(
                path.join("modes.json"),
                "info.construction.eigenvalues",
                format!("{eigenvalues:?}: one positive value per mode ({a}) expected"),
            ));
        }
        if let Some(f) = &self.flexibility {
            f.check(path, n)?;
        }
        if let Some(p) = &self.path {
            check_path(path, "path_amplitudes", a, &p.amplitudes)?;
            let expected = vec![p.amplitudes.len(), n, 3];
            if p.displacement.shape() != expected.as_slice() {
                return Err(FormatError::Shape {
                    path: path.to_path_buf(),
                    array: "path".into(),
                    expected,
                    found: p.displacement.shape().to_vec(),
                });
            }
        }
        self.info.check_finite(path)
    }

    /// Writes the bundle directory atomically (replacing an existing bundle whole).
    pub fn write(&self, dir: &Path) -> Result<()> {
        self.check(dir)?;
        write_dir_atomically(dir, |tmp| {
            write_array(tmp, "ref_nodes.npy", &self.mesh.nodes)?;
            for (b, block) in self.mesh.blocks.iter().enumerate() {
                write_array(tmp, &block_file(b), &block.connectivity)?;
            }
            write_array(tmp, "phi.npy", &self.phi)?;
            write_array(tmp, "mass.npy", &self.mass)?;
            write_array(tmp, "stiffness.npy", &self.stiffness)?;
            write_array(tmp, "coords.npy", &self.coords)?;
            if let Some(p) = &self.path {
                write_array(tmp, "path.npy", &p.displacement)?;
            }
            if let Some(f) = &self.flexibility {
                write_array(tmp, "flexibility.npy", &f.matrix)?;
                write_array(
                    tmp,
                    "flexibility_nodes.npy",
                    &ndarray::Array1::from(f.nodes.clone()),
                )?;
            }
            let internal_force =
                write_internal_force(tmp, &self.internal_force, self.mode_count())?;

            let flat =
                |v: ndarray::ArrayView2<f64>| v.as_standard_layout().iter().copied().collect();
            let mut modes: Vec<(String, Vec<f64>)> = (0..self.mode_count())
                .map(|a| (format!("mode{a}"), flat(self.phi.index_axis(Axis(0), a))))
                .collect();
            if let Some(p) = &self.path {
                modes.extend((0..p.amplitudes.len()).map(|i| {
                    (
                        format!("path{i}"),
                        flat(p.displacement.index_axis(Axis(0), i)),
                    )
                }));
            }
            let data: Vec<PointData> = modes
                .iter()
                .map(|(n, v)| PointData::Vectors(n, v))
                .collect();
            write_vtu(&tmp.join("modes.vtu"), &self.mesh, &data)?;

            let manifest = Manifest {
                schema: MODES_SCHEMA,
                mode_count: self.mode_count(),
                node_count: self.mesh.nodes.nrows(),
                element_blocks: self
                    .mesh
                    .blocks
                    .iter()
                    .map(|b| BlockEntry {
                        element_type: b.element_type,
                        count: b.connectivity.nrows(),
                    })
                    .collect(),
                internal_force,
                info: self.info.clone(),
                path_amplitudes: self.path.as_ref().map(|p| p.amplitudes.clone()),
                flexibility: self.flexibility.as_ref().map(|f| FlexibilityEntry {
                    surface_nodes: f.nodes.len(),
                    patch_radius: f.patch_radius,
                }),
            };
            write_manifest(&tmp.join("modes.json"), &manifest)
        })
    }

    /// Reads a bundle directory, checking the schema version, every array's shape against
    /// `modes.json`, the connectivity's node indices and the symmetry of M and K.
    pub fn read(dir: &Path) -> Result<ModesBundle> {
        let manifest_path = dir.join("modes.json");
        let m: Manifest = read_manifest(&manifest_path, MODES_SCHEMA_OLDEST, MODES_SCHEMA)?;
        let (a, n, s) = (m.mode_count, m.node_count, m.info.snapshots.len());
        let nodes = read_array(dir, "ref_nodes.npy", &[n, 3])?;
        let mut blocks = Vec::with_capacity(m.element_blocks.len());
        for (b, entry) in m.element_blocks.iter().enumerate() {
            let block = ElementBlock {
                element_type: entry.element_type,
                connectivity: read_array(
                    dir,
                    &block_file(b),
                    &[entry.count, entry.element_type.node_count()],
                )?,
            };
            check_connectivity(&dir.join(block_file(b)), &block, n)?;
            blocks.push(block);
        }
        let mass = read_array(dir, "mass.npy", &[a, a])?;
        check_symmetric(&dir.join("mass.npy"), "mass", &mass)?;
        let stiffness = read_array(dir, "stiffness.npy", &[a, a])?;
        check_symmetric(&dir.join("stiffness.npy"), "stiffness", &stiffness)?;
        let path = match m.path_amplitudes {
            None => None,
            Some(amplitudes) => {
                check_path(&manifest_path, "path_amplitudes", a, &amplitudes)?;
                Some(SnapshotPath {
                    displacement: read_array(dir, "path.npy", &[amplitudes.len(), n, 3])?,
                    amplitudes,
                })
            }
        };
        let flexibility = match m.flexibility {
            None => None,
            Some(FlexibilityEntry {
                surface_nodes,
                patch_radius,
            }) => {
                let f = SurfaceFlexibility {
                    nodes: read_array::<u64, ndarray::Ix1>(
                        dir,
                        "flexibility_nodes.npy",
                        &[surface_nodes],
                    )?
                    .to_vec(),
                    patch_radius,
                    matrix: read_array(dir, "flexibility.npy", &[surface_nodes, surface_nodes])?,
                };
                f.check(dir, n)?;
                Some(f)
            }
        };
        Ok(ModesBundle {
            path,
            flexibility,
            mesh: FemMesh { nodes, blocks },
            phi: read_array(dir, "phi.npy", &[a, n, 3])?,
            mass,
            stiffness,
            coords: read_array(dir, "coords.npy", &[s, a])?,
            internal_force: read_internal_force(dir, m.internal_force, a)?,
            info: m.info,
        })
    }
}
