//! Structured meshes of a box, for beams, tests and convergence studies.

use std::collections::HashMap;

use grain::{ElementBlock, ElementType, FemMesh};
use ndarray::Array2;

/// A box `[lo, hi]` cut into `cells` hexahedral cells per axis, meshed with `element`: one hex
/// per cell, or six positively oriented tetrahedra around each cell's diagonal; quadratic
/// elements get mid-edge nodes shared between neighbours. Node order is Abaqus's.
pub fn box_mesh(element: ElementType, lo: [f64; 3], hi: [f64; 3], cells: [usize; 3]) -> FemMesh {
    let n = cells;
    let mut nodes: Vec<[f64; 3]> = Vec::new();
    let id = |i: usize, j: usize, k: usize| ((i * (n[1] + 1) + j) * (n[2] + 1) + k) as u64;
    let at = |d: usize, i: usize| lo[d] + (hi[d] - lo[d]) * i as f64 / n[d] as f64;
    for i in 0..=n[0] {
        for j in 0..=n[1] {
            for k in 0..=n[2] {
                nodes.push([at(0, i), at(1, j), at(2, k)]);
            }
        }
    }
    let tets = matches!(element, ElementType::Tet4 | ElementType::Tet10);
    let mut cells_out: Vec<Vec<u64>> = Vec::new();
    for i in 0..n[0] {
        for j in 0..n[1] {
            for k in 0..n[2] {
                // Abaqus hex order: bottom (z-) face counter-clockwise, then top.
                let h = [
                    id(i, j, k),
                    id(i + 1, j, k),
                    id(i + 1, j + 1, k),
                    id(i, j + 1, k),
                    id(i, j, k + 1),
                    id(i + 1, j, k + 1),
                    id(i + 1, j + 1, k + 1),
                    id(i, j + 1, k + 1),
                ];
                if tets {
                    for [a, b, c] in [
                        [1, 2, 6],
                        [2, 3, 6],
                        [3, 7, 6],
                        [7, 4, 6],
                        [4, 5, 6],
                        [5, 1, 6],
                    ] {
                        cells_out.push(vec![h[0], h[a], h[b], h[c]]);
                    }
                } else {
                    cells_out.push(h.to_vec());
                }
            }
        }
    }
    let edges = element.mid_side_edges();
    let mut mid: HashMap<(u64, u64), u64> = HashMap::new();
    for c in &mut cells_out {
        let corners = c.clone();
        for &(a, b) in edges {
            let key = (corners[a].min(corners[b]), corners[a].max(corners[b]));
            let m = *mid.entry(key).or_insert_with(|| {
                let (p, q) = (nodes[key.0 as usize], nodes[key.1 as usize]);
                nodes.push([
                    0.5 * (p[0] + q[0]),
                    0.5 * (p[1] + q[1]),
                    0.5 * (p[2] + q[2]),
                ]);
                nodes.len() as u64 - 1
            });
            c.push(m);
        }
    }
    let count = cells_out.len();
    FemMesh {
        nodes: Array2::from_shape_vec((nodes.len(), 3), nodes.into_iter().flatten().collect())
            .expect("n x 3"),
        blocks: vec![ElementBlock {
            element_type: element,
            connectivity: Array2::from_shape_vec(
                (count, element.node_count()),
                cells_out.into_iter().flatten().collect(),
            )
            .expect("rows"),
        }],
    }
}
