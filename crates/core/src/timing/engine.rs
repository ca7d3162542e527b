//! One SM's L1 under the timing model: delayed LRU stacks, MSHRs and the issue loop. The
//! [`TimingRules`] choose, behaviour by behaviour, between our model and the released model
//! of Nugteren et al. (2014).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use super::cta_results::CtaResults;
use crate::cache::set_index::SetIndexFn;
use crate::config::{
    Arrivals, CacheConfig, EffectOrder, HitRule, MshrCheck, TimingConfig, TimingRules,
};
use crate::l2::L2Model;
use crate::linemap::LineMap;
use crate::reuse::{Histogram, Marks};
use crate::rng::Rng;

/// How one issue attempt of a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Hit,
    Miss,
    /// It needed a new MSHR and none was free: not issued, the warp retries later.
    Cancelled,
}

/// One issue attempt of a request (the columns of Nugteren et al.'s (2014) tables 3-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedRequest {
    pub time: u64,
    pub cta: u32,
    /// Warp index within the CTA.
    pub warp: u32,
    pub inst: u32,
    pub line: u64,
    pub set: u32,
    /// Distance in the line's set stack at issue (`None` = ∞).
    pub distance: Option<u64>,
    pub status: Status,
    /// The line was in flight (requested, not yet arrived).
    pub in_flight: bool,
    pub mshrs_before: u32,
    pub mshrs_after: u32,
    /// Effect time minus issue time (0 for a cancelled attempt).
    pub latency: u64,
    /// When the request takes effect in the cache (its stack update).
    pub effect_at: u64,
    /// The first request of its warp instruction (a retry after a refusal included).
    pub starts_instruction: bool,
}

/// Per-run counts used to derive the miss classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunCounts {
    /// Load requests issued (cancelled attempts not counted).
    pub requests: u64,
    pub misses: u64,
    /// Requests whose distance was ∞ (never in the stack when issued).
    pub infinite: u64,
    /// Misses that took a new MSHR and fetched their line from memory.
    pub fills: u64,
}

impl RunCounts {
    pub fn add(&mut self, o: &RunCounts) {
        self.requests += o.requests;
        self.misses += o.misses;
        self.infinite += o.infinite;
        self.fills += o.fills;
    }
}

/// What a run tells its caller while it goes.
pub trait Hooks {
    /// Rows issued so far in this kernel; `false` cancels.
    fn progress(&mut self, _rows: u64) -> bool {
        true
    }
    /// Every issue attempt, cancelled ones included.
    fn request(&mut self, _r: &TimedRequest) {}
    /// Instructions of the kernel found since it began (a streamed kernel, as its CTAs are
    /// read), told before any request of theirs ([`super::CtaFeed`]).
    fn more_instructions(&mut self, _added: &[crate::trace::Instruction]) {}
    /// Every request the L2 was sent (with a simulated L2), after the L1 request that sent
    /// it.
    fn l2(&mut self, _event: &crate::l2::L2Event) {}
}

/// What one run of one kernel on one SM produced.
#[derive(Clone, Debug, Default)]
pub struct KernelRun {
    pub counts: RunCounts,
    pub per_inst: Vec<RunCounts>,
    pub accesses_inst: Vec<u64>,
    pub transactions_inst: Vec<u64>,
    pub stores_inst: Vec<(u64, u64)>,
    /// Per CTA: requests, misses, accesses, transactions and stores, in launch order.
    pub ctas: CtaResults,
    pub warp_instructions: u64,
    pub rows: u64,
}

impl KernelRun {
    /// Makes room in the per-instruction tables for instructions `0..n` (a streamed kernel's
    /// instructions may be found as its CTAs are read).
    pub fn take_insts(&mut self, n: usize) {
        if n > self.per_inst.len() {
            self.per_inst.resize(n, RunCounts::default());
            self.accesses_inst.resize(n, 0);
            self.transactions_inst.resize(n, 0);
            self.stores_inst.resize(n, (0, 0));
        }
    }
}

/// Everything the full run reports beyond counts.
#[derive(Clone, Debug, Default)]
pub struct TimingStats {
    pub time_steps: u64,
    pub idle_steps: u64,
    pub mshr_stalls: u64,
    pub fills: u64,
    /// Misses that found their line in flight for another warp: duplicate loads that ride on
    /// its fetch (Dasgupta 2011 §3.2.4; a warp's own second request for a line is not one).
    pub duplicates: u64,
    pub latency_sum: u64,
    /// `latency_counts[l]` = requests whose effect came `l` steps after issue (the last bin
    /// also holds longer ones).
    pub latency_counts: Vec<u64>,
    /// Issue steps at each MSHR occupancy (after the step).
    pub occupancy_counts: Vec<u64>,
    /// (time, MSHRs in use) samples, evenly spaced, at most [`MAX_SAMPLES`].
    pub occupancy_series: Vec<(u64, u32)>,
    sample_every: u64,
    /// Distances in the set stacks at issue.
    pub set_hist: Histogram,
    /// The same distances exactly (`u64::MAX` = ∞), kept for the released model's report
    /// ([`crate::config::Classes::Released`]).
    pub distance_counts: Option<FxHashMap<u64, u64>>,
}

pub const MAX_SAMPLES: usize = 512;
pub(super) const MAX_LATENCY_BIN: usize = 1 << 16;

/// The timing parameters of one run (the comparison runs switch one off).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub hit_latency: u64,
    pub miss_latency: u64,
    /// A fill the simulated L2 hits.
    pub l2_latency: u64,
    pub stddev: f64,
    pub mshrs: u32,
    pub mshrs_per_warp: u32,
    pub clip: bool,
    pub warp_delay: bool,
    pub rules: TimingRules,
}

impl Params {
    pub fn of(t: &TimingConfig) -> Self {
        let unlimited = |v: u32| if v == 0 { u32::MAX } else { v };
        Params {
            hit_latency: t.hit_latency as u64,
            miss_latency: t.miss_latency as u64,
            l2_latency: t.l2_latency as u64,
            stddev: t.miss_latency_stddev,
            mshrs: unlimited(t.mshrs),
            mshrs_per_warp: unlimited(t.mshrs_per_warp),
            clip: t.clip,
            warp_delay: t.warp_delay,
            rules: t.rules,
        }
    }
}

/// Per-set LRU stacks of the lines' last effects.
struct Stacks {
    sets: Vec<Marks>,
    /// Line -> its mark's position in its set's stack + 1 (0 = never used).
    pos: LineMap<u32>,
}

impl Stacks {
    fn distance(&self, line: u64, set: u32) -> Option<u64> {
        match self.pos.get(line) {
            0 => None,
            p => Some(self.sets[set as usize].count_after(p as usize - 1)),
        }
    }
    fn touch(&mut self, line: u64, set: u32) {
        let marks = &mut self.sets[set as usize];
        let e = self.pos.entry(line);
        if *e != 0 {
            marks.remove(*e as usize - 1);
        }
        *e = marks.push() as u32 + 1;
    }
}

/// A pending stack update: its order (time, then rank, then issue order, packed by
/// [`effect_key`] into one number, so the queue compares one value), line, set, is a miss.
type Effect = (u128, u64, u32, bool);

/// The order of a stack update: by time, then rank, then issue order (below 2^63).
fn effect_key(time: u64, rank: u8, seq: u64) -> u128 {
    ((time as u128) << 64) | ((rank as u128 & 1) << 63) | (seq as u128 & (u64::MAX >> 1) as u128)
}

/// One SM's L1 and clock; keeps its state across kernels.
pub struct Engine {
    pub(super) p: Params,
    ways: u64,
    set_of: SetIndexFn,
    sets: u32,
    stacks: Stacks,
    /// Pending stack updates ([`Effect`]); the rank puts hits first under
    /// [`EffectOrder::HitsFirst`].
    effects: BinaryHeap<Reverse<Effect>>,
    seq: u64,
    /// [`MshrCheck::FirstThread`]: lines with a miss whose effect is pending, and their count
    /// at the start of the step.
    pub(super) pending: FxHashSet<u64>,
    pub(super) pending_at_step: usize,
    /// Line -> arrival time of its latest fill, the warp whose miss started it and whether
    /// the L2 had the line (those that arrived before the current step are let go once the
    /// map doubles).
    in_flight: FxHashMap<u64, (u64, u32, bool)>,
    /// How many lines `in_flight` may hold before it lets go of those arrived, and the least
    /// that is ([`PRUNE_MIN`]; the tests let go at every fill, or never).
    pub(super) prune_at: usize,
    pub(super) prune_min: usize,
    /// MSHR releases: (arrival time, warp holding it).
    releases: BinaryHeap<Reverse<(u64, u32)>>,
    mshrs_used: u32,
    warp_mshrs: FxHashMap<u32, u32>,
    pub(super) now: u64,
    rng: Rng,
    /// The shared L2 that fills come from, while this SM holds it (`sim::timed` hands it
    /// from SM to SM as their turns come); `None`: every fill takes the miss latency.
    pub(crate) l2: Option<Box<L2Model>>,
    /// The kernel running (counted from 0 over the engine's kernels), for the L2's tables.
    pub(super) kernel_index: u32,
    /// Every sector of a line: what a fill fetches from the L2.
    line_sectors: u32,
    pub stats: TimingStats,
    /// Record every issue attempt (tests and views of small traces).
    pub log: Option<Vec<TimedRequest>>,
    /// Issue thread portions lane by lane even where the lanes keep in step (the tests'
    /// reference for issuing them position by position).
    pub(super) lane_by_lane: bool,
    /// Warps that fell out of step (the tests check that their cases reach that path).
    #[cfg(test)]
    pub(super) fell_out_of_step: u64,
    /// The most slots of threads' positions a kernel took (the tests check that they are
    /// those of the resident CTAs, not the kernel's).
    #[cfg(test)]
    pub(super) most_slots: u32,
    /// The most CTAs a run held per-CTA state for (slot numbers, and counts not yet written).
    #[cfg(test)]
    pub(super) most_held: usize,
}

/// The fewest lines the map of fills in flight holds before it lets go of those arrived.
const PRUNE_MIN: usize = 1 << 12;

/// Why a kernel cannot run in timing mode.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimingError {
    #[error("a CTA of {threads} threads does not fit on an SM (limits: {max_threads} threads, {max_warps} warps)")]
    CtaTooLarge {
        threads: u32,
        max_threads: u32,
        max_warps: u32,
    },
    #[error("the timing model needs per-thread streams; this kernel is a recorded issue order (e.g. a Dinero trace)")]
    IssuedOrder,
    #[error("row {row} of CTA {cta}'s rows is of thread {thread}: a CTA's rows must be its own threads', grouped by thread in increasing order")]
    CtaRows { cta: u32, row: u64, thread: u32 },
    #[error("CTA {cta} came after CTA {after}: CTAs must come in increasing order")]
    CtaOrder { cta: u32, after: u32 },
    #[error("warps of {threads} threads: the released model's issue unit (thread portions) takes warps of at most {max}")]
    WarpTooWide { threads: u32, max: u32 },
    #[error("cancelled")]
    Cancelled,
}

impl Engine {
    /// `fully_associative`: one set of all the cache's lines (the associativity comparison).
    pub fn new(cache: &CacheConfig, p: Params, fully_associative: bool, seed: u64) -> Self {
        let (sets, ways) = if fully_associative {
            (1, cache.lines())
        } else {
            (cache.sets(), cache.ways_effective() as u64)
        };
        let set_of = if fully_associative {
            SetIndexFn::new(&crate::config::SetIndex::Modulo, 1, cache.line_bytes)
        } else {
            SetIndexFn::new(&cache.set_index, sets, cache.line_bytes)
        };
        Engine {
            p,
            ways,
            set_of,
            sets,
            stacks: Stacks {
                sets: (0..sets).map(|_| Marks::new()).collect(),
                pos: LineMap::default(),
            },
            effects: BinaryHeap::new(),
            seq: 0,
            pending: FxHashSet::default(),
            pending_at_step: 0,
            in_flight: FxHashMap::default(),
            prune_at: PRUNE_MIN,
            prune_min: PRUNE_MIN,
            releases: BinaryHeap::new(),
            mshrs_used: 0,
            warp_mshrs: FxHashMap::default(),
            now: 0,
            rng: Rng::new(seed),
            l2: None,
            kernel_index: 0,
            line_sectors: cache.sector_mask(),
            stats: TimingStats {
                sample_every: 1,
                distance_counts: (p.rules.classes == crate::config::Classes::Released)
                    .then(FxHashMap::default),
                ..Default::default()
            },
            log: None,
            lane_by_lane: false,
            #[cfg(test)]
            fell_out_of_step: 0,
            #[cfg(test)]
            most_slots: 0,
            #[cfg(test)]
            most_held: 0,
        }
    }

    /// The latency of a fill: λmin (or the L2's latency, where the L2 had the line) plus
    /// the half-normal part.
    fn miss_latency(&mut self, l2_hit: bool) -> u64 {
        let least = if l2_hit {
            self.p.l2_latency
        } else {
            self.p.miss_latency
        };
        if self.p.stddev == 0.0 {
            return least;
        }
        let extra = (self.rng.normal() * self.p.stddev).round().abs();
        least + extra.min(1e12) as u64
    }

    /// A new fill of `line` for instruction `inst`: asks the L2, where there is one, whether
    /// it has the line.
    fn fill_from_l2(&mut self, line: u64, inst: u32) -> bool {
        match &mut self.l2 {
            Some(l2) => l2.fetch(line, self.line_sectors, self.kernel_index, inst),
            None => false,
        }
    }

    /// The SM's clock (time steps).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Moves the clock on to `t`, idle until then (an SM waiting for the others to finish a
    /// kernel before the next starts); a clock past `t` stays.
    pub fn wait_until(&mut self, t: u64) {
        if t > self.now {
            self.stats.idle_steps += t - self.now;
            self.now = t;
        }
    }

    /// Frees the MSHRs whose line has arrived by `now`.
    fn release(&mut self) {
        while let Some(&Reverse((t, w))) = self.releases.peek() {
            if t > self.now {
                break;
            }
            self.releases.pop();
            self.mshrs_used -= 1;
            if let Some(c) = self.warp_mshrs.get_mut(&w) {
                *c -= 1;
                if *c == 0 {
                    self.warp_mshrs.remove(&w);
                }
            }
        }
    }

    /// Applies the stack updates due before `before` (ties in issue order, or hits first).
    pub(super) fn apply_effects(&mut self, before: u64) {
        while let Some(&Reverse((key, line, set, miss))) = self.effects.peek() {
            if (key >> 64) as u64 >= before {
                break;
            }
            self.effects.pop();
            self.stacks.touch(line, set);
            if miss && self.p.rules.mshr_check == MshrCheck::FirstThread {
                self.pending.remove(&line);
            }
        }
    }

    fn push_effect(&mut self, at: u64, line: u64, set: u32, miss: bool) {
        let rank = (miss && self.p.rules.effect_order == EffectOrder::HitsFirst) as u8;
        self.effects
            .push(Reverse((effect_key(at, rank, self.seq), line, set, miss)));
        self.seq += 1;
    }

    /// Forgets everything (a kernel under [`crate::config::Kernels::Cold`]).
    pub(super) fn reset(&mut self) {
        self.stacks = Stacks {
            sets: (0..self.sets).map(|_| Marks::new()).collect(),
            pos: LineMap::default(),
        };
        self.effects.clear();
        self.in_flight.clear();
        self.releases.clear();
        self.mshrs_used = 0;
        self.warp_mshrs.clear();
        self.pending.clear();
    }

    /// Whether a request at this distance counts as a miss in the reported numbers.
    pub(super) fn reported_miss(&self, distance: Option<u64>) -> bool {
        match (distance, self.p.rules.hit_rule) {
            (None, _) => true,
            (Some(d), HitRule::BelowWays) => d >= self.ways,
            (Some(d), HitRule::AtMostWays) => d > self.ways,
        }
    }

    /// One request of warp `gw`'s instruction `inst` at the current time; `first`: the
    /// warp's first request of this issue (the one [`MshrCheck::FirstThread`] may stall).
    pub(super) fn request(
        &mut self,
        line: u64,
        (gw, inst): (u32, u32),
        first: bool,
    ) -> (Status, TimedRequest) {
        self.release();
        self.apply_effects(self.now);
        let set = self.set_of.set(line);
        let now = self.now;
        let flight = self.in_flight.get(&line).copied();
        let fill = flight.map(|f| f.0);
        // A line arriving in this very step is there for a request to it (Nugteren et al.
        // 2014, table 5, time 2); other effects of this step come after the step's lookups
        // (tables 3, 4). Under `Arrivals::AfterGroup` the loop applies them between groups.
        let distance = if fill == Some(now) && self.p.rules.arrivals == Arrivals::OwnLine {
            Some(0)
        } else {
            self.stacks.distance(line, set)
        };
        let in_flight = fill.is_some_and(|f| f > now);
        let before = self.mshrs_used;
        let mut rec = TimedRequest {
            time: now,
            cta: 0,
            warp: 0,
            inst: 0,
            line,
            set,
            distance,
            status: Status::Hit,
            in_flight,
            mshrs_before: before,
            mshrs_after: before,
            latency: 0,
            effect_at: now,
            starts_instruction: false,
        };
        if distance.is_some_and(|d| d < self.ways) {
            let at = now + self.p.hit_latency;
            self.push_effect(at, line, set, false);
            rec.latency = self.p.hit_latency;
            rec.effect_at = at;
            return (Status::Hit, rec);
        }
        let first_thread = self.p.rules.mshr_check == MshrCheck::FirstThread;
        if first_thread && first && self.pending_at_step >= self.p.mshrs as usize {
            rec.status = Status::Cancelled;
            return (Status::Cancelled, rec);
        }
        let at = if let Some((f, by, l2_hit)) = flight.filter(|_| in_flight) {
            // Shares the line's MSHR entry.
            if by != gw {
                self.stats.duplicates += 1;
            }
            let own = now + self.miss_latency(l2_hit);
            if self.p.clip {
                own.min(f)
            } else {
                own
            }
        } else {
            let held = self.warp_mshrs.get(&gw).copied().unwrap_or(0);
            if !first_thread && (self.mshrs_used >= self.p.mshrs || held >= self.p.mshrs_per_warp) {
                rec.status = Status::Cancelled;
                return (Status::Cancelled, rec);
            }
            let l2_hit = self.fill_from_l2(line, inst);
            let at = now + self.miss_latency(l2_hit);
            self.mshrs_used += 1;
            *self.warp_mshrs.entry(gw).or_insert(0) += 1;
            self.releases.push(Reverse((at, gw)));
            self.in_flight.insert(line, (at, gw, l2_hit));
            if self.in_flight.len() >= self.prune_at {
                // Fills that arrived before this step are never looked at again: a kernel's
                // map holds the lines in flight, not every line it missed.
                self.in_flight.retain(|_, &mut (fill, _, _)| fill >= now);
                self.prune_at = (2 * self.in_flight.len()).max(self.prune_min);
            }
            self.stats.fills += 1;
            at
        };
        if first_thread {
            self.pending.insert(line);
        }
        self.push_effect(at, line, set, true);
        rec.status = Status::Miss;
        rec.mshrs_after = self.mshrs_used;
        rec.latency = at - now;
        rec.effect_at = at;
        (Status::Miss, rec)
    }

    /// Lets every pending request take effect (between kernels).
    pub(super) fn drain(&mut self) {
        let last_effect = self
            .effects
            .iter()
            .map(|Reverse(e)| (e.0 >> 64) as u64)
            .max();
        let last_release = self.releases.iter().map(|Reverse(r)| r.0).max();
        if let Some(t) = last_effect.max(last_release) {
            self.now = self.now.max(t + 1);
        }
        self.release();
        self.apply_effects(self.now);
        self.in_flight.clear();
    }

    pub(super) fn sample_occupancy(&mut self) {
        let used = self.mshrs_used as usize;
        let oc = &mut self.stats.occupancy_counts;
        if oc.len() <= used {
            oc.resize(used + 1, 0);
        }
        oc[used] += 1;
        if self.now % self.stats.sample_every == 0 {
            self.stats
                .occupancy_series
                .push((self.now, self.mshrs_used));
            if self.stats.occupancy_series.len() >= MAX_SAMPLES {
                // Keep every other sample and halve the rate.
                let kept: Vec<_> = self
                    .stats
                    .occupancy_series
                    .iter()
                    .copied()
                    .filter(|&(t, _)| t % (self.stats.sample_every * 2) == 0)
                    .collect();
                self.stats.occupancy_series = kept;
                self.stats.sample_every *= 2;
            }
        }
    }
}
