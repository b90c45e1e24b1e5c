//! The LS-DEM solver (PHYSICS.md sections 3, 4 and 6), driven by scene files: rigid grains
//! whose surface nodes meet each other's level sets and analytic walls. (Modal deformation
//! degrees of freedom come next: issue #7.)
//!
//! One step ([`sim::Simulation::step`]), in the rapier manner:
//! 1. half kick and drift of the free grains (velocity Verlet; rotations by an exact splitting
//!    of Euler's equations, [`sim`]); prescribed grains and walls moved to the new time;
//! 2. broad phase: pairs of overlapping bounding spheres by a cell list ([`broad`]), and
//!    grain-wall pairs;
//! 3. narrow phase and contact law: surface nodes against level sets, forces and shear
//!    histories per node ([`narrow`], [`law`]), pairs in parallel;
//! 4. reduction of the pair forces onto grains and walls in pair order (the same bits for any
//!    thread count), gravity, local damping;
//! 5. the second half kick.
//!
//! Units are the scene's and the bundles' (never converted). Forces are global; a node's
//! penetration is `d = -phi >= 0` into the other body; a sphere pair's overlap is the total one.
//!
//! Pages: the scene file ([`scene`]), the run directory and restarts ([`mod@run`]), the contact
//! laws, one page each ([`law`]: `linear-springs`, `area-tractions`; [`hertz`]:
//! `hertz-jaeger`), the walls ([`wall`]).
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
//! };
//! let summary = run("settle.toml".as_ref(), &options, &AtomicBool::new(false))?;
//! println!("{} steps, {:.0} steps/s", summary.steps, summary.steps_per_second);
//! # Ok::<(), dem_run::RunError>(())
//! ```

pub mod body;
pub mod broad;
pub mod hertz;
pub mod law;
pub mod modal;
pub mod narrow;
pub mod run;
pub mod scene;
pub mod sim;
pub mod timestep;
pub mod view;
pub mod wall;

pub use run::{RunError, RunOptions, Summary, run};
pub use scene::{Scene, SceneError};
pub use sim::Simulation;
