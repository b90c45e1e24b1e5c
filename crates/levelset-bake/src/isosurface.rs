//! The zero level set of a grid as a triangle mesh, by marching tetrahedra: each grid cell is
//! split into six tetrahedra around its main diagonal (the same split in every cell, so faces
//! match), and each tetrahedron the surface crosses contributes one or two triangles. Vertices
//! on a grid edge are shared by every tetrahedron using that edge, so a closed level set gives a
//! closed, consistently oriented mesh (outward normals). No lookup tables, unlike marching cubes.

use std::collections::HashMap;

use grain::LevelSetGrid;
use nalgebra::Point3;

use crate::surface::TriangleMesh;

/// The six tetrahedra of a cube around its diagonal from corner 0 to corner 7 (corner bits: x, y, z).
const TETS: [[usize; 4]; 6] = [
    [0, 1, 3, 7],
    [0, 3, 2, 7],
    [0, 2, 6, 7],
    [0, 6, 4, 7],
    [0, 4, 5, 7],
    [0, 5, 1, 7],
];

/// Extracts the surface `phi = 0` (inside: `phi < 0`).
pub fn zero_level_set(grid: &LevelSetGrid) -> TriangleMesh {
    let spec = grid.spec();
    let [nx, ny, nz] = spec.dims;
    // Values exactly 0 count as outside, nudged so that no surface vertex sits on a grid node
    // (which would make zero-length edges).
    let tiny = 1e-9 * spec.spacing;
    let value = |n: usize| {
        let v = grid.values()[n];
        if v == 0.0 { tiny } else { v }
    };
    let mut vertices: Vec<Point3<f64>> = Vec::new();
    let mut on_edge: HashMap<(usize, usize), u32> = HashMap::new();
    let mut triangles = Vec::new();
    for i in 0..nx - 1 {
        for j in 0..ny - 1 {
            for k in 0..nz - 1 {
                let corner =
                    |c: usize| spec.index(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
                let ids: [usize; 8] = std::array::from_fn(corner);
                if ids.iter().all(|&n| value(n) < 0.0) || ids.iter().all(|&n| value(n) > 0.0) {
                    continue;
                }
                for tet in TETS {
                    let t = tet.map(|c| ids[c]);
                    let inside: Vec<usize> =
                        t.iter().copied().filter(|&n| value(n) < 0.0).collect();
                    let outside: Vec<usize> =
                        t.iter().copied().filter(|&n| value(n) > 0.0).collect();
                    if inside.is_empty() || outside.is_empty() {
                        continue;
                    }
                    let mut vertex = |a: usize, b: usize| -> u32 {
                        let key = (a.min(b), a.max(b));
                        *on_edge.entry(key).or_insert_with(|| {
                            let (va, vb) = (value(a), value(b));
                            let s = va / (va - vb);
                            let (pa, pb) = (node(grid, a), node(grid, b));
                            vertices.push(pa + (pb - pa) * s);
                            (vertices.len() - 1) as u32
                        })
                    };
                    let mut polygon: Vec<u32> = Vec::with_capacity(4);
                    match (inside.len(), outside.len()) {
                        (1, 3) => polygon.extend(outside.iter().map(|&o| vertex(inside[0], o))),
                        (3, 1) => polygon.extend(inside.iter().map(|&i| vertex(i, outside[0]))),
                        _ => {
                            // Two and two: a quad, its corners in cyclic order.
                            let (a, b, c, d) = (inside[0], inside[1], outside[0], outside[1]);
                            polygon.extend([
                                vertex(a, c),
                                vertex(a, d),
                                vertex(b, d),
                                vertex(b, c),
                            ]);
                        }
                    }
                    // Orient outward: from the inside corners towards the outside ones.
                    let centroid = |ns: &[usize]| {
                        ns.iter()
                            .map(|&n| node(grid, n).coords)
                            .sum::<nalgebra::Vector3<f64>>()
                            / ns.len() as f64
                    };
                    let outward = centroid(&outside) - centroid(&inside);
                    let p = |v: u32| vertices[v as usize];
                    let normal =
                        (p(polygon[1]) - p(polygon[0])).cross(&(p(polygon[2]) - p(polygon[0])));
                    if normal.dot(&outward) < 0.0 {
                        polygon.reverse();
                    }
                    triangles.push([polygon[0], polygon[1], polygon[2]]);
                    if polygon.len() == 4 {
                        triangles.push([polygon[0], polygon[2], polygon[3]]);
                    }
                }
            }
        }
    }
    TriangleMesh {
        vertices,
        triangles,
    }
}

fn node(grid: &LevelSetGrid, n: usize) -> Point3<f64> {
    let [_, ny, nz] = grid.spec().dims;
    grid.spec().node(n / (ny * nz), (n / nz) % ny, n % nz)
}
