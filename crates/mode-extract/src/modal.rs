//! The mesh's mass and stiffness matrices, and the modal mass and stiffness of displacement
//! fields on it (docs/physics.md section 2; paper Eqs. 4 and 8):
//! `M_ab = integral rho Phi_a . Phi_b dV`, `K_ab = integral (C : E(Phi_a)) : E(Phi_b) dV`,
//! with `E` the small-strain operator and `C` isotropic (Lamé `lambda`, `mu` from `E`, `nu`).
//!
//! [`assemble`] builds the sparse `M` and `K` of the whole mesh (degree of freedom `3 i + c`:
//! node `i`'s displacement along axis `c`): per element and integration point of weight `w`,
//! with shape functions `N_a` and their spatial gradients `g_a`,
//! `M_(ai)(bj) += w rho N_a N_b delta_ij` (the consistent mass) and
//! `K_(ai)(bj) += w (lambda g_ai g_bj + mu (g_aj g_bi + delta_ij g_a . g_b))`, the isotropic
//! `B^T C B`. [`modal_matrices`] projects them on nodal fields, `M_ab = Phi_a^T M Phi_b`,
//! element by element from the same element matrices, without a global matrix.
//!
//! Integrals use, per element type, rules exact for straight-sided elements: C3D4 1 point for K
//! and 4 for M; C3D10 4 points for K and 14 (degree 5) for M; C3D8/C3D8R 2 x 2 x 2;
//! C3D20/C3D20R 3 x 3 x 3. (Reduced integration is an Abaqus solver choice; the mesh's matrices
//! use full integration.)
//!
//! Elements are integrated in parallel chunks whose results are summed in element order, so
//! results do not depend on the thread count.

use faer::sparse::{SparseColMat, Triplet};
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

/// The (stiffness, mass) rules of an element type.
fn rules(t: ElementType) -> (Rule, Rule) {
    match t {
        ElementType::Tet4 => (tet1(), tet4()),
        ElementType::Tet10 => (tet4(), tet14()),
        ElementType::Hex8 | ElementType::Hex8Reduced => (hex_gauss(2), hex_gauss(2)),
        ElementType::Hex20 | ElementType::Hex20Reduced => (hex_gauss(3), hex_gauss(3)),
    }
}

/// The mesh's sparse mass `M` and stiffness `K` (`3 n x 3 n`, `n` the mesh's nodes, degree of
/// freedom `3 i + c`), both symmetric with both triangles stored. A node no element uses has
/// zero rows.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// The consistent mass matrix `M`.
    pub mass: SparseColMat<usize, f64>,
    /// The stiffness matrix `K` (positive semi-definite: the six rigid motions are its null
    /// space on a connected mesh).
    pub stiffness: SparseColMat<usize, f64>,
}

/// Shape function values, natural gradients and weight at the points of a rule.
type Table = Vec<(Vec<f64>, Vec<Vector3<f64>>, f64)>;

/// One element's matrices, by node pair `(p, q)` at `p * nodes + q`: the mass block
/// `mass[.] I` and the stiffness block `stiffness[.]` (3 x 3), both of the module's equations.
struct ElementMatrices {
    mass: Vec<f64>,
    stiffness: Vec<Matrix3<f64>>,
}

/// Elements per parallel chunk.
const BLOCK: usize = 512;

/// Folds every element's matrices into per-chunk partial results: chunks of [`BLOCK`]
/// elements in parallel, each folding its elements in order into its own `init()` with
/// `add(partial, the element's node indices, its matrices)`; the partials come back in element
/// order, so that a caller who sums them in that order gets the same bits on any thread count.
/// The one place the element integrals are made (the module's equations and rules).
fn fold_elements<P: Send>(
    mesh: &FemMesh,
    material: &Elastic,
    init: impl Fn() -> P + Sync,
    add: impl Fn(&mut P, &[u64], &ElementMatrices) + Sync,
) -> Result<Vec<P>, ModalError> {
    let (lambda, mu) = material.lame();
    let rho = material.density;
    let mut out = Vec::new();
    for (b, block) in mesh.blocks.iter().enumerate() {
        let t = block.element_type;
        let (k_rule, m_rule) = rules(t);
        // Shape functions at the rule points depend on the element type only: tabulated once.
        let tabulate = |rule: &Rule| -> Table {
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
        let count = block.connectivity.nrows();
        let partials: Vec<Result<P, ModalError>> = (0..count.div_ceil(BLOCK))
            .into_par_iter()
            .map(|chunk| {
                let mut partial = init();
                let mut x = Vec::with_capacity(nodes);
                let mut row = Vec::with_capacity(nodes);
                let mut grad_n = vec![Vector3::zeros(); nodes];
                let mut element = ElementMatrices {
                    mass: vec![0.0; nodes * nodes],
                    stiffness: vec![Matrix3::zeros(); nodes * nodes],
                };
                for e in chunk * BLOCK..((chunk + 1) * BLOCK).min(count) {
                    row.clear();
                    row.extend(block.connectivity.row(e).iter().copied());
                    x.clear();
                    x.extend(row.iter().map(|&i| fem::node(mesh, i as usize).coords));
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
                    element.mass.fill(0.0);
                    for (n, g, weight) in &m_table {
                        let w = weight * jacobian(g)?.1 * rho;
                        for (p, np) in n.iter().enumerate() {
                            for (q, nq) in n.iter().enumerate() {
                                element.mass[p * nodes + q] += w * np * nq;
                            }
                        }
                    }
                    element.stiffness.fill(Matrix3::zeros());
                    for (_, g, weight) in &k_table {
                        let (jacobian, det) = jacobian(g)?;
                        let w = weight * det;
                        // grad_x N = J^-T grad_xi N.
                        let inv_t = jacobian.try_inverse().expect("det > 0").transpose();
                        for (gx, gi) in grad_n.iter_mut().zip(g) {
                            *gx = inv_t * gi;
                        }
                        for (p, gp) in grad_n.iter().enumerate() {
                            for (q, gq) in grad_n.iter().enumerate() {
                                let block = gp * gq.transpose() * lambda
                                    + (gq * gp.transpose() + Matrix3::identity() * gp.dot(gq)) * mu;
                                element.stiffness[p * nodes + q] += block * w;
                            }
                        }
                    }
                    add(&mut partial, &row, &element);
                }
                Ok(partial)
            })
            .collect();
        for partial in partials {
            out.push(partial?);
        }
    }
    Ok(out)
}

/// Assembles `M` and `K` of `mesh` for `material` (the module's equations). Cost: per element
/// `O(points x (3 n_e)^2)`, then a sort of the `12 n_e^2` triplets per element (memory: 32 bytes
/// each, about 0.4 GB for 10,000 C3D10; [`modal_matrices`] assembles nothing). Fails on an
/// element whose Jacobian determinant is not positive at an integration point.
pub fn assemble(mesh: &FemMesh, material: &Elastic) -> Result<Assembled, ModalError> {
    type Entries = Vec<Triplet<usize, usize, f64>>;
    let partials = fold_elements(
        mesh,
        material,
        || (Entries::new(), Entries::new()),
        |(m, k), row, element| {
            let nodes = row.len();
            for (p, &np) in row.iter().enumerate() {
                for (q, &nq) in row.iter().enumerate() {
                    let (np, nq) = (3 * np as usize, 3 * nq as usize);
                    for c in 0..3 {
                        m.push(Triplet::new(np + c, nq + c, element.mass[p * nodes + q]));
                        for d in 0..3 {
                            let value = element.stiffness[p * nodes + q][(c, d)];
                            k.push(Triplet::new(np + c, nq + d, value));
                        }
                    }
                }
            }
        },
    )?;
    let (mut mass, mut stiffness) = (Vec::new(), Vec::new());
    for (m, k) in partials {
        mass.extend(m);
        stiffness.extend(k);
    }
    // faer sums duplicate entries; the triplets' order is the elements', so the sums are the
    // same on any thread count.
    let dofs = 3 * mesh.nodes.nrows();
    let sparse = |entries: &[Triplet<usize, usize, f64>]| {
        SparseColMat::try_new_from_triplets(dofs, dofs, entries)
            .expect("indices within the mesh's nodes")
    };
    Ok(Assembled {
        mass: sparse(&mass),
        stiffness: sparse(&stiffness),
    })
}

/// `(M, K)` for the fields `phi` (`(A, n, 3)` nodal values): `M_ab = Phi_a^T M Phi_b`, summed
/// element by element (`Phi_a,e^T M_e Phi_b,e`, no global matrix: memory `O(A^2)` per thread).
/// Cost per element: `O(n_e^2 A + n_e A^2)` after its matrices.
pub fn modal_matrices(
    mesh: &FemMesh,
    phi: &Array3<f64>,
    material: &Elastic,
) -> Result<(Array2<f64>, Array2<f64>), ModalError> {
    let a = phi.shape()[0];
    let partials = fold_elements(
        mesh,
        material,
        || (Array2::<f64>::zeros((a, a)), Array2::<f64>::zeros((a, a))),
        |(m, k), row, element| {
            let nodes = row.len();
            let u = |f: usize, p: usize| {
                let i = row[p] as usize;
                Vector3::new(phi[[f, i, 0]], phi[[f, i, 1]], phi[[f, i, 2]])
            };
            // (M_e Phi_q)_p and (K_e Phi_q)_p at each node p, then the products with Phi_p.
            // On the stack: no element has more than 20 nodes (C3D20).
            let (mut mu, mut ku) = ([Vector3::<f64>::zeros(); 20], [Vector3::<f64>::zeros(); 20]);
            for q in 0..a {
                mu[..nodes].fill(Vector3::zeros());
                ku[..nodes].fill(Vector3::zeros());
                for p in 0..nodes {
                    for r in 0..nodes {
                        let ur = u(q, r);
                        mu[p] += ur * element.mass[p * nodes + r];
                        ku[p] += element.stiffness[p * nodes + r] * ur;
                    }
                }
                for f in 0..=q {
                    for p in 0..nodes {
                        let up = u(f, p);
                        m[[f, q]] += up.dot(&mu[p]);
                        k[[f, q]] += up.dot(&ku[p]);
                    }
                }
            }
        },
    )?;
    let (mut mass, mut stiffness) = (Array2::zeros((a, a)), Array2::zeros((a, a)));
    for (m, k) in partials {
        mass += &m;
        stiffness += &k;
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
