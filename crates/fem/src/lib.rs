//! Finite-element meshes and results as the pipeline uses them, one reader module per format:
//! Abaqus/CalculiX input decks (`abaqus`), CalculiX `.frd` results (`frd`), VTK volume meshes
//! and point data (`vtu`), nodal tables and per-snapshot scalars (`tables`); all read into
//! [`grain::FemMesh`] through one assembly, with node labels ([`Part`], [`NodalValues`]); the shape functions of the supported solid elements,
//! the boundary surface of a mesh, and point location with shape-function interpolation. Every
//! reader's error is an [`InputError`] naming the file and, where there is one, the line.

pub mod abaqus;
mod boundary;
mod error;
mod frd;
mod locate;
mod part;
pub mod quadrature;
pub mod shape;
mod structured;
pub mod tables;
mod text;
mod vtk_legacy;
mod vtu;

pub use abaqus::{Deck, DeckMaterial, Redefinition};
pub use boundary::{BoundarySurface, boundary};
pub use error::InputError;
pub use frd::{Frd, read_frd};
pub use locate::{Location, Locator, node};
pub use part::{NodalValues, Part, match_points, names_snapshot};
pub use structured::box_mesh;
pub use tables::{Pairing, Scalars, read_nodal_table, read_scalars};
pub use text::{kind, read_text};
pub use vtu::{import_vtk, read_vtu_field, read_vtu_mesh, read_vtu_points_field, vtk_cells};
