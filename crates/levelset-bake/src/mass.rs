//! Mass properties: exact polyhedral integrals for closed triangle meshes, and the principal frame.

use nalgebra::{Matrix3, Point3, SymmetricEigen, Vector3};

use grain::LevelSetGrid;

use crate::surface::TriangleMesh;

/// Volume, centroid and inertia tensor (about the centroid, per unit density) of a solid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MassProperties {
    /// Volume.
    pub volume: f64,
    /// Centroid (centre of mass at uniform density).
    pub center: Point3<f64>,
    /// Inertia tensor about the centroid per unit density (length^5), in the frame of the input.
    pub inertia: Matrix3<f64>,
}

impl MassProperties {
    /// Exact integrals over the solid a closed, outward-oriented mesh encloses, by the divergence
    /// theorem per triangle (D. Eberly, "Polyhedral Mass Properties (Revisited)", 2002, the
    /// formulas of Mirtich 1996 reduced to triangles). Coordinates are first shifted to the
    /// bounding-box centre, which keeps the sums free of cancellation for meshes far from the
    /// origin.
    pub fn of_mesh(mesh: &TriangleMesh) -> Self {
        let (lo, hi) = mesh.bounds().expect("a checked mesh has vertices");
        let shift = nalgebra::center(&lo, &hi).coords;
        // Integrals of 1, x, y, z, x^2, y^2, z^2, xy, yz, zx.
        let mut s = [0.0f64; 10];
        for f in 0..mesh.triangles.len() {
            let [p0, p1, p2] = mesh.corners(f).map(|p| p.coords - shift);
            let d = (p1 - p0).cross(&(p2 - p0));
            let sub = |w0: f64, w1: f64, w2: f64| {
                let t0 = w0 + w1;
                let f1 = t0 + w2;
                let t1 = w0 * w0;
                let t2 = t1 + w1 * t0;
                let f2 = t2 + w2 * f1;
                let f3 = w0 * t1 + w1 * t2 + w2 * f2;
                (
                    f1,
                    f2,
                    f3,
                    f2 + w0 * (f1 + w0),
                    f2 + w1 * (f1 + w1),
                    f2 + w2 * (f1 + w2),
                )
            };
            let (f1x, f2x, f3x, g0x, g1x, g2x) = sub(p0.x, p1.x, p2.x);
            let (_, f2y, f3y, g0y, g1y, g2y) = sub(p0.y, p1.y, p2.y);
            let (_, f2z, f3z, g0z, g1z, g2z) = sub(p0.z, p1.z, p2.z);
            s[0] += d.x * f1x;
            s[1] += d.x * f2x;
            s[2] += d.y * f2y;
            s[3] += d.z * f2z;
            s[4] += d.x * f3x;
            s[5] += d.y * f3y;
            s[6] += d.z * f3z;
            s[7] += d.x * (p0.y * g0x + p1.y * g1x + p2.y * g2x);
            s[8] += d.y * (p0.z * g0y + p1.z * g1y + p2.z * g2y);
            s[9] += d.z * (p0.x * g0z + p1.x * g1z + p2.x * g2z);
        }
        let scale = [
            1.0 / 6.0,
            1.0 / 24.0,
            1.0 / 24.0,
            1.0 / 24.0,
            1.0 / 60.0,
            1.0 / 60.0,
            1.0 / 60.0,
            1.0 / 120.0,
            1.0 / 120.0,
            1.0 / 120.0,
        ];
        for (v, k) in s.iter_mut().zip(scale) {
            *v *= k;
        }
        let volume = s[0];
        let c = Vector3::new(s[1], s[2], s[3]) / volume;
        // Second moments about the centroid (parallel-axis theorem on the raw moments).
        let (xx, yy, zz) = (
            s[4] - volume * c.x * c.x,
            s[5] - volume * c.y * c.y,
            s[6] - volume * c.z * c.z,
        );
        let (xy, yz, zx) = (
            s[7] - volume * c.x * c.y,
            s[8] - volume * c.y * c.z,
            s[9] - volume * c.z * c.x,
        );
        let inertia = Matrix3::new(yy + zz, -xy, -zx, -xy, xx + zz, -yz, -zx, -yz, xx + yy);
        MassProperties {
            volume,
            center: Point3::from(c + shift),
            inertia,
        }
    }
}

/// The principal axes of an inertia tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrincipalFrame {
    /// Rows are the principal axes (input-frame unit vectors): `x_local = rotation (x - c)`.
    /// A proper rotation (determinant +1).
    pub rotation: Matrix3<f64>,
    /// Principal moments along the local x, y, z axes, increasing.
    pub moments: [f64; 3],
}

impl PrincipalFrame {
    /// Diagonalizes a symmetric inertia tensor (nalgebra's symmetric eigensolver). Conventions,
    /// so that the frame is reproducible: moments in increasing order; each axis has its
    /// largest-magnitude component positive, then the last axis is flipped if needed for a
    /// right-handed frame. Equal moments (relative 1e-9) leave the axes free within their
    /// eigenspace; they are then taken as close as possible to the input axes (all three equal:
    /// the input frame itself).
    pub fn of_inertia(inertia: &Matrix3<f64>) -> Self {
        let eigen = SymmetricEigen::new(*inertia);
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| eigen.eigenvalues[a].total_cmp(&eigen.eigenvalues[b]));
        let moments = order.map(|i| eigen.eigenvalues[i]);
        let mut axes: [Vector3<f64>; 3] = order.map(|i| eigen.eigenvectors.column(i).into_owned());
        let tol = 1e-9 * moments[2].abs().max(f64::MIN_POSITIVE);
        let same = |a: usize, b: usize| (moments[a] - moments[b]).abs() <= tol;
        if same(0, 1) && same(1, 2) {
            axes = [Vector3::x(), Vector3::y(), Vector3::z()];
        } else if same(0, 1) || same(1, 2) {
            // One distinct axis; the other two are any orthonormal pair normal to it.
            let distinct = if same(0, 1) { 2 } else { 0 };
            let v = axes[distinct];
            let e = [Vector3::x(), Vector3::y(), Vector3::z()]
                .into_iter()
                .min_by(|a, b| a.dot(&v).abs().total_cmp(&b.dot(&v).abs()))
                .expect("three axes");
            let u = (e - v * e.dot(&v)).normalize();
            let (first, second) = if distinct == 2 { (0, 1) } else { (1, 2) };
            axes[first] = u;
            axes[second] = v.cross(&u);
        }
        for a in &mut axes {
            let big = a.iamax();
            if a[big] < 0.0 {
                *a = -*a;
            }
        }
        if axes[0].cross(&axes[1]).dot(&axes[2]) < 0.0 {
            axes[2] = -axes[2];
        }
        PrincipalFrame {
            rotation: Matrix3::from_rows(&[
                axes[0].transpose(),
                axes[1].transpose(),
                axes[2].transpose(),
            ]),
            moments,
        }
    }
}

/// Volume, centroid and inertia of the solid `phi < 0` described by a level-set grid. Each grid
/// node stands for the cube of side `spacing` around it. Cubes farther than half their diagonal
/// from the surface are wholly inside or outside; the others are sampled at 4 x 4 x 4 points of
/// the trilinear interpolant. The error is of the order of the surface area times
/// `(spacing / 4)^2 / spacing`, i.e. a small fraction of a cell layer.
pub fn grid_mass_properties(grid: &LevelSetGrid) -> MassProperties {
    const SUB: usize = 4;
    let spec = grid.spec();
    let h = spec.spacing;
    let [_, ny, nz] = spec.dims;
    let half_diagonal = 0.5 * 3f64.sqrt() * h;
    let (mut v, mut first, mut second) = (0.0, Vector3::zeros(), Matrix3::zeros());
    let mut add = |p: Vector3<f64>, w: f64| {
        v += w;
        first += p * w;
        second += p * p.transpose() * w;
    };
    for (n, &phi) in grid.values().iter().enumerate() {
        let node = spec.node(n / (ny * nz), (n / nz) % ny, n % nz).coords;
        if phi <= -half_diagonal {
            add(node, h * h * h);
        } else if phi < half_diagonal {
            let w = (h / SUB as f64).powi(3);
            for a in 0..SUB {
                for b in 0..SUB {
                    for c in 0..SUB {
                        let offset = Vector3::new(a as f64, b as f64, c as f64)
                            .map(|t| (t + 0.5) / SUB as f64 - 0.5)
                            * h;
                        let p = node + offset;
                        if grid.value(&Point3::from(p)) < 0.0 {
                            add(p, w);
                        }
                    }
                }
            }
        }
    }
    let c = first / v;
    // Second moments about the centroid, then I = tr(S) 1 - S.
    let s = second - c * c.transpose() * v;
    MassProperties {
        volume: v,
        center: Point3::from(c),
        inertia: Matrix3::identity() * s.trace() - s,
    }
}
