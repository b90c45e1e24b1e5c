//! Abaqus (and CalculiX) input decks: `*Node`, `*Element` (C3D4, C3D10, C3D8, C3D8R, C3D20,
//! C3D20R), `*Nset` / `*Elset` (lists or `GENERATE`), `*Material` with `*Elastic` and `*Density`,
//! and `*Include`. Keywords and set names are case-insensitive; other keywords and their data
//! are skipped.
//!
//! Parts and assemblies: a deck with one `*Part` (and an `*Instance` of it without positioning
//! lines) reads as if flat. Several parts, or positioned instances, are refused with a message:
//! write the deck flat instead (in Abaqus/CAE: Model > Edit Attributes > "Do not use parts and
//! assemblies in input files").
//!
//! Other element types (rigid surfaces, shells, wedges) may be present: they are recorded, and
//! refused only if the element set chosen for the mesh contains them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use grain::ElementType;

use crate::InputError;
use crate::part::{Blocks, Part};

/// A material's elastic constants and density, when the deck gives them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeckMaterial {
    /// The material's name (upper case).
    pub name: String,
    /// Young's modulus and Poisson's ratio (`*Elastic`, isotropic).
    pub elastic: Option<(f64, f64)>,
    /// Density (`*Density`).
    pub density: Option<f64>,
    /// Where `elastic` was read (file and line), for messages.
    pub elastic_at: Option<(PathBuf, usize)>,
    /// Where `density` was read.
    pub density_at: Option<(PathBuf, usize)>,
}

/// One element as read.
#[derive(Debug, Clone, PartialEq)]
struct Element {
    label: i64,
    element_type: Option<ElementType>,
    type_name: String,
    /// Node labels.
    nodes: Vec<i64>,
    /// Where it was defined, for messages.
    at: (PathBuf, usize),
}

/// A parsed deck.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Deck {
    /// Node labels, in the order nodes were defined.
    pub node_labels: Vec<i64>,
    /// Node coordinates, same order.
    pub node_coords: Vec<[f64; 3]>,
    /// Node sets by upper-case name: node labels.
    pub node_sets: BTreeMap<String, Vec<i64>>,
    /// Element sets by upper-case name: element labels.
    pub element_sets: BTreeMap<String, Vec<i64>>,
    /// Materials, in order.
    pub materials: Vec<DeckMaterial>,
    elements: Vec<Element>,
    path: PathBuf,
}

/// The most labels one `GENERATE` line may make (a set of a hundred million nodes is past any
/// grain's mesh; a typo in a range asked for terabytes).
const MAX_GENERATED: i128 = 100_000_000;

/// What to do with a node or element label that a deck defines twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redefinition {
    /// Refuse the deck, naming both definitions (an element assembled twice, or a node whose
    /// position depends on which definition wins, gives a plausible wrong mesh).
    #[default]
    Refuse,
    /// The last definition replaces the earlier one (the tools' `--keep-last-definition`).
    KeepLast,
}

/// A keyword line: name (upper case) and parameters (upper-case keys; values as written).
struct Keyword {
    name: String,
    params: HashMap<String, String>,
}

fn parse_keyword(text: &str) -> Keyword {
    let mut parts = text[1..].split(',');
    let name = parts.next().unwrap_or("").trim().to_ascii_uppercase();
    let params = parts
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_uppercase(), v.trim().to_string()),
            None => (p.trim().to_ascii_uppercase(), String::new()),
        })
        .collect();
    Keyword { name, params }
}

/// The lines of a deck with `*Include` expanded: (file, line number, text).
fn expand(
    path: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, usize, String)>,
) -> Result<(), InputError> {
    if depth > 16 {
        return Err(InputError::file(
            path,
            "*Include nested more than 16 deep (a cycle?)",
        ));
    }
    let text = crate::text::read_text(path)?;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('*') && !trimmed.starts_with("**") {
            let k = parse_keyword(trimmed);
            if k.name == "INCLUDE" {
                let input = k
                    .params
                    .get("INPUT")
                    .ok_or_else(|| InputError::line(path, i + 1, "*Include without INPUT="))?;
                let included = path
                    .parent()
                    .unwrap_or(Path::new("."))
                    .join(input.trim_matches('"'));
                expand(&included, depth + 1, out)?;
                continue;
            }
        }
        out.push((path.to_path_buf(), i + 1, line.to_string()));
    }
    Ok(())
}

fn numbers<T: crate::text::Number>(
    path: &Path,
    line: usize,
    text: &str,
    what: &str,
) -> Result<Vec<T>, InputError> {
    text.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| {
            // Abaqus writes reals like `1.` and `-746.369E-06`; Rust parses both.
            crate::text::number::<T>(f).ok_or_else(|| {
                InputError::line(path, line, format!("{what}: `{f}` is not a finite number"))
            })
        })
        .collect()
}

impl Deck {
    /// Reads a deck and its includes.
    pub fn read(path: &Path) -> Result<Deck, InputError> {
        Deck::read_with(path, Redefinition::Refuse)
    }

    /// [`Deck::read`], with `redefinition` deciding what a label defined twice gets.
    pub fn read_with(path: &Path, redefinition: Redefinition) -> Result<Deck, InputError> {
        let mut lines = Vec::new();
        expand(path, 0, &mut lines)?;
        let mut deck = Deck {
            path: path.to_path_buf(),
            ..Deck::default()
        };
        let mut keyword: Option<Keyword> = None;
        let mut parts = 0;
        // An element whose node list continues on the next line.
        let mut pending: Option<Element> = None;
        // Where each label was defined: its index and its line, for redefinitions.
        let mut nodes_at: HashMap<i64, (usize, PathBuf, usize)> = HashMap::new();
        let mut elements_at: HashMap<i64, (usize, PathBuf, usize)> = HashMap::new();
        let again = |what: &str, label: i64, first: &(usize, PathBuf, usize)| {
            format!(
                "{what} {label} is defined again (first at {} line {}): give it one definition, or pass --keep-last-definition to let the last replace the earlier",
                first.1.display(),
                first.2
            )
        };
        for (file, line, text) in lines {
            let t = text.trim();
            if t.is_empty() || t.starts_with("**") {
                continue;
            }
            let err = |message: String| InputError::line(&file, line, message);
            if t.starts_with('*') {
                if let Some(e) = pending.take() {
                    return Err(InputError::line(
                        &e.at.0,
                        e.at.1,
                        format!(
                            "element {} has {} nodes, its type needs more",
                            e.label,
                            e.nodes.len()
                        ),
                    ));
                }
                let k = parse_keyword(t);
                match k.name.as_str() {
                    "PART" => {
                        parts += 1;
                        if parts > 1 {
                            return Err(err(
                                "a second *Part: assemblies of several parts are not supported; write the deck flat".into(),
                            ));
                        }
                    }
                    "MATERIAL" => deck.materials.push(DeckMaterial {
                        name: k
                            .params
                            .get("NAME")
                            .cloned()
                            .unwrap_or_default()
                            .to_ascii_uppercase(),
                        ..DeckMaterial::default()
                    }),
                    "ELEMENT" if !k.params.contains_key("TYPE") => {
                        return Err(err("*Element without TYPE=".into()));
                    }
                    "NSET" | "ELSET" => {
                        let key = if k.name == "NSET" { "NSET" } else { "ELSET" };
                        let name = k
                            .params
                            .get(key)
                            .ok_or_else(|| err(format!("*{} without {key}=", k.name)))?;
                        let sets = if key == "NSET" {
                            &mut deck.node_sets
                        } else {
                            &mut deck.element_sets
                        };
                        sets.entry(name.to_ascii_uppercase()).or_default();
                    }
                    _ => {}
                }
                keyword = Some(k);
                continue;
            }
            let Some(k) = &keyword else { continue };
            match k.name.as_str() {
                "NODE" => {
                    let v: Vec<f64> = numbers(&file, line, t, "node")?;
                    if v.len() < 4 {
                        return Err(err(format!(
                            "a node needs a label and 3 coordinates, got {} numbers",
                            v.len()
                        )));
                    }
                    let label = v[0] as i64;
                    match (nodes_at.get(&label), redefinition) {
                        (Some(first), Redefinition::Refuse) => {
                            return Err(err(again("node", label, first)));
                        }
                        (Some(first), Redefinition::KeepLast) => {
                            deck.node_coords[first.0] = [v[1], v[2], v[3]];
                        }
                        (None, _) => {
                            nodes_at.insert(label, (deck.node_labels.len(), file.clone(), line));
                            deck.node_labels.push(label);
                            deck.node_coords.push([v[1], v[2], v[3]]);
                        }
                    }
                    if let Some(set) = k.params.get("NSET") {
                        deck.node_sets
                            .entry(set.to_ascii_uppercase())
                            .or_default()
                            .push(label);
                    }
                }
                "ELEMENT" => {
                    let type_name = k.params["TYPE"].to_ascii_uppercase();
                    let element_type = ElementType::from_abaqus_name(&type_name);
                    let v: Vec<i64> = numbers(&file, line, t.trim_end_matches(','), "element")?;
                    let e = match pending.take() {
                        Some(mut e) => {
                            e.nodes.extend(v);
                            e
                        }
                        None => {
                            let Some((&label, rest)) = v.split_first() else {
                                continue;
                            };
                            Element {
                                label,
                                element_type,
                                type_name,
                                nodes: rest.to_vec(),
                                at: (file.clone(), line),
                            }
                        }
                    };
                    // A line ending in a comma continues on the next one (C3D20 needs two).
                    let complete = match e.element_type.map(|t| t.node_count()) {
                        Some(n) if e.nodes.len() > n => {
                            return Err(err(format!(
                                "element {} of type {} lists {} nodes, expected {n}",
                                e.label,
                                e.type_name,
                                e.nodes.len()
                            )));
                        }
                        Some(n) => e.nodes.len() == n,
                        None => !t.ends_with(','),
                    };
                    if complete {
                        if let Some(set) = k.params.get("ELSET") {
                            deck.element_sets
                                .entry(set.to_ascii_uppercase())
                                .or_default()
                                .push(e.label);
                        }
                        match (elements_at.get(&e.label), redefinition) {
                            (Some(first), Redefinition::Refuse) => {
                                let (path, line) = e.at.clone();
                                return Err(InputError::line(
                                    &path,
                                    line,
                                    again("element", e.label, first),
                                ));
                            }
                            (Some(first), Redefinition::KeepLast) => deck.elements[first.0] = e,
                            (None, _) => {
                                elements_at
                                    .insert(e.label, (deck.elements.len(), e.at.0.clone(), e.at.1));
                                deck.elements.push(e);
                            }
                        }
                    } else {
                        pending = Some(e);
                    }
                }
                "NSET" | "ELSET" => {
                    let key = if k.name == "NSET" { "NSET" } else { "ELSET" };
                    let name = k.params[key].to_ascii_uppercase();
                    let labels: Vec<i64> = if k.params.contains_key("GENERATE") {
                        let v: Vec<i64> = numbers(&file, line, t, "GENERATE range")?;
                        let (first, last, step) = match v.as_slice() {
                            [a, b] => (*a, *b, 1),
                            [a, b, c] if *c > 0 => (*a, *b, *c),
                            _ => {
                                return Err(err(
                                    "GENERATE expects `first, last[, step > 0]`".into()
                                ));
                            }
                        };
                        // The labels it makes, counted before any is made (in i128: the
                        // difference of two i64 labels can overflow i64).
                        let count = (i128::from(last) - i128::from(first)) / i128::from(step) + 1;
                        if last < first || count > MAX_GENERATED {
                            return Err(err(format!(
                                "GENERATE {first}, {last}, {step}: expected first <= last and at most {MAX_GENERATED} labels, got {count}"
                            )));
                        }
                        (first..=last).step_by(step as usize).collect()
                    } else {
                        // Members are labels or names of sets defined earlier.
                        let mut out = Vec::new();
                        for f in t.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                            match f.parse::<i64>() {
                                Ok(l) => out.push(l),
                                Err(_) => {
                                    let sets = if key == "NSET" {
                                        &deck.node_sets
                                    } else {
                                        &deck.element_sets
                                    };
                                    let members =
                                        sets.get(&f.to_ascii_uppercase()).ok_or_else(|| {
                                            err(format!(
                                                "`{f}` is neither a label nor a set defined above"
                                            ))
                                        })?;
                                    out.extend(members.iter().copied());
                                }
                            }
                        }
                        out
                    };
                    let sets = if key == "NSET" {
                        &mut deck.node_sets
                    } else {
                        &mut deck.element_sets
                    };
                    sets.entry(name).or_default().extend(labels);
                }
                "ELASTIC" | "DENSITY" => {
                    let v: Vec<f64> = numbers(&file, line, t, &k.name.to_lowercase())?;
                    let material = deck
                        .materials
                        .last_mut()
                        .ok_or_else(|| err(format!("*{} outside a *Material", k.name)))?;
                    match (k.name.as_str(), v.as_slice()) {
                        ("ELASTIC", [e, nu, ..]) if material.elastic.is_none() => {
                            material.elastic = Some((*e, *nu));
                            material.elastic_at = Some((file.clone(), line));
                        }
                        ("DENSITY", [rho, ..]) if material.density.is_none() => {
                            material.density = Some(*rho);
                            material.density_at = Some((file.clone(), line));
                        }
                        ("ELASTIC", [_]) => {
                            return Err(err("*Elastic expects `E, nu` (isotropic)".into()));
                        }
                        // Temperature-dependent tables: the first row is used.
                        _ => {}
                    }
                }
                "INSTANCE" => {
                    return Err(err(
                        "a positioned *Instance (translation or rotation lines) is not supported; write the deck flat".into(),
                    ));
                }
                _ => {}
            }
        }
        if let Some(e) = pending {
            return Err(InputError::line(
                &e.at.0,
                e.at.1,
                format!("element {} is cut short by the end of the file", e.label),
            ));
        }
        Ok(deck)
    }

    /// The solid part of an element set, or of all elements: the chosen elements grouped by
    /// type, on the nodes they use (in definition order, with their labels).
    pub fn part(&self, element_set: Option<&str>) -> Result<Part, InputError> {
        let deck_error = |message: String| InputError::file(&self.path, message);
        let chosen: Option<std::collections::HashSet<i64>> = match element_set {
            None => None,
            Some(name) => Some(
                self.element_sets
                    .get(&name.to_ascii_uppercase())
                    .ok_or_else(|| {
                        deck_error(format!(
                            "no element set `{name}` (sets: {})",
                            self.element_sets
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?
                    .iter()
                    .copied()
                    .collect(),
            ),
        };
        let index = crate::part::label_index(&self.node_labels);
        let mut blocks = Blocks::default();
        for e in &self.elements {
            if chosen.as_ref().is_some_and(|s| !s.contains(&e.label)) {
                continue;
            }
            let Some(t) = e.element_type else {
                return Err(InputError::Line {
                    path: e.at.0.clone(),
                    line: e.at.1,
                    message: format!(
                        "element {} has type {}, which is not a supported solid (C3D4, C3D10, C3D8, C3D8R, C3D20, C3D20R); choose the grain's element set",
                        e.label, e.type_name
                    ),
                });
            };
            let ids = e
                .nodes
                .iter()
                .map(|l| {
                    index
                        .get(l)
                        .map(|&k| k as u64)
                        .ok_or_else(|| InputError::Line {
                            path: e.at.0.clone(),
                            line: e.at.1,
                            message: format!(
                                "element {} refers to node {l}, which is not defined",
                                e.label
                            ),
                        })
                })
                .collect::<Result<Vec<u64>, _>>()?;
            blocks.push(t, &ids);
        }
        if blocks.is_empty() {
            return Err(deck_error("no solid elements".into()));
        }
        let coords = self.node_coords.iter().flatten().copied().collect();
        Ok(Part::used(
            blocks.into_mesh(coords),
            self.node_labels.clone(),
        ))
    }

    /// The part of every solid element (other element types skipped): where the nodes of node
    /// sets outside the grain's element set can be found in results written for the whole model.
    pub fn solids(&self) -> Part {
        let index = crate::part::label_index(&self.node_labels);
        let mut blocks = Blocks::default();
        for e in &self.elements {
            let ids: Option<Vec<u64>> = e
                .nodes
                .iter()
                .map(|l| index.get(l).map(|&k| k as u64))
                .collect();
            if let (Some(t), Some(ids)) = (e.element_type, ids) {
                blocks.push(t, &ids);
            }
        }
        let coords = self.node_coords.iter().flatten().copied().collect();
        Part::used(blocks.into_mesh(coords), self.node_labels.clone())
    }
}
