//! The miss classes and reuse distances of a reference stream measured apart from its
//! cache, so that a shell can run them on one core while the cache is simulated on another.
//!
//! For a reference stream what the classifier (the fully associative shadow and the record of
//! sectors seen, `cache::Classifier`) and the reuse meter see follows from the rows alone:
//! each warp instruction's accesses that reach the L1 are split into one request per line
//! they touch (never coalesced), whatever the cache does with them; together they take as
//! long as the cache itself, or longer. So a shell may move each simulated SM's classifier
//! and meter into a [`ReuseStage`] ([`Session::detach_reuse`]) and have the stage measure
//! every chunk of rows on another thread, before the session gets it with the [`Tag`] of
//! each of its requests ([`Session::take_tags`]): the cache takes its miss classes from them.
//! Where the shadow is an LRU stack, the meter's distances stand for it: the exact tracker's
//! exactly, a sampled meter's where its stack of recent lines finds the line (below its depth,
//! which is at least twice the capacity), the record of sectors seen deciding the rest.
//! [`Session::attach_reuse`] puts everything back before the report is made, which is the
//! report the session gives on its own (tested in `super::tests`). Only reference streams can
//! be fed so: a scheduled kernel's requests depend on the scheduler, and a session whose
//! classifiers are away refuses one.

use super::grouping::{reaching, Grouping};
use super::{Feeding, Session, SimError};
use crate::cache::{Classifier, Request, SetIndexFn, Tag};
use crate::coalesce::Coalescer;
use crate::config::Coalescing;
use crate::reuse::ReuseMeter;
use crate::trace::{model_flags, Columns, Kernel};

/// What one SM's requests go through apart.
struct Apart {
    classes: Classifier,
    meter: Option<ReuseMeter>,
}

impl Apart {
    /// The exact tracker, when its lines' last uses are held one per line (lines far apart:
    /// each look-up misses the processor's caches), for the look-ahead ([`Ahead`]).
    fn far_apart(&self) -> Option<&crate::reuse::ReuseTracker> {
        match &self.meter {
            Some(ReuseMeter::Exact(t)) if t.lines_far_apart() => Some(t),
            _ => None,
        }
    }

    /// Whether the record of sectors seen is asked about (unless the exact tracker's
    /// distances stand for the shadow) and has outgrown a core's caches, so that its words
    /// are worth asking for ahead.
    #[inline]
    fn asks_seen(&self) -> bool {
        let exact = matches!(self.meter, Some(ReuseMeter::Exact(_)));
        !(exact && self.classes.shadow_is_a_stack()) && self.classes.seen_spread()
    }

    #[inline]
    fn tag(&mut self, r: &Request, set: u32) -> Tag {
        let d = self.meter.as_mut().and_then(|m| m.access(r.line, set));
        if !self.classes.shadow_is_a_stack() {
            return self.classes.tag(r);
        }
        match &self.meter {
            Some(ReuseMeter::Exact(_)) => self.classes.tag_at_distance(d.and_then(|d| d.whole)),
            Some(ReuseMeter::Sampled(_)) => self.classes.tag_near(r, d.and_then(|d| d.whole)),
            None => self.classes.tag(r),
        }
    }
}

/// The classifiers and reuse meters of a session's SMs, measuring a reference stream's
/// requests from its rows.
pub struct ReuseStage {
    /// By the session's slots.
    slots: Vec<Option<Apart>>,
    index: SetIndexFn,
    coalescer: Coalescer,
    slot_of_sm: Vec<usize>,
    sms: u32,
    /// The open stream's slot and its number of instructions, when its SM is simulated.
    stream: Option<(usize, usize)>,
    grouping: Grouping,
    /// Requests measured: the session's own count must be the same when they meet again.
    requests: u64,
    ahead: Ahead,
}

/// How far the exact tracker's look-ups were asked for ahead of the rows measured, where its
/// lines lie far apart ([`Apart::far_apart`]), so that the cache misses of several rows
/// overlap instead of following one another: a line's last use `SLOT_AHEAD` rows before it
/// is measured, the marks at that last use `MARKS_AHEAD` rows before. Where the record of
/// sectors seen is asked (`--reuse off` and sampled runs; exact ones whose shadow is not an
/// LRU stack) and has outgrown a core's caches (lines at random over GiBs), its words are
/// asked for `SEEN_AHEAD` rows before ([`Ahead::fetch_seen`]; the corpus's random mix with
/// `--reuse off`: 1.6 s to 1.2 s).
#[derive(Clone, Copy, Debug, Default)]
struct Ahead {
    /// The rows these are of (their addresses' column).
    rows: usize,
    slot: usize,
    marks: usize,
    seen: usize,
}

const SLOT_AHEAD: usize = 16;
const MARKS_AHEAD: usize = 8;
const SEEN_AHEAD: usize = 12;

impl Ahead {
    /// Starts again from row `start` unless it is already at or past it in `cols`: the rows
    /// of the chunk, or of the warp instruction the last chunk left waiting.
    #[inline]
    fn of(&mut self, cols: &Columns, start: usize) {
        let rows = cols.addr.as_ptr() as usize;
        if rows != self.rows || self.slot.max(self.seen) < start {
            *self = Ahead {
                rows,
                slot: start,
                marks: start,
                seen: start,
            };
        }
    }

    /// Asks for the words of the record of sectors seen that rows up to `end` of `cols` (and
    /// a few after) will read.
    #[inline]
    fn fetch_seen(
        &mut self,
        c: &mut Classifier,
        coalescer: &Coalescer,
        cols: &Columns,
        start: usize,
        end: usize,
    ) {
        self.of(cols, start);
        lines_up_to(&mut self.seen, end + SEEN_AHEAD, cols, coalescer, |l| {
            c.prefetch_seen(l)
        });
    }

    /// Asks for what measuring rows up to `end` of `cols` (and a few after) will read.
    #[inline]
    fn fetch(
        &mut self,
        t: &crate::reuse::ReuseTracker,
        coalescer: &Coalescer,
        cols: &Columns,
        start: usize,
        end: usize,
    ) {
        self.of(cols, start);
        lines_up_to(&mut self.slot, end + SLOT_AHEAD, cols, coalescer, |l| {
            t.prefetch_line(l)
        });
        lines_up_to(&mut self.marks, end + MARKS_AHEAD, cols, coalescer, |l| {
            t.prefetch_marks(l)
        });
    }
}

/// Calls `f` with the line of each row of `cols` from `*cursor` up to `upto` (or the last
/// row), moving the cursor past them.
#[inline]
fn lines_up_to(
    cursor: &mut usize,
    upto: usize,
    cols: &Columns,
    coalescer: &Coalescer,
    mut f: impl FnMut(u64),
) {
    while *cursor < upto.min(cols.len()) {
        f(coalescer.line_of(cols.addr[*cursor]));
        *cursor += 1;
    }
}

impl ReuseStage {
    /// Starts measuring the reference stream whose header the session is given next
    /// ([`Session::begin_stream`]); the tags of the previous stream's last requests, which
    /// the session takes before it (it ends that stream first), are added to `tags`.
    pub fn begin_stream(&mut self, header: &Kernel, tags: &mut Vec<u8>) {
        self.end_stream(tags);
        let (_, slot) = stream_slot(&self.slot_of_sm, self.sms, header);
        self.stream = slot
            .filter(|&s| self.slots.get(s).is_some_and(|t| t.is_some()))
            .map(|s| (s, header.instructions.len()));
    }

    /// Measures the requests `rows` make, in order, adding their tags to `tags`: the warp
    /// instructions the session simulates when it is given these rows (`grouping.rs`).
    pub fn measure(&mut self, rows: &Columns, tags: &mut Vec<u8>) {
        if self.stream.is_none() {
            return;
        }
        // A new chunk, possibly in the room of the last one (a reader reuses its buffers): what
        // was asked for ahead was of other rows.
        self.ahead = Ahead::default();
        let mut grouping = std::mem::take(&mut self.grouping);
        grouping.feed(rows, 0..rows.len(), |c, r| self.instruction(c, r, tags));
        self.grouping = grouping;
    }

    /// Whether it asked for its exact trackers' look-ups ahead of the rows ([`Ahead`]).
    #[cfg(test)]
    pub(crate) fn looked_ahead(&self) -> bool {
        self.ahead.rows != 0
    }

    /// The tags of the warp instruction left waiting, as the stream ends (the session's
    /// [`Session::end_stream`] simulates it).
    pub fn end_stream(&mut self, tags: &mut Vec<u8>) {
        let mut grouping = std::mem::take(&mut self.grouping);
        grouping.end(|c, r| self.instruction(c, r, tags));
        self.stream = None;
    }

    /// One warp instruction, as `Stream::warp_instruction` splits it.
    #[inline]
    fn instruction(&mut self, cols: &Columns, range: std::ops::Range<usize>, tags: &mut Vec<u8>) {
        let Some((slot, insts)) = self.stream else {
            return;
        };
        let (used, write) = reaching(cols, range.clone());
        if used == 0 || cols.inst[range.start] as usize >= insts {
            return;
        }
        let ReuseStage {
            slots,
            index,
            coalescer,
            requests,
            ahead,
            ..
        } = self;
        let Some(apart) = slots.get_mut(slot).and_then(|t| t.as_mut()) else {
            return;
        };
        if let Some(t) = apart.far_apart() {
            ahead.fetch(t, coalescer, cols, range.start, range.end);
        }
        if apart.asks_seen() {
            ahead.fetch_seen(&mut apart.classes, coalescer, cols, range.start, range.end);
        }
        for r in range {
            if !model_flags(cols.flags[r]).1.reaches_l1() {
                continue;
            }
            coalescer.split(cols.addr[r], cols.size[r] as u64, write, |c| {
                let set = index.set(c.request.line);
                tags.push(apart.tag(&c.request, set) as u8);
                *requests += 1;
            });
        }
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
    /// Requests the simulated SMs have taken so far.
    fn requests_simulated(&self) -> u64 {
        self.sims.iter().map(|s| s.order).sum()
    }

    /// Moves the classifiers and reuse meters out into a stage that measures reference
    /// streams (see the module's text). `None` while a kernel is open, when they are already
    /// away, or when the cache cannot be classified apart (`wtwa`).
    pub fn detach_reuse(&mut self) -> Option<ReuseStage> {
        let first = self.sims.first()?;
        if self.measured_apart
            || !matches!(self.feeding, Feeding::Whole)
            || !first.cache.classifies_apart()
        {
            return None;
        }
        let index = first.cache.set_index().clone();
        let slots = self
            .sims
            .iter_mut()
            .map(|s| {
                let classes = s.cache.take_classifier()?;
                Some(Apart {
                    classes,
                    meter: s.reuse.take(),
                })
            })
            .collect();
        self.measured_apart = true;
        self.requests_before_apart = self.requests_simulated();
        Some(ReuseStage {
            slots,
            index,
            coalescer: Coalescer::new(Coalescing::None, self.geometry(1)),
            slot_of_sm: self.slot_of_sm.clone(),
            sms: self.cfg.gpu.sms,
            stream: None,
            grouping: Grouping::default(),
            requests: 0,
            ahead: Ahead::default(),
        })
    }

    /// Ends the open stream and takes the classifiers and meters back from `stage`. Fails
    /// when the stage measured other requests than the session simulated (rows given to one
    /// and not the other, tags missing or left over, another session's stage).
    pub fn attach_reuse(
        &mut self,
        stage: ReuseStage,
        observer: &mut dyn super::Observer,
    ) -> Result<(), SimError> {
        self.end_stream(observer);
        if !self.measured_apart || stage.slots.len() != self.sims.len() {
            return Err(SimError::Config(
                "these classifiers are not this session's".into(),
            ));
        }
        let in_step = stage.requests == self.requests_simulated() - self.requests_before_apart
            && !std::mem::take(&mut self.out_of_step);
        for (s, apart) in self.sims.iter_mut().zip(stage.slots) {
            if let Some(a) = apart {
                s.cache.put_classifier(a.classes);
                s.reuse = a.meter;
            }
        }
        self.measured_apart = false;
        if !in_step {
            return Err(SimError::Config(
                "a reference stream's rows and the tags measured apart were out of step".into(),
            ));
        }
        Ok(())
    }
}
