//! Grains from voxel images: a voxelized sphere against the analytic sphere.

use std::process::Command;

use grain::GrainBundle;
use levelset_bake::{Segmentation, VoxelImage, zero_level_set};
use ndarray::Array3;

/// A sphere of radius `r` voxels centred in an `n^3` image (solid where the voxel centre is
/// inside), as uint8 labels: 2 for the sphere, 0 elsewhere.
fn sphere_image(n: usize, r: f64) -> Array3<u8> {
    let c = (n as f64 - 1.0) / 2.0;
    Array3::from_shape_fn((n, n, n), |(i, j, k)| {
        let d = ((i as f64 - c).powi(2) + (j as f64 - c).powi(2) + (k as f64 - c).powi(2)).sqrt();
        if d < r { 2 } else { 0 }
    })
}

#[test]
fn voxel_sphere_is_within_half_a_voxel_near_the_surface() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ct.npy");
    let (n, r, voxel) = (40usize, 12.3, 0.5);
    ndarray_npy::write_npy(&file, &sphere_image(n, r)).unwrap();
    let out = dir.path().join("ct.grain");
    let status = Command::new(env!("CARGO_BIN_EXE_levelset-bake"))
        .args([
            "image",
            file.to_str().unwrap(),
            "--voxel",
            "0.5",
            "--label",
            "2",
            "--spacing",
            "0.5",
        ])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let g = GrainBundle::read(&out).unwrap();
    // A sphere's principal frame is the input frame; the centre is the image centre.
    let t = g.properties.input_frame.translation;
    let centre = (n as f64 - 1.0) / 2.0 * voxel;
    assert!(t.iter().all(|x| (x + centre).abs() < 1e-9), "{t:?}");
    let radius = r * voxel;
    let spec = g.levelset.spec();
    let [_, ny, nz] = spec.dims;
    let mut worst = 0.0f64;
    for (m, &phi) in g.levelset.values().iter().enumerate() {
        let p = spec.node(m / (ny * nz), (m / nz) % ny, m % nz);
        let exact = p.coords.norm() - radius;
        if exact.abs() <= 2.0 * voxel {
            worst = worst.max((phi - exact).abs());
        }
    }
    assert!(
        worst <= 0.5 * voxel,
        "largest error near the surface {worst} > half a voxel"
    );
    // Voxel-integrated volume: within the staircase error of the analytic ball.
    let ball = 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
    assert!(
        (g.properties.volume / ball - 1.0).abs() < 0.02,
        "{} vs {ball}",
        g.properties.volume
    );
    let area: f64 = g.node_areas.iter().sum();
    assert!(
        (area / (4.0 * std::f64::consts::PI * radius * radius) - 1.0).abs() < 0.05,
        "{area}"
    );
}

#[test]
fn isosurface_of_a_voxel_sphere_is_closed_and_outward() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ct.npy");
    ndarray_npy::write_npy(&file, &sphere_image(20, 6.0)).unwrap();
    let image = VoxelImage::read(&file, 1.0, Segmentation::Threshold(1.0)).unwrap();
    let grid = image.signed_distance(2);
    let mesh = zero_level_set(&grid);
    assert_eq!(mesh.check(), Ok(levelset_bake::Closure::Closed));
    let volume: f64 = (0..mesh.triangles.len())
        .map(|f| {
            let [a, b, c] = mesh.corners(f);
            a.coords.dot(&b.coords.cross(&c.coords)) / 6.0
        })
        .sum();
    let ball = 4.0 / 3.0 * std::f64::consts::PI * 216.0;
    assert!((volume / ball - 1.0).abs() < 0.05, "{volume}");
}

#[test]
fn bad_images_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("flat.npy");
    ndarray_npy::write_npy(&flat, &ndarray::Array2::<f64>::zeros((4, 4))).unwrap();
    let e = VoxelImage::read(&flat, 1.0, Segmentation::Threshold(0.5))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flat.npy: expected a 3-D array, found shape [4, 4]"),
        "{e}"
    );
    let empty = dir.path().join("empty.npy");
    ndarray_npy::write_npy(&empty, &Array3::<u8>::zeros((3, 3, 3))).unwrap();
    let e = VoxelImage::read(&empty, 1.0, Segmentation::Label(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty.npy: no voxel is solid"), "{e}");
    let e = VoxelImage::read(&empty, -1.0, Segmentation::Label(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--voxel: must be finite and > 0"), "{e}");
    let text = dir.path().join("text.npy");
    std::fs::write(&text, "not numpy").unwrap();
    let e = VoxelImage::read(&text, 1.0, Segmentation::Label(1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "text.npy: cannot read array: not a .npy file (no \\x93NUMPY magic string at its start)"
        ),
        "{e}"
    );
}
