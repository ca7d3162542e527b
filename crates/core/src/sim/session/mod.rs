//! A simulation fed piece by piece, so that a trace never has to be in memory whole.
//!
//! [`Session`] holds what lives across kernels (each simulated SM's L1, its reuse tracker and
//! counters) and the report built so far. A front end gives it whole kernels
//! ([`Session::kernel`]) or streams one, in one of two ways:
//! - a reference stream (one thread's references in order, a Dinero IV trace):
//!   [`Session::begin_stream`] with the kernel's header, [`Session::feed`] with chunks of rows
//!   in issue order, [`Session::end_stream`]. It needs no scheduler and nothing of it is kept,
//!   so memory is bounded by the distinct lines, not by the trace's length;
//! - a scheduled kernel CTA by CTA: [`Session::begin_kernel`], [`Session::cta`] for each CTA
//!   in order, [`Session::end_kernel`]. The scheduler runs as far as the CTAs given allow
//!   and holds only the resident ones (`schedule::CtaScheduler`); the issue order, and so the
//!   result, is the whole kernel's (`tests/model/by_cta.rs`).
//!
//! [`super::run`] is a loop over this type; the core stays free of threads, and the shells
//! run decoding beside it.
//!
//! A streamed kernel gives exactly the result the scheduler's path gives for the same rows
//! (tested below on random traces): consecutive rows of one instruction instance form one
//! warp instruction, barriers are skipped, accesses to spaces that bypass the L1 make no
//! request, and a kernel whose CTA ran on an SM that is not simulated makes none either.

use super::issued::ByIssue;
use super::running::Running;
use super::{selected_sms, Observer, RequestEvent, SimError, SmSim};
use crate::cache::{CacheModel, Counters};
use crate::coalesce::{Coalescer, Geometry};
use crate::config::{Coalescing, SimConfig};
use crate::l2::L2Model;
use crate::report::{KernelRow, Report};
use crate::reuse::ReuseMeter;
use crate::rng::Rng;
use crate::schedule::{CtaScheduler, KernelSchedule, Step};
use crate::trace::{Columns, Dim3, Instruction, Kernel, Order};

/// Rows simulated between two progress reports of an in-memory reference stream.
const PROGRESS_ROWS: usize = 1 << 16;

/// Simulation state across kernels, fed whole kernels or streamed chunks.
pub struct Session {
    pub(super) cfg: SimConfig,
    pub(super) slot_of_sm: Vec<usize>,
    pub(super) sims: Vec<SmSim>,
    /// The shared L2, when the configuration has one and every SM is simulated here.
    pub(super) l2: Option<Box<L2Model>>,
    pub(super) report: Report,
    next_kernel: u32,
    pub(super) done: u64,
    pub(super) total: u64,
    /// What it is being fed, one kind of input at a time.
    pub(super) feeding: Feeding,
    /// The exact reuse trackers are in a [`ReuseStage`] (`apart.rs`), which measures streams
    /// apart; scheduled kernels are refused.
    measured_apart: bool,
    /// Requests the SMs had taken when the classifiers left ([`Session::attach_reuse`]
    /// checks that the stage classified as many since).
    requests_before_apart: u64,
    /// A stream's rows and the tags of their requests were out of step.
    out_of_step: bool,
    /// The rows of finished CTAs given shared are kept for the caller
    /// ([`Session::recycle_cta_rows`]).
    recycle: bool,
}

/// What a session is being fed: whole kernels (or nothing open), or one of the inputs it
/// takes piece by piece.
#[derive(Default)]
pub(super) enum Feeding {
    #[default]
    Whole,
    /// A reference stream, in chunks of rows (`reference.rs`).
    Stream(Box<Stream>),
    /// A kernel given CTA by CTA (`by_cta.rs`).
    ByCta(Box<by_cta::ByCta>),
    /// An issued-order kernel, in chunks of rows (`issued.rs`).
    ByIssue(Box<ByIssue>),
}

impl Feeding {
    pub(super) fn stream_mut(&mut self) -> Option<&mut Stream> {
        match self {
            Feeding::Stream(s) => Some(s),
            _ => None,
        }
    }
    pub(super) fn by_cta(&self) -> Option<&by_cta::ByCta> {
        match self {
            Feeding::ByCta(b) => Some(b),
            _ => None,
        }
    }
    pub(super) fn by_cta_mut(&mut self) -> Option<&mut by_cta::ByCta> {
        match self {
            Feeding::ByCta(b) => Some(b),
            _ => None,
        }
    }
    pub(super) fn by_issue(&self) -> Option<&ByIssue> {
        match self {
            Feeding::ByIssue(b) => Some(b),
            _ => None,
        }
    }
    /// Takes the reference stream out, leaving whole kernels.
    pub(super) fn take_stream(&mut self) -> Option<Box<Stream>> {
        match std::mem::take(self) {
            Feeding::Stream(s) => Some(s),
            other => {
                *self = other;
                None
            }
        }
    }
    /// Takes the kernel given CTA by CTA out, leaving whole kernels.
    pub(super) fn take_by_cta(&mut self) -> Option<Box<by_cta::ByCta>> {
        match std::mem::take(self) {
            Feeding::ByCta(b) => Some(b),
            other => {
                *self = other;
                None
            }
        }
    }
    /// Takes the issued-order kernel out, leaving whole kernels.
    pub(super) fn take_by_issue(&mut self) -> Option<Box<ByIssue>> {
        match std::mem::take(self) {
            Feeding::ByIssue(b) => Some(b),
            other => {
                *self = other;
                None
            }
        }
    }
    /// A copy for [`Session::snapshot`] (a kernel given CTA by CTA without its rows);
    /// `None` when whole kernels are fed, which cannot be copied between pieces.
    fn copy(&self) -> Option<Feeding> {
        Some(match self {
            Feeding::Whole => return None,
            Feeding::Stream(s) => Feeding::Stream(s.clone()),
            Feeding::ByCta(b) => Feeding::ByCta(Box::new(b.copy_without_rows())),
            Feeding::ByIssue(b) => Feeding::ByIssue(b.clone()),
        })
    }
}

/// The reference stream being streamed.
#[derive(Clone)]
pub(super) struct Stream {
    ki: u32,
    name: String,
    instructions: Vec<Instruction>,
    /// The SM its one CTA runs on, and that SM's slot when it is simulated.
    sm: u32,
    slot: Option<usize>,
    coalescer: Coalescer,
    insts: Vec<Counters>,
    rows: u64,
    warp_insts: u64,
    /// Its rows as warp instructions (the last of a chunk may go on in the next).
    grouping: grouping::Grouping,
    /// The tags of its requests, when a classifier runs apart (`apart.rs`).
    tags: Option<reference::Tags>,
}

impl Session {
    /// A copy of this session to go on from later with the rest of the input (the app zooms
    /// into a streamed run from the nearest copy instead of from the start). Only between
    /// pieces of a reference stream, of an issued-order kernel or of a kernel given CTA by
    /// CTA. The state of the first two is all in the session (with the warp instruction that
    /// may go on in the next piece). A scheduled kernel's is also in the rows of its resident
    /// CTAs, which the copy does not hold: it wants them back ([`Session::wanted_ctas`],
    /// [`Session::give_cta_rows`]) from the trace file before it goes on.
    pub fn snapshot(&self) -> Option<Session> {
        if self.measured_apart {
            return None;
        }
        let feeding = self.feeding.copy()?;
        Some(Session {
            cfg: self.cfg.clone(),
            slot_of_sm: self.slot_of_sm.clone(),
            sims: self.sims.clone(),
            l2: self.l2.clone(),
            report: self.report.clone(),
            next_kernel: self.next_kernel,
            done: self.done,
            total: self.total,
            feeding,
            measured_apart: false,
            requests_before_apart: 0,
            out_of_step: false,
            recycle: false,
        })
    }

    /// Accesses (rows) simulated so far, of every SM scheduled: the work a copy of the
    /// session saves a run read on from it.
    pub fn accesses_done(&self) -> u64 {
        self.done
    }

    /// About the bytes a [`Session::snapshot`] holds: mostly the reuse trackers and the
    /// caches' records of the lines seen, which grow with the distinct lines, and the
    /// running kernel's per-CTA counters and the report's rows, which grow with the CTAs.
    pub fn approx_bytes(&self) -> u64 {
        // The reuse trackers and the caches' records of the lines seen grow with the
        // distinct lines.
        let trackers: usize = self
            .sims
            .iter()
            .map(|s| s.reuse.as_ref().map_or(0, |r| r.heap_bytes()) + s.cache.heap_bytes())
            .sum();
        let trackers = trackers + self.l2.as_ref().map_or(0, |l| l.heap_bytes());
        let kernel = self.feeding.by_cta().map_or(0, |b| b.heap_bytes())
            + self.feeding.by_issue().map_or(0, |b| b.heap_bytes());
        // The report's per-instruction and per-CTA rows (a row is mostly its counters).
        let row = std::mem::size_of::<Counters>() + 32;
        let report = row
            * (self.report.instructions.len()
                + self.report.source_lines.len()
                + self.report.kernels.len())
            + self.report.ctas.heap_bytes();
        (1 << 20) + (trackers + kernel + report) as u64
    }

    /// Starts a simulation with `cfg` (not the timing model, which needs whole kernels: see
    /// [`super::run`]). `total_accesses` is for progress reports (0 when unknown).
    pub fn new(cfg: &SimConfig, total_accesses: u64) -> Result<Self, SimError> {
        Self::for_sms(cfg, &selected_sms(cfg), total_accesses)
    }

    /// Starts a simulation of `sms`, a part of the SMs `cfg` selects (see
    /// [`super::partition_sms`]): everything is scheduled as in the whole run, but only these
    /// SMs' L1s are simulated. The reports of the parts combine ([`Report::merge`]) into the
    /// whole run's, so the shells can run the parts on separate cores.
    pub fn for_sms(cfg: &SimConfig, sms: &[u32], total_accesses: u64) -> Result<Self, SimError> {
        cfg.validate()?;
        if cfg.timing.is_some() {
            return Err(SimError::Config(
                "the timing model simulates whole kernels: use sim::run".into(),
            ));
        }
        let selected = selected_sms(cfg);
        if let Some(sm) = sms.iter().find(|s| !selected.contains(s)) {
            return Err(SimError::Config(format!(
                "SM {sm} is not one the configuration simulates"
            )));
        }
        let mut sms = sms.to_vec();
        sms.sort_unstable();
        sms.dedup();
        let mut slot_of_sm = vec![usize::MAX; cfg.gpu.sms as usize];
        for (i, &s) in sms.iter().enumerate() {
            slot_of_sm[s as usize] = i;
        }
        let sims = sms
            .iter()
            .map(|&sm| SmSim {
                sm,
                cache: CacheModel::new(&cfg.cache, Rng::fork(cfg.seed, sm as u64).next_u64()),
                reuse: ReuseMeter::new(
                    cfg.reuse.resolve(false),
                    cfg.cache.sets() as usize,
                    cfg.cache.lines() as usize,
                ),
                counters: Default::default(),
                order: 0,
            })
            .collect();
        let l2 = match &cfg.l2 {
            Some(l2) if cfg.l2_simulated() && sms.len() == cfg.gpu.sms as usize => Some(Box::new(
                L2Model::new(l2, &cfg.cache, cfg.reuse.resolve(false), cfg.seed)
                    .map_err(SimError::Config)?,
            )),
            _ => None,
        };
        Ok(Session {
            cfg: cfg.clone(),
            slot_of_sm,
            sims,
            l2,
            report: Report::new(cfg, &sms),
            next_kernel: 0,
            done: 0,
            total: total_accesses,
            feeding: Feeding::Whole,
            measured_apart: false,
            requests_before_apart: 0,
            out_of_step: false,
            recycle: false,
        })
    }

    /// This session for a trace streamed (from a file or a generator, never held whole):
    /// reuse distances `auto` become sampled, so that memory does not grow with the lines
    /// the trace touches (`config::ReuseMode`). Before anything is fed.
    pub fn streamed(mut self) -> Self {
        let mode = self.cfg.reuse.resolve(true);
        if self.done == 0 && mode != self.cfg.reuse.resolve(false) {
            let c = &self.cfg.cache;
            for s in &mut self.sims {
                s.reuse = ReuseMeter::new(mode, c.sets() as usize, c.lines() as usize);
            }
            if let Some(l2) = &mut self.l2 {
                l2.set_reuse(mode);
            }
        }
        self
    }

    fn geometry(&self, threads_per_cta: u32) -> Geometry {
        Geometry {
            line_bytes: self.cfg.cache.line_bytes,
            sector_bytes: self.cfg.cache.sector_bytes,
            warp_size: self.cfg.schedule.warp_size,
            threads_per_cta,
        }
    }

    /// Simulates one whole kernel (the next launch).
    pub fn kernel(&mut self, k: &Kernel, observer: &mut dyn Observer) -> Result<(), SimError> {
        if !k.is_reference_stream() {
            return self.scheduled_kernel(k, observer);
        }
        self.begin_stream(k, observer)?;
        let mut start = 0;
        while start < k.len() {
            let end = (start + PROGRESS_ROWS).min(k.len());
            if !self.feed_range(k.columns(), start..end, observer) {
                return Err(SimError::Cancelled);
            }
            start = end;
        }
        self.end_stream(observer);
        Ok(())
    }

    /// Simulates rows `range` of `cols`, the next of the streamed kernel ([`Session::feed`]
    /// without a copy of them). Returns `false` when the observer cancels.
    pub fn feed_range(
        &mut self,
        cols: &Columns,
        range: std::ops::Range<usize>,
        observer: &mut dyn Observer,
    ) -> bool {
        self.feed_rows(cols, range, observer);
        observer.progress(self.done, self.total)
    }

    /// Ends the run: writes back what is dirty and completes the report.
    pub fn finish(mut self, observer: &mut dyn Observer) -> Report {
        self.end_stream(observer);
        // A kernel read by CTA that was not ended runs to its end here; only the observer
        // can stop it (cancelling), and then the report is of a run that was cancelled.
        let _ = self.end_kernel(observer);
        observer.progress(self.total.max(self.done), self.total.max(self.done));
        for s in &mut self.sims {
            // Dirty lines left at the end are written back, as Dinero IV does (to the L2
            // when there is one).
            match &mut self.l2 {
                Some(l2) => s
                    .cache
                    .flush_each(&mut s.counters, |line, sectors| l2.l1_flush(line, sectors)),
                None => s.cache.flush(&mut s.counters),
            }
            self.report.add_sm(s.sm, &s.counters, s.reuse.as_ref());
        }
        if let Some(l2) = &mut self.l2 {
            l2.drain_events(|e| observer.on_l2(e));
        }
        self.report.finish(self.cfg.cache.lines());
        if let Some(l2) = &self.l2 {
            self.report.add_l2(l2);
        }
        self.report
    }

    /// A kernel whose warps the scheduler forms and interleaves.
    fn scheduled_kernel(
        &mut self,
        k: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let mut whole = self.begin_whole(k, observer)?;
        self.whole_go_on(&mut whole, k, u64::MAX, observer)?;
        self.end_whole(whole, k);
        Ok(())
    }

    /// Begins kernel `k`, held whole, as the next launch: [`Session::whole_go_on`] issues its
    /// warp instructions, as many at a time as the caller likes, and [`Session::end_whole`]
    /// ends it (the pieces of [`Session::kernel`], for a caller that runs a kernel held in
    /// memory a piece at a time without copying its rows: `RunSteps`).
    pub fn begin_whole(
        &mut self,
        k: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<WholeKernel, SimError> {
        let run = self.start_kernel(k, observer)?;
        let cfg = &self.cfg;
        let sched = KernelSchedule::new(k, &cfg.schedule, &cfg.gpu, cfg.seed ^ run.ki as u64)
            .map_err(|source| SimError::Schedule {
                kernel: k.name.clone(),
                source,
            })?;
        Ok(WholeKernel {
            run,
            sched,
            rows: Vec::with_capacity(64),
        })
    }

    /// Issues at most `warp_instructions` more warp instructions of kernel `k` begun by
    /// [`Session::begin_whole`]; returns whether it is finished.
    pub fn whole_go_on(
        &mut self,
        w: &mut WholeKernel,
        k: &Kernel,
        warp_instructions: u64,
        observer: &mut dyn Observer,
    ) -> Result<bool, SimError> {
        for _ in 0..warp_instructions {
            let Some(issue) = w.sched.next(k, &mut w.rows) else {
                return Ok(true);
            };
            w.run.issue(self, k.columns(), &w.rows, issue, observer)?;
        }
        Ok(false)
    }

    /// Ends kernel `k` begun by [`Session::begin_whole`] (every warp instruction issued).
    pub fn end_whole(&mut self, w: WholeKernel, k: &Kernel) {
        let WholeKernel { run, sched, .. } = w;
        let ctas = run.ctas.end(|c| sched.cta_sm(k, c));
        self.report
            .add_whole_kernel(k, run.ki, run.warp_insts, &run.insts, ctas);
    }

    /// Takes instructions of the open kernel found since it began or since the last call,
    /// numbered after those it has (`trace::SinkHooks::more_instructions`: a file read once
    /// names a kernel's instructions as they first appear). Their counters start at zero, and
    /// the observer is told ([`Observer::on_instructions`]).
    pub fn more_instructions(
        &mut self,
        added: &[Instruction],
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let ki = match &mut self.feeding {
            Feeding::Stream(s) => {
                super::running::add_instructions(&mut s.instructions, &mut s.insts, added);
                s.ki
            }
            Feeding::ByIssue(b) => b.more_instructions(added),
            Feeding::ByCta(b) => b.more_instructions(added),
            Feeding::Whole => {
                return Err(SimError::Config(format!(
                    "{} instructions came when no kernel was open",
                    added.len()
                )))
            }
        };
        observer.on_instructions(ki, added);
        Ok(())
    }

    /// Numbers the next kernel, tells the observer, and sets up what its warp instructions
    /// add up to.
    pub(super) fn start_kernel(
        &mut self,
        k: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<Running, SimError> {
        if self.measured_apart {
            return Err(SimError::Config(format!(
                "kernel `{}`: the reuse distances are measured apart, which only a reference \
                 stream allows",
                k.name
            )));
        }
        self.end_stream(observer);
        self.end_kernel(observer)?;
        let ki = self.next_kernel;
        self.next_kernel += 1;
        observer.on_kernel(ki, k);
        let mode = super::coalescing_of(&self.cfg, k);
        Ok(Running {
            ki,
            coalescer: Coalescer::new(mode, self.geometry(k.threads_per_cta())),
            uncoalesced: mode == Coalescing::None,
            insts: vec![Counters::default(); k.instructions.len()],
            ctas: crate::report::CtaCounters::new(ki, k.grid),
            warp_insts: 0,
            since_progress: 0,
            reqs: Vec::with_capacity(64),
            taken: Vec::new(),
            events: observer.wants_requests(),
        })
    }
}

/// A kernel held whole being run a piece at a time ([`Session::begin_whole`]): its
/// counters and its scheduler, which does not hold the kernel.
pub struct WholeKernel {
    run: Running,
    sched: KernelSchedule,
    rows: Vec<u32>,
}

mod apart;
mod by_cta;
mod grouping;
mod reference;

pub use apart::ReuseStage;

#[cfg(test)]
mod tests {
    use super::reference::push_row;
    use super::*;
    use crate::config::{ReuseMode, SmSelection, WritePolicy};
    use crate::sim::NoObserver;
    use crate::trace::{Access, AccessKind, KernelBuilder, MemSpace};
    use proptest::prelude::*;

    /// Every request, and every kernel start with its instruction count.
    #[derive(Default)]
    struct Events(Vec<RequestEvent>, Vec<(u32, String, usize)>);
    impl Observer for Events {
        fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
            self.1
                .push((kernel, header.name.clone(), header.instructions.len()));
        }
        fn on_request(&mut self, e: &RequestEvent) {
            self.0.push(*e);
        }
    }

    fn kernel(rows: &[(u32, u32, u64, u16, u8, u8)], cta_sm: Option<u32>) -> Kernel {
        let mut b = KernelBuilder::new("refs", Dim3::x(1), Dim3::x(1), Order::Issued).unwrap();
        for name in ["a", "b", "c"] {
            b.instruction(name, None);
        }
        for &(inst, dyn_inst, addr, size, kind, space) in rows {
            b.push(Access {
                thread: 0,
                inst,
                dyn_inst,
                addr,
                size,
                kind: [AccessKind::Load, AccessKind::Store, AccessKind::Barrier][kind as usize],
                space: [MemSpace::Global, MemSpace::Local, MemSpace::Shared][space as usize],
            })
            .unwrap();
        }
        let mut k = b.finish();
        if let Some(sm) = cta_sm {
            k.info.cta_sm = vec![sm];
        }
        k
    }

    /// The bytes a session says it holds count the caches' records of every line seen
    /// (write-through, so not a stack: the compulsory misses come from that record), with the
    /// reuse distances off: the app's copies of sessions keep to a budget of those bytes.
    #[test]
    fn a_sessions_bytes_count_the_lines_its_caches_have_seen() {
        let rows: Vec<_> = (0..200_000u64).map(|i| (0, 0, i * 128, 4, 0, 0)).collect();
        let k = kernel(&rows, None);
        let mut cfg = SimConfig::default();
        cfg.cache.write_policy = WritePolicy::Wtna;
        cfg.reuse = ReuseMode::Off;
        let mut s = Session::new(&cfg, 0).unwrap();
        let before = s.approx_bytes();
        s.kernel(&k, &mut NoObserver).unwrap();
        let seen: usize = s.sims.iter().map(|m| m.cache.heap_bytes()).sum();
        // A bit a line where they lie close together.
        assert!(seen >= 200_000 / 8, "{seen} bytes for 200,000 lines");
        assert!(s.approx_bytes() >= before + seen as u64);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The streamed path, fed in chunks of any size, gives the scheduler's result: the
        /// same report and the same request events.
        #[test]
        fn a_streamed_kernel_matches_the_scheduled_one(
            rows in prop::collection::vec(
                (0u32..3, 0u32..3, 0u64..4096, 1u16..300, prop_oneof![6 => Just(0u8), 3 => Just(1u8), 1 => Just(2u8)], prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)]),
                0..120),
            chunks in prop::collection::vec(1usize..20, 1..10),
            line_shift in 5u32..8,
            ways in 1u32..4,
            wbwa in any::<bool>(),
            sms in 1u32..3,
            all in any::<bool>(),
            cta_sm in prop::option::of(0u32..4),
            reuse in 0u8..3,
            kernels in 1usize..3,
            apart in any::<bool>(),
            fifo in any::<bool>(),
            unsectored in any::<bool>(),
        ) {
            let mut cfg = SimConfig::default();
            cfg.cache.line_bytes = 1 << line_shift;
            cfg.cache.sector_bytes = 32;
            cfg.cache.ways = ways;
            cfg.cache.size_bytes = (cfg.cache.line_bytes * ways * 4) as u64;
            cfg.cache.write_policy = if wbwa { WritePolicy::Wbwa } else { WritePolicy::Wtna };
            cfg.gpu.sms = sms;
            cfg.gpu.simulate = if all { SmSelection::All } else { SmSelection::One(0) };
            cfg.reuse = match reuse % 3 {
                0 => ReuseMode::Exact,
                1 => ReuseMode::Sampled,
                _ => ReuseMode::Off,
            };
            if fifo {
                cfg.cache.replacement = crate::config::Replacement::Fifo;
            }
            if unsectored {
                cfg.cache.sector_bytes = cfg.cache.line_bytes;
            }
            let k = kernel(&rows, cta_sm);

            let mut want_events = Events::default();
            let mut s = Session::new(&cfg, 0).unwrap();
            for _ in 0..kernels {
                s.scheduled_kernel(&k, &mut want_events).unwrap();
            }
            let want = s.finish(&mut NoObserver);

            let mut got_events = Events::default();
            let mut s = Session::new(&cfg, 0).unwrap();
            // The classes and distances measured apart (`apart.rs`) when asked, as a shell
            // does on another thread.
            let mut stage = if apart { s.detach_reuse() } else { None };
            prop_assert_eq!(stage.is_some(), apart);
            let mut tags = Vec::new();
            for _ in 0..kernels {
                if let Some(stage) = &mut stage {
                    // The previous stream's last tags, before the session ends it.
                    tags.clear();
                    stage.begin_stream(&k, &mut tags);
                    if !tags.is_empty() {
                        s.take_tags(&tags).unwrap();
                    }
                }
                s.begin_stream(&k, &mut got_events).unwrap();
                let cols = k.columns();
                let (mut at, mut c) = (0, 0);
                while at < cols.len() {
                    let n = chunks[c % chunks.len()].min(cols.len() - at);
                    let mut chunk = Columns::default();
                    for i in at..at + n {
                        push_row(&mut chunk, cols, i);
                    }
                    if let Some(stage) = &mut stage {
                        tags.clear();
                        stage.measure(&chunk, &mut tags);
                        s.take_tags(&tags).unwrap();
                    }
                    prop_assert!(s.feed(&chunk, &mut got_events));
                    at += n;
                    c += 1;
                }
                if stage.is_none() {
                    s.end_stream(&mut got_events);
                }
            }
            if let Some(mut stage) = stage {
                tags.clear();
                stage.end_stream(&mut tags);
                if !tags.is_empty() {
                    s.take_tags(&tags).unwrap();
                }
                s.attach_reuse(stage, &mut got_events).unwrap();
            }
            let got = s.finish(&mut NoObserver);
            prop_assert_eq!(&got, &want);
            if apart {
                // Measured apart, a request's distance stays with the stage (a shell measures
                // apart only for an observer that does not want the requests).
                for e in &mut want_events.0 {
                    e.reuse_distance = None;
                }
            }
            prop_assert_eq!(&got_events.0, &want_events.0);
            prop_assert_eq!(&got_events.1, &want_events.1);
            prop_assert_eq!(got_events.1.len(), kernels);
            // And the whole-trace entry point takes the streamed path.
            let trace = crate::trace::Trace { kernels: vec![k; kernels] };
            prop_assert_eq!(&super::super::run(&cfg, &trace, &mut NoObserver).unwrap(), &want);
        }
    }

    /// The stream of `k` fed in chunks of 2 rows plus `extra` as one more chunk, with the
    /// distances measured apart or not; its report.
    fn fed(cfg: &SimConfig, k: &Kernel, extra: &Columns, apart: bool) -> Report {
        fed_in(cfg, k, extra, apart, 2).0
    }

    /// [`fed`] in chunks of `rows` rows; and whether the stage, if any, asked for its
    /// exact tracker's look-ups ahead (`apart::Ahead`).
    fn fed_in(
        cfg: &SimConfig,
        k: &Kernel,
        extra: &Columns,
        apart: bool,
        rows: usize,
    ) -> (Report, bool) {
        let mut s = Session::new(cfg, 0).unwrap();
        let mut stage = apart.then(|| s.detach_reuse().unwrap());
        let mut tags = Vec::new();
        if let Some(stage) = &mut stage {
            stage.begin_stream(k, &mut tags);
        }
        s.begin_stream(k, &mut NoObserver).unwrap();
        let cols = k.columns();
        let mut chunks: Vec<Columns> = (0..cols.len())
            .step_by(rows)
            .map(|at| {
                let mut c = Columns::default();
                c.extend_from(cols, at..(at + rows).min(cols.len()));
                c
            })
            .collect();
        chunks.push(extra.clone());
        for c in &chunks {
            if let Some(stage) = &mut stage {
                tags.clear();
                stage.measure(c, &mut tags);
                s.take_tags(&tags).unwrap();
            }
            assert!(s.feed(c, &mut NoObserver));
        }
        let mut ahead = false;
        if let Some(mut stage) = stage {
            tags.clear();
            stage.end_stream(&mut tags);
            s.take_tags(&tags).unwrap();
            ahead = stage.looked_ahead();
            s.attach_reuse(stage, &mut NoObserver).unwrap();
        }
        (s.finish(&mut NoObserver), ahead)
    }

    /// A reference stream of 8-byte accesses at `addrs`, of three instructions, a store in
    /// four.
    fn reference_stream(addrs: &[u64]) -> Kernel {
        let rows: Vec<_> = addrs
            .iter()
            .enumerate()
            .map(|(i, &a)| ((i % 3) as u32, i as u32, a, 8, (i % 4 == 0) as u8, 0))
            .collect();
        kernel(&rows, None)
    }

    /// Lines far apart, so that the exact tracker holds their last uses one per line and the
    /// stage asks for its look-ups ahead of the rows (`apart::Ahead`): the same report as
    /// the session measuring them itself, whatever the chunks.
    #[test]
    fn looking_ahead_measured_apart_changes_nothing() {
        let mut rng = crate::rng::Rng::new(5);
        let mut addrs: Vec<u64> = Vec::new();
        for _ in 0..30_000 {
            let addr = match (rng.below(3), addrs.len()) {
                (0, n) if n > 0 => addrs[rng.below(n as u64) as usize] + rng.below(256),
                _ => rng.below(1 << 40),
            };
            addrs.push(addr);
        }
        let k = reference_stream(&addrs);
        let cfg = SimConfig {
            reuse: ReuseMode::Exact,
            ..Default::default()
        };
        let want = fed_in(&cfg, &k, &Columns::default(), false, 1000).0;
        assert!(want
            .reuse
            .as_ref()
            .is_some_and(|r| r.distinct_lines > 20_000));
        for rows in [1, 7, 1000, 4096] {
            let (got, ahead) = fed_in(&cfg, &k, &Columns::default(), true, rows);
            assert!(ahead, "{rows} rows a chunk");
            assert_eq!(got, want, "{rows} rows a chunk");
        }
    }

    /// Lines so many that the record of sectors seen outgrows a core's caches (over 4 GiB:
    /// its words paged; over a TiB or 8 GiB: one entry per word), so that the stage asks for
    /// its words ahead of the rows (`apart::Ahead::fetch_seen`), without the exact tracker or
    /// beside it: the same report as the session classifying them itself, whatever the
    /// chunks.
    #[test]
    fn looking_ahead_for_the_sectors_seen_changes_nothing() {
        // Write-through (the default): the shadow is an array, asked beside the exact tracker.
        let wbwa = crate::config::WritePolicy::Wbwa;
        for (span, reuse, write) in [
            (32u64, ReuseMode::Off, wbwa),
            (40, ReuseMode::Sampled, wbwa),
            (33, ReuseMode::Exact, crate::config::WritePolicy::Wtna),
        ] {
            let mut rng = crate::rng::Rng::new(span);
            let mut addrs: Vec<u64> = Vec::new();
            for _ in 0..150_000 {
                let addr = match (rng.below(4), addrs.len()) {
                    (0, n) if n > 0 => addrs[rng.below(n as u64) as usize] + rng.below(256),
                    (1, n) if n > 0 => addrs[n - 1 - rng.below(n.min(300) as u64) as usize],
                    _ => rng.below(1 << span),
                };
                addrs.push(addr);
            }
            let k = reference_stream(&addrs);
            let mut cfg = SimConfig {
                reuse,
                ..Default::default()
            };
            cfg.cache.write_policy = write;
            let want = fed_in(&cfg, &k, &Columns::default(), false, 1000).0;
            let c = &want.totals;
            let m = &c.miss_classes;
            assert!(m.compulsory > 100_000 && m.capacity > 10_000, "{m:?}");
            for rows in [1, 7, 4096] {
                let (got, ahead) = fed_in(&cfg, &k, &Columns::default(), true, rows);
                assert!(ahead, "{rows} rows a chunk");
                assert_eq!(got, want, "{rows} rows a chunk");
            }
        }
    }

    #[test]
    fn measured_apart_skips_what_the_stream_skips() {
        let cfg = SimConfig::default();
        let k = kernel(
            &[
                (0, 0, 0, 4, 0, 0),
                (1, 0, 4096, 200, 1, 0),
                (2, 0, 64, 4, 0, 0),
            ],
            None,
        );
        // Rows of an instruction the header does not have, of a barrier, and of shared
        // memory make no request.
        let odd = kernel(
            &[
                (0, 1, 128, 4, 0, 0),
                (1, 2, 0, 4, 2, 0),
                (2, 3, 8192, 4, 0, 2),
                (0, 4, 64, 4, 0, 0),
                (1, 5, 4096, 4, 1, 0),
            ],
            None,
        );
        let mut extra = odd.columns().clone();
        extra.inst[0] = 7;
        let want = fed(&cfg, &k, &extra, false);
        assert_eq!(fed(&cfg, &k, &extra, true), want);
        assert!(want.totals.requests > 0);
    }

    #[test]
    fn a_session_measured_apart_refuses_what_would_put_it_out_of_step() {
        let cfg = SimConfig::default();
        let k = kernel(&[(0, 0, 0, 4, 0, 0), (1, 1, 4096, 4, 1, 0)], None);
        let mut s = Session::new(&cfg, 0).unwrap();
        let mut stage = s.detach_reuse().unwrap();
        assert!(s.detach_reuse().is_none());
        // A scheduled kernel's requests depend on the scheduler: refused.
        let grid = KernelBuilder::new("grid", Dim3::x(2), Dim3::x(32), Order::Issued)
            .unwrap()
            .finish();
        let e = s.kernel(&grid, &mut NoObserver).unwrap_err().to_string();
        assert!(e.contains("measured apart"), "{e}");
        // Rows fed to the session and not measured: the report would be wrong, so
        // attaching fails.
        stage.begin_stream(&k, &mut Vec::new());
        s.begin_stream(&k, &mut NoObserver).unwrap();
        assert!(s.snapshot().is_none());
        assert!(s.feed(k.columns(), &mut NoObserver));
        let e = s
            .attach_reuse(stage, &mut NoObserver)
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of step"), "{e}");
        // Tags to a session that classifies its own: refused.
        let mut s = Session::new(&cfg, 0).unwrap();
        s.begin_stream(&k, &mut NoObserver).unwrap();
        assert!(s.take_tags(&[0]).is_err());
        let mut s = Session::new(&cfg, 0).unwrap();
        // Another session's trackers: refused.
        let mut other = Session::new(&SimConfig::default(), 0).unwrap();
        let stage = other.detach_reuse().unwrap();
        assert!(s.attach_reuse(stage, &mut NoObserver).is_err());
    }

    #[test]
    fn only_reference_streams_can_be_streamed() {
        let cfg = SimConfig::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        let k = KernelBuilder::new("k", Dim3::x(2), Dim3::x(32), Order::Issued)
            .unwrap()
            .finish();
        let e = s.begin_stream(&k, &mut NoObserver).unwrap_err().to_string();
        assert!(e.contains("only one thread's references"), "{e}");
        let timed = SimConfig {
            timing: Some(Default::default()),
            ..Default::default()
        };
        assert!(Session::new(&timed, 0).is_err());
    }
}
