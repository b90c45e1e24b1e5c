//! A mesh with the node labels of the FEM model it came from ([`Part`]), nodal results by label
//! ([`NodalValues`]), and the one assembly of element blocks that every reader uses.

use std::collections::HashMap;

use grain::{ElementBlock, ElementType, FemMesh};
use ndarray::Array2;

/// A solid mesh and the FEM model's label of each of its nodes (`node_labels[i]` is node `i`'s).
/// Its nodes are exactly those its elements use, in the order the source defines them.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Nodes and elements.
    pub mesh: FemMesh,
    /// The label of each mesh node.
    pub node_labels: Vec<i64>,
}

impl Part {
    /// The part of `mesh` its elements use: unused nodes dropped, the others kept in order
    /// with their labels, the connectivity renumbered.
    pub(crate) fn used(mut mesh: FemMesh, labels: Vec<i64>) -> Part {
        let n = mesh.nodes.nrows();
        let mut used = vec![false; n];
        for b in &mesh.blocks {
            for &k in &b.connectivity {
                used[k as usize] = true;
            }
        }
        if used.iter().all(|&u| u) {
            return Part {
                mesh,
                node_labels: labels,
            };
        }
        let mut new = vec![u64::MAX; n];
        let kept: Vec<usize> = (0..n).filter(|&k| used[k]).collect();
        for (i, &k) in kept.iter().enumerate() {
            new[k] = i as u64;
        }
        for b in &mut mesh.blocks {
            b.connectivity.mapv_inplace(|k| new[k as usize]);
        }
        mesh.nodes = Array2::from_shape_fn((kept.len(), 3), |(i, c)| mesh.nodes[[kept[i], c]]);
        Part {
            mesh,
            node_labels: kept.iter().map(|&k| labels[k]).collect(),
        }
    }

    /// The mesh index of each label.
    pub fn index(&self) -> HashMap<i64, usize> {
        label_index(&self.node_labels)
    }
}

pub(crate) fn label_index(labels: &[i64]) -> HashMap<i64, usize> {
    labels.iter().enumerate().map(|(i, &l)| (l, i)).collect()
}

/// Elements grouped into one block per type in the order they come: the assembly of a
/// [`FemMesh`] from any reader's element list.
#[derive(Debug, Default)]
pub(crate) struct Blocks(Vec<(ElementType, Vec<u64>, usize)>);

impl Blocks {
    /// Adds an element of type `t` on mesh nodes `nodes` (`t.node_count()` of them).
    pub(crate) fn push(&mut self, t: ElementType, nodes: &[u64]) {
        debug_assert_eq!(nodes.len(), t.node_count());
        match self.0.iter_mut().find(|b| b.0 == t) {
            Some(b) => {
                b.1.extend_from_slice(nodes);
                b.2 += 1;
            }
            None => self.0.push((t, nodes.to_vec(), 1)),
        }
    }

    /// Whether no element was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The mesh of these elements on nodes at `coords`.
    pub(crate) fn into_mesh(self, coords: Vec<f64>) -> FemMesh {
        FemMesh {
            nodes: Array2::from_shape_vec((coords.len() / 3, 3), coords).expect("n x 3"),
            blocks: self
                .0
                .into_iter()
                .map(|(t, ids, count)| ElementBlock {
                    element_type: t,
                    connectivity: Array2::from_shape_vec((count, t.node_count()), ids)
                        .expect("rows"),
                })
                .collect(),
        }
    }
}

/// Nodal 3-vectors of one result (an increment's displacement, a table's rows), by node label.
/// A result may cover only some nodes of the model (CalculiX `*NODE FILE, NSET=`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodalValues {
    /// The file it was read from.
    pub file: std::path::PathBuf,
    /// Identifier: the file, and the increment where a file holds several.
    pub id: String,
    /// The labels of the nodes with a value.
    pub labels: Vec<i64>,
    /// The value of each.
    pub values: Vec<[f64; 3]>,
}

/// Whether `name` names the snapshot whose identifier ([`NodalValues::id`]) is `id`: as a whole
/// part of it, after its start, a `/` or a space and before its end or a space (a file name
/// `s03.vtu`, a path, a `.frd` file for all its increments, one increment `increment 3` or
/// `step time 0.5`, or the bare increment number `3`), or as a file name without its extension
/// (`s03`, `run` for `run.frd.gz`).
pub fn names_snapshot(id: &str, name: &str) -> bool {
    !name.is_empty()
        && id.match_indices(name).any(|(at, _)| {
            let (head, tail) = (&id[..at], &id[at + name.len()..]);
            let file_start = head.is_empty() || head.ends_with('/');
            let extension = tail
                .strip_prefix('.')
                .is_some_and(|t| !t.split(' ').next().unwrap_or("").contains('/'));
            (file_start || head.ends_with(' '))
                && (tail.is_empty() || tail.starts_with(' ') || (file_start && extension))
        })
}

impl NodalValues {
    /// The values at `labels`, in that order; or the labels that have none.
    pub fn at(&self, labels: &[i64]) -> Result<Vec<[f64; 3]>, Vec<i64>> {
        if self.labels == labels {
            return Ok(self.values.clone());
        }
        let index = label_index(&self.labels);
        let missing: Vec<i64> = labels
            .iter()
            .copied()
            .filter(|l| !index.contains_key(l))
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        Ok(labels.iter().map(|l| self.values[index[l]]).collect())
    }
}

/// Where each node of `part` is among the points of `other`, a mesh of the same model written
/// by another program (a VTK conversion of the FEM results, whose points carry no labels and may
/// be rounded to single precision): `None` for the nodes of elements that `other` lacks.
///
/// Matched element by element: an element of `part` is the cell of `other` with as many nodes
/// whose nodes lie, in order, at the same places, within `1e-5` of the part's size or of its
/// largest coordinate, whichever is larger. So nodes of two parts that touch at one place (a
/// plate's corner on a grain's pole) are told apart by their elements. Cost: one hash of the
/// cells' centroids, then 27 probes per element.
pub fn match_points(part: &Part, other: &FemMesh) -> Vec<Option<usize>> {
    let nodes = &part.mesh.nodes;
    let extent = (0..3)
        .map(|c| {
            let (lo, hi) = nodes
                .column(c)
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                    (a.min(x), b.max(x))
                });
            (hi - lo).powi(2)
        })
        .sum::<f64>()
        .sqrt();
    let largest = nodes.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let tol = 1e-5 * extent.max(largest).max(f64::MIN_POSITIVE);
    let at = |m: &FemMesh, k: u64| {
        let r = m.nodes.row(k as usize);
        [r[0], r[1], r[2]]
    };
    let centroid = |m: &FemMesh, row: &[u64]| {
        let mut c = [0.0; 3];
        for &k in row {
            let p = at(m, k);
            for d in 0..3 {
                c[d] += p[d] / row.len() as f64;
            }
        }
        c
    };
    let key = |c: [f64; 3]| c.map(|x| (x / (4.0 * tol)).floor() as i64);
    let mut cells: HashMap<[i64; 3], Vec<Vec<u64>>> = HashMap::new();
    for b in &other.blocks {
        for row in b.connectivity.rows() {
            let row = row.to_vec();
            cells
                .entry(key(centroid(other, &row)))
                .or_default()
                .push(row);
        }
    }
    let close = |a: [f64; 3], b: [f64; 3]| (0..3).all(|d| (a[d] - b[d]).abs() <= tol);
    let mut point = vec![None; nodes.nrows()];
    for b in &part.mesh.blocks {
        for row in b.connectivity.rows() {
            let row = row.to_vec();
            let k = key(centroid(&part.mesh, &row));
            let found = (0..27)
                .map(|n| [k[0] + n % 3 - 1, k[1] + (n / 3) % 3 - 1, k[2] + n / 9 - 1])
                .filter_map(|probe| cells.get(&probe))
                .flatten()
                .find(|cell| {
                    cell.len() == row.len()
                        && cell
                            .iter()
                            .zip(&row)
                            .all(|(&q, &p)| close(at(other, q), at(&part.mesh, p)))
                });
            if let Some(cell) = found {
                for (&p, &q) in row.iter().zip(cell) {
                    point[p as usize] = Some(q as usize);
                }
            }
        }
    }
    point
}

#[cfg(test)]
mod tests {
    use super::names_snapshot;

    /// The names a snapshot answers to (issue #23: the scalars' rows are paired by them).
    #[test]
    fn a_snapshot_is_named_by_its_file_stem_or_increment_and_nothing_else() {
        let frd = "runs/a/ball.frd.gz increment 10 step time 1.00000E+00";
        for name in [
            "ball.frd.gz",
            "ball.frd",
            "ball",
            "runs/a/ball.frd.gz",
            "10",
            "increment 10",
            "step time 1.00000E+00",
        ] {
            assert!(names_snapshot(frd, name), "{name}");
        }
        // Not a part, a directory, another increment, a time read as a stem, nothing.
        for name in ["1", "0", "a", "runs", "all", "1.00000E+00 x", ""] {
            assert!(!names_snapshot(frd, name), "{name}");
        }
        let vtu = "out/s03.vtu";
        for name in ["s03", "s03.vtu", "out/s03.vtu"] {
            assert!(names_snapshot(vtu, name), "{name}");
        }
        for name in ["3", "03", "s0", "out"] {
            assert!(!names_snapshot(vtu, name), "{name}");
        }
    }
}
