//! Analytic grains: sphere, cuboid, cylinder and ellipsoid, centred at the origin with their
//! axes along x, y, z (already their principal frame). Each has an exact signed distance, exact
//! mass properties, its exact surface area, and a triangulation of its surface at a chosen
//! spacing (for surface nodes).

use std::collections::HashMap;
use std::f64::consts::PI;

use nalgebra::{Point3, Vector3};

use crate::error::BakeError;
use crate::surface::TriangleMesh;

/// An analytic grain shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Primitive {
    /// Ball of radius `radius`.
    Sphere {
        /// Radius.
        radius: f64,
    },
    /// Box with half side lengths `half` along x, y, z.
    Cuboid {
        /// Half side lengths.
        half: [f64; 3],
    },
    /// Circular cylinder along z: radius and half height.
    Cylinder {
        /// Radius.
        radius: f64,
        /// Half of the height.
        half_height: f64,
    },
    /// Ellipsoid with semi-axes along x, y, z.
    Ellipsoid {
        /// Semi-axes.
        semi_axes: [f64; 3],
    },
}

/// Volume, and the moments of inertia about the centre along x, y, z, per unit density.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitMassProperties {
    /// Volume.
    pub volume: f64,
    /// Principal moments per unit density (length^5).
    pub moments: [f64; 3],
}

impl Primitive {
    /// Checks the dimensions (finite, > 0); `name` is used in the message.
    pub fn validate(&self) -> Result<(), BakeError> {
        let (name, dims): (&str, Vec<f64>) = match *self {
            Primitive::Sphere { radius } => ("radius", vec![radius]),
            Primitive::Cuboid { half } => ("size", half.to_vec()),
            Primitive::Cylinder {
                radius,
                half_height,
            } => ("radius/height", vec![radius, half_height]),
            Primitive::Ellipsoid { semi_axes } => ("semi-axes", semi_axes.to_vec()),
        };
        if dims.iter().all(|d| d.is_finite() && *d > 0.0) {
            Ok(())
        } else {
            Err(BakeError::parameter(
                name,
                format!("must be finite and > 0, got {dims:?}"),
            ))
        }
    }

    /// The exact signed distance (negative inside).
    pub fn signed_distance(&self, p: &Point3<f64>) -> f64 {
        match *self {
            Primitive::Sphere { radius } => p.coords.norm() - radius,
            Primitive::Cuboid { half } => {
                let q = Vector3::new(
                    p.x.abs() - half[0],
                    p.y.abs() - half[1],
                    p.z.abs() - half[2],
                );
                q.sup(&Vector3::zeros()).norm() + q.max().min(0.0)
            }
            Primitive::Cylinder {
                radius,
                half_height,
            } => {
                let (r, z) = (p.x.hypot(p.y) - radius, p.z.abs() - half_height);
                r.max(0.0).hypot(z.max(0.0)) + r.max(z).min(0.0)
            }
            Primitive::Ellipsoid { semi_axes } => ellipsoid_distance(semi_axes, p),
        }
    }

    /// Axis-aligned half extents of the shape.
    pub fn half_extents(&self) -> Vector3<f64> {
        match *self {
            Primitive::Sphere { radius } => Vector3::repeat(radius),
            Primitive::Cuboid { half } => Vector3::from(half),
            Primitive::Cylinder {
                radius,
                half_height,
            } => Vector3::new(radius, radius, half_height),
            Primitive::Ellipsoid { semi_axes } => Vector3::from(semi_axes),
        }
    }

    /// Volume and principal moments per unit density (closed forms).
    pub fn mass_properties(&self) -> UnitMassProperties {
        match *self {
            Primitive::Sphere { radius: r } => {
                let v = 4.0 / 3.0 * PI * r.powi(3);
                UnitMassProperties {
                    volume: v,
                    moments: [0.4 * v * r * r; 3],
                }
            }
            Primitive::Cuboid { half: [a, b, c] } => {
                let v = 8.0 * a * b * c;
                // m (b^2 + c^2) / 12 with full side lengths 2a, 2b, 2c.
                UnitMassProperties {
                    volume: v,
                    moments: [
                        v * (b * b + c * c) / 3.0,
                        v * (a * a + c * c) / 3.0,
                        v * (a * a + b * b) / 3.0,
                    ],
                }
            }
            Primitive::Cylinder {
                radius: r,
                half_height: h,
            } => {
                let v = 2.0 * PI * r * r * h;
                let side = v * (3.0 * r * r + 4.0 * h * h) / 12.0;
                UnitMassProperties {
                    volume: v,
                    moments: [side, side, 0.5 * v * r * r],
                }
            }
            Primitive::Ellipsoid {
                semi_axes: [a, b, c],
            } => {
                let v = 4.0 / 3.0 * PI * a * b * c;
                UnitMassProperties {
                    volume: v,
                    moments: [
                        0.2 * v * (b * b + c * c),
                        0.2 * v * (a * a + c * c),
                        0.2 * v * (a * a + b * b),
                    ],
                }
            }
        }
    }

    /// The exact surface area (the ellipsoid's by Gauss-Legendre quadrature of its area element,
    /// converged to round-off).
    pub fn area(&self) -> f64 {
        match *self {
            Primitive::Sphere { radius: r } => 4.0 * PI * r * r,
            Primitive::Cuboid { half: [a, b, c] } => 8.0 * (a * b + b * c + a * c),
            Primitive::Cylinder {
                radius: r,
                half_height: h,
            } => 2.0 * PI * r * r + 4.0 * PI * r * h,
            Primitive::Ellipsoid { semi_axes } => ellipsoid_area(semi_axes),
        }
    }

    /// A closed, outward-oriented triangulation of the surface with edges of about `spacing`,
    /// vertices on the exact surface.
    pub fn surface_mesh(&self, spacing: f64) -> TriangleMesh {
        let segments = |length: f64| ((length / spacing).ceil() as usize).max(1);
        match *self {
            Primitive::Sphere { radius } => geodesic_sphere(segments(1.1 * radius), |u| u * radius),
            Primitive::Ellipsoid { semi_axes } => {
                let longest = semi_axes.iter().copied().fold(0.0, f64::max);
                geodesic_sphere(segments(1.1 * longest), |u| {
                    u.component_mul(&Vector3::from(semi_axes))
                })
            }
            Primitive::Cuboid { half } => cuboid_mesh(half, segments),
            Primitive::Cylinder {
                radius,
                half_height,
            } => cylinder_mesh(radius, half_height, segments),
        }
    }
}

/// Distance from `p` to the ellipsoid `sum (x_i / e_i)^2 = 1`, signed (Eberly, "Distance from a
/// Point to an Ellipse, an Ellipsoid, or a Hyperellipsoid", 2013): the closest point is
/// `x_i = e_i^2 y_i / (t + e_i^2)` with `t` the root of `F(t) = sum (e_i y_i / (t + e_i^2))^2 - 1`,
/// found by bisection (robust; ~60 halvings reach round-off).
fn ellipsoid_distance(e: [f64; 3], p: &Point3<f64>) -> f64 {
    let y = [p.x.abs(), p.y.abs(), p.z.abs()];
    let inside = (y[0] / e[0]).powi(2) + (y[1] / e[1]).powi(2) + (y[2] / e[2]).powi(2) < 1.0;
    let d = closest_on_ellipsoid(&e, &y);
    if inside { -d } else { d }
}

/// Unsigned distance from `y` (first octant) to the axis-aligned ellipsoid with semi-axes `e`,
/// handling the coordinates that vanish by reducing the dimension (Eberly's procedure).
fn closest_on_ellipsoid(e: &[f64], y: &[f64]) -> f64 {
    // Order by decreasing semi-axis, as the method requires.
    let mut order: Vec<usize> = (0..e.len()).collect();
    order.sort_by(|&a, &b| e[b].total_cmp(&e[a]));
    let e: Vec<f64> = order.iter().map(|&i| e[i]).collect();
    let y: Vec<f64> = order.iter().map(|&i| y[i]).collect();
    distance_sorted(&e, &y)
}

fn distance_sorted(e: &[f64], y: &[f64]) -> f64 {
    let n = e.len();
    let last = n - 1;
    if y[last] > 0.0 {
        if y.iter().all(|&v| v > 0.0) {
            // Generic case: bisection on t in [-e_last^2, t_max].
            let z: Vec<f64> = (0..n).map(|i| y[i] / e[i]).collect();
            let g = z.iter().map(|v| v * v).sum::<f64>() - 1.0;
            if g == 0.0 {
                return 0.0;
            }
            let r: Vec<f64> = (0..n).map(|i| (e[i] / e[last]).powi(2)).collect();
            let sbar = bisect(&r, &z, g);
            let x: Vec<f64> = (0..n).map(|i| r[i] * y[i] / (sbar + r[i])).collect();
            return (0..n).map(|i| (x[i] - y[i]).powi(2)).sum::<f64>().sqrt();
        }
        // A zero coordinate other than the last: the closest point has that coordinate zero
        // too (x_i = e_i^2 y_i / (t + e_i^2) with t > -e_i^2), so the axis drops out.
        let keep: Vec<usize> = (0..n).filter(|&i| y[i] > 0.0).collect();
        let e2: Vec<f64> = keep.iter().map(|&i| e[i]).collect();
        let y2: Vec<f64> = keep.iter().map(|&i| y[i]).collect();
        return distance_sorted(&e2, &y2);
    }
    // y_last == 0: the closest point may leave the plane y_last = 0 only inside a region near
    // the axis (Eberly's case with x_last > 0); otherwise reduce the dimension.
    if n == 1 {
        return (e[0] - y[0]).abs();
    }
    let mut numer = Vec::with_capacity(last);
    let mut inside_region = true;
    for i in 0..last {
        let denom = e[i] * e[i] - e[last] * e[last];
        let v = e[i] * y[i] / denom;
        numer.push(v);
        if e[i] * y[i] >= denom {
            inside_region = false;
        }
    }
    if inside_region {
        let s: f64 = numer.iter().map(|v| v * v).sum();
        if s < 1.0 {
            let x: Vec<f64> = (0..last).map(|i| e[i] * numer[i]).collect();
            let x_last = e[last] * (1.0 - s).sqrt();
            let d2: f64 = (0..last).map(|i| (x[i] - y[i]).powi(2)).sum::<f64>() + x_last * x_last;
            return d2.sqrt();
        }
    }
    distance_sorted(&e[..last], &y[..last])
}

/// Root of `sum (r_i z_i / (s + r_i))^2 - 1` by bisection (Eberly's `GetRoot`).
fn bisect(r: &[f64], z: &[f64], g: f64) -> f64 {
    let n = z.len();
    let mut s0 = z[n - 1] - 1.0;
    let mut s1 = if g < 0.0 {
        0.0
    } else {
        (r.iter()
            .zip(z)
            .map(|(ri, zi)| (ri * zi).powi(2))
            .sum::<f64>())
        .sqrt()
            - 1.0
    };
    let mut s = 0.0;
    for _ in 0..2100 {
        s = 0.5 * (s0 + s1);
        if s == s0 || s == s1 {
            break;
        }
        let value: f64 = r
            .iter()
            .zip(z)
            .map(|(ri, zi)| (ri * zi / (s + ri)).powi(2))
            .sum::<f64>()
            - 1.0;
        if value > 0.0 {
            s0 = s;
        } else if value < 0.0 {
            s1 = s;
        } else {
            break;
        }
    }
    s
}

/// Surface area of an ellipsoid: the integral of `|x_u x x_v|` over the parametrization
/// `(a cos u sin v, b sin u sin v, c cos v)`, by tensor Gauss-Legendre rules doubled until two
/// successive results agree to 1e-14.
fn ellipsoid_area([a, b, c]: [f64; 3]) -> f64 {
    let integrate = |n: usize| -> f64 {
        let rule = gauss_legendre(n);
        let mut total = 0.0;
        // u in [0, 2 pi], v in [0, pi].
        for &(xu, wu) in &rule {
            let u = PI * (xu + 1.0);
            for &(xv, wv) in &rule {
                let v = 0.5 * PI * (xv + 1.0);
                let (su, cu, sv, cv) = (u.sin(), u.cos(), v.sin(), v.cos());
                let n = Vector3::new(b * c * cu * sv * sv, a * c * su * sv * sv, a * b * sv * cv);
                total += wu * wv * n.norm();
            }
        }
        total * PI * 0.5 * PI
    };
    let mut n = 16;
    let mut previous = integrate(n);
    loop {
        n *= 2;
        let next = integrate(n);
        if (next - previous).abs() <= 1e-14 * next || n >= 1024 {
            return next;
        }
        previous = next;
    }
}

/// Gauss-Legendre nodes and weights on [-1, 1].
pub(crate) fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (1..=n)
        .map(|i| {
            let mut x = (PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let k = k as f64;
                    (p0, p1) = (p1, ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k);
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

/// A geodesic sphere of frequency `f` (every icosahedron edge split in `f`), unit vertices mapped
/// by `place`. Vertices on shared edges are generated once, from the edge's sorted ends.
fn geodesic_sphere(f: usize, place: impl Fn(Vector3<f64>) -> Vector3<f64>) -> TriangleMesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let corners: Vec<Vector3<f64>> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .iter()
    .map(|c| Vector3::from(*c).normalize())
    .collect();
    let faces: [[usize; 3]; 20] = [
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    let mut vertices: Vec<Point3<f64>> = Vec::new();
    let mut index: HashMap<(usize, usize, usize), u32> = HashMap::new();
    let mut add =
        |key: (usize, usize, usize), dir: Vector3<f64>, vertices: &mut Vec<Point3<f64>>| -> u32 {
            *index.entry(key).or_insert_with(|| {
                vertices.push(Point3::from(place(dir.normalize())));
                (vertices.len() - 1) as u32
            })
        };
    let mut triangles = Vec::new();
    for (face_id, &[a, b, c]) in faces.iter().enumerate() {
        // Point (i, j) of the face: a + i/f (b - a) + j/f (c - a), i + j <= f.
        let mut id = |i: usize, j: usize, vertices: &mut Vec<Point3<f64>>| -> u32 {
            let k = f - i - j;
            // Corners and edge points get a face-independent key; interior points a face key.
            let (key, dir) = match (i, j, k) {
                (0, 0, _) => ((a, a, 0), corners[a]),
                (_, 0, 0) => ((b, b, 0), corners[b]),
                (0, _, 0) => ((c, c, 0), corners[c]),
                (_, 0, _) => edge_point(a, b, i, f, &corners),
                (0, _, _) => edge_point(a, c, j, f, &corners),
                (_, _, 0) => edge_point(b, c, j, f, &corners),
                _ => (
                    (usize::MAX - face_id, i, j),
                    corners[a] * (k as f64) + corners[b] * (i as f64) + corners[c] * (j as f64),
                ),
            };
            add(key, dir, vertices)
        };
        for i in 0..f {
            for j in 0..f - i {
                let (p, q, r) = (
                    id(i, j, &mut vertices),
                    id(i + 1, j, &mut vertices),
                    id(i, j + 1, &mut vertices),
                );
                triangles.push([p, q, r]);
                if i + j + 1 < f {
                    let s = id(i + 1, j + 1, &mut vertices);
                    triangles.push([q, s, r]);
                }
            }
        }
    }
    TriangleMesh {
        vertices,
        triangles,
    }
}

/// The `step`-th of `f` points along the edge from corner `from` to `to`, keyed by the sorted
/// corner pair so that both faces sharing the edge get the same vertex.
fn edge_point(
    from: usize,
    to: usize,
    step: usize,
    f: usize,
    corners: &[Vector3<f64>],
) -> ((usize, usize, usize), Vector3<f64>) {
    let (lo, hi, s) = if from < to {
        (from, to, step)
    } else {
        (to, from, f - step)
    };
    let dir = corners[lo] * ((f - s) as f64) + corners[hi] * (s as f64);
    ((lo, hi, s), dir)
}

/// A box surface: each face a grid of squares split in two triangles.
fn cuboid_mesh(half: [f64; 3], segments: impl Fn(f64) -> usize) -> TriangleMesh {
    let mut soup = Vec::new();
    for axis in 0..3 {
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        let (nu, nv) = (segments(2.0 * half[u]), segments(2.0 * half[v]));
        for side in [-1.0, 1.0] {
            let point = |i: usize, j: usize| {
                let mut p = Point3::origin();
                p[axis] = side * half[axis];
                p[u] = half[u] * (2.0 * i as f64 / nu as f64 - 1.0);
                p[v] = half[v] * (2.0 * j as f64 / nv as f64 - 1.0);
                p
            };
            for i in 0..nu {
                for j in 0..nv {
                    let (p00, p10, p01, p11) = (
                        point(i, j),
                        point(i + 1, j),
                        point(i, j + 1),
                        point(i + 1, j + 1),
                    );
                    // (u, v, axis) is right-handed: counter-clockwise in (u, v) faces +axis.
                    if side > 0.0 {
                        soup.push([p00, p10, p11]);
                        soup.push([p00, p11, p01]);
                    } else {
                        soup.push([p00, p11, p10]);
                        soup.push([p00, p01, p11]);
                    }
                }
            }
        }
    }
    TriangleMesh::from_soup(soup)
}

/// A cylinder surface: the side as a grid in (angle, z), each cap as rings of triangles.
fn cylinder_mesh(radius: f64, half_height: f64, segments: impl Fn(f64) -> usize) -> TriangleMesh {
    let around = segments(2.0 * PI * radius).max(6);
    let along = segments(2.0 * half_height);
    let rings = segments(radius);
    let angle = |k: usize| 2.0 * PI * (k % around) as f64 / around as f64;
    let on = |r: f64, k: usize, z: f64| Point3::new(r * angle(k).cos(), r * angle(k).sin(), z);
    let mut soup = Vec::new();
    for k in 0..around {
        for s in 0..along {
            let (z0, z1) = (
                -half_height + 2.0 * half_height * s as f64 / along as f64,
                -half_height + 2.0 * half_height * (s + 1) as f64 / along as f64,
            );
            let z1 = if s + 1 == along { half_height } else { z1 };
            soup.push([
                on(radius, k, z0),
                on(radius, k + 1, z0),
                on(radius, k + 1, z1),
            ]);
            soup.push([on(radius, k, z0), on(radius, k + 1, z1), on(radius, k, z1)]);
        }
    }
    for (z, up) in [(-half_height, false), (half_height, true)] {
        for ring in 0..rings {
            let (r0, r1) = (
                radius * ring as f64 / rings as f64,
                radius * (ring + 1) as f64 / rings as f64,
            );
            let r1 = if ring + 1 == rings { radius } else { r1 };
            for k in 0..around {
                let tri = |a: Point3<f64>, b: Point3<f64>, c: Point3<f64>| {
                    if up { [a, b, c] } else { [a, c, b] }
                };
                if ring == 0 {
                    soup.push(tri(
                        Point3::new(0.0, 0.0, z),
                        on(r1, k, z),
                        on(r1, k + 1, z),
                    ));
                } else {
                    soup.push(tri(on(r0, k, z), on(r1, k, z), on(r1, k + 1, z)));
                    soup.push(tri(on(r0, k, z), on(r1, k + 1, z), on(r0, k + 1, z)));
                }
            }
        }
    }
    TriangleMesh::from_soup(soup)
}
