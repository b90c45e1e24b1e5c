//! The part of `cargo xtask` that another harness uses: the fuzz targets, shared by
//! `cargo xtask fuzz` (structured mutation) and the coverage-guided harness in `fuzz/`, and the
//! semantic campaign (`cargo xtask fuzz --semantic`).

pub mod fuzz;
pub mod layers;
pub mod semantic;
