//! Warpscope: how GPU kernels use the L1 cache.
//!
//! The simulation core is the crate `warpscope-core` (`crates/core`), re-exported here module
//! by module, so `warpscope::sim` is `warpscope_core::sim`: the pipeline (trace, gen,
//! schedule, coalesce, cache, reuse, sim, timing, report) and what sits beside it (config,
//! explain, comm, analyze, hwcheck, lesson). Being a crate of its own, the core cannot name
//! the shells.
//!
//! This crate adds the shells over it: [`shell`] (features `cli` or `gui`: threads that read
//! a file and run sessions side by side, shared by both front ends), the CLI (`src/cli`, in
//! the binary) and the desktop app (`app`, feature `gui`), which runs the core on worker
//! threads and draws its results.
//!
//! The module headers link to their private parts, which are documented for the next
//! developer: build the docs with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub use warpscope_core::{
    analyze, cache, coalesce, comm, config, explain, gen, hwcheck, l2, lesson, linemap, report,
    reuse, rng, schedule, sim, timing, trace, varint,
};

#[cfg(feature = "gui")]
pub use warpscope_app as app;
#[cfg(any(feature = "cli", feature = "gui"))]
pub use warpscope_shell as shell;
