//! Snapshot readers: nodal displacements from FEM output, each error naming its file and line.
//!
//! - VTK `.vtu` / legacy `.vtk` unstructured grids, one per snapshot, or a `.pvd` listing them:
//!   the mesh comes with the file, the displacement is a point-data vector (`U` by default);
//! - CalculiX `.frd` (ASCII): the nodes, the elements and the `DISP` block of every increment;
//! - per snapshot, a nodal table for a deck's nodes: an Abaqus/Viewer report `.rpt` (columns
//!   `Node Label`, `U.U1`, `U.U2`, `U.U3`; several blocks; wrapped rows; the Minimum/Maximum/
//!   Total footers), or a CSV with header `node,u1,u2,u3`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use faer::{ColMut, Mat};
use grain::{ElementBlock, ElementType, FemMesh};
use ndarray::Array2;
use rayon::prelude::*;

/// Why snapshots could not be read: the errors of every input file (a deck's too): the file,
/// and the line where there is one.
pub use fem::DeckError as SnapshotError;

/// One deformed state: a name and the displacement of every mesh node.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Identifier (file, and increment where a file holds several).
    pub id: String,
    /// Displacement per node, in mesh node order.
    pub displacement: Vec<[f64; 3]>,
}

/// A text file, gunzipped when its name ends in `.gz` (large FEM results are shipped compressed).
fn read_text(path: &Path) -> Result<String, SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let bytes = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
            .map_err(io)?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| SnapshotError::file(path, "not text (UTF-8)"))
}

/// The extension that tells a file's kind, looking through a trailing `.gz`.
pub fn kind(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    name.rsplit_once('.')
        .map(|(_, e)| e.to_string())
        .unwrap_or_default()
}

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

impl Snapshots {
    /// The matrix of snapshots given as per-node lists (all of `n` nodes).
    pub fn from_lists(list: Vec<Snapshot>, n: usize) -> Self {
        let mut matrix = Mat::zeros(3 * n, list.len());
        for (j, s) in list.iter().enumerate() {
            fill_column(matrix.as_mut().col_mut(j), &s.displacement);
        }
        Snapshots {
            ids: list.into_iter().map(|s| s.id).collect(),
            matrix,
        }
    }
}

fn fill_column(mut col: ColMut<'_, f64>, u: &[[f64; 3]]) {
    for (i, v) in u.iter().enumerate() {
        for c in 0..3 {
            col[3 * i + c] = v[c];
        }
    }
}

/// VTK snapshots: each `.vtu`/`.vtk` file, or every file of a `.pvd`, with its point-data vector
/// `field`. Every file must have the mesh of the first: of the files after the first, only the
/// points (to check that) and the field are read ([`fem::read_vtu_points_field`]). Those files
/// are read in parallel (rayon), each straight into its column; the first error in file order is
/// reported.
pub fn read_vtk(paths: &[PathBuf], field: &str) -> Result<(FemMesh, Snapshots), SnapshotError> {
    let mut files = Vec::new();
    for p in paths {
        if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pvd")) {
            let entries =
                grain::vtk::read_pvd(p).map_err(|e| SnapshotError::file(p, e.to_string()))?;
            let dir = p.parent().unwrap_or(Path::new("."));
            files.extend(entries.into_iter().map(|e| dir.join(e.file)));
        } else {
            files.push(p.clone());
        }
    }
    let first = files
        .first()
        .ok_or_else(|| SnapshotError::file(Path::new("."), "no snapshot files"))?;
    let (mesh, u) = fem::read_vtu_field(first, field)?;
    let mut matrix = Mat::zeros(3 * mesh.nodes.nrows(), files.len());
    fill_column(matrix.as_mut().col_mut(0), &u);
    drop(u);
    let results: Vec<Result<(), SnapshotError>> = matrix
        .as_mut()
        .subcols_mut(1, files.len() - 1)
        .par_col_iter_mut()
        .zip(files[1..].par_iter())
        .map(|(col, f)| {
            let (points, u) = fem::read_vtu_points_field(f, field)?;
            if !points.iter().eq(mesh.nodes.iter()) {
                return Err(SnapshotError::file(
                    f,
                    "its points differ from the first snapshot's (one mesh for all snapshots)",
                ));
            }
            fill_column(col, &u);
            Ok(())
        })
        .collect();
    results.into_iter().collect::<Result<(), _>>()?;
    let ids = files.iter().map(|f| f.display().to_string()).collect();
    Ok((mesh, Snapshots { ids, matrix }))
}

/// A CalculiX `.frd` result file: its mesh and one snapshot per `DISP` block.
///
/// Fixed-width records (the ASCII "short" format, flag 1: node numbers in 10 columns, values in
/// 12). Element types: 3 (C3D4), 6 (C3D10), 1 (C3D8), 4 (C3D20, whose nodes 13-16 and 17-20 the
/// .frd lists in the other order; they are put back in Abaqus order). Other element types are
/// skipped; nodes are numbered in file order.
/// What a `.frd` holds: its mesh, its snapshots, and the label of each node (in mesh order).
#[derive(Debug, Clone, PartialEq)]
pub struct Frd {
    /// Nodes (in file order) and elements.
    pub mesh: FemMesh,
    /// One per `DISP` block.
    pub snapshots: Vec<Snapshot>,
    /// The node numbers of the file, which are the deck's labels.
    pub node_labels: Vec<i64>,
}

/// Reads a `.frd` (see the docs above [`Frd`]).
pub fn read_frd(path: &Path) -> Result<Frd, SnapshotError> {
    let text = read_text(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut labels: Vec<i64> = Vec::new();
    let mut coords: Vec<[f64; 3]> = Vec::new();
    let mut elements: Vec<(ElementType, Vec<i64>, usize)> = Vec::new();
    let mut snapshots = Vec::new();
    let mut i = 0;
    let field = |l: &str, from: usize, width: usize, line: usize| -> Result<f64, SnapshotError> {
        let s = l.get(from..from + width).unwrap_or("").trim();
        s.parse::<f64>().map_err(|_| {
            SnapshotError::line(
                path,
                line,
                format!(
                    "`{s}` (columns {}-{}) is not a number",
                    from + 1,
                    from + width
                ),
            )
        })
    };
    let int = |l: &str, from: usize, width: usize, line: usize| -> Result<i64, SnapshotError> {
        let s = l.get(from..from + width).unwrap_or("").trim();
        s.parse::<i64>().map_err(|_| {
            SnapshotError::line(
                path,
                line,
                format!(
                    "`{s}` (columns {}-{}) is not an integer",
                    from + 1,
                    from + width
                ),
            )
        })
    };
    while i < lines.len() {
        let l = lines[i];
        let key = l.get(0..6).unwrap_or("").trim_start();
        if key == "2C" || key == "3C" {
            let format = l.split_whitespace().last().unwrap_or("");
            if format != "1" {
                return Err(SnapshotError::line(
                    path,
                    i + 1,
                    format!("format flag {format}: only the ASCII short format (1) is read"),
                ));
            }
        }
        if key == "2C" {
            i += 1;
            while i < lines.len() && lines[i].starts_with(" -1") {
                let l = lines[i];
                labels.push(int(l, 3, 10, i + 1)?);
                coords.push([
                    field(l, 13, 12, i + 1)?,
                    field(l, 25, 12, i + 1)?,
                    field(l, 37, 12, i + 1)?,
                ]);
                i += 1;
            }
        } else if key == "3C" {
            i += 1;
            while i < lines.len() && lines[i].starts_with(" -1") {
                let head = i + 1;
                let code = int(lines[i], 13, 5, head)?;
                i += 1;
                let mut nodes = Vec::new();
                while i < lines.len() && lines[i].starts_with(" -2") {
                    let l = lines[i];
                    let mut c = 3;
                    while c + 10 <= l.len() {
                        nodes.push(int(l, c, 10, i + 1)?);
                        c += 10;
                    }
                    i += 1;
                }
                let t = match code {
                    3 => Some(ElementType::Tet4),
                    6 => Some(ElementType::Tet10),
                    1 => Some(ElementType::Hex8),
                    4 => Some(ElementType::Hex20),
                    _ => None,
                };
                if let Some(t) = t {
                    if nodes.len() != t.node_count() {
                        return Err(SnapshotError::line(
                            path,
                            head,
                            format!(
                                "element of type {code} lists {} nodes, expected {}",
                                nodes.len(),
                                t.node_count()
                            ),
                        ));
                    }
                    if t == ElementType::Hex20 {
                        let (first, rest) = nodes.split_at(12);
                        nodes = [first, &rest[4..8], &rest[0..4]].concat();
                    }
                    elements.push((t, nodes, head));
                }
            }
        } else if key.starts_with("100C") {
            let time = l.get(12..24).unwrap_or("").trim().to_string();
            let kind = lines
                .get(i + 1)
                .and_then(|n| n.get(5..13))
                .map(str::trim)
                .unwrap_or("");
            i += 2;
            while i < lines.len() && lines[i].starts_with(" -5") {
                i += 1;
            }
            if kind != "DISP" {
                while i < lines.len() && !lines[i].starts_with(" -3") {
                    i += 1;
                }
                continue;
            }
            let index: HashMap<i64, usize> =
                labels.iter().enumerate().map(|(k, &n)| (n, k)).collect();
            let mut u = vec![[0.0; 3]; labels.len()];
            let mut seen = 0;
            while i < lines.len() && lines[i].starts_with(" -1") {
                let l = lines[i];
                let node = int(l, 3, 10, i + 1)?;
                let k = *index.get(&node).ok_or_else(|| {
                    SnapshotError::line(
                        path,
                        i + 1,
                        format!("node {node} is not in the node block"),
                    )
                })?;
                u[k] = [
                    field(l, 13, 12, i + 1)?,
                    field(l, 25, 12, i + 1)?,
                    field(l, 37, 12, i + 1)?,
                ];
                seen += 1;
                i += 1;
            }
            if seen != labels.len() {
                return Err(SnapshotError::line(
                    path,
                    i,
                    format!("DISP block has {seen} nodes, the mesh {}", labels.len()),
                ));
            }
            snapshots.push(Snapshot {
                id: format!("{} step time {time}", path.display()),
                displacement: u,
            });
            continue;
        }
        i += 1;
    }
    if labels.is_empty() || elements.is_empty() {
        return Err(SnapshotError::file(
            path,
            "no node or element block (is it a CalculiX .frd?)",
        ));
    }
    if snapshots.is_empty() {
        return Err(SnapshotError::file(
            path,
            "no DISP block: ask for *NODE FILE with U",
        ));
    }
    let index: HashMap<i64, u64> = labels
        .iter()
        .enumerate()
        .map(|(k, &n)| (n, k as u64))
        .collect();
    let mut blocks: Vec<(ElementType, Vec<u64>, usize)> = Vec::new();
    for (t, nodes, line) in elements {
        let ids = nodes
            .iter()
            .map(|n| {
                index.get(n).copied().ok_or_else(|| {
                    SnapshotError::line(
                        path,
                        line,
                        format!("element refers to node {n}, not in the node block"),
                    )
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        match blocks.iter_mut().find(|b| b.0 == t) {
            Some(b) => {
                b.1.extend(ids);
                b.2 += 1;
            }
            None => blocks.push((t, ids, 1)),
        }
    }
    let mesh = FemMesh {
        nodes: Array2::from_shape_vec((coords.len(), 3), coords.into_iter().flatten().collect())
            .expect("n x 3"),
        blocks: blocks
            .into_iter()
            .map(|(t, ids, count)| ElementBlock {
                element_type: t,
                connectivity: Array2::from_shape_vec((count, t.node_count()), ids).expect("rows"),
            })
            .collect(),
    };
    Ok(Frd {
        mesh,
        snapshots,
        node_labels: labels,
    })
}

/// A nodal displacement table for a deck (`.rpt` or `.csv` by extension), in the order of
/// `node_labels`; every node must appear once.
pub fn read_table(path: &Path, node_labels: &[i64]) -> Result<Snapshot, SnapshotError> {
    let text = read_text(path)?;
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let rows = if is_csv {
        csv_rows(path, &text)?
    } else {
        rpt_rows(path, &text)?
    };
    let mut by_label: HashMap<i64, [f64; 3]> = HashMap::with_capacity(rows.len());
    for (line, label, u) in rows {
        if by_label.insert(label, u).is_some() {
            return Err(SnapshotError::line(
                path,
                line,
                format!("node {label} appears twice"),
            ));
        }
    }
    let displacement = node_labels
        .iter()
        .map(|l| {
            by_label.get(l).copied().ok_or_else(|| {
                SnapshotError::file(path, format!("no displacement for node {l} of the mesh"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Snapshot {
        id: path.display().to_string(),
        displacement,
    })
}

fn number(path: &Path, line: usize, s: &str) -> Result<f64, SnapshotError> {
    s.parse::<f64>()
        .map_err(|_| SnapshotError::line(path, line, format!("`{s}` is not a number")))
}

/// The rows of a CSV table that carry data (blank lines and `#` comments skipped), as (0-based
/// line, text): its header's line and lower-cased names, then the rest.
type CsvTable<'a> = (usize, Vec<String>, Vec<(usize, &'a str)>);

fn csv_table<'a>(path: &Path, text: &'a str) -> Result<CsvTable<'a>, SnapshotError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let (hline, header) = lines
        .next()
        .ok_or_else(|| SnapshotError::file(path, "empty table"))?;
    let names = header
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    Ok((hline, names, lines.collect()))
}

/// CSV rows `node,u1,u2,u3` (header names case-insensitive, any column order, `#` comments).
fn csv_rows(path: &Path, text: &str) -> Result<Vec<(usize, i64, [f64; 3])>, SnapshotError> {
    let (hline, names, lines) = csv_table(path, text)?;
    let col = |n: &str| {
        names.iter().position(|h| h == n).ok_or_else(|| {
            SnapshotError::line(
                path,
                hline + 1,
                format!("no column `{n}` (expected header node,u1,u2,u3)"),
            )
        })
    };
    let (cn, c1, c2, c3) = (col("node")?, col("u1")?, col("u2")?, col("u3")?);
    lines
        .into_iter()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let get = |c: usize| {
                f.get(c).copied().ok_or_else(|| {
                    SnapshotError::line(
                        path,
                        i + 1,
                        format!("expected {} columns, found {}", names.len(), f.len()),
                    )
                })
            };
            let label = get(cn)?.parse::<i64>().map_err(|_| {
                SnapshotError::line(path, i + 1, format!("node `{}` is not an integer", f[cn]))
            })?;
            Ok((
                i + 1,
                label,
                [
                    number(path, i + 1, get(c1)?)?,
                    number(path, i + 1, get(c2)?)?,
                    number(path, i + 1, get(c3)?)?,
                ],
            ))
        })
        .collect()
}

/// Rows of the node blocks of an Abaqus report. A block starts at a header line whose first
/// word is `Node` and that names `U.U1`, `U.U2` and `U.U3`; a row is a node label followed by the
/// columns, possibly wrapped over several lines; the Minimum/At Node/Maximum/Total footer or a
/// blank line ends the block.
fn rpt_rows(path: &Path, text: &str) -> Result<Vec<(usize, i64, [f64; 3])>, SnapshotError> {
    let mut rows = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut blocks = 0;
    while i < lines.len() {
        if lines[i].split_whitespace().next() != Some("Node") {
            i += 1;
            continue;
        }
        // The header may wrap like the rows: collect column names up to the line of dashes
        // (dropping the `Label` and `@Loc 1` annotations).
        let header_line = i;
        let mut words: Vec<&str> = Vec::new();
        while i < lines.len() && !lines[i].trim_start().starts_with("--") {
            words.extend(
                lines[i]
                    .split_whitespace()
                    .filter(|w| *w != "Label" && *w != "@Loc" && w.parse::<f64>().is_err()),
            );
            i += 1;
        }
        if i == lines.len() {
            return Err(SnapshotError::line(
                path,
                header_line + 1,
                "header without the line of dashes under it",
            ));
        }
        i += 1;
        let find = |name: &str| words.iter().position(|w| *w == name);
        let (Some(p1), Some(p2), Some(p3)) = (find("U.U1"), find("U.U2"), find("U.U3")) else {
            continue;
        };
        blocks += 1;
        let columns = words.len(); // `Node`, then the value columns
        while i < lines.len() {
            let first = lines[i].split_whitespace().next();
            let Some(first) = first else { break };
            if ["Minimum", "Maximum", "Total", "At"].contains(&first) {
                break;
            }
            let start = i;
            let label = first.parse::<i64>().map_err(|_| {
                SnapshotError::line(
                    path,
                    i + 1,
                    format!("expected a node label, found `{first}`"),
                )
            })?;
            let mut values: Vec<&str> = lines[i].split_whitespace().skip(1).collect();
            // Wrapped rows continue on the next lines until all columns are read.
            while values.len() < columns - 1 {
                i += 1;
                let more = lines.get(i).ok_or_else(|| {
                    SnapshotError::line(path, start + 1, "row cut short by the end of the file")
                })?;
                if more.trim().is_empty() {
                    return Err(SnapshotError::line(
                        path,
                        start + 1,
                        format!(
                            "row of node {label} has {} values, the header {}",
                            values.len(),
                            columns - 1
                        ),
                    ));
                }
                values.extend(more.split_whitespace());
            }
            if values.len() != columns - 1 {
                return Err(SnapshotError::line(
                    path,
                    start + 1,
                    format!(
                        "row of node {label} has {} values, the header {}",
                        values.len(),
                        columns - 1
                    ),
                ));
            }
            let v = |p: usize| number(path, start + 1, values[p - 1]);
            rows.push((start + 1, label, [v(p1)?, v(p2)?, v(p3)?]));
            i += 1;
        }
    }
    if blocks == 0 {
        return Err(SnapshotError::file(
            path,
            "no block with columns `Node`, `U.U1`, `U.U2`, `U.U3` (export U at nodes from Abaqus/Viewer)",
        ));
    }
    Ok(rows)
}

/// Per-snapshot scalars (one CSV row per snapshot, in snapshot order): an optional `snapshot`
/// label, the total `strain_energy` (Abaqus ALLSE, CalculiX ELSE totals), and any number of
/// loaded boundaries as column pairs `force_<name>` / `displacement_<name>`: the reaction on
/// that boundary and the boundary's displacement it is work-conjugate to (same sign convention,
/// so that their product is the work done on the grain).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scalars {
    /// Strain energy per snapshot, if given.
    pub strain_energy: Option<Vec<f64>>,
    /// Per boundary: name, reactions, displacements.
    pub boundaries: Vec<(String, Vec<f64>, Vec<f64>)>,
}

/// Reads a scalars CSV (see [`Scalars`]); `rows` is the snapshot count it must match.
pub fn read_scalars(path: &Path, rows: usize) -> Result<Scalars, SnapshotError> {
    let text = read_text(path)?;
    let (hline, names, lines) = csv_table(path, &text)?;
    let mut columns: HashMap<String, Vec<f64>> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    let mut count = 0;
    for (i, l) in lines {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != names.len() {
            return Err(SnapshotError::line(
                path,
                i + 1,
                format!("expected {} columns, found {}", names.len(), f.len()),
            ));
        }
        for (name, v) in names.iter().zip(&f) {
            if name != "snapshot" {
                columns
                    .get_mut(name)
                    .expect("header")
                    .push(number(path, i + 1, v)?);
            }
        }
        count += 1;
    }
    if count != rows {
        return Err(SnapshotError::file(
            path,
            format!("{count} rows for {rows} snapshots (one row per snapshot, in order)"),
        ));
    }
    let mut scalars = Scalars {
        strain_energy: columns.remove("strain_energy"),
        boundaries: Vec::new(),
    };
    for name in &names {
        if let Some(b) = name.strip_prefix("force_") {
            let d = columns
                .remove(&format!("displacement_{b}"))
                .ok_or_else(|| {
                    SnapshotError::line(
                        path,
                        hline + 1,
                        format!("column `{name}` has no `displacement_{b}` to pair with"),
                    )
                })?;
            scalars
                .boundaries
                .push((b.to_string(), columns.remove(name).expect("header"), d));
        }
    }
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| columns.contains_key(*n) && *n != "snapshot")
        .collect();
    if let Some(n) = unknown.first() {
        return Err(SnapshotError::line(
            path,
            hline + 1,
            format!(
                "unknown column `{n}` (expected snapshot, strain_energy, force_<b>, displacement_<b>)"
            ),
        ));
    }
    if scalars.strain_energy.is_none() && scalars.boundaries.is_empty() {
        return Err(SnapshotError::line(
            path,
            hline + 1,
            "no strain_energy and no force_/displacement_ pairs",
        ));
    }
    Ok(scalars)
}
