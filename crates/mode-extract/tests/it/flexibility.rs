//! Static responses with inertia relief and the residual flexibility (mode_extract::free,
//! mode_extract::flexibility): against the closed-form field of an accelerating bar, and the
//! identities every residual flexibility satisfies.

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use grain::ElementType;
use mode_extract::{Elastic, FreeBody, FreeOptions, MaterialOptions, free_bundle, surface_points};

#[test]
fn a_bar_pushed_at_one_end_deforms_as_it_accelerates() {
    // Whatever the density: the d'Alembert load is the resultant spread in proportion to mass
    // (1e-9 t/mm^3, a steel-like density in mm-N-s; 1e3, kg/m^3 in SI).
    for density in [1e-9, 1e3] {
        accelerating_bar(density);
    }
}

fn accelerating_bar(density: f64) {
    // A C3D20 bar [0, L] x [0, b] x [0, h] pushed at x = 0 by a uniform pressure p, free
    // elsewhere. With inertia relief it accelerates at P / (rho V), and the d'Alembert body force
    // -P / V loads it: sigma_xx = -p (1 - x / L), the other stresses zero. The exact displacement
    // (quadratic, so C3D20 reproduces it to rounding) is, about any rigid motion,
    //   u_x = [-p (x - x^2 / (2 L)) + nu p / (2 L) ((y - y0)^2 + (z - z0)^2)] / E,
    //   u_y = -nu sigma_xx (y - y0) / E,  u_z = -nu sigma_xx (z - z0) / E
    // (strains sigma / E and -nu sigma / E, no shear: the second-degree terms of u_x cancel
    // those of u_y and u_z in eps_xy and eps_xz).
    let (length, width, height) = (4.0, 1.0, 0.8);
    let cells = [6, 2, 2];
    let mesh = fem::box_mesh(ElementType::Hex20, [0.0; 3], [length, width, height], cells);
    let material = Elastic {
        youngs_modulus: 1000.0,
        poisson_ratio: 0.3,
        density,
    };
    let body = FreeBody::new(&mesh, &material).unwrap();
    let pressure = 2.5;
    // Consistent nodal forces of a uniform pressure on each 8-node face at x = 0: -1/12 of the
    // face's force at its corners, 1/3 at its mid-side nodes.
    let n = mesh.nodes.nrows();
    let face_force = pressure * (width / cells[1] as f64) * (height / cells[2] as f64);
    let mut f = Mat::<f64>::zeros(3 * n, 1);
    for element in mesh.blocks[0].connectivity.rows() {
        for (local, &k) in element.iter().enumerate() {
            if mesh.nodes[[k as usize, 0]].abs() < 1e-12 {
                let share = if local < 8 { -1.0 / 12.0 } else { 1.0 / 3.0 };
                f[(3 * k as usize, 0)] += share * face_force;
            }
        }
    }
    let u = body.static_response(f.as_ref()).unwrap();
    let (e, nu) = (material.youngs_modulus, material.poisson_ratio);
    let (y0, z0) = (0.5 * width, 0.5 * height);
    let exact = |x: [f64; 3]| {
        let sigma = -pressure * (1.0 - x[0] / length);
        [
            (-pressure * (x[0] - x[0] * x[0] / (2.0 * length))
                + nu * pressure / (2.0 * length) * ((x[1] - y0).powi(2) + (x[2] - z0).powi(2)))
                / e,
            -nu * sigma * (x[1] - y0) / e,
            -nu * sigma * (x[2] - z0) / e,
        ]
    };
    // u - exact must be a rigid motion a + w x x: fit it by least squares and look at what is
    // left.
    let mut design = Mat::<f64>::zeros(3 * n, 6);
    let mut difference = Mat::<f64>::zeros(3 * n, 1);
    for i in 0..n {
        let x = [mesh.nodes[[i, 0]], mesh.nodes[[i, 1]], mesh.nodes[[i, 2]]];
        let ex = exact(x);
        for c in 0..3 {
            difference[(3 * i + c, 0)] = u[(3 * i + c, 0)] - ex[c];
            design[(3 * i + c, c)] = 1.0;
        }
        // w x x: rows (0, z, -y), (-z, 0, x), (y, -x, 0) against (w_x, w_y, w_z).
        design[(3 * i, 4)] = x[2];
        design[(3 * i, 5)] = -x[1];
        design[(3 * i + 1, 3)] = -x[2];
        design[(3 * i + 1, 5)] = x[0];
        design[(3 * i + 2, 3)] = x[1];
        design[(3 * i + 2, 4)] = -x[0];
    }
    let normal = design.transpose() * &design;
    let coefficients = normal
        .llt(Side::Lower)
        .unwrap()
        .solve(design.transpose() * &difference);
    let left = &difference - &design * &coefficients;
    let scale = pressure * length / e;
    let worst = (0..3 * n).map(|j| left[(j, 0)].abs()).fold(0.0, f64::max);
    assert!(
        worst < 1e-10 * scale,
        "density {density}: the response departs from the accelerating bar's by {worst:e} (scale {scale:e})"
    );
    // And the response carries no rigid motion of its own: no momentum.
    let mu = body.matrices().mass.as_ref() * u.as_ref();
    for c in 0..3 {
        let p: f64 = (0..n).map(|i| mu[(3 * i + c, 0)]).sum();
        assert!(p.abs() < 1e-12 * (0..3 * n).map(|j| mu[(j, 0)].abs()).sum::<f64>());
    }
}

#[test]
fn the_ball_s_modes_and_residual_flexibility_are_its_whole_static_response() {
    // data/fem/ball: radius 10 mm, C3D10 from gmsh, E = 1000 MPa, nu = 0.25; the bundle as
    // `mode-extract --free 11 --flexibility --patch-radius 3` writes it, read back.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/ball/ball.inp");
    let options = FreeOptions {
        mesh: path.clone(),
        element_set: None,
        redefinition: fem::Redefinition::Refuse,
        modes: 11,
        flexibility: Some(Some(3.0)),
        material: MaterialOptions::default(),
        units: "mm, N, s".into(),
    };
    let dir = tempfile::tempdir().unwrap();
    free_bundle(&options).unwrap().write(dir.path()).unwrap();
    let bundle = grain::ModesBundle::read(dir.path()).unwrap();
    let mesh = bundle.mesh.clone();
    let material = Elastic {
        youngs_modulus: bundle.info.material.youngs_modulus,
        poisson_ratio: bundle.info.material.poisson_ratio,
        density: bundle.info.material.density,
    };
    let youngs_modulus = material.youngs_modulus;
    let body = FreeBody::new(&mesh, &material).unwrap();
    let grain::ModeConstruction::Free { eigenvalues } = &bundle.info.construction else {
        panic!("not free modes: {:?}", bundle.info.construction)
    };
    // Mass-normalized: M = I and K = diag(omega^2), as integrated over the mesh.
    for a in 0..11 {
        for b in 0..11 {
            let (m, k) = (bundle.mass[[a, b]], bundle.stiffness[[a, b]]);
            let (m_want, k_want) = if a == b {
                (1.0, eigenvalues[a])
            } else {
                (0.0, 0.0)
            };
            assert!((m - m_want).abs() < 1e-9, "M[{a}][{b}] = {m}");
            assert!(
                (k - k_want).abs() < 1e-9 * eigenvalues[10],
                "K[{a}][{b}] = {k}"
            );
        }
    }
    let surface = surface_points(&mesh);
    let flexibility = bundle.flexibility.as_ref().unwrap();
    assert_eq!(
        flexibility.nodes,
        surface.nodes.iter().map(|&k| k as u64).collect::<Vec<_>>()
    );
    let g = &flexibility.matrix;
    let patch = flexibility.patch_radius;
    assert_eq!(patch, 3.0);
    let count = surface.nodes.len();
    // Symmetric (reciprocity; the writer keeps the symmetric part of the solves').
    for i in 0..count {
        for j in 0..i {
            assert_eq!(g[[i, j]], g[[j, i]]);
        }
    }
    // The surface points are the sphere's: normals radial, areas summing to 4 pi R^2 (less the
    // chords' shortfall of a mesh of size 3, under 1 %).
    let radius = 10.0;
    let at = |k: usize| {
        nalgebra::Vector3::new(mesh.nodes[[k, 0]], mesh.nodes[[k, 1]], mesh.nodes[[k, 2]])
    };
    for (&k, n) in surface.nodes.iter().zip(&surface.normals) {
        let radial = at(k) / radius;
        assert!(
            (radial.norm() - 1.0).abs() < 1e-9,
            "node {k} is not on the sphere"
        );
        assert!(
            radial.dot(&nalgebra::Vector3::from(*n)) > 0.995,
            "node {k}: normal {n:?}"
        );
    }
    let area: f64 = surface.areas.iter().sum();
    let sphere = 4.0 * std::f64::consts::PI * radius * radius;
    assert!(
        area < sphere && area > 0.99 * sphere,
        "area {area} against {sphere}"
    );
    // Modes plus residual are the whole static response: the inward displacement, weighted over
    // a patch, at the south pole, the equator and 45 degrees from the north pole, of an inward
    // patch load at the north pole, each load built here and solved whole.
    let nearest = |p: [f64; 3]| {
        (0..count)
            .min_by(|&i, &j| {
                let d = |i: usize| (at(surface.nodes[i]) - nalgebra::Vector3::from(p)).norm();
                d(i).total_cmp(&d(j))
            })
            .unwrap()
    };
    let load = |s: usize| {
        let mut f = Mat::<f64>::zeros(3 * mesh.nodes.nrows(), 1);
        let centre = at(surface.nodes[s]);
        let mut weights = Vec::new();
        for (j, &k) in surface.nodes.iter().enumerate() {
            let d = (at(k) - centre).norm() / patch;
            if d < 1.0 {
                weights.push((k, surface.areas[j] * (1.0 - d * d).sqrt()));
            }
        }
        let total: f64 = weights.iter().map(|w| w.1).sum();
        for (k, w) in weights {
            for c in 0..3 {
                f[(3 * k + c, 0)] = -w / total * surface.normals[s][c];
            }
        }
        f
    };
    let r45 = radius / 2f64.sqrt();
    let north = nearest([0.0, 0.0, radius]);
    let probes = [
        nearest([0.0, 0.0, -radius]),
        nearest([radius, 0.0, 0.0]),
        nearest([r45, 0.0, r45]),
    ];
    let whole = body.static_response(load(north).as_ref()).unwrap();
    let scale = youngs_modulus * radius; // compliances in units of 1 / (E R)
    // The modes' part at the points themselves: the inward normal component of each mode
    // there, `-n_s . phi_a(x_s)`.
    let inward = |s: usize, a: usize| -> f64 {
        let (k, n) = (surface.nodes[s], surface.normals[s]);
        -(0..3).map(|d| n[d] * bundle.phi[[a, k, d]]).sum::<f64>()
    };
    let modal = |t: usize, s: usize| -> f64 {
        (0..11)
            .map(|a| inward(t, a) * inward(s, a) / eigenvalues[a])
            .sum()
    };
    let total = |t: usize, s: usize| g[[t, s]] + modal(t, s);
    // Against the exact elastic sphere: two equal and opposite inward patch loads at the poles
    // (the same patches: chord radius 3, weight sqrt(1 - d^2 / rho^2) per unit area, parallel
    // to the axis) bulge the equator by a patch-weighted inward displacement of
    // -0.1434908 F / (E R): the series solution of the sphere with given surface tractions
    // (data/reference/sphere_series.py, Love's method: converged to 7 digits, the Navier
    // equations and the traction condition checked by finite differences). The mesh's own discretization error, measured: +1.37 %
    // at size 3 (this mesh, -0.145454), +0.56 % at size 2 (`make.py 2`, 4,410 nodes:
    // -0.144296), the h^2 of quadratic elements; 2 % bounds it here.
    let south = nearest([0.0, 0.0, -radius]);
    let east = nearest([radius, 0.0, 0.0]);
    let bulge = (total(east, north) + total(east, south)) * scale;
    let exact = -0.1434908;
    assert!(
        (bulge / exact - 1.0).abs() < 0.02,
        "equator: {bulge:.6} against the series' {exact} (x F / (E R))"
    );
    for t in probes {
        let want = (load(t).transpose() * &whole)[(0, 0)];
        let modal = modal(t, north);
        let got = modal + g[[t, north]];
        assert!(
            (got - want).abs() < 1e-9 * want.abs(),
            "probe {t}: modes {:.6} + residual {:.6} = {:.6} against the whole {:.6} (x E R)",
            modal * scale,
            g[[t, north]] * scale,
            got * scale,
            want * scale
        );
    }
}
