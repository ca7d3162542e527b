//! Reuse distances of a reference stream measured apart from its simulation, so that a shell
//! can measure them on one core while the cache is simulated on another.
//!
//! The reuse tracker takes about half the time of a streamed Dinero IV trace, and for a
//! reference stream its input follows from the rows alone: each row that reaches the L1 is
//! split into one request per line it touches (never coalesced), whatever the cache does with
//! them. So a shell may move the session's trackers into a [`ReuseStage`]
//! ([`Session::detach_reuse`]), have the stage measure each chunk of rows, and give the session
//! the chunk with its distances ([`Session::feed_measured`]); [`Session::attach_reuse`] puts
//! the trackers back before the report is made. The cache then takes each request's distance
//! from the stage instead of measuring it, and the result is the one the session gives on its
//! own (tested in `super::tests`). Only reference streams can be fed so: a scheduled kernel's
//! requests depend on the scheduler, and a session whose trackers are away refuses one.
//!
//! With reuse distances off, the cache still classifies its misses with a fully associative
//! shadow of its own size. Where that shadow is an LRU stack (`CacheModel::shadow_is_a_stack`)
//! it too depends on the requests alone, so the stage runs it instead, and hands on for each
//! request what the cache needs of a distance: none (a first use), 0 (below the capacity) or
//! the capacity.

use std::collections::VecDeque;

use super::{Session, SimError};
use crate::cache::{LruStack, SetIndexFn, StackOutcome};
use crate::coalesce::Coalescer;
use crate::config::Coalescing;
use crate::reuse::ReuseTracker;
use crate::trace::{model_flags, Columns, Kernel, BARRIER_CODE};

/// A first use (no distance), as [`ReuseStage::measure`] writes it. Distances are below the
/// positions a tracker hands out, which fit in 32 bits.
const FIRST_USE: u32 = u32::MAX;

/// The reuse trackers of a session's SMs (or, with reuse distances off, their caches'
/// shadows), measuring the distances of a reference stream's requests from its rows.
pub struct ReuseStage {
    /// By the session's slots; `None` where the session kept none.
    meters: Vec<Option<Meter>>,
    index: SetIndexFn,
    coalescer: Coalescer,
    slot_of_sm: Vec<usize>,
    sms: u32,
    /// The open stream's slot and its number of instructions, when its SM is simulated.
    stream: Option<(usize, usize)>,
}

impl ReuseStage {
    /// Starts measuring the reference stream whose header the session is given next
    /// ([`Session::begin_stream`]).
    pub fn begin_stream(&mut self, header: &Kernel) {
        let (_, slot) = stream_slot(&self.slot_of_sm, self.sms, header);
        self.stream = slot
            .filter(|&s| self.meters.get(s).is_some_and(|t| t.is_some()))
            .map(|s| (s, header.instructions.len()));
    }

    /// The distances of the requests `rows` make, in order, into `out` (cleared first): the
    /// rows the session simulates, as it splits them (see `reference.rs`).
    pub fn measure(&mut self, rows: &Columns, out: &mut Vec<u32>) {
        out.clear();
        let Some((slot, insts)) = self.stream else {
            return;
        };
        let ReuseStage {
            meters,
            index,
            coalescer,
            ..
        } = self;
        let Some(meter) = meters.get_mut(slot).and_then(|t| t.as_mut()) else {
            return;
        };
        for r in 0..rows.len() {
            let flags = rows.flags[r];
            if flags & 0x1f == BARRIER_CODE
                || rows.inst[r] as usize >= insts
                || !model_flags(flags).1.reaches_l1()
            {
                continue;
            }
            coalescer.split(rows.addr[r], rows.size[r] as u64, false, |c| {
                let line = c.request.line;
                out.push(match meter {
                    Meter::Tracker(t) => t
                        .access(line, index.set(line))
                        .whole
                        .map_or(FIRST_USE, |d| d as u32),
                    Meter::Shadow(s) => stand_in(s, line),
                });
            });
        }
    }
}

/// What measures one SM's requests.
enum Meter {
    /// The session's reuse tracker.
    Tracker(ReuseTracker),
    /// With reuse distances off: the cache's shadow, an LRU stack.
    Shadow(LruStack),
}

/// What the cache needs of a line's distance, from the shadow `CacheModel` keeps where it is
/// an LRU stack: none (its first use), 0 (a hit there, so a distance below the capacity) or
/// the capacity (a miss there).
#[inline]
fn stand_in(shadow: &mut LruStack, line: u64) -> u32 {
    match shadow.access(line) {
        StackOutcome::Hit => 0,
        StackOutcome::Seen => shadow.capacity(),
        StackOutcome::New => FIRST_USE,
    }
}

/// The distances a stream was given and has not used yet.
#[derive(Clone, Debug, Default)]
pub(super) struct Measured {
    /// They are reuse distances (not the shadow's stand-ins), to be reported.
    pub(super) real: bool,
    queue: VecDeque<u32>,
    /// A request found no distance: the rows and the distances were out of step.
    short: bool,
}

impl Measured {
    pub(super) fn new(real: bool) -> Self {
        Measured {
            real,
            ..Default::default()
        }
    }

    /// The distance of the next request.
    #[inline]
    pub(super) fn next(&mut self) -> Option<u64> {
        match self.queue.pop_front() {
            Some(FIRST_USE) => None,
            Some(d) => Some(d as u64),
            None => {
                self.short = true;
                None
            }
        }
    }

    /// Whether every distance was used, and none was missing.
    pub(super) fn in_step(&self) -> bool {
        !self.short && self.queue.is_empty()
    }
}

/// The SM the scheduler gives CTA 0 of a reference stream, and its slot when simulated.
pub(super) fn stream_slot(slot_of_sm: &[usize], sms: u32, header: &Kernel) -> (u32, Option<usize>) {
    let sm = header.info.cta_sm.first().copied().unwrap_or(0) % sms.max(1);
    let slot = slot_of_sm
        .get(sm as usize)
        .copied()
        .filter(|&s| s != usize::MAX);
    (sm, slot)
}

impl Session {
    /// Moves the reuse trackers out into a stage that measures the distances of reference
    /// streams (see the module's text); with reuse distances off, gives the stage the caches'
    /// shadows to run where they are LRU stacks. `None` when there is nothing to measure
    /// apart, or while a kernel is open or the trackers are already away.
    pub fn detach_reuse(&mut self) -> Option<ReuseStage> {
        let first = self.sims.first()?;
        let real = first.reuse.is_some();
        if self.measured_apart
            || self.stream.is_some()
            || self.by_cta.is_some()
            || self.by_issue.is_some()
            || !(real || first.cache.shadow_is_a_stack())
        {
            return None;
        }
        let index = first.cache.set_index().clone();
        // As `CacheModel::new` sizes its shadow.
        let capacity = self.cfg.cache.sets() * self.cfg.cache.ways_effective();
        self.measured_apart = true;
        let meters = self
            .sims
            .iter_mut()
            .map(|s| match s.reuse.take() {
                Some(t) => Some(Meter::Tracker(t)),
                None => Some(Meter::Shadow(LruStack::new(capacity))),
            })
            .collect();
        Some(ReuseStage {
            meters,
            index,
            coalescer: Coalescer::new(Coalescing::None, self.geometry(1)),
            slot_of_sm: self.slot_of_sm.clone(),
            sms: self.cfg.gpu.sms,
            stream: None,
        })
    }

    /// Simulates the next rows of the streamed kernel, as [`Session::feed`] does, with the
    /// distances `stage.measure` gave for them. Returns `Ok(false)` when the observer
    /// cancels.
    pub fn feed_measured(
        &mut self,
        rows: &Columns,
        distances: &[u32],
        observer: &mut dyn super::Observer,
    ) -> Result<bool, SimError> {
        let Some(m) = self.stream.as_mut().and_then(|s| s.measured.as_mut()) else {
            return Err(SimError::Config(
                "distances measured apart need a stream begun after detach_reuse".into(),
            ));
        };
        m.queue.extend(distances);
        Ok(self.feed(rows, observer))
    }

    /// Ends the open stream and takes the trackers back from `stage`. Fails when a stream's
    /// rows and distances were out of step (rows fed without theirs, or another stage's).
    pub fn attach_reuse(
        &mut self,
        stage: ReuseStage,
        observer: &mut dyn super::Observer,
    ) -> Result<(), SimError> {
        self.end_stream(observer);
        if !self.measured_apart || stage.meters.len() != self.sims.len() {
            return Err(SimError::Config(
                "these reuse trackers are not this session's".into(),
            ));
        }
        for (s, m) in self.sims.iter_mut().zip(stage.meters) {
            if let Some(Meter::Tracker(t)) = m {
                s.reuse = Some(t);
            }
        }
        self.measured_apart = false;
        if std::mem::take(&mut self.out_of_step) {
            return Err(SimError::Config(
                "a reference stream's rows and their measured reuse distances were out of step"
                    .into(),
            ));
        }
        Ok(())
    }
}
