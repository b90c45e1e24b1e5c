//! The Cattaneo-Mindlin-Deresiewicz force between two elastic spheres for any history of normal
//! and tangential movement (Jäger's algorithm with Kuhn's provisions: approximate history,
//! contact-frame rotation, compact storage for many contacts). Specification: JAEGER.md.
//!
//! Built so far: validated contact parameters with the Hertz normal force ([`ContactParams`])
//! and the contact frame ([`ContactFrame`]). The history kernel, its store and the CLI follow
//! (issue #3).
//!
//! This crate depends on no other workspace crate, so that other DEM codes can use it alone.

mod frame;
mod params;

pub use frame::ContactFrame;
pub use params::{ContactParams, ParamError};
