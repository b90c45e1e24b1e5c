//! The levelset-bake integration tests, one module per topic, linked into one test binary (a binary per
//! file would link every dependency again, which costs CI's disk and link time).

mod cli;
mod deform;
mod image;
mod inputs;
mod mass;
mod nodes;
mod scale;
mod sdf;
