//! Where a benchmark writes its grains and scenes.

use std::path::{Path, PathBuf};

/// Where a bench writes its grains and scenes: the directory named by the environment variable
/// `DEM_BENCH_KEEP` if it is set (created if need be, and left in place, so that dem-run can run
/// and a profiler count the very scenes the bench timed: docs/performance.md), else a temporary
/// directory removed when the bench ends.
pub enum WorkDir {
    /// `DEM_BENCH_KEEP`'s directory.
    Kept(PathBuf),
    /// A temporary directory.
    Temporary(tempfile::TempDir),
}

impl WorkDir {
    /// The bench's directory, as the environment says.
    pub fn new() -> WorkDir {
        match std::env::var_os("DEM_BENCH_KEEP") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                std::fs::create_dir_all(&dir).unwrap();
                println!(
                    "grains and scenes written to {} (DEM_BENCH_KEEP)",
                    dir.display()
                );
                WorkDir::Kept(dir)
            }
            None => WorkDir::Temporary(tempfile::tempdir().unwrap()),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        match self {
            WorkDir::Kept(dir) => dir,
            WorkDir::Temporary(dir) => dir.path(),
        }
    }
}
