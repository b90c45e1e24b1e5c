//! Finite-element meshes as the pipeline uses them: Abaqus/CalculiX input decks and VTK volume
//! meshes read into [`grain::FemMesh`], the shape functions of the supported solid elements,
//! the boundary surface of a mesh, and point location with shape-function interpolation.

pub mod abaqus;
mod boundary;
mod locate;
pub mod quadrature;
pub mod shape;
mod structured;
mod vtu;

pub use abaqus::{Deck, DeckError, DeckMaterial};
pub use boundary::{BoundarySurface, boundary};
pub use locate::{Location, Locator, node};
pub use structured::box_mesh;
pub use vtu::{read_vtu_field, read_vtu_mesh, read_vtu_points_field};
