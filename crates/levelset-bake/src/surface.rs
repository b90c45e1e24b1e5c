//! Triangle surface meshes: the geometry every grain is baked from.

use std::collections::HashMap;

use nalgebra::{Matrix3, Point3, Vector3};

use crate::error::MeshError;

/// An indexed triangle mesh. Triangles are counter-clockwise seen from outside (outward normals
/// by the right-hand rule), the convention of STL and OBJ.
#[derive(Debug, Clone, PartialEq)]
pub struct TriangleMesh {
    /// Vertex positions.
    pub vertices: Vec<Point3<f64>>,
    /// Vertex indices of each triangle.
    pub triangles: Vec<[u32; 3]>,
}

/// How a mesh's edges are used, from [`TriangleMesh::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closure {
    /// Every edge is shared by exactly two consistently oriented triangles.
    Closed,
    /// Some edges belong to one triangle only.
    Open {
        /// Number of boundary edges.
        count: usize,
        /// The boundary edge with the smallest vertex indices, for messages.
        example: (usize, usize),
    },
}

impl Closure {
    /// The refusal of an open mesh, for callers that need a closed one.
    pub fn require_closed(self) -> Result<(), MeshError> {
        match self {
            Closure::Closed => Ok(()),
            Closure::Open { count, example } => Err(MeshError::Open {
                count,
                a: example.0,
                b: example.1,
            }),
        }
    }
}

impl TriangleMesh {
    /// Builds a mesh from triangle soup (three points per triangle), merging vertices with
    /// bit-identical coordinates, as STL files need.
    pub fn from_soup(points: impl IntoIterator<Item = [Point3<f64>; 3]>) -> Self {
        let mut index: HashMap<[u64; 3], u32> = HashMap::new();
        let mut vertices = Vec::new();
        let mut triangles = Vec::new();
        for tri in points {
            let ids = tri.map(|p| {
                let key = [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
                *index.entry(key).or_insert_with(|| {
                    vertices.push(p);
                    (vertices.len() - 1) as u32
                })
            });
            triangles.push(ids);
        }
        TriangleMesh {
            vertices,
            triangles,
        }
    }

    /// The three corners of triangle `f`.
    #[inline]
    pub fn corners(&self, f: usize) -> [Point3<f64>; 3] {
        self.triangles[f].map(|i| self.vertices[i as usize])
    }

    /// Twice the area vector of triangle `f` ((b - a) x (c - a)).
    pub fn scaled_normal(&self, f: usize) -> Vector3<f64> {
        let [a, b, c] = self.corners(f);
        (b - a).cross(&(c - a))
    }

    /// Total surface area.
    pub fn area(&self) -> f64 {
        (0..self.triangles.len())
            .map(|f| 0.5 * self.scaled_normal(f).norm())
            .sum()
    }

    /// Axis-aligned bounding box `(min, max)`; `None` for a mesh without vertices.
    pub fn bounds(&self) -> Option<(Point3<f64>, Point3<f64>)> {
        let first = *self.vertices.first()?;
        Some(
            self.vertices
                .iter()
                .fold((first, first), |(lo, hi), p| (lo.inf(p), hi.sup(p))),
        )
    }

    /// Applies `x -> rotation x + translation` to every vertex (a proper rotation keeps the
    /// orientation of the triangles).
    pub fn transform(&mut self, rotation: &Matrix3<f64>, translation: &Vector3<f64>) {
        for v in &mut self.vertices {
            *v = Point3::from(rotation * v.coords + translation);
        }
    }

    /// Checks the mesh for use as a grain surface: non-empty, finite, valid indices, every vertex
    /// used by a triangle, no degenerate triangles, every edge shared by at most two triangles, consistently oriented.
    /// Returns whether it is closed (every edge shared by two triangles) or open; the caller
    /// decides whether an open mesh is acceptable.
    pub fn check(&self) -> Result<Closure, MeshError> {
        if self.triangles.is_empty() {
            return Err(MeshError::Empty);
        }
        if let Some(vertex) = self
            .vertices
            .iter()
            .position(|p| !p.iter().all(|x| x.is_finite()))
        {
            return Err(MeshError::NonFinite { vertex });
        }
        let count = self.vertices.len();
        let mut used = vec![false; count];
        for (face, tri) in self.triangles.iter().enumerate() {
            for &vertex in tri {
                match used.get_mut(vertex as usize) {
                    Some(u) => *u = true,
                    None => {
                        return Err(MeshError::BadIndex {
                            face,
                            vertex: vertex as usize,
                            count,
                        });
                    }
                }
            }
        }
        // A vertex no triangle uses would become a surface node floating off the grain and
        // stretch the grid to it (and the degeneracy scale below).
        if let Some(vertex) = used.iter().position(|u| !u) {
            return Err(MeshError::UnusedVertex {
                vertex,
                unused: used.iter().filter(|u| !**u).count(),
            });
        }
        let scale = self.bounds().map_or(0.0, |(lo, hi)| (hi - lo).norm());
        // Directed edges: (from, to) -> face. A second use of the same direction is an
        // orientation error; a third use of the undirected edge is non-manifold.
        let mut directed: HashMap<(u32, u32), usize> =
            HashMap::with_capacity(3 * self.triangles.len());
        for (face, tri) in self.triangles.iter().enumerate() {
            let area2 = self.scaled_normal(face).norm();
            if tri[0] == tri[1]
                || tri[1] == tri[2]
                || tri[0] == tri[2]
                || area2 <= 1e-14 * scale * scale
            {
                return Err(MeshError::Degenerate { face });
            }
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                if let Some(&other) = directed.get(&(a, b)) {
                    // Same direction twice: either a flipped neighbour or a third triangle.
                    return Err(if directed.contains_key(&(b, a)) {
                        MeshError::NonManifoldEdge {
                            a: a as usize,
                            b: b as usize,
                            count: 3,
                        }
                    } else {
                        MeshError::Orientation {
                            face_a: other,
                            face_b: face,
                            a: a as usize,
                            b: b as usize,
                        }
                    });
                }
                directed.insert((a, b), face);
            }
        }
        let boundary: Vec<(u32, u32)> = directed
            .keys()
            .filter(|(a, b)| !directed.contains_key(&(*b, *a)))
            .copied()
            .collect();
        Ok(match boundary.iter().min() {
            None => Closure::Closed,
            Some(&(a, b)) => Closure::Open {
                count: boundary.len(),
                example: (a as usize, b as usize),
            },
        })
    }
}
