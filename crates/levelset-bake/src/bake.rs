//! From geometry to a grain bundle: mass properties, the principal frame, the signed distance
//! grid in that frame, and the surface nodes.

use grain::derived::Derived;
use grain::{GrainBundle, GrainProperties, GridSpec, LevelSetGrid, RigidTransform};
use nalgebra::{Matrix3, Point3, Vector3};
use ndarray::{Array1, Array2};
use rayon::prelude::*;

use crate::error::BakeError;
use crate::image::VoxelImage;
use crate::isosurface::zero_level_set;
use crate::mass::{MassProperties, PrincipalFrame, grid_mass_properties};
use crate::nodes::SurfaceNodes;
use crate::primitives::Primitive;
use crate::resolution::Resolution;
use crate::sdf::{DistanceField, Extent, Signing};
use crate::surface::{Closure, TriangleMesh};

/// Which surface nodes a grain gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeChoice {
    /// The mesh's own vertices (for primitives: the vertices of their triangulation at the grid
    /// spacing).
    Vertices,
    /// A uniform resampling about this far apart.
    Spacing(f64),
    /// A uniform resampling with about this many nodes.
    Count(usize),
}

/// The most surface nodes a grain may have: every node is tested against its neighbours each
/// step, and a count past this is a spacing in the wrong unit.
pub const MAX_NODES: f64 = 1e7;

impl NodeChoice {
    /// The spacing of the nodes on a surface of area `area` (`vertices`: the spacing of a
    /// primitive's or an image's own triangulation), refused when it would give more than
    /// [`MAX_NODES`] nodes.
    fn spacing(self, area: f64, vertices: f64) -> Result<f64, BakeError> {
        let s = match self {
            NodeChoice::Vertices => vertices,
            NodeChoice::Spacing(s) => s,
            NodeChoice::Count(n) => (area / n as f64).sqrt(),
        };
        let count = area / (s * s);
        if count > MAX_NODES {
            return Err(BakeError::parameter(
                "--nodes",
                format!(
                    "about {count:.3e} nodes (a surface of area {area:e} at spacing {s:e}): at most {MAX_NODES:e} per grain; use a larger spacing"
                ),
            ));
        }
        Ok(s)
    }
}

/// What to do with a mesh that has boundary edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMesh {
    /// Refuse it (the default: an open surface has no inside).
    Refuse,
    /// Sign the distance by the generalized winding number, and integrate mass properties over
    /// the resulting grid.
    Winding,
}

/// Options common to every grain.
#[derive(Debug, Clone, PartialEq)]
pub struct BakeOptions {
    /// Grid spacing (length).
    pub spacing: f64,
    /// Grid nodes added around the grain's bounding box on every side.
    pub pad_cells: usize,
    /// Exact distances everywhere, or in a band only.
    pub extent: Extent,
    /// The surface nodes.
    pub nodes: NodeChoice,
    /// Density (mass / length^3).
    pub density: f64,
    /// Free-text units, recorded in the bundle.
    pub units: String,
    /// Policy for open meshes.
    pub open: OpenMesh,
    /// Bake a grid that does not hold the shape ([`Resolution`]) with a warning instead of
    /// refusing it (`--allow-unresolved-grid`).
    pub allow_unresolved: bool,
}

impl BakeOptions {
    /// Checks the numbers, naming the command-line option.
    pub fn validate(&self) -> Result<(), BakeError> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(BakeError::parameter(
                    field,
                    format!("must be finite and > 0, got {v}"),
                ))
            }
        };
        positive("--spacing", self.spacing)?;
        positive("--density", self.density)?;
        if let Extent::NarrowBand { cells } = self.extent
            && !(cells.is_finite() && cells >= 1.0)
        {
            return Err(BakeError::parameter(
                "--band",
                format!("must be at least 1 cell, got {cells}"),
            ));
        }
        match self.nodes {
            NodeChoice::Spacing(s) => positive("--nodes spacing", s),
            NodeChoice::Count(0) => {
                Err(BakeError::parameter("--nodes count", "must be at least 1"))
            }
            _ => Ok(()),
        }
    }

    /// The grid around a local-frame box `[lo, hi]`, padded. Refused when baking it would not
    /// fit in the memory available ([`grain::memory::available`]), naming the flag to blame
    /// (issue #33: an oversized --pad was blamed on --spacing, or overflowed): `--pad` when the
    /// grid would fit with the default pad, with the largest pad that fits; otherwise
    /// `--spacing` (a far-away vertex, or a spacing much finer than the grain), with the grid's
    /// size and the box.
    fn grid(&self, lo: Point3<f64>, hi: Point3<f64>) -> Result<GridSpec, BakeError> {
        let h = self.spacing;
        let cells = [0, 1, 2].map(|d| ((hi[d] - lo[d]) / h).ceil());
        let available = grain::memory::available();
        // The nodes per axis with `pad` nodes added on every side, if a usize holds them.
        let dims = |pad: usize| {
            cells.map(|c| {
                let c = (c.is_finite() && c < 1e15).then_some(c as usize)?;
                pad.checked_mul(2)?.checked_add(c + 1)
            })
        };
        let fits = |pad: usize| {
            dims(pad)
                .iter()
                .try_fold(BAKE_BYTES_PER_NODE, |b, d| b.checked_mul((*d)?))
                .is_some_and(|b| b <= available)
        };
        // The same in floating point, for the messages: it does not overflow.
        let shape = |pad: usize| cells.map(|c| c + 1.0 + 2.0 * pad as f64);
        let shown = |pad: usize| shape(pad).map(count).join(" x ");
        let need =
            |pad: usize| gigabytes(shape(pad).iter().product::<f64>() * BAKE_BYTES_PER_NODE as f64);
        let pad = self.pad_cells;
        let usual = pad.min(DEFAULT_PAD);
        if fits(usual) && !fits(pad) {
            // The padded grid grows with the pad: the largest that fits, by bisection.
            let (mut most, mut over) = (usual, pad);
            while over - most > 1 {
                let mid = most + (over - most) / 2;
                if fits(mid) {
                    most = mid;
                } else {
                    over = mid;
                }
            }
            return Err(BakeError::parameter(
                "--pad",
                format!(
                    "{pad} nodes on every side of the grain's {} nodes make a grid of {} nodes, which would need {} to bake, more than the {:.1} GB available to this process (memory, or an address-space limit): at most {most} here (the pad holds the level set a few cells around the grain, {DEFAULT_PAD} by default)",
                    shown(0),
                    shown(pad),
                    need(pad),
                    available as f64 / 1e9
                ),
            ));
        }
        match dims(pad) {
            [Some(x), Some(y), Some(z)] if fits(pad) => Ok(GridSpec {
                origin: [0, 1, 2].map(|d| lo[d] - pad as f64 * h),
                spacing: h,
                dims: [x, y, z],
            }),
            _ => Err(BakeError::parameter(
                "--spacing",
                format!(
                    "the grid around the grain's box [{:.6e}, {:.6e}, {:.6e}] .. [{:.6e}, {:.6e}, {:.6e}] at spacing {h:e} would have {} nodes and need {} to bake, more than the {:.1} GB available to this process (memory, or an address-space limit): use a larger --spacing, or check the input for stray far-away vertices",
                    lo.x,
                    lo.y,
                    lo.z,
                    hi.x,
                    hi.y,
                    hi.z,
                    shown(pad),
                    need(pad),
                    available as f64 / 1e9
                ),
            )),
        }
    }
}

/// A count for a message: whole, or in scientific notation past 1e15.
fn count(x: f64) -> String {
    if x < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3e}")
    }
}

/// Bytes needed, for a message: "about 0.2 GB".
fn gigabytes(bytes: f64) -> String {
    let gb = bytes / 1e9;
    if gb < 1e15 {
        format!("about {gb:.1} GB")
    } else if gb.is_finite() {
        format!("about {gb:.3e} GB")
    } else {
        "more than 1e308 bytes".into()
    }
}

/// The grid nodes added on every side of the grain's box unless `--pad` says otherwise.
pub const DEFAULT_PAD: usize = 3;

/// Memory a bake holds per grid node at its peak: the level set (8 bytes), the distance
/// transform's rows (16), the signs, the bundle's copy and the ParaView file's encoding.
/// Measured: a sphere of radius 40 at spacing 0.5 (4.66e6 nodes) peaks at 212 MB of resident
/// memory, 45 bytes per node (`/usr/bin/time -v levelset-bake sphere ...`); 32 was assumed before.
const BAKE_BYTES_PER_NODE: usize = 48;

/// Bakes a grain from a surface mesh in its input frame. `source` names the mesh in messages.
pub fn bake_mesh(
    mesh: &TriangleMesh,
    source: &std::path::Path,
    options: &BakeOptions,
) -> Result<Baked, BakeError> {
    options.validate()?;
    let mesh_error = |error| BakeError::Mesh {
        path: source.to_path_buf(),
        error,
    };
    // A grid too large for the memory comes from the file's vertices as much as the flag.
    let grid = |lo, hi| {
        options.grid(lo, hi).map_err(|e| match e {
            BakeError::Parameter { field, message } => {
                BakeError::input(source, format!("{field}: {message}"))
            }
            e => e,
        })
    };
    let closure = mesh.check().map_err(mesh_error)?;
    let signing = match (closure, options.open) {
        (Closure::Closed, _) => Signing::PseudoNormal,
        (Closure::Open { .. }, OpenMesh::Winding) => Signing::WindingNumber,
        (open @ Closure::Open { .. }, OpenMesh::Refuse) => {
            return Err(mesh_error(open.require_closed().unwrap_err()));
        }
    };
    // Mass properties in the input frame: exact for a closed mesh, from a grid otherwise.
    let mass = match signing {
        Signing::PseudoNormal => {
            let m = MassProperties::of_mesh(mesh);
            if m.volume <= 0.0 {
                return Err(mesh_error(crate::error::MeshError::InsideOut {
                    volume: m.volume,
                }));
            }
            m
        }
        Signing::WindingNumber => {
            let (lo, hi) = mesh.bounds().expect("checked");
            let spec = grid(lo, hi)?;
            let values = DistanceField::new(mesh, signing).grid(&spec, Extent::Full);
            let grid = LevelSetGrid::new(spec, values)
                .map_err(|e| BakeError::parameter("--spacing", e.to_string()))?;
            grid_mass_properties(&grid)
        }
    };
    let frame = PrincipalFrame::of_inertia(&mass.inertia);
    let translation = -(frame.rotation * mass.center.coords);
    let mut local = mesh.clone();
    local.transform(&frame.rotation, &translation);

    let (lo, hi) = local.bounds().expect("checked");
    let spec = grid(lo, hi)?;
    let field = DistanceField::new(&local, signing);
    let values = field.grid(&spec, options.extent);
    let nodes = match options.nodes {
        NodeChoice::Vertices => SurfaceNodes::vertices(&local),
        choice => {
            let s = choice.spacing(local.area(), options.spacing)?;
            SurfaceNodes::resample(&local, &field, s)
        }
    };
    let solid = Solid {
        volume: mass.volume,
        moments: frame.moments,
        rotation: frame.rotation,
        translation,
    };
    assemble(options, (spec, values), nodes, solid, local)
}

/// Bakes an analytic grain (already in its principal frame: the transform is the identity).
pub fn bake_primitive(primitive: &Primitive, options: &BakeOptions) -> Result<Baked, BakeError> {
    options.validate()?;
    primitive.validate()?;
    let e = primitive.half_extents();
    let spec = options.grid(Point3::from(-e), Point3::from(e))?;
    let band = match options.extent {
        Extent::Full => f64::INFINITY,
        Extent::NarrowBand { cells } => cells * options.spacing,
    };
    let [_, ny, nz] = spec.dims;
    let values: Vec<f64> = (0..spec.len())
        .into_par_iter()
        .map(|n| {
            primitive
                .signed_distance(&spec.node(n / (ny * nz), (n / nz) % ny, n % nz))
                .clamp(-band, band)
        })
        .collect();
    // Nodes on the exact surface; their areas are scaled from the triangulation's to the exact
    // surface area (the triangulation is inscribed, so its area is slightly smaller).
    let node_spacing = options.nodes.spacing(primitive.area(), options.spacing)?;
    let mut nodes = SurfaceNodes::vertices(&primitive.surface_mesh(node_spacing));
    let scale = primitive.area() / nodes.areas.iter().sum::<f64>();
    nodes.areas.iter_mut().for_each(|a| *a *= scale);
    let m = primitive.mass_properties();
    let solid = Solid {
        volume: m.volume,
        moments: m.moments,
        rotation: Matrix3::identity(),
        translation: Vector3::zeros(),
    };
    let surface = primitive.surface_mesh(options.spacing);
    assemble(options, (spec, values), nodes, solid, surface)
}

/// Bakes a grain from a segmented image (see [`crate::image`] for the conventions). Nodes come
/// from the zero level set of the grain's grid (marching tetrahedra), resampled at the node
/// spacing (the grid spacing for [`NodeChoice::Vertices`]: the raw isosurface vertices are far
/// from uniform).
pub fn bake_image(image: &VoxelImage, options: &BakeOptions) -> Result<Baked, BakeError> {
    options.validate()?;
    let mass = image.mass_properties();
    let frame = PrincipalFrame::of_inertia(&mass.inertia);
    let translation = -(frame.rotation * mass.center.coords);
    // The local box: the solid voxels' bounding box corners, moved to the principal frame.
    let [_, ny, nz] = image.dims;
    let (mut lo, mut hi) = (
        Point3::from(Vector3::repeat(f64::MAX)),
        Point3::from(Vector3::repeat(f64::MIN)),
    );
    for (n, _) in image.solid.iter().enumerate().filter(|(_, s)| **s) {
        let c = Vector3::new(
            (n / (ny * nz)) as f64,
            ((n / nz) % ny) as f64,
            (n % nz) as f64,
        ) * image.voxel;
        for corner in 0..8 {
            let offset = Vector3::new(
                (corner & 1) as f64,
                ((corner >> 1) & 1) as f64,
                ((corner >> 2) & 1) as f64,
            );
            let p = Point3::from(
                frame.rotation * (c + (offset - Vector3::repeat(0.5)) * image.voxel) + translation,
            );
            lo = lo.inf(&p);
            hi = hi.sup(&p);
        }
    }
    let spec = options.grid(lo, hi)?;
    let voxels = image.signed_distance(padding(image, options)?);
    let band = match options.extent {
        Extent::Full => f64::INFINITY,
        Extent::NarrowBand { cells } => cells * options.spacing,
    };
    let inverse = frame.rotation.transpose();
    let [_, gy, gz] = spec.dims;
    let values: Vec<f64> = (0..spec.len())
        .into_par_iter()
        .map(|n| {
            let x = spec.node(n / (gy * gz), (n / gz) % gy, n % gz);
            voxels
                .value(&Point3::from(inverse * (x.coords - translation)))
                .clamp(-band, band)
        })
        .collect();
    let grid = LevelSetGrid::new(spec, values)
        .map_err(|e| BakeError::parameter("--spacing", e.to_string()))?;
    let surface = zero_level_set(&grid);
    let field = DistanceField::new(&surface, Signing::PseudoNormal);
    let node_spacing = options.nodes.spacing(surface.area(), options.spacing)?;
    let nodes = SurfaceNodes::resample(&surface, &field, node_spacing);
    let solid = Solid {
        volume: mass.volume,
        moments: frame.moments,
        rotation: frame.rotation,
        translation,
    };
    assemble(options, grid.into_parts(), nodes, solid, surface)
}

/// Memory the distance transform of a padded image holds per voxel: the solid flags (1 byte),
/// the distances to either phase (16) and the signed distances (8); counted, not measured.
const IMAGE_BYTES_PER_VOXEL: f64 = 25.0;

/// The voxels an image is padded by on every side to cover the grid's pad (two more than
/// `--pad` nodes at `--spacing` span), refused when the padded image's distance transform would
/// not fit in the memory available (issue #33: a pad of 2^32 overflowed, and a pad of 3 nodes
/// on an image 1000 times finer than the grid asked for 217 GB): in floating point, which
/// cannot overflow; `--pad` is blamed when the image padded by 2 voxels alone would fit.
fn padding(image: &VoxelImage, options: &BakeOptions) -> Result<usize, BakeError> {
    let pad = |cells: usize| (cells as f64 * options.spacing / image.voxel).ceil() + 2.0;
    let dims = |cells: usize| image.dims.map(|n| n as f64 + 2.0 * pad(cells));
    let bytes = |cells: usize| dims(cells).iter().product::<f64>() * IMAGE_BYTES_PER_VOXEL;
    let available = grain::memory::available() as f64;
    let cells = options.pad_cells;
    if bytes(cells) <= available {
        return Ok(pad(cells) as usize);
    }
    let (flag, advice) = if bytes(0) <= available {
        ("--pad", "a smaller --pad, or a --spacing closer to --voxel")
    } else {
        ("the image", "a smaller image, or one cut to the grain")
    };
    Err(BakeError::parameter(
        flag,
        format!(
            "the image of {} voxels, padded by {} voxels of {:e} on every side (--pad {cells} nodes at --spacing {:e}), is {} voxels, whose distance transform would need {}, more than the {:.1} GB available to this process: {advice}",
            image.dims.map(|n| n.to_string()).join(" x "),
            count(pad(cells)),
            image.voxel,
            options.spacing,
            dims(cells).map(count).join(" x "),
            gigabytes(bytes(cells)),
            available / 1e9
        ),
    ))
}

/// A baked grain with the surface it was baked from (local frame), kept for the deformable
/// data: precomputed level sets deform this surface.
#[derive(Debug, Clone)]
pub struct Baked {
    /// The grain bundle (rigid until modes are attached).
    pub bundle: GrainBundle,
    /// The grain's surface in its local frame.
    pub surface: TriangleMesh,
    /// How the level set was computed (reused for the precomputed level sets).
    pub extent: Extent,
    /// Whether grids that do not hold their shape are baked (for the precomputed level sets too).
    pub allow_unresolved: bool,
    /// The grids baked although they do not hold their shape (the grain's, or a precomputed
    /// level set's, named), for the caller to warn of.
    pub unresolved: Vec<(String, Resolution)>,
    /// What the bake had to assume, for the caller to say.
    pub notes: Vec<String>,
}

/// What the geometry gives besides the grid and nodes: mass properties and the frame.
struct Solid {
    volume: f64,
    moments: [f64; 3],
    rotation: Matrix3<f64>,
    translation: Vector3<f64>,
}

/// Refuses the value of `flag` (a density, a Young's modulus) that takes a quantity it sets
/// out of the normal `f64`s, with the range it must lie in (issue #33: a density of 1e308 made
/// an infinite mass, 1e-310 a subnormal one, both baked).
pub(crate) fn in_range(flag: &str, value: f64, quantities: &[Derived]) -> Result<(), BakeError> {
    grain::derived::check(value, quantities).map_err(|e| BakeError::parameter(flag, e.to_string()))
}

fn assemble(
    options: &BakeOptions,
    grid: (GridSpec, Vec<f64>),
    nodes: SurfaceNodes,
    solid: Solid,
    surface: TriangleMesh,
) -> Result<Baked, BakeError> {
    in_range(
        "--density",
        options.density,
        &[
            Derived {
                name: "grain's mass",
                power: 1,
                values: &[solid.volume],
            },
            Derived {
                name: "grain's principal moments of inertia",
                power: 1,
                values: &solid.moments,
            },
        ],
    )?;
    let levelset = LevelSetGrid::new(grid.0, grid.1)
        .map_err(|e| BakeError::parameter("--spacing", e.to_string()))?;
    let mut unresolved = Vec::new();
    require(
        resolution(&levelset, solid.volume),
        "the grain",
        options.allow_unresolved,
        &mut unresolved,
    )?;
    let k = nodes.positions.len();
    let flat: Vec<f64> = nodes
        .positions
        .iter()
        .flat_map(|p| [p.x, p.y, p.z])
        .collect();
    let (r, t) = (solid.rotation, solid.translation);
    let bundle = GrainBundle {
        properties: GrainProperties {
            units: options.units.clone(),
            input_frame: RigidTransform {
                rotation: [0, 1, 2].map(|i| [0, 1, 2].map(|j| r[(i, j)])),
                translation: t.into(),
            },
            volume: solid.volume,
            density: options.density,
            mass: options.density * solid.volume,
            principal_moments: solid.moments.map(|m| m * options.density),
        },
        levelset,
        nodes: Array2::from_shape_vec((k, 3), flat).expect("k x 3"),
        node_areas: Array1::from(nodes.areas),
        deformation: None,
    };
    Ok(Baked {
        bundle,
        surface,
        extent: options.extent,
        allow_unresolved: options.allow_unresolved,
        unresolved,
        notes: Vec::new(),
    })
}

/// The one-line summary printed for each grain.
pub fn summary(name: &str, g: &GrainBundle) -> String {
    let p = &g.properties;
    let [nx, ny, nz] = g.levelset.spec().dims;
    format!(
        "{name}: volume {:.6e}, mass {:.6e}, inertia [{:.4e}, {:.4e}, {:.4e}], {} nodes, grid {nx}x{ny}x{nz} at {}",
        p.volume,
        p.mass,
        p.principal_moments[0],
        p.principal_moments[1],
        p.principal_moments[2],
        g.node_count(),
        g.levelset.spec().spacing
    )
}

/// Refuses a grid of `resolution` that does not hold the shape `what`, or, when `allow`, lists it in
/// `unresolved`.
pub(crate) fn require(
    resolution: Resolution,
    what: &str,
    allow: bool,
    unresolved: &mut Vec<(String, Resolution)>,
) -> Result<(), BakeError> {
    match (resolution.holds(), allow) {
        (true, _) => Ok(()),
        (false, true) => {
            unresolved.push((what.to_string(), resolution));
            Ok(())
        }
        (false, false) => Err(BakeError::Unresolved {
            what: what.to_string(),
            resolution,
        }),
    }
}

/// The resolution of `grid` against the geometry's volume `volume` (the grid's solid measured by
/// [`grid_mass_properties`]).
pub fn resolution(grid: &LevelSetGrid, volume: f64) -> Resolution {
    Resolution {
        volume,
        grid_volume: grid_mass_properties(grid).volume,
        depth: -grid.values().iter().copied().fold(f64::INFINITY, f64::min),
        spacing: grid.spec().spacing,
    }
}
