//! Free-free elastic modes of a grain from its mesh and material alone (no FEM run): the
//! lowest solutions of the generalized eigenproblem
//!
//! `K phi = lambda M phi`, `lambda = omega^2`,
//!
//! with `K` and `M` the mesh's assembled stiffness and consistent mass ([`crate::modal`]), the
//! six rigid motions (`lambda = 0`) removed. The shapes are mass-normalized
//! (`phi_a^T M phi_b = delta_ab`, so the modal mass is the identity and the modal stiffness
//! `diag(lambda)`), and `M`-orthogonal to the rigid motions: their momentum and angular
//! momentum about the mesh's centre of mass vanish.
//!
//! Method: subspace iteration (Bathe, *Finite Element Procedures*, 2nd ed., 2014, section
//! 11.6; Bathe and Wilson 1972) on the shifted pencil: `q = max(2 p, p + 8)` vectors `X`, each
//! iteration `X <- (K + sigma M)^-1 M X` (one sparse Cholesky factorization, faer's, reused),
//! the rigid motions projected out (`X <- X - R R^T M X`, `R` the `M`-orthonormal rigid
//! motions), then the Rayleigh-Ritz step on `span X` (the reduced `K_r q = lambda M_r q`, dense,
//! by a Cholesky factor of `M_r` and a symmetric eigendecomposition). The Ritz values converge
//! to the `p` lowest `lambda` at the rate `(lambda_i + sigma) / (lambda_(q+1) + sigma)` per
//! iteration. It is written here because faer's Krylov-Schur eigensolver
//! (`faer::matrix_free::eigen`) takes a standard problem `A x = mu x`, and the symmetric
//! shift-invert form of the generalized one needs the triangular half-solves `L^-1` of the
//! sparse factor, which faer's high-level sparse Cholesky does not expose; subspace iteration
//! needs only whole solves.
//!
//! The start vectors are smooth: displacement fields `e_c x^i y^j z^k` of growing degree about
//! the centre of mass, which contain the low modes' long wavelengths, so that the result does
//! not depend on a seed.
//!
//! Cost: the factorization of `K + sigma M` (`3 n` unknowns), then per iteration `q` solves
//! and two sparse products with `q` columns, and `O(n q^2)` dense work. Fails when the mesh is
//! not one connected body (more than six rigid motions), when a node is in no element, or when
//! the iteration does not converge in [`MAX_ITERATIONS`].

use faer::linalg::solvers::Solve;
use faer::sparse::SparseColMat;
use faer::{Accum, Mat, MatRef, Par, Side};
use grain::FemMesh;

use crate::modal::{Assembled, Elastic, ModalError, assemble};

/// The most subspace iterations before [`FreeError::NotConverged`].
pub const MAX_ITERATIONS: usize = 500;

/// Relative change of each wanted eigenvalue between iterations at which they are converged.
/// A Ritz value's error is the square of its vector's, so the shapes are then converged to
/// about 1e-5; a tighter bound meets the round-off floor of the shifted solves (about
/// `1e-16 lambda_max / lambda_a`: with 80 modes of a 1,608-node ball the changes stalled at
/// 2.8e-10).
pub const TOLERANCE: f64 = 1e-10;

/// The lowest free-free modes of a mesh.
#[derive(Debug, Clone)]
pub struct FreeModes {
    /// `3 n x p` mass-normalized shapes (degree of freedom `3 i + c`).
    pub shapes: Mat<f64>,
    /// `lambda_a = omega_a^2` (1 / time^2), ascending.
    pub eigenvalues: Vec<f64>,
    /// The iterations taken.
    pub iterations: usize,
}

/// Why free modes could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FreeError {
    /// The mesh's matrices could not be made.
    #[error(transparent)]
    Modal(#[from] ModalError),
    /// A node is in no element: it has no mass.
    #[error("node {node} is in no element (a mesh of the grain's elements and their nodes only)")]
    UnusedNode {
        /// The node's index in the mesh.
        node: usize,
    },
    /// More modes were asked for than the mesh has beyond its rigid motions.
    #[error(
        "{requested} modes asked for; the mesh has {available} degrees of freedom beyond its six rigid motions"
    )]
    TooMany {
        /// Modes asked for.
        requested: usize,
        /// What the mesh has.
        available: usize,
    },
    /// The mesh is more than one connected body: each has its own six rigid motions.
    #[error(
        "the mesh is {bodies} bodies that share no node (node {node} is not connected to node 0): free modes are a single grain's"
    )]
    Disconnected {
        /// How many.
        bodies: usize,
        /// A node of a body other than node 0's.
        node: usize,
    },
    /// The iteration did not converge.
    #[error(
        "the subspace iteration did not converge in {iterations} iterations (largest relative change {change:e})"
    )]
    NotConverged {
        /// Iterations made.
        iterations: usize,
        /// The largest relative change of a wanted eigenvalue in the last iteration.
        change: f64,
    },
}

/// The `count` lowest free-free modes of `mesh` for `material` (the module's method).
pub fn free_modes(
    mesh: &FemMesh,
    material: &Elastic,
    count: usize,
) -> Result<FreeModes, FreeError> {
    let n = mesh.nodes.nrows();
    let mut used = vec![false; n];
    for b in &mesh.blocks {
        for &k in &b.connectivity {
            used[k as usize] = true;
        }
    }
    if let Some(node) = used.iter().position(|u| !u) {
        return Err(FreeError::UnusedNode { node });
    }
    let body = bodies(mesh);
    let count_bodies = (0..n).filter(|&i| body[i] == i).count();
    if count_bodies > 1 {
        return Err(FreeError::Disconnected {
            bodies: count_bodies,
            node: (0..n).find(|&i| body[i] != body[0]).expect("two bodies"),
        });
    }
    let available = (3 * n).saturating_sub(6);
    if count > available {
        return Err(FreeError::TooMany {
            requested: count,
            available,
        });
    }
    let Assembled { mass, stiffness } = assemble(mesh, material)?;
    let rigid = rigid_motions(mesh, &mass);
    let q = (2 * count).max(count + 8).min(available);
    // The shift: a small fraction of the stiffness-to-mass scale keeps K + sigma M positive
    // definite without changing which modes are lowest.
    let scale = (0..3 * n)
        .map(|i| diagonal(&stiffness, i) / diagonal(&mass, i))
        .fold(0.0, f64::max);
    let sigma = 1e-6 * scale;
    let shifted = combine(&stiffness, &mass, sigma);
    let factor = shifted
        .sp_cholesky(Side::Lower)
        .expect("K + sigma M is positive definite: K >= 0, M > 0 on a mesh of used nodes");
    let start = start_vectors(mesh, q, &rigid, &mass);
    if start.ncols() < count {
        // The mesh's fields are fewer than asked for once the rigid motions are out.
        return Err(FreeError::TooMany {
            requested: count,
            available: start.ncols(),
        });
    }
    let (mut values, mut vectors) = ritz(&start, &stiffness, &mass);
    let mut change = f64::INFINITY;
    for iteration in 1..=MAX_ITERATIONS {
        let mut y = times(&mass, vectors.as_ref());
        factor.solve_in_place(y.as_mut());
        deflate(&mut y, &rigid, &mass);
        let (new_values, new_vectors) = ritz(&y, &stiffness, &mass);
        change = (0..count)
            .map(|a| ((new_values[a] - values[a]) / new_values[a]).abs())
            .fold(0.0, f64::max);
        values = new_values;
        vectors = new_vectors;
        if change <= TOLERANCE {
            return Ok(FreeModes {
                shapes: vectors.subcols(0, count).to_owned(),
                eigenvalues: values[..count].to_vec(),
                iterations: iteration,
            });
        }
    }
    Err(FreeError::NotConverged {
        iterations: MAX_ITERATIONS,
        change,
    })
}

/// Each node's body: the smallest node index connected to it through elements (union-find).
fn bodies(mesh: &FemMesh) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..mesh.nodes.nrows()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for b in &mesh.blocks {
        for element in b.connectivity.rows() {
            for &k in element.iter().skip(1) {
                let (a, b) = (
                    root(&mut parent, element[0] as usize),
                    root(&mut parent, k as usize),
                );
                // The smaller index becomes the root: each root is its body's smallest node.
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    (0..parent.len()).map(|i| root(&mut parent, i)).collect()
}

/// `A_ii`.
fn diagonal(a: &SparseColMat<usize, f64>, i: usize) -> f64 {
    let a = a.as_ref();
    let rows = a.row_idx_of_col_raw(i);
    let values = a.val_of_col(i);
    rows.iter()
        .zip(values)
        .find(|(r, _)| **r == i)
        .map_or(0.0, |(_, v)| *v)
}

/// `K + sigma M` (both have the mesh's pattern).
fn combine(
    k: &SparseColMat<usize, f64>,
    m: &SparseColMat<usize, f64>,
    sigma: f64,
) -> SparseColMat<usize, f64> {
    let entries: Vec<_> = [(k, 1.0), (m, sigma)]
        .iter()
        .flat_map(|(a, s)| {
            let a = a.as_ref();
            (0..a.ncols()).flat_map(move |j| {
                (a.row_idx_of_col_raw(j).iter().zip(a.val_of_col(j)))
                    .map(move |(&i, &v)| faer::sparse::Triplet::new(i, j, s * v))
            })
        })
        .collect();
    SparseColMat::try_new_from_triplets(k.nrows(), k.ncols(), &entries).expect("same shape")
}

/// `A X`.
fn times(a: &SparseColMat<usize, f64>, x: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = Mat::zeros(x.nrows(), x.ncols());
    faer::sparse::linalg::matmul::sparse_dense_matmul(
        out.as_mut(),
        Accum::Replace,
        a.as_ref(),
        x,
        1.0,
        Par::Seq,
    );
    out
}

/// The six rigid motions (translations, rotations about the centre of mass), `M`-orthonormal.
fn rigid_motions(mesh: &FemMesh, mass: &SparseColMat<usize, f64>) -> Mat<f64> {
    let n = mesh.nodes.nrows();
    let centre = centre_of_mass(mesh, mass);
    let r = Mat::from_fn(3 * n, 6, |i, a| {
        let (node, c) = (i / 3, i % 3);
        if a < 3 {
            return f64::from(c == a);
        }
        // e_k x (x - centre), k = a - 3.
        let d = [0, 1, 2].map(|j| mesh.nodes[[node, j]] - centre[j]);
        let k = a - 3;
        let (c1, c2) = ((k + 1) % 3, (k + 2) % 3);
        if c == c1 {
            -d[c2]
        } else if c == c2 {
            d[c1]
        } else {
            0.0
        }
    });
    orthonormalize(r, mass)
}

/// The centre of mass `sum M_(ic)(jc) x_j / sum M_(ic)(jc)` (the row sums of `M` are the
/// nodes' lumped masses).
fn centre_of_mass(mesh: &FemMesh, mass: &SparseColMat<usize, f64>) -> [f64; 3] {
    let ones = Mat::from_fn(mass.ncols(), 1, |i, _| f64::from(i % 3 == 0));
    let lumped = times(mass, ones.as_ref());
    let total: f64 = (0..mesh.nodes.nrows()).map(|i| lumped[(3 * i, 0)]).sum();
    [0, 1, 2].map(|c| {
        (0..mesh.nodes.nrows())
            .map(|i| lumped[(3 * i, 0)] * mesh.nodes[[i, c]])
            .sum::<f64>()
            / total
    })
}

/// `X` made `M`-orthonormal (a Cholesky factor of `X^T M X`).
fn orthonormalize(x: Mat<f64>, mass: &SparseColMat<usize, f64>) -> Mat<f64> {
    let gram = x.transpose() * times(mass, x.as_ref());
    let llt = gram
        .llt(Side::Lower)
        .expect("independent columns have a positive definite Gram matrix");
    // X L^-T: solve L Y^T = X^T.
    let mut t = x.transpose().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(llt.L(), t.as_mut(), Par::Seq);
    t.transpose().to_owned()
}

/// `X <- X - R R^T M X`: the rigid motions' part removed (`R` `M`-orthonormal).
fn deflate(x: &mut Mat<f64>, rigid: &Mat<f64>, mass: &SparseColMat<usize, f64>) {
    let mr = times(mass, rigid.as_ref());
    let coefficients = mr.transpose() * &*x;
    *x -= rigid * coefficients;
}

/// `q` smooth start fields, `M`-orthonormal and without rigid motion: the fields
/// `e_c x^i y^j z^k` about the centre of the mesh's bounding box, scaled to it, by growing total
/// degree (1, 2, ...), each made `M`-orthogonal to the rigid motions and to those kept before
/// (modified Gram-Schmidt), and dropped when little of it is left (the rotations among the
/// linear fields).
fn start_vectors(
    mesh: &FemMesh,
    q: usize,
    rigid: &Mat<f64>,
    mass: &SparseColMat<usize, f64>,
) -> Mat<f64> {
    let n = mesh.nodes.nrows();
    let (lo, hi) = (0..3).fold(([f64::MAX; 3], [f64::MIN; 3]), |(mut lo, mut hi), c| {
        for i in 0..n {
            lo[c] = lo[c].min(mesh.nodes[[i, c]]);
            hi[c] = hi[c].max(mesh.nodes[[i, c]]);
        }
        (lo, hi)
    });
    let field = |e: [usize; 3], axis: usize| {
        Mat::from_fn(3 * n, 1, |row, _| {
            let (node, c) = (row / 3, row % 3);
            if c != axis {
                return 0.0;
            }
            (0..3)
                .map(|k| {
                    let half = 0.5 * (hi[k] - lo[k]).max(f64::MIN_POSITIVE);
                    ((mesh.nodes[[node, k]] - 0.5 * (lo[k] + hi[k])) / half).powi(e[k] as i32)
                })
                .product()
        })
    };
    // The kept fields and their products with M (so that each candidate costs two products).
    let mut kept: Vec<(Mat<f64>, Mat<f64>)> = Vec::with_capacity(q);
    'degrees: for degree in 1..=3 * n {
        for i in (0..=degree).rev() {
            for j in (0..=degree - i).rev() {
                for axis in 0..3 {
                    let mut v = field([i, j, degree - i - j], axis);
                    deflate(&mut v, rigid, mass);
                    let before = (v.transpose() * times(mass, v.as_ref()))[(0, 0)].sqrt();
                    for (u, mu) in &kept {
                        let c = (mu.transpose() * &v)[(0, 0)];
                        v -= u * faer::Scale(c);
                    }
                    let mv = times(mass, v.as_ref());
                    let after = (v.transpose() * &mv)[(0, 0)].sqrt();
                    if after > 1e-6 * before {
                        let s = faer::Scale(1.0 / after);
                        kept.push((v * s, mv * s));
                        if kept.len() == q {
                            break 'degrees;
                        }
                    }
                }
            }
        }
    }
    Mat::from_fn(3 * n, kept.len(), |i, a| kept[a].0[(i, 0)])
}

/// The Rayleigh-Ritz step on `span X`: the Ritz values ascending and the `M`-orthonormal Ritz
/// vectors `X Q`.
fn ritz(
    x: &Mat<f64>,
    stiffness: &SparseColMat<usize, f64>,
    mass: &SparseColMat<usize, f64>,
) -> (Vec<f64>, Mat<f64>) {
    let kr = x.transpose() * times(stiffness, x.as_ref());
    let mr = x.transpose() * times(mass, x.as_ref());
    let symmetric =
        |a: Mat<f64>| Mat::from_fn(a.nrows(), a.ncols(), |i, j| 0.5 * (a[(i, j)] + a[(j, i)]));
    let (kr, mr) = (symmetric(kr), symmetric(mr));
    // M_r = L L^T; C = L^-1 K_r L^-T; C v = lambda v; q = L^-T v.
    let llt = mr
        .llt(Side::Lower)
        .expect("the deflated subspace keeps independent columns");
    let l = llt.L();
    let mut t = kr.clone();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, t.as_mut(), Par::Seq);
    let mut c = t.transpose().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, c.as_mut(), Par::Seq);
    let c = symmetric(c);
    let eigen = c
        .self_adjoint_eigen(Side::Lower)
        .expect("a symmetric matrix has a real eigendecomposition");
    let values: Vec<f64> = (0..c.nrows()).map(|i| eigen.S()[i]).collect();
    let mut v = eigen.U().to_owned();
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(
        l.transpose(),
        v.as_mut(),
        Par::Seq,
    );
    (values, x * v)
}
