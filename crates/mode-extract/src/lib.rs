//! Deformation modes from FEM snapshots: SVD/POD modes, modal mass and stiffness integrated over
//! the FEM mesh, and the generalized internal force fitted to strain energies or reaction forces
//! (docs/physics.md sections 2 and 7); or from the mesh and material alone, its free-free
//! elastic modes ([`free`]). Output: a modes bundle.

pub mod extract;
pub mod fit;
pub mod flexibility;
pub mod free;
pub mod from_mesh;
pub mod mirror;
pub mod modal;
pub mod modes;
pub mod rigid;
pub mod snapshots;

pub use extract::{
    ExtractError, ExtractOptions, MaterialOptions, Method, extract, fit_warning, summary,
};
pub use flexibility::{Flexibility, FlexibilityError, residual_flexibility, surface_points};
pub use free::{FreeBody, FreeError, FreeModes, free_modes};
pub use from_mesh::{FreeOptions, free_bundle};
pub use modal::{Assembled, Elastic, ModalError, assemble, modal_matrices};
