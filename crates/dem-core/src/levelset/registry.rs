//! The registry of level-set updates (LAMMPS's style registry, as the contact laws'): the
//! name a grain's `modes.levelset` gives, and how the update is built for a configuration.
//!
//! Adding an update is one file in `levelset/` (a type implementing
//! [`super::DeformedLevelSet`], and its [`super::Entry`]) and one line in [`UPDATES`], besides its
//! `pub mod` line:
//!
//! ```
//! use dem_core::levelset::registry::{UPDATES, find};
//!
//! // Every registered update is found by its name, and the names are distinct.
//! for entry in UPDATES {
//!     assert!(std::ptr::eq(find(entry.name).unwrap(), entry));
//! }
//! assert!(find("advected").is_none());
//! ```

use super::{DeformedLevelSet, Entry, precomputed, rigid, semi_lagrangian};
use crate::body::Shape;
use crate::error::KeyError;
use crate::modal::{LevelSetUpdate, ModalShape};
use crate::path::Configuration;

/// The updates, one line each.
pub static UPDATES: &[Entry] = &[rigid::ENTRY, semi_lagrangian::ENTRY, precomputed::ENTRY];

/// The update named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    UPDATES.iter().find(|e| e.name == name)
}

/// The update `update` names; `key` names it in the error.
pub fn entry(update: &LevelSetUpdate, key: &str) -> Result<&'static Entry, KeyError> {
    find(update.name()).ok_or_else(|| {
        let names: Vec<String> = UPDATES.iter().map(|e| format!("`{}`", e.name)).collect();
        KeyError::new(
            key.to_string(),
            format!(
                "unknown level-set update `{}`, expected one of {}",
                update.name(),
                names.join(", ")
            ),
        )
    })
}

/// The update `update` of a grain with shape `shape` (modes `modal`) in configuration
/// `config`. Panics on a name the registry does not hold: a simulation's grains are checked
/// when it is built ([`entry`]).
pub fn update<'a>(
    update: &LevelSetUpdate,
    shape: &'a Shape,
    modal: &'a ModalShape,
    config: Configuration<'a>,
) -> Box<dyn DeformedLevelSet + 'a> {
    let entry = find(update.name()).expect("a grain's level-set update is checked when built");
    (entry.build)(shape, modal, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grain without a `levelset` key gets an update the registry holds.
    #[test]
    fn the_default_update_is_registered() {
        assert!(find(crate::modal::DEFAULT_UPDATE.name()).is_some());
    }
}
