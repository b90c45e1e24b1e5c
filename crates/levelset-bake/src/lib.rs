//! Grain bundles from meshes, primitives and CT images: signed distance grids, surface nodes with
//! areas, mass properties in the principal frame, and per-mode grid data for deformable grains
//! (docs/physics.md sections 1 and 5).

mod bake;
mod bvh;
mod deform;
mod error;
pub mod image;
pub mod input;
mod isosurface;
mod mass;
mod nodes;
mod primitives;
mod resolution;
mod sdf;
mod shell;
mod surface;

pub use bake::{
    BakeOptions, Baked, DEFAULT_PAD, NodeChoice, OpenMesh, bake_image, bake_mesh, bake_primitive,
    resolution, summary,
};
pub use deform::{
    BendingMode, CONTINUATION_REACH, Damping, FemModes, Modal, ModalMass, ModeField, ModeRequest,
    ModeSource, Samples, attach_modes,
};
pub use error::{BakeError, MeshError};
pub use image::{Segmentation, VoxelImage};
pub use isosurface::zero_level_set;
pub use mass::{MassProperties, PrincipalFrame, grid_mass_properties};
pub use nodes::SurfaceNodes;
pub use primitives::{Primitive, UnitMassProperties};
pub use resolution::{MAX_VOLUME_MISMATCH, Resolution};
pub use sdf::{DistanceField, Extent, Signing};
pub use shell::{Foot, NormalShell};
pub use surface::{Closure, TriangleMesh};
