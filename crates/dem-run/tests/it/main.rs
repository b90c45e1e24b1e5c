//! The dem-run integration tests, one module per topic, linked into one test binary (a binary per
//! file would link every dependency again, which costs CI's disk and link time).

mod cli;
mod common;
mod contact;
mod deformable;
mod energy;
mod frame;
mod hertz;
mod measure;
mod motion;
#[cfg(feature = "mpi")]
mod mpi;
mod packing;
mod patches;
mod periodic;
mod rolling;
mod run;
mod rundir;
mod scene;
mod servo;
