//! Removing the rigid motion from a bundle's modes (`mode-extract --remove-rigid`): a grain that
//! moves in its FEM run (pushed by a plate, carried by another grain) has snapshots that hold its
//! translation and rotation besides its deformation, but a DEM grain carries its rigid motion
//! in its position and orientation, and its modes must describe deformation about its centre of
//! mass (docs/physics.md section 7). Each mode and each point of a path loses its projection on
//! the six rigid fields in the mass inner product:
//!
//! `u' = u - sum_j c_j r_j`, `M_rr c = M_ru`, `r` the translations `e_k` and the rotations
//! `e_k x (x - x_c)` about the centre of mass `x_c`, `M_rr = int rho r_i . r_j dV`,
//! `M_ru = int rho r_i . u dV`,
//!
//! so that `int rho u' dV = 0` (the mode moves no mass: the centre of mass stays) and
//! `int rho (x - x_c) x u' dV = 0` (no linearized rotation). The modal mass is recomputed (the
//! stiffness is unchanged: a rigid field has no strain); the amplitudes and the internal force
//! are unchanged (the strain energy does not see rigid motion). Apply it to the whole grain
//! (after `--mirror`): an octant's own mean motion is not the whole grain's.

use grain::{FemMesh, ModesBundle};
use nalgebra::{DMatrix, DVector, Vector3};
use ndarray::Array3;

use crate::modal::{Elastic, ModalError, modal_matrices};

/// The bundle with the rigid motion removed from its modes and path (module docs).
pub fn remove_rigid(b: &ModesBundle) -> Result<ModesBundle, ModalError> {
    let mesh = &b.mesh;
    let n = mesh.nodes.nrows();
    let material = Elastic {
        youngs_modulus: b.info.material.youngs_modulus,
        poisson_ratio: b.info.material.poisson_ratio,
        density: b.info.material.density,
    };
    let rigid = rigid_fields(mesh, &material)?;
    // The fields to clean: the modes, then the path's points.
    let a = b.mode_count();
    let p = b.path.as_ref().map_or(0, |p| p.amplitudes.len());
    let field = |f: usize, k: usize, c: usize| match f {
        f if f < a => b.phi[[f, k, c]],
        f => b.path.as_ref().expect("path fields").displacement[[f - a, k, c]],
    };
    let fields = Array3::from_shape_fn((6 + a + p, n, 3), |(f, k, c)| match f {
        f if f < 6 => rigid[f][k][c],
        f => field(f - 6, k, c),
    });
    let (mass, _) = modal_matrices(mesh, &fields, &material)?;
    let m_rr = DMatrix::from_fn(6, 6, |i, j| mass[[i, j]]);
    let solve = m_rr
        .cholesky()
        .expect("the rigid fields of a mesh with volume are independent");
    // Field `f` less its rigid part, written into `to` (`(n, 3)`).
    let clean = |f: usize, mut to: ndarray::ArrayViewMut2<f64>| {
        let c = solve.solve(&DVector::from_fn(6, |i, _| mass[[i, 6 + f]]));
        for (k, mut row) in to.rows_mut().into_iter().enumerate() {
            let mut u = Vector3::from_fn(|d, _| field(f, k, d));
            for (j, cj) in c.iter().enumerate() {
                u -= rigid[j][k] * *cj;
            }
            row.assign(&ndarray::ArrayView1::from(u.as_slice()));
        }
    };
    let mut out = b.clone();
    for (mode, to) in out.phi.outer_iter_mut().enumerate() {
        clean(mode, to);
    }
    if let Some(path) = &mut out.path {
        for (i, to) in path.displacement.outer_iter_mut().enumerate() {
            clean(a + i, to);
        }
    }
    out.mass = modal_matrices(mesh, &out.phi, &material)?.0;
    Ok(out)
}

/// The six rigid fields at the mesh's nodes, `rigid[j][k]`: the translations `e_j` (`j < 3`)
/// and the linearized rotations `e_(j-3) x (x_k - x_c)` about the centre of mass `x_c`.
pub(crate) fn rigid_fields(
    mesh: &FemMesh,
    material: &Elastic,
) -> Result<Vec<Vec<Vector3<f64>>>, ModalError> {
    let centre = centre_of_mass(mesh, material)?;
    Ok((0..6)
        .map(|j| {
            (0..mesh.nodes.nrows())
                .map(|k| {
                    let x = Vector3::from_fn(|c, _| mesh.nodes[[k, c]]) - centre;
                    let e = Vector3::ith(j % 3, 1.0);
                    if j < 3 { e } else { e.cross(&x) }
                })
                .collect()
        })
        .collect())
}

/// The centre of mass of the mesh: the first moments of the mass of the coordinate fields.
fn centre_of_mass(mesh: &FemMesh, material: &Elastic) -> Result<Vector3<f64>, ModalError> {
    let n = mesh.nodes.nrows();
    // Fields: a unit translation along x, and the positions; int rho e_x . x_c e_x dV = m x_c.
    let fields = Array3::from_shape_fn((4, n, 3), |(f, k, c)| match f {
        0 => f64::from(c == 0),
        f => {
            if c == 0 {
                mesh.nodes[[k, f - 1]]
            } else {
                0.0
            }
        }
    });
    let (mass, _) = modal_matrices(mesh, &fields, material)?;
    Ok(Vector3::new(mass[[0, 1]], mass[[0, 2]], mass[[0, 3]]) / mass[[0, 0]])
}
