//! Bundles: directories with a schema-versioned JSON manifest and `.npy` arrays (docs/formats.md,
//! "On-disk contracts"). Reading checks the schema version first, then every array's shape
//! against the manifest; writing is atomic (see [`crate::atomic`]).

pub mod grain;
mod manifest;
pub mod modes;
mod scale;
pub use scale::ScaleError;

pub use grain::{
    Deformation, GRAIN_SCHEMA, GRAIN_SCHEMA_OLDEST, GrainBundle, GrainFlexibility, GrainProperties,
    ModePath, PathPiece, PathWeights, RigidTransform, SampledLevelSet, bundle_digest, knot_tangent,
    path_displacement, path_piece, path_weights,
};
pub use manifest::{InternalForce, Material};
pub use modes::{
    FitDifference, FitReport, MODES_SCHEMA, MODES_SCHEMA_OLDEST, ModeConstruction, ModesBundle,
    ModesInfo, Normalization, Reconstruction, ReconstructionError, Snapshot, SnapshotPath,
    SourceFile, SurfaceFlexibility, Truncation,
};
