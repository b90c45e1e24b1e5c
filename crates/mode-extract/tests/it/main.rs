//! The mode-extract integration tests, one module per topic, linked into one test binary (a binary per
//! file would link every dependency again, which costs CI's disk and link time).

mod beam;
mod ellipsoid;
mod extract;
mod flexibility;
mod free;
mod mirror;
mod modal;
mod modes;
mod polynomial;
mod readers;
mod sphere;
