//! `cargo bench -p mode-extract`: the SVD of a 300,000 x 50 snapshot matrix, and a whole run of
//! `mode-extract` over 50 generated .vtu snapshots of about 100,000 nodes; time and peak memory
//! (the process's high-water mark, VmHWM, read before and after each part), side by side with
//! NumPy's SVD of the same-sized matrix when `python3 -c "import numpy"` works.
//!
//! Snapshots: 50 combinations of 8 smooth fields (products of sines of the coordinates) with
//! random coefficients, plus 1e-6 noise: a realistic, slowly decaying spectrum.

use std::process::Command;
use std::time::Instant;

use faer::Mat;
use grain::vtk::{PointData, PvdEntry, write_pvd, write_vtu};
use grain::{ElementType, Normalization};
use mode_extract::modes::{Keep, svd_modes};
use mode_extract::{ExtractOptions, Method, extract};
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

/// A memory figure of this process from /proc/self/status (`VmHWM`: the high-water mark,
/// `VmRSS`: now), in MB; 0 where /proc is missing.
fn status_mb(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(key)).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<f64>()
                    .unwrap_or(0.0)
            })
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// Resets the high-water mark to the present use (Linux >= 4.0), so that a part's peak is not
/// an earlier part's.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

fn current_rss_mb() -> f64 {
    status_mb("VmRSS:")
}

fn field(p: [f64; 3], k: usize) -> [f64; 3] {
    let f = 1.0 + k as f64 * 0.7;
    [
        (f * p[0]).sin() * (0.5 * f * p[1]).cos(),
        (f * p[1] + 0.3).sin() * p[2],
        (f * p[2]).cos() * (f * p[0]).sin(),
    ]
}

fn main() {
    let mut rng = XorShiftRng::seed_from_u64(1);
    // Part 1: the bare SVD of a 300,000 x 50 matrix.
    let (m, n) = (300_000, 50);
    let base = peak_rss_mb();
    let a = Mat::from_fn(m, n, |i, j| {
        let p = [i as f64 * 1e-5, (i % 977) as f64 * 1e-3, (j as f64) * 0.1];
        (0..8)
            .map(|k| field(p, k)[i % 3] * (j as f64 + 1.0).powi(-(k as i32)))
            .sum::<f64>()
            + 1e-6 * rng.random_range(-1.0..1.0)
    });
    let matrix_mb = (m * n * 8) as f64 / 1e6;
    let t = Instant::now();
    let (modes, sigma) = svd_modes(a.as_ref(), Keep::Energy(0.999_999)).unwrap();
    let svd_time = t.elapsed().as_secs_f64();
    let svd_peak = peak_rss_mb() - base;
    println!(
        "SVD of {m} x {n} ({matrix_mb:.0} MB): {svd_time:.3} s, kept {} modes (sigma_0 {:.3e}), peak {:.0} MB above start ({:.2} x the matrix)",
        modes.ncols(),
        sigma[0],
        svd_peak,
        svd_peak / matrix_mb
    );
    let t = Instant::now();
    let thin = a.thin_svd().unwrap();
    let thin_time = t.elapsed().as_secs_f64();
    println!("faer's thin SVD (U, S, V) of the same matrix, called bare: {thin_time:.3} s");
    drop((a, modes, thin));
    let numpy = Command::new("python3")
        .args(["-c", &format!("import numpy as np, time, resource\na = np.random.default_rng(1).standard_normal(({m}, {n}))\nt = time.perf_counter()\nu, s, vt = np.linalg.svd(a, full_matrices=False)\nprint(time.perf_counter() - t)")])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok());
    match numpy {
        Some(t) => println!(
            "NumPy's thin SVD (U, S, V) of a random matrix of the same size: {t:.3} s ({:.2} x faer's thin SVD, {:.2} x this crate's)",
            t / thin_time,
            t / svd_time
        ),
        None => println!("NumPy is not available: no side-by-side figure"),
    }

    // Part 2: a whole run over 50 .vtu snapshots of ~100,000 nodes (tet4 box, 46^3 cells).
    let dir = tempfile::tempdir().unwrap();
    let mesh = fem::box_mesh(ElementType::Tet4, [0.0; 3], [1.0, 1.0, 1.0], [46, 46, 46]);
    let nodes = mesh.nodes.nrows();
    let mut entries = Vec::new();
    let t = Instant::now();
    let coefficients: Vec<Vec<f64>> = (0..50)
        .map(|_| {
            (0..8)
                .map(|k| rng.random_range(-1.0..1.0) / (k as f64 + 1.0))
                .collect()
        })
        .collect();
    // Snapshot `s`, node after node.
    let snapshot = |s: usize| -> Vec<f64> {
        (0..nodes)
            .flat_map(|i| {
                let p = [mesh.nodes[[i, 0]], mesh.nodes[[i, 1]], mesh.nodes[[i, 2]]];
                let mut v = [0.0; 3];
                for (k, ck) in coefficients[s].iter().enumerate() {
                    let f = field(p, k);
                    (0..3).for_each(|d| v[d] += ck * f[d] * 1e-3);
                }
                v
            })
            .collect()
    };
    for s in 0..50 {
        let u = snapshot(s);
        let file = format!("s{s:02}.vtu");
        write_vtu(
            &dir.path().join(&file),
            &mesh,
            &[PointData::Vectors("U", &u)],
        )
        .unwrap();
        entries.push(PvdEntry {
            time: s as f64,
            file: file.into(),
        });
    }
    let pvd = dir.path().join("run.pvd");
    write_pvd(&pvd, &entries).unwrap();
    println!(
        "wrote 50 snapshots of {nodes} nodes in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let snapshot_mb = (3 * nodes * 50 * 8) as f64 / 1e6;
    reset_peak();
    let before = peak_rss_mb();
    let rss_before = current_rss_mb();
    let options = ExtractOptions {
        method: Method::Svd(Keep::Energy(0.9999)),
        normalization: Normalization::UnitL2,
        material: mode_extract::MaterialOptions {
            youngs_modulus: Some(1000.0),
            poisson_ratio: Some(0.3),
            density: Some(1.0),
        },
        holdout: 0.1,
        units: "bench".into(),
        ..ExtractOptions::new(vec![pvd])
    };
    let t = Instant::now();
    let b = extract(&options).unwrap();
    let run_time = t.elapsed().as_secs_f64();
    let peak = peak_rss_mb().max(before) - rss_before;
    println!(
        "whole run (read 50 .vtu, SVD, M and K over {} tets, coordinates): {run_time:.2} s, {} modes; peak {:.0} MB above start for a {snapshot_mb:.0} MB snapshot matrix ({:.2} x)",
        mesh.blocks[0].connectivity.nrows(),
        b.mode_count(),
        peak,
        peak / snapshot_mb
    );
    // The reference: faer's SVD, called bare, of the matrix the run decomposes (its 45
    // training snapshots, the 5 held out being the evenly spaced ones the run picks).
    let training: Vec<usize> = (0..50).filter(|&s| !b.info.snapshots[s].holdout).collect();
    let columns: Vec<Vec<f64>> = training.iter().map(|&s| snapshot(s)).collect();
    let train = Mat::from_fn(3 * nodes, training.len(), |i, j| columns[j][i]);
    drop(columns);
    let t = Instant::now();
    let bare = train.thin_svd().unwrap();
    let bare_time = t.elapsed().as_secs_f64();
    let _ = bare.S();
    let t = Instant::now();
    let _ = train.singular_values().unwrap();
    let values_time = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let _ = svd_modes(train.as_ref(), Keep::Energy(0.9999)).unwrap();
    let ours = t.elapsed().as_secs_f64();
    println!(
        "bare faer SVD of the run's training matrix ({} x {}): thin U, S, V {bare_time:.3} s (whole run / it = {:.2}); singular values alone {values_time:.3} s (whole run / it = {:.2}); this crate's SVD (TSQR, kept modes only) {ours:.3} s",
        train.nrows(),
        train.ncols(),
        run_time / bare_time,
        run_time / values_time
    );
}
