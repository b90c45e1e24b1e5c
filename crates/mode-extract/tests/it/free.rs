//! Free-free modes from the mesh alone (mode_extract::free): against an independent dense
//! solution of the same pencil, and the properties every free mode has.

use faer::{Mat, Side};
use grain::ElementType;
use mode_extract::{Elastic, FreeError, assemble, free_modes};

const MATERIAL: Elastic = Elastic {
    youngs_modulus: 1000.0,
    poisson_ratio: 0.3,
    density: 1e-9,
};

/// A dense matrix of a sparse one.
fn dense(a: &faer::sparse::SparseColMat<usize, f64>) -> Mat<f64> {
    let mut out = Mat::zeros(a.nrows(), a.ncols());
    let a = a.as_ref();
    for j in 0..a.ncols() {
        for (&i, &v) in a.row_idx_of_col_raw(j).iter().zip(a.val_of_col(j)) {
            out[(i, j)] += v;
        }
    }
    out
}

#[test]
fn the_lowest_modes_are_those_of_a_dense_solution_of_the_whole_pencil() {
    // A brick, 2 x 1.5 x 1 in C3D10: no symmetry makes its low modes degenerate by accident.
    let mesh = fem::box_mesh(ElementType::Tet10, [0.0; 3], [2.0, 1.5, 1.0], [2, 2, 2]);
    let modes = free_modes(&mesh, &MATERIAL, 12).unwrap();
    // Independent: every eigenvalue of L^-1 K L^-T, M = L L^T dense, without shift, subspace
    // or deflation; the six smallest are the rigid motions' zeros.
    let assembled = assemble(&mesh, &MATERIAL).unwrap();
    let (k, m) = (dense(&assembled.stiffness), dense(&assembled.mass));
    let l = m.llt(Side::Lower).unwrap().L().to_owned();
    let mut t = k.clone();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(
        l.as_ref(),
        t.as_mut(),
        faer::Par::Seq,
    );
    let mut c = t.transpose().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(
        l.as_ref(),
        c.as_mut(),
        faer::Par::Seq,
    );
    let all = c.self_adjoint_eigenvalues(Side::Lower).unwrap();
    let largest = all[all.len() - 1];
    for zero in &all[..6] {
        assert!(
            zero.abs() < 1e-10 * largest,
            "rigid: {zero:e} of {largest:e}"
        );
    }
    for (a, (got, want)) in modes.eigenvalues.iter().zip(&all[6..]).enumerate() {
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "mode {a}: {got:e} against the dense {want:e}"
        );
    }
    // Each shape is its mode: the residual |K phi - lambda M phi| of the dense matrices is
    // within the solver's bound relative to lambda |M phi| (free::TOLERANCE, 1e-8).
    for a in 0..12 {
        let phi = modes.shapes.col(a);
        let (kphi, mphi) = (&k * phi, &m * phi);
        let residual = (&kphi - &mphi * faer::Scale(modes.eigenvalues[a])).norm_l2()
            / (modes.eigenvalues[a] * mphi.norm_l2());
        assert!(residual <= 1e-8, "mode {a}: residual {residual:e}");
    }
}

#[test]
fn free_modes_carry_no_momentum_and_no_angular_momentum() {
    let mesh = fem::box_mesh(
        ElementType::Hex20,
        [-1.0, 0.0, 0.5],
        [1.0, 0.6, 1.3],
        [4, 2, 2],
    );
    let modes = free_modes(&mesh, &MATERIAL, 6).unwrap();
    let assembled = assemble(&mesh, &MATERIAL).unwrap();
    let m = dense(&assembled.mass);
    let n = mesh.nodes.nrows();
    // Momentum of a velocity field v: sum_j (M v)_j along each axis; angular momentum about the
    // origin: sum_i x_i x (M v)_i (the origin is not the centre of mass: with zero momentum
    // the point does not matter).
    for a in 0..6 {
        let mv = &m * modes.shapes.col(a);
        let p: Vec<f64> = (0..3)
            .map(|c| (0..n).map(|i| mv[3 * i + c]).sum())
            .collect();
        let mut l = nalgebra::Vector3::zeros();
        for i in 0..n {
            let x =
                nalgebra::Vector3::new(mesh.nodes[[i, 0]], mesh.nodes[[i, 1]], mesh.nodes[[i, 2]]);
            l += x.cross(&nalgebra::Vector3::new(
                mv[3 * i],
                mv[3 * i + 1],
                mv[3 * i + 2],
            ));
        }
        let scale = (0..3 * n).map(|j| mv[j].abs()).sum::<f64>();
        assert!(
            p.iter().all(|c| c.abs() < 1e-12 * scale),
            "mode {a}: momentum {p:?}"
        );
        assert!(l.norm() < 1e-12 * scale, "mode {a}: angular momentum {l}");
    }
}

#[test]
fn two_bodies_in_one_mesh_are_refused() {
    let a = fem::box_mesh(ElementType::Tet10, [0.0; 3], [1.0; 3], [1, 1, 1]);
    let b = fem::box_mesh(
        ElementType::Tet10,
        [2.0, 0.0, 0.0],
        [3.0, 1.0, 1.0],
        [1, 1, 1],
    );
    let offset = a.nodes.nrows() as u64;
    let mut mesh = a.clone();
    mesh.nodes = ndarray::concatenate(ndarray::Axis(0), &[a.nodes.view(), b.nodes.view()]).unwrap();
    let mut block = b.blocks[0].clone();
    block.connectivity.mapv_inplace(|k| k + offset);
    mesh.blocks.push(block);
    let e = free_modes(&mesh, &MATERIAL, 3).unwrap_err();
    assert!(
        matches!(e, FreeError::Disconnected { bodies: 2, .. }),
        "{e}"
    );
}

/// Spherical Bessel functions `j_0 .. j_3` at `x`.
fn bessel(x: f64) -> [f64; 4] {
    let (s, c) = x.sin_cos();
    [
        s / x,
        s / (x * x) - c / x,
        (3.0 / x.powi(3) - 1.0 / x) * s - 3.0 * c / (x * x),
        (15.0 / x.powi(4) - 6.0 / (x * x)) * s - (15.0 / x.powi(3) - 1.0 / x) * c,
    ]
}

/// The root of `f` in `[lo, hi]` (a sign change) by bisection.
fn root(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    assert!(f(lo) * f(hi) < 0.0, "no sign change in [{lo}, {hi}]");
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(lo) * f(mid) <= 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn a_ball_meshed_by_gmsh_rings_at_lambs_frequencies() {
    // data/fem/ball: radius 10 mm, C3D10 of size 3 from gmsh, E = 1000 MPa, nu = 0.25.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fem/ball/ball.inp");
    let deck = fem::Deck::read(&path).unwrap();
    let solid = &deck.materials[0];
    let (youngs_modulus, poisson_ratio) = solid.elastic.unwrap();
    let material = Elastic {
        youngs_modulus,
        poisson_ratio,
        density: solid.density.unwrap(),
    };
    let mesh = deck.solids().mesh;
    let modes = free_modes(&mesh, &material, 40).unwrap();
    let (lambda, mu) = material.lame();
    let radius = 10.0;
    let beta = (mu / material.density).sqrt();
    let alpha = ((lambda + 2.0 * mu) / material.density).sqrt();
    // Lamb (1882), the free sphere's modes (the equations as in Aki and Richards, Quantitative
    // Seismology, 2002, section 8.7, with zero traction at r = a):
    // - toroidal, l = 2: (l - 1) j_l(x) - x j_(l+1)(x) = 0, x = omega a / beta (5-fold);
    // - radial (breathing, l = 0): sigma_rr = 0 for u = j_1(x r / a):
    //   (lambda + 2 mu) x j_0(x) - 4 mu j_1(x) = 0, x = omega a / alpha.
    let toroidal = root(
        |x| {
            let j = bessel(x);
            j[2] - x * j[3]
        },
        2.0,
        3.0,
    );
    let radial = root(
        |x| {
            let j = bessel(x);
            (lambda + 2.0 * mu) * x * j[0] - 4.0 * mu * j[1]
        },
        2.0,
        3.0,
    );
    let omega = |a: usize| modes.eigenvalues[a].sqrt();
    // The lowest five are 0T2. Each frequency comes out above the exact one (measured: the
    // bound of conforming elements with a consistent mass is not proven for curved elements
    // and their quadrature); this mesh's discretization error is 7.0e-4 to 8.1e-4 (1.6e-4 for
    // 0S0), and 3.2e-4 to 3.5e-4 (8.2e-5) at size 2.5 (2,577 nodes): the h^4 of quadratic
    // elements. The bounds are [0, 1.5e-3] and [0, 5e-4].
    for a in 0..5 {
        let error = omega(a) * radius / beta / toroidal - 1.0;
        assert!(
            (0.0..1.5e-3).contains(&error),
            "0T2, mode {a}: {error:+.2e}"
        );
    }
    // The sixth is not: 0S2 (2.64 for nu = 1/4) lies 5.5 % above.
    let next = omega(5) * radius / beta / toroidal - 1.0;
    assert!(next > 0.05, "mode 5 is {next:+.2e} from 0T2");
    // The breathing mode: the one with the largest M-projection on the radial field x.
    let assembled = assemble(&mesh, &material).unwrap();
    let radial_field = Mat::from_fn(3 * mesh.nodes.nrows(), 1, |i, _| mesh.nodes[[i / 3, i % 3]]);
    let mut m_radial = Mat::zeros(radial_field.nrows(), 1);
    faer::sparse::linalg::matmul::sparse_dense_matmul(
        m_radial.as_mut(),
        faer::Accum::Replace,
        assembled.mass.as_ref(),
        radial_field.as_ref(),
        1.0,
        faer::Par::Seq,
    );
    let projection = modes.shapes.transpose() * &m_radial;
    let breathing = (0..40)
        .max_by(|&a, &b| {
            projection[(a, 0)]
                .abs()
                .total_cmp(&projection[(b, 0)].abs())
        })
        .unwrap();
    let error = omega(breathing) * radius / alpha / radial - 1.0;
    assert!(
        (0.0..5e-4).contains(&error),
        "0S0, mode {breathing}: {error:+.2e}"
    );
}
