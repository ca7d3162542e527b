//! End-to-end tests of the `warpscope` binary: every subcommand on the sample traces (golden
//! JSON snapshots in `snapshots/`), every command the docs show, sweeps split in shards and run
//! on a one-node Slurm cluster. One test binary (each file a module).

mod commands;
mod doc_commands;
#[path = "../common/run.rs"]
mod run;
mod slurm;
mod sweep_shards;
mod sweep_tables;
#[path = "../common/sweeps.rs"]
mod sweeps;
#[path = "../common/traces.rs"]
mod traces;
