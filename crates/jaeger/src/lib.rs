//! The Cattaneo-Mindlin-Deresiewicz force between two elastic spheres of one material for any
//! history of normal and tangential movement: Jäger's algorithm with Kuhn's provisions
//! (M. R. Kuhn, "Implementation of the Jäger contact model for discrete element simulations",
//! IJNME 88 (2011) 66-82): approximate history, contact-frame rotation, compact storage for many
//! contacts. The specification, with every formula, is JAEGER.md (in the project's shared docs);
//! equation and section numbers in this crate refer to it and to Kuhn's paper.
//!
//! Conventions at the public boundary: TOTAL normal overlap `delta = r1 + r2 - |x2 - x1|` and
//! TOTAL relative tangential displacement of the contact points, in the contact's local frame
//! (z along the normal); forces are the Hertz normal force `N >= 0` and the tangential force `T`
//! in that frame, pointing along the accumulated tangential displacement. Units are the user's,
//! consistent (e.g. m, Pa, N).
//!
//! - [`ContactParams`]: validated radii, shear modulus, Poisson ratio, friction, approximation;
//! - [`HistoryStore`] + [`ContactState`]: many contacts sharing one arena (28 bytes per leg);
//! - [`JaegerContact`]: one contact that owns its history;
//! - [`ContactFrame`]: the quaternion frame that carries a contact through tumbling and twirling;
//! - [`SpringState`]: the baseline Hertz + incremental Mindlin spring law, for comparison.
//!
//! This crate depends on no other workspace crate, so that other DEM codes can use it alone.

mod baseline;
mod contact;
mod frame;
mod kernel;
mod params;
mod store;

pub use baseline::SpringState;
pub use contact::JaegerContact;
pub use frame::ContactFrame;
pub use kernel::ContactForce;
pub use params::{ContactParams, ParamError};
pub use store::{BYTES_PER_ENTRY, ContactState, HistoryStore, Leg};
