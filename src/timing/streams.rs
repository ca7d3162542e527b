//! What each warp issues, built once per kernel and shared by every run (what a warp issues
//! does not depend on timing, only when it does): warp-instruction streams of coalesced
//! requests for the default issue unit, per-thread load streams for the released model's
//! thread portions ([`crate::config::IssueUnit::ThreadPortions`]).

use super::build::StreamsBuilder;
use super::engine::TimingError;
use crate::config::{CacheConfig, Coalescing, GpuConfig, TimingRules};
use crate::schedule::HW_WARP;
use crate::trace::{memory, Kernel};

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
}

/// One load of one thread, for the thread-portions issue unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ThreadLoad {
    pub line: u64,
    pub inst: u32,
    pub bytes: u16,
    /// No earlier thread of its coalescing group used this line at this position.
    pub leader: bool,
}

/// The streams of one kernel's warps.
#[derive(Debug, PartialEq, Eq)]
pub struct WarpStreams {
    pub(super) wpc: u32,
    pub(super) tpb: u32,
    pub(super) warp_size: u32,
    /// CTAs modelled (the others, past the thread limit, never run).
    pub(super) ctas: u32,
    /// Per warp (CTA * warps per CTA + warp): its range of `events`.
    pub(super) warp_events: Vec<(u32, u32)>,
    pub(super) events: Vec<Event>,
    /// Line addresses of the load requests.
    pub(super) reqs: Vec<u64>,
    /// Thread portions: per thread (CTA * threads per CTA + thread) its range of `loads`.
    pub(super) thread_loads: Vec<(u32, u32)>,
    pub(super) loads: Vec<ThreadLoad>,
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
        let mut b = StreamsBuilder::new(k, warp_size, coalescing, cache, gpu, rules, None)?;
        let starts = k.thread_starts();
        let ctas: Vec<u32> = ctas.collect();
        let tpb = k.threads_per_cta().max(1) as usize;
        let rows_of = |&c: &u32| {
            let t = (c as usize * tpb).min(starts.len() - 1);
            let u = (t + tpb).min(starts.len() - 1);
            (starts[u] - starts[t]) as u64
        };
        b.expect_rows(ctas.iter().map(rows_of).sum());
        for cta in ctas {
            b.add_from(k, &starts, cta);
        }
        Ok(b.finish())
    }

    /// The streams of a kernel from those [`WarpStreams::build`] gave for sets of its CTAs
    /// (so that they can be built side by side), in the order of their CTAs: the same as one
    /// build over all their CTAs. `None` if the parts are not of one kernel and setting, or
    /// share a CTA.
    pub fn join(parts: Vec<WarpStreams>) -> Option<WarpStreams> {
        // The whole is written once, into room made for it (in huge pages where they are had).
        let total = |f: fn(&WarpStreams) -> usize| parts.iter().map(f).sum::<usize>();
        let (n_events, n_reqs, n_loads) = (
            total(|p| p.events.len()),
            total(|p| p.reqs.len()),
            total(|p| p.loads.len()),
        );
        let mut parts = parts.into_iter();
        let mut all = parts.next()?;
        let more = (
            n_events - all.events.len(),
            n_reqs - all.reqs.len(),
            n_loads - all.loads.len(),
        );
        memory::reserve(&mut all.events, more.0);
        memory::reserve(&mut all.reqs, more.1);
        memory::reserve(&mut all.loads, more.2);
        for p in parts {
            if (p.wpc, p.tpb, p.warp_size, p.ctas) != (all.wpc, all.tpb, all.warp_size, all.ctas)
                || p.warp_events.len() != all.warp_events.len()
                || p.thread_loads.len() != all.thread_loads.len()
            {
                return None;
            }
            let (events, reqs, loads) = (
                all.events.len() as u32,
                all.reqs.len() as u32,
                all.loads.len() as u32,
            );
            // A barrier has no requests: its range stays as built.
            all.events.extend(p.events.iter().map(|&e| {
                if e.barrier {
                    e
                } else {
                    Event {
                        req_start: e.req_start + reqs,
                        req_end: e.req_end + reqs,
                        ..e
                    }
                }
            }));
            all.reqs.extend_from_slice(&p.reqs);
            all.loads.extend_from_slice(&p.loads);
            if !place(&mut all.warp_events, &p.warp_events, events)
                || !place(&mut all.thread_loads, &p.thread_loads, loads)
            {
                return None;
            }
        }
        Some(all)
    }

    pub(super) fn resident_max(&self, gpu: &GpuConfig) -> u32 {
        gpu.max_ctas_per_sm
            .min(gpu.max_threads_per_sm / self.tpb)
            .min(gpu.max_warps_per_sm / self.tpb.div_ceil(HW_WARP))
            .max(1)
    }

    /// Thread range of warp `gw`.
    pub(super) fn warp_threads(&self, gw: u32) -> std::ops::Range<usize> {
        let (cta, w) = (gw / self.wpc, gw % self.wpc);
        let t0 = cta * self.tpb + w * self.warp_size;
        let t1 = (t0 + self.warp_size).min((cta + 1) * self.tpb);
        t0 as usize..t1 as usize
    }
}

/// Copies a part's ranges (the non-empty ones: see [`empty`]) into the whole, moved on by
/// `off`; `false` if the whole has one of them already.
fn place(to: &mut [(u32, u32)], from: &[(u32, u32)], off: u32) -> bool {
    for (a, &(s, e)) in to.iter_mut().zip(from) {
        if s != e {
            if a.0 != a.1 {
                return false;
            }
            *a = (s + off, e + off);
        }
    }
    true
}

/// A range of a stream, `(0, 0)` when empty (so that [`WarpStreams::join`] can tell the
/// ranges a part built).
pub(super) fn empty(start: u32, end: u32) -> (u32, u32) {
    if start == end {
        (0, 0)
    } else {
        (start, end)
    }
}

/// One warp's threads' loads, for choosing which thread requests each line
/// (`build.rs`).
pub(super) struct Warp<'a> {
    /// Each lane's loads: `loads[a]`, `loads[a + stride]`, ... below `b` for its `(a, b)`.
    pub lanes: &'a [(u32, u32)],
    pub stride: u32,
    pub loads: &'a [ThreadLoad],
    /// Byte addresses of the CTA's loads, from `loads[base]` on.
    pub addrs: &'a [u64],
    pub base: usize,
    pub ws: u32,
}

/// Per quarter of a warp, the first lane's load of each line at one position.
#[derive(Default)]
pub(super) struct Firsts([Vec<(u64, usize)>; 4]);

impl Warp<'_> {
    /// The coalescing group of a load: a warp for 4-byte accesses, a half-warp for 8-byte,
    /// a quarter-warp for 16-byte ones.
    fn group(&self, load: usize) -> usize {
        match self.loads[load].bytes {
            8 => self.ws / 2,
            16 => self.ws / 4,
            _ => self.ws,
        }
        .max(1) as usize
    }

    /// Applies the released model's rule at every position of the warp's streams: a load is
    /// served by the first earlier thread of its group with the same line at the same
    /// position (its `width` becomes 0); that thread takes on the access (its `width` grows)
    /// unless the addresses are equal. Groups are whole quarters of the warp, so the first
    /// earlier load of a line in a group is the first found in the quarters from the
    /// group's start: a few comparisons per lane instead of one per earlier lane.
    pub(super) fn serve(&self, width: &mut [u32], firsts: &mut Firsts) {
        if self.ws % 4 != 0 {
            return self.serve_plain(width);
        }
        let quarter = (self.ws / 4) as usize;
        let longest = self.longest();
        for pos in 0..longest {
            firsts.0.iter_mut().for_each(Vec::clear);
            for (lane, &(a, b)) in self.lanes.iter().enumerate() {
                let me = a + pos * self.stride;
                if me >= b {
                    continue;
                }
                let me = me as usize;
                let line = self.loads[me].line;
                let group = self.group(me);
                let (from, mine) = (group * (lane / group) / quarter, lane / quarter);
                let serving = firsts.0[from..=mine]
                    .iter()
                    .find_map(|q| q.iter().find(|f| f.0 == line).map(|f| f.1));
                if let Some(o) = serving {
                    self.served(width, o, me);
                }
                // The first load of the line in its quarter, served or not, serves later ones
                // whose group starts after an earlier one.
                if !firsts.0[mine].iter().any(|f| f.0 == line) {
                    firsts.0[mine].push((line, me));
                }
            }
        }
    }

    /// Loads of the lane with the most.
    fn longest(&self) -> u32 {
        let s = self.stride.max(1);
        self.lanes
            .iter()
            .map(|r| (r.1 - r.0).div_ceil(s))
            .max()
            .unwrap_or(0)
    }

    /// Load `me` is served by load `o`.
    fn served(&self, width: &mut [u32], o: usize, me: usize) {
        width[me - self.base] = 0;
        if self.addrs[o - self.base] != self.addrs[me - self.base] {
            width[o - self.base] += 1;
        }
    }

    /// [`Warp::serve`] by its definition: each lane looks through the earlier lanes of its
    /// group (for warp sizes that are not a multiple of 4, and as the tests' reference).
    fn serve_plain(&self, width: &mut [u32]) {
        let lanes = self.lanes;
        let longest = self.longest();
        for pos in 0..longest {
            for lane in 0..lanes.len() {
                let (a, b) = lanes[lane];
                if a + pos * self.stride >= b {
                    continue;
                }
                let me = (a + pos * self.stride) as usize;
                let group = self.group(me);
                let serving = (group * (lane / group)..lane).find_map(|old| {
                    let (oa, ob) = lanes[old];
                    let o = oa + pos * self.stride;
                    (o < ob && self.loads[o as usize].line == self.loads[me].line)
                        .then_some(o as usize)
                });
                if let Some(o) = serving {
                    self.served(width, o, me);
                }
            }
        }
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
                    assert!(!whole.reqs.is_empty() || !whole.loads.is_empty());
                    barriers += whole.events.iter().filter(|e| e.barrier).count();
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
        /// The quarter-by-quarter rule chooses the same serving loads as the definition.
        #[test]
        fn serving_loads_are_those_of_the_definition(
            lanes in prop::collection::vec(
                prop::collection::vec((0u64..6, 0u64..3, prop_oneof![Just(4u16), Just(8), Just(16)]), 0..5),
                1..33),
            ws in prop_oneof![Just(4u32), Just(8), Just(32)],
        ) {
            let lanes = &lanes[..lanes.len().min(ws as usize)];
            let (mut loads, mut addrs, mut ranges) = (Vec::new(), Vec::new(), Vec::new());
            for l in lanes {
                let first = loads.len() as u32;
                for &(line, word, bytes) in l {
                    loads.push(ThreadLoad { line, inst: 0, bytes, leader: true });
                    addrs.push(line * 128 + word * 4);
                }
                ranges.push((first, loads.len() as u32));
            }
            let warp = Warp { lanes: &ranges, stride: 1, loads: &loads, addrs: &addrs, base: 0, ws };
            let mut fast = vec![1u32; loads.len()];
            warp.serve(&mut fast, &mut Firsts::default());
            let mut plain = vec![1u32; loads.len()];
            warp.serve_plain(&mut plain);
            prop_assert_eq!(fast, plain);
        }
    }
}
