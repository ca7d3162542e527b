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
pub mod step;
mod words;

use serde::Serialize;

use crate::config::{choice, SimConfig, WritePolicy};
use crate::sim::{self, RequestEvent, SimError};
use crate::trace::Kernel;
use follow::{Find, Follow, Key, Lookup, Names};
pub use l2::InL2;

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

/// Runs the pipeline once with `observer`, which stops it (through `progress`) once it has
/// what it needs; `keep_going` is the caller's cancel.
fn run_until<O: follow::Stops>(
    cfg: &SimConfig,
    kernels: &[Kernel],
    observer: &mut O,
    keep_going: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<(), ExplainError> {
    let mut relay = follow::Relay {
        inner: observer,
        keep_going,
        cancelled: false,
    };
    match sim::run_kernels(cfg, kernels, &mut relay) {
        Ok(_) => Ok(()),
        Err(SimError::Cancelled) if relay.cancelled => Err(ExplainError::Cancelled),
        Err(SimError::Cancelled) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Request `request` of `cfg` on `kernels` (the n-th request the run gives an observer, from
/// 0), explained. `keep_going(done, total)` is asked now and then; `false` cancels.
pub fn explain(
    cfg: &SimConfig,
    kernels: &[Kernel],
    request: u64,
    keep_going: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Explanation, ExplainError> {
    cfg.validate().map_err(SimError::from)?;
    let mut cfg = cfg.clone();
    cfg.reuse = crate::config::ReuseMode::Off;
    if let Some(t) = &mut cfg.timing {
        t.classify = false;
    }
    let mut find = Find::new(request, cfg.cache.line_bytes);
    run_until(&cfg, kernels, &mut find, keep_going)?;
    let Some(target) = find.found else {
        return Err(ExplainError::NoSuchRequest {
            request,
            requests: find.seen,
        });
    };
    let names = find.names;
    let l2 = cfg.l2.as_ref().filter(|_| cfg.l2_simulated()).map(|l2| {
        l2::L2Follow::new(
            target.line,
            cfg.cache.line_bytes as u64,
            l2.slice.line_bytes as u64,
        )
    });
    let mut follow = Follow::new(request, target, allocates_writes(&cfg), l2);
    run_until(&cfg, kernels, &mut follow, keep_going)?;
    let key = Key::of(&target, follow.nth);
    // The accesses: the timing model reports none, so look the request up without it.
    let accesses = match (&cfg.timing, find.accesses) {
        (None, a) => a,
        (Some(_), _) => {
            let mut plain = cfg.clone();
            plain.timing = None;
            let mut look = Lookup::new(key, cfg.cache.line_bytes);
            run_until(&plain, kernels, &mut look, keep_going)?;
            look.accesses
        }
    };
    let mut ask = Asker {
        kernels,
        key,
        keep_going,
        counterfactuals: Vec::new(),
    };
    let why = if target.hit {
        Why::Hit
    } else if cfg.cache.bypass {
        Why::Bypassed
    } else if cfg.timing.is_some() {
        timed_why(&mut ask, &cfg, &target)?
    } else {
        match target.class {
            Some(crate::cache::MissClass::Compulsory) | None => Why::Compulsory,
            Some(crate::cache::MissClass::Capacity) => Why::Capacity,
            Some(crate::cache::MissClass::Conflict) => Why::Conflict,
        }
    };
    // A line its previous use, a store, did not bring in (no write-allocate): more room
    // changes nothing, allocating on stores would.
    let not_brought_in = !target.hit
        && cfg.timing.is_none()
        && !allocates_writes(&cfg)
        && follow.previous_was_store();
    if why == Why::Bypassed {
        let mut caching = cfg.clone();
        caching.cache.bypass = false;
        ask.ask("the L1 caching global data (l1-bypass off)".into(), caching)?;
    } else if not_brought_in {
        let mut allocating = cfg.clone();
        allocating.cache.write_policy = WritePolicy::Wbwa;
        let label =
            choice::entry_of(&WritePolicy::Wbwa).map_or("write-back, allocate", |e| e.label);
        let change = format!("{label} (stores fill lines)");
        ask.ask(change, allocating)?;
    } else if matches!(why, Why::Capacity | Why::Conflict) {
        more_room(&mut ask, &cfg)?;
    }
    let counterfactuals = ask.counterfactuals;
    let mut e = follow.finish(&cfg, &names, accesses, why, counterfactuals);
    e.rule = words::rule(&e);
    e.story = words::story(&e);
    Ok(e)
}

/// Runs the request again under changed configurations, noting each answer.
struct Asker<'a> {
    kernels: &'a [Kernel],
    key: Key,
    keep_going: &'a mut dyn FnMut(u64, u64) -> bool,
    counterfactuals: Vec<Counterfactual>,
}

impl Asker<'_> {
    /// The request under `changed` (described by `change`), noted as a counterfactual; `None`
    /// (and nothing noted) for a configuration that is not valid.
    fn ask(
        &mut self,
        change: String,
        changed: SimConfig,
    ) -> Result<Option<RequestEvent>, ExplainError> {
        if changed.validate().is_err() {
            return Ok(None);
        }
        let mut look = Lookup::new(self.key, changed.cache.line_bytes);
        run_until(&changed, self.kernels, &mut look, self.keep_going)?;
        self.counterfactuals.push(Counterfactual {
            change,
            hit: look.found.map(|e| e.hit),
        });
        Ok(look.found)
    }
}

/// Why a miss of the timing model missed: Nugteren et al. 2014 §6.1, read per request, each
/// comparison run changing one thing (no latency, unlimited MSHRs, fully associative).
fn timed_why(ask: &mut Asker, cfg: &SimConfig, target: &RequestEvent) -> Result<Why, ExplainError> {
    let mut zero = cfg.clone();
    let mut unlimited = cfg.clone();
    let mut fa = cfg.clone();
    if let Some(z) = &mut zero.timing {
        z.hit_latency = 0;
        z.miss_latency = 0;
        z.l2_latency = 0;
        z.miss_latency_stddev = 0.0;
    }
    if let Some(u) = &mut unlimited.timing {
        u.mshrs = 0;
        u.mshrs_per_warp = 0;
    }
    fa.cache.ways = 0;
    let z = ask.ask("no latency".into(), zero)?;
    let u = ask.ask("unlimited MSHRs".into(), unlimited)?;
    let f = ask.ask("fully associative, same size".into(), fa)?;
    Ok(if z.is_none_or(|z| z.set_distance.is_none()) {
        Why::Compulsory
    } else if target.set_distance.is_none() {
        Why::Latency
    } else if u.is_some_and(|u| u.hit) {
        Why::Mshr
    } else if f.is_some_and(|f| f.hit) {
        Why::Conflict
    } else {
        Why::Capacity
    })
}

/// More ways (and so more capacity), 2, 4 and 8 times, for the misses that more room could
/// turn into hits; stops at the first that hits.
fn more_room(ask: &mut Asker, cfg: &SimConfig) -> Result<(), ExplainError> {
    for k in [2u32, 4, 8] {
        let mut more = cfg.clone();
        more.cache.size_bytes *= k as u64;
        if more.cache.ways != 0 {
            more.cache.ways *= k;
        }
        let change = format!(
            "{} ways ({})",
            more.cache.ways_effective(),
            crate::report::text::size_words(more.cache.size_bytes)
        );
        if ask.ask(change, more)?.is_some_and(|e| e.hit) {
            break;
        }
    }
    Ok(())
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
