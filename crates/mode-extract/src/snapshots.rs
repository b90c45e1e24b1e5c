//! Snapshots: the displacements of the grain's FEM part over the run, as one matrix, from any
//! result format the `fem` crate reads; and a probe's value (a node set's mean displacement along
//! a direction) in each snapshot. Every error names its file.
//!
//! Results go to mesh nodes by node label, so a result file may cover more nodes than the grain
//! (the plates of the FEM model) or only some (CalculiX `*NODE FILE, NSET=...`): only the
//! grain's nodes, and the probe's, need values.
//!
//! - CalculiX `.frd`: every `DISP` block is a snapshot; the grain is the deck's element set
//!   (`--mesh`, `--elset`), or else every solid element of the file.
//! - Abaqus reports `.rpt` or CSV tables, one per snapshot: the nodes are the deck's.
//! - VTK `.vtu`/`.vtk` files, or a `.pvd` listing them: the points carry no labels. Without a
//!   deck, the file's mesh is the grain. With one, the deck's elements are found among the cells
//!   ([`fem::match_points`]), so an element set chooses the grain in VTK files converted from
//!   the whole model (ccx2paraview's, which hold the plates too).

use std::path::{Path, PathBuf};

use faer::{ColMut, Mat};
use fem::{Deck, InputError, NodalValues, Part};
use rayon::prelude::*;

/// Snapshots as one matrix (`3 n x S`): column `j` is snapshot `ids[j]`, row `3 i + c` the
/// component `c` of node `i`'s displacement. Readers of large data fill it column by column, so
/// that no second copy of the displacements is ever held.
#[derive(Debug, Clone)]
pub struct Snapshots {
    /// Identifier of each column (file, and increment where a file holds several).
    pub ids: Vec<String>,
    /// The displacements, one snapshot per column.
    pub matrix: Mat<f64>,
}

/// A node set of the deck whose mean displacement along `direction` each snapshot reports.
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    /// The set's name (for messages).
    pub name: &'a str,
    /// Its node labels.
    pub labels: &'a [i64],
    /// The unit direction.
    pub direction: [f64; 3],
}

impl Probe<'_> {
    /// The mean of `u . direction` over the set's values.
    fn value(&self, u: &[[f64; 3]]) -> f64 {
        let d = self.direction;
        u.iter()
            .map(|v| v[0] * d[0] + v[1] * d[1] + v[2] * d[2])
            .sum::<f64>()
            / u.len() as f64
    }

    fn missing(&self, file: &Path, missing: &[i64]) -> InputError {
        InputError::file(
            file,
            format!(
                "node set `{}` has no results at {} of its {} nodes ({}): tie eps to a node set that has results (--normalize control=SET:DX,DY,DZ), or to the loaded boundary's displacement in the scalars file (--normalize boundary=NAME --scalars FILE)",
                self.name,
                missing.len(),
                self.labels.len(),
                some_labels(missing)
            ),
        )
    }
}

/// What the snapshot files give.
#[derive(Debug, Clone)]
pub struct Read {
    /// The grain's mesh and node labels.
    pub part: Part,
    /// Its displacements.
    pub snapshots: Snapshots,
    /// The probe's value in each snapshot, when one was given.
    pub probe: Option<Vec<f64>>,
}

/// A few labels for a message.
fn some_labels(labels: &[i64]) -> String {
    let shown: Vec<String> = labels.iter().take(5).map(i64::to_string).collect();
    let more = if labels.len() > 5 { ", ..." } else { "" };
    format!("node {}{more}", shown.join(", "))
}

/// Reads the snapshot files, all of one kind (see the module docs).
pub fn read(
    files: &[PathBuf],
    deck: Option<&Deck>,
    element_set: Option<&str>,
    field: &str,
    probe: Option<Probe<'_>>,
) -> Result<Read, InputError> {
    let first = files
        .first()
        .ok_or_else(|| InputError::file(Path::new("--snapshots"), "no snapshot files"))?;
    let is = |ext: &[&str]| files.iter().all(|p| ext.contains(&fem::kind(p).as_str()));
    if is(&["frd"]) {
        let mut results = Vec::new();
        let mut own: Option<Part> = None;
        for f in files {
            let frd = fem::read_frd(f)?;
            if deck.is_none() && own.as_ref().is_some_and(|p| *p != frd.part) {
                return Err(InputError::file(
                    f,
                    "its mesh differs from the first .frd's (one mesh for all snapshots)",
                ));
            }
            own.get_or_insert(frd.part);
            results.extend(frd.displacements);
        }
        let part = match deck {
            Some(d) => d.part(element_set)?,
            None => own.expect("one file at least"),
        };
        return by_label(part, results, deck.is_some(), probe);
    }
    if is(&["rpt", "csv"]) {
        let d = deck.ok_or_else(|| {
            InputError::file(
                first,
                "report and CSV tables need the deck (--mesh) whose nodes they list",
            )
        })?;
        let tables = files
            .iter()
            .map(|f| fem::read_nodal_table(f))
            .collect::<Result<Vec<_>, _>>()?;
        return by_label(d.part(element_set)?, tables, true, probe);
    }
    if is(&["vtu", "vtk", "pvd"]) {
        return read_vtk(files, deck, element_set, field, probe);
    }
    Err(InputError::file(
        first,
        "--snapshots: all files of one kind: .frd, or .vtu/.vtk/.pvd, or .rpt/.csv",
    ))
}

/// Snapshots from results keyed by node label.
fn by_label(
    part: Part,
    results: Vec<NodalValues>,
    with_deck: bool,
    probe: Option<Probe<'_>>,
) -> Result<Read, InputError> {
    let n = part.node_labels.len();
    let mut matrix = Mat::zeros(3 * n, results.len());
    let mut values = Vec::new();
    for (j, r) in results.iter().enumerate() {
        let u = r.at(&part.node_labels).map_err(|missing| {
            let (whose, advice) = if with_deck {
                (
                    "the grain's",
                    "the results must cover the grain's nodes (*NODE FILE for a node set that holds them)",
                )
            } else {
                (
                    "the file's",
                    "give the deck (--mesh) and the grain's element set (--elset), or write results for every node",
                )
            };
            let file = r.file.display().to_string();
            let which = match r.id.strip_prefix(&file).map(str::trim) {
                Some("") | None => "it".to_string(),
                Some(increment) => increment.to_string(),
            };
            InputError::file(
                &r.file,
                format!(
                    "{which} has no displacement at {} of {whose} {n} nodes ({}): {advice}",
                    missing.len(),
                    some_labels(&missing)
                ),
            )
        })?;
        fill_column(matrix.as_mut().col_mut(j), &u, None);
        if let Some(p) = &probe {
            let at = r.at(p.labels).map_err(|m| p.missing(&r.file, &m))?;
            values.push(p.value(&at));
        }
    }
    Ok(Read {
        part,
        snapshots: Snapshots {
            ids: results.into_iter().map(|r| r.id).collect(),
            matrix,
        },
        probe: probe.map(|_| values),
    })
}

/// Fills a snapshot column from point values: all of them in order, or the listed points.
fn fill_column(mut col: ColMut<'_, f64>, u: &[[f64; 3]], rows: Option<&[usize]>) {
    let n = rows.map_or(u.len(), <[usize]>::len);
    for i in 0..n {
        let v = u[rows.map_or(i, |r| r[i])];
        for c in 0..3 {
            col[3 * i + c] = v[c];
        }
    }
}

/// VTK snapshots: each `.vtu`/`.vtk` file, or every file of a `.pvd`, with its point-data vector
/// `field`. Every file must have the points of the first: of the files after the first, only the
/// points (to check that) and the field are read ([`fem::read_vtu_points_field`]), in parallel
/// (rayon), each straight into its column; the first error in file order is reported.
fn read_vtk(
    paths: &[PathBuf],
    deck: Option<&Deck>,
    element_set: Option<&str>,
    field: &str,
    probe: Option<Probe<'_>>,
) -> Result<Read, InputError> {
    let mut files = Vec::new();
    for p in paths {
        if fem::kind(p) == "pvd" {
            let entries =
                grain::vtk::read_pvd(p).map_err(|e| InputError::file(p, e.to_string()))?;
            let dir = p.parent().unwrap_or(Path::new("."));
            files.extend(entries.into_iter().map(|e| dir.join(e.file)));
        } else {
            files.push(p.clone());
        }
    }
    let first = files
        .first()
        .ok_or_else(|| InputError::file(&paths[0], "lists no snapshot files"))?;
    let (mesh, u) = fem::read_vtu_field(first, field)?;
    // Which point each grain node (and each probe node) is.
    let (part, rows, probe_rows) = match deck {
        None => {
            if let Some(p) = &probe {
                return Err(InputError::file(
                    first,
                    format!(
                        "node set `{}`: VTK points have no labels; give the deck (--mesh) the results came from",
                        p.name
                    ),
                ));
            }
            let n = mesh.nodes.nrows();
            let part = Part {
                mesh: mesh.clone(),
                node_labels: (1..=n as i64).collect(),
            };
            (part, None, None)
        }
        Some(d) => {
            let solids = d.solids();
            let points = fem::match_points(&solids, &mesh);
            let index = solids.index();
            let locate = |labels: &[i64]| -> Result<Vec<usize>, Vec<i64>> {
                let missing: Vec<i64> = labels
                    .iter()
                    .copied()
                    .filter(|l| index.get(l).and_then(|&k| points[k]).is_none())
                    .collect();
                if missing.is_empty() {
                    Ok(labels
                        .iter()
                        .map(|l| points[index[l]].expect("checked"))
                        .collect())
                } else {
                    Err(missing)
                }
            };
            let part = d.part(element_set)?;
            let rows = locate(&part.node_labels).map_err(|missing| {
                InputError::file(
                    first,
                    format!(
                        "{} of the grain's {} nodes ({}) are at no point of this file's cells of the same elements: are these VTK files converted from the deck's run?",
                        missing.len(),
                        part.node_labels.len(),
                        some_labels(&missing)
                    ),
                )
            })?;
            let probe_rows = match &probe {
                Some(p) => Some(locate(p.labels).map_err(|m| p.missing(first, &m))?),
                None => None,
            };
            (part, Some(rows), probe_rows)
        }
    };
    let n = part.node_labels.len();
    let mut matrix = Mat::zeros(3 * n, files.len());
    let probe_value = |u: &[[f64; 3]]| match (&probe, &probe_rows) {
        (Some(p), Some(r)) => p.value(&r.iter().map(|&k| u[k]).collect::<Vec<_>>()),
        _ => 0.0,
    };
    fill_column(matrix.as_mut().col_mut(0), &u, rows.as_deref());
    let first_probe = probe_value(&u);
    drop(u);
    let results: Vec<Result<f64, InputError>> = matrix
        .as_mut()
        .subcols_mut(1, files.len() - 1)
        .par_col_iter_mut()
        .zip(files[1..].par_iter())
        .map(|(col, f)| {
            let (points, u) = fem::read_vtu_points_field(f, field)?;
            if !points.iter().eq(mesh.nodes.iter()) {
                return Err(InputError::file(
                    f,
                    "its points differ from the first snapshot's (one mesh for all snapshots)",
                ));
            }
            fill_column(col, &u, rows.as_deref());
            Ok(probe_value(&u))
        })
        .collect();
    let mut values = vec![first_probe];
    for r in results {
        values.push(r?);
    }
    Ok(Read {
        part,
        snapshots: Snapshots {
            ids: files.iter().map(|f| f.display().to_string()).collect(),
            matrix,
        },
        probe: probe.map(|_| values),
    })
}
