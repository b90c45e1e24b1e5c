//! The LS-DEM solver: rigid grains with node-to-level-set contact, extended with modal deformation
//! degrees of freedom (PHYSICS.md sections 3 to 6), driven by scene files.
//!
//! Not built yet: issue #6. The on-disk formats it reads and writes are defined once, in the
//! `grain` crate.
