//! The LS-DEM solver (docs/physics.md sections 1-6), driven by scene files: grains whose surface
//! nodes meet each other's level sets and analytic walls, rigid or deformable through modal
//! amplitudes (the deformable LS-DEM of Henzel and Karapiperis: Eqs. 1, 36-50 of their paper).
//!
//! One step ([`sim::Simulation::step`]), in the rapier manner, named stages, each a function
//! taking its data as arguments:
//! 1. integrate (first half): half kick and drift of the free grains (velocity Verlet;
//!    rotations by an exact splitting of Euler's equations, [`integrate`]; modal amplitudes,
//!    [`modal`]); prescribed grains moved to the new time;
//! 2. move walls;
//! 3. views: one [`view::View`] of each body (pose, current nodes, reach, level-set queries,
//!    generalized forces);
//! 4. broad phase on the views' reach ([`broad`]);
//! 5. narrow phase: the contact law per pair ([`law::ContactLaw`]), pairs in parallel;
//! 6. reduce: pair forces onto grains, walls and modes in pair order (the same bits for any
//!    thread count);
//! 7. body forces: gravity, local damping, modal internal forces;
//! 8. integrate (second half): the second half kick (implicit in the modal damping);
//! 9. the energy ledger ([`ledger`]: work of the boundaries, dissipation).
//!
//! The scene becomes a simulation in [`build`]; checkpoints' state is [`checkpoint`]'s.
//!
//! Deformable grains ([`modal`], [`view`]): amplitudes `eps_a` and rates per grain, set in the
//! scene (`modes = { ... }`); surface nodes at `x0 + eps_a Phi_a(x0)`; level sets `rigid`,
//! `semi-lagrangian` or `precomputed`; the generalized contact forces of Eq. 41 (the node's
//! grain) and of the contact energy's derivative (the grain whose level set is penetrated);
//! internal forces `K eps`, a one-mode table or a polynomial energy; modal damping. The
//! automatic step ([`timestep`]) covers contact patches, viscous and modal damping and modal
//! frequencies; a run whose energy outgrows its supply stops ([`ledger::Ledger::runaway`]).
//!
//! Units are the scene's and the bundles' (never converted). Forces are global; a node's
//! penetration is `d = -phi >= 0` into the other body; a sphere pair's overlap is the total one;
//! mode vectors are in the grain's local frame, generalized forces in energy per unit amplitude.
//!
//! Pages: the scene file ([`scene`]), random packings ([`packing`]), the run directory and restarts ([`mod@run`]), the contact
//! laws, one page each ([`law`]: the interface and the registry; [`law::linear_springs`],
//! [`law::area_tractions`], [`law::hertz_jaeger`], [`law::hertz_mindlin`]), the walls
//! ([`wall`]), the modes ([`modal`]), the deformed level sets ([`view`]), the time step
//! ([`timestep`]).
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

pub mod body;
pub mod broad;
pub mod build;
pub mod cell;
pub mod checkpoint;
pub mod domain;
pub mod integrate;
pub mod law;
pub mod ledger;
pub mod levelset;
pub mod measure;
pub mod modal;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod packing;
pub mod path;
pub mod run;
pub mod rundir;
pub mod scene;
pub mod sim;
pub mod timestep;
pub mod view;
pub mod wall;

pub use run::{RunError, RunOptions, Status, Summary, run};
pub use scene::{Scene, SceneError};
pub use sim::Simulation;
