//! Modes from synthetic snapshots built from known modes: the subspace, the singular values,
//! the coordinates and the energy orthogonalization are recovered exactly (noise-free).

use faer::{Mat, MatRef};
use mode_extract::modes::{
    Keep, difference_modes, energy_orthogonalize, generalized_coordinates, largest_snapshot,
    single_mode, svd_modes,
};
use nalgebra::DMatrix;
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

/// `k` orthonormal columns of length `m` (modified Gram-Schmidt on random vectors).
fn orthonormal(m: usize, k: usize, rng: &mut XorShiftRng) -> Mat<f64> {
    let mut q = Mat::<f64>::zeros(m, k);
    for j in 0..k {
        let mut v: Vec<f64> = (0..m).map(|_| rng.random_range(-1.0..1.0)).collect();
        for p in 0..j {
            let dot: f64 = (0..m).map(|i| v[i] * q[(i, p)]).sum();
            (0..m).for_each(|i| v[i] -= dot * q[(i, p)]);
        }
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        (0..m).for_each(|i| q[(i, j)] = v[i] / n);
    }
    q
}

/// Largest sine of the principal angles between the column spaces of orthonormal `q` and `u`:
/// the norm of the part of `u` outside span(q) (Frobenius, an upper bound of the 2-norm).
fn subspace_gap(q: MatRef<'_, f64>, u: MatRef<'_, f64>) -> f64 {
    let projected = q * (q.transpose() * u);
    let r = u - projected;
    (0..r.nrows())
        .flat_map(|i| (0..r.ncols()).map(move |j| (i, j)))
        .map(|(i, j)| r[(i, j)].powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn svd_recovers_the_generating_subspace_and_singular_values() {
    // 600 rows: one QR block; 20,000: five row blocks of the tall-skinny QR, the last partial.
    for m in [600, 20_000] {
        svd_recovers_subspace(m);
    }
}

fn svd_recovers_subspace(m: usize) {
    let mut rng = XorShiftRng::seed_from_u64(5);
    let (s, a) = (12, 4);
    let q = orthonormal(m, a, &mut rng);
    let w = orthonormal(s, a, &mut rng);
    let sigma = [50.0, 7.0, 0.9, 0.01];
    // U = Q diag(sigma) W^T: its SVD is known exactly.
    let snapshots = Mat::from_fn(m, s, |i, j| {
        (0..a).map(|k| q[(i, k)] * sigma[k] * w[(j, k)]).sum()
    });
    let (modes, singular) = svd_modes(snapshots.as_ref(), Keep::Count(a)).unwrap();
    assert!(subspace_gap(q.as_ref(), modes.as_ref()) <= 1e-10);
    for k in 0..a {
        assert!(
            (singular[k] / sigma[k] - 1.0).abs() < 1e-12,
            "{k}: {} vs {}",
            singular[k],
            sigma[k]
        );
        // Unit norm and orthogonal.
        for l in 0..a {
            let dot: f64 = (0..m).map(|i| modes[(i, k)] * modes[(i, l)]).sum();
            assert!((dot - if k == l { 1.0 } else { 0.0 }).abs() < 1e-10);
        }
    }
    assert!(singular[a..].iter().all(|&x| x < 1e-12 * sigma[0]));
    // Energy truncation: 50^2 + 7^2 is 99.97 % of the total, so 0.999 needs 3 modes, 0.99 two.
    assert_eq!(
        svd_modes(snapshots.as_ref(), Keep::Energy(0.99))
            .unwrap()
            .0
            .ncols(),
        2
    );
    assert_eq!(
        svd_modes(snapshots.as_ref(), Keep::Energy(0.99999))
            .unwrap()
            .0
            .ncols(),
        3
    );
    // Asking for more modes than the data holds keeps the non-zero ones only.
    assert_eq!(
        svd_modes(snapshots.as_ref(), Keep::Count(8))
            .unwrap()
            .0
            .ncols(),
        4
    );
    assert!(svd_modes(snapshots.as_ref(), Keep::Count(13)).is_err());
    assert!(svd_modes(snapshots.as_ref(), Keep::Energy(1.5)).is_err());
}

#[test]
fn coordinates_of_noise_free_snapshots_are_exact() {
    let mut rng = XorShiftRng::seed_from_u64(9);
    let (m, s, a) = (300, 7, 3);
    let modes = orthonormal(m, a, &mut rng);
    // Scale the modes differently: coordinates must not assume orthonormality.
    let modes = Mat::from_fn(m, a, |i, k| modes[(i, k)] * (k as f64 + 0.5));
    let coords = Mat::from_fn(s, a, |_, _| rng.random_range(-2.0..2.0));
    let snapshots = &modes * coords.transpose();
    let got = generalized_coordinates(modes.as_ref(), snapshots.as_ref());
    for i in 0..s {
        for k in 0..a {
            assert!((got[(i, k)] - coords[(i, k)]).abs() < 1e-12);
        }
    }
    let big = largest_snapshot(snapshots.as_ref());
    let one = single_mode(snapshots.as_ref(), big);
    assert_eq!(one[(17, 0)], snapshots[(17, big)]);
}

#[test]
fn difference_modes_span_the_increments_and_prune_repeats() {
    let mut rng = XorShiftRng::seed_from_u64(2);
    let (m, a) = (200, 3);
    let q = orthonormal(m, a, &mut rng);
    // A loading path whose increments lie in span(q), with one increment repeated exactly.
    let steps = [
        [1.0, 0.0, 0.0],
        [0.5, 1.0, 0.0],
        [0.5, 1.0, 0.0],
        [0.0, 0.2, 3.0],
    ];
    let mut path = vec![[0.0; 3]];
    for s in steps {
        let last = *path.last().unwrap();
        path.push([last[0] + s[0], last[1] + s[1], last[2] + s[2]]);
    }
    let snapshots = Mat::from_fn(m, steps.len(), |i, j| {
        (0..a).map(|k| q[(i, k)] * path[j + 1][k]).sum()
    });
    let modes = difference_modes(snapshots.as_ref(), 1e-8).unwrap();
    assert_eq!(modes.ncols(), 3, "the repeated increment is pruned");
    assert!(subspace_gap(q.as_ref(), modes.as_ref()) < 1e-12);
    // Issue #23: a tolerance that keeps round-off (negative, zero, tiny), keeps nothing (1 or
    // more) or is not a number is refused, naming the option and the range.
    for bad in [-1e-3, 0.0, 1e-12, 1.0, 2.0, f64::NAN] {
        let e = difference_modes(snapshots.as_ref(), bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("--difference {bad}")) && e.contains("[1e-8, 1)"),
            "{e}"
        );
    }
}

#[test]
fn energy_orthogonalization_diagonalizes_mass_and_stiffness() {
    let mut rng = XorShiftRng::seed_from_u64(4);
    let modes = orthonormal(50, 3, &mut rng);
    let mass = DMatrix::from_row_slice(3, 3, &[2.0, 0.3, 0.1, 0.3, 1.5, 0.2, 0.1, 0.2, 1.0]);
    let stiffness = DMatrix::from_row_slice(3, 3, &[10.0, 1.0, 0.0, 1.0, 4.0, 0.5, 0.0, 0.5, 7.0]);
    let (new, m, k) = energy_orthogonalize(modes.as_ref(), &mass, &stiffness).unwrap();
    // The rotation T maps old modes to new: new = modes T, so T = modes^T new (orthonormal modes).
    let t = modes.transpose() * &new;
    let t = DMatrix::from_fn(3, 3, |i, j| t[(i, j)]);
    let mt = t.transpose() * &mass * &t;
    let kt = t.transpose() * &stiffness * &t;
    assert!((mt - &m).norm() < 1e-12 && (kt - &k).norm() < 1e-12);
    assert!(m.is_identity(1e-15));
    for i in 0..3 {
        // Each column of T is a generalized eigenvector: K t = lambda M t.
        let v = t.column(i);
        assert!((&stiffness * v - &mass * v * k[(i, i)]).norm() < 1e-12);
        if i > 0 {
            assert!(k[(i, i)] >= k[(i - 1, i - 1)]);
        }
    }
}
