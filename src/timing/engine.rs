//! One SM's L1 under the timing model: delayed LRU stacks, MSHRs and the warp queue.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::cache::set_index::SetIndexFn;
use crate::coalesce::{Coalesced, Coalescer, Geometry};
use crate::config::{CacheConfig, Coalescing, GpuConfig, TimingConfig};
use crate::linemap::LineMap;
use crate::reuse::{Histogram, Marks};
use crate::rng::Rng;
use crate::schedule::{WarpThreads, BARRIER, READY};
use crate::trace::Kernel;

/// How one issue attempt of a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Hit,
    Miss,
    /// It needed a new MSHR and none was free: not issued, the warp retries later.
    Cancelled,
}

/// One issue attempt of a request (the columns of seed 001's tables 3-5).
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
}

/// What one run of one kernel on one SM produced.
#[derive(Clone, Debug, Default)]
pub struct KernelRun {
    pub counts: RunCounts,
    pub per_inst: Vec<RunCounts>,
    pub per_cta: Vec<RunCounts>,
    /// Loads: hits/misses per instruction and CTA (full run only reads them).
    pub inst_hits: Vec<u64>,
    pub cta_hits: Vec<u64>,
    pub accesses_inst: Vec<u64>,
    pub accesses_cta: Vec<u64>,
    pub transactions_inst: Vec<u64>,
    pub transactions_cta: Vec<u64>,
    pub stores_inst: Vec<(u64, u64)>,
    pub stores_cta: Vec<(u64, u64)>,
    pub warp_instructions: u64,
    pub rows: u64,
}

/// Everything the full run reports beyond counts.
#[derive(Clone, Debug, Default)]
pub struct TimingStats {
    pub time_steps: u64,
    pub idle_steps: u64,
    pub mshr_stalls: u64,
    pub fills: u64,
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
}

pub const MAX_SAMPLES: usize = 512;
const MAX_LATENCY_BIN: usize = 1 << 16;

/// The timing parameters of one run (the comparison runs switch one off).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub hit_latency: u64,
    pub miss_latency: u64,
    pub stddev: f64,
    pub mshrs: u32,
    pub mshrs_per_warp: u32,
    pub clip: bool,
    pub warp_delay: bool,
}

impl Params {
    pub fn of(t: &TimingConfig) -> Self {
        let unlimited = |v: u32| if v == 0 { u32::MAX } else { v };
        Params {
            hit_latency: t.hit_latency as u64,
            miss_latency: t.miss_latency as u64,
            stddev: t.miss_latency_stddev,
            mshrs: unlimited(t.mshrs),
            mshrs_per_warp: unlimited(t.mshrs_per_warp),
            clip: t.clip,
            warp_delay: t.warp_delay,
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

/// One SM's L1 and clock; keeps its state across kernels.
pub struct Engine {
    p: Params,
    ways: u64,
    line_bytes: u32,
    set_of: SetIndexFn,
    stacks: Stacks,
    /// Pending stack updates: (time, issue order, line, set).
    effects: BinaryHeap<Reverse<(u64, u64, u64, u32)>>,
    seq: u64,
    /// Line -> arrival time of its latest fill.
    in_flight: FxHashMap<u64, u64>,
    /// MSHR releases: (arrival time, warp holding it).
    releases: BinaryHeap<Reverse<(u64, u32)>>,
    mshrs_used: u32,
    warp_mshrs: FxHashMap<u32, u32>,
    now: u64,
    rng: Rng,
    pub stats: TimingStats,
    /// Record every issue attempt (tests and views of small traces).
    pub log: Option<Vec<TimedRequest>>,
}

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
    #[error("cancelled")]
    Cancelled,
}

const HW_WARP: u32 = 32;

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
            line_bytes: cache.line_bytes,
            set_of,
            stacks: Stacks {
                sets: (0..sets).map(|_| Marks::new()).collect(),
                pos: LineMap::default(),
            },
            effects: BinaryHeap::new(),
            seq: 0,
            in_flight: FxHashMap::default(),
            releases: BinaryHeap::new(),
            mshrs_used: 0,
            warp_mshrs: FxHashMap::default(),
            now: 0,
            rng: Rng::new(seed),
            stats: TimingStats {
                sample_every: 1,
                ..Default::default()
            },
            log: None,
        }
    }

    pub fn line_bytes(&self) -> u32 {
        self.line_bytes
    }

    fn miss_latency(&mut self) -> u64 {
        if self.p.stddev == 0.0 {
            return self.p.miss_latency;
        }
        let extra = (self.rng.normal() * self.p.stddev).round().abs();
        self.p.miss_latency + extra.min(1e12) as u64
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

    /// Applies the stack updates due before `now` (ties in issue order).
    fn apply_effects(&mut self, before: u64) {
        while let Some(&Reverse((t, _, line, set))) = self.effects.peek() {
            if t >= before {
                break;
            }
            self.effects.pop();
            self.stacks.touch(line, set);
        }
    }

    fn push_effect(&mut self, at: u64, line: u64, set: u32) {
        self.effects.push(Reverse((at, self.seq, line, set)));
        self.seq += 1;
    }

    /// One request of warp `gw` at the current time.
    fn request(&mut self, line: u64, gw: u32) -> (Status, TimedRequest) {
        self.release();
        self.apply_effects(self.now);
        let set = self.set_of.set(line);
        let now = self.now;
        let fill = self.in_flight.get(&line).copied();
        // A line arriving in this very step is there for a request to it (seed 001 table 5,
        // time 2); other effects of this step come after the step's lookups (tables 3, 4).
        let distance = if fill == Some(now) {
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
        };
        if distance.is_some_and(|d| d < self.ways) {
            let at = now + self.p.hit_latency;
            self.push_effect(at, line, set);
            rec.latency = self.p.hit_latency;
            rec.effect_at = at;
            return (Status::Hit, rec);
        }
        let at = if let Some(f) = fill.filter(|_| in_flight) {
            // Shares the line's MSHR entry.
            let own = now + self.miss_latency();
            if self.p.clip {
                own.min(f)
            } else {
                own
            }
        } else {
            let held = self.warp_mshrs.get(&gw).copied().unwrap_or(0);
            if self.mshrs_used >= self.p.mshrs || held >= self.p.mshrs_per_warp {
                rec.status = Status::Cancelled;
                return (Status::Cancelled, rec);
            }
            let at = now + self.miss_latency();
            self.mshrs_used += 1;
            *self.warp_mshrs.entry(gw).or_insert(0) += 1;
            self.releases.push(Reverse((at, gw)));
            self.in_flight.insert(line, at);
            self.stats.fills += 1;
            at
        };
        self.push_effect(at, line, set);
        rec.status = Status::Miss;
        rec.mshrs_after = self.mshrs_used;
        rec.latency = at - now;
        rec.effect_at = at;
        (Status::Miss, rec)
    }

    /// Lets every pending request take effect (between kernels).
    fn drain(&mut self) {
        let last_effect = self.effects.iter().map(|Reverse(e)| e.0).max();
        let last_release = self.releases.iter().map(|Reverse(r)| r.0).max();
        if let Some(t) = last_effect.max(last_release) {
            self.now = self.now.max(t + 1);
        }
        self.release();
        self.apply_effects(self.now);
        self.in_flight.clear();
    }

    fn sample_occupancy(&mut self) {
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

    /// Runs one kernel's CTAs `sm, sm + sms, ...` on this SM. `progress` gets rows done and
    /// returns `false` to cancel.
    #[allow(clippy::too_many_arguments)]
    pub fn run_kernel(
        &mut self,
        k: &Kernel,
        sm: u32,
        gpu: &GpuConfig,
        warp_size: u32,
        coalescing: Coalescing,
        sector_bytes: u32,
        hooks: &mut dyn Hooks,
    ) -> Result<KernelRun, TimingError> {
        if k.order == crate::trace::Order::Issued {
            return Err(TimingError::IssuedOrder);
        }
        let tpb = k.threads_per_cta().max(1);
        let ws = warp_size.max(1);
        let wpc = tpb.div_ceil(ws);
        let hw_warps = tpb.div_ceil(HW_WARP);
        if tpb > gpu.max_threads_per_sm || hw_warps > gpu.max_warps_per_sm {
            return Err(TimingError::CtaTooLarge {
                threads: tpb,
                max_threads: gpu.max_threads_per_sm,
                max_warps: gpu.max_warps_per_sm,
            });
        }
        let resident_max = gpu
            .max_ctas_per_sm
            .min(gpu.max_threads_per_sm / tpb)
            .min(gpu.max_warps_per_sm / hw_warps)
            .max(1);
        let n_ctas = k.num_ctas();
        let n_insts = k.instructions.len();
        let mut run = KernelRun {
            per_inst: vec![RunCounts::default(); n_insts],
            per_cta: vec![RunCounts::default(); n_ctas as usize],
            inst_hits: vec![0; n_insts],
            cta_hits: vec![0; n_ctas as usize],
            accesses_inst: vec![0; n_insts],
            accesses_cta: vec![0; n_ctas as usize],
            transactions_inst: vec![0; n_insts],
            transactions_cta: vec![0; n_ctas as usize],
            stores_inst: vec![(0, 0); n_insts],
            stores_cta: vec![(0, 0); n_ctas as usize],
            ..Default::default()
        };
        let starts = k.thread_starts();
        let threads = k.num_threads() as usize;
        let mut cursor: Vec<u32> = starts[..threads].to_vec();
        let end: Vec<u32> = starts[1..].to_vec();
        let geom = Geometry {
            line_bytes: self.line_bytes,
            sector_bytes,
            warp_size: ws,
            threads_per_cta: tpb,
        };
        let mut coalescer = Coalescer::new(coalescing, geom);
        let sms = gpu.sms.max(1);
        let mut my_ctas = (sm..n_ctas).step_by(sms as usize);

        let n_warps = n_ctas as usize * wpc as usize;
        let mut deferred = vec![0u8; n_warps];
        let mut cta_bar = vec![0u32; n_ctas as usize];
        let mut cta_done = vec![0u32; n_ctas as usize];
        let mut replay: FxHashMap<u32, (u32, Vec<Coalesced>)> = FxHashMap::default();
        let mut fifo: VecDeque<u32> = VecDeque::new();
        let mut delayed: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
        let mut dseq = 0u64;
        let mut resident = 0u32;
        let mut rows: Vec<u32> = Vec::with_capacity(64);
        let mut reqs: Vec<Coalesced> = Vec::with_capacity(64);
        let mut since_progress = 0u32;

        let warp_range = |gw: u32| {
            let (cta, w) = (gw / wpc, gw % wpc);
            let t0 = (cta * tpb + w * ws) as usize;
            let t1 = ((cta * tpb + w * ws + ws).min((cta + 1) * tpb)) as usize;
            (t0, t1)
        };

        // The warp-level state machine, shared by launches, returns and barrier releases.
        struct Ctx<'a> {
            k: &'a Kernel,
            wpc: u32,
            cursor: &'a mut Vec<u32>,
            end: &'a [u32],
            deferred: &'a mut Vec<u8>,
            cta_bar: &'a mut Vec<u32>,
            cta_done: &'a mut Vec<u32>,
            fifo: &'a mut VecDeque<u32>,
            resident: &'a mut u32,
            finished: Vec<u32>,
        }
        impl Ctx<'_> {
            fn warp(&mut self, range: (usize, usize)) -> WarpThreads<'_> {
                WarpThreads {
                    cursor: &mut self.cursor[range.0..range.1],
                    end: &self.end[range.0..range.1],
                }
            }
            /// A warp enters state `st` (after returning from an issue, at launch, or
            /// after a barrier).
            fn enter(&mut self, gw: u32, st: u8, range: &dyn Fn(u32) -> (usize, usize)) {
                let cta = gw / self.wpc;
                match st {
                    READY => self.fifo.push_back(gw),
                    BARRIER => {
                        self.cta_bar[cta as usize] += 1;
                        self.settle(cta, range);
                    }
                    _ => {
                        self.cta_done[cta as usize] += 1;
                        self.settle(cta, range);
                    }
                }
            }
            fn settle(&mut self, cta: u32, range: &dyn Fn(u32) -> (usize, usize)) {
                let c = cta as usize;
                if self.cta_bar[c] > 0 && self.cta_bar[c] + self.cta_done[c] == self.wpc {
                    // Every warp arrived: release the barrier.
                    self.cta_bar[c] = 0;
                    let mut states = Vec::new();
                    for w in 0..self.wpc {
                        let gw = cta * self.wpc + w;
                        if self.deferred[gw as usize] == BARRIER {
                            let r = range(gw);
                            let k = self.k;
                            let mut wt = self.warp(r);
                            wt.pass_barrier(k);
                            let st = wt.state(k);
                            self.deferred[gw as usize] = st;
                            states.push((gw, st));
                        }
                    }
                    for (gw, st) in states {
                        self.enter(gw, st, range);
                    }
                } else if self.cta_done[c] == self.wpc {
                    *self.resident -= 1;
                    self.finished.push(cta);
                }
            }
        }

        let mut ctx = Ctx {
            k,
            wpc,
            cursor: &mut cursor,
            end: &end,
            deferred: &mut deferred,
            cta_bar: &mut cta_bar,
            cta_done: &mut cta_done,
            fifo: &mut fifo,
            resident: &mut resident,
            finished: Vec::new(),
        };
        let launch = |ctx: &mut Ctx, cta: u32| {
            *ctx.resident += 1;
            for w in 0..wpc {
                let gw = cta * wpc + w;
                let r = warp_range(gw);
                let k = ctx.k;
                let st = ctx.warp(r).state(k);
                ctx.deferred[gw as usize] = st;
                ctx.enter(gw, st, &warp_range);
            }
        };
        loop {
            // Fill free CTA slots (at the start and whenever CTAs finished).
            ctx.finished.clear();
            while *ctx.resident < resident_max {
                match my_ctas.next() {
                    Some(c) => launch(&mut ctx, c),
                    None => break,
                }
            }
            // Warps whose latency has passed rejoin the queue.
            while let Some(&Reverse((t, _, gw))) = delayed.peek() {
                if t > self.now {
                    break;
                }
                delayed.pop();
                let st = ctx.deferred[gw as usize];
                ctx.enter(gw, st, &warp_range);
            }
            if !ctx.finished.is_empty() {
                continue;
            }
            let Some(gw) = ctx.fifo.pop_front() else {
                match delayed.peek() {
                    Some(&Reverse((t, _, _))) => {
                        self.stats.idle_steps += t - self.now;
                        self.now = t;
                        continue;
                    }
                    None => break,
                }
            };
            let (cta, w) = (gw / wpc, gw % wpc);
            // The requests to issue: a cancelled remainder, or the warp's next instruction.
            reqs.clear();
            let mut inst = 0u32;
            if let Some((i, rest)) = replay.remove(&gw) {
                inst = i;
                reqs.extend(rest);
            } else {
                rows.clear();
                let r = warp_range(gw);
                let st = ctx.warp(r).exec(k, &mut rows);
                ctx.deferred[gw as usize] = st;
                run.rows += rows.len() as u64;
                since_progress += 1;
                if since_progress >= 4096 {
                    since_progress = 0;
                    if !hooks.progress(run.rows) {
                        return Err(TimingError::Cancelled);
                    }
                }
                let used = coalescer.coalesce(k.columns(), &rows, &mut reqs);
                if used > 0 {
                    run.warp_instructions += 1;
                    inst = k.columns().inst[rows[0] as usize];
                    run.accesses_inst[inst as usize] += used as u64;
                    run.accesses_cta[cta as usize] += used as u64;
                }
                // Stores and atomics bypass this L1 (Fermi caches global loads only).
                if reqs.iter().any(|c| c.request.write) {
                    for c in reqs.iter().filter(|c| c.request.write) {
                        run.stores_inst[inst as usize].0 += 1;
                        run.stores_inst[inst as usize].1 += c.request.bytes as u64;
                        run.stores_cta[cta as usize].0 += 1;
                        run.stores_cta[cta as usize].1 += c.request.bytes as u64;
                    }
                    reqs.retain(|c| !c.request.write);
                }
                for c in reqs.iter() {
                    run.transactions_inst[inst as usize] += c.transactions as u64;
                    run.transactions_cta[cta as usize] += c.transactions as u64;
                }
            }
            let mut ready_at = self.now;
            let mut cancelled_at = None;
            for (i, c) in reqs.iter().enumerate() {
                let (status, mut rec) = self.request(c.request.line, gw);
                rec.cta = cta;
                rec.warp = w;
                rec.inst = inst;
                hooks.request(&rec);
                if let Some(log) = self.log.as_mut() {
                    log.push(rec);
                }
                if status == Status::Cancelled {
                    cancelled_at = Some(i);
                    break;
                }
                ready_at = ready_at.max(rec.effect_at);
                let miss = status == Status::Miss;
                let infinite = rec.distance.is_none();
                let fill = miss && !rec.in_flight;
                for counts in [
                    &mut run.counts,
                    &mut run.per_inst[inst as usize],
                    &mut run.per_cta[cta as usize],
                ] {
                    counts.requests += 1;
                    counts.misses += miss as u64;
                    counts.infinite += infinite as u64;
                    counts.fills += fill as u64;
                }
                if !miss {
                    run.inst_hits[inst as usize] += 1;
                    run.cta_hits[cta as usize] += 1;
                }
                let lat = rec.latency as usize;
                self.stats.latency_sum += rec.latency;
                let lc = &mut self.stats.latency_counts;
                let bin = lat.min(MAX_LATENCY_BIN);
                if lc.len() <= bin {
                    lc.resize(bin + 1, 0);
                }
                lc[bin] += 1;
                self.stats.set_hist.add(rec.distance);
            }
            if let Some(i) = cancelled_at {
                self.stats.mshr_stalls += 1;
                replay.insert(gw, (inst, reqs[i..].to_vec()));
                ctx.fifo.push_back(gw);
            } else if self.p.warp_delay && ready_at > self.now {
                delayed.push(Reverse((ready_at, dseq, gw)));
                dseq += 1;
            } else {
                let st = ctx.deferred[gw as usize];
                ctx.enter(gw, st, &warp_range);
            }
            self.sample_occupancy();
            self.now += 1;
        }
        self.stats.time_steps = self.now;
        self.drain();
        Ok(run)
    }
}
