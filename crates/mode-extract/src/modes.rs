//! Deformation modes from snapshots (docs/physics.md section 7).
//!
//! Snapshots are the columns of `U` (`3 n x S`, row `3 i + c` is component `c` of node `i`).
//! - SVD/POD: the leading left singular vectors, truncated by count or by captured energy (the
//!   fraction of the sum of squared singular values). Computed as `S` and `V` of the thin SVD
//!   (faer), then `U_k = A V_k / s_k` for the kept modes only, so that no `3 n x S` copy of the
//!   left singular vectors is ever held: memory stays near the snapshot matrix itself.
//! - Single mode: one snapshot (the largest deformation), for one dominant loading path.
//! - Difference modes: `u_s - u_(s-1)` (with `u_0 = 0`), orthonormalized by modified Gram-Schmidt;
//!   a difference whose remainder falls below `tolerance` times its own norm is pruned.
//!
//! Then a normalization, optional energy orthogonalization, and the generalized coordinates of
//! each snapshot by least squares.

use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::svd::{ComputeSvdVectors, svd, svd_scratch};
use faer::{Mat, MatRef, Par};
use nalgebra::{DMatrix, SymmetricEigen};
use rayon::prelude::*;

/// Why modes could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModeError {
    /// No snapshot, or all of them zero.
    #[error("no usable snapshot: every displacement is zero")]
    Empty,
    /// The SVD did not converge.
    #[error("the SVD did not converge")]
    Svd,
    /// A truncation parameter is out of range.
    #[error("{0}")]
    Truncation(String),
    /// The modal mass matrix is not positive definite (modes dependent, or zero mass).
    #[error("the modal mass matrix is not positive definite; are two modes dependent?")]
    Mass,
}

/// How many SVD modes to keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Keep {
    /// Exactly this many.
    Count(usize),
    /// The fewest capturing at least this fraction of the squared singular values.
    Energy(f64),
}

/// Rows per block of the tall-skinny QR (at least twice the column count).
const TSQR_ROWS: usize = 4096;

/// The factor `R` (`n x n`) of `a = Q R` for a tall `m x n` matrix (`m > n`), by tall-skinny QR
/// (TSQR: Demmel, Grigori, Hoemmen and Langou 2012, SIAM J. Sci. Comput. 34(1), A206-A239):
/// fixed blocks of rows are factored independently, in parallel, and their stacked `R` factors
/// are factored again, until one block remains. Householder QR of every block: backward stable.
///
/// Why: `a` and `R` have the same singular values and right singular vectors (`A = Q R` and
/// `R = U S V^T` give `A = (Q U) S V^T`), and only a block per thread is ever copied, whereas an
/// SVD of the whole tall matrix copies it (faer's did: it doubled the peak memory of an
/// extraction). The blocks and the order of combination are fixed, so the result does not depend
/// on the thread count.
fn tall_skinny_r(a: MatRef<'_, f64>) -> Mat<f64> {
    let (m, n) = a.shape();
    let rows = TSQR_ROWS.max(2 * n);
    if m <= rows {
        return a.qr().thin_R().to_owned();
    }
    let factors: Vec<Mat<f64>> = (0..m.div_ceil(rows))
        .into_par_iter()
        .map(|b| {
            let start = b * rows;
            a.subrows(start, rows.min(m - start))
                .qr()
                .thin_R()
                .to_owned()
        })
        .collect();
    let mut stacked = Mat::zeros(factors.iter().map(|r| r.nrows()).sum(), n);
    let mut at = 0;
    for r in &factors {
        stacked.as_mut().subrows_mut(at, r.nrows()).copy_from(r);
        at += r.nrows();
    }
    tall_skinny_r(stacked.as_ref())
}

/// Leading left singular vectors of `a` and all its singular values.
///
/// The singular values and right singular vectors `V` come from the SVD of `a`'s `R` factor
/// (`tall_skinny_r`) when `a` is tall; the kept modes are then `U_k = A V_k / s_k`.
pub fn svd_modes(a: MatRef<'_, f64>, keep: Keep) -> Result<(Mat<f64>, Vec<f64>), ModeError> {
    let (m, n) = a.shape();
    let size = m.min(n);
    if size == 0 {
        return Err(ModeError::Empty);
    }
    let r;
    let reduced = if m > n {
        r = tall_skinny_r(a);
        r.as_ref()
    } else {
        a
    };
    let par = Par::rayon(0);
    let mut s = Diag::<f64>::zeros(size);
    let mut v = Mat::<f64>::zeros(n, size);
    let scratch = svd_scratch::<f64>(
        reduced.nrows(),
        n,
        ComputeSvdVectors::No,
        ComputeSvdVectors::Thin,
        par,
        Default::default(),
    );
    svd(
        reduced,
        s.as_mut(),
        None,
        Some(v.as_mut()),
        par,
        MemStack::new(&mut MemBuffer::new(scratch)),
        Default::default(),
    )
    .map_err(|_| ModeError::Svd)?;
    let sigma: Vec<f64> = (0..size).map(|i| s.column_vector()[i]).collect();
    if sigma[0] <= 0.0 {
        return Err(ModeError::Empty);
    }
    let count = match keep {
        Keep::Count(k) if k >= 1 && k <= size => k,
        Keep::Count(k) => {
            return Err(ModeError::Truncation(format!(
                "--modes {k}: between 1 and {size} (the snapshot count)"
            )));
        }
        Keep::Energy(f) if f > 0.0 && f <= 1.0 => {
            let total: f64 = sigma.iter().map(|x| x * x).sum();
            let mut acc = 0.0;
            sigma
                .iter()
                .position(|x| {
                    acc += x * x;
                    acc >= f * total * (1.0 - 1e-15)
                })
                .map_or(size, |i| i + 1)
        }
        Keep::Energy(f) => {
            return Err(ModeError::Truncation(format!(
                "--energy {f}: a fraction in (0, 1]"
            )));
        }
    };
    // Guard against keeping modes with (numerically) zero singular values.
    let count = count.min(sigma.iter().take_while(|&&x| x > 1e-13 * sigma[0]).count());
    let vk = v.as_ref().subcols(0, count);
    let mut u: Mat<f64> = a * vk;
    for j in 0..count {
        let inv = 1.0 / sigma[j];
        for i in 0..m {
            u[(i, j)] *= inv;
        }
    }
    Ok((u, sigma))
}

/// One snapshot as the mode.
pub fn single_mode(a: MatRef<'_, f64>, snapshot: usize) -> Mat<f64> {
    Mat::from_fn(a.nrows(), 1, |i, _| a[(i, snapshot)])
}

/// The snapshot with the largest Euclidean norm (the largest deformation).
pub fn largest_snapshot(a: MatRef<'_, f64>) -> usize {
    (0..a.ncols())
        .map(|j| {
            (
                j,
                (0..a.nrows()).map(|i| a[(i, j)] * a[(i, j)]).sum::<f64>(),
            )
        })
        .fold(
            (0, -1.0),
            |best, (j, n)| if n > best.1 { (j, n) } else { best },
        )
        .0
}

/// The smallest pruning tolerance of [`difference_modes`]: below it the pruning keeps round-off
/// as modes (the residual of a dependent increment after modified Gram-Schmidt is about
/// `1e-16 sqrt(m)` times the conditioning, some 1e-13 for a large mesh).
pub const DIFFERENCE_TOLERANCE_MIN: f64 = 1e-8;

/// Difference modes, orthonormalized by modified Gram-Schmidt with pruning: an increment whose
/// part orthogonal to the modes kept so far is below `tolerance` times its norm is dropped.
/// `tolerance` must lie in `[DIFFERENCE_TOLERANCE_MIN, 1)` (at 1 or above every increment is
/// dropped).
pub fn difference_modes(a: MatRef<'_, f64>, tolerance: f64) -> Result<Mat<f64>, ModeError> {
    if !(DIFFERENCE_TOLERANCE_MIN..1.0).contains(&tolerance) {
        return Err(ModeError::Truncation(format!(
            "--difference {tolerance}: a relative tolerance in [{DIFFERENCE_TOLERANCE_MIN:e}, 1) (below, round-off is kept as modes; at 1 or above, no increment is)"
        )));
    }
    let m = a.nrows();
    let mut kept: Vec<Vec<f64>> = Vec::new();
    for j in 0..a.ncols() {
        let mut d: Vec<f64> = (0..m)
            .map(|i| a[(i, j)] - if j > 0 { a[(i, j - 1)] } else { 0.0 })
            .collect();
        let norm0 = d.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm0 == 0.0 {
            continue;
        }
        for q in &kept {
            let dot: f64 = d.iter().zip(q).map(|(x, y)| x * y).sum();
            d.iter_mut().zip(q).for_each(|(x, y)| *x -= dot * y);
        }
        let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > tolerance * norm0 {
            d.iter_mut().for_each(|x| *x /= norm);
            kept.push(d);
        }
    }
    if kept.is_empty() {
        return Err(ModeError::Empty);
    }
    Ok(Mat::from_fn(m, kept.len(), |i, j| kept[j][i]))
}

/// Least-squares generalized coordinates of every snapshot: `(S, A)`, solving the normal
/// equations `(Phi^T Phi) c = Phi^T u` (A is small and the modes are independent).
pub fn generalized_coordinates(modes: MatRef<'_, f64>, a: MatRef<'_, f64>) -> Mat<f64> {
    let gram = modes.transpose() * modes;
    let rhs = modes.transpose() * a;
    let g = DMatrix::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)]);
    let r = DMatrix::from_fn(rhs.nrows(), rhs.ncols(), |i, j| rhs[(i, j)]);
    let c = g.lu().solve(&r).expect("independent modes");
    Mat::from_fn(a.ncols(), modes.ncols(), |s, k| c[(k, s)])
}

/// The combination `C` of the snapshot columns `a` that makes the modes: `modes = a C` in least
/// squares, minimum norm. Every construction here combines snapshots, so `C` is exact up to
/// round-off; it carries a linear function of the snapshots (a control displacement per
/// snapshot, `d`) over to the modes (`d^T C`). From the small Gram matrix `a^T a` and its
/// pseudo-inverse (singular values below `1e-12` of the largest dropped: repeated snapshots).
pub fn snapshot_combination(modes: MatRef<'_, f64>, a: MatRef<'_, f64>) -> DMatrix<f64> {
    let gram = a.transpose() * a;
    let rhs = a.transpose() * modes;
    let g = DMatrix::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)]);
    let r = DMatrix::from_fn(rhs.nrows(), rhs.ncols(), |i, j| rhs[(i, j)]);
    let largest = g.diagonal().max().max(f64::MIN_POSITIVE);
    let inverse = g
        .pseudo_inverse(1e-12 * largest)
        .expect("the tolerance is not negative");
    inverse * r
}

/// The modal assurance criterion of two nodal vector fields (a mode against a reference shape),
/// `(a . b)^2 / ((a . a)(b . b))`: 1 for the same shape at any scale or sign, 0 for orthogonal
/// shapes (Allemang, "The modal assurance criterion", Proc. IMAC 21, 2003). Unweighted: each
/// node counts alike, so a refined region weighs more.
pub fn mac(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    let dot = |x: &[[f64; 3]], y: &[[f64; 3]]| -> f64 {
        x.iter()
            .zip(y)
            .map(|(p, q)| p[0] * q[0] + p[1] * q[1] + p[2] * q[2])
            .sum()
    };
    dot(a, b).powi(2) / (dot(a, a) * dot(b, b))
}

/// Modes rotated to diagonal modal matrices, with their `M` and `K`.
pub type Rotated = (Mat<f64>, DMatrix<f64>, DMatrix<f64>);

/// Rotates the modes so that the modal mass becomes the identity and the stiffness diagonal
/// (increasing): with `M = L L^T`, `L^-1 K L^-T = W Lambda W^T`, the new modes are
/// `Phi L^-T W`. Returns the new modes, `M` (identity) and `K` (diagonal).
pub fn energy_orthogonalize(
    modes: MatRef<'_, f64>,
    mass: &DMatrix<f64>,
    stiffness: &DMatrix<f64>,
) -> Result<Rotated, ModeError> {
    let l = mass.clone().cholesky().ok_or(ModeError::Mass)?.l();
    let l_inv = l.clone().try_inverse().ok_or(ModeError::Mass)?;
    let c = &l_inv * stiffness * l_inv.transpose();
    let c = (&c + c.transpose()) * 0.5;
    let eigen = SymmetricEigen::new(c);
    let mut order: Vec<usize> = (0..eigen.eigenvalues.len()).collect();
    order.sort_by(|&x, &y| eigen.eigenvalues[x].total_cmp(&eigen.eigenvalues[y]));
    let w = DMatrix::from_fn(order.len(), order.len(), |i, j| {
        eigen.eigenvectors[(i, order[j])]
    });
    let t = l_inv.transpose() * w;
    let t_faer = Mat::from_fn(t.nrows(), t.ncols(), |i, j| t[(i, j)]);
    let new_modes = modes * t_faer.as_ref();
    let k = DMatrix::from_fn(order.len(), order.len(), |i, j| {
        if i == j {
            eigen.eigenvalues[order[i]]
        } else {
            0.0
        }
    });
    Ok((new_modes, DMatrix::identity(order.len(), order.len()), k))
}
