//! A scaled bundle (`GrainBundle::scaled`, docs/physics.md section 10) against the bundle baked at
//! the scaled size, whose modal data come from the closed forms of a uniform dilation of a sphere
//! of radius `R` (`Phi(x) = x`, strain `I`): `M = int rho |x|^2 dV = 4 pi rho R^5 / 5`,
//! `K = int I : C : I dV = 9 kappa V = 12 pi kappa R^3`, a Kelvin-Voigt damping `C = 12 pi eta R^3`,
//! and the table `F = K eps`, `U = K eps^2 / 2`.

use grain::{ForceTable, GrainBundle, InternalForce, TableInterpolation};
use levelset_bake::{
    BakeOptions, Extent, Modal, ModeField, NodeChoice, OpenMesh, Primitive, attach_modes,
    bake_primitive,
};
use nalgebra::{Point3, Vector3};
use ndarray::Array2;

struct Dilation;

impl ModeField for Dilation {
    fn count(&self) -> usize {
        1
    }
    fn values(&self, x: &Point3<f64>) -> Vec<Vector3<f64>> {
        vec![x.coords]
    }
}

/// The sphere of radius `r` baked at spacing `r / 8` with its dilation mode (density `rho`, bulk
/// modulus `kappa`, viscosity `eta`).
fn baked(r: f64) -> GrainBundle {
    let (rho, kappa, eta) = (2.5, 40.0, 0.3);
    let options = BakeOptions {
        spacing: r / 8.0,
        pad_cells: 3,
        extent: Extent::Full,
        nodes: NodeChoice::Count(400),
        density: rho,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let mut b = bake_primitive(&Primitive::Sphere { radius: r }, &options).unwrap();
    let pi = std::f64::consts::PI;
    let k = 12.0 * pi * kappa * r.powi(3);
    let one = |v: f64| Array2::from_elem((1, 1), v);
    let eps = vec![-0.05, 0.0, 0.05, 0.1];
    let modal = Modal {
        mass: one(4.0 * pi * rho * r.powi(5) / 5.0),
        stiffness: one(k),
        damping: one(12.0 * pi * eta * r.powi(3)),
        internal_force: InternalForce::Table {
            interpolation: TableInterpolation::Linear,
            table: ForceTable {
                force: eps.iter().map(|e| k * e).collect(),
                energy: eps.iter().map(|e| 0.5 * k * e * e).collect(),
                eps,
            },
        },
        material: None,
        flexibility: None,
    };
    attach_modes(&mut b, &Dilation, modal, &[-0.04, 0.0, 0.04]).unwrap();
    b.bundle
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn a_scaled_bundle_is_the_bundle_baked_at_the_scaled_size() {
    let s = 1.7;
    let small = baked(1.0);
    let large = baked(s);
    let scaled = small.scaled(s).unwrap();
    // The baker is not exactly scale-covariant in floating point (its grid and nodes are
    // computed from the scaled numbers): agreement to round-off, 1e-9.
    let tol = 1e-9;
    let (p, q) = (&scaled.properties, &large.properties);
    assert!(close(p.volume, q.volume, tol), "{} {}", p.volume, q.volume);
    assert!(close(p.mass, q.mass, tol));
    for k in 0..3 {
        assert!(close(p.principal_moments[k], q.principal_moments[k], tol));
    }
    let (g, h) = (scaled.levelset.spec(), large.levelset.spec());
    assert_eq!(g.dims, h.dims);
    assert!(close(g.spacing, h.spacing, tol));
    for k in 0..3 {
        assert!((g.origin[k] - h.origin[k]).abs() < tol * s);
    }
    let values = scaled.levelset.values().iter().zip(large.levelset.values());
    assert!(values.into_iter().all(|(a, b)| (a - b).abs() < tol * s));
    assert_eq!(scaled.nodes.dim(), large.nodes.dim());
    assert!(
        scaled
            .nodes
            .iter()
            .zip(&large.nodes)
            .all(|(a, b)| (a - b).abs() < tol * s)
    );
    let areas = scaled.node_areas.iter().zip(&large.node_areas);
    assert!(areas.into_iter().all(|(a, b)| close(*a, *b, tol)));
    let (d, e) = (
        scaled.deformation.as_ref().unwrap(),
        large.deformation.as_ref().unwrap(),
    );
    assert!(close(d.modal_mass[[0, 0]], e.modal_mass[[0, 0]], tol));
    assert!(close(
        d.modal_stiffness[[0, 0]],
        e.modal_stiffness[[0, 0]],
        tol
    ));
    assert!(close(d.modal_damping[[0, 0]], e.modal_damping[[0, 0]], tol));
    match (&d.internal_force, &e.internal_force) {
        (InternalForce::Table { table: t, .. }, InternalForce::Table { table: u, .. }) => {
            assert_eq!(t.eps, u.eps);
            for (a, b) in t
                .force
                .iter()
                .chain(&t.energy)
                .zip(u.force.iter().chain(&u.energy))
            {
                assert!(
                    (a - b).abs() <= tol * u.force.iter().fold(0.0, |m, f| f64::max(m, f.abs()))
                );
            }
        }
        _ => panic!("tables expected"),
    }
    let modes = d.node_modes.iter().zip(&e.node_modes);
    assert!(modes.into_iter().all(|(a, b)| (a - b).abs() < tol * s));
    let grid = d.grid_modes.iter().zip(&e.grid_modes);
    assert!(grid.into_iter().all(|(a, b)| (a - b).abs() < tol * s));
    for (x, y) in d.precomputed[0].iter().zip(&e.precomputed[0]) {
        assert_eq!(x.amplitude, y.amplitude);
        assert!(
            x.values
                .iter()
                .zip(&y.values)
                .all(|(a, b)| (a - b).abs() < tol * s)
        );
    }
    // What the scaling means: the frequency sqrt(K/M) goes as 1/s.
    let omega = |b: &GrainBundle| {
        let d = b.deformation.as_ref().unwrap();
        (d.modal_stiffness[[0, 0]] / d.modal_mass[[0, 0]]).sqrt()
    };
    assert!(close(omega(&small) / omega(&scaled), s, 1e-12));
    // A scaled bundle passes the bundle checks, written and read back.
    let dir = tempfile::tempdir().unwrap();
    scaled.write(&dir.path().join("scaled.grain")).unwrap();
    assert_eq!(
        GrainBundle::read(&dir.path().join("scaled.grain")).unwrap(),
        scaled
    );
    assert!(small.scaled(0.0).is_err() && small.scaled(f64::NAN).is_err());
}
