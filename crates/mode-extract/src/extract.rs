//! The whole extraction: snapshots in, a modes bundle out.

use std::path::{Path, PathBuf};

use faer::{Mat, MatRef};
use grain::{
    FitDifference, FitReport, InternalForce, Material, ModeConstruction, ModesBundle, ModesInfo,
    Normalization, Reconstruction, ReconstructionError, Snapshot as SnapshotInfo, SnapshotPath,
    SourceFile, TableInterpolation, Truncation,
};
use nalgebra::DMatrix;
use ndarray::{Array2, Array3};
use sha2::{Digest, Sha256};

use crate::fit::{
    disagreement, energy_fit, force_fit, generalized_forces, linear_generalized_forces,
    polynomial_disagreement, polynomial_energy_fit, polynomial_force_fit, secant_ratio, turns_back,
};
use crate::modal::{Elastic, modal_matrices};
use crate::modes::{
    Keep, difference_modes, energy_orthogonalize, generalized_coordinates, largest_snapshot,
    single_mode, snapshot_combination, svd_modes,
};
use crate::snapshots::{Probe, Read, Snapshots};

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Reading an input (a snapshot file, a deck, a scalars table) failed.
    #[error(transparent)]
    Input(#[from] fem::InputError),
    /// Building modes from the snapshots failed.
    #[error("{snapshots}: {error}")]
    Modes {
        /// The snapshot files, as `sources` names them.
        snapshots: String,
        /// What failed.
        error: crate::modes::ModeError,
    },
    /// Integrating M and K over the mesh failed.
    #[error("{}: {error}", mesh.display())]
    Modal {
        /// The file the mesh came from (the deck, or the first snapshot).
        mesh: PathBuf,
        /// What failed.
        error: crate::modal::ModalError,
    },
    /// The free modes or the residual flexibility of a mesh could not be computed.
    #[error("{}: {error}", mesh.display())]
    Free {
        /// The deck of the mesh.
        mesh: PathBuf,
        /// What failed.
        error: crate::flexibility::FlexibilityError,
    },
    /// Fitting the internal force to the scalars failed.
    #[error("--scalars: {0}")]
    Fit(#[from] crate::fit::FitError),
    /// An option is missing or out of range.
    #[error("{option}: {message}")]
    Option {
        /// The command-line option.
        option: String,
        /// What was expected.
        message: String,
    },
}

/// The snapshot files of `o` for a message: the file, or the first and how many more.
fn sources(o: &ExtractOptions) -> String {
    match o.snapshots.as_slice() {
        [] => "no snapshot".into(),
        [one] => one.display().to_string(),
        [first, rest @ ..] => format!("{} (and {} more snapshots)", first.display(), rest.len()),
    }
}

/// Refuses a mode without stiffness: one whose `K_aa / M_aa` (its frequency squared) is below
/// 1e-10 of `E / (rho L^2)`, `L` the mesh's diagonal. The softest elastic mode of a grain is
/// some `E / (rho L^2)` (a slender beam's bending: that times its slenderness squared, 1e-6 for
/// a thickness of 1e-3 L); a rigid motion that the snapshots carry (a grain pushed along) has
/// round-off, 1e-16 of it.
fn rigid_modes(
    mesh: &grain::FemMesh,
    mass: &Array2<f64>,
    stiffness: &Array2<f64>,
    material: &Elastic,
) -> Result<(), ExtractError> {
    let nodes = &mesh.nodes;
    let size = (0..3)
        .map(|c| {
            let column = nodes.column(c);
            let lo = column.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = column.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (hi - lo).powi(2)
        })
        .sum::<f64>()
        .sqrt();
    let scale = material.youngs_modulus / (material.density * size * size);
    for a in 0..mass.nrows() {
        let omega2 = stiffness[[a, a]] / mass[[a, a]];
        // NaN (a mode of zero mass) fails too.
        if omega2.partial_cmp(&(1e-10 * scale)) != Some(std::cmp::Ordering::Greater) {
            return Err(option(
                "--snapshots",
                format!(
                    "mode {a} has no stiffness (K / M = {omega2:e}, against E / (rho L^2) = {scale:e}): a rigid motion of the grain, not a deformation (the snapshots move it without straining it)"
                ),
            ));
        }
    }
    Ok(())
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
    /// What a node or element label the deck defines twice gets (refused by default).
    pub redefinition: fem::Redefinition,
    /// The displacement field name in VTK files.
    pub field: String,
    /// Mode construction.
    pub method: Method,
    /// Mode scaling.
    pub normalization: Normalization,
    /// Rotate the modes to diagonal M and K.
    pub energy_orthogonalize: bool,
    /// Material, when the deck does not give it (overrides the deck's).
    pub material: MaterialOptions,
    /// Fraction of snapshots held out of the fit (evenly spaced), for the out-of-sample check.
    pub holdout: f64,
    /// Snapshots held out by name instead (see [`held_out_by_name`]); not with `holdout`.
    pub holdout_snapshots: Vec<String>,
    /// Free-text units.
    pub units: String,
    /// Per-snapshot strain energies and reaction forces, for the internal-force fits.
    pub scalars: Option<PathBuf>,
    /// How the scalars' rows are paired with the snapshots ([`fem::Pairing`]: by their
    /// `snapshot` column, the default, or in order).
    pub scalars_pairing: fem::Pairing,
    /// Total degree of the fitted polynomial energy when there are several modes (2 to 6).
    pub degree: u32,
    /// One mode: no path through the snapshots, the mode scales linearly (see
    /// `snapshot_path`).
    pub linear: bool,
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
            redefinition: fem::Redefinition::Refuse,
            field: "U".into(),
            method: Method::Svd(Keep::Energy(0.999)),
            normalization: Normalization::UnitMax,
            energy_orthogonalize: false,
            material: MaterialOptions::default(),
            holdout: 0.0,
            holdout_snapshots: Vec::new(),
            units: "unspecified".into(),
            scalars: None,
            scalars_pairing: fem::Pairing::Label,
            degree: 3,
            linear: false,
        }
    }
}

/// Where a material constant came from, so that a refusal names it: an option, or a deck's
/// keyword and the line of its data.
pub(crate) enum Source {
    Option(&'static str),
    Deck {
        at: (PathBuf, usize),
        keyword: &'static str,
    },
}

impl Source {
    /// `message` about the constant `value` read from here.
    fn refuse(&self, value: f64, message: String) -> ExtractError {
        match self {
            Source::Option(flag) => option(flag, format!("{value:e} {message}")),
            Source::Deck {
                at: (path, line),
                keyword,
            } => {
                fem::InputError::line(path, *line, format!("*{keyword} {value:e} {message}")).into()
            }
        }
    }
}

/// The material given on the command line, each constant `None` unless given.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaterialOptions {
    /// `--youngs-modulus`.
    pub youngs_modulus: Option<f64>,
    /// `--poisson`.
    pub poisson_ratio: Option<f64>,
    /// `--density`.
    pub density: Option<f64>,
}

/// The material (the options', else the deck's), and where its Young's modulus and density
/// came from.
pub(crate) fn material(
    o: &MaterialOptions,
    deck: Option<&fem::Deck>,
) -> Result<(Elastic, Source, Source), ExtractError> {
    let from_deck = deck.and_then(|d| d.materials.first());
    let in_deck = |at: &Option<(PathBuf, usize)>, keyword, flag| {
        at.clone()
            .map_or(Source::Option(flag), |at| Source::Deck { at, keyword })
    };
    let (e, nu, e_source) = match (
        o.youngs_modulus,
        o.poisson_ratio,
        from_deck.and_then(|m| m.elastic.map(|(e, nu)| (e, nu, &m.elastic_at))),
    ) {
        (Some(e), Some(nu), _) => (e, nu, Source::Option("--youngs-modulus")),
        (None, None, Some((e, nu, at))) => (e, nu, in_deck(at, "Elastic", "--mesh")),
        _ => {
            return Err(option(
                "--youngs-modulus/--poisson",
                "give both (the deck has no *Elastic, or only one was given)",
            ));
        }
    };
    let (rho, rho_source) = match (
        o.density,
        from_deck.and_then(|m| m.density.map(|rho| (rho, &m.density_at))),
    ) {
        (Some(rho), _) => (rho, Source::Option("--density")),
        (None, Some((rho, at))) => (rho, in_deck(at, "Density", "--mesh")),
        (None, None) => return Err(option("--density", "give it (the deck has no *Density)")),
    };
    if !(e > 0.0 && nu > -1.0 && nu < 0.5 && rho > 0.0) {
        return Err(option(
            "--youngs-modulus/--poisson/--density",
            format!("need E > 0, -1 < nu < 0.5, rho > 0; got {e}, {nu}, {rho}"),
        ));
    }
    let material = Elastic {
        youngs_modulus: e,
        poisson_ratio: nu,
        density: rho,
    };
    Ok((material, e_source, rho_source))
}

/// Refuses a modal mass or stiffness (`quantity`, the diagonal of `matrix`) that the material
/// constant `value` took out of the normal `f64`s (issue #33: a density of 1e308 or 1e-310, or
/// such an E, was reported as "a rigid motion"), naming where the constant was given. Zero is
/// [`rigid_modes`]' to refuse.
pub(crate) fn modal_in_range(
    matrix: &Array2<f64>,
    quantity: &str,
    value: f64,
    source: &Source,
) -> Result<(), ExtractError> {
    let diagonal = matrix.diag();
    match diagonal
        .iter()
        .enumerate()
        .find(|(_, v)| **v != 0.0 && !v.is_normal())
    {
        Some((a, v)) => Err(source.refuse(
            value,
            format!(
                "makes mode {a}'s {quantity} {v:e}, {}: give the material in units that keep it normal",
                grain::derived::NOT_NORMAL
            ),
        )),
        None => Ok(()),
    }
}

pub(crate) fn checksum(path: &Path) -> Result<SourceFile, ExtractError> {
    let bytes = std::fs::read(path).map_err(|source| fem::InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let digest = Sha256::digest(&bytes);
    Ok(SourceFile {
        path: path.display().to_string(),
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// The probe of a control normalization: the deck's node set.
fn probe<'a>(
    how: &'a Normalization,
    deck: Option<&'a fem::Deck>,
) -> Result<Option<Probe<'a>>, ExtractError> {
    let Normalization::Control {
        node_set,
        direction,
    } = how
    else {
        return Ok(None);
    };
    let d = deck.ok_or_else(|| {
        option(
            "--normalize control",
            "needs --mesh (the deck with the node set)",
        )
    })?;
    let labels = d
        .node_sets
        .get(&node_set.to_ascii_uppercase())
        .ok_or_else(|| {
            option(
                "--normalize control",
                format!(
                    "no node set `{node_set}` in the deck (sets: {})",
                    d.node_sets.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
    Ok(Some(Probe {
        name: node_set,
        labels,
        direction: *direction,
    }))
}

/// Scales each mode column (docs/physics.md section 2): to a unit largest nodal displacement, a unit
/// norm, unit modal mass (done once `M` is known), or a unit control value. `control` is the
/// control's value in each training snapshot (the columns of `train`); a mode's value is then
/// `d^T C` with `C` the combination of snapshots that makes it ([`snapshot_combination`]), so
/// the control may lie outside the grain (a plate's nodes, a boundary of the scalars file).
/// Without a control, each mode's sign makes the training snapshot farthest along it positive:
/// loading increases eps.
fn normalize(
    modes: &mut Mat<f64>,
    how: &Normalization,
    control: Option<&[f64]>,
    train: MatRef<'_, f64>,
) -> Result<(), ExtractError> {
    let n = modes.nrows() / 3;
    let scales: Vec<f64> = match control {
        Some(d) => {
            let c = snapshot_combination(modes.as_ref(), train);
            let largest = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            (0..modes.ncols())
                .map(|j| {
                    let value: f64 = (0..d.len()).map(|i| d[i] * c[(i, j)]).sum();
                    let size: f64 = (0..d.len()).map(|i| c[(i, j)].abs()).sum();
                    if value.abs() <= 1e-9 * largest * size || largest == 0.0 {
                        return Err(option(
                            "--normalize",
                            format!("mode {j} does not move the control ({how})"),
                        ));
                    }
                    Ok(1.0 / value)
                })
                .collect::<Result<_, _>>()?
        }
        None => {
            let coords = generalized_coordinates(modes.as_ref(), train);
            (0..modes.ncols())
                .map(|j| {
                    let col = modes.col(j);
                    let size = match how {
                        Normalization::UnitMax => (0..n)
                            .map(|k| {
                                (col[3 * k].powi(2)
                                    + col[3 * k + 1].powi(2)
                                    + col[3 * k + 2].powi(2))
                                .sqrt()
                            })
                            .fold(0.0, f64::max),
                        Normalization::UnitL2 => col.norm_l2(),
                        _ => 1.0,
                    };
                    let farthest = (0..coords.nrows())
                        .map(|i| coords[(i, j)])
                        .fold(0.0f64, |m, x| if x.abs() > m.abs() { x } else { m });
                    if farthest < 0.0 {
                        -1.0 / size
                    } else {
                        1.0 / size
                    }
                })
                .collect()
        }
    };
    for (j, scale) in scales.into_iter().enumerate() {
        for i in 0..modes.nrows() {
            modes[(i, j)] *= scale;
        }
    }
    Ok(())
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

/// Snapshots held out by name ([`fem::names_snapshot`]: a file name or stem, a path, a `.frd`
/// file for all its increments, one increment `increment 3`, `3` or `step time 0.5`). Every name
/// must match, and one snapshot at least must remain.
pub fn held_out_by_name(ids: &[String], names: &[String]) -> Result<Vec<bool>, ExtractError> {
    let matches = fem::names_snapshot;
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

/// The fit report: the two fits' difference at each fitted snapshot (`snapshots[k]` is the
/// input index of `eps[k]`), when both fits were made.
fn fit_report(
    snapshots: &[usize],
    ids: &[String],
    eps: &[Vec<f64>],
    differences: Vec<f64>,
    slope_over_stiffness: f64,
) -> FitReport {
    FitReport {
        energy_vs_force: (!differences.is_empty())
            .then(|| differences.iter().fold(0.0f64, |m, d| m.max(d.abs()))),
        slope_over_stiffness,
        per_snapshot: differences
            .into_iter()
            .enumerate()
            .map(|(k, difference)| FitDifference {
                snapshot: ids[snapshots[k]].clone(),
                eps: eps[k].clone(),
                difference,
            })
            .collect(),
    }
}

/// Runs the extraction.
pub fn extract(o: &ExtractOptions) -> Result<ModesBundle, ExtractError> {
    if !(0.0..1.0).contains(&o.holdout) {
        return Err(option(
            "--holdout",
            format!("a fraction in [0, 1), got {}", o.holdout),
        ));
    }
    let deck = (o.mesh.as_ref())
        .map(|p| fem::Deck::read_with(p, o.redefinition))
        .transpose()?;
    let Read {
        part,
        snapshots: Snapshots {
            ids,
            matrix: mut all,
        },
        probe: probe_values,
    } = crate::snapshots::read(
        &o.snapshots,
        deck.as_ref(),
        o.element_set.as_deref(),
        &o.field,
        probe(&o.normalization, deck.as_ref())?,
    )?;
    let mesh = part.mesh;
    let (material, e_source, rho_source) = material(&o.material, deck.as_ref())?;
    let modes_error = |error| ExtractError::Modes {
        snapshots: sources(o),
        error,
    };
    let n = mesh.nodes.nrows();
    let s = ids.len();
    let scalars = o
        .scalars
        .as_ref()
        .map(|p| fem::read_scalars(p, &ids, o.scalars_pairing))
        .transpose()?;
    // The control's value in each snapshot (input order), when eps is tied to one.
    let control: Option<Vec<f64>> = match &o.normalization {
        Normalization::Control { .. } => probe_values,
        Normalization::Boundary { name } => {
            let sc = scalars.as_ref().ok_or_else(|| {
                option(
                    "--normalize boundary",
                    "needs --scalars (the file with the boundary's displacement)",
                )
            })?;
            let b = sc
                .boundaries
                .iter()
                .find(|b| b.0 == name.to_ascii_lowercase());
            Some(
                b.ok_or_else(|| {
                    option(
                        "--normalize boundary",
                        format!(
                            "no column `displacement_{name}` in the scalars (boundaries: {})",
                            sc.boundaries
                                .iter()
                                .map(|b| b.0.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })?
                .2
                .clone(),
            )
        }
        _ => None,
    };
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
            let (modes, singular_values) = svd_modes(u, *keep).map_err(modes_error)?;
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
            difference_modes(u, *tolerance).map_err(modes_error)?,
            ModeConstruction::Difference {
                tolerance: *tolerance,
            },
        ),
    };
    let control_train: Option<Vec<f64>> = control
        .as_ref()
        .map(|d| order[..trained].iter().map(|&i| d[i]).collect());
    normalize(&mut modes, &o.normalization, control_train.as_deref(), u)?;
    let as_array =
        |m: &Mat<f64>| Array3::from_shape_fn((m.ncols(), n, 3), |(a, k, c)| m[(3 * k + c, a)]);
    let (mut mass, mut stiffness) =
        modal_matrices(&mesh, &as_array(&modes), &material).map_err(|error| {
            ExtractError::Modal {
                mesh: o
                    .mesh
                    .clone()
                    .or_else(|| o.snapshots.first().cloned())
                    .unwrap_or_default(),
                error,
            }
        })?;
    modal_in_range(&mass, "modal mass", material.density, &rho_source)?;
    modal_in_range(
        &stiffness,
        "modal stiffness",
        material.youngs_modulus,
        &e_source,
    )?;
    rigid_modes(&mesh, &mass, &stiffness, &material)?;
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
            energy_orthogonalize(modes.as_ref(), &to_dmatrix(&mass), &to_dmatrix(&stiffness))
                .map_err(modes_error)?;
        modes = rotated;
        mass = to_array(&m);
        stiffness = to_array(&k);
    }
    // With one mode tied to a control, eps is the control's value by definition (the paper's
    // choice: the indenter's displacement); otherwise, least squares. In input order.
    let coords = match (&control, modes.ncols()) {
        (Some(d), 1) => Mat::from_fn(s, 1, |i, _| d[i]),
        _ => {
            let c = generalized_coordinates(modes.as_ref(), all.as_ref());
            Mat::from_fn(s, c.ncols(), |i, a| c[(column_of[i], a)])
        }
    };
    let follows_path = modes.ncols() == 1 && !o.linear && trained >= 2;
    if modes.ncols() == 1 && (follows_path || scalars.is_some()) {
        loading_in_order(
            &order[..trained],
            |i| coords[(i, 0)],
            &ids,
            scalars.is_none() && !o.linear,
        )?;
    }
    let path = if follows_path {
        let points: Vec<(usize, f64)> = order[..trained]
            .iter()
            .enumerate()
            .map(|(j, &i)| (j, coords[(i, 0)]))
            .collect();
        Some(snapshot_path(&points, u, |j| ids[order[j]].as_str())?)
    } else {
        None
    };
    let train_error = reconstruction(&modes, u);
    let holdout_error = (trained < s).then(|| reconstruction(&modes, test));

    // Internal-force fits and the strain-energy check, from the per-snapshot scalars.
    let mut internal_force = InternalForce::Linear;
    let mut fit = None;
    let (mut train_energy_error, mut holdout_energy_error) = (None, None);
    if let Some(scalars) = &scalars {
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
                Some(pe) => Some(energy_fit(&eps, &pick(pe))?),
                None => None,
            };
            // A boundary that moves back while eps grows does work of the other sign per
            // unit eps there: the virtual-work force would zigzag.
            for (name, _, d) in &scalars.boundaries {
                let d = pick(d);
                if let Some((a, b)) = turns_back(&eps, &d) {
                    let (ia, ib) = (train_idx[a], train_idx[b]);
                    return Err(option(
                        "--scalars",
                        format!(
                            "displacement_{name} turns back while eps grows: {:e} at `{}` (eps {:e}), then {:e} at `{}` (eps {:e}); its reaction's work per unit eps changes sign there and the force table would zigzag: check the column and the snapshots, or leave force_{name}/displacement_{name} out to fit from the energy",
                            d[a], ids[ia], eps[a], d[b], ids[ib], eps[b]
                        ),
                    ));
                }
            }
            let by_force = if walls.is_empty() {
                None
            } else {
                let forces = generalized_forces(&eps, &walls)?;
                Some(force_fit(&eps, &forces)?)
            };
            let table = by_force
                .clone()
                .or_else(|| by_energy.clone())
                .expect("scalars give one of them");
            let differences = match (&by_force, &by_energy) {
                (Some(f), Some(e)) => disagreement(f, e, &eps),
                _ => Vec::new(),
            };
            fit = Some(fit_report(
                &train_idx,
                &ids,
                &eps.iter().map(|&e| vec![e]).collect::<Vec<_>>(),
                differences,
                secant_ratio(
                    &table.eps.iter().map(|&e| vec![e]).collect::<Vec<_>>(),
                    &table.force.iter().map(|&f| vec![f]).collect::<Vec<_>>(),
                    &stiffness,
                ),
            ));
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
            let by_energy = match &scalars.strain_energy {
                Some(pe) => Some(polynomial_energy_fit(&eps, &pick(pe), o.degree)?),
                None => None,
            };
            let by_force = if walls.is_empty() {
                None
            } else {
                let forces = linear_generalized_forces(&eps, &walls)?;
                Some(polynomial_force_fit(&eps, &forces, o.degree)?)
            };
            let law = by_force
                .clone()
                .or_else(|| by_energy.clone())
                .expect("scalars give one of them");
            let differences = match (&by_force, &by_energy) {
                (Some(f), Some(e)) => polynomial_disagreement(&eps, f, e),
                _ => Vec::new(),
            };
            fit = Some(fit_report(
                &train_idx,
                &ids,
                &eps,
                differences,
                secant_ratio(
                    &eps,
                    &eps.iter().map(|e| law.force(e)).collect::<Vec<_>>(),
                    &stiffness,
                ),
            ));
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
            reconstruction: Some(Reconstruction {
                train: ReconstructionError {
                    displacement: train_error,
                    strain_energy: train_energy_error,
                },
                holdout: holdout_error.map(|e| ReconstructionError {
                    displacement: e,
                    strain_energy: holdout_energy_error,
                }),
            }),
            fit,
            mirror_planes: String::new(),
        },
        phi: as_array(&modes),
        mesh,
        mass,
        stiffness,
        coords: Array2::from_shape_fn((coords.nrows(), coords.ncols()), |(i, j)| coords[(i, j)]),
        internal_force,
        path,
        flexibility: None,
    })
}

/// Refuses training snapshots (`train`: input indices, in input order) whose amplitude `eps`
/// does not grow from each to the next. A one-mode bundle follows its snapshots in order of
/// amplitude (its path, its force table): sorted by amplitude, a run that loads then unloads
/// became one zigzag path (issue #33). `linear_helps` when `--linear` would need no order.
fn loading_in_order(
    train: &[usize],
    eps: impl Fn(usize) -> f64,
    ids: &[String],
    linear_helps: bool,
) -> Result<(), ExtractError> {
    let Some(&[a, b]) = train.windows(2).find(|w| eps(w[1]) <= eps(w[0])) else {
        return Ok(());
    };
    let linear = if linear_helps {
        ", or scale the mode linearly with no path (--linear)"
    } else {
        ""
    };
    Err(option(
        "--snapshots",
        format!(
            "the amplitude does not grow from `{}` (eps {:e}) to the next snapshot, `{}` (eps {:e}): a one-mode bundle follows its snapshots in order of amplitude (its path through them, its force table), so they must be one loading in the run's order, not a run that loads then unloads; give only the loading increments, in order (hold the others out of the fit by name with --holdout-snapshots){linear}",
            ids[a],
            eps(a),
            ids[b],
            eps(b)
        ),
    ))
}

/// The path of a one-mode bundle through its training snapshots (docs/physics.md section 1):
/// `points` are `(column of u, eps)`, in order of increasing amplitude ([`loading_in_order`]),
/// `name` names a column's snapshot. A snapshot at amplitude 0 with no displacement (the
/// undeformed state some codes write) is the path's origin and is left out. Refused, naming the
/// snapshot: an amplitude at or below 0 with a displacement.
fn snapshot_path<'a>(
    points: &[(usize, f64)],
    u: MatRef<'_, f64>,
    name: impl Fn(usize) -> &'a str,
) -> Result<SnapshotPath, ExtractError> {
    let points: Vec<(usize, f64)> = points
        .iter()
        .copied()
        .filter(|&(j, e)| e != 0.0 || (0..u.nrows()).any(|r| u[(r, j)] != 0.0))
        .collect();
    if let Some(&(j, e)) = points.iter().find(|p| p.1 <= 0.0) {
        return Err(option(
            "--single",
            format!(
                "snapshot `{}` has amplitude {e}; the path through the snapshots needs positive amplitudes (`--linear` scales the mode linearly instead)",
                name(j)
            ),
        ));
    }
    let n = u.nrows() / 3;
    Ok(SnapshotPath {
        amplitudes: points.iter().map(|p| p.1).collect(),
        displacement: Array3::from_shape_fn((points.len(), n, 3), |(p, k, c)| {
            u[(3 * k + c, points[p].0)]
        }),
    })
}

/// The one-line summary of an extraction.
pub fn summary(name: &str, b: &ModesBundle) -> String {
    let quality = match &b.info.reconstruction {
        Some(r) => format!(
            "from {} snapshots on {} nodes; reconstruction error {:.3e}, {}",
            b.info.snapshots.len(),
            b.mesh.nodes.nrows(),
            r.train.displacement,
            r.holdout.as_ref().map_or("none held out".to_string(), |h| {
                format!("held-out error {:.3e}", h.displacement)
            })
        ),
        None => format!("from the mesh of {} nodes", b.mesh.nodes.nrows()),
    };
    let flexibility = b.flexibility.as_ref().map_or(String::new(), |f| {
        format!(
            "; residual flexibility between {} surface nodes (patches of radius {:e})",
            f.nodes.len(),
            f.patch_radius
        )
    });
    format!(
        "{name}: {} modes {quality}; K diagonal {:?}{flexibility}",
        b.mode_count(),
        (0..b.mode_count())
            .map(|a| b.stiffness[[a, a]])
            .collect::<Vec<_>>()
    )
}

/// The fits' difference above which [`fit_warning`] speaks: 3 % of the largest force.
pub const FIT_TOLERANCE: f64 = 0.03;

/// What to tell the user when the energy and reaction-force fits of one run differ by more than
/// [`FIT_TOLERANCE`] (docs/physics.md section 7: both fits of the same FEM run must agree): at which
/// snapshots, and the likely reason for the way eps was tied.
pub fn fit_warning(fit: &FitReport, normalization: &Normalization) -> Option<String> {
    let mut worst: Vec<&FitDifference> = fit
        .per_snapshot
        .iter()
        .filter(|d| d.difference.abs() > FIT_TOLERANCE)
        .collect();
    if worst.is_empty() {
        return None;
    }
    worst.sort_by(|a, b| b.difference.abs().total_cmp(&a.difference.abs()));
    let at: Vec<String> = worst
        .iter()
        .take(4)
        .map(|d| {
            format!(
                "{} (eps {:?}: {:+.1} %)",
                d.snapshot,
                d.eps,
                100.0 * d.difference
            )
        })
        .collect();
    let why = match normalization {
        Normalization::Boundary { .. } => {
            "with eps the loaded boundary's displacement the reaction is the generalized force as it is, so the energy fit is the one in doubt: it differentiates the strain energies between snapshots (closer increments help), and it agrees only as well as the FEM run's energy balance (work of the boundaries = strain energy) holds"
        }
        _ => {
            "the reaction-force fit multiplies each reaction by the slope of its boundary's displacement against eps, estimated from the neighbouring snapshots (one-sided at the first and the last, where a noisy amplitude misleads it most); tie eps to the loaded boundary (--normalize boundary=NAME) and no slope is needed"
        }
    };
    Some(format!(
        "the energy and reaction-force fits differ by more than {} % of the largest force at {} of {} snapshots, most at {}: {why} (modes.json: info.fit.per_snapshot)",
        100.0 * FIT_TOLERANCE,
        worst.len(),
        fit.per_snapshot.len(),
        at.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(differences: &[f64]) -> FitReport {
        FitReport {
            energy_vs_force: Some(differences.iter().fold(0.0f64, |m, d| m.max(d.abs()))),
            slope_over_stiffness: 1.0,
            per_snapshot: differences
                .iter()
                .enumerate()
                .map(|(i, &difference)| FitDifference {
                    snapshot: format!("s{i}"),
                    eps: vec![i as f64],
                    difference,
                })
                .collect(),
        }
    }

    #[test]
    fn fits_that_disagree_are_reported_by_snapshot_with_a_reason() {
        assert_eq!(
            fit_warning(&report(&[0.01, -0.02, 0.029]), &Normalization::UnitMax),
            None
        );
        let w = fit_warning(&report(&[0.01, -0.05, 0.167]), &Normalization::UnitMax).unwrap();
        assert!(
            w.contains(
                "at 2 of 3 snapshots, most at s2 (eps [2.0]: +16.7 %), s1 (eps [1.0]: -5.0 %)"
            ) && w.contains("--normalize boundary=NAME"),
            "{w}"
        );
        let w = fit_warning(
            &report(&[0.04]),
            &Normalization::Boundary {
                name: "plate".into(),
            },
        )
        .unwrap();
        assert!(w.contains("the energy fit is the one in doubt"), "{w}");
    }
}
