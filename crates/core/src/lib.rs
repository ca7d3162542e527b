//! Warpscope's simulation core: how GPU kernels use the L1 cache.
//!
//! The pipeline, one module per stage:
//! 1. [`trace`]: kernels of per-thread accesses in compact columns, read from files;
//! 2. [`gen`]: built-in generators of classic kernels (one list, `gen::BUILTINS`) and the
//!    kernel language, so no GPU is needed;
//! 3. [`schedule`]: CTAs to SMs, threads into warps, warp issue order;
//! 4. [`coalesce`]: one warp instruction's accesses into cache requests;
//! 5. [`cache`]: the set-associative cache, replacement and write policies, miss classes;
//!    [`l2`]: the shared L2 behind every SM's L1, in slices;
//! 6. [`reuse`]: reuse distances (exact or sampled), histograms and miss-rate curves;
//! 7. [`sim`]: the whole pipeline, `run(config, trace, observer) -> Report`;
//! 8. [`timing`]: the GPU timing model (latencies, MSHRs, warp queue, five miss classes);
//! 9. [`report`]: the report and its tables (CSV or Parquet with feature `tables`), sweep tables.
//!
//! Beside the pipeline: [`config`] (the configuration, presets, every `key=value` setting, a
//! sweep's grid), [`explain`] (why one request hit or missed; step-through states), [`comm`]
//! (inter-CTA communication across kernel launches, Rieber 2017), [`analyze`] (the MWP/CWP
//! performance model of Hong and Kim 2009 as Dasgupta 2011 extends it), [`hwcheck`] (the
//! simulation against counters measured on a GPU), [`lesson`] (ready comparisons for
//! teaching), and the small parts they share ([`linemap`], [`rng`], [`varint`]).
//!
//! This crate is pure and deterministic: no threads, clock or printing; randomness comes
//! from the seed in the configuration. Reading traces and writing tables are its only I/O.
//! The shells (the `warpscope` crate: its `shell` threads, the CLI and the desktop app) sit
//! above it; being a crate of its own, it cannot name them.
//!
//! The module headers link to their private parts, which are documented for the next
//! developer: build the docs with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod analyze;
pub mod cache;
pub mod coalesce;
pub mod comm;
pub mod config;
pub mod explain;
pub mod gen;
pub mod hwcheck;
pub mod l2;
pub mod lesson;
pub mod linemap;
pub mod linetable;
pub mod report;
pub mod reuse;
pub mod rng;
pub mod schedule;
pub mod sim;
pub mod timing;
pub mod trace;
pub mod varint;
