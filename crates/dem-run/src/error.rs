//! Why a run failed ([`RunError`]): every failure of the run application, each naming its file,
//! key or grain. Below the run loop and the run directory, which both return it.

use std::path::{Path, PathBuf};

use crate::scene::SceneError;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scene is unusable.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// The state became non-finite: the time step is too large for the contacts.
    #[error(
        "the run diverged at step {step} (t = {time:e}): a grain's state is no longer finite; lower run.dt or run.safety (the last checkpoint, if any, precedes it)"
    )]
    Diverged {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
    },
    /// A value of the history went non-finite (it is not written).
    #[error(
        "the run produced a non-finite `{column}` at step {step} (t = {time:e}) and stopped before writing it: a parameter or an initial velocity too large for floating point, or a time step too large (lower run.dt or run.safety)"
    )]
    NonFinite {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// The history column.
        column: String,
    },
    /// The energy grew beyond what the run was given: an unstable integration.
    #[error(
        "the run became unstable at step {step} (t = {time:e}): its energy grew by {residual:e}, more than the loads and the initial state gave it ({given:e}) whatever it dissipated; lower run.dt or run.safety (the last checkpoint, if any, precedes it)"
    )]
    EnergyGrowth {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// The ledger's residual.
        residual: f64,
        /// What the run was given ([`dem_core::ledger::Ledger::given`]).
        given: f64,
    },
    /// A grain's deformed level set could not be evaluated.
    #[error("the run stopped at step {step} (t = {time:e}): grain {grain}: {fault}")]
    LevelSet {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// The grain (its index in the scene's order).
        grain: usize,
        /// What failed.
        fault: dem_core::levelset::LevelSetFault,
    },
    /// A periodic cell got too narrow for its grains (it deformed, or their modes grew their
    /// reach).
    #[error(
        "the run stopped at step {step} (t = {time:e}): the periodic cell (deformed, or its grains' reach grown by their modes) is {message}"
    )]
    Cell {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// Its width against the grains'.
        message: String,
    },
    /// A servo wall could not reach its target (dem_core::wall::ServoFault).
    #[error("the run stopped at step {step} (t = {time:e}): {fault}")]
    Servo {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// What the servo met.
        fault: dem_core::wall::ServoFault,
    },
    /// A decomposed run stopped for what a process found (each process says what it found).
    #[error("the run stopped at step {step} (t = {time:e}): {message}")]
    Elsewhere {
        /// The step.
        step: u64,
        /// Its time.
        time: f64,
        /// What was found.
        message: String,
    },
    /// An output or checkpoint could not be written or read.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

pub(crate) fn file_error(path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::File {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
