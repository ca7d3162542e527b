//! The pipeline: trace -> scheduler -> coalescer -> cache model -> statistics.
//!
//! [`run`] simulates every kernel of a trace with one configuration. The L1 of each
//! simulated SM keeps its contents across kernel launches. Progress and per-request
//! events go to an [`Observer`], which can stop the run.

mod report;
mod timed;

pub use report::{
    short_name, Comparison, CtaRow, InstRow, KernelRow, OccupancySample, Report, ReuseReport,
    SmRow, SourceLineRow, TimingReport, ValueCount,
};

use crate::cache::{CacheModel, MissClass};
use crate::coalesce::{Coalesced, Coalescer, Geometry};
use crate::config::{Coalescing, SimConfig, SmSelection};
use crate::reuse::ReuseTracker;
use crate::rng::Rng;
use crate::schedule::{ScheduleError, Scheduler};
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
}

/// Receives progress and events; returning `false` from `progress` cancels the run.
pub trait Observer {
    fn on_request(&mut self, _event: &RequestEvent) {}
    /// Called every few thousand warp instructions with accesses done and total.
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        true
    }
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
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

struct SmSim {
    sm: u32,
    cache: CacheModel,
    reuse: Option<ReuseTracker>,
    counters: crate::cache::Counters,
    order: u64,
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

/// Simulates `trace` under `cfg`.
pub fn run(
    cfg: &SimConfig,
    trace: &Trace,
    observer: &mut dyn Observer,
) -> Result<Report, SimError> {
    cfg.validate().map_err(SimError::Config)?;
    if let Some(t) = &cfg.timing {
        return timed::run(cfg, t, trace, observer);
    }
    let sms = selected_sms(cfg);
    let mut slot_of_sm = vec![usize::MAX; cfg.gpu.sms as usize];
    for (i, &s) in sms.iter().enumerate() {
        slot_of_sm[s as usize] = i;
    }
    let mut sims: Vec<SmSim> = sms
        .iter()
        .map(|&sm| SmSim {
            sm,
            cache: CacheModel::new(&cfg.cache, Rng::fork(cfg.seed, sm as u64).next_u64()),
            reuse: cfg
                .reuse
                .then(|| ReuseTracker::new(cfg.cache.sets() as usize)),
            counters: Default::default(),
            order: 0,
        })
        .collect();
    let total: u64 = trace.kernels.iter().map(|k| k.len() as u64).sum();
    let mut done = 0u64;
    let mut report = Report::new(cfg, &sms);
    let mut rows = Vec::with_capacity(64);
    let mut reqs: Vec<Coalesced> = Vec::with_capacity(64);
    for (ki, k) in trace.kernels.iter().enumerate() {
        let geom = Geometry {
            line_bytes: cfg.cache.line_bytes,
            sector_bytes: cfg.cache.sector_bytes,
            warp_size: cfg.schedule.warp_size,
            threads_per_cta: k.threads_per_cta(),
        };
        let mut coalescer = Coalescer::new(coalescing_of(cfg, k), geom);
        let line_bytes = (cfg.cache.line_bytes as u64).max(1);
        let mut taken: Vec<bool> = Vec::new();
        let uncoalesced = coalescing_of(cfg, k) == Coalescing::None;
        let mut sched =
            Scheduler::new(k, &cfg.schedule, &cfg.gpu, cfg.seed ^ ki as u64).map_err(|source| {
                SimError::Schedule {
                    kernel: k.name.clone(),
                    source,
                }
            })?;
        let mut insts = vec![crate::cache::Counters::default(); k.instructions.len()];
        let mut ctas: Vec<crate::cache::Counters> = vec![Default::default(); k.num_ctas() as usize];
        let mut warp_insts = 0u64;
        let mut since_progress = 0u32;
        while let Some(issue) = sched.next(&mut rows) {
            done += rows.len() as u64;
            since_progress += 1;
            if since_progress >= 4096 {
                since_progress = 0;
                if !observer.progress(done, total) {
                    return Err(SimError::Cancelled);
                }
            }
            let slot = slot_of_sm[issue.sm as usize];
            if slot == usize::MAX {
                continue;
            }
            let s = &mut sims[slot];
            let used = coalescer.coalesce(k.columns(), &rows, &mut reqs);
            if used == 0 {
                continue;
            }
            warp_insts += 1;
            let inst = k.columns().inst[rows[0] as usize];
            taken.clear();
            taken.resize(rows.len(), false);
            let mut cursor = 0;
            let mut local = crate::cache::Counters {
                accesses: used as u64,
                ..Default::default()
            };
            for c in &reqs {
                let o = s.cache.access(&c.request);
                local.record(c.request.write, &o);
                local.transactions += c.transactions as u64;
                let reuse_distance = s
                    .reuse
                    .as_mut()
                    .and_then(|r| r.access(c.request.line, o.set).whole);
                // The k-th request to a line belongs to the k-th access starting in it (one
                // request per access without coalescing, the lowest such thread with it).
                let cols = k.columns();
                // Uncoalesced requests come in row order: search from after the last match.
                let found = (cursor..rows.len()).chain(0..cursor).find(|&j| {
                    !taken[j] && cols.addr[rows[j] as usize] / line_bytes == c.request.line
                });
                if let Some(j) = found {
                    taken[j] = true;
                    // Coalesced requests name their lowest thread: search from the start.
                    if uncoalesced {
                        cursor = j + 1;
                    }
                }
                let thread = found
                    .or(rows
                        .iter()
                        .position(|&r| cols.addr[r as usize] / line_bytes <= c.request.line))
                    .and_then(|j| rows.get(j))
                    .map(|&r| cols.thread[r as usize]);
                observer.on_request(&RequestEvent {
                    order: s.order,
                    sm: s.sm,
                    kernel: ki as u32,
                    cta: issue.cta,
                    warp: issue.warp,
                    inst,
                    line: c.request.line,
                    set: o.set,
                    write: c.request.write,
                    hit: o.hit,
                    class: o.class,
                    reuse_distance,
                    time: None,
                    thread,
                    in_flight: false,
                    set_distance: None,
                });
                s.order += 1;
            }
            s.counters.add(&local);
            insts[inst as usize].add(&local);
            ctas[issue.cta as usize].add(&local);
        }
        report.add_kernel(k, ki, &insts, &ctas, |c| sched.cta_sm(c), warp_insts);
    }
    observer.progress(total, total);
    for s in &mut sims {
        // Dirty lines left at the end are written back, as Dinero IV does.
        s.cache.flush(&mut s.counters);
        report.add_sm(s.sm, &s.counters, s.reuse.as_ref());
    }
    report.finish(cfg.cache.lines());
    Ok(report)
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
