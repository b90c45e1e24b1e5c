//! The grain integration tests, one module per topic, linked into one test binary (a binary per
//! file would link every dependency again, which costs CI's disk and link time).

mod bundles;
mod paths;
mod vtk_round_trip;
