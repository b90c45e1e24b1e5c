//! Shared domain types and on-disk formats of the deformable LS-DEM pipeline.
//!
//! Every stage (mode-extract, levelset-bake, dem-run) reads and writes its files through this
//! crate, so each format is defined in exactly one place:
//!
//! - [`LevelSetGrid`]: a signed distance function on a regular grid with trilinear value and
//!   gradient anywhere (a documented extension outside the grid box);
//! - [`GrainBundle`] (`<name>.grain/`) and [`ModesBundle`] (`<name>.modes/`): a JSON manifest with
//!   a schema version plus NumPy `.npy` arrays (little-endian `f64`, C order; connectivity
//!   `uint64`), read with every shape checked against the manifest and written atomically;
//! - [`ForceTable`]: the tabulated internal force, `internal_force.csv`;
//! - [`vtk`]: `.vti`, `.vtp`, `.vtu` and `.pvd` writers for ParaView;
//! - [`atomic`]: the temp-then-rename writes every output goes through.
//!
//! Units are the user's: the pipeline never converts them, and manifests record them as text.
//! Errors are [`FormatError`]s, each naming the file and the field or array concerned.

pub mod atomic;
pub mod bundle;
pub mod derived;
mod error;
pub mod grid;
pub mod memory;
mod mesh;
mod npy;
pub mod text;
pub use npy::{NpyHeader, read_npy_header};
pub mod polynomial;
pub mod table;
pub mod vtk;

pub use bundle::*;
pub use error::{FormatError, Result};
pub use grid::{
    Cell, FourLanes, GridError, GridSpec, Lanes, LevelSetGrid, Located, NodeValue,
    PULL_BACK_ITERATIONS, PULL_BACK_TOLERANCE, PullBack, PullBackFailure, TIE,
};
pub use mesh::{ElementBlock, ElementType, FemMesh};
pub use polynomial::{EnergyPolynomial, Monomial};
pub use table::{ForceTable, TableError, TableInterpolation, TableLaw};
