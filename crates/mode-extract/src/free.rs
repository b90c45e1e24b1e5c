//! Free-free elastic modes of a grain from its mesh and material alone (no FEM run): the
//! lowest solutions of the generalized eigenproblem
//!
//! `K phi = lambda M phi`, `lambda = omega^2`,
//!
//! with `K` and `M` the mesh's assembled stiffness and consistent mass ([`crate::modal`]), the
//! six rigid motions (`lambda = 0`) removed. The shapes are mass-normalized
//! (`phi_a^T M phi_b = delta_ab`, so the modal mass is the identity and the modal stiffness
//! `diag(lambda)`), and `M`-orthogonal to the rigid motions: their momentum and angular
//! momentum about the mesh's centre of mass vanish. Where the spectrum is degenerate (a
//! sphere's five `0T2` modes), a `count` that splits a multiplet returns an arbitrary part of it:
//! ask for whole multiplets.
//!
//! Method: subspace iteration (Bathe, *Finite Element Procedures*, 2nd ed., 2014, section
//! 11.6; Bathe and Wilson 1972) on the shifted pencil: `q = max(2 p, p + 8)` vectors `X`, each
//! iteration `X <- (K + sigma M)^-1 M X` (one sparse Cholesky factorization, faer's, reused),
//! the rigid motions projected out (`X <- X - R R^T M X`, `R` the `M`-orthonormal rigid
//! motions), then the Rayleigh-Ritz step on `span X` (the reduced `K_r q = lambda M_r q`, dense,
//! by a Cholesky factor of `M_r` and a symmetric eigendecomposition). The Ritz vectors converge
//! to the `p` lowest modes at the rate `(lambda_a + sigma) / (lambda_(q+1) + sigma)` per
//! iteration; the iteration stops when every wanted residual
//! `|K phi_a - lambda_a M phi_a| <= TOLERANCE lambda_a |M phi_a|` ([`TOLERANCE`]). It is
//! written here because faer's Krylov-Schur eigensolver (`faer::matrix_free::eigen`) takes a
//! standard problem `A x = mu x`, and the symmetric shift-invert form of the generalized one
//! needs the triangular half-solves `L^-1` of the sparse factor, which faer's high-level sparse
//! Cholesky does not expose; subspace iteration needs only whole solves.
//!
//! The start vectors are smooth: displacement fields `e_c x^i y^j z^k` of growing degree about
//! the centre of the mesh's bounding box, scaled to it, which contain the low modes' long
//! wavelengths, so that the result does not depend on a seed.
//!
//! Cost: the factorization of `K + sigma M` (`3 n` unknowns), then per iteration `q` solves,
//! three sparse products with `q` columns (`M X`, `K Y`, `M Y`) and `O(n q^2)` dense work. Fails
//! on a material out of range, a mesh of bodies that share no node ([`FreeError::Disconnected`];
//! bodies joined at a node or an edge are one mesh here, and their hinge modes come out as low
//! modes), a node in no element, more modes than the smooth start fields span, or no
//! convergence in [`MAX_ITERATIONS`].

use faer::linalg::solvers::Solve;
use faer::sparse::SparseColMat;
use faer::{Accum, Mat, MatRef, Par, Side};
use grain::FemMesh;

use crate::modal::{Assembled, Elastic, ModalError, assemble};
use crate::rigid::rigid_fields;

/// The most subspace iterations before [`FreeError::NotConverged`].
pub const MAX_ITERATIONS: usize = 500;

/// The highest total degree of the polynomial start fields (455 fields per axis at 12).
pub const MAX_DEGREE: usize = 12;

/// The relative residual `|K phi - lambda M phi| / (lambda |M phi|)` of every wanted mode at
/// which the iteration stops. The round-off floor of the shifted solves is about
/// `1e-16 lambda_max / lambda_a` (about 1e-11 for the ball of the tests); a residual of 1e-8
/// puts each shape within about `1e-8 lambda_a / gap` of its mode.
pub const TOLERANCE: f64 = 1e-8;

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
    /// The material cannot make positive definite matrices.
    #[error(
        "the material needs E > 0, -1 < nu < 0.5 and rho > 0; got {youngs_modulus}, {poisson_ratio}, {density}"
    )]
    Material {
        /// Young's modulus.
        youngs_modulus: f64,
        /// Poisson's ratio.
        poisson_ratio: f64,
        /// Density.
        density: f64,
    },
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
    /// The smooth start fields span fewer fields than asked for.
    #[error(
        "{requested} modes asked for; the smooth start fields (polynomials up to degree {MAX_DEGREE}) span {fields} beyond the rigid motions on this mesh: ask for fewer"
    )]
    StartSpace {
        /// Modes asked for.
        requested: usize,
        /// Independent start fields found.
        fields: usize,
    },
    /// The subspace lost its independence (a factorization of a reduced mass failed).
    #[error(
        "the subspace iteration broke down at iteration {iteration}: its vectors became dependent"
    )]
    Breakdown {
        /// The iteration.
        iteration: usize,
    },
    /// The iteration did not converge.
    #[error(
        "the subspace iteration did not converge in {iterations} iterations (largest relative residual {residual:e}, asked {TOLERANCE:e})"
    )]
    NotConverged {
        /// Iterations made.
        iterations: usize,
        /// The largest relative residual of a wanted mode in the last iteration.
        residual: f64,
    },
    /// The static response's fixed point did not settle.
    #[error("the static response did not settle in {solves} solves (a non-finite load?)")]
    StaticNotConverged {
        /// Solves made.
        solves: usize,
    },
}

/// The `count` lowest free-free modes of `mesh` for `material` (the module's method):
/// [`FreeBody::new`] then [`FreeBody::modes`].
pub fn free_modes(
    mesh: &FemMesh,
    material: &Elastic,
    count: usize,
) -> Result<FreeModes, FreeError> {
    FreeBody::new(mesh, material)?.modes(count)
}

/// A grain's mesh as a free body: its assembled `K` and `M`, its rigid motions, and one sparse
/// Cholesky factor of `K + sigma M` that serves both the free modes ([`FreeBody::modes`]) and
/// the static responses with inertia relief ([`FreeBody::static_response`]).
pub struct FreeBody {
    assembled: Assembled,
    rigid: Rigid,
    factor: faer::sparse::linalg::solvers::Llt<usize, f64>,
    sigma: f64,
    mesh: FemMesh,
}

impl FreeBody {
    /// Assembles and factors. Fails on a material out of range, a node in no element, or a
    /// mesh of several bodies (module docs).
    pub fn new(mesh: &FemMesh, material: &Elastic) -> Result<FreeBody, FreeError> {
        let Elastic {
            youngs_modulus,
            poisson_ratio,
            density,
        } = *material;
        if !(youngs_modulus > 0.0 && poisson_ratio > -1.0 && poisson_ratio < 0.5 && density > 0.0) {
            return Err(FreeError::Material {
                youngs_modulus,
                poisson_ratio,
                density,
            });
        }
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
        let assembled = assemble(mesh, material)?;
        let Assembled { mass, stiffness } = &assembled;
        let rigid = Rigid::new(mesh, material, mass)?;
        // The shift: a small fraction of the stiffness-to-mass scale keeps K + sigma M positive
        // definite (K >= 0, M > 0) without changing which modes are lowest.
        let scale = (0..3 * n)
            .map(|i| diagonal(stiffness, i) / diagonal(mass, i))
            .fold(0.0, f64::max);
        let sigma = 1e-6 * scale;
        let factor = combine(stiffness, mass, sigma)
            .sp_cholesky(Side::Lower)
            .map_err(|_| FreeError::Breakdown { iteration: 0 })?;
        Ok(FreeBody {
            assembled,
            rigid,
            factor,
            sigma,
            mesh: mesh.clone(),
        })
    }

    /// The assembled stiffness and mass.
    pub fn matrices(&self) -> &Assembled {
        &self.assembled
    }

    /// The mesh.
    pub fn mesh(&self) -> &FemMesh {
        &self.mesh
    }

    /// The `count` lowest free-free modes (the module's method).
    pub fn modes(&self, count: usize) -> Result<FreeModes, FreeError> {
        let Assembled { mass, stiffness } = &self.assembled;
        let available = (3 * self.mesh.nodes.nrows()).saturating_sub(6);
        if count > available {
            return Err(FreeError::TooMany {
                requested: count,
                available,
            });
        }
        let q = (2 * count).max(count + 8).min(available);
        let start = start_vectors(&self.mesh, q, &self.rigid, mass);
        if start.ncols() < count {
            return Err(FreeError::StartSpace {
                requested: count,
                fields: start.ncols(),
            });
        }
        let mut ritz_pairs =
            ritz(&start, stiffness, mass).ok_or(FreeError::Breakdown { iteration: 0 })?;
        let mut residual = f64::INFINITY;
        for iteration in 1..=MAX_ITERATIONS {
            let mut y = times(mass, ritz_pairs.vectors.as_ref());
            self.factor.solve_in_place(y.as_mut());
            self.rigid.deflate(&mut y);
            ritz_pairs = ritz(&y, stiffness, mass).ok_or(FreeError::Breakdown { iteration })?;
            residual = ritz_pairs.residual(count);
            // A NaN residual is no convergence.
            if residual <= TOLERANCE {
                let Ritz {
                    values, vectors, ..
                } = ritz_pairs;
                return Ok(FreeModes {
                    shapes: vectors.subcols(0, count).to_owned(),
                    eigenvalues: values[..count].to_vec(),
                    iterations: iteration,
                });
            }
        }
        Err(FreeError::NotConverged {
            iterations: MAX_ITERATIONS,
            residual,
        })
    }

    /// The static response to loads `f` (`3 n x k`, one load per column, nodal forces) with
    /// inertia relief: the free body accelerates rigidly under the load's resultant force and
    /// moment, and deforms under the load plus the d'Alembert forces of that acceleration,
    ///
    /// `K u = f - M R R^T f`, `R^T M u = 0`
    ///
    /// (`R` the `M`-orthonormal rigid motions; Barnett, Widrick and Ludwiczak, *Closed-form
    /// static analysis with inertia relief and displacement-dependent loads using a MSC/NASTRAN
    /// DMAP alter*, NASA TM-106836, 1995): the displacement about the centre of mass, without
    /// rigid motion, that each column of `f` alone would cause. Linear in `f`; by reciprocity
    /// `g^T u(f) = f^T u(g)`.
    ///
    /// Method: the fixed point `u <- P (K + sigma M)^-1 (f_e + sigma M u)` with the factor the
    /// modes use (`P` removes the rigid motions), which contracts by
    /// `sigma / (lambda_1 + sigma)` (about 1e-4 for the ball of the tests) per solve; it stops
    /// at the round-off floor (a solve changes `u` by less than 1e-8 of `|u|` and by at least
    /// half the change before; about 1e-12 on the tests' meshes, whose conditioning puts it near
    /// `1e-16 lambda_max / sigma`), and fails with [`FreeError::StaticNotConverged`] on a
    /// non-finite load or after [`MAX_ITERATIONS`].
    pub fn static_response(&self, f: MatRef<'_, f64>) -> Result<Mat<f64>, FreeError> {
        let mass = &self.assembled.mass;
        // The rigid acceleration's coordinates `R^T f` (M R is the inertia of the rigid motions):
        // `R^T f_e = R^T f - (R^T M R) R^T f = 0`.
        let acceleration = self.rigid.motions.transpose() * f;
        let balanced = f - &self.rigid.mass_motions * acceleration;
        let mut u = Mat::<f64>::zeros(f.nrows(), f.ncols());
        // A load that is all rigid (or none) deforms nothing; a non-finite one has no response.
        let size = balanced.norm_l2();
        if size == 0.0 {
            return Ok(u);
        }
        if !size.is_finite() {
            return Err(FreeError::StaticNotConverged { solves: 0 });
        }
        let mut last = f64::INFINITY;
        for _ in 0..MAX_ITERATIONS {
            let mut next = &balanced + times(mass, u.as_ref()) * faer::Scale(self.sigma);
            self.factor.solve_in_place(next.as_mut());
            self.rigid.deflate(&mut next);
            let change = (&next - &u).norm_l2() / next.norm_l2();
            u = next;
            // Settled: at the round-off floor (the change stops halving) once it is small. A
            // NaN change is no convergence.
            if change <= 1e-13 || (change <= 1e-8 && change >= 0.5 * last) {
                return Ok(u);
            }
            last = change;
        }
        Err(FreeError::StaticNotConverged {
            solves: MAX_ITERATIONS,
        })
    }
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

/// The six rigid motions `R` (translations, rotations about the centre of mass,
/// crate::rigid), `M`-orthonormal, and `M R`.
struct Rigid {
    motions: Mat<f64>,
    mass_motions: Mat<f64>,
}

impl Rigid {
    fn new(
        mesh: &FemMesh,
        material: &Elastic,
        mass: &SparseColMat<usize, f64>,
    ) -> Result<Rigid, FreeError> {
        let fields = rigid_fields(mesh, material)?;
        let r = Mat::from_fn(3 * mesh.nodes.nrows(), 6, |i, j| fields[j][i / 3][i % 3]);
        let motions = orthonormalize(r, mass).ok_or(FreeError::Breakdown { iteration: 0 })?;
        let mass_motions = times(mass, motions.as_ref());
        Ok(Rigid {
            motions,
            mass_motions,
        })
    }

    /// `X <- X - R R^T M X`: the rigid motions' part removed.
    fn deflate(&self, x: &mut Mat<f64>) {
        let coefficients = self.mass_motions.transpose() * &*x;
        *x -= &self.motions * coefficients;
    }
}

/// `X` made `M`-orthonormal (a Cholesky factor of `X^T M X`); `None` if its columns are
/// dependent.
fn orthonormalize(x: Mat<f64>, mass: &SparseColMat<usize, f64>) -> Option<Mat<f64>> {
    let gram = x.transpose() * times(mass, x.as_ref());
    let llt = gram.llt(Side::Lower).ok()?;
    // X L^-T: solve L Y^T = X^T.
    let mut t = x.transpose().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(llt.L(), t.as_mut(), Par::Seq);
    Some(t.transpose().to_owned())
}

/// `q` smooth start fields, `M`-orthonormal and without rigid motion: the fields
/// `e_c x^i y^j z^k` about the centre of the mesh's bounding box, scaled to it, by growing total
/// degree (1, 2, ...), each made `M`-orthogonal to the rigid motions and to those kept before
/// (modified Gram-Schmidt), and dropped when little of it is left (the rotations among the
/// linear fields), up to degree [`MAX_DEGREE`] (fewer than `q` if they span fewer).
fn start_vectors(
    mesh: &FemMesh,
    q: usize,
    rigid: &Rigid,
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
    'degrees: for degree in 1..=MAX_DEGREE {
        for i in (0..=degree).rev() {
            for j in (0..=degree - i).rev() {
                for axis in 0..3 {
                    let mut v = field([i, j, degree - i - j], axis);
                    rigid.deflate(&mut v);
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

/// Ritz pairs of a subspace, with the products the residuals need.
struct Ritz {
    /// Ritz values, ascending.
    values: Vec<f64>,
    /// `M`-orthonormal Ritz vectors `X Q`.
    vectors: Mat<f64>,
    /// `K X Q`.
    k_vectors: Mat<f64>,
    /// `M X Q`.
    m_vectors: Mat<f64>,
}

impl Ritz {
    /// The largest relative residual `|K phi_a - lambda_a M phi_a| / (lambda_a |M phi_a|)`
    /// over the first `count` pairs (NaN if one is NaN).
    fn residual(&self, count: usize) -> f64 {
        let mut largest: f64 = 0.0;
        for a in 0..count {
            let (k, m) = (self.k_vectors.col(a), self.m_vectors.col(a));
            let r =
                (k - m * faer::Scale(self.values[a])).norm_l2() / (self.values[a] * m.norm_l2());
            if r.is_nan() {
                return f64::NAN;
            }
            largest = largest.max(r);
        }
        largest
    }
}

/// The Rayleigh-Ritz step on `span X`; `None` if its columns are (numerically) dependent.
fn ritz(
    x: &Mat<f64>,
    stiffness: &SparseColMat<usize, f64>,
    mass: &SparseColMat<usize, f64>,
) -> Option<Ritz> {
    let (kx, mx) = (times(stiffness, x.as_ref()), times(mass, x.as_ref()));
    let symmetric =
        |a: Mat<f64>| Mat::from_fn(a.nrows(), a.ncols(), |i, j| 0.5 * (a[(i, j)] + a[(j, i)]));
    let (kr, mr) = (
        symmetric(x.transpose() * &kx),
        symmetric(x.transpose() * &mx),
    );
    // M_r = L L^T; C = L^-1 K_r L^-T; C v = lambda v; q = L^-T v.
    let llt = mr.llt(Side::Lower).ok()?;
    let l = llt.L();
    let mut t = kr.clone();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, t.as_mut(), Par::Seq);
    let mut c = t.transpose().to_owned();
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, c.as_mut(), Par::Seq);
    let c = symmetric(c);
    let eigen = c.self_adjoint_eigen(Side::Lower).ok()?;
    let values: Vec<f64> = (0..c.nrows()).map(|i| eigen.S()[i]).collect();
    let mut v = eigen.U().to_owned();
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(
        l.transpose(),
        v.as_mut(),
        Par::Seq,
    );
    Some(Ritz {
        values,
        vectors: x * &v,
        k_vectors: kx * &v,
        m_vectors: mx * &v,
    })
}
