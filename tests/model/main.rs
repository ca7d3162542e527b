//! Tests of the simulation core through the `warpscope` library: the papers' worked examples,
//! agreement with simple reference models on random inputs, the importers, the analyses. One
//! test binary (each file a module) so a fresh build links it once.

mod analyzer;
mod by_cta;
mod explain;
mod explain_pieces;
mod fuzz_regressions;
mod hardware;
mod importers;
mod l2;
mod paper_examples;
mod partitions;
mod properties;
mod random_kernels;
mod released_rules;
mod sampled_reuse;
mod timing_cta_rows;
mod timing_l2;
mod timing_tables;
