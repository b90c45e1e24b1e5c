//! Signed distances against exact references (named per test).

use grain::GridSpec;
use levelset_bake::{DistanceField, Extent, Primitive, Signing, TriangleMesh};
use nalgebra::{Point3, Rotation3, Vector3};

/// The exact distance to an axis-aligned box of half sides `h`, written from its definition:
/// outside, the distance to the clamped point; inside, minus the distance to the nearest face.
fn box_distance(h: [f64; 3], p: &Point3<f64>) -> f64 {
    let clamped = Point3::new(
        p.x.clamp(-h[0], h[0]),
        p.y.clamp(-h[1], h[1]),
        p.z.clamp(-h[2], h[2]),
    );
    let outside = (p - clamped).norm();
    if outside > 0.0 {
        outside
    } else {
        -(0..3)
            .map(|i| h[i] - p[i].abs())
            .fold(f64::INFINITY, f64::min)
    }
}

fn grid_around(half: f64, spacing: f64) -> GridSpec {
    let n = (2.0 * half / spacing).round() as usize + 1;
    GridSpec {
        origin: [-half; 3],
        spacing,
        dims: [n; 3],
    }
}

#[test]
fn rotated_box_mesh_matches_the_analytic_box_distance() {
    let half = [1.0, 0.6, 0.35];
    let rotation = Rotation3::from_euler_angles(0.3, -0.7, 1.1);
    let shift = Vector3::new(0.05, -0.1, 0.02);
    let mut mesh = Primitive::Cuboid { half }.surface_mesh(0.5);
    mesh.transform(rotation.matrix(), &shift);
    mesh.check().unwrap().require_closed().unwrap();
    let field = DistanceField::new(&mesh, Signing::PseudoNormal);
    let spec = grid_around(1.6, 0.1);
    let inverse = |p: Point3<f64>| Point3::from(rotation.inverse() * (p.coords - shift));
    let full = field.grid(&spec, Extent::Full);
    let band = field.grid(&spec, Extent::NarrowBand { cells: 3.0 });
    let [nx, ny, nz] = spec.dims;
    let mut worst = 0.0f64;
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let n = spec.index(i, j, k);
                let exact = box_distance(half, &inverse(spec.node(i, j, k)));
                worst = worst.max((full[n] - exact).abs());
                // The band is exact within 3 cells and holds +-3 cells, correctly signed, beyond.
                if exact.abs() <= 3.0 * spec.spacing * (1.0 - 1e-9) {
                    assert!(
                        (band[n] - exact).abs() <= 1e-9 * spec.spacing,
                        "band at {n}"
                    );
                } else {
                    assert_eq!(band[n].abs(), 3.0 * spec.spacing);
                    assert_eq!(band[n].signum(), exact.signum(), "band sign at {n}");
                }
            }
        }
    }
    assert!(worst <= 1e-9 * spec.spacing, "largest error {worst:e}");
}

#[test]
fn sphere_and_cuboid_primitives_are_exact() {
    let r = 0.8;
    let sphere = Primitive::Sphere { radius: r };
    let half = [0.9, 0.4, 0.6];
    let cuboid = Primitive::Cuboid { half };
    let spec = grid_around(1.5, 0.125);
    let [nx, ny, nz] = spec.dims;
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let p = spec.node(i, j, k);
                assert_eq!(sphere.signed_distance(&p), p.coords.norm() - r);
                let exact = box_distance(half, &p);
                assert!((cuboid.signed_distance(&p) - exact).abs() <= 1e-15, "{p}");
            }
        }
    }
}

#[test]
fn icosphere_is_within_its_chord_error_of_the_sphere() {
    let r = 1.0;
    let mesh = Primitive::Sphere { radius: r }.surface_mesh(0.1);
    assert!(mesh.triangles.len() >= 20 * 100, "{}", mesh.triangles.len());
    mesh.check().unwrap().require_closed().unwrap();
    // The polyhedron lies between the sphere and the concentric sphere through its face centres
    // nearest the centre, so the two distances differ by at most that gap.
    let chord = (0..mesh.triangles.len())
        .map(|f| {
            let [a, b, c] = mesh.corners(f);
            let n = (b - a).cross(&(c - a)).normalize();
            r - n.dot(&a.coords).abs()
        })
        .fold(0.0, f64::max);
    let field = DistanceField::new(&mesh, Signing::PseudoNormal);
    let spec = grid_around(1.5, 0.1);
    let phi = field.grid(&spec, Extent::Full);
    let [nx, ny, nz] = spec.dims;
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let p = spec.node(i, j, k);
                let err = (phi[spec.index(i, j, k)] - (p.coords.norm() - r)).abs();
                assert!(
                    err <= chord + 1e-12,
                    "{p}: error {err} > chord error {chord}"
                );
            }
        }
    }
}

#[test]
fn ellipsoid_distance_agrees_with_dense_surface_sampling() {
    let semi = [1.0, 0.6, 0.3];
    let e = Primitive::Ellipsoid { semi_axes: semi };
    // Dense parametric samples; the true distance is at most the nearest sample's distance and
    // at least that minus the largest gap between samples.
    let n = 600;
    let samples: Vec<Point3<f64>> = (0..n)
        .flat_map(|i| {
            let v = std::f64::consts::PI * (i as f64 + 0.5) / n as f64;
            (0..2 * n).map(move |j| {
                let u = std::f64::consts::PI * j as f64 / n as f64;
                Point3::new(
                    semi[0] * u.cos() * v.sin(),
                    semi[1] * u.sin() * v.sin(),
                    semi[2] * v.cos(),
                )
            })
        })
        .collect();
    let gap = std::f64::consts::PI * semi[0] / n as f64;
    let points = [
        Point3::new(1.7, 0.2, -0.4),
        Point3::new(0.3, 0.1, 0.05),
        Point3::new(0.0, 0.0, 0.0),
        Point3::new(0.5, 0.0, 0.0),
        Point3::new(0.0, 0.9, 0.0),
        Point3::new(-0.2, 0.0, 0.8),
        Point3::new(0.9, 0.5, 0.2),
    ];
    for p in points {
        let nearest = samples
            .iter()
            .map(|s| (s - p).norm())
            .fold(f64::INFINITY, f64::min);
        let d = e.signed_distance(&p).abs();
        assert!(
            d <= nearest + 1e-12 && d >= nearest - gap,
            "{p}: {d} vs sampled {nearest}"
        );
        let inside =
            (p.x / semi[0]).powi(2) + (p.y / semi[1]).powi(2) + (p.z / semi[2]).powi(2) < 1.0;
        assert_eq!(e.signed_distance(&p) < 0.0, inside);
    }
    // A sphere written as an ellipsoid.
    let ball = Primitive::Ellipsoid {
        semi_axes: [0.5; 3],
    };
    for p in points {
        assert!((ball.signed_distance(&p) - (p.coords.norm() - 0.5)).abs() <= 1e-12);
    }
}

#[test]
fn winding_number_signs_an_open_mesh() {
    // A sphere with a cap of triangles removed: pseudonormals cannot sign it, the winding number can.
    let mut mesh = Primitive::Sphere { radius: 1.0 }.surface_mesh(0.2);
    mesh.triangles
        .retain(|t| t.iter().all(|&v| mesh.vertices[v as usize].z < 0.9));
    // The cap's vertices go with its triangles (a vertex no triangle uses is refused).
    let kept: Vec<bool> = (0..mesh.vertices.len() as u32)
        .map(|v| mesh.triangles.iter().any(|t| t.contains(&v)))
        .collect();
    let mut index = Vec::new();
    let mut next = 0u32;
    for &k in &kept {
        index.push(next);
        next += u32::from(k);
    }
    let vertices = (mesh.vertices.iter().zip(&kept))
        .filter(|(_, k)| **k)
        .map(|(p, _)| *p)
        .collect();
    mesh.triangles = (mesh.triangles.iter())
        .map(|t| t.map(|v| index[v as usize]))
        .collect();
    mesh.vertices = vertices;
    assert!(matches!(
        mesh.check().unwrap(),
        levelset_bake::Closure::Open { .. }
    ));
    let field = DistanceField::new(&mesh, Signing::WindingNumber);
    assert!(field.winding_number(&Point3::origin()) > 0.9);
    assert!(field.winding_number(&Point3::new(2.0, 0.0, 0.0)).abs() < 0.1);
    let spec = grid_around(1.4, 0.2);
    let phi = field.grid(&spec, Extent::Full);
    let center = spec.index(7, 7, 7);
    assert!(phi[center] < -0.9, "{}", phi[center]);
    assert!(phi[spec.index(0, 0, 0)] > 0.0);
}

#[test]
fn surface_meshes_of_primitives_are_closed_and_outward() {
    for p in [
        Primitive::Sphere { radius: 1.0 },
        Primitive::Cuboid {
            half: [1.0, 0.5, 0.25],
        },
        Primitive::Cylinder {
            radius: 0.5,
            half_height: 1.0,
        },
        Primitive::Ellipsoid {
            semi_axes: [1.0, 0.7, 0.4],
        },
    ] {
        let mesh: TriangleMesh = p.surface_mesh(0.1);
        mesh.check().unwrap().require_closed().unwrap();
        // Every vertex on the exact surface.
        for v in &mesh.vertices {
            assert!(p.signed_distance(v).abs() <= 1e-12, "{p:?}: {v}");
        }
        // Outward: the divergence theorem gives a positive volume close to the exact one.
        let volume: f64 = (0..mesh.triangles.len())
            .map(|f| {
                let [a, b, c] = mesh.corners(f);
                a.coords.dot(&b.coords.cross(&c.coords)) / 6.0
            })
            .sum();
        let exact = p.mass_properties().volume;
        assert!(
            volume > 0.0 && (volume / exact - 1.0).abs() < 0.02,
            "{p:?}: {volume} vs {exact}"
        );
    }
}
