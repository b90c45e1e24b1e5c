//! The run directory's files as the run writes them: each claimed from the run directory
//! (crate::rundir) before it is written.

use std::path::PathBuf;

use crate::error::RunError;
use crate::rundir::RunDir;

/// Where a process writes: the run directory, held by the first process (which lists every
/// file in its manifest, [`crate::rundir`]); the other processes of a decomposed run write
/// their VTK pieces under the same root.
pub(crate) struct Files {
    pub(crate) root: PathBuf,
    pub(crate) dir: Option<RunDir>,
}

impl Files {
    /// The path of `rel` in the run directory, listed before it is written.
    pub(crate) fn claim(&mut self, rel: &str) -> Result<PathBuf, RunError> {
        match &mut self.dir {
            Some(d) => d.claim(rel),
            None => Ok(self.root.join(rel)),
        }
    }
}
