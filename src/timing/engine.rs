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
use crate::schedule::{WarpThreads, BARRIER, DONE, HW_WARP, READY};
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

    /// Runs one kernel's CTAs `sm, sm + sms, ...` on this SM, from the warps' precomputed
    /// instruction streams.
    pub fn run_kernel(
        &mut self,
        k: &Kernel,
        streams: &WarpStreams,
        sm: u32,
        gpu: &GpuConfig,
        hooks: &mut dyn Hooks,
    ) -> Result<KernelRun, TimingError> {
        let wpc = streams.wpc;
        let resident_max = streams.resident_max(gpu);
        let n_ctas = k.num_ctas();
        let n_insts = k.instructions.len();
        let mut run = KernelRun {
            per_inst: vec![RunCounts::default(); n_insts],
            per_cta: vec![RunCounts::default(); n_ctas as usize],
            accesses_inst: vec![0; n_insts],
            accesses_cta: vec![0; n_ctas as usize],
            transactions_inst: vec![0; n_insts],
            transactions_cta: vec![0; n_ctas as usize],
            stores_inst: vec![(0, 0); n_insts],
            stores_cta: vec![(0, 0); n_ctas as usize],
            ..Default::default()
        };
        let sms = gpu.sms.max(1);
        let mut my_ctas = (sm..n_ctas).step_by(sms as usize);
        let mut warps = Warps::new(streams, n_ctas);
        // A warp whose instruction was cut short by an MSHR stall: (instruction, next request).
        let mut replay: FxHashMap<u32, (u32, u32)> = FxHashMap::default();
        let mut delayed: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
        let mut dseq = 0u64;
        let mut since_progress = 0u32;
        loop {
            // Fill free CTA slots (at the start and whenever CTAs finished).
            warps.finished = false;
            while warps.resident < resident_max {
                let Some(c) = my_ctas.next() else { break };
                warps.launch(c);
            }
            // Warps whose latency has passed rejoin the queue.
            while let Some(&Reverse((t, _, gw))) = delayed.peek() {
                if t > self.now {
                    break;
                }
                delayed.pop();
                warps.rejoin(gw);
            }
            if warps.finished {
                continue;
            }
            let Some(gw) = warps.fifo.pop_front() else {
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
            let (inst, first, end) = match replay.remove(&gw) {
                Some((inst, next)) => (inst, next, warps.current(gw).req_end),
                None => {
                    let e = warps.issue(gw);
                    run.rows += e.accesses as u64;
                    since_progress += 1;
                    if since_progress >= 4096 {
                        since_progress = 0;
                        if !hooks.progress(run.rows) {
                            return Err(TimingError::Cancelled);
                        }
                    }
                    if e.accesses > 0 {
                        run.warp_instructions += 1;
                    }
                    let (i, c) = (e.inst as usize, cta as usize);
                    run.accesses_inst[i] += e.accesses as u64;
                    run.accesses_cta[c] += e.accesses as u64;
                    run.transactions_inst[i] += e.transactions as u64;
                    run.transactions_cta[c] += e.transactions as u64;
                    run.stores_inst[i].0 += e.stores as u64;
                    run.stores_inst[i].1 += e.store_bytes;
                    run.stores_cta[c].0 += e.stores as u64;
                    run.stores_cta[c].1 += e.store_bytes;
                    (e.inst, e.req_start, e.req_end)
                }
            };
            let mut ready_at = self.now;
            let mut cancelled_at = None;
            for i in first..end {
                let line = streams.reqs[i as usize];
                let (status, mut rec) = self.request(line, gw);
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
                self.stats.latency_sum += rec.latency;
                let bin = (rec.latency as usize).min(MAX_LATENCY_BIN);
                let lc = &mut self.stats.latency_counts;
                if lc.len() <= bin {
                    lc.resize(bin + 1, 0);
                }
                lc[bin] += 1;
                self.stats.set_hist.add(rec.distance);
            }
            if let Some(i) = cancelled_at {
                self.stats.mshr_stalls += 1;
                replay.insert(gw, (inst, i));
                warps.fifo.push_back(gw);
            } else if self.p.warp_delay && ready_at > self.now {
                delayed.push(Reverse((ready_at, dseq, gw)));
                dseq += 1;
            } else {
                warps.rejoin(gw);
            }
            self.sample_occupancy();
            self.now += 1;
        }
        self.stats.time_steps = self.now;
        self.drain();
        Ok(run)
    }
}

/// The warps of one kernel on one SM: where each is in its stream, and the CTA bookkeeping.
struct Warps<'s> {
    streams: &'s WarpStreams,
    /// Per warp: its next event.
    pos: Vec<u32>,
    /// Per warp: its state once its current instruction completes.
    deferred: Vec<u8>,
    cta_bar: Vec<u32>,
    cta_done: Vec<u32>,
    /// Warps ready to issue, in order.
    fifo: VecDeque<u32>,
    resident: u32,
    /// A CTA finished since the last launch.
    finished: bool,
}

impl<'s> Warps<'s> {
    fn new(streams: &'s WarpStreams, n_ctas: u32) -> Self {
        Warps {
            streams,
            pos: streams.warp_events.iter().map(|r| r.0).collect(),
            deferred: vec![0; streams.warp_events.len()],
            cta_bar: vec![0; n_ctas as usize],
            cta_done: vec![0; n_ctas as usize],
            fifo: VecDeque::new(),
            resident: 0,
            finished: false,
        }
    }

    fn state_of(&self, gw: u32) -> u8 {
        let p = self.pos[gw as usize];
        if p >= self.streams.warp_events[gw as usize].1 {
            DONE
        } else if self.streams.events[p as usize].barrier {
            BARRIER
        } else {
            READY
        }
    }

    /// Makes a CTA resident and queues its warps.
    fn launch(&mut self, cta: u32) {
        self.resident += 1;
        let wpc = self.streams.wpc;
        for gw in cta * wpc..(cta + 1) * wpc {
            self.deferred[gw as usize] = self.state_of(gw);
            self.rejoin(gw);
        }
    }

    /// Takes the warp's next instruction.
    fn issue(&mut self, gw: u32) -> Event {
        let e = self.streams.events[self.pos[gw as usize] as usize];
        self.pos[gw as usize] += 1;
        self.deferred[gw as usize] = self.state_of(gw);
        e
    }

    /// The instruction the warp issued last.
    fn current(&self, gw: u32) -> &Event {
        &self.streams.events[self.pos[gw as usize] as usize - 1]
    }

    /// The warp enters its deferred state: queue it, or count it at its CTA's barrier or as
    /// done; release the barrier when the whole CTA has arrived.
    fn rejoin(&mut self, gw: u32) {
        let wpc = self.streams.wpc;
        let mut work = vec![gw];
        while let Some(gw) = work.pop() {
            let cta = (gw / wpc) as usize;
            match self.deferred[gw as usize] {
                READY => {
                    self.fifo.push_back(gw);
                    continue;
                }
                BARRIER => self.cta_bar[cta] += 1,
                _ => self.cta_done[cta] += 1,
            }
            if self.cta_bar[cta] > 0 && self.cta_bar[cta] + self.cta_done[cta] == wpc {
                self.cta_bar[cta] = 0;
                let before = work.len();
                for g in cta as u32 * wpc..(cta as u32 + 1) * wpc {
                    if self.deferred[g as usize] == BARRIER {
                        self.pos[g as usize] += 1;
                        self.deferred[g as usize] = self.state_of(g);
                        work.push(g);
                    }
                }
                // Keep warp order within the CTA when they rejoin the queue.
                work[before..].reverse();
            } else if self.cta_done[cta] == wpc {
                self.resident -= 1;
                self.finished = true;
            }
        }
    }
}

/// One event of a warp's stream: a warp instruction (its load requests are
/// `reqs[req_start..req_end]`) or a CTA barrier.
#[derive(Clone, Copy, Debug, Default)]
struct Event {
    barrier: bool,
    inst: u32,
    req_start: u32,
    req_end: u32,
    /// Thread accesses of the instruction (loads and stores).
    accesses: u32,
    /// Memory transactions of its load requests.
    transactions: u32,
    stores: u32,
    store_bytes: u64,
}

/// The instruction streams of one kernel's warps: what each warp issues does not depend on
/// timing (only when it does), so the streams are built once and shared by every run.
pub struct WarpStreams {
    wpc: u32,
    tpb: u32,
    /// Per warp (CTA * warps per CTA + warp): its range of `events`.
    warp_events: Vec<(u32, u32)>,
    events: Vec<Event>,
    /// Line addresses of the load requests.
    reqs: Vec<u64>,
}

impl WarpStreams {
    /// Builds the streams of the warps of `ctas` (the others stay empty).
    pub fn build(
        k: &Kernel,
        ctas: impl Iterator<Item = u32>,
        warp_size: u32,
        coalescing: Coalescing,
        cache: &CacheConfig,
        gpu: &GpuConfig,
    ) -> Result<Self, TimingError> {
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
        let starts = k.thread_starts();
        let mut cursor: Vec<u32> = starts[..starts.len() - 1].to_vec();
        let end = &starts[1..];
        let mut coalescer = Coalescer::new(
            coalescing,
            Geometry {
                line_bytes: cache.line_bytes,
                sector_bytes: cache.sector_bytes,
                warp_size: ws,
                threads_per_cta: tpb,
            },
        );
        let n_warps = k.num_ctas() as usize * wpc as usize;
        let mut s = WarpStreams {
            wpc,
            tpb,
            warp_events: vec![(0, 0); n_warps],
            events: Vec::new(),
            reqs: Vec::new(),
        };
        let mut rows = Vec::with_capacity(64);
        let mut out: Vec<Coalesced> = Vec::with_capacity(64);
        for cta in ctas {
            for w in 0..wpc {
                let t0 = (cta * tpb + w * ws) as usize;
                let t1 = ((cta * tpb + w * ws + ws).min((cta + 1) * tpb)) as usize;
                let mut wt = WarpThreads {
                    cursor: &mut cursor[t0..t1],
                    end: &end[t0..t1],
                };
                let first = s.events.len() as u32;
                let mut st = wt.state(k);
                loop {
                    match st {
                        READY => {
                            rows.clear();
                            st = wt.exec(k, &mut rows);
                            let used = coalescer.coalesce(k.columns(), &rows, &mut out);
                            let mut e = Event {
                                inst: rows.first().map_or(0, |&r| k.columns().inst[r as usize]),
                                req_start: s.reqs.len() as u32,
                                accesses: used,
                                ..Default::default()
                            };
                            for c in &out {
                                if c.request.write {
                                    e.stores += 1;
                                    e.store_bytes += c.request.bytes as u64;
                                } else {
                                    s.reqs.push(c.request.line);
                                    e.transactions += c.transactions;
                                }
                            }
                            e.req_end = s.reqs.len() as u32;
                            s.events.push(e);
                        }
                        BARRIER => {
                            s.events.push(Event {
                                barrier: true,
                                ..Default::default()
                            });
                            wt.pass_barrier(k);
                            st = wt.state(k);
                        }
                        _ => break,
                    }
                }
                s.warp_events[(cta * wpc + w) as usize] = (first, s.events.len() as u32);
            }
        }
        Ok(s)
    }

    fn resident_max(&self, gpu: &GpuConfig) -> u32 {
        gpu.max_ctas_per_sm
            .min(gpu.max_threads_per_sm / self.tpb)
            .min(gpu.max_warps_per_sm / self.tpb.div_ceil(HW_WARP))
            .max(1)
    }
}
