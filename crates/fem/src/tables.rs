//! Tables of FEM output: nodal displacement tables for a deck's nodes, and per-snapshot
//! scalars.
//!
//! - Nodal tables: an Abaqus/Viewer report `.rpt` (columns `Node Label`, `U.U1`, `U.U2`, `U.U3`;
//!   several blocks; wrapped rows; the Minimum/Maximum/Total footers), or a CSV with header
//!   `node,u1,u2,u3` (any column order, `#` comments).
//! - Scalars: one CSV row per snapshot (see [`Scalars`]).

use std::collections::HashMap;
use std::path::Path;

use crate::InputError;
use crate::part::NodalValues;
use crate::text::{kind, read_text};

/// A nodal displacement table (`.rpt` or `.csv` by extension, looking through `.gz`): the rows
/// by node label; a label given twice is refused.
pub fn read_nodal_table(path: &Path) -> Result<NodalValues, InputError> {
    let text = read_text(path)?;
    let rows = if kind(path) == "csv" {
        csv_rows(path, &text)?
    } else {
        rpt_rows(path, &text)?
    };
    let mut seen: HashMap<i64, usize> = HashMap::with_capacity(rows.len());
    let mut table = NodalValues {
        file: path.to_path_buf(),
        id: path.display().to_string(),
        labels: Vec::with_capacity(rows.len()),
        values: Vec::with_capacity(rows.len()),
    };
    for (line, label, u) in rows {
        if let Some(first) = seen.insert(label, line) {
            return Err(InputError::line(
                path,
                line,
                format!("node {label} appears twice (first on line {first})"),
            ));
        }
        table.labels.push(label);
        table.values.push(u);
    }
    Ok(table)
}

fn number(path: &Path, line: usize, s: &str) -> Result<f64, InputError> {
    crate::text::number::<f64>(s)
        .ok_or_else(|| InputError::line(path, line, format!("`{s}` is not a finite number")))
}

/// The rows of a CSV table that carry data (blank lines and `#` comments skipped), as (0-based
/// line, text): its header's line and lower-cased names, then the rest.
type CsvTable<'a> = (usize, Vec<String>, Vec<(usize, &'a str)>);

fn csv_table<'a>(path: &Path, text: &'a str) -> Result<CsvTable<'a>, InputError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let (hline, header) = lines
        .next()
        .ok_or_else(|| InputError::file(path, "empty table"))?;
    let names = header
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    Ok((hline, names, lines.collect()))
}

/// The snapshot a scalars row's label names (exactly one of `ids`).
fn snapshot_of(path: &Path, line: usize, label: &str, ids: &[String]) -> Result<usize, InputError> {
    let named: Vec<usize> = (0..ids.len())
        .filter(|&j| crate::names_snapshot(&ids[j], label))
        .collect();
    match named[..] {
        [j] => Ok(j),
        [] => Err(InputError::line(
            path,
            line,
            format!(
                "snapshot `{label}` names none of the {} snapshots (the first is `{}`): give a file name or stem, or a .frd increment number; or pair the rows in order (mode-extract --scalars-by-position)",
                ids.len(),
                ids.first().map_or("", String::as_str)
            ),
        )),
        [a, b, ..] => Err(InputError::line(
            path,
            line,
            format!(
                "snapshot `{label}` names {} snapshots (`{}`, `{}`, ...): which one?",
                named.len(),
                ids[a],
                ids[b]
            ),
        )),
    }
}

/// CSV rows `node,u1,u2,u3` (header names case-insensitive, any column order, `#` comments).
fn csv_rows(path: &Path, text: &str) -> Result<Vec<(usize, i64, [f64; 3])>, InputError> {
    let (hline, names, lines) = csv_table(path, text)?;
    let col = |n: &str| {
        names.iter().position(|h| h == n).ok_or_else(|| {
            InputError::line(
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
                    InputError::line(
                        path,
                        i + 1,
                        format!("expected {} columns, found {}", names.len(), f.len()),
                    )
                })
            };
            let label = get(cn)?.parse::<i64>().map_err(|_| {
                InputError::line(path, i + 1, format!("node `{}` is not an integer", f[cn]))
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
fn rpt_rows(path: &Path, text: &str) -> Result<Vec<(usize, i64, [f64; 3])>, InputError> {
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
            return Err(InputError::line(
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
                InputError::line(
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
                    InputError::line(path, start + 1, "row cut short by the end of the file")
                })?;
                if more.trim().is_empty() {
                    break;
                }
                values.extend(more.split_whitespace());
            }
            if values.len() != columns - 1 {
                return Err(InputError::line(
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
        return Err(InputError::file(
            path,
            "no block with columns `Node`, `U.U1`, `U.U2`, `U.U3` (export U at nodes from Abaqus/Viewer)",
        ));
    }
    Ok(rows)
}

/// Per-snapshot scalars (one CSV row per snapshot): an optional `snapshot` label naming the
/// snapshot of the row ([`crate::names_snapshot`]: a file name or stem, a `.frd` increment
/// number), the total `strain_energy` (Abaqus ALLSE, CalculiX ELSE totals), and any number of
/// loaded boundaries as column pairs `force_<name>` / `displacement_<name>`: the reaction on
/// that boundary and the boundary's displacement it is work-conjugate to (same sign convention,
/// so that their product is the work done on the grain). Values are in snapshot order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scalars {
    /// Strain energy per snapshot, if given.
    pub strain_energy: Option<Vec<f64>>,
    /// Per boundary: name, reactions, displacements.
    pub boundaries: Vec<(String, Vec<f64>, Vec<f64>)>,
}

/// How a scalars file's rows are paired with the snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pairing {
    /// By the `snapshot` column (the default).
    #[default]
    Label,
    /// Row `j` is snapshot `j`, whatever its label.
    Position,
}

/// Reads a scalars CSV (see [`Scalars`]) for the snapshots `ids` ([`NodalValues::id`]). With
/// [`Pairing::Label`] the file needs a `snapshot` column: each row's label must name exactly
/// one snapshot and each snapshot must have one row, and the values come back in snapshot order
/// whatever the rows' order. With [`Pairing::Position`] row `j` is snapshot `j` (labels
/// ignored). Either way there is one row per snapshot.
pub fn read_scalars(path: &Path, ids: &[String], pairing: Pairing) -> Result<Scalars, InputError> {
    let text = read_text(path)?;
    let (hline, names, lines) = csv_table(path, &text)?;
    let mut columns: HashMap<String, Vec<f64>> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    let label_column = names.iter().position(|n| n == "snapshot");
    if label_column.is_none() && pairing == Pairing::Label {
        return Err(InputError::line(
            path,
            hline + 1,
            "no `snapshot` column naming each row's snapshot: add one, or pair the rows with the snapshots in order (mode-extract --scalars-by-position)",
        ));
    }
    // The snapshot of each row, in row order.
    let mut order = Vec::new();
    // The line of the row that took each snapshot.
    let mut taken: Vec<Option<usize>> = vec![None; ids.len()];
    for (i, l) in lines {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != names.len() {
            return Err(InputError::line(
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
        let j = match (pairing, label_column) {
            (Pairing::Label, Some(c)) => snapshot_of(path, i + 1, f[c], ids)?,
            _ => order.len(),
        };
        if let Some(Some(first)) = taken.get(j) {
            return Err(InputError::line(
                path,
                i + 1,
                format!(
                    "snapshot `{}` has a row already (line {first}): one row per snapshot",
                    ids[j]
                ),
            ));
        }
        if let Some(t) = taken.get_mut(j) {
            *t = Some(i + 1);
        }
        order.push(j);
    }
    if order.len() != ids.len() {
        return Err(InputError::file(
            path,
            format!(
                "{} rows for {} snapshots (one row per snapshot)",
                order.len(),
                ids.len()
            ),
        ));
    }
    // Into snapshot order.
    for values in columns.values_mut() {
        if values.len() == order.len() {
            let mut sorted = vec![0.0; values.len()];
            for (row, &j) in order.iter().enumerate() {
                sorted[j] = values[row];
            }
            *values = sorted;
        }
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
                    InputError::line(
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
        return Err(InputError::line(
            path,
            hline + 1,
            format!(
                "unknown column `{n}` (expected snapshot, strain_energy, force_<b>, displacement_<b>)"
            ),
        ));
    }
    if scalars.strain_energy.is_none() && scalars.boundaries.is_empty() {
        return Err(InputError::line(
            path,
            hline + 1,
            "no strain_energy and no force_/displacement_ pairs",
        ));
    }
    Ok(scalars)
}
