//! Shared by the solver's tests: analytic grains baked on the fly, and scenes from text.

use std::path::{Path, PathBuf};

use dem_run::{Scene, Simulation};
use levelset_bake::{BakeOptions, Extent, NodeChoice, OpenMesh, Primitive, bake_primitive};

/// Bakes `primitive` (density 1) with grid `spacing` and about `nodes` surface nodes into
/// `dir/name.grain`.
pub fn bake(dir: &Path, name: &str, primitive: Primitive, spacing: f64, nodes: usize) -> PathBuf {
    let options = BakeOptions {
        spacing,
        pad_cells: 2,
        extent: Extent::Full,
        nodes: NodeChoice::Count(nodes),
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
    };
    let path = dir.join(format!("{name}.grain"));
    bake_primitive(&primitive, &options)
        .unwrap()
        .bundle
        .write(&path)
        .unwrap();
    path
}

/// A sphere grain of `radius`.
pub fn sphere(dir: &Path, name: &str, radius: f64, spacing: f64, nodes: usize) -> PathBuf {
    bake(dir, name, Primitive::Sphere { radius }, spacing, nodes)
}

/// Writes `text` as `dir/scene.toml` and returns its path.
pub fn scene_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The simulation of a scene text (bundle paths relative to `dir`).
pub fn simulation(dir: &Path, text: &str) -> Simulation {
    let path = scene_file(dir, text);
    Simulation::from_scene(&Scene::read(&path).unwrap(), &path).unwrap()
}
