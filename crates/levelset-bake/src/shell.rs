//! The normal shell of a closed triangle mesh: a point `x` near the surface written as
//!
//! `x = sum_i b_i (v_i + d n_i)`, `b_i >= 0`, `sum_i b_i = 1`,
//!
//! over one triangle's vertices `v_i` and their unit angle-weighted pseudonormals `n_i`, with its
//! foot `c = sum_i b_i v_i` on the triangle: the prisms between a surface and its offset of a shell
//! map (Porumbescu, Budge, Feng and Joy, "Shell maps", ACM TOG 24(3), 2005, which cuts them into
//! tetrahedra), here with each prism's layers the offset triangles `v_i + d n_i`. Neighbouring
//! triangles share their edges' normals, so the prisms `{sum_i b_i (v_i + d n_i)}` meet along ruled
//! faces and the foot moves continuously with `x` across the edges. The closest point of the facets
//! does not: it sweeps a face at the rate of `x` and stands still over an edge's wedge (or jumps
//! across the bisector of an edge that folds inward), so a field continued from it is stretched in
//! stripes (docs/physics.md section 5).
//!
//! Finding the foot: for each candidate triangle the offset triangle `v_i + d n_i` passes through
//! `x` where `det[v_i + d n_i - x] = 0`, a cubic in `d`, solved by Newton's method from the
//! distance to the triangle's plane; the barycentric coordinates of `x` in that offset triangle
//! are then read off, and the candidate is kept if they are all non-negative. Of the triangles
//! that hold `x` the one with the smallest `|d|` gives the foot: the candidates are those around
//! the closest triangle's vertices and their neighbours. A prism whose offset triangle has turned
//! over (past the point where the normals cross, inside a concave region) is not taken. Where no
//! candidate holds `x` (there, or where the foot lies farther than the candidates reach) the foot
//! is the closest point ([`Foot::closest`]).

use nalgebra::{Matrix3, Point3, Vector3};

use crate::bvh::TriangleBvh;
use crate::surface::TriangleMesh;

/// A mesh prepared for foot queries.
pub struct NormalShell {
    mesh: TriangleMesh,
    bvh: TriangleBvh,
    /// Unit angle-weighted pseudonormal of every vertex.
    normals: Vec<Vector3<f64>>,
    /// The triangles around every vertex.
    around: Vec<Vec<u32>>,
}

/// The foot of a point on the mesh ([`NormalShell::foot`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Foot {
    /// The point on the mesh.
    pub point: Point3<f64>,
    /// Whether no prism held the point and `point` is its closest point instead.
    pub closest: bool,
    /// The point's distance to the mesh (to its closest point, whichever the foot).
    pub distance: f64,
}

/// The barycentric coordinates' tolerance below 0 at a prism's faces.
const FACE_TOLERANCE: f64 = 1e-9;

impl NormalShell {
    /// Prepares the queries. The mesh must be closed and consistently oriented
    /// ([`TriangleMesh::check`]), as for [`crate::Signing::PseudoNormal`].
    pub fn new(mesh: &TriangleMesh) -> Self {
        let bvh = TriangleBvh::new(mesh);
        let mut normals = vec![Vector3::zeros(); mesh.vertices.len()];
        let mut around = vec![Vec::new(); mesh.vertices.len()];
        for (f, t) in mesh.triangles.iter().enumerate() {
            for (k, &v) in t.iter().enumerate() {
                normals[v as usize] = bvh.vertex_pseudonormal(f, k);
                around[v as usize].push(f as u32);
            }
        }
        NormalShell {
            mesh: mesh.clone(),
            bvh,
            normals: normals
                .into_iter()
                .map(|n| n.try_normalize(0.0).unwrap_or_else(Vector3::zeros))
                .collect(),
            around,
        }
    }

    /// The foot of `x` on the mesh (module docs). Cost: one closest-point query and, per
    /// candidate triangle (a few dozen), a cubic's Newton iteration and a 2 x 2 solve.
    pub fn foot(&self, x: &Point3<f64>) -> Foot {
        let closest = self
            .bvh
            .closest(x, f64::INFINITY)
            .expect("a mesh has triangles");
        let mut candidates: Vec<u32> = self.mesh.triangles[closest.triangle as usize]
            .iter()
            .flat_map(|&v| &self.around[v as usize])
            .flat_map(|&f| self.mesh.triangles[f as usize])
            .flat_map(|v| self.around[v as usize].iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let best = candidates
            .iter()
            .filter_map(|&f| self.in_prism(f as usize, x))
            .min_by(|a, b| a.0.abs().total_cmp(&b.0.abs()));
        let distance = closest.dist2.sqrt();
        match best {
            Some((_, point)) => Foot {
                point,
                closest: false,
                distance,
            },
            None => Foot {
                point: closest.point,
                closest: true,
                distance,
            },
        }
    }

    /// `(d, c)` if triangle `f`'s prism holds `x` at offset `d` over the foot `c`.
    fn in_prism(&self, f: usize, x: &Point3<f64>) -> Option<(f64, Point3<f64>)> {
        let t = self.mesh.triangles[f];
        let v = t.map(|i| self.mesh.vertices[i as usize]);
        let n = t.map(|i| self.normals[i as usize]);
        // det(A + d B), rows A_i = v_i - x and B_i = n_i: a cubic c0 + c1 d + c2 d^2 + c3 d^3.
        let a = v.map(|p| p - x);
        let det =
            |r: [&Vector3<f64>; 3]| Matrix3::from_rows(&r.map(|r| r.transpose())).determinant();
        let c = [
            det([&a[0], &a[1], &a[2]]),
            det([&n[0], &a[1], &a[2]]) + det([&a[0], &n[1], &a[2]]) + det([&a[0], &a[1], &n[2]]),
            det([&a[0], &n[1], &n[2]]) + det([&n[0], &a[1], &n[2]]) + det([&n[0], &n[1], &a[2]]),
            det([&n[0], &n[1], &n[2]]),
        ];
        let face = (v[1] - v[0]).cross(&(v[2] - v[0])).try_normalize(0.0)?;
        let mut d = (x - v[0]).dot(&face);
        let scale = (v[1] - v[0]).norm() + (v[2] - v[0]).norm() + d.abs();
        let mut converged = false;
        for _ in 0..50 {
            let value = c[0] + d * (c[1] + d * (c[2] + d * c[3]));
            let slope = c[1] + d * (2.0 * c[2] + d * 3.0 * c[3]);
            let step = value / slope;
            if !step.is_finite() {
                return None;
            }
            d -= step;
            if step.abs() <= 1e-14 * scale {
                converged = true;
                break;
            }
        }
        if !converged {
            return None;
        }
        // x's barycentric coordinates in the offset triangle q_i = v_i + d n_i.
        let q: [Point3<f64>; 3] = std::array::from_fn(|i| v[i] + n[i] * d);
        let (e1, e2, r) = (q[1] - q[0], q[2] - q[0], x - q[0]);
        let (m11, m12, m22) = (e1.dot(&e1), e1.dot(&e2), e2.dot(&e2));
        let det2 = m11 * m22 - m12 * m12;
        let b1 = (r.dot(&e1) * m22 - r.dot(&e2) * m12) / det2;
        let b2 = (m11 * r.dot(&e2) - m12 * r.dot(&e1)) / det2;
        let b = [1.0 - b1 - b2, b1, b2];
        let off = (q[0].coords * b[0] + q[1].coords * b[1] + q[2].coords * b[2]) - x.coords;
        // Past the point where the normals cross (in a concave region) the offset triangle has
        // turned over: such a prism folds the map and is not taken.
        let upright = e1.cross(&e2).dot(&face) > 0.0;
        let holds = b.iter().all(|&b| b >= -FACE_TOLERANCE) && off.norm() <= 1e-9 * scale;
        (upright && holds).then(|| {
            let b = b.map(|b| b.max(0.0));
            let sum = b[0] + b[1] + b[2];
            (
                d,
                Point3::from((v[0].coords * b[0] + v[1].coords * b[1] + v[2].coords * b[2]) / sum),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::Primitive;

    /// A point off a vertex along the vertex's normal, outside or inside, has that vertex for its
    /// foot: every prism around the vertex holds it there, at barycentric coordinate 1.
    #[test]
    fn a_point_along_a_vertex_normal_has_that_vertex_for_its_foot() {
        let mesh = Primitive::Sphere { radius: 1.0 }.surface_mesh(0.2);
        let shell = NormalShell::new(&mesh);
        for (v, p) in mesh.vertices.iter().enumerate().step_by(7) {
            for d in [0.3, -0.2, 0.0] {
                let x = p + shell.normals[v] * d;
                let foot = shell.foot(&x);
                assert!(!foot.closest);
                assert!((foot.point - p).norm() < 1e-9, "{v} {d}: {:?}", foot.point);
            }
        }
    }

    /// Outside a convex mesh the foot moves less than the point (the prisms fan out), and
    /// continuously across the edges: along a line that crosses many prisms, every step's foot
    /// moves at most as far as the step. The closest point on the same line jumps (an edge's
    /// wedge holds it still and the next face releases it), which is what the shell removes.
    #[test]
    fn outside_a_convex_mesh_the_foot_moves_less_than_the_point() {
        let mesh = Primitive::Sphere { radius: 1.0 }.surface_mesh(0.2);
        let shell = NormalShell::new(&mesh);
        let field = crate::DistanceField::new(&mesh, crate::Signing::PseudoNormal);
        let steps = 2000;
        let at = |s: f64| Point3::new(-0.9 + 1.8 * s, 0.3 * s, 1.25);
        let mut shell_worst = 0.0f64;
        let mut closest_worst = 0.0f64;
        for i in 0..steps {
            let (x0, x1) = (
                at(i as f64 / steps as f64),
                at((i + 1) as f64 / steps as f64),
            );
            let (f0, f1) = (shell.foot(&x0), shell.foot(&x1));
            assert!(!f0.closest && !f1.closest);
            shell_worst = shell_worst.max((f1.point - f0.point).norm() / (x1 - x0).norm());
            let (c0, c1) = (field.closest_point(&x0).0, field.closest_point(&x1).0);
            closest_worst = closest_worst.max((c1 - c0).norm() / (x1 - x0).norm());
        }
        // Less than the point (0.788 measured; the smooth sphere's radial map gives at most
        // `R / |x| <= 1 / 1.25` on this line).
        assert!(shell_worst < 1.0, "{shell_worst}");
        // The closest point sweeps a face at the point's own rate.
        assert!(closest_worst > 0.99, "{closest_worst}");
    }
}
