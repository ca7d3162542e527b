//! "Why did this request miss?": one request's story, told from runs of the pipeline.
//!
//! The pipeline is deterministic, so [`explain`] keeps no record of a whole run: it runs the
//! pipeline again with observers (`follow.rs`). The first run finds request N (what it is, the
//! warp instruction and the accesses it came from); the second follows its line and its set up
//! to it (the previous use, the eviction and the set's lines at that moment, the distinct lines
//! in between, the fetch still in flight); counterfactual runs change one thing (more ways; in
//! the timing model also a fully associative cache, no latency, unlimited MSHRs) and look the
//! same request up by what it is (kernel, CTA, warp, instruction, line, occurrence). Each run
//! stops as soon as the request has passed. `words.rs` tells the story in plain words.
//!
//! The classes follow the rest of the simulator: Dinero IV's three Cs per request without the
//! timing model (`cache::CacheModel`), and with it Nugteren et al.'s (2014) §6.1 rules read per
//! request (`docs/explain.md`).

mod follow;
mod l2;
mod stages;
pub mod step;
mod words;

use serde::Serialize;

use crate::config::{choice, SimConfig, WritePolicy};
use crate::sim::{RequestEvent, SimError};
use crate::trace::Kernel;
use follow::Names;
pub use l2::InL2;
pub use stages::Explaining;

/// Why a request hit or missed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Why {
    Hit,
    /// First touch of the line (or of a requested sector).
    Compulsory,
    /// A fully associative cache of the same size would have missed too.
    Capacity,
    /// A fully associative cache of the same size would have hit.
    Conflict,
    /// Timing model: the line was requested before but had not arrived.
    Latency,
    /// Timing model: with unlimited MSHRs it would have hit.
    Mshr,
    /// The L1 caches no global data (`l1-bypass`): every request goes on to the level below.
    Bypassed,
}

impl Why {
    pub fn name(self) -> &'static str {
        match self {
            Why::Hit => "hit",
            Why::Compulsory => "compulsory miss",
            Why::Capacity => "capacity miss",
            Why::Conflict => "conflict miss",
            Why::Latency => "latency miss",
            Why::Mshr => "MSHR miss",
            Why::Bypassed => "bypassed",
        }
    }
}

/// One request, as an explanation names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Use {
    /// Its number in the run's request order (what `explain --request` and the app count).
    pub request: u64,
    pub sm: u32,
    /// Its place in its SM's issue order (the `order` column of `sim --export`).
    pub order: u64,
    pub kernel: u32,
    pub cta: u32,
    /// Warp index within the CTA.
    pub warp: u32,
    pub inst: u32,
    pub inst_name: String,
    pub line: u64,
    pub set: u32,
    pub write: bool,
    pub hit: bool,
    /// Issue cycle in the timing model.
    pub time: Option<u64>,
}

/// One thread's access of the warp instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    /// Kernel-linear thread id.
    pub thread: u32,
    pub address: u64,
    pub bytes: u32,
    /// load, store, atomic.add, ...
    pub kind: String,
    /// The access falls in this request's line (it coalesced into it).
    pub in_line: bool,
}

/// What the request asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Asked {
    pub kernel_name: String,
    /// Every access of its warp instruction (empty when it could not be found again).
    pub accesses: Vec<Access>,
    /// The line's first byte.
    pub line_address: u64,
    /// The sectors of the line it needs.
    pub sectors: Vec<u32>,
    /// How the set index came from the address bits.
    pub set_index: String,
}

/// The cache the request went to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub sets: u32,
    pub ways: u32,
    pub lines: u64,
    pub line_bytes: u32,
    pub sector_bytes: u32,
    pub replacement: String,
    pub write_policy: String,
    pub set_index: String,
    pub timing: bool,
}

/// Distinct lines used between the previous use and this request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Reuse {
    /// Other lines of the same set.
    pub set_lines: u64,
    /// Other lines of the whole cache (its SM's L1): the reuse distance.
    pub lines: u64,
    /// Timing model: the line's distance in its set's LRU stack at issue (`None` = not in it).
    pub stack_distance: Option<u64>,
}

/// A line of the set when the request's line was evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Resident {
    pub line: u64,
    /// The request that brought it in.
    pub filled_by: u64,
    pub last_use: u64,
    /// Uses since it came in.
    pub uses: u64,
}

/// Who pushed the line out, and the policy's reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Eviction {
    pub by: Use,
    /// The replacement policy's rule, with the set's lines as evidence.
    pub reason: String,
    /// The set's lines just before the eviction, least recently used first (empty in the
    /// timing model, where the set's LRU stack pushed the line out).
    pub residents: Vec<Resident>,
}

/// Timing model: the fetch of the line that was still on its way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flight {
    pub fetched_by: Use,
    /// The cycle the line arrives.
    pub arrives_at: u64,
}

/// The same request under a changed configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterfactual {
    pub change: String,
    /// Whether it would have hit (`None`: that configuration does not issue the request).
    pub hit: Option<bool>,
}

/// Everything known about why one request hit or missed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub request: Use,
    pub asked: Asked,
    pub cache: Shape,
    /// The previous use of the line on the same SM (`None`: first touch).
    pub previous: Option<Use>,
    pub reuse: Option<Reuse>,
    pub eviction: Option<Eviction>,
    /// The line was in the cache but some sector it needs was not.
    pub sector_miss: bool,
    pub flight: Option<Flight>,
    /// Timing model: attempts refused because no MSHR was free.
    pub refused: u32,
    pub why: Why,
    /// The rule that gave the class, with its evidence.
    pub rule: String,
    pub counterfactuals: Vec<Counterfactual>,
    /// What its line met in the L2, when the L2 is simulated and the request went there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<InL2>,
    /// The whole story in plain words, one paragraph per entry.
    pub story: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ExplainError {
    #[error("there is no request {request}: this run has {requests} (numbered from 0)")]
    NoSuchRequest { request: u64, requests: u64 },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("cancelled")]
    Cancelled,
}

/// Request `request` of `cfg` on `kernels` (the n-th request the run gives an observer, from
/// 0), explained. `keep_going(done, total)` is asked now and then; `false` cancels. The runs
/// behind it are run whole; [`Explaining`] runs them a piece at a time.
pub fn explain(
    cfg: &SimConfig,
    kernels: &[Kernel],
    request: u64,
    keep_going: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Explanation, ExplainError> {
    let mut explaining = Explaining::new(cfg, request, false)?;
    loop {
        if let Some(e) = explaining.step(kernels, keep_going)? {
            return Ok(e);
        }
    }
}

/// Whether a write that misses brings its line in (`wbwa` fetching it, `wtwa` without a
/// fetch).
fn allocates_writes(cfg: &SimConfig) -> bool {
    cfg.cache.write_policy != WritePolicy::Wtna && !cfg.cache.bypass
}

fn shape(cfg: &SimConfig) -> Shape {
    let c = &cfg.cache;
    Shape {
        sets: c.sets(),
        ways: c.ways_effective(),
        lines: c.lines(),
        line_bytes: c.line_bytes,
        sector_bytes: c.sector_bytes,
        replacement: choice::name_of(&c.replacement),
        write_policy: choice::name_of(&c.write_policy),
        set_index: choice::name_of(&c.set_index),
        timing: cfg.timing.is_some(),
    }
}

impl Names {
    pub(crate) fn use_of(&self, request: u64, e: &RequestEvent) -> Use {
        Use {
            request,
            sm: e.sm,
            order: e.order,
            kernel: e.kernel,
            cta: e.cta,
            warp: e.warp,
            inst: e.inst,
            inst_name: self.inst(e.kernel, e.inst),
            line: e.line,
            set: e.set,
            write: e.write,
            hit: e.hit,
            time: e.time,
        }
    }
}
