//! The boundary surface of a solid mesh: the element faces that belong to one element only,
//! triangulated over the FEM nodes (quadratic faces through their mid-side nodes, so that the
//! triangulation follows curved element faces), oriented outward.

use std::collections::HashMap;

use grain::{ElementType, FemMesh};
use nalgebra::{Point3, Vector3};

/// Faces of an element as cycles of corner indices (local, 0-based).
fn faces(element: ElementType) -> &'static [&'static [usize]] {
    match element {
        ElementType::Tet4 | ElementType::Tet10 => &[&[0, 1, 2], &[0, 1, 3], &[1, 2, 3], &[0, 2, 3]],
        _ => &[
            &[0, 1, 2, 3],
            &[4, 5, 6, 7],
            &[0, 1, 5, 4],
            &[1, 2, 6, 5],
            &[2, 3, 7, 6],
            &[3, 0, 4, 7],
        ],
    }
}

/// Local index of the mid-side node on the edge between two corners (quadratic elements).
fn mid_side(element: ElementType, a: usize, b: usize) -> Option<usize> {
    let edges = element.mid_side_edges();
    let first_mid = element.node_count() - edges.len();
    edges
        .iter()
        .position(|&(p, q)| (p, q) == (a, b) || (p, q) == (b, a))
        .map(|i| first_mid + i)
}

/// The boundary of a mesh as triangles over its nodes, outward by the right-hand rule; for each
/// triangle, the element (block, index) it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundarySurface {
    /// Node indices of each triangle.
    pub triangles: Vec<[u32; 3]>,
    /// `(block, element)` owning each triangle.
    pub owners: Vec<(usize, usize)>,
}

/// Extracts the boundary surface. Faces are matched by their sorted corner nodes; a face seen
/// once is on the boundary. Each face is oriented away from its element's centroid.
pub fn boundary(mesh: &FemMesh) -> BoundarySurface {
    let node = |i: u64| {
        Point3::new(
            mesh.nodes[[i as usize, 0]],
            mesh.nodes[[i as usize, 1]],
            mesh.nodes[[i as usize, 2]],
        )
    };
    let mut count: HashMap<Vec<u64>, (usize, usize, usize, u32)> = HashMap::new();
    for (b, block) in mesh.blocks.iter().enumerate() {
        for (e, row) in block.connectivity.rows().into_iter().enumerate() {
            for (f, face) in faces(block.element_type).iter().enumerate() {
                let mut key: Vec<u64> = face.iter().map(|&c| row[c]).collect();
                key.sort_unstable();
                count
                    .entry(key)
                    .and_modify(|v| v.3 += 1)
                    .or_insert((b, e, f, 1));
            }
        }
    }
    let mut boundary_faces: Vec<(usize, usize, usize)> = count
        .into_values()
        .filter(|v| v.3 == 1)
        .map(|(b, e, f, _)| (b, e, f))
        .collect();
    boundary_faces.sort_unstable();

    let mut surface = BoundarySurface {
        triangles: Vec::new(),
        owners: Vec::new(),
    };
    for (b, e, f) in boundary_faces {
        let block = &mesh.blocks[b];
        let t = block.element_type;
        let row = block.connectivity.row(e);
        let corners: Vec<usize> = faces(t)[f].to_vec();
        let n = corners.len();
        let global = |local: usize| row[local] as u32;
        let mids: Option<Vec<usize>> = (0..n)
            .map(|i| mid_side(t, corners[i], corners[(i + 1) % n]))
            .collect();
        let mut tris: Vec<[u32; 3]> = match mids {
            None => (1..n - 1)
                .map(|i| {
                    [
                        global(corners[0]),
                        global(corners[i]),
                        global(corners[i + 1]),
                    ]
                })
                .collect(),
            Some(m) => {
                // Corner triangles, then the inner polygon of mid-side nodes as a fan.
                let mut v: Vec<[u32; 3]> = (0..n)
                    .map(|i| [global(corners[i]), global(m[i]), global(m[(i + n - 1) % n])])
                    .collect();
                v.extend((1..n - 1).map(|i| [global(m[0]), global(m[i]), global(m[i + 1])]));
                v
            }
        };
        let centroid: Vector3<f64> =
            row.iter().map(|&i| node(i).coords).sum::<Vector3<f64>>() / row.len() as f64;
        let face_centre: Vector3<f64> = corners
            .iter()
            .map(|&c| node(row[c]).coords)
            .sum::<Vector3<f64>>()
            / n as f64;
        let [a, b2, c] = [0, 1, 2].map(|k| node(row[corners[k]]).coords);
        let normal = (b2 - a).cross(&(c - a));
        if normal.dot(&(face_centre - centroid)) < 0.0 {
            for tri in &mut tris {
                tri.swap(1, 2);
            }
        }
        surface
            .owners
            .extend(std::iter::repeat_n((b, e), tris.len()));
        surface.triangles.extend(tris);
    }
    surface
}
