//! The jaeger integration tests, one module per topic, linked into one test binary (a binary per
//! file would link every dependency again, which costs CI's disk and link time).

mod cli;
mod closed_forms;
mod degenerate;
mod invariants;
mod mdr;
mod serde;
mod store;
