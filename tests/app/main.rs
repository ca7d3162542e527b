//! The desktop app beside the CLI, end to end and through the app's public API: the two shells
//! report the same for the same trace and configuration, and a sweep table the CLI writes
//! opens in the app. One test binary (each file a module). The app's own flows and views are
//! tested inside its crate (`crates/app/src/tests`).
#![cfg(feature = "gui")]

#[path = "../common/run.rs"]
mod run;
mod shells;
mod sweep;
#[path = "../common/sweeps.rs"]
mod sweeps;
