//! Mass properties against closed forms, and the principal frame.

use levelset_bake::{MassProperties, Primitive, PrincipalFrame};
use nalgebra::{Matrix3, Rotation3, Vector3};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn box_mesh_mass_properties_are_exact_and_its_rotated_frame_is_recovered() {
    let half = [1.5, 0.8, 0.35];
    let p = Primitive::Cuboid { half };
    let exact = p.mass_properties();
    let rotation = Rotation3::from_euler_angles(0.4, 1.2, -0.5);
    let shift = Vector3::new(100.0, -40.0, 7.5); // far from the origin on purpose
    let mut mesh = p.surface_mesh(0.3);
    mesh.transform(rotation.matrix(), &shift);
    let m = MassProperties::of_mesh(&mesh);
    assert!(
        rel(m.volume, exact.volume) < 1e-10,
        "{} vs {}",
        m.volume,
        exact.volume
    );
    assert!((m.center.coords - shift).norm() < 1e-10);
    let frame = PrincipalFrame::of_inertia(&m.inertia);
    // Moments increase: x (longest side) has the smallest moment.
    for k in 0..3 {
        assert!(
            rel(frame.moments[k], exact.moments[k]) < 1e-10,
            "{k}: {} vs {}",
            frame.moments[k],
            exact.moments[k]
        );
        // Each local axis is +- the rotated box axis.
        let axis = rotation * Vector3::ith(k, 1.0);
        let row = frame.rotation.row(k).transpose();
        assert!(
            (row.dot(&axis).abs() - 1.0).abs() < 1e-10,
            "axis {k}: {row} vs {axis}"
        );
    }
    assert!((frame.rotation.determinant() - 1.0).abs() < 1e-12);
}

#[test]
fn cylinder_and_ellipsoid_meshes_converge_to_the_closed_forms() {
    // Inscribed meshes underestimate the solid by O(spacing^2): halving the spacing must cut the
    // error about 4-fold, and the fine mesh must be close.
    for p in [
        Primitive::Cylinder {
            radius: 0.5,
            half_height: 1.2,
        },
        Primitive::Ellipsoid {
            semi_axes: [1.0, 0.7, 0.4],
        },
    ] {
        let exact = p.mass_properties();
        let error = |h: f64| {
            let m = MassProperties::of_mesh(&p.surface_mesh(h));
            let diag = m.inertia.diagonal();
            (0..3)
                .map(|k| rel(diag[k], exact.moments[k]))
                .fold(rel(m.volume, exact.volume), f64::max)
        };
        let (coarse, fine) = (error(0.1), error(0.05));
        assert!(
            fine < 5e-3 && coarse / fine > 3.0,
            "{p:?}: {coarse:e} then {fine:e}"
        );
    }
}

#[test]
fn cylinder_mass_properties_of_a_prism_are_exact() {
    // A mesh IS exact for polyhedra: a hexagonal prism against its own closed form.
    let (r, h) = (0.7f64, 1.3f64); // circumradius, half height
    let mesh = Primitive::Cylinder {
        radius: r,
        half_height: h,
    }
    .surface_mesh(100.0);
    // Coarse cylinder mesh: 6 sides (the minimum), 1 ring per cap = a regular hexagonal prism.
    assert_eq!(mesh.vertices.len(), 14);
    let area = 1.5 * 3f64.sqrt() * r * r;
    let volume = 2.0 * h * area;
    // Regular hexagon polar moment per unit thickness: 5 sqrt(3)/8 r^4; Ixx = Iyy = half of it.
    let j = 5.0 * 3f64.sqrt() / 8.0 * r.powi(4);
    let ixx = 2.0 * h * 0.5 * j + area * (2.0 * h).powi(3) / 12.0;
    let m = MassProperties::of_mesh(&mesh);
    assert!(rel(m.volume, volume) < 1e-12);
    let expected = Matrix3::from_diagonal(&Vector3::new(ixx, ixx, 2.0 * h * j));
    assert!(
        (m.inertia - expected).norm() < 1e-12 * expected.norm(),
        "{}",
        m.inertia
    );
}

#[test]
fn symmetric_bodies_keep_the_input_axes() {
    let m = MassProperties::of_mesh(&Primitive::Cuboid { half: [0.5; 3] }.surface_mesh(0.25));
    let frame = PrincipalFrame::of_inertia(&m.inertia);
    assert!((frame.rotation - Matrix3::identity()).norm() < 1e-12);
    // Two equal moments: the distinct axis is exact, the frame right-handed.
    let rotation = Rotation3::from_euler_angles(0.2, -0.3, 0.9);
    let mut mesh = Primitive::Cylinder {
        radius: 0.5,
        half_height: 1.5,
    }
    .surface_mesh(100.0);
    mesh.transform(rotation.matrix(), &Vector3::zeros());
    let frame = PrincipalFrame::of_inertia(&MassProperties::of_mesh(&mesh).inertia);
    // The axis (smallest moment: long prism) is the first local axis.
    let axis = rotation * Vector3::z();
    assert!((frame.rotation.row(0).transpose().dot(&axis).abs() - 1.0).abs() < 1e-10);
    assert!((frame.rotation.determinant() - 1.0).abs() < 1e-12);
}
