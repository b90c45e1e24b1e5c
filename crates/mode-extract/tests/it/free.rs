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
    // Mass-normalized, orthogonal, and K phi = lambda M phi.
    let phi = &modes.shapes;
    let mass = phi.transpose() * &m * phi;
    let stiffness = phi.transpose() * &k * phi;
    for a in 0..12 {
        for b in 0..12 {
            let delta = f64::from(a == b);
            assert!(
                (mass[(a, b)] - delta).abs() < 1e-10,
                "M[{a},{b}] = {}",
                mass[(a, b)]
            );
            let want = delta * modes.eigenvalues[a];
            assert!(
                (stiffness[(a, b)] - want).abs() < 1e-9 * modes.eigenvalues[11],
                "K[{a},{b}] = {}",
                stiffness[(a, b)]
            );
        }
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
