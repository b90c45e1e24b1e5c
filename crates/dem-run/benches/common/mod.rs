//! What the packing benchmarks share.

use std::path::Path;

use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};

/// A unit sphere (density 1, grid spacing 0.2, 200 surface nodes) written to `dir/ball.grain`.
pub fn bake_ball(dir: &Path) {
    let options = BakeOptions {
        spacing: 0.2,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(200),
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    bake_primitive(&Primitive::Sphere { radius: 1.0 }, &options)
        .unwrap()
        .bundle
        .write(&dir.join("ball.grain"))
        .unwrap();
}

/// The mean volume of unit spheres in equal numbers at `scales`.
pub fn mean_volume(scales: &[f64]) -> f64 {
    scales.iter().map(|s| s.powi(3)).sum::<f64>() / scales.len() as f64 * 4.0 / 3.0
        * std::f64::consts::PI
}
