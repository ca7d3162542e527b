//! What each warp issues, built once per kernel and shared by every run (what a warp issues
//! does not depend on timing, only when it does): warp-instruction streams of coalesced
//! requests for the default issue unit; for the released model's thread portions
//! ([`crate::config::IssueUnit::ThreadPortions`]), each warp position as masks of its lanes
//! ([`Lanes`]) with the loads of those that request their line.

use super::build::StreamsBuilder;
use super::engine::TimingError;
use crate::config::{CacheConfig, Coalescing, GpuConfig, TimingRules};
use crate::schedule::HW_WARP;
use crate::trace::Kernel;

/// One event of a warp's stream: a warp instruction (its load requests are
/// `reqs[req_start..req_end]`) or a CTA barrier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Event {
    pub barrier: bool,
    pub inst: u32,
    pub req_start: u32,
    pub req_end: u32,
    /// Thread accesses of the instruction (loads and stores).
    pub accesses: u32,
    /// Memory transactions of its load requests.
    pub transactions: u32,
    pub stores: u32,
    pub store_bytes: u64,
    /// Its store requests, `store_reqs[store_start..store_end]` (kept only for a simulated
    /// L2, [`super::StreamsBuilder::keep_stores`]).
    pub store_start: u32,
    pub store_end: u32,
}

/// One coalesced store request of a warp instruction, for the L2 it goes on to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct StoreReq {
    pub line: u64,
    pub sectors: u32,
    pub bytes: u32,
    /// The bytes of its line it writes (bit b = byte b), for lines of at most 128 bytes
    /// (0: not known).
    pub written: u128,
}

/// One load of one thread, for the thread-portions issue unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ThreadLoad {
    pub line: u64,
    pub inst: u32,
    pub bytes: u16,
}

/// The shape of one kernel's warps, from its header: what the engine needs before any of its
/// CTAs' streams are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub(super) wpc: u32,
    pub(super) tpb: u32,
    pub(super) warp_size: u32,
    /// CTAs modelled (the others, past the thread limit, never run).
    pub(super) ctas: u32,
}

impl Shape {
    /// The most CTAs of this shape resident on an SM at once.
    pub fn resident_max(&self, gpu: &GpuConfig) -> u32 {
        gpu.max_ctas_per_sm
            .min(gpu.max_threads_per_sm / self.tpb)
            .min(gpu.max_warps_per_sm / self.tpb.div_ceil(HW_WARP))
            .max(1)
    }

    /// The CTA's thread range of its warp `w`.
    pub(super) fn warp_threads(&self, w: u32) -> std::ops::Range<usize> {
        let t0 = w * self.warp_size;
        let t1 = (t0 + self.warp_size).min(self.tpb);
        t0 as usize..t1 as usize
    }
}

/// The most threads a warp may have under the thread-portions issue unit: its lanes are
/// the bits of a [`Lanes`] mask.
pub const MAX_PORTION_LANES: u32 = 64;

/// One position of a warp's per-thread streams (thread portions): bit `l` for lane `l`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Lanes {
    /// Lanes with a load at this position (a lane's loads are at positions `0..n`).
    pub loads: u64,
    /// Those of them that request their line: no earlier lane of their group, with a load
    /// of the same line here, serves them. Lane 0's load always does.
    pub leaders: u64,
    /// The leaders' loads are `leader_loads[first..]`, in lane order.
    pub first: u32,
}

impl Lanes {
    /// The index in `leader_loads` of leader `lane`'s load.
    pub fn leader_load(&self, lane: usize) -> usize {
        self.first as usize + (self.leaders & lane_mask(0, lane)).count_ones() as usize
    }
}

/// Lanes `lo..hi` (below 64) as a mask.
pub(super) fn lane_mask(lo: usize, hi: usize) -> u64 {
    let below = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    below(hi) & !below(lo)
}

/// The streams of one CTA's warps; ranges are within the CTA's own vectors. A CTA is built
/// once, shared by every run that simulates it, and freed when the last one has run it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CtaStreams {
    /// Per warp of the CTA: its range of `events`.
    pub(super) warp_events: Vec<(u32, u32)>,
    pub(super) events: Vec<Event>,
    /// Line addresses of the load requests.
    pub(super) reqs: Vec<u64>,
    /// The store requests, where they are kept ([`Event::store_start`]).
    pub(super) store_reqs: Vec<StoreReq>,
    /// Thread portions: per warp its range of `positions`, one per load of its longest
    /// lane.
    pub(super) warp_positions: Vec<(u32, u32)>,
    pub(super) positions: Vec<Lanes>,
    /// Thread portions: the loads that request their line ([`Lanes::leaders`]), position
    /// by position; the others are only counted.
    pub(super) leader_loads: Vec<ThreadLoad>,
    /// Thread portions: the CTA's L1 loads per instruction (instruction, loads), counted
    /// once when a run launches the CTA rather than load by load.
    pub(super) inst_loads: Vec<(u32, u64)>,
    /// One more than the highest instruction number it uses (0 when none).
    pub(super) insts: u32,
    /// The CTA's rows (thread accesses) it was built from.
    pub(super) rows: u64,
}

/// A CTA with no rows: every warp done at once.
pub(super) static NO_ROWS: CtaStreams = CtaStreams {
    warp_events: Vec::new(),
    events: Vec::new(),
    reqs: Vec::new(),
    store_reqs: Vec::new(),
    warp_positions: Vec::new(),
    positions: Vec::new(),
    leader_loads: Vec::new(),
    inst_loads: Vec::new(),
    insts: 0,
    rows: 0,
};

impl CtaStreams {
    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.warp_events.clear();
        self.events.clear();
        self.reqs.clear();
        self.store_reqs.clear();
        self.warp_positions.clear();
        self.positions.clear();
        self.leader_loads.clear();
        self.inst_loads.clear();
        self.insts = 0;
        self.rows = 0;
    }

    /// The CTA's rows (thread accesses) it was built from: what its memory is in proportion to.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub(super) fn warp_range(&self, w: u32) -> (u32, u32) {
        self.warp_events.get(w as usize).copied().unwrap_or((0, 0))
    }

    /// Warp `w`'s positions (thread portions).
    pub(super) fn positions_of(&self, w: u32) -> &[Lanes] {
        let (a, b) = self
            .warp_positions
            .get(w as usize)
            .copied()
            .unwrap_or((0, 0));
        self.positions.get(a as usize..b as usize).unwrap_or(&[])
    }
}

/// Where a run gets the streams of the CTAs it launches: from a kernel's streams built
/// whole ([`WarpStreams`]), or from a shell that builds them as the trace is read and hands
/// each one to every run that needs it.
pub trait CtaFeed {
    /// CTA `cta`'s streams (an empty CTA where it has no rows). `hooks` is told of progress
    /// while it waits; `false` there cancels.
    fn cta(
        &mut self,
        cta: u32,
        hooks: &mut dyn super::Hooks,
    ) -> Result<std::sync::Arc<CtaStreams>, TimingError>;

    /// A CTA's streams the run has finished with (so that a feed can use their room again).
    fn done(&mut self, _streams: std::sync::Arc<CtaStreams>) {}
}

/// The streams of one kernel's warps, every CTA built.
#[derive(Debug, PartialEq, Eq)]
pub struct WarpStreams {
    pub(super) shape: Shape,
    /// Per CTA, its streams (`None`: not built, as for the CTAs of SMs not simulated).
    pub(super) ctas: Vec<Option<std::sync::Arc<CtaStreams>>>,
}

impl CtaFeed for &WarpStreams {
    fn cta(
        &mut self,
        cta: u32,
        _hooks: &mut dyn super::Hooks,
    ) -> Result<std::sync::Arc<CtaStreams>, TimingError> {
        Ok(match self.ctas.get(cta as usize) {
            Some(Some(c)) => c.clone(),
            _ => std::sync::Arc::new(CtaStreams::default()),
        })
    }
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
        rules: &TimingRules,
    ) -> Result<Self, TimingError> {
        let b = StreamsBuilder::new(k, warp_size, coalescing, cache, gpu, rules, None)?;
        Ok(Self::build_with(b, k, ctas))
    }

    /// [`WarpStreams::build`] with the builder `b` (made for `k`, as a caller sets it up).
    pub fn build_with(mut b: StreamsBuilder, k: &Kernel, ctas: impl Iterator<Item = u32>) -> Self {
        let starts = k.thread_starts();
        let mut all = WarpStreams {
            shape: b.shape(),
            ctas: vec![None; k.num_ctas() as usize],
        };
        for cta in ctas {
            if let Some(built) = b.add_held(k, &starts, cta) {
                all.ctas[cta as usize] = Some(std::sync::Arc::new(built));
            }
        }
        all
    }

    /// The streams of a kernel from those [`WarpStreams::build`] gave for sets of its CTAs
    /// (so that they can be built side by side): the same as one build over all their CTAs.
    /// `None` if the parts are not of one kernel and setting, or share a CTA.
    pub fn join(parts: Vec<WarpStreams>) -> Option<WarpStreams> {
        let mut parts = parts.into_iter();
        let mut all = parts.next()?;
        for p in parts {
            if p.shape != all.shape || p.ctas.len() != all.ctas.len() {
                return None;
            }
            for (to, from) in all.ctas.iter_mut().zip(p.ctas) {
                if from.is_some() {
                    if to.is_some() {
                        return None;
                    }
                    *to = from;
                }
            }
        }
        Some(all)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }
}

/// One position of a warp's per-thread streams, for choosing which lanes request their
/// line: lane `l`'s load there, where bit `l` of `loads` is set, is of `lines[l]`, of
/// `bytes[l]` bytes.
pub(super) struct Position<'a> {
    pub loads: u64,
    pub lines: &'a [u64],
    /// Each lane's address there, under the released coalescer's width bump
    /// ([`crate::config::Merging::WidthBump`]); `None` for our rule.
    pub addrs: Option<&'a [u64]>,
    pub bytes: &'a [u16],
    pub ws: u32,
}

/// Per quarter of a warp, the lines its lanes load at one position.
#[derive(Default)]
pub(super) struct Firsts([Vec<u64>; 4]);

impl Position<'_> {
    /// The coalescing group of lane `lane`'s load: a warp for 4-byte accesses, a half-warp
    /// for 8-byte, a quarter-warp for 16-byte ones.
    fn group(&self, lane: usize) -> usize {
        match self.bytes[lane] {
            8 => self.ws / 2,
            16 => self.ws / 4,
            _ => self.ws,
        }
        .max(1) as usize
    }

    /// The lanes that request their line, by the released model's rule: a load is served by
    /// the first earlier lane of its group with a load of the same line here. Groups are
    /// whole quarters of the warp, so an earlier load of the line in the lane's group is in
    /// one of the quarters from the group's first to the lane's own: a few comparisons per
    /// lane instead of one per earlier lane.
    pub(super) fn leaders(&self, firsts: &mut Firsts) -> u64 {
        if let Some(addrs) = self.addrs {
            return self.leaders_bumped(addrs);
        }
        if self.ws % 4 != 0 {
            return self.leaders_plain();
        }
        let quarter = (self.ws / 4) as usize;
        // A shift where it can be (a division per load is most of the cost otherwise).
        let shift = quarter.is_power_of_two().then(|| quarter.trailing_zeros());
        firsts.0.iter_mut().for_each(Vec::clear);
        let mut leaders = 0;
        let mut loads = self.loads;
        while loads != 0 {
            let lane = loads.trailing_zeros() as usize;
            loads &= loads - 1;
            let line = self.lines[lane];
            let mine = shift.map_or(lane / quarter, |k| lane >> k);
            // The group's first quarter: the warp's, the lane's half's, or its own.
            let from = match self.bytes[lane] {
                8 => mine & !1,
                16 => mine,
                _ => 0,
            };
            if !firsts.0[from..=mine].iter().any(|q| q.contains(&line)) {
                leaders |= 1 << lane;
            }
            // The first load of the line in its quarter, served or not, is what later lanes
            // whose group starts after an earlier one find.
            if !firsts.0[mine].contains(&line) {
                firsts.0[mine].push(line);
            }
        }
        leaders
    }

    /// The lanes that request their line under the released coalescer: a lane served by the
    /// first earlier lane of its group with a load of the same line does not, and when their
    /// addresses differ that earlier lane does, even if it had been served itself (the
    /// released program's `width++` on an access whose width was 0).
    fn leaders_bumped(&self, addrs: &[u64]) -> u64 {
        let has = |l: usize| self.loads >> l & 1 != 0;
        let mut leaders = 0;
        for lane in (0..64).filter(|&l| has(l)) {
            let group = self.group(lane);
            let first = (group * (lane / group)..lane)
                .find(|&o| has(o) && self.lines[o] == self.lines[lane]);
            match first {
                None => leaders |= 1 << lane,
                Some(o) if addrs[o] != addrs[lane] => leaders |= 1 << o,
                Some(_) => {}
            }
        }
        leaders
    }

    /// [`Position::leaders`] by its definition: each lane looks through the earlier lanes of
    /// its group (for warp sizes that are not a multiple of 4, and as the tests' reference).
    fn leaders_plain(&self) -> u64 {
        let has = |l: usize| self.loads >> l & 1 != 0;
        let mut leaders = 0;
        for lane in (0..64).filter(|&l| has(l)) {
            let group = self.group(lane);
            let served =
                (group * (lane / group)..lane).any(|o| has(o) && self.lines[o] == self.lines[lane]);
            if !served {
                leaders |= 1 << lane;
            }
        }
        leaders
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Streams built in parts and joined equal those of one build, for both issue units,
    /// every CTA or every other one (two SMs), in 1 to 5 parts.
    #[test]
    fn streams_built_in_parts_and_joined_equal_one_build() {
        let kernels = crate::timing::test_kernels();
        let mut barriers = 0;
        let ours = crate::config::preset("gtx470-16k").expect("preset");
        let mut released = ours.clone();
        crate::config::compat(&mut released, "gpu-cache-model").expect("compat");
        for cfg in [&ours, &released] {
            let rules = &cfg.timing.as_ref().expect("timing").rules;
            for k in &kernels {
                for keep in [1, 2] {
                    let build = |ctas: std::ops::Range<u32>| {
                        WarpStreams::build(
                            k,
                            ctas.filter(|c| c % keep == 0),
                            cfg.schedule.warp_size,
                            cfg.coalescing,
                            &cfg.cache,
                            &cfg.gpu,
                            rules,
                        )
                        .expect("build")
                    };
                    let n = k.num_ctas();
                    let whole = build(0..n);
                    let built = whole.ctas.iter().flatten();
                    assert!(built
                        .clone()
                        .any(|c| !c.reqs.is_empty() || !c.leader_loads.is_empty()));
                    barriers += built.flat_map(|c| &c.events).filter(|e| e.barrier).count();
                    for parts in 1..=5u32 {
                        let built = (0..parts)
                            .map(|p| build(n * p / parts..n * (p + 1) / parts))
                            .collect();
                        let joined = WarpStreams::join(built).expect("join");
                        assert!(joined == whole, "{} in {parts} parts", k.name);
                    }
                    // Parts that share a CTA do not join.
                    assert!(WarpStreams::join(vec![build(0..n), build(0..n)]).is_none());
                }
            }
        }
        assert!(barriers > 0, "the tiled matmul's barriers are streamed");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The quarter-by-quarter rule chooses the same leaders as the definition.
        #[test]
        fn leaders_are_those_of_the_definition(
            lanes in prop::collection::vec(
                prop::option::of((0u64..6, prop_oneof![Just(4u16), Just(8), Just(16)])),
                1..33),
            ws in prop_oneof![Just(4u32), Just(8), Just(32)],
        ) {
            let lanes = &lanes[..lanes.len().min(ws as usize)];
            let loads = lanes
                .iter()
                .enumerate()
                .fold(0u64, |m, (l, a)| m | (a.is_some() as u64) << l);
            let lines: Vec<u64> = lanes.iter().map(|a| a.map_or(0, |a| a.0)).collect();
            let bytes: Vec<u16> = lanes.iter().map(|a| a.map_or(0, |a| a.1)).collect();
            let at = Position { loads, lines: &lines, addrs: None, bytes: &bytes, ws };
            prop_assert_eq!(at.leaders(&mut Firsts::default()), at.leaders_plain());
        }
    }
}
