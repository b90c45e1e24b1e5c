//! Modal mass and stiffness of displacement fields on a FEM mesh (docs/physics.md section 2; paper
//! Eqs. 4 and 8):
//! `M_ab = integral rho Phi_a . Phi_b dV`, `K_ab = integral (C : E(Phi_a)) : E(Phi_b) dV`,
//! with `E` the small-strain operator and `C` isotropic (Lamé `lambda`, `mu` from `E`, `nu`).
//!
//! Fields are nodal values interpolated with the element shape functions; integrals use, per
//! element type, rules exact for straight-sided elements: C3D4 1 point for K and 4 for M; C3D10
//! 4 points for K and 14 (degree 5) for M; C3D8/C3D8R 2 x 2 x 2; C3D20/C3D20R 3 x 3 x 3.
//! (Reduced integration is an Abaqus solver choice; the modal integrals use full integration.)
//!
//! Summation is over fixed blocks of elements, so results do not depend on the thread count.

use fem::quadrature::{Rule, hex_gauss, tet1, tet4, tet14};
use fem::shape::shape;
use grain::{ElementType, FemMesh};
use nalgebra::{Matrix3, Vector3};
use ndarray::{Array2, Array3};
use rayon::prelude::*;

/// Isotropic linear elasticity and density.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Elastic {
    /// Young's modulus `E`.
    pub youngs_modulus: f64,
    /// Poisson's ratio `nu`.
    pub poisson_ratio: f64,
    /// Density `rho`.
    pub density: f64,
}

impl Elastic {
    /// Lamé's `(lambda, mu)`.
    pub fn lame(&self) -> (f64, f64) {
        let (e, nu) = (self.youngs_modulus, self.poisson_ratio);
        (
            e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
            e / (2.0 * (1.0 + nu)),
        )
    }
}

/// Why the integrals could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModalError {
    /// An element's Jacobian determinant is not positive at an integration point.
    #[error(
        "element {element} of block {block} ({kind}) is inverted or degenerate (Jacobian determinant {det:e})"
    )]
    Inverted {
        /// Block index.
        block: usize,
        /// Element index in the block.
        element: usize,
        /// Its Abaqus type.
        kind: &'static str,
        /// The determinant found.
        det: f64,
    },
}

/// Per-block partial sums `(M, K)`.
type Partial = Result<(Array2<f64>, Array2<f64>), ModalError>;

/// The (stiffness, mass) rules of an element type.
fn rules(t: ElementType) -> (Rule, Rule) {
    match t {
        ElementType::Tet4 => (tet1(), tet4()),
        ElementType::Tet10 => (tet4(), tet14()),
        ElementType::Hex8 | ElementType::Hex8Reduced => (hex_gauss(2), hex_gauss(2)),
        ElementType::Hex20 | ElementType::Hex20Reduced => (hex_gauss(3), hex_gauss(3)),
    }
}

/// `(M, K)` for the fields `phi` (`(A, n, 3)` nodal values).
pub fn modal_matrices(
    mesh: &FemMesh,
    phi: &Array3<f64>,
    material: &Elastic,
) -> Result<(Array2<f64>, Array2<f64>), ModalError> {
    let a = phi.shape()[0];
    let (lambda, mu) = material.lame();
    let mut mass = Array2::zeros((a, a));
    let mut stiffness = Array2::zeros((a, a));
    const BLOCK: usize = 512;
    for (b, block) in mesh.blocks.iter().enumerate() {
        let t = block.element_type;
        let (k_rule, m_rule) = rules(t);
        let count = block.connectivity.nrows();
        // Shape functions at the rule points depend on the element type only: tabulated once.
        let tabulate = |rule: &Rule| -> Vec<(Vec<f64>, Vec<Vector3<f64>>, f64)> {
            rule.iter()
                .map(|(point, weight)| {
                    let (mut n, mut g) = (Vec::new(), Vec::new());
                    shape(t, point, &mut n, &mut g);
                    (n, g, *weight)
                })
                .collect()
        };
        let (k_table, m_table) = (tabulate(&k_rule), tabulate(&m_rule));
        let nodes = t.node_count();
        let partials: Vec<Partial> = (0..count.div_ceil(BLOCK))
            .into_par_iter()
            .map(|chunk| {
                let mut m = Array2::zeros((a, a));
                let mut k = Array2::zeros((a, a));
                let mut x = Vec::with_capacity(nodes);
                // Nodal values of field `f` at `u[f * nodes..][..nodes]`.
                let mut u = vec![Vector3::zeros(); a * nodes];
                let mut grad_n = vec![Vector3::zeros(); nodes];
                let mut fields = vec![Vector3::zeros(); a];
                let mut strains = vec![Matrix3::zeros(); a];
                for e in chunk * BLOCK..((chunk + 1) * BLOCK).min(count) {
                    let row = block.connectivity.row(e);
                    x.clear();
                    x.extend(row.iter().map(|&i| fem::node(mesh, i as usize).coords));
                    for (f, uf) in u.chunks_exact_mut(nodes).enumerate() {
                        for (ui, &node) in uf.iter_mut().zip(row) {
                            let node = node as usize;
                            *ui = Vector3::new(
                                phi[[f, node, 0]],
                                phi[[f, node, 1]],
                                phi[[f, node, 2]],
                            );
                        }
                    }
                    let jacobian = |g: &[Vector3<f64>]| {
                        let jacobian: Matrix3<f64> =
                            x.iter().zip(g).map(|(xa, ga)| xa * ga.transpose()).sum();
                        let det = jacobian.determinant();
                        if det > 0.0 {
                            Ok((jacobian, det))
                        } else {
                            Err(ModalError::Inverted {
                                block: b,
                                element: e,
                                kind: t.abaqus_name(),
                                det,
                            })
                        }
                    };
                    for (n, g, weight) in &m_table {
                        let w = weight * jacobian(g)?.1;
                        for (value, uf) in fields.iter_mut().zip(u.chunks_exact(nodes)) {
                            *value = uf.iter().zip(n).map(|(ui, ni)| ui * *ni).sum();
                        }
                        for p in 0..a {
                            for q in p..a {
                                m[[p, q]] += w * material.density * fields[p].dot(&fields[q]);
                            }
                        }
                    }
                    for (_, g, weight) in &k_table {
                        let (jacobian, det) = jacobian(g)?;
                        let w = weight * det;
                        // grad u = sum_i u_i (grad_x N_i)^T, grad_x N = J^-T grad_xi N.
                        let inv_t = jacobian.try_inverse().expect("det > 0").transpose();
                        for (gx, gi) in grad_n.iter_mut().zip(g) {
                            *gx = inv_t * gi;
                        }
                        for (strain, uf) in strains.iter_mut().zip(u.chunks_exact(nodes)) {
                            let grad: Matrix3<f64> = uf
                                .iter()
                                .zip(&grad_n)
                                .map(|(ui, gx)| ui * gx.transpose())
                                .sum();
                            *strain = 0.5 * (grad + grad.transpose());
                        }
                        for p in 0..a {
                            let sp = strains[p];
                            let stress =
                                Matrix3::identity() * (lambda * sp.trace()) + sp * (2.0 * mu);
                            for q in p..a {
                                k[[p, q]] += w * stress.dot(&strains[q]);
                            }
                        }
                    }
                }
                Ok((m, k))
            })
            .collect();
        for partial in partials {
            let (m, k) = partial?;
            mass += &m;
            stiffness += &k;
        }
    }
    // Fill the lower triangles.
    for p in 0..a {
        for q in 0..p {
            mass[[p, q]] = mass[[q, p]];
            stiffness[[p, q]] = stiffness[[q, p]];
        }
    }
    Ok((mass, stiffness))
}
