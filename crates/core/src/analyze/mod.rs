//! The CUDA performance analyzer of Dasgupta 2011 (ch. 3): is a kernel memory-bound or
//! compute-bound, how long does it take, and what would change that? Hong and Kim's (2009)
//! analytical model with Dasgupta's extensions for GT200, fed from a trace.
//!
//! - `model.rs`: the equations (MWP and its three limits, CWP, compute and memory cycles, the
//!   execution-time cases, the synchronization cost) over [`KernelInputs`] and a [`GpuModel`];
//! - `presets.rs`: GPUs with sourced parameters (`gt200`: Dasgupta's tuned Tesla C1060);
//! - `measure.rs`: the inputs measured from a kernel (requests and 32/64/128-byte transactions
//!   through the `gt200` coalescer, duplicate loads from the timing model, instruction counts
//!   and independent loads where the trace has them); `measuring.rs` the same a piece at a time;
//! - `whatif.rs`: the same kernel changed one way at a time, and the plain-words explanation.
//!
//! Pure and deterministic, like the rest of the core.

mod measure;
mod measuring;
mod model;
mod presets;
mod whatif;

pub use measure::{
    default_compute_per_memory, measure, measure_with, Duplicates, Given, MeasureError, Measured,
    Source, DEFAULT_COMPUTE_PER_MEMORY,
};
pub use measuring::Measuring;
pub use model::{analyze, Analysis, ExecCase, GpuModel, InputError, KernelInputs, MwpLimit};
pub use presets::{gpu, gt200, GPUS};
pub use whatif::{explain, input_rows, model_rows, what_ifs, InputRow, WhatIf, WHAT_IFS};
