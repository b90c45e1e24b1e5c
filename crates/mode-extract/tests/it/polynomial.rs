//! Several modes: the polynomial internal-force fits on a linear problem with a closed form.
//!
//! A unit cube (C3D8) deformed by `u = a1 (x, 0, 0) + a2 (0, 0, z)`: strain `diag(a1, 0, a2)`,
//! strain energy `U = 1/2 a^T C a` with `C = [[l + 2m, l], [l, l + 2m]]` (Lame constants, unit
//! volume), and reactions on the faces x = 1 and z = 1 equal to `C a`, work-conjugate to their
//! displacements `a1` and `a2`. Both fits must give a quadratic energy whose Hessian at the
//! origin is the modal stiffness integrated over the mesh, and must agree with each other.

use grain::vtk::{PointData, PvdEntry, write_pvd, write_vtu};
use grain::{ElementType, InternalForce, Normalization};
use mode_extract::mirror::mirror;
use mode_extract::modes::Keep;
use mode_extract::{ExtractOptions, Method, extract};

fn assert_matches_stiffness(law: &InternalForce, k: &ndarray::Array2<f64>, what: &str) {
    let InternalForce::Polynomial(p) = law else {
        panic!("{what}: expected a polynomial law, got {law:?}")
    };
    let h = p.stiffness_at_origin(2);
    let scale = k.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for a in 0..2 {
        for b in 0..2 {
            assert!(
                (h[a][b] - k[[a, b]]).abs() < 1e-9 * scale,
                "{what}: H[{a}][{b}] = {} against K = {}",
                h[a][b],
                k[[a, b]]
            );
        }
    }
}

#[test]
fn two_mode_fits_of_a_linear_cube_give_its_modal_stiffness() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = fem::box_mesh(ElementType::Hex8, [0.0; 3], [1.0; 3], [2, 2, 2]);
    let (e, nu) = (1000.0, 0.3);
    let (lambda, mu) = (
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
        e / (2.0 * (1.0 + nu)),
    );
    let c = [[lambda + 2.0 * mu, lambda], [lambda, lambda + 2.0 * mu]];
    let amplitudes: Vec<[f64; 2]> = (0..9)
        .map(|i| {
            let t = i as f64;
            [1e-3 * (0.9 * t + 0.2).sin(), 2e-3 * (0.5 * t).cos()]
        })
        .collect();
    let mut entries = Vec::new();
    let mut scalars =
        String::from("snapshot,strain_energy,force_x,displacement_x,force_z,displacement_z\n");
    for (s, a) in amplitudes.iter().enumerate() {
        let u: Vec<f64> = mesh
            .nodes
            .rows()
            .into_iter()
            .flat_map(|p| [a[0] * p[0], 0.0, a[1] * p[2]])
            .collect();
        let file = format!("s{s}.vtu");
        write_vtu(
            &dir.path().join(&file),
            &mesh,
            &[PointData::Vectors("U", &u)],
        )
        .unwrap();
        entries.push(PvdEntry {
            time: s as f64,
            file: file.into(),
        });
        let r = [
            c[0][0] * a[0] + c[0][1] * a[1],
            c[1][0] * a[0] + c[1][1] * a[1],
        ];
        let energy = 0.5 * (a[0] * r[0] + a[1] * r[1]);
        scalars.push_str(&format!(
            "s{s},{energy:e},{:e},{:e},{:e},{:e}\n",
            r[0], a[0], r[1], a[1]
        ));
    }
    let pvd = dir.path().join("run.pvd");
    write_pvd(&pvd, &entries).unwrap();
    std::fs::write(dir.path().join("scalars.csv"), scalars).unwrap();
    let options = ExtractOptions {
        method: Method::Svd(Keep::Count(2)),
        normalization: Normalization::Mass,
        material: mode_extract::MaterialOptions {
            youngs_modulus: Some(e),
            poisson_ratio: Some(nu),
            density: Some(1.0),
        },
        units: "test".into(),
        scalars: Some(dir.path().join("scalars.csv")),
        ..ExtractOptions::new(vec![pvd])
    };
    let b = extract(&options).unwrap();
    assert_matches_stiffness(&b.internal_force, &b.stiffness, "cube");
    let fit = b.info.fit.as_ref().unwrap();
    assert!(fit.energy_vs_force.unwrap() < 1e-9, "{fit:?}");
    assert!((fit.slope_over_stiffness - 1.0).abs() < 1e-9, "{fit:?}");
    // The cubic terms of a quadratic energy vanish (relative to the quadratic ones at the data).
    let InternalForce::Polynomial(p) = &b.internal_force else {
        unreachable!()
    };
    let size = |powers: &[u32]| {
        powers
            .iter()
            .enumerate()
            .map(|(k, &q)| {
                b.coords
                    .column(k)
                    .fold(0.0f64, |m, v| m.max(v.abs()))
                    .powi(q as i32)
            })
            .product::<f64>()
    };
    let energy_scale = p
        .terms
        .iter()
        .filter(|t| t.degree() == 2)
        .map(|t| (t.coefficient * size(&t.powers)).abs())
        .fold(0.0, f64::max);
    for t in p.terms.iter().filter(|t| t.degree() == 3) {
        assert!(
            (t.coefficient * size(&t.powers)).abs() < 1e-9 * energy_scale,
            "{t:?}"
        );
    }
    // Mirrored across x = 0: the law still has the mirrored grain's integrated stiffness at the
    // origin, whether the modes keep their values (unit-l2: K doubles) or are scaled by 1/sqrt 2
    // to stay mass-normalized (K unchanged).
    let whole = mirror(&b, &[0]).unwrap();
    assert_matches_stiffness(&whole.internal_force, &whole.stiffness, "mirrored, mass");
    let unit = ExtractOptions {
        normalization: Normalization::UnitL2,
        ..options.clone()
    };
    let whole = mirror(&extract(&unit).unwrap(), &[0]).unwrap();
    assert_matches_stiffness(&whole.internal_force, &whole.stiffness, "mirrored, unit-l2");
    let too_high = ExtractOptions {
        degree: 7,
        ..options
    };
    let e = extract(&too_high).unwrap_err().to_string();
    assert!(e.contains("--degree") && e.contains("2 to 6, got 7"), "{e}");
}

/// Issue #23: snapshots that only move the grain (a rigid translation, and a small rotation)
/// give no deformation mode: refused, naming the mode's stiffness against the material's scale
/// `E / (rho L^2)` (it was written with K = 5e-29). The same cube stretched gives a mode.
#[test]
fn a_rigid_motion_is_not_a_deformation_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = fem::box_mesh(ElementType::Hex8, [0.0; 3], [1.0; 3], [2, 2, 2]);
    let extract_from = |name: &str, u: &dyn Fn(&[f64]) -> [f64; 3]| {
        let field: Vec<f64> = mesh
            .nodes
            .rows()
            .into_iter()
            .flat_map(|p| u(p.as_slice().unwrap()))
            .collect();
        let file = dir.path().join(format!("{name}.vtu"));
        write_vtu(&file, &mesh, &[PointData::Vectors("U", &field)]).unwrap();
        extract(&ExtractOptions {
            method: Method::Single,
            material: mode_extract::MaterialOptions {
                youngs_modulus: Some(1000.0),
                poisson_ratio: Some(0.3),
                density: Some(1.0),
            },
            ..ExtractOptions::new(vec![file])
        })
    };
    for (name, u) in [
        (
            "shift",
            &(|_: &[f64]| [1e-3, -2e-3, 0.5e-3]) as &dyn Fn(&[f64]) -> [f64; 3],
        ),
        ("turn", &(|p: &[f64]| [-1e-6 * p[1], 1e-6 * p[0], 0.0])),
    ] {
        let e = extract_from(name, u).unwrap_err().to_string();
        assert!(
            e.contains("--snapshots: mode 0 has no stiffness") && e.contains("a rigid motion"),
            "{name}: {e}"
        );
    }
    extract_from("stretch", &|p| [1e-3 * p[0], 0.0, 0.0]).unwrap();
}
