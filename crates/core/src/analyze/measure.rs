//! The model's inputs measured from a trace: requests and GT200 transactions through our
//! scheduler and `gt200` coalescer, barriers, occupancy from the residency limits, duplicate
//! loads from the timing model's in-flight tracking, and, where the trace has them (Accel-Sim),
//! the instruction counts, the opcode mix and the independent loads. What a trace cannot say
//! comes from [`Given`], with documented defaults.

use super::{GpuModel, KernelInputs};
use crate::coalesce::Coalesced;
use crate::config::{
    CacheConfig, Coalescing, GpuConfig, ScheduleConfig, SimConfig, SmSelection, TimingConfig,
};
use crate::sim::{self, NoObserver, SimError};
use crate::trace::{AccessKind, Columns, Kernel};
use serde::Serialize;

/// What the user gives for inputs a trace may lack (`None`: measured, or the default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Given {
    /// Dynamic instructions per warp.
    pub instructions: Option<f64>,
    /// Compute instructions per memory instruction (used when `instructions` is not given
    /// and the trace has no instruction counts).
    pub compute_per_memory: Option<f64>,
    /// High-latency instructions per warp.
    pub high_latency: Option<f64>,
    /// Independent loads per thread.
    pub independent_loads: Option<f64>,
    /// Active blocks per SM (the residency limits of the GPU otherwise; registers and shared
    /// memory are not in the trace).
    pub active_blocks: Option<u32>,
}

/// Where each input came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Counted in the trace.
    Trace,
    /// Given by the user.
    Given,
    /// The documented default (no trace information, nothing given).
    Default,
}

/// The inputs with their sources and the duplicate-load measurement behind them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    pub kernel: String,
    pub inputs: KernelInputs,
    pub instructions_from: Source,
    pub high_latency_from: Source,
    pub independent_loads_from: Source,
    pub active_blocks_from: Source,
    pub duplicates: Duplicates,
}

/// Duplicate loads as the timing model saw them on one SM: each load transaction (a 32-byte
/// piece of a GT200 segment) either starts a fetch or finds the same piece already in flight
/// for another warp (a duplicate, Dasgupta 2011 §3.2.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Duplicates {
    pub pieces: u64,
    pub in_flight: u64,
    /// `pieces / (pieces - in_flight)`: requests per fetch (1 = none merge).
    pub ratio: f64,
}

/// Compute instructions per memory instruction when nothing says otherwise.
pub const DEFAULT_COMPUTE_PER_MEMORY: f64 = 4.0;

/// Per built-in kernel, compute instructions per memory instruction: in the sm_90 machine code
/// of the same kernel in `hw/kernels.cu` (`hw/h100/kernels.sass`), the function's instructions
/// other than its global loads and stores (padding `NOP`s left out) per global load or store,
/// a static count; the micro-benchmark of Dasgupta 2011 from its table 6.
pub fn default_compute_per_memory(kernel: &str) -> f64 {
    crate::gen::builtin(kernel)
        .and_then(|b| b.compute_per_memory)
        .unwrap_or(DEFAULT_COMPUTE_PER_MEMORY)
}

#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("kernel `{kernel}`: a block of {threads} threads does not fit on an SM of {name} ({max} threads)")]
    BlockTooLarge {
        kernel: String,
        threads: u32,
        name: String,
        max: u32,
    },
    #[error("kernel `{kernel}` has no global memory access: nothing to analyze")]
    NoMemory { kernel: String },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Input(#[from] super::InputError),
}

/// The simulation configuration the measurements use: the GPU's shape, GT200 coalescing into
/// 128-byte lines.
pub(super) fn shape(g: &GpuModel) -> SimConfig {
    SimConfig {
        coalescing: Coalescing::Gt200,
        cache: CacheConfig {
            line_bytes: 128,
            sector_bytes: 32,
            ..CacheConfig::default()
        },
        schedule: ScheduleConfig {
            warp_size: g.warp_size,
            ..ScheduleConfig::default()
        },
        gpu: GpuConfig {
            sms: g.sms,
            max_ctas_per_sm: g.max_blocks_per_sm,
            max_threads_per_sm: g.max_threads_per_sm,
            max_warps_per_sm: g.max_warps_per_sm,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        },
        reuse: crate::config::ReuseMode::Off,
        ..SimConfig::default()
    }
}

/// Measures every input of kernel `k` that the trace holds.
pub fn measure(k: &Kernel, g: &GpuModel, given: &Given) -> Result<Measured, MeasureError> {
    measure_with(k, g, given, &mut NoObserver)
}

/// [`measure`], telling `observer` how the timing-model run goes (it can stop it: then the
/// error is [`SimError::Cancelled`]). [`super::Measuring`] does the same a piece at a time.
pub fn measure_with(
    k: &Kernel,
    g: &GpuModel,
    given: &Given,
    observer: &mut dyn sim::Observer,
) -> Result<Measured, MeasureError> {
    let c = count_requests(k, &shape(g))?;
    let raw = Raw::of(k, g, given, c)?;
    let cfg = duplicates_config(g, &raw.inputs)?;
    let report = sim::run_kernels(&cfg, std::slice::from_ref(k), observer)?;
    Ok(raw.measured(k, duplicates(&report)))
}

/// The inputs measured before the duplicate loads, and where those a trace may lack came
/// from.
pub(super) struct Raw {
    pub inputs: KernelInputs,
    sourced: Sourced,
}

impl Raw {
    pub(super) fn of(
        k: &Kernel,
        g: &GpuModel,
        given: &Given,
        c: RequestCounts,
    ) -> Result<Self, MeasureError> {
        if c.loads + c.stores == 0 {
            return Err(MeasureError::NoMemory {
                kernel: k.name.clone(),
            });
        }
        let tpb = k.threads_per_cta();
        let resident = resident_blocks(k, g)?;
        let wpb = tpb.div_ceil(g.warp_size.max(1)).max(1);
        let warps = (k.num_ctas() as u64 * wpb as u64).max(1) as f64;
        let barriers = k
            .columns()
            .flags
            .iter()
            .filter(|&&f| crate::trace::model_flags(f).0 == AccessKind::Barrier)
            .count() as f64;
        let threads = (k.num_threads() as f64).max(1.0);
        let requests = (c.loads + c.stores) as f64 / warps;
        let s = sources(k, given, requests, warps, resident);
        let inputs = KernelInputs {
            threads_per_block: tpb,
            blocks: k.num_ctas() as u64,
            active_blocks_per_sm: s.active_blocks.0,
            instructions: s.instructions.0.max(requests),
            high_latency: s.high_latency.0.min(s.instructions.0),
            load_requests: c.loads as f64 / warps,
            store_requests: c.stores as f64 / warps,
            transactions: c.transactions.map(|t| t as f64 / warps),
            sync: barriers / threads,
            independent_loads: s.independent_loads.0,
            duplicate_loads: 1.0,
            vector: c.vector * 2 > c.loads + c.stores,
        };
        Ok(Raw { inputs, sourced: s })
    }

    pub(super) fn measured(self, k: &Kernel, duplicates: Duplicates) -> Measured {
        let s = self.sourced;
        Measured {
            kernel: k.name.clone(),
            inputs: KernelInputs {
                duplicate_loads: duplicates.ratio,
                ..self.inputs
            },
            instructions_from: s.instructions.1,
            high_latency_from: s.high_latency.1,
            independent_loads_from: s.independent_loads.1,
            active_blocks_from: s.active_blocks.1,
            duplicates,
        }
    }
}

/// Blocks resident on an SM at a time: the residency limits, and no more than an SM gets of
/// the grid. A block larger than an SM holds is an error.
fn resident_blocks(k: &Kernel, g: &GpuModel) -> Result<u32, MeasureError> {
    let tpb = k.threads_per_cta();
    if tpb > g.max_threads_per_sm {
        return Err(MeasureError::BlockTooLarge {
            kernel: k.name.clone(),
            threads: tpb,
            name: g.name.clone(),
            max: g.max_threads_per_sm,
        });
    }
    let wpb = tpb.div_ceil(g.warp_size.max(1)).max(1);
    let per_sm = k.num_ctas().div_ceil(g.sms.max(1)).max(1);
    Ok(g.max_blocks_per_sm
        .min(g.max_threads_per_sm / tpb.max(1))
        .min(g.max_warps_per_sm / wpb)
        .min(per_sm)
        .max(1))
}

/// A kernel's warp requests by kind, and its transactions by segment size (32, 64, 128 B).
#[derive(Default)]
pub(super) struct RequestCounts {
    loads: u64,
    stores: u64,
    /// Requests of 8-byte or wider accesses.
    vector: u64,
    transactions: [u64; 3],
}

impl RequestCounts {
    /// Counts one warp instruction: its rows of `cols`, and the requests the coalescer made.
    pub(super) fn add(&mut self, cols: &Columns, rows: &[u32], out: &[Coalesced]) {
        let first = rows
            .iter()
            .map(|&r| cols.access(r as usize))
            .find(|a| a.kind != AccessKind::Barrier && a.space.reaches_l1());
        let Some(a) = first else { return };
        if a.kind == AccessKind::Load {
            self.loads += 1;
        } else {
            self.stores += 1;
        }
        if a.size >= 8 {
            self.vector += 1;
        }
        // A segment's first 128-byte piece carries its transaction; segments are aligned to
        // their size, so one piece is the whole segment.
        for p in out.iter().filter(|p| p.transactions > 0) {
            let i = match p.request.bytes {
                0..=32 => 0,
                33..=64 => 1,
                _ => 2,
            };
            self.transactions[i] += 1;
        }
    }
}

/// Requests and transactions, through the scheduler and the GT200 coalescer.
pub(super) fn count_requests(k: &Kernel, cfg: &SimConfig) -> Result<RequestCounts, MeasureError> {
    let mut c = RequestCounts::default();
    sim::each_warp_request(k, cfg, |rows, out| c.add(k.columns(), rows, out))?;
    Ok(c)
}

/// The inputs a trace may lack, each with where it came from: per warp, instructions (the
/// trace's counts, else given, else the default ratio to `requests`), high-latency
/// instructions, independent loads, and the active blocks (`resident` unless given).
struct Sourced {
    instructions: (f64, Source),
    high_latency: (f64, Source),
    independent_loads: (f64, Source),
    active_blocks: (u32, Source),
}

fn sources(k: &Kernel, given: &Given, requests: f64, warps: f64, resident: u32) -> Sourced {
    let traced: u64 = k.info.warp_instructions.iter().map(|w| w.count).sum();
    let instructions = if let Some(i) = given.instructions {
        (i, Source::Given)
    } else if traced > 0 {
        (traced as f64 / warps, Source::Trace)
    } else if let Some(r) = given.compute_per_memory {
        (requests * (1.0 + r), Source::Given)
    } else {
        (
            requests * (1.0 + default_compute_per_memory(&k.name)),
            Source::Default,
        )
    };
    let mufu: u64 = k
        .info
        .opcodes
        .iter()
        .filter(|(op, _)| is_high_latency(op))
        .map(|(_, n)| n)
        .sum();
    let high_latency = if let Some(h) = given.high_latency {
        (h, Source::Given)
    } else if !k.info.opcodes.is_empty() {
        (mufu as f64 / warps, Source::Trace)
    } else {
        (0.0, Source::Default)
    };
    let independent_loads = match (given.independent_loads, k.info.independent_loads()) {
        (Some(x), _) => (x, Source::Given),
        (None, Some(x)) => (x, Source::Trace),
        (None, None) => (1.0, Source::Default),
    };
    let active_blocks = match given.active_blocks {
        Some(b) => (b, Source::Given),
        None => (resident, Source::Trace),
    };
    Sourced {
        instructions,
        high_latency,
        independent_loads,
        active_blocks,
    }
}

/// SFU instructions of an Accel-Sim trace (square root, reciprocal, transcendental: `MUFU.*`)
/// and double-precision division and square root helpers.
fn is_high_latency(opcode: &str) -> bool {
    opcode.starts_with("MUFU") || opcode.starts_with("DSQRT") || opcode.starts_with("DDIV")
}

/// The timing model on SM 0 with no L1 to speak of (one 32-byte line: GT200 caches no
/// global data) and unlimited MSHRs, each miss taking the request's memory latency (eq. 24):
/// the run whose count of load pieces that found their piece in flight for another warp
/// (`TimingReport::duplicate_loads`) gives the duplicate loads ([`duplicates`]).
pub(super) fn duplicates_config(
    g: &GpuModel,
    raw: &KernelInputs,
) -> Result<SimConfig, MeasureError> {
    let a = super::analyze(raw, g)?;
    let mut cfg = shape(g);
    cfg.cache = CacheConfig {
        size_bytes: 32,
        line_bytes: 32,
        ways: 1,
        sector_bytes: 32,
        ..CacheConfig::default()
    };
    cfg.timing = Some(TimingConfig {
        hit_latency: 0,
        miss_latency: a.memory_latency.round().max(1.0) as u32,
        miss_latency_stddev: 0.0,
        mshrs: 0,
        mshrs_per_warp: 0,
        clip: true,
        warp_delay: true,
        classify: false,
        ..TimingConfig::default()
    });
    Ok(cfg)
}

/// The duplicate loads of [`duplicates_config`]'s run.
pub(super) fn duplicates(report: &sim::Report) -> Duplicates {
    // In the timing model stores go past the L1: its requests are the load pieces.
    let mut d = Duplicates {
        pieces: report.totals.requests,
        in_flight: report.timing.as_ref().map_or(0, |t| t.duplicate_loads),
        ratio: 1.0,
    };
    let fetched = d.pieces.saturating_sub(d.in_flight);
    d.ratio = if fetched > 0 {
        d.pieces as f64 / fetched as f64
    } else {
        1.0
    };
    d
}
