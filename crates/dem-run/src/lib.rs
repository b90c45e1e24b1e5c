//! The run application over the solver library `dem_core` (docs/layout.md): scene files
//! ([`scene`], [`grains`], random packings [`packing`]) become a [`dem_core::sim::Simulation`]
//! ([`build`]), which the run loop ([`mod@run`]) steps, writing its outputs, checkpoints
//! ([`checkpoint`]) and summary into a run directory ([`rundir`]); decomposed runs over MPI
//! (`mpi`, feature `mpi`); the `dem-run` command line (main.rs) on top.
//!
//! Pages: the scene file ([`scene`]), random packings ([`packing`]), the run directory and
//! restarts ([`mod@run`], [`rundir`]); the solver's pages (contact laws, walls, the cell, the
//! modes, level sets, the time step) are `dem_core`'s.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use dem_run::{RunOptions, run};
//!
//! let options = RunOptions {
//!     out: "settle.run".into(),
//!     threads: Some(2),
//!     restart: None,
//!     progress: true,
//!     overwrite: false,
//! };
//! let summary = run("settle.toml".as_ref(), &options, &AtomicBool::new(false))?;
//! println!("{} steps, {:.0} steps/s", summary.steps, summary.steps_per_second);
//! # Ok::<(), dem_run::RunError>(())
//! ```

pub mod build;
pub mod checkpoint;
pub mod error;
pub mod grains;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod packing;
pub mod run;
pub mod rundir;
pub mod scene;

pub use error::RunError;
pub use run::{RunOptions, Status, Summary, run};
pub use scene::{Scene, SceneError};
