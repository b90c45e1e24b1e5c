#![doc = include_str!("../README.md")]

mod baseline;
mod contact;
mod frame;
mod kernel;
mod params;
#[cfg(feature = "cli")]
pub mod replay;
pub mod store;

pub use baseline::SpringState;
pub use contact::JaegerContact;
pub use frame::ContactFrame;
pub use kernel::ContactForce;
pub use params::{ContactParams, ParamError};
pub use store::{
    BYTES_PER_ENTRY, ContactState, HELD_LEGS, HistoryStore, LEGS_PER_CHUNK, Leg, StoreError,
};
