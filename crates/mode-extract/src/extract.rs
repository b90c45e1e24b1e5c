//! The whole extraction: snapshots in, a modes bundle out.

use std::path::{Path, PathBuf};

use faer::{Mat, MatRef};
use grain::{
    FemMesh, FitReport, InternalForce, Material, ModeConstruction, ModesBundle, ModesInfo,
    Normalization, Reconstruction, ReconstructionError, Snapshot as SnapshotInfo, SourceFile,
    TableInterpolation, Truncation,
};
use nalgebra::DMatrix;
use ndarray::{Array2, Array3};
use sha2::{Digest, Sha256};

use crate::fit::{
    disagreement, energy_fit, force_fit, generalized_forces, linear_generalized_forces,
    polynomial_disagreement, polynomial_energy_fit, polynomial_force_fit, secant_ratio,
};
use crate::modal::{Elastic, modal_matrices};
use crate::modes::{
    Keep, difference_modes, energy_orthogonalize, generalized_coordinates, largest_snapshot,
    single_mode, svd_modes,
};
use crate::snapshots::{SnapshotError, Snapshots, read_frd, read_scalars, read_table, read_vtk};

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Reading an input (a snapshot file, a deck, a scalars table) failed.
    #[error(transparent)]
    Input(#[from] SnapshotError),
    /// Building modes failed.
    #[error(transparent)]
    Modes(#[from] crate::modes::ModeError),
    /// Integrating M and K failed.
    #[error(transparent)]
    Modal(#[from] crate::modal::ModalError),
    /// An option is missing or out of range.
    #[error("{option}: {message}")]
    Option {
        /// The command-line option.
        option: String,
        /// What was expected.
        message: String,
    },
}

fn option(option: &str, message: impl Into<String>) -> ExtractError {
    ExtractError::Option {
        option: option.into(),
        message: message.into(),
    }
}

/// How the modes are built.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// SVD, keeping a count or an energy fraction.
    Svd(Keep),
    /// The largest snapshot.
    Single,
    /// Difference modes with this pruning tolerance.
    Difference(f64),
}

/// The options of an extraction (the command line's).
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    /// Snapshot files: one .frd; .vtu/.vtk/.pvd files; or .rpt/.csv tables with `mesh`.
    pub snapshots: Vec<PathBuf>,
    /// An Abaqus deck with the mesh (needed for tables; optional otherwise, for node sets and
    /// the material).
    pub mesh: Option<PathBuf>,
    /// The grain's element set in the deck.
    pub element_set: Option<String>,
    /// The displacement field name in VTK files.
    pub field: String,
    /// Mode construction.
    pub method: Method,
    /// Mode scaling.
    pub normalization: Normalization,
    /// Rotate the modes to diagonal M and K.
    pub energy_orthogonalize: bool,
    /// Material, when the deck does not give it (overrides the deck's).
    pub youngs_modulus: Option<f64>,
    /// Poisson's ratio.
    pub poisson_ratio: Option<f64>,
    /// Density.
    pub density: Option<f64>,
    /// Fraction of snapshots held out of the fit (evenly spaced), for the out-of-sample check.
    pub holdout: f64,
    /// Snapshots held out by name instead (see [`held_out_by_name`]); not with `holdout`.
    pub holdout_snapshots: Vec<String>,
    /// Free-text units.
    pub units: String,
    /// Per-snapshot strain energies and reaction forces, for the internal-force fits.
    pub scalars: Option<PathBuf>,
    /// Total degree of the fitted polynomial energy when there are several modes (2 to 6).
    pub degree: u32,
}

impl ExtractOptions {
    /// The options of `mode-extract --snapshots ...` given nothing else: the command line's
    /// defaults (field `U`, SVD modes capturing 99.9 % of the energy, unit-max scaling, nothing
    /// held out, polynomial degree 3, the material from the deck).
    pub fn new(snapshots: Vec<PathBuf>) -> Self {
        ExtractOptions {
            snapshots,
            mesh: None,
            element_set: None,
            field: "U".into(),
            method: Method::Svd(Keep::Energy(0.999)),
            normalization: Normalization::UnitMax,
            energy_orthogonalize: false,
            youngs_modulus: None,
            poisson_ratio: None,
            density: None,
            holdout: 0.0,
            holdout_snapshots: Vec::new(),
            units: "unspecified".into(),
            scalars: None,
            degree: 3,
        }
    }
}

/// Snapshots and their mesh, with the deck when there is one.
struct Inputs {
    mesh: FemMesh,
    snapshots: Snapshots,
    deck: Option<fem::Deck>,
}

fn is(p: &Path, ext: &str) -> bool {
    crate::snapshots::kind(p) == ext
}

fn read_inputs(o: &ExtractOptions) -> Result<Inputs, ExtractError> {
    let deck = o.mesh.as_ref().map(|p| fem::Deck::read(p)).transpose()?;
    let files = &o.snapshots;
    if files.is_empty() {
        return Err(option("--snapshots", "give at least one file"));
    }
    if files.iter().all(|p| is(p, "frd")) {
        let mut frds = files
            .iter()
            .map(|f| read_frd(f))
            .collect::<Result<Vec<_>, _>>()?;
        let first = frds.remove(0);
        let mut snapshots = first.snapshots;
        for other in frds {
            if other.node_labels != first.node_labels {
                return Err(option("--snapshots", "the .frd files have different nodes"));
            }
            snapshots.extend(other.snapshots);
        }
        let mesh = match &deck {
            Some(d) => {
                // The .frd numbers nodes with the deck's labels but leaves out nodes no element
                // uses: each displacement goes to its deck node (unused nodes do not move).
                let at: std::collections::HashMap<i64, usize> = first
                    .node_labels
                    .iter()
                    .enumerate()
                    .map(|(k, &l)| (l, k))
                    .collect();
                for s in &mut snapshots {
                    s.displacement = d
                        .node_labels
                        .iter()
                        .map(|l| at.get(l).map_or([0.0; 3], |&k| s.displacement[k]))
                        .collect();
                }
                d.mesh(o.element_set.as_deref())?
            }
            None => first.mesh,
        };
        let n = mesh.nodes.nrows();
        return Ok(Inputs {
            mesh,
            snapshots: Snapshots::from_lists(snapshots, n),
            deck,
        });
    }
    if files
        .iter()
        .all(|p| is(p, "vtu") || is(p, "vtk") || is(p, "pvd"))
    {
        let (mesh, snapshots) = read_vtk(files, &o.field)?;
        return Ok(Inputs {
            mesh,
            snapshots,
            deck,
        });
    }
    if files.iter().all(|p| is(p, "rpt") || is(p, "csv")) {
        let d = deck.ok_or_else(|| {
            option(
                "--mesh",
                "report and CSV tables need the deck (.inp) whose nodes they list",
            )
        })?;
        let mesh = d.mesh(o.element_set.as_deref())?;
        let snapshots = files
            .iter()
            .map(|f| read_table(f, &d.node_labels))
            .collect::<Result<Vec<_>, _>>()?;
        let n = mesh.nodes.nrows();
        return Ok(Inputs {
            mesh,
            snapshots: Snapshots::from_lists(snapshots, n),
            deck: Some(d),
        });
    }
    Err(option(
        "--snapshots",
        "all files of one kind: .frd, or .vtu/.vtk/.pvd, or .rpt/.csv",
    ))
}

fn material(o: &ExtractOptions, deck: Option<&fem::Deck>) -> Result<Elastic, ExtractError> {
    let from_deck = deck.and_then(|d| d.materials.first());
    let (e, nu) = match (
        o.youngs_modulus,
        o.poisson_ratio,
        from_deck.and_then(|m| m.elastic),
    ) {
        (Some(e), Some(nu), _) => (e, nu),
        (None, None, Some((e, nu))) => (e, nu),
        _ => {
            return Err(option(
                "--youngs-modulus/--poisson",
                "give both (the deck has no *Elastic, or only one was given)",
            ));
        }
    };
    let rho = o
        .density
        .or(from_deck.and_then(|m| m.density))
        .ok_or_else(|| option("--density", "give it (the deck has no *Density)"))?;
    if !(e > 0.0 && nu > -1.0 && nu < 0.5 && rho > 0.0) {
        return Err(option(
            "--youngs-modulus/--poisson/--density",
            format!("need E > 0, -1 < nu < 0.5, rho > 0; got {e}, {nu}, {rho}"),
        ));
    }
    Ok(Elastic {
        youngs_modulus: e,
        poisson_ratio: nu,
        density: rho,
    })
}

fn checksum(path: &Path) -> Result<SourceFile, ExtractError> {
    let bytes = std::fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let digest = Sha256::digest(&bytes);
    Ok(SourceFile {
        path: path.display().to_string(),
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// Mesh indices of a deck node set (for the control normalization).
fn control_nodes(deck: &fem::Deck, node_set: &str) -> Result<Vec<usize>, ExtractError> {
    let labels = deck
        .node_sets
        .get(&node_set.to_ascii_uppercase())
        .ok_or_else(|| {
            option(
                "--normalize control",
                format!("no node set `{node_set}` in the deck"),
            )
        })?;
    let index: std::collections::HashMap<i64, usize> = deck
        .node_labels
        .iter()
        .enumerate()
        .map(|(k, &l)| (l, k))
        .collect();
    Ok(labels.iter().map(|l| index[l]).collect())
}

/// Scales each mode column: returns the factors.
fn normalize(
    modes: &mut Mat<f64>,
    how: &Normalization,
    deck: Option<&fem::Deck>,
    n: usize,
) -> Result<Vec<f64>, ExtractError> {
    let mut factors = Vec::with_capacity(modes.ncols());
    for j in 0..modes.ncols() {
        let col: Vec<f64> = (0..3 * n).map(|i| modes[(i, j)]).collect();
        let largest = (0..3 * n)
            .max_by(|&a, &b| col[a].abs().total_cmp(&col[b].abs()))
            .unwrap_or(0);
        let sign = if col[largest] < 0.0 { -1.0 } else { 1.0 };
        let scale = match how {
            Normalization::UnitMax => {
                let m = (0..n)
                    .map(|k| {
                        (col[3 * k].powi(2) + col[3 * k + 1].powi(2) + col[3 * k + 2].powi(2))
                            .sqrt()
                    })
                    .fold(0.0, f64::max);
                sign / m
            }
            Normalization::UnitL2 => sign / col.iter().map(|x| x * x).sum::<f64>().sqrt(),
            Normalization::Mass => sign, // scaled after M is known
            Normalization::Control {
                node_set,
                direction,
            } => {
                let d = deck.ok_or_else(|| {
                    option(
                        "--normalize control",
                        "needs --mesh (the deck with the node set)",
                    )
                })?;
                let members = control_nodes(d, node_set)?;
                let along: f64 = members
                    .iter()
                    .map(|&k| {
                        col[3 * k] * direction[0]
                            + col[3 * k + 1] * direction[1]
                            + col[3 * k + 2] * direction[2]
                    })
                    .sum::<f64>()
                    / members.len() as f64;
                if along.abs() < 1e-300 {
                    return Err(option(
                        "--normalize control",
                        format!("mode {j} does not move node set `{node_set}` along the direction"),
                    ));
                }
                1.0 / along
            }
        };
        for i in 0..3 * n {
            modes[(i, j)] *= scale;
        }
        factors.push(scale);
    }
    Ok(factors)
}

fn to_dmatrix(a: &Array2<f64>) -> DMatrix<f64> {
    DMatrix::from_fn(a.nrows(), a.ncols(), |i, j| a[[i, j]])
}

fn to_array(a: &DMatrix<f64>) -> Array2<f64> {
    Array2::from_shape_fn((a.nrows(), a.ncols()), |(i, j)| a[(i, j)])
}

/// Relative reconstruction error `||U - Phi C^T||_F / ||U||_F` of some snapshots.
fn reconstruction(modes: &Mat<f64>, snaps: MatRef<'_, f64>) -> f64 {
    let c = generalized_coordinates(modes.as_ref(), snaps);
    // Column by column, so that no residual matrix the size of the snapshots is held.
    let (residual, total) = (0..snaps.ncols())
        .map(|j| {
            let r = snaps.col(j) - modes * c.row(j).transpose();
            (r.squared_norm_l2(), snaps.col(j).squared_norm_l2())
        })
        .fold((0.0, 0.0), |(r, t), (x, y)| (r + x, t + y));
    (residual / total.max(f64::MIN_POSITIVE)).sqrt()
}

/// Snapshots held out by name: a name matches each snapshot whose identifier contains it as a
/// whole part, after the start, a `/` or a space and before the end or a space: a file name
/// (`s03.vtu`), a path, a `.frd` file (all its increments) or one increment (`step time 0.5`).
/// Every name must match, and one snapshot at least must remain.
pub fn held_out_by_name(ids: &[String], names: &[String]) -> Result<Vec<bool>, ExtractError> {
    let matches = |id: &str, name: &str| {
        id.match_indices(name).any(|(at, _)| {
            let (head, tail) = (&id[..at], &id[at + name.len()..]);
            (head.is_empty() || head.ends_with(['/', ' ']))
                && (tail.is_empty() || tail.starts_with(' '))
        })
    };
    let mut holdout = vec![false; ids.len()];
    for name in names {
        let mut found = false;
        for (h, id) in holdout.iter_mut().zip(ids) {
            if matches(id, name) {
                *h = true;
                found = true;
            }
        }
        if !found {
            return Err(option(
                "--holdout-snapshots",
                format!("no snapshot is named `{name}` (the first is `{}`)", ids[0]),
            ));
        }
    }
    if holdout.iter().all(|&h| h) {
        return Err(option(
            "--holdout-snapshots",
            "every snapshot would be held out; keep one for the fit",
        ));
    }
    Ok(holdout)
}

/// Runs the extraction.
pub fn extract(o: &ExtractOptions) -> Result<ModesBundle, ExtractError> {
    if !(0.0..1.0).contains(&o.holdout) {
        return Err(option(
            "--holdout",
            format!("a fraction in [0, 1), got {}", o.holdout),
        ));
    }
    let Inputs {
        mesh,
        snapshots: Snapshots {
            ids,
            matrix: mut all,
        },
        deck,
    } = read_inputs(o)?;
    let material = material(o, deck.as_ref())?;
    let n = mesh.nodes.nrows();
    let s = ids.len();
    let holdout = if o.holdout_snapshots.is_empty() {
        // A fraction: evenly spaced, never the first or the last.
        let held = (o.holdout * s as f64).round() as usize;
        let mut holdout = vec![false; s];
        for k in 1..=held {
            // The k-th of `held` points spaced evenly strictly inside (0, s - 1).
            let i = (k as f64 * (s - 1) as f64 / (held + 1) as f64).round() as usize;
            if i > 0 && i + 1 < s {
                holdout[i] = true;
            }
        }
        holdout
    } else if o.holdout > 0.0 {
        return Err(option(
            "--holdout-snapshots",
            "give either it or --holdout, not both",
        ));
    } else {
        held_out_by_name(&ids, &o.holdout_snapshots)?
    };
    // Training columns first, held-out ones last, by swapping columns in place: the training
    // and held-out matrices are views of the one snapshot matrix. `order[j]` is the snapshot
    // (input order) now in column `j`.
    let order: Vec<usize> = (0..s)
        .filter(|&i| !holdout[i])
        .chain((0..s).filter(|&i| holdout[i]))
        .collect();
    let mut column_of: Vec<usize> = (0..s).collect();
    let mut in_column: Vec<usize> = (0..s).collect();
    for (j, &i) in order.iter().enumerate() {
        let from = column_of[i];
        if from != j {
            faer::perm::swap_cols_idx(all.as_mut(), j, from);
            let displaced = in_column[j];
            (in_column[j], in_column[from]) = (i, displaced);
            (column_of[i], column_of[displaced]) = (j, from);
        }
    }
    let trained = s - order.iter().filter(|&&i| holdout[i]).count();
    let u = all.as_ref().subcols(0, trained);
    let test = all.as_ref().subcols(trained, s - trained);

    let (mut modes, construction) = match &o.method {
        Method::Svd(keep) => {
            let (modes, singular_values) = svd_modes(u, *keep)?;
            let truncation = match keep {
                Keep::Count(k) => Truncation::Count { modes: *k },
                Keep::Energy(f) => Truncation::Energy { fraction: *f },
            };
            (
                modes,
                ModeConstruction::Svd {
                    truncation,
                    singular_values,
                },
            )
        }
        Method::Single => {
            let j = largest_snapshot(u);
            (
                single_mode(u, j),
                ModeConstruction::Single {
                    snapshot: ids[order[j]].clone(),
                },
            )
        }
        Method::Difference(tolerance) => (
            difference_modes(u, *tolerance)?,
            ModeConstruction::Difference {
                tolerance: *tolerance,
            },
        ),
    };
    normalize(&mut modes, &o.normalization, deck.as_ref(), n)?;
    let as_array =
        |m: &Mat<f64>| Array3::from_shape_fn((m.ncols(), n, 3), |(a, k, c)| m[(3 * k + c, a)]);
    let (mut mass, mut stiffness) = modal_matrices(&mesh, &as_array(&modes), &material)?;
    if o.normalization == Normalization::Mass {
        let scales: Vec<f64> = (0..modes.ncols())
            .map(|a| 1.0 / mass[[a, a]].sqrt())
            .collect();
        for (a, sa) in scales.iter().enumerate() {
            for i in 0..3 * n {
                modes[(i, a)] *= sa;
            }
            for b in 0..modes.ncols() {
                mass[[a, b]] *= sa * scales[b];
                stiffness[[a, b]] *= sa * scales[b];
            }
        }
    }
    if o.energy_orthogonalize {
        let (rotated, m, k) =
            energy_orthogonalize(modes.as_ref(), &to_dmatrix(&mass), &to_dmatrix(&stiffness))?;
        modes = rotated;
        mass = to_array(&m);
        stiffness = to_array(&k);
    }
    // With one mode normalized on a control displacement, eps is that displacement by
    // definition (PHYSICS.md section 7): each snapshot's coordinate is its control value.
    // Otherwise, least squares.
    let coords = match (&o.normalization, modes.ncols()) {
        (
            Normalization::Control {
                node_set,
                direction,
            },
            1,
        ) => {
            let d = deck
                .as_ref()
                .expect("control normalization checked the deck");
            let members = control_nodes(d, node_set)?;
            Mat::from_fn(s, 1, |i, _| {
                members
                    .iter()
                    .map(|&k| {
                        (0..3)
                            .map(|c| all[(3 * k + c, i)] * direction[c])
                            .sum::<f64>()
                    })
                    .sum::<f64>()
                    / members.len() as f64
            })
        }
        _ => generalized_coordinates(modes.as_ref(), all.as_ref()),
    };
    let train_error = reconstruction(&modes, u);
    let holdout_error = (trained < s).then(|| reconstruction(&modes, test));
    // Back to input order.
    let coords = Mat::from_fn(s, coords.ncols(), |i, a| coords[(column_of[i], a)]);

    // Internal-force fits and the strain-energy check, from the per-snapshot scalars.
    let mut internal_force = InternalForce::Linear;
    let mut fit = None;
    let (mut train_energy_error, mut holdout_energy_error) = (None, None);
    if let Some(path) = &o.scalars {
        let scalars = read_scalars(path, s)?;
        // Modal strain energy 1/2 c^T K c of each snapshot against the FEM's.
        if let Some(pe) = &scalars.strain_energy {
            let modal: Vec<f64> = (0..s)
                .map(|i| {
                    let a = coords.ncols();
                    let mut e = 0.0;
                    for p in 0..a {
                        for q in 0..a {
                            e += 0.5 * coords[(i, p)] * stiffness[[p, q]] * coords[(i, q)];
                        }
                    }
                    e
                })
                .collect();
            let error = |held: bool| {
                let idx: Vec<usize> = (0..s).filter(|&i| holdout[i] == held).collect();
                let scale = idx
                    .iter()
                    .map(|&i| pe[i].abs())
                    .fold(0.0, f64::max)
                    .max(f64::MIN_POSITIVE);
                (!idx.is_empty()).then(|| {
                    idx.iter()
                        .map(|&i| (modal[i] - pe[i]).abs())
                        .fold(0.0, f64::max)
                        / scale
                })
            };
            train_energy_error = error(false);
            holdout_energy_error = error(true);
        }
        let train_idx: Vec<usize> = (0..s).filter(|&i| !holdout[i]).collect();
        let pick = |v: &Vec<f64>| train_idx.iter().map(|&i| v[i]).collect::<Vec<f64>>();
        let walls: Vec<(Vec<f64>, Vec<f64>)> = scalars
            .boundaries
            .iter()
            .map(|(_, r, d)| (pick(r), pick(d)))
            .collect();
        if modes.ncols() == 1 {
            let eps: Vec<f64> = train_idx.iter().map(|&i| coords[(i, 0)]).collect();
            let by_energy = match &scalars.strain_energy {
                Some(pe) => Some(energy_fit(&eps, &pick(pe)).map_err(|m| option("--scalars", m))?),
                None => None,
            };
            let by_force = if walls.is_empty() {
                None
            } else {
                let forces =
                    generalized_forces(&eps, &walls).map_err(|m| option("--scalars", m))?;
                Some(force_fit(&eps, &forces).map_err(|m| option("--scalars", m))?)
            };
            let table = by_force
                .clone()
                .or_else(|| by_energy.clone())
                .expect("scalars give one of them");
            fit = Some(FitReport {
                energy_vs_force: match (&by_force, &by_energy) {
                    (Some(f), Some(e)) => Some(disagreement(f, e)),
                    _ => None,
                },
                slope_over_stiffness: secant_ratio(
                    &table.eps.iter().map(|&e| vec![e]).collect::<Vec<_>>(),
                    &table.force.iter().map(|&f| vec![f]).collect::<Vec<_>>(),
                    &stiffness,
                ),
            });
            internal_force = InternalForce::Table {
                interpolation: TableInterpolation::MonotoneCubic,
                table,
            };
        } else {
            if !(2..=6).contains(&o.degree) {
                return Err(option("--degree", format!("2 to 6, got {}", o.degree)));
            }
            let eps: Vec<Vec<f64>> = train_idx
                .iter()
                .map(|&i| (0..modes.ncols()).map(|a| coords[(i, a)]).collect())
                .collect();
            let fit_error = |m: String| option("--scalars", m);
            let by_energy = match &scalars.strain_energy {
                Some(pe) => {
                    Some(polynomial_energy_fit(&eps, &pick(pe), o.degree).map_err(fit_error)?)
                }
                None => None,
            };
            let by_force = if walls.is_empty() {
                None
            } else {
                let forces = linear_generalized_forces(&eps, &walls).map_err(fit_error)?;
                Some(polynomial_force_fit(&eps, &forces, o.degree).map_err(fit_error)?)
            };
            let law = by_force
                .clone()
                .or_else(|| by_energy.clone())
                .expect("scalars give one of them");
            fit = Some(FitReport {
                energy_vs_force: match (&by_force, &by_energy) {
                    (Some(f), Some(e)) => Some(polynomial_disagreement(&eps, f, e)),
                    _ => None,
                },
                slope_over_stiffness: secant_ratio(
                    &eps,
                    &eps.iter().map(|e| law.force(e)).collect::<Vec<_>>(),
                    &stiffness,
                ),
            });
            internal_force = InternalForce::Polynomial(law);
        }
    }

    let mut sources = o
        .snapshots
        .iter()
        .map(|p| checksum(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = &o.scalars {
        sources.push(checksum(path)?);
    }
    if let Some(deck) = &o.mesh {
        sources.insert(0, checksum(deck)?);
    }
    Ok(ModesBundle {
        info: ModesInfo {
            units: o.units.clone(),
            material: Material {
                youngs_modulus: material.youngs_modulus,
                poisson_ratio: material.poisson_ratio,
                density: material.density,
            },
            sources,
            construction,
            normalization: o.normalization.clone(),
            energy_orthogonalized: o.energy_orthogonalize,
            snapshots: ids
                .into_iter()
                .zip(&holdout)
                .map(|(id, &h)| SnapshotInfo { id, holdout: h })
                .collect(),
            reconstruction: Reconstruction {
                train: ReconstructionError {
                    displacement: train_error,
                    strain_energy: train_energy_error,
                },
                holdout: holdout_error.map(|e| ReconstructionError {
                    displacement: e,
                    strain_energy: holdout_energy_error,
                }),
            },
            fit,
            mirror_planes: String::new(),
        },
        phi: as_array(&modes),
        mesh,
        mass,
        stiffness,
        coords: Array2::from_shape_fn((coords.nrows(), coords.ncols()), |(i, j)| coords[(i, j)]),
        internal_force,
    })
}

/// The one-line summary of an extraction.
pub fn summary(name: &str, b: &ModesBundle) -> String {
    let r = &b.info.reconstruction;
    let holdout = r.holdout.as_ref().map_or("none held out".to_string(), |h| {
        format!("held-out error {:.3e}", h.displacement)
    });
    format!(
        "{name}: {} modes from {} snapshots on {} nodes; reconstruction error {:.3e}, {holdout}; K diagonal {:?}",
        b.mode_count(),
        b.info.snapshots.len(),
        b.mesh.nodes.nrows(),
        r.train.displacement,
        (0..b.mode_count())
            .map(|a| b.stiffness[[a, a]])
            .collect::<Vec<_>>()
    )
}
