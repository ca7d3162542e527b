//! What-ifs (the same kernel changed one way at a time) and the plain-words explanation of
//! what limits a kernel.

use super::{analyze, Analysis, ExecCase, GpuModel, InputError, KernelInputs, MwpLimit};
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
