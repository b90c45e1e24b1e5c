//! The LS-DEM solver library (docs/physics.md sections 1-6; docs/layout.md): grains whose
//! surface nodes meet each other's level sets and analytic walls, rigid or deformable through
//! modal amplitudes (the deformable LS-DEM of Henzel and Karapiperis: Eqs. 1, 36-50 of their
//! paper). No scene files, run directories or command line: the `dem-run` crate reads scenes,
//! builds a [`sim::Simulation`] from them and runs it; another DEM code can drive this library
//! alone.
//!
//! One step ([`sim::Simulation::step`]), in the rapier manner, named stages, each a function
//! taking its data as arguments:
//! 1. integrate (first half): half kick and drift of the free grains (velocity Verlet;
//!    rotations by an exact splitting of Euler's equations, [`integrate`]; modal amplitudes,
//!    [`modal`]); prescribed grains moved to the new time;
//! 2. move walls; a periodic cell deforms and wraps its grains ([`cell`]);
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
//! A run's state, for checkpoints, is [`state`]'s; a decomposed run's processes are behind
//! [`domain::Processes`].
//!
//! Deformable grains ([`modal`], [`view`]): amplitudes `eps_a` and rates per grain; surface
//! nodes at `x0 + eps_a Phi_a(x0)`; level sets `rigid`, `semi-lagrangian` or `precomputed`
//! ([`levelset`]); the generalized contact forces of Eq. 41 (the node's grain) and of the
//! contact energy's derivative (the grain whose level set is penetrated); internal forces
//! `K eps`, a one-mode table or a polynomial energy; modal damping. The automatic step
//! ([`timestep`]) covers contact patches, viscous and modal damping and modal frequencies; a
//! run whose energy outgrows its supply stops ([`ledger::Ledger::runaway`]).
//!
//! Units are the caller's and the bundles' (never converted). Forces are global; a node's
//! penetration is `d = -phi >= 0` into the other body; a sphere pair's overlap is the total one;
//! mode vectors are in the grain's local frame, generalized forces in energy per unit amplitude.
//!
//! Pages: the contact laws, one page each ([`law`]: the interface, [`law::registry`];
//! [`law::linear_springs`], [`law::area_tractions`], [`law::hertz_patches`],
//! [`law::hertz_jaeger`], [`law::hertz_mindlin`]), the coupling of a grain's contacts through
//! its body ([`coupling`], [`flexibility`]), the walls ([`wall`]), the periodic cell ([`cell`]), the modes
//! ([`modal`]), the deformed level sets ([`view`], [`levelset`]), the time step ([`timestep`]).
//!
//! Layers, lowest first (a module uses only those before it; a test lists the `use crate::`
//! edges and fails on a cycle): [`error`], [`threads`], [`motion`], [`lanes`], [`path`],
//! [`modal`], [`cloud`],
//! [`curvature`], [`flexibility`], [`body`], [`broad`], [`integrate`], [`wall`], [`cell`],
//! [`levelset`], [`view`], [`law`], [`coupling`], [`ledger`],
//! [`measure`], [`timestep`], [`domain`], [`sim`], [`state`].

pub mod body;
pub mod broad;
pub mod cell;
pub mod cloud;
pub mod coupling;
pub mod curvature;
pub mod domain;
pub mod error;
pub mod flexibility;
pub mod integrate;
pub mod lanes;
pub mod law;
pub mod ledger;
pub mod levelset;
pub mod measure;
pub mod modal;
pub mod motion;
pub mod neighbours;
pub mod path;
pub mod sim;
pub mod state;
pub mod threads;
pub mod timestep;
pub mod view;
pub mod wall;
