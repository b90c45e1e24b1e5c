//! The Cattaneo-Mindlin-Deresiewicz force between two elastic spheres for any history of normal
//! and tangential movement (Jäger's algorithm with Kuhn's provisions: approximate history,
//! contact-frame rotation, compact storage for many contacts). Specification: JAEGER.md.
//!
//! Not built yet: issue #3. This crate depends on no other workspace crate, so that other DEM
//! codes can use it alone.
