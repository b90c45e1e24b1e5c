//! The registry of level-set updates: the update a grain's `modes.levelset` names, built for
//! its configuration.

use super::{DeformedLevelSet, precomputed, rigid, semi_lagrangian};
use crate::body::Shape;
use crate::modal::{LevelSetUpdate, ModalShape};
use crate::path::Configuration;

/// The update `method` of a grain with shape `shape` (modes `modal`) in configuration
/// `config`.
pub fn update<'a>(
    method: LevelSetUpdate,
    shape: &'a Shape,
    modal: &'a ModalShape,
    config: Configuration<'a>,
) -> Box<dyn DeformedLevelSet + 'a> {
    match method {
        LevelSetUpdate::Rigid => Box::new(rigid::Rigid {
            grid: &shape.levelset,
        }),
        LevelSetUpdate::SemiLagrangian => {
            Box::new(semi_lagrangian::SemiLagrangian::new(shape, config))
        }
        LevelSetUpdate::Precomputed => {
            Box::new(precomputed::Precomputed::new(shape, modal, config.eps))
        }
    }
}
