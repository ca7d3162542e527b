//! The pipeline: trace -> scheduler -> coalescer -> cache model -> statistics.
//!
//! [`run`] simulates every kernel of a trace with one configuration. The L1 of each
//! simulated SM keeps its contents across kernel launches. Progress and per-request
//! events go to an [`Observer`], which can stop the run. [`Session`] (`session.rs`) is the
//! same pipeline fed piece by piece, for traces streamed from disk; [`run_generated`]
//! (`generated.rs`) feeds it a built-in kernel CTA by CTA as it is generated.

mod generated;
mod issued;
#[cfg(feature = "tables")]
mod requests;
mod running;
mod session;
mod steps;
mod timed;
pub use timed::{JobResult, StreamsWork, TimedJob, TimedPlan, TimedSteps};

pub use crate::report::{
    short_name, Comparison, CtaRow, InstRow, KernelRow, OccupancySample, Report, ReuseMethod,
    ReuseReport, SmRow, SourceLineRow, TimingReport, ValueCount,
};
pub use generated::{run_generated, GeneratedError, ToSession};
#[cfg(feature = "tables")]
pub use requests::RequestExporter;
pub use session::{ReuseStage, Session, WholeKernel};
pub use steps::RunSteps;

/// The columns of the per-request table, in order (`RequestExporter` writes it with the
/// `tables` feature; the web build's app without it).
pub const REQUEST_COLUMNS: [&str; 13] = [
    "order",
    "sm",
    "kernel",
    "cta",
    "warp",
    "inst",
    "inst_name",
    "line_address",
    "set",
    "write",
    "hit",
    "miss_class",
    "reuse_distance",
];

use crate::cache::{CacheModel, MissClass};
use crate::config::{Coalescing, SimConfig, SmSelection};
use crate::reuse::ReuseMeter;
use crate::rng::Rng;
use crate::schedule::ScheduleError;
use crate::trace::{Kernel, Trace};

/// One cache request as it happened, for views and exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestEvent {
    /// Position in the issue order of its SM.
    pub order: u64,
    pub sm: u32,
    pub kernel: u32,
    pub cta: u32,
    pub warp: u32,
    pub inst: u32,
    pub line: u64,
    pub set: u32,
    pub write: bool,
    pub hit: bool,
    pub class: Option<MissClass>,
    /// Whole-cache reuse distance (`None` = first use or reuse tracking off).
    pub reuse_distance: Option<u64>,
    /// Issue cycle within its kernel on its SM, in the timing model (`None` without it).
    pub time: Option<u64>,
    /// The kernel-linear id of the thread whose access this request serves: the k-th request
    /// to a line in a warp instruction belongs to the k-th access starting in that line, so a
    /// coalesced request names its lowest such thread (`None` in the timing model).
    pub thread: Option<u32>,
    /// Timing model only: a miss whose line was already requested and had not arrived yet
    /// (what makes a latency miss).
    pub in_flight: bool,
    /// Timing model only: the line's distance in its set's LRU stack at issue (`None` for a
    /// line not in the stack: its first use); at least the associativity is a miss.
    pub set_distance: Option<u64>,
    /// Sectors of the line the request needs (bit i = sector i; 0 in the timing model, which
    /// caches whole lines).
    pub sectors: u32,
    /// The line this request's fill evicted (the replacement policy's victim; `None` in the
    /// timing model, whose LRU stacks push lines out implicitly).
    pub evicted: Option<u64>,
    /// Timing model only: when the request takes effect in its set (for a miss, when its line
    /// arrives).
    pub effect_at: Option<u64>,
    /// Timing model only: attempts of this request refused before it issued because no MSHR
    /// was free (its warp went to the back of the queue each time).
    pub refused: u32,
    /// The first request of its warp instruction (the step-through view steps by these).
    pub first: bool,
}

/// Receives progress and events; returning `false` from `progress` cancels the run.
pub trait Observer {
    /// Called when kernel number `kernel` (the index in [`RequestEvent::kernel`]) starts,
    /// before any of its requests: `header` has its name, shape and instructions (its rows
    /// may be only a part of the kernel, or none, when it is streamed).
    fn on_kernel(&mut self, _kernel: u32, _header: &Kernel) {}
    /// Called when kernel `kernel`, streamed, gets instructions found after it began
    /// ([`Session::more_instructions`]), numbered after those it had, before their requests.
    fn on_instructions(&mut self, _kernel: u32, _added: &[crate::trace::Instruction]) {}
    fn on_request(&mut self, _event: &RequestEvent) {}
    /// Called (when [`Observer::wants_requests`]) before the requests of each warp instruction
    /// that reaches the L1, with its rows of `cols`: the accesses its requests come from. Not
    /// called in the timing model.
    fn on_warp_instruction(&mut self, _cols: &crate::trace::Columns, _rows: &[u32]) {}
    /// Called for each warp instruction of a scheduled kernel that reaches the L1 of a
    /// simulated SM, whatever [`Observer::wants_requests`] says, with its rows of `cols` and
    /// the requests the coalescer made of them (the performance model's counts). Not called in
    /// the timing model, nor for reference streams.
    fn on_coalesced(
        &mut self,
        _cols: &crate::trace::Columns,
        _rows: &[u32],
        _requests: &[crate::coalesce::Coalesced],
    ) {
    }
    /// Called right after [`Observer::on_request`] with the L1 of the request's SM as the
    /// request left it (for the step-through view). Not called in the timing model.
    fn after_request(&mut self, _event: &RequestEvent, _cache: &CacheModel) {}
    /// Called (when [`Observer::wants_requests`] and the L2 is simulated) after
    /// [`Observer::on_request`] and [`Observer::after_request`] with each L2 request that
    /// request made, in order (none for an L1 hit that writes nothing), and at the end of a
    /// run with those of the L1s' final write-back. Not called in the timing model.
    fn on_l2(&mut self, _event: &crate::l2::L2Event) {}
    /// Whether [`Observer::on_request`] does anything: when not, the pipeline does not
    /// build the events (the thread search behind [`RequestEvent::thread`] costs time).
    fn wants_requests(&self) -> bool {
        true
    }
    /// Called every few thousand warp instructions with accesses done and total.
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        true
    }
    /// Asked by a shell between two pieces (a reference stream's chunks, a kernel's CTAs) of
    /// a file it can read on from, `accesses` simulated so far: whether to give this observer
    /// a copy of the session there.
    fn checkpoint_due(&self, _accesses: u64) -> bool {
        false
    }
    /// A copy of the session between two pieces ([`Session::snapshot`]), and where the
    /// file's reader stood then.
    fn checkpoint(&mut self, _session: Session, _at: crate::trace::ResumePoint) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {
    fn wants_requests(&self) -> bool {
        false
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    /// The configuration breaks a rule of [`SimConfig::validate`] (the rule's text is in the
    /// message, so it is not also the source: an error chain would show it twice).
    #[error("invalid configuration: {0}")]
    Invalid(crate::config::Invalid),
    /// The configuration cannot run in this mode or on this trace.
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("kernel `{kernel}`")]
    Schedule {
        kernel: String,
        #[source]
        source: ScheduleError,
    },
    #[error("kernel `{kernel}`")]
    Timing {
        kernel: String,
        #[source]
        source: crate::timing::TimingError,
    },
    #[error("cancelled")]
    Cancelled,
}

impl From<crate::config::Invalid> for SimError {
    fn from(e: crate::config::Invalid) -> Self {
        SimError::Invalid(e)
    }
}

#[derive(Clone)]
struct SmSim {
    sm: u32,
    cache: CacheModel,
    reuse: Option<ReuseMeter>,
    counters: crate::cache::Counters,
    order: u64,
}

impl SmSim {
    /// One request through the L1 and the reuse meter: its outcome and whole-cache reuse
    /// distance (where measured). Where the exact distance classifies the miss by itself
    /// (LRU, write-allocate, one sector a line: `CacheModel::shadow_is_a_stack`), the fully
    /// associative shadow is not kept; the outcome is the same.
    /// `written`: a store's bytes of its line, where the coalescer knows them (for `wtwa`).
    #[inline]
    fn access(
        &mut self,
        r: &crate::cache::Request,
        written: Option<u128>,
    ) -> (crate::cache::Outcome, Option<u64>) {
        match &mut self.reuse {
            Some(ReuseMeter::Exact(t)) if self.cache.shadow_is_a_stack() => {
                let set = self.cache.set_of(r.line);
                let d = t.access(r.line, set).whole;
                (self.cache.access_at_distance(r, set, d), d)
            }
            Some(m) => {
                let o = self.cache.access_written(r, written);
                let d = m.access(r.line, o.set).and_then(|d| d.whole);
                (o, d)
            }
            None => (self.cache.access_written(r, written), None),
        }
    }
}

/// Which SMs get an L1 model.
pub fn selected_sms(cfg: &SimConfig) -> Vec<u32> {
    match cfg.gpu.simulate {
        SmSelection::One(s) => vec![s],
        SmSelection::All => (0..cfg.gpu.sms).collect(),
        SmSelection::Sample(n) => {
            let mut rng = Rng::fork(cfg.seed, 0x53_4D);
            let mut all: Vec<u32> = (0..cfg.gpu.sms).collect();
            for i in 0..n as usize {
                let j = i + rng.below((all.len() - i) as u64) as usize;
                all.swap(i, j);
            }
            let mut chosen = all[..n as usize].to_vec();
            chosen.sort_unstable();
            chosen
        }
    }
}

/// The SMs `cfg` selects, dealt into at most `parts` non-empty parts for sessions that run
/// side by side ([`Session::for_sms`], [`Report::merge`]). They are dealt in turn, so that
/// each part gets SMs from every stretch of the GPU: CTAs go to SMs in order, and so the
/// parts get about equal shares of the work.
///
/// With a simulated L2 there is one part: the L2 sees every SM's requests in issue order.
pub fn partition_sms(cfg: &SimConfig, parts: usize) -> Vec<Vec<u32>> {
    let sms = selected_sms(cfg);
    let parts = if cfg.l2_simulated() { 1 } else { parts };
    let n = parts.clamp(1, sms.len().max(1));
    let mut out = vec![Vec::new(); n];
    for (i, sm) in sms.into_iter().enumerate() {
        out[i % n].push(sm);
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The coalescing applied to a kernel: the configured one, except that a single thread's
/// reference stream (a Dinero IV trace) is never coalesced: each reference is one request
/// per line it touches, with the sectors it touches, as Dinero IV counts it.
pub fn coalescing_of(cfg: &SimConfig, k: &Kernel) -> Coalescing {
    if k.is_reference_stream() {
        Coalescing::None
    } else {
        cfg.coalescing
    }
}

/// Every warp instruction of `k` that reaches the L1, in the scheduler's issue order under
/// `cfg`, with its rows and what the coalescer of `cfg` makes of them; no cache. For
/// measurements that depend only on the addresses (requests, sectors, transactions).
pub fn each_warp_request(
    k: &Kernel,
    cfg: &SimConfig,
    mut f: impl FnMut(&[u32], &[crate::coalesce::Coalesced]),
) -> Result<(), SimError> {
    let mut sched = crate::schedule::Scheduler::new(k, &cfg.schedule, &cfg.gpu, cfg.seed).map_err(
        |source| SimError::Schedule {
            kernel: k.name.clone(),
            source,
        },
    )?;
    let mut coalescer = crate::coalesce::Coalescer::new(
        coalescing_of(cfg, k),
        crate::coalesce::Geometry {
            line_bytes: cfg.cache.line_bytes,
            sector_bytes: cfg.cache.sector_bytes,
            warp_size: cfg.schedule.warp_size,
            threads_per_cta: k.threads_per_cta(),
        },
    );
    let cols = k.columns();
    let (mut rows, mut out) = (Vec::new(), Vec::new());
    while sched.next(&mut rows).is_some() {
        if coalescer.coalesce(cols, &rows, &mut out) > 0 {
            f(&rows, &out);
        }
    }
    Ok(())
}

/// Simulates `trace` under `cfg`.
pub fn run(
    cfg: &SimConfig,
    trace: &Trace,
    observer: &mut dyn Observer,
) -> Result<Report, SimError> {
    run_kernels(cfg, &trace.kernels, observer)
}

/// [`run`] over kernels held elsewhere (one kernel of a trace: `std::slice::from_ref`).
pub fn run_kernels(
    cfg: &SimConfig,
    kernels: &[Kernel],
    observer: &mut dyn Observer,
) -> Result<Report, SimError> {
    cfg.validate()?;
    if cfg.timing.is_some() {
        return timed::run(cfg, kernels, observer);
    }
    let total: u64 = kernels.iter().map(|k| k.len() as u64).sum();
    let mut session = Session::new(cfg, total)?;
    for k in kernels {
        session.kernel(k, observer)?;
    }
    Ok(session.finish(observer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dinero_trace_is_never_coalesced_whatever_the_configuration() {
        // The rule lives here, not in a front end: the app and the CLI give the same result.
        let t = crate::trace::din::read("r 100 4\nr 120 4\nw 104 2\n".as_bytes(), "t.din").unwrap();
        let mut cfg = SimConfig::default();
        cfg.cache.sector_bytes = 32;
        cfg.coalescing = Coalescing::Line;
        let r = run(&cfg, &t, &mut NoObserver).unwrap();
        // Sectored: the read of 0x120 needs another 32-byte sector, so it misses; with whole-line
        // requests it would hit.
        assert_eq!((r.totals.requests, r.totals.misses), (3, 2));
        assert_eq!(r.totals.bytes_from_memory, 64);
        cfg.coalescing = Coalescing::None;
        let none = run(&cfg, &t, &mut NoObserver).unwrap();
        assert_eq!(none.totals, r.totals);
    }
}
