//! What-ifs (the same kernel changed one way at a time), the plain-words explanation of what
//! limits a kernel, and the rows of inputs and intermediates both shells show.

use super::{analyze, Analysis, ExecCase, GpuModel, InputError, KernelInputs, MwpLimit, Source};
use serde::Serialize;

/// The changes the analyzer tries, as (key, label).
pub const WHAT_IFS: [(&str, &str); 4] = [
    ("coalesced", "loads and stores perfectly coalesced"),
    ("no-merging", "no merging of duplicate loads"),
    ("double-occupancy", "twice the active blocks per SM"),
    ("half-instructions", "half the compute instructions"),
];

/// One what-if and its prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    pub key: &'static str,
    pub label: &'static str,
    pub inputs: KernelInputs,
    pub analysis: Analysis,
    /// Predicted time relative to the kernel as it is (below 1 = faster).
    pub speedup: f64,
}

/// `k` changed as `key` says.
pub fn changed(k: &KernelInputs, key: &str) -> KernelInputs {
    let mut c = k.clone();
    match key {
        "coalesced" => {
            // Every request as a warp of 4-byte words on consecutive addresses: one 64-byte
            // segment per half-warp (vector requests: their bytes in 128-byte segments).
            let requests = k.load_requests + k.store_requests;
            c.transactions = if k.vector {
                let bytes: f64 =
                    k.transactions[0] * 32.0 + k.transactions[1] * 64.0 + k.transactions[2] * 128.0;
                [0.0, 0.0, (bytes / 128.0).max(requests)]
            } else {
                [0.0, 2.0 * requests, 0.0]
            };
        }
        "no-merging" => c.duplicate_loads = 1.0,
        "double-occupancy" => c.active_blocks_per_sm *= 2,
        "half-instructions" => {
            let memory = k.load_requests + k.store_requests;
            c.instructions = memory + (k.instructions - memory) / 2.0;
            c.high_latency = k.high_latency / 2.0;
        }
        _ => {}
    }
    c
}

/// Every what-if of [`WHAT_IFS`] against the kernel as it is (`base`).
pub fn what_ifs(
    k: &KernelInputs,
    g: &GpuModel,
    base: &Analysis,
) -> Result<Vec<WhatIf>, InputError> {
    WHAT_IFS
        .iter()
        .map(|&(key, label)| {
            let inputs = changed(k, key);
            let analysis = analyze(&inputs, g)?;
            Ok(WhatIf {
                key,
                label,
                speedup: analysis.cycles / base.cycles,
                inputs,
                analysis,
            })
        })
        .collect()
}

/// What limits the kernel, in a few sentences.
pub fn explain(k: &KernelInputs, a: &Analysis) -> String {
    let mut s = String::new();
    if a.memory_bound {
        s.push_str(&format!(
            "Memory-bound: while one warp waits for memory, {:.1} warps could compute (CWP), but only {:.1} can have requests in flight (MWP). ",
            a.cwp, a.mwp
        ));
        s.push_str(match a.mwp_limit {
            MwpLimit::Bandwidth => "The memory bandwidth is what runs out: each request moves more bytes than the warps can share; fewer or smaller transactions (better coalescing, data reuse in shared memory) would help.",
            MwpLimit::Latency => "The requests' transactions leave one after another: with this many transactions per request the memory pipeline is busy for most of the latency; fewer transactions per request (better coalescing) would help.",
            MwpLimit::ActiveWarps => "There are too few active warps to overlap more requests: higher occupancy or more independent loads per thread would help.",
        });
    } else {
        s.push_str(&format!(
            "Compute-bound: {:.1} warps can have requests in flight (MWP), more than the {:.1} that have computation to hide them under (CWP). Fewer instructions per warp would help; memory changes would help little.",
            a.mwp, a.cwp
        ));
    }
    if a.case == ExecCase::NotEnoughWarps {
        s.push_str(" With MWP = CWP = the active warps, there are not enough warps to hide either: more occupancy would help.");
    }
    if k.duplicate_loads > 1.0 && !k.vector {
        s.push_str(&format!(
            " {:.2} requests share each fetch (merging of duplicate loads), which saves transactions.",
            k.duplicate_loads
        ));
    }
    s
}

/// What one input was and where it came from, for the shells' tables.
pub struct InputRow {
    pub name: &'static str,
    pub value: String,
    pub from: &'static str,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Trace => "trace",
            Source::Given => "given",
            Source::Default => "default",
        }
    }
}

/// The inputs of `k` (measured as `m` says), one row each, as the CLI and the app show them.
pub fn input_rows(m: &super::Measured, k: &KernelInputs) -> Vec<InputRow> {
    let row = |name, value, from| InputRow { name, value, from };
    let t = &k.transactions;
    vec![
        row(
            "threads per block / blocks",
            format!("{} / {}", k.threads_per_block, k.blocks),
            "trace",
        ),
        row(
            "active blocks per SM",
            k.active_blocks_per_sm.to_string(),
            m.active_blocks_from.name(),
        ),
        row(
            "instructions per warp",
            format!("{:.1}", k.instructions),
            m.instructions_from.name(),
        ),
        row(
            "high-latency instructions per warp",
            format!("{:.1}", k.high_latency),
            m.high_latency_from.name(),
        ),
        row(
            "load / store requests per warp",
            format!("{:.2} / {:.2}", k.load_requests, k.store_requests),
            "trace",
        ),
        row(
            "32 / 64 / 128 B transactions per warp",
            format!("{:.2} / {:.2} / {:.2}", t[0], t[1], t[2]),
            "trace, gt200 coalescer",
        ),
        row("barriers per warp", format!("{:.2}", k.sync), "trace"),
        row(
            "independent loads",
            format!("{:.2}", k.independent_loads),
            m.independent_loads_from.name(),
        ),
        row(
            "duplicate loads",
            format!("{:.3}", k.duplicate_loads),
            "trace, timing model",
        ),
        row(
            "load pieces / found in flight",
            format!("{} / {}", m.duplicates.pieces, m.duplicates.in_flight),
            "timing model, SM 0",
        ),
        row(
            "vector memory operations",
            k.vector.to_string(),
            "trace (accesses of 8 B or more)",
        ),
    ]
}

/// The model's intermediates, one (name, value) row each, with the number of the equation of
/// Dasgupta 2011 that gives each ("eq. 19").
pub fn model_rows(a: &Analysis) -> Vec<(&'static str, String)> {
    vec![
        ("N (active warps per SM)", format!("{:.0}", a.active_warps)),
        (
            "active SMs / repetitions",
            format!("{} / {:.2}", a.active_sms, a.repetitions),
        ),
        (
            "transactions per request (eq. 19)",
            format!("{:.3}", a.transactions_per_request),
        ),
        (
            "bytes per request (eq. 16)",
            format!("{:.1}", a.data_per_request),
        ),
        (
            "departure delay per transaction (eq. 23)",
            format!("{:.2}", a.departure_delay_per_transaction),
        ),
        (
            "memory latency (eq. 24)",
            format!("{:.1} cycles", a.memory_latency),
        ),
        (
            "MWP, peak bandwidth (eq. 18)",
            format!("{:.3}", a.mwp_peak_bandwidth),
        ),
        (
            "MWP, latency (eq. 26)",
            format!("{:.3}", a.mwp_without_bandwidth),
        ),
        (
            "MWP, active warps (eq. 27)",
            format!("{:.3}", a.active_warps_for_mwp),
        ),
        (
            "MWP (eq. 28)",
            format!("{:.3}, set by {}", a.mwp, a.mwp_limit.name()),
        ),
        (
            "compute / memory cycles per warp",
            format!("{:.0} / {:.0}", a.compute_cycles, a.memory_cycles),
        ),
        (
            "CWP (eq. 29-30), uncapped",
            format!("{:.3}, {:.3}", a.cwp, a.cwp_full),
        ),
        ("case", a.case.name().to_string()),
        ("synchronization", format!("{:.0} cycles", a.sync_cycles)),
    ]
}
