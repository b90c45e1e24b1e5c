//! A bounding-volume hierarchy over triangles for exact closest-point queries, with the
//! angle-weighted pseudonormals of the closest feature (for the sign of the distance).
//!
//! Written here rather than taken from parry: parry's general composite-shape query costs about
//! 2.2 us per point on a 20,480-triangle sphere (measured with this crate's benchmark), several
//! times what a query specialized to triangles and seeded with a good distance bound costs. The
//! pseudonormals are those of Bærentzen and Aanæs (IEEE TVCG 11(3), 2005): at a vertex, the
//! face normals weighted by the incident angles; on an edge, the sum of the two face normals.

use std::collections::HashMap;

use nalgebra::{Point3, Vector3};

use crate::surface::TriangleMesh;

/// The part of a triangle a closest point lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feature {
    Face,
    /// Edge 0: a-b, 1: b-c, 2: c-a.
    Edge(u8),
    /// Vertex 0: a, 1: b, 2: c.
    Vertex(u8),
}

/// The closest point of the mesh to a query point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Closest {
    /// The point on the mesh.
    pub point: Point3<f64>,
    /// Squared distance to it.
    pub dist2: f64,
    /// Index of the triangle (in the mesh's order).
    pub triangle: u32,
    /// Whether the query point is inside (pseudonormal test).
    pub inside: bool,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    lo: [f64; 3],
    hi: [f64; 3],
    /// Leaf: first triangle (in `order`); inner node: index of the first child (the second is
    /// the next one).
    start: u32,
    /// Leaf: triangle count; inner node: 0.
    count: u32,
}

/// The hierarchy and the per-triangle data the queries need.
pub(crate) struct TriangleBvh {
    nodes: Vec<Node>,
    /// Triangles in leaf order: corners.
    corners: Vec<[Vector3<f64>; 3]>,
    /// Mesh index of each triangle in leaf order.
    ids: Vec<u32>,
    /// Per mesh triangle: unit face normal, edge pseudonormals (a-b, b-c, c-a), vertex
    /// pseudonormals (a, b, c).
    normals: Vec<[Vector3<f64>; 7]>,
}

const LEAF: usize = 4;

impl TriangleBvh {
    /// Builds the hierarchy by recursive median splits along the longest axis of the centroids.
    pub fn new(mesh: &TriangleMesh) -> Self {
        let n = mesh.triangles.len();
        let corners_of = |f: usize| mesh.corners(f).map(|p| p.coords);
        let centroid = |f: usize| {
            let [a, b, c] = corners_of(f);
            (a + b + c) / 3.0
        };
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut nodes = vec![Node { lo: [0.0; 3], hi: [0.0; 3], start: 0, count: 0 }];
        build(&mut nodes, 0, &mut order, (0, n), &|f| corners_of(f as usize), &|f| centroid(f as usize));
        TriangleBvh {
            nodes,
            corners: order.iter().map(|&f| corners_of(f as usize)).collect(),
            ids: order,
            normals: pseudonormals(mesh),
        }
    }

    /// The closest point, if closer than `sqrt(max_dist2)`.
    pub fn closest(&self, p: &Point3<f64>, max_dist2: f64) -> Option<Closest> {
        let q = p.coords;
        let mut best = max_dist2;
        let mut found: Option<(usize, Vector3<f64>, Feature)> = None;
        let mut stack: [u32; 64] = [0; 64];
        let mut top = 1usize;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            if node.count > 0 {
                for t in node.start as usize..(node.start + node.count) as usize {
                    let (c, feature) = closest_on_triangle(&q, &self.corners[t]);
                    let d2 = (c - q).norm_squared();
                    if d2 < best || (d2 == best && found.is_none()) {
                        best = d2;
                        found = Some((t, c, feature));
                    }
                }
                continue;
            }
            // Visit the nearer child first: push it last.
            let (l, r) = (node.start as usize, node.start as usize + 1);
            let (dl, dr) = (box_distance2(&self.nodes[l], &q), box_distance2(&self.nodes[r], &q));
            let (near, d_near, far, d_far) = if dl <= dr { (l, dl, r, dr) } else { (r, dr, l, dl) };
            if d_far <= best {
                stack[top] = far as u32;
                top += 1;
            }
            if d_near <= best {
                stack[top] = near as u32;
                top += 1;
            }
        }
        let (t, point, feature) = found?;
        let id = self.ids[t];
        let n = &self.normals[id as usize];
        let pseudonormal = match feature {
            Feature::Face => n[0],
            Feature::Edge(e) => n[1 + e as usize],
            Feature::Vertex(v) => n[4 + v as usize],
        };
        Some(Closest {
            point: Point3::from(point),
            dist2: best,
            triangle: id,
            inside: (q - point).dot(&pseudonormal) < 0.0,
        })
    }

    /// Squared distance from `p` to one triangle (mesh index), for seeding bounds.
    pub fn distance2_to(&self, p: &Point3<f64>, triangle: u32, mesh: &TriangleMesh) -> f64 {
        let corners = mesh.corners(triangle as usize).map(|c| c.coords);
        let (c, _) = closest_on_triangle(&p.coords, &corners);
        (c - p.coords).norm_squared()
    }
}

/// Builds the subtree of `order[start..end]` into `nodes[slot]`.
fn build(
    nodes: &mut Vec<Node>,
    slot: usize,
    order: &mut [u32],
    (start, end): (usize, usize),
    corners: &dyn Fn(u32) -> [Vector3<f64>; 3],
    centroid: &dyn Fn(u32) -> Vector3<f64>,
) {
    let mut lo = [f64::MAX; 3];
    let mut hi = [f64::MIN; 3];
    for &f in &order[start..end] {
        for c in corners(f) {
            for d in 0..3 {
                lo[d] = lo[d].min(c[d]);
                hi[d] = hi[d].max(c[d]);
            }
        }
    }
    if end - start <= LEAF {
        nodes[slot] = Node { lo, hi, start: start as u32, count: (end - start) as u32 };
        return;
    }
    // Split at the median centroid along the axis where the centroids spread most.
    let (mut clo, mut chi) = (Vector3::repeat(f64::MAX), Vector3::repeat(f64::MIN));
    for &f in &order[start..end] {
        let c = centroid(f);
        clo = clo.inf(&c);
        chi = chi.sup(&c);
    }
    let axis = (chi - clo).imax();
    let mid = (start + end) / 2;
    order[start..end].select_nth_unstable_by(mid - start, |&a, &b| centroid(a)[axis].total_cmp(&centroid(b)[axis]));
    // Children are allocated as a pair, so the second is always the first + 1.
    let first = nodes.len();
    let placeholder = Node { lo, hi, start: 0, count: 0 };
    nodes.extend([placeholder, placeholder]);
    build(nodes, first, order, (start, mid), corners, centroid);
    build(nodes, first + 1, order, (mid, end), corners, centroid);
    nodes[slot] = Node { lo, hi, start: first as u32, count: 0 };
}

#[inline]
fn box_distance2(node: &Node, q: &Vector3<f64>) -> f64 {
    let mut d2 = 0.0;
    for d in 0..3 {
        let v = (node.lo[d] - q[d]).max(q[d] - node.hi[d]).max(0.0);
        d2 += v * v;
    }
    d2
}

/// The closest point of triangle `[a, b, c]` to `p`, and the feature it lies on (C. Ericson,
/// Real-Time Collision Detection, 2005, section 5.1.5).
#[inline]
fn closest_on_triangle(p: &Vector3<f64>, [a, b, c]: &[Vector3<f64>; 3]) -> (Vector3<f64>, Feature) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (*a, Feature::Vertex(0));
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (*b, Feature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return (a + ab * (d1 / (d1 - d3)), Feature::Edge(0));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (*c, Feature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return (a + ac * (d2 / (d2 - d6)), Feature::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        return (b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6))), Feature::Edge(1));
    }
    let denom = 1.0 / (va + vb + vc);
    (a + ab * (vb * denom) + ac * (vc * denom), Feature::Face)
}

/// Face, edge and vertex pseudonormals of every triangle.
fn pseudonormals(mesh: &TriangleMesh) -> Vec<[Vector3<f64>; 7]> {
    let face: Vec<Vector3<f64>> = (0..mesh.triangles.len())
        .map(|f| mesh.scaled_normal(f).try_normalize(0.0).unwrap_or_else(Vector3::zeros))
        .collect();
    let mut vertex = vec![Vector3::zeros(); mesh.vertices.len()];
    let mut edge: HashMap<(u32, u32), Vector3<f64>> = HashMap::new();
    for (f, t) in mesh.triangles.iter().enumerate() {
        let p = mesh.corners(f);
        for k in 0..3 {
            let (u, v) = (p[(k + 1) % 3] - p[k], p[(k + 2) % 3] - p[k]);
            vertex[t[k] as usize] += face[f] * u.angle(&v);
            let key = (t[k].min(t[(k + 1) % 3]), t[k].max(t[(k + 1) % 3]));
            *edge.entry(key).or_insert_with(Vector3::zeros) += face[f];
        }
    }
    mesh.triangles
        .iter()
        .enumerate()
        .map(|(f, t)| {
            let e = |i: usize, j: usize| edge[&(t[i].min(t[j]), t[i].max(t[j]))];
            [face[f], e(0, 1), e(1, 2), e(2, 0), vertex[t[0] as usize], vertex[t[1] as usize], vertex[t[2] as usize]]
        })
        .collect()
}
