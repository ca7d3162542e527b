//! Warpscope: how GPU kernels use the L1 cache.
//!
//! The pipeline, one module per stage:
//! 1. [`trace`]: kernels of per-thread accesses in compact columns, read from files;
//! 2. [`gen`]: built-in generators of classic kernels, so no GPU is needed;
//! 3. [`schedule`]: CTAs to SMs, threads into warps, warp issue order;
//! 4. [`coalesce`]: one warp instruction's accesses into cache requests;
//! 5. [`cache`]: the set-associative cache, replacement and write policies, miss classes;
//! 6. [`reuse`]: exact reuse distances, histograms and miss-rate curves;
//! 7. [`sim`]: the whole pipeline, `run(config, trace, observer) -> Report`;
//! 8. [`timing`]: the GPU timing model (latencies, MSHRs, warp queue, five miss classes);
//! 9. [`comm`]: inter-CTA communication across kernel launches (Rieber 2017);
//! 10. `export` (feature `tables`): per-request and summary tables as CSV or Parquet.
//!
//! The desktop app (`app`, feature `gui`) is a shell over these modules: it runs them on
//! worker threads and draws their results; nothing in the modules above depends on it.
//!
//! The library is pure and deterministic: no threads, clock or printing; randomness comes
//! from the seed in the configuration. Reading traces and writing tables are its only I/O.
//!
//! The module headers link to their private parts, which are documented for the next
//! developer: build the docs with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod analyze;
#[cfg(feature = "gui")]
pub mod app;
pub mod cache;
pub mod coalesce;
pub mod comm;
pub mod config;
pub mod explain;
pub mod gen;
pub mod hwcheck;
pub mod lesson;
pub mod linemap;
pub mod report;
pub mod reuse;
pub mod rng;
pub mod schedule;
#[cfg(any(feature = "cli", feature = "gui"))]
pub mod shell;
pub mod sim;
pub mod timing;
pub mod trace;
pub mod varint;
