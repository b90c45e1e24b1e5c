//! Grain bundles from meshes, primitives and CT images: signed distance grids, surface nodes with
//! areas, mass properties in the principal frame, and per-mode grid data for deformable grains
//! (PHYSICS.md sections 1 and 5).
//!
//! Not built yet: issue #4. The on-disk formats it reads and writes are defined once, in the
//! `grain` crate.
