//! Shared by the solver's tests: analytic grains baked on the fly, and scenes from text.

use std::path::{Path, PathBuf};

use dem_core::sim::Simulation;
use dem_run::Scene;
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
        allow_unresolved: false,
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

/// A cuboid grain of half-extents `half`.
pub fn brick(dir: &Path, name: &str, half: [f64; 3], spacing: f64, nodes: usize) -> PathBuf {
    bake(dir, name, Primitive::Cuboid { half }, spacing, nodes)
}

/// Writes `text` as `dir/scene.toml` and returns its path.
pub fn scene_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Options of a run into `out` on `threads` (`None`: the scene's), from `restart` if given,
/// without a progress bar.
pub fn run_options(
    out: &Path,
    threads: Option<usize>,
    restart: Option<PathBuf>,
) -> dem_run::RunOptions {
    dem_run::RunOptions {
        out: out.to_path_buf(),
        threads,
        restart,
        progress: false,
        overwrite: false,
    }
}

/// Asserts that the first two grains of `a` and `b` carry the same forces and torques to
/// `1e-12` of `scale` (a pair placed two ways: across a periodic face, and side by side).
pub fn assert_same_pair_forces(a: &Simulation, b: &Simulation, scale: f64) {
    for k in 0..2 {
        let (p, r) = (&a.world.bodies[k], &b.world.bodies[k]);
        let d = (p.force - r.force).norm().max((p.torque - r.torque).norm()) / scale;
        println!(
            "grain {k}: force {:?}, difference {d:.1e}",
            r.force.as_slice()
        );
        assert!(d < 1e-12, "grain {k}: {d:e}");
    }
}

/// The simulation of a scene text (bundle paths relative to `dir`).
pub fn simulation(dir: &Path, text: &str) -> Simulation {
    let path = scene_file(dir, text);
    dem_run::build::from_scene(&Scene::read(&path).unwrap(), &path).unwrap()
}

/// A mode field for test grains, in the grain's local frame.
pub enum TestMode {
    /// Uniform dilation `Phi(x) = x`: a sphere of radius `R` becomes one of radius `R (1 + eps)`.
    Dilation,
    /// `Phi = 0`: a mode no load can reach.
    Zero,
    /// Two modes: the dilation and a stretch along x, `Phi_2(x) = (x, 0, 0)`.
    DilationAndStretch,
    /// A contact-localised flattening of the poles on z (width `w = 0.4` for a unit sphere):
    /// `Phi(x) = (0, 0, -z exp(-(x^2 + y^2) / w^2))`, whose gradient reaches about 2.1 on
    /// the flanks of the poles (about 0.3 at an amplitude of 0.15).
    Flatten,
}

impl levelset_bake::ModeField for TestMode {
    fn count(&self) -> usize {
        match self {
            TestMode::DilationAndStretch => 2,
            _ => 1,
        }
    }
    fn values(&self, x: &nalgebra::Point3<f64>) -> Vec<nalgebra::Vector3<f64>> {
        match self {
            TestMode::Dilation => vec![x.coords],
            TestMode::Zero => vec![nalgebra::Vector3::zeros()],
            TestMode::DilationAndStretch => {
                vec![x.coords, nalgebra::Vector3::new(x.x, 0.0, 0.0)]
            }
            TestMode::Flatten => {
                let g = (-(x.x * x.x + x.y * x.y) / 0.16).exp();
                vec![nalgebra::Vector3::new(0.0, 0.0, -x.z * g)]
            }
        }
    }
}

/// A deformable sphere grain (density 1) with one mode, modal mass `m`, stiffness `k`,
/// damping `c` (linear internal force), level sets precomputed at `samples`.
#[allow(clippy::too_many_arguments)]
pub fn deformable_sphere(
    dir: &Path,
    name: &str,
    radius: f64,
    spacing: f64,
    nodes: usize,
    mode: TestMode,
    [m, k, c]: [f64; 3],
    samples: &[f64],
) -> PathBuf {
    let one = |v: f64| ndarray::Array2::from_elem((1, 1), v);
    let modal = levelset_bake::Modal {
        mass: one(m),
        stiffness: one(k),
        damping: one(c),
        internal_force: grain::InternalForce::Linear,
        material: None,
        flexibility: None,
    };
    deformable_sphere_with(dir, name, radius, spacing, nodes, mode, modal, samples)
}

/// A deformable unit sphere (grid `spacing`, about `nodes` nodes; its one mode inert, of
/// material `[E, nu]` and unit density) whose bundle carries the residual flexibility `matrix`
/// between its axis points `+x, -x, +y, -y, +z, -z` (patches of radius `rho`), in
/// `dir/name.grain`.
pub fn flexible_sphere(
    dir: &Path,
    name: &str,
    spacing: f64,
    nodes: usize,
    matrix: ndarray::Array2<f64>,
    rho: f64,
    [youngs_modulus, poisson_ratio]: [f64; 2],
) -> PathBuf {
    let points = ndarray::Array2::from_shape_fn((6, 3), |(i, j)| {
        if j == i / 2 {
            if i % 2 == 0 { 1.0 } else { -1.0 }
        } else {
            0.0
        }
    });
    let one = |v: f64| ndarray::Array2::from_elem((1, 1), v);
    let modal = levelset_bake::Modal {
        mass: one(1.0),
        stiffness: one(1.0),
        damping: one(0.0),
        internal_force: grain::InternalForce::Linear,
        material: Some(grain::Material {
            youngs_modulus,
            poisson_ratio,
            density: 1.0,
        }),
        flexibility: Some(grain::GrainFlexibility {
            points,
            patch_radius: rho,
            matrix,
        }),
    };
    deformable_sphere_with(dir, name, 1.0, spacing, nodes, TestMode::Zero, modal, &[])
}

/// The same with any modal matrices (as many modes as `mode` has).
#[allow(clippy::too_many_arguments)]
pub fn deformable_sphere_with(
    dir: &Path,
    name: &str,
    radius: f64,
    spacing: f64,
    nodes: usize,
    mode: TestMode,
    modal: levelset_bake::Modal,
    samples: &[f64],
) -> PathBuf {
    let options = BakeOptions {
        spacing,
        pad_cells: 3,
        extent: Extent::Full,
        nodes: NodeChoice::Count(nodes),
        density: 1.0,
        units: "test".into(),
        open: OpenMesh::Refuse,
        allow_unresolved: false,
    };
    let mut baked = bake_primitive(&Primitive::Sphere { radius }, &options).unwrap();
    levelset_bake::attach_modes(&mut baked, &mode, modal, samples).unwrap();
    let path = dir.join(format!("{name}.grain"));
    baked.bundle.write(&path).unwrap();
    path
}
