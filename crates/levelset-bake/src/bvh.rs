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
    /// Normal cone of the node (see [`Cone`]).
    cone: Cone,
    /// `[min, max]` of `axis . x` over the node's triangles, `axis` the cone's: the slab that
    /// holds them, a tighter distance bound than the box for a point facing the node.
    slab: [f64; 2],
    /// Radius of the box's bounding sphere (centred at the box centre).
    radius: f64,
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
        let mut nodes = vec![Node {
            lo: [0.0; 3],
            hi: [0.0; 3],
            cone: Cone::NONE,
            slab: [0.0; 2],
            radius: 0.0,
            start: 0,
            count: 0,
        }];
        let normals = pseudonormals(mesh);
        let ring = one_ring_normals(mesh);
        let leaf_cone = |faces: &[u32]| match &ring {
            Some(ring) => Cone::around(
                faces
                    .iter()
                    .flat_map(|&f| mesh.triangles[f as usize])
                    .flat_map(|v| ring[v as usize].iter().copied()),
            ),
            None => Cone::NONE,
        };
        build(
            &mut nodes,
            0,
            &mut order,
            (0, n),
            &|f| corners_of(f as usize),
            &|f| centroid(f as usize),
            &leaf_cone,
        );
        TriangleBvh {
            nodes,
            corners: order.iter().map(|&f| corners_of(f as usize)).collect(),
            ids: order,
            normals,
        }
    }

    /// The angle-weighted pseudonormal (not normalized) of corner `k` of mesh triangle `f`.
    pub fn vertex_pseudonormal(&self, f: usize, k: usize) -> Vector3<f64> {
        self.normals[f][4 + k]
    }

    /// The closest point, if closer than `sqrt(max_dist2)`.
    pub fn closest(&self, p: &Point3<f64>, max_dist2: f64) -> Option<Closest> {
        let q = p.coords;
        // A bound from a seed triangle is that triangle's own distance: the bounds of the boxes
        // around it may exceed it by rounding, so the bound gets a few ulps of slack.
        let mut best = max_dist2 * (1.0 + 1e-12);
        let mut found: Option<(usize, Vector3<f64>, Feature)> = None;
        let mut stack: [u32; 64] = [0; 64];
        let mut top = 1usize;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            if node.cone.excludes(node, &q) {
                continue;
            }
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
            let (dl, dr) = (
                lower_bound2(&self.nodes[l], &q),
                lower_bound2(&self.nodes[r], &q),
            );
            let (near, d_near, far, d_far) = if dl <= dr {
                (l, dl, r, dr)
            } else {
                (r, dr, l, dl)
            };
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
    leaf_cone: &dyn Fn(&[u32]) -> Cone,
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
        let cone = leaf_cone(&order[start..end]);
        let slab = slab(&cone, &order[start..end], corners);
        nodes[slot] = Node {
            lo,
            hi,
            cone,
            slab,
            radius: half_diagonal(&lo, &hi),
            start: start as u32,
            count: (end - start) as u32,
        };
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
    order[start..end].select_nth_unstable_by(mid - start, |&a, &b| {
        centroid(a)[axis].total_cmp(&centroid(b)[axis])
    });
    // Children are allocated as a pair, so the second is always the first + 1.
    let first = nodes.len();
    let placeholder = Node {
        lo,
        hi,
        cone: Cone::NONE,
        slab: [0.0; 2],
        radius: 0.0,
        start: 0,
        count: 0,
    };
    nodes.extend([placeholder, placeholder]);
    build(
        nodes,
        first,
        order,
        (start, mid),
        corners,
        centroid,
        leaf_cone,
    );
    build(
        nodes,
        first + 1,
        order,
        (mid, end),
        corners,
        centroid,
        leaf_cone,
    );
    let cone = Cone::merge(&nodes[first].cone, &nodes[first + 1].cone);
    let slab = slab(&cone, &order[start..end], corners);
    nodes[slot] = Node {
        lo,
        hi,
        cone,
        slab,
        radius: half_diagonal(&lo, &hi),
        start: first as u32,
        count: 0,
    };
}

fn half_diagonal(lo: &[f64; 3], hi: &[f64; 3]) -> f64 {
    0.5 * ((hi[0] - lo[0]).powi(2) + (hi[1] - lo[1]).powi(2) + (hi[2] - lo[2]).powi(2)).sqrt()
}

/// A lower bound of the squared distance from `q` to the node's triangles: the larger of the
/// distances to its box and to its slab.
#[inline]
fn lower_bound2(node: &Node, q: &Vector3<f64>) -> f64 {
    let mut d2 = 0.0;
    for d in 0..3 {
        let v = (node.lo[d] - q[d]).max(q[d] - node.hi[d]).max(0.0);
        d2 += v * v;
    }
    if node.cone.cos > 0.0 {
        let along = Vector3::from(node.cone.axis).dot(q);
        let s = (node.slab[0] - along).max(along - node.slab[1]).max(0.0);
        d2 = d2.max(s * s);
    }
    d2
}

/// The slab of a set of triangles across a cone's axis (empty when the cone is not used).
fn slab(cone: &Cone, faces: &[u32], corners: &dyn Fn(u32) -> [Vector3<f64>; 3]) -> [f64; 2] {
    if cone.cos <= 0.0 {
        return [0.0; 2];
    }
    let axis = Vector3::from(cone.axis);
    faces
        .iter()
        .flat_map(|&f| corners(f))
        .fold([f64::MAX, f64::MIN], |[lo, hi], c| {
            let t = axis.dot(&c);
            [lo.min(t), hi.max(t)]
        })
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
        return (
            b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6))),
            Feature::Edge(1),
        );
    }
    let denom = 1.0 / (va + vb + vc);
    (a + ab * (vb * denom) + ac * (vc * denom), Feature::Face)
}

/// Face, edge and vertex pseudonormals of every triangle.
fn pseudonormals(mesh: &TriangleMesh) -> Vec<[Vector3<f64>; 7]> {
    let face: Vec<Vector3<f64>> = (0..mesh.triangles.len())
        .map(|f| {
            mesh.scaled_normal(f)
                .try_normalize(0.0)
                .unwrap_or_else(Vector3::zeros)
        })
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
            [
                face[f],
                e(0, 1),
                e(1, 2),
                e(2, 0),
                vertex[t[0] as usize],
                vertex[t[1] as usize],
                vertex[t[2] as usize],
            ]
        })
        .collect()
}

/// A cone of unit normals: axis `a` and half-angle `alpha` (as cosine and sine), containing every
/// face normal incident to a node's triangles and their vertices' one-rings.
///
/// Pruning rule: on a closed polyhedral surface, if `c` is the closest point to `p`, then
/// `p - c` lies in plus or minus the cone of the normals of the faces incident to `c`'s
/// feature (face, edge or vertex). So when every direction from the node's bounding sphere to
/// `p` is more than `alpha` away from both `a` and `-a`, no point of the node can be the
/// closest: the node is skipped. This makes queries far from a smooth surface (where many
/// triangles lie at nearly the same distance) cheap. Open meshes get no cones (a boundary
/// edge's region of closest points is not a normal cone).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cone {
    axis: [f64; 3],
    cos: f64,
    sin: f64,
}

impl Cone {
    /// The cone that prunes nothing.
    const NONE: Cone = Cone {
        axis: [0.0; 3],
        cos: -1.0,
        sin: 0.0,
    };

    /// The narrowest cone (about the mean direction) containing the unit vectors `normals`.
    fn around(normals: impl Iterator<Item = Vector3<f64>> + Clone) -> Cone {
        let sum: Vector3<f64> = normals.clone().sum();
        let Some(axis) = sum.try_normalize(1e-12) else {
            return Cone::NONE;
        };
        let cos = normals.map(|n| n.dot(&axis)).fold(1.0f64, f64::min);
        if cos <= 0.0 {
            return Cone::NONE;
        }
        Cone {
            axis: axis.into(),
            cos,
            sin: (1.0 - cos * cos).max(0.0).sqrt(),
        }
    }

    /// A cone containing two cones.
    fn merge(a: &Cone, b: &Cone) -> Cone {
        if a.cos <= 0.0 || b.cos <= 0.0 {
            return Cone::NONE;
        }
        let (va, vb) = (Vector3::from(a.axis), Vector3::from(b.axis));
        let Some(axis) = (va + vb).try_normalize(1e-12) else {
            return Cone::NONE;
        };
        // Half-angle: the larger of (angle to each child axis + that child's half-angle).
        let reach =
            |v: Vector3<f64>, c: &Cone| v.dot(&axis).clamp(-1.0, 1.0).acos() + c.sin.atan2(c.cos);
        let alpha = reach(va, a).max(reach(vb, b));
        if alpha >= std::f64::consts::FRAC_PI_2 {
            return Cone::NONE;
        }
        Cone {
            axis: axis.into(),
            cos: alpha.cos(),
            sin: alpha.sin(),
        }
    }

    /// Whether no point of `node`'s box can be the closest point to `q` (see the type docs).
    /// With `v = q - centre`, `L = |v|` and the box's bounding-sphere radius `r`, the directions
    /// from the sphere to `q` lie within `beta` of `v`, `sin(beta) = r / L`; the node is
    /// excluded when `|v . axis| < L cos(alpha + beta) = cos(alpha) sqrt(L^2 - r^2) - sin(alpha) r`.
    #[inline]
    fn excludes(&self, node: &Node, q: &Vector3<f64>) -> bool {
        if self.cos <= 0.0 {
            return false;
        }
        let centre = Vector3::new(
            0.5 * (node.lo[0] + node.hi[0]),
            0.5 * (node.lo[1] + node.hi[1]),
            0.5 * (node.lo[2] + node.hi[2]),
        );
        let v = q - centre;
        // `L^2 - r^2`, lowered by far more than its rounding: on the sphere (a box corner is on
        // it) the rule does not hold (a query at a corner vertex is its own closest point, at
        // distance 0, where `p - c` has no direction), and just off it `|v . axis|` and the reach
        // can be equal (a query straight off a corner vertex along the normal). Without the
        // margin, a corner computed a few ulps outside excluded the vertex's own triangles: a
        // grid node on the shipped beam's surface got a distance of two cells.
        let r2 = node.radius * node.radius;
        let excess = v.norm_squared() - r2 * (1.0 + 1e-9);
        if excess <= 0.0 {
            return false;
        }
        let reach = self.cos * excess.sqrt() - self.sin * node.radius;
        reach > 0.0 && v.dot(&Vector3::from(self.axis)).abs() < reach * (1.0 - 1e-12)
    }
}

/// For every vertex, the unit normals of its incident faces; `None` if the mesh has a boundary
/// edge (then no cones are used).
fn one_ring_normals(mesh: &TriangleMesh) -> Option<Vec<Vec<Vector3<f64>>>> {
    let mut directed = std::collections::HashSet::new();
    for t in &mesh.triangles {
        for k in 0..3 {
            directed.insert((t[k], t[(k + 1) % 3]));
        }
    }
    if directed.iter().any(|&(a, b)| !directed.contains(&(b, a))) {
        return None;
    }
    let mut ring = vec![Vec::new(); mesh.vertices.len()];
    for (f, t) in mesh.triangles.iter().enumerate() {
        let n = mesh
            .scaled_normal(f)
            .try_normalize(0.0)
            .unwrap_or_else(Vector3::zeros);
        for &v in t {
            ring[v as usize].push(n);
        }
    }
    Some(ring)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::Primitive;
    use rand::{RngExt, SeedableRng};

    /// A sphere whose vertices are moved in and out at random: many saddle vertices and
    /// non-convex edges, the hard case for the cone pruning.
    fn bumpy_sphere(seed: u64) -> TriangleMesh {
        let mut mesh = Primitive::Sphere { radius: 1.0 }.surface_mesh(0.15);
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed);
        for v in &mut mesh.vertices {
            *v = Point3::from(v.coords * (1.0 + 0.15 * rng.random_range(-1.0..1.0)));
        }
        mesh
    }

    #[test]
    fn closest_point_and_sign_match_brute_force_on_a_non_convex_mesh() {
        // Sharp edges and corners (a coarse box) and smooth saddles (bumpy spheres).
        let meshes = [(
            0,
            Primitive::Cuboid {
                half: [1.0, 0.7, 0.4],
            }
            .surface_mesh(2.0),
        )]
        .into_iter()
        .chain((1..=3).map(|seed| (seed, bumpy_sphere(seed))));
        for (seed, mesh) in meshes {
            assert!(mesh.check().is_ok());
            let bvh = TriangleBvh::new(&mesh);
            let field = crate::sdf::DistanceField::new(&mesh, crate::sdf::Signing::WindingNumber);
            let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(seed + 100);
            for _ in 0..3000 {
                let p = Point3::new(
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-2.0..2.0),
                );
                let brute = (0..mesh.triangles.len())
                    .map(|f| {
                        let (c, _) =
                            closest_on_triangle(&p.coords, &mesh.corners(f).map(|v| v.coords));
                        (c - p.coords).norm_squared()
                    })
                    .fold(f64::INFINITY, f64::min);
                let got = bvh.closest(&p, f64::INFINITY).unwrap();
                assert_eq!(got.dist2, brute, "seed {seed}, point {p}");
                // Sign against the generalized winding number (exact for a closed mesh).
                if brute > 1e-6 {
                    assert_eq!(got.inside, field.winding_number(&p) > 0.5, "sign at {p}");
                }
            }
        }
    }

    /// Grid nodes fall on a structured mesh's vertices and straight off them: the ties of the
    /// cone pruning (a query at a box corner, on the bounding sphere). On the shipped beam deck
    /// (C3D20, a mesh not made for this test), a node on the surface got a distance of 1 (two
    /// cells); now every vertex is at 0 and the points straight off vertices along the axes
    /// agree with brute force.
    #[test]
    fn queries_at_and_straight_off_vertices_match_brute_force() {
        let deck =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/beam/beam.inp");
        let mesh = crate::input::read_surface(&deck, None).unwrap();
        let bvh = TriangleBvh::new(&mesh);
        let brute = |p: &Vector3<f64>| {
            (0..mesh.triangles.len())
                .map(|f| {
                    let (c, _) = closest_on_triangle(p, &mesh.corners(f).map(|v| v.coords));
                    (c - p).norm_squared()
                })
                .fold(f64::INFINITY, f64::min)
        };
        for v in mesh.vertices.iter().step_by(5) {
            assert_eq!(
                bvh.closest(v, f64::INFINITY).unwrap().dist2,
                0.0,
                "vertex {v}"
            );
            for d in 0..3 {
                for offset in [-0.25, -1e-6, 1e-6, 0.25] {
                    let mut p = v.coords;
                    p[d] += offset;
                    let got = bvh.closest(&Point3::from(p), f64::INFINITY).unwrap();
                    assert_eq!(got.dist2, brute(&p), "{p}");
                }
            }
        }
    }
}
