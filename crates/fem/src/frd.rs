//! CalculiX `.frd` result files (ASCII): the nodes, the elements and the `DISP` block of every
//! increment.
//!
//! Fixed-width records (the "short" format, flag 1: node numbers in 10 columns, values in 12).
//! Element types: 3 (C3D4), 6 (C3D10), 1 (C3D8), 4 (C3D20, whose nodes 13-16 and 17-20 the .frd
//! lists in the other order; they are put back in Abaqus order). Other element types are
//! skipped. A `DISP` block may cover only some nodes (`*NODE FILE, NSET=...`): its values are
//! kept by node label, and whoever needs a node's value asks for it ([`NodalValues::at`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use grain::ElementType;

use crate::part::{Blocks, NodalValues, Part};
use crate::{InputError, text::read_text};

/// What a `.frd` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Frd {
    /// The solid elements of the file and the nodes they use (labels: the deck's).
    pub part: Part,
    /// One per `DISP` block, in file order.
    pub displacements: Vec<NodalValues>,
}

/// The fixed-width field at columns `from..from + width` of line `l` (number `line`) as a `T`,
/// or an error saying it is not `what`.
fn column<T: crate::text::Number>(
    path: &Path,
    l: &str,
    (from, width): (usize, usize),
    line: usize,
    what: &str,
) -> Result<T, InputError> {
    let s = l.get(from..from + width).unwrap_or("").trim();
    crate::text::number::<T>(s).ok_or_else(|| {
        InputError::line(
            path,
            line,
            format!(
                "`{s}` (columns {}-{}) is not {what}",
                from + 1,
                from + width
            ),
        )
    })
}

/// Reads a `.frd` (see the module's docs), gunzipped if its name ends in `.gz`.
pub fn read_frd(path: &Path) -> Result<Frd, InputError> {
    let text = read_text(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut labels: Vec<i64> = Vec::new();
    let mut coords: Vec<f64> = Vec::new();
    let mut elements: Vec<(ElementType, Vec<i64>, usize)> = Vec::new();
    let mut displacements = Vec::new();
    let mut i = 0;
    let field = |l: &str, from: usize, width: usize, line: usize| -> Result<f64, InputError> {
        column(path, l, (from, width), line, "a number")
    };
    let int = |l: &str, from: usize, width: usize, line: usize| -> Result<i64, InputError> {
        column(path, l, (from, width), line, "an integer")
    };
    let vector = |l: &str, line: usize| -> Result<[f64; 3], InputError> {
        Ok([
            field(l, 13, 12, line)?,
            field(l, 25, 12, line)?,
            field(l, 37, 12, line)?,
        ])
    };
    while i < lines.len() {
        let l = lines[i];
        let key = l.get(0..6).unwrap_or("").trim_start();
        if key == "2C" || key == "3C" {
            let format = l.split_whitespace().last().unwrap_or("");
            if format != "1" {
                return Err(InputError::line(
                    path,
                    i + 1,
                    format!("format flag {format}: only the ASCII short format (1) is read"),
                ));
            }
        }
        if key == "2C" {
            i += 1;
            let mut first: HashMap<i64, usize> = HashMap::new();
            while i < lines.len() && lines[i].starts_with(" -1") {
                let node = int(lines[i], 3, 10, i + 1)?;
                if let Some(line) = first.insert(node, i + 1) {
                    return Err(InputError::line(
                        path,
                        i + 1,
                        format!(
                            "node {node} is listed again in the node block (first at line {line})"
                        ),
                    ));
                }
                labels.push(node);
                coords.extend(vector(lines[i], i + 1)?);
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
                        return Err(InputError::line(
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
            // NUMSTP, the increment's number (`I5` after the 20 characters of text and the
            // `I2` analysis type): the name a scalars row or a held-out snapshot gives it.
            let increment = l.get(58..63).and_then(|n| n.trim().parse::<u64>().ok());
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
            let known: HashSet<i64> = labels.iter().copied().collect();
            let mut d = NodalValues {
                file: path.to_path_buf(),
                id: match increment {
                    Some(n) => format!("{} increment {n} step time {time}", path.display()),
                    None => format!("{} step time {time}", path.display()),
                },
                labels: Vec::new(),
                values: Vec::new(),
            };
            let mut first: HashMap<i64, usize> = HashMap::new();
            while i < lines.len() && lines[i].starts_with(" -1") {
                let node = int(lines[i], 3, 10, i + 1)?;
                if !known.contains(&node) {
                    return Err(InputError::line(
                        path,
                        i + 1,
                        format!("node {node} is not in the node block"),
                    ));
                }
                if let Some(line) = first.insert(node, i + 1) {
                    return Err(InputError::line(
                        path,
                        i + 1,
                        format!(
                            "node {node} is listed again in the DISP block at step time {time} (first at line {line}): which value holds?"
                        ),
                    ));
                }
                d.labels.push(node);
                d.values.push(vector(lines[i], i + 1)?);
                i += 1;
            }
            displacements.push(d);
            continue;
        }
        i += 1;
    }
    if labels.is_empty() || elements.is_empty() {
        return Err(InputError::file(
            path,
            "no node or element block (is it a CalculiX .frd?)",
        ));
    }
    if displacements.is_empty() {
        return Err(InputError::file(
            path,
            "no DISP block: ask for *NODE FILE with U",
        ));
    }
    let index = crate::part::label_index(&labels);
    let mut blocks = Blocks::default();
    for (t, nodes, line) in elements {
        let ids = nodes
            .iter()
            .map(|n| {
                index.get(n).map(|&k| k as u64).ok_or_else(|| {
                    InputError::line(
                        path,
                        line,
                        format!("element refers to node {n}, not in the node block"),
                    )
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        blocks.push(t, &ids);
    }
    Ok(Frd {
        part: Part::used(blocks.into_mesh(coords), labels),
        displacements,
    })
}
