//! The equations: Hong and Kim's (2009) MWP/CWP model as Dasgupta (2011, §3.2) extends it
//! for GT200 (memory transactions of 32, 64 and 128 bytes, merging of duplicate loads,
//! independent loads, vector operations). Numbers in comments are Dasgupta 2011's equations;
//! those lost from our copy of the thesis (17, 25, 26 and the execution-time cases) follow
//! Hong and Kim 2009 (§4: `BW_per_warp`, `Departure_delay`, `MWP_Without_BW_full` and the
//! three cases of `Exec_cycles_app`; §4.6: the synchronization cost). Everything is per warp,
//! on one SM, in SM cycles.

use serde::{Deserialize, Serialize};

/// The GPU side: clock, memory system and the tuned latencies (`presets.rs` has sourced sets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuModel {
    /// Where the figures come from, for the report.
    pub name: String,
    /// SM clock in MHz (Dasgupta 2011 §3.2.6.1 tunes it).
    pub clock_mhz: f64,
    pub sms: u32,
    /// Peak DRAM bandwidth in GB/s (10^9 bytes per second).
    pub bandwidth_gb_s: f64,
    /// Round-trip latency of a memory request's first transaction, in cycles.
    pub base_latency: f64,
    /// Cycles between two transactions of one request, for 32, 64 and 128 B transactions of
    /// scalar loads and stores.
    pub departure_delay: [f64; 3],
    /// The same for the transactions of vector loads and stores (`ld.global.v2/v4`).
    pub departure_delay_vector: f64,
    /// Cycles a warp takes to issue one instruction (4 on GT200: 32 threads on 8 cores).
    pub issue_cycles: f64,
    /// Cycles of a high-latency instruction (square root, division, transcendental).
    pub high_latency_cycles: f64,
    /// Residency limits per SM.
    pub max_blocks_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub warp_size: u32,
}

impl Default for GpuModel {
    fn default() -> Self {
        super::presets::gt200()
    }
}

/// The kernel side: Dasgupta 2011 table 1's inputs, per warp unless said otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelInputs {
    pub threads_per_block: u32,
    pub blocks: u64,
    /// Blocks resident on an SM at once (the occupancy).
    pub active_blocks_per_sm: u32,
    /// Dynamic instructions per warp, memory and high-latency ones included.
    pub instructions: f64,
    /// Of those, high-latency compute instructions (taking `high_latency_cycles`).
    pub high_latency: f64,
    /// Global load and store requests (warp instructions) per warp.
    pub load_requests: f64,
    pub store_requests: f64,
    /// Memory transactions of 32, 64 and 128 bytes per warp, loads and stores.
    pub transactions: [f64; 3],
    /// Barrier instructions per warp.
    pub sync: f64,
    /// Loads a thread can have in flight before it needs one's result (at least 1).
    pub independent_loads: f64,
    /// Requests per distinct transaction in flight: how many requests share one fetch
    /// (1 = no merging).
    pub duplicate_loads: f64,
    /// The memory operations are vector loads and stores (they take the vector departure
    /// delay and do not merge, Dasgupta 2011 §3.2.5).
    pub vector: bool,
}

/// Which of the three limits of eq. 28 sets the MWP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MwpLimit {
    /// Eq. 16-18: the warps that together use the peak bandwidth.
    Bandwidth,
    /// Eq. 19-26: the warps whose requests can depart during one memory latency.
    Latency,
    /// Eq. 27: the active warps, scaled by independent and duplicate loads.
    ActiveWarps,
}

impl MwpLimit {
    pub fn name(self) -> &'static str {
        match self {
            MwpLimit::Bandwidth => "peak bandwidth",
            MwpLimit::Latency => "memory latency and departure delay",
            MwpLimit::ActiveWarps => "active warps",
        }
    }
}

/// Hong and Kim's three cases for the execution cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecCase {
    /// MWP = CWP = N: not enough warps to hide anything; memory and computation add up.
    NotEnoughWarps,
    /// CWP >= MWP (or more compute than memory cycles): memory requests queue behind each
    /// other, computation hides under them.
    MemoryBound,
    /// MWP > CWP: memory hides under computation.
    ComputeBound,
}

impl ExecCase {
    /// The case in words, for reports.
    pub fn name(self) -> &'static str {
        match self {
            ExecCase::NotEnoughWarps => "not enough warps: memory and computation add up",
            ExecCase::MemoryBound => "memory-bound: computation hides under memory",
            ExecCase::ComputeBound => "compute-bound: memory hides under computation",
        }
    }
}

/// The model's answer: every intermediate, then the prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// N: active warps per SM.
    pub active_warps: f64,
    pub active_sms: u32,
    /// Rounds of blocks an SM runs (#Rep).
    pub repetitions: f64,
    /// Memory requests (warp instructions) per warp: loads and stores.
    pub requests: f64,
    /// Transactions per warp of 32, 64 and 128 B after merging.
    pub transactions: [f64; 3],
    /// Eq. 16: bytes per request.
    pub data_per_request: f64,
    /// Eq. 19: transactions per request.
    pub transactions_per_request: f64,
    /// Eq. 20-23: departure delay per transaction, weighted by size.
    pub departure_delay_per_transaction: f64,
    /// Eq. 25: departure delay of a whole request.
    pub departure_delay_per_request: f64,
    /// Eq. 24: cycles from a request's issue to its last transaction's return.
    pub memory_latency: f64,
    /// Eq. 17: bandwidth one warp uses, GB/s.
    pub bandwidth_per_warp_gb_s: f64,
    /// Eq. 18.
    pub mwp_peak_bandwidth: f64,
    /// Eq. 26.
    pub mwp_without_bandwidth: f64,
    /// Eq. 27.
    pub active_warps_for_mwp: f64,
    /// Eq. 28 and the limit that set it.
    pub mwp: f64,
    pub mwp_limit: MwpLimit,
    /// §3.2.3: compute and memory cycles per warp.
    pub compute_cycles: f64,
    pub memory_cycles: f64,
    /// Eq. 29-30.
    pub cwp_full: f64,
    pub cwp: f64,
    pub case: ExecCase,
    /// Cycles of the kernel on one SM, without and with the synchronization cost.
    pub exec_cycles: f64,
    pub sync_cycles: f64,
    pub cycles: f64,
    pub milliseconds: f64,
    pub memory_bound: bool,
}

/// A problem with the inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error("{what} must be {rule}, found {value}")]
    Out {
        what: &'static str,
        rule: &'static str,
        value: f64,
    },
}

fn need(what: &'static str, value: f64, rule: &'static str, ok: bool) -> Result<(), InputError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(InputError::Out { what, rule, value })
    }
}

impl KernelInputs {
    pub fn validate(&self, g: &GpuModel) -> Result<(), InputError> {
        need(
            "threads per block",
            self.threads_per_block as f64,
            "at least 1",
            self.threads_per_block > 0,
        )?;
        need("blocks", self.blocks as f64, "at least 1", self.blocks > 0)?;
        let ab = self.active_blocks_per_sm as f64;
        need(
            "active blocks per SM",
            ab,
            "at least 1",
            self.active_blocks_per_sm > 0,
        )?;
        for (what, v) in [
            ("instructions", self.instructions),
            ("high-latency instructions", self.high_latency),
            ("load requests", self.load_requests),
            ("store requests", self.store_requests),
            ("32-byte transactions", self.transactions[0]),
            ("64-byte transactions", self.transactions[1]),
            ("128-byte transactions", self.transactions[2]),
            ("synchronizations", self.sync),
        ] {
            need(what, v, "0 or more", v >= 0.0)?;
        }
        need(
            "high-latency instructions",
            self.high_latency,
            "at most the instructions",
            self.high_latency <= self.instructions,
        )?;
        need(
            "independent loads",
            self.independent_loads,
            "at least 1",
            self.independent_loads >= 1.0,
        )?;
        need(
            "duplicate loads",
            self.duplicate_loads,
            "at least 1",
            self.duplicate_loads >= 1.0,
        )?;
        let requests = self.load_requests + self.store_requests;
        let trans: f64 = self.transactions.iter().sum();
        need(
            "transactions",
            trans,
            "at least one per request",
            trans >= requests,
        )?;
        need(
            "instructions",
            self.instructions,
            "at least the memory requests",
            self.instructions >= requests,
        )?;
        need("SM clock (MHz)", g.clock_mhz, "positive", g.clock_mhz > 0.0)?;
        need(
            "bandwidth (GB/s)",
            g.bandwidth_gb_s,
            "positive",
            g.bandwidth_gb_s > 0.0,
        )?;
        need("SMs", g.sms as f64, "at least 1", g.sms > 0)?;
        need(
            "issue cycles",
            g.issue_cycles,
            "positive",
            g.issue_cycles > 0.0,
        )?;
        need(
            "base memory latency",
            g.base_latency,
            "positive",
            g.base_latency > 0.0,
        )?;
        for d in g.departure_delay.iter().chain([&g.departure_delay_vector]) {
            need("departure delay", *d, "positive", *d > 0.0)?;
        }
        need(
            "high-latency cycles",
            g.high_latency_cycles,
            "0 or more",
            g.high_latency_cycles >= 0.0,
        )?;
        Ok(())
    }

    /// Warps per block.
    pub fn warps_per_block(&self, g: &GpuModel) -> u32 {
        self.threads_per_block.div_ceil(g.warp_size.max(1))
    }
}

/// Runs the model.
pub fn analyze(k: &KernelInputs, g: &GpuModel) -> Result<Analysis, InputError> {
    k.validate(g)?;
    let n = (k.active_blocks_per_sm * k.warps_per_block(g)) as f64;
    let active_sms = (g.sms as u64).min(k.blocks) as u32;
    // Hong and Kim 2009, #Rep: the rounds of resident blocks each SM runs.
    let repetitions = k.blocks as f64 / (k.active_blocks_per_sm as f64 * active_sms as f64);
    let requests = k.load_requests + k.store_requests;
    // §3.2.4: duplicate loads ride on another request's transactions; vector operations do
    // not merge (§3.2.5).
    let merge = if k.vector { 1.0 } else { k.duplicate_loads };
    let Memory {
        transactions,
        data_per_request,
        transactions_per_request,
        departure_delay_per_transaction,
        memory_latency,
        departure_delay_per_request,
    } = memory(k, g, requests, merge);
    let (bandwidth_per_warp_gb_s, mwp_peak_bandwidth, mwp_without_bandwidth) = if requests > 0.0 {
        // (17): bytes per request each memory latency, at the SM clock.
        let bw = g.clock_mhz * 1e6 * data_per_request / memory_latency / 1e9;
        let peak = g.bandwidth_gb_s / (bw * active_sms as f64); // (18)
        let latency = memory_latency / departure_delay_per_request; // (26)
        (bw, peak, latency)
    } else {
        (0.0, f64::INFINITY, f64::INFINITY)
    };
    let active_warps_for_mwp = n * k.independent_loads / merge; // (27)
    let (mwp, mwp_limit) = [
        (mwp_peak_bandwidth, MwpLimit::Bandwidth),
        (mwp_without_bandwidth, MwpLimit::Latency),
        (active_warps_for_mwp, MwpLimit::ActiveWarps),
    ]
    .into_iter()
    .fold((f64::INFINITY, MwpLimit::ActiveWarps), |best, x| {
        if x.0 < best.0 {
            x
        } else {
            best
        }
    }); // (28)
        // §3.2.3: every instruction takes the issue cycles, high-latency ones their own.
    let compute_cycles =
        g.issue_cycles * (k.instructions - k.high_latency) + g.high_latency_cycles * k.high_latency;
    let memory_cycles = memory_latency * requests;
    let (cwp_full, cwp) = if requests > 0.0 && compute_cycles > 0.0 {
        let full = (compute_cycles + memory_cycles) / compute_cycles; // (29)
        (full, full.min(n)) // (30)
    } else if requests > 0.0 {
        (f64::INFINITY, n)
    } else {
        // No memory: nothing to wait for (Dasgupta 2011 §3.2.6.1: "CWP ... takes a value of
        // zero"), so the compute-bound case applies.
        (0.0, 0.0)
    };
    // Unlike Hong and Kim's, this MWP may exceed N: independent loads let one warp have
    // several requests in flight (Dasgupta 2011 §3.2.1.3, figure 7).
    let mwp_n = mwp;
    let (case, per_round) = case_of(
        n,
        mwp_n,
        cwp,
        requests,
        compute_cycles,
        memory_cycles,
        memory_latency,
    );
    let exec_cycles = per_round * repetitions;
    // Hong and Kim 2009 §4.6: each barrier lets the warps' requests depart one after another.
    let sync_cycles = departure_delay_per_request
        * (mwp_n - 1.0).max(0.0)
        * k.sync
        * k.active_blocks_per_sm as f64
        * repetitions;
    let cycles = exec_cycles + sync_cycles;
    Ok(Analysis {
        active_warps: n,
        active_sms,
        repetitions,
        requests,
        transactions,
        data_per_request,
        transactions_per_request,
        departure_delay_per_transaction,
        departure_delay_per_request,
        memory_latency,
        bandwidth_per_warp_gb_s,
        mwp_peak_bandwidth,
        mwp_without_bandwidth,
        active_warps_for_mwp,
        mwp: mwp_n,
        mwp_limit,
        compute_cycles,
        memory_cycles,
        cwp_full,
        cwp,
        case,
        exec_cycles,
        sync_cycles,
        cycles,
        milliseconds: cycles / (g.clock_mhz * 1e3),
        memory_bound: cwp > mwp_n,
    })
}

/// The memory side of a request, equations (16) and (19)-(25).
struct Memory {
    /// 32-, 64- and 128-byte transactions per warp, duplicates merged.
    transactions: [f64; 3],
    data_per_request: f64,
    transactions_per_request: f64,
    departure_delay_per_transaction: f64,
    memory_latency: f64,
    departure_delay_per_request: f64,
}

fn memory(k: &KernelInputs, g: &GpuModel, requests: f64, merge: f64) -> Memory {
    let transactions = k.transactions.map(|t| t / merge);
    let total: f64 = transactions.iter().sum();
    let bytes = transactions[0] * 32.0 + transactions[1] * 64.0 + transactions[2] * 128.0;
    let per_request = |x: f64| if requests > 0.0 { x / requests } else { 0.0 };
    let data_per_request = per_request(bytes); // (16)
    let transactions_per_request = per_request(total); // (19)
    let departure_delay_per_transaction = if k.vector {
        g.departure_delay_vector
    } else if total > 0.0 {
        // (20-23)
        (0..3)
            .map(|i| g.departure_delay[i] * transactions[i] / total)
            .sum()
    } else {
        0.0
    };
    // (24)
    let memory_latency = if requests > 0.0 {
        let extra = (transactions_per_request - 1.0).max(0.0);
        g.base_latency + extra * departure_delay_per_transaction
    } else {
        0.0
    };
    let departure_delay_per_request = transactions_per_request * departure_delay_per_transaction; // (25)
    Memory {
        transactions,
        data_per_request,
        transactions_per_request,
        departure_delay_per_transaction,
        memory_latency,
        departure_delay_per_request,
    }
}

/// The execution case and the cycles of one round of resident blocks (Hong and Kim 2009
/// §3.3, with `n` active warps, MWP `mwp` and CWP `cwp`).
fn case_of(
    n: f64,
    mwp: f64,
    cwp: f64,
    requests: f64,
    compute_cycles: f64,
    memory_cycles: f64,
    memory_latency: f64,
) -> (ExecCase, f64) {
    if mwp == n && cwp == n {
        let c = memory_cycles + compute_cycles + compute_cycles / requests * (mwp - 1.0);
        (ExecCase::NotEnoughWarps, c)
    } else if requests > 0.0 && (cwp >= mwp || compute_cycles > memory_cycles) {
        let c = memory_cycles * n / mwp + compute_cycles / requests * (mwp - 1.0);
        (ExecCase::MemoryBound, c)
    } else {
        (ExecCase::ComputeBound, memory_latency + compute_cycles * n)
    }
}
