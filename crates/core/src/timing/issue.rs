//! The two issue units of the timing model: a warp instruction with its coalesced requests
//! (ours), or the released model of Nugteren et al. (2014)'s groups of threads by access
//! size, each thread with its own program counter ([`crate::config::IssueUnit`]).

use rustc_hash::FxHashMap;

use super::engine::{Engine, Hooks, KernelRun, Status, TimedRequest, MAX_LATENCY_BIN};
use super::streams::{lane_mask, Event, StoreReq, ThreadLoad};
use super::warps::{has_load, Warps};
use crate::cache::Request;
use crate::config::Arrivals;

impl Engine {
    /// Counts one issued request, of the CTA in slot `slot`.
    pub(super) fn count(&mut self, run: &mut KernelRun, rec: &TimedRequest, slot: usize) {
        let miss = self.reported_miss(rec.distance);
        let infinite = rec.distance.is_none();
        let fill = rec.status == Status::Miss && !rec.in_flight;
        for counts in [
            &mut run.counts,
            &mut run.per_inst[rec.inst as usize],
            &mut run.ctas.at(slot).counts,
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
        if let Some(dc) = self.stats.distance_counts.as_mut() {
            *dc.entry(rec.distance.unwrap_or(u64::MAX)).or_insert(0) += 1;
        }
    }

    fn record(&mut self, rec: &TimedRequest, hooks: &mut dyn Hooks) {
        hooks.request(rec);
        if let Some(log) = self.log.as_mut() {
            log.push(*rec);
        }
        if let Some(l2) = &mut self.l2 {
            l2.drain_events(|e| hooks.l2(e));
        }
    }

    /// Issues warp `gw`'s next instruction (or the rest of one an MSHR stall cut short).
    /// Returns when its last request takes effect, or `None` if it stalled again.
    pub(super) fn issue_warp(
        &mut self,
        gw: u32,
        warps: &mut Warps,
        replay: &mut FxHashMap<u32, (u32, u32)>,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> Option<u64> {
        let wpc = warps.shape.wpc;
        let (cta, w) = (gw / wpc, gw % wpc);
        let slot = warps.slot_of(cta);
        let (inst, first, end) = match replay.remove(&gw) {
            Some((inst, next)) => (inst, next, warps.current(gw).req_end),
            None => {
                let e = warps.issue(gw);
                run.rows += e.accesses as u64;
                if e.accesses > 0 {
                    run.warp_instructions += 1;
                }
                let i = e.inst as usize;
                run.accesses_inst[i] += e.accesses as u64;
                run.transactions_inst[i] += e.transactions as u64;
                run.stores_inst[i].0 += e.stores as u64;
                run.stores_inst[i].1 += e.store_bytes;
                let t = run.ctas.at(slot);
                t.accesses += e.accesses as u64;
                t.transactions += e.transactions as u64;
                t.stores += e.stores as u64;
                t.store_bytes += e.store_bytes;
                (e.inst, e.req_start, e.req_end)
            }
        };
        let mut ready_at = self.now;
        let start = warps.current(gw).req_start;
        for i in first..end {
            let line = warps.cta(cta).reqs[i as usize];
            let (status, mut rec) = self.request(line, (gw, inst), i == first);
            rec.cta = cta;
            rec.warp = w;
            rec.inst = inst;
            rec.starts_instruction = i == start;
            self.record(&rec, hooks);
            if status == Status::Cancelled {
                self.stats.mshr_stalls += 1;
                replay.insert(gw, (inst, i));
                return None;
            }
            ready_at = ready_at.max(rec.effect_at);
            self.count(run, &rec, slot);
        }
        if self.l2.is_some() {
            let e = *warps.current(gw);
            self.send_stores(&warps.cta(cta).store_reqs, e, hooks);
        }
        if self.p.rules.arrivals == Arrivals::AfterGroup {
            self.apply_effects(self.now + 1);
        }
        Some(ready_at)
    }

    /// Sends the store requests of instruction `e` (once its loads have all issued) on to
    /// the L2: the L1 of the timing model holds loads only, so every store goes through.
    fn send_stores(&mut self, stores: &[StoreReq], e: Event, hooks: &mut dyn Hooks) {
        let Some(l2) = &mut self.l2 else { return };
        let mine = stores
            .get(e.store_start as usize..e.store_end as usize)
            .unwrap_or(&[]);
        for s in mine {
            let r = Request {
                line: s.line,
                sectors: s.sectors,
                write: true,
                bytes: s.bytes,
            };
            let written = (s.written != 0).then_some(s.written);
            l2.store(&r, self.kernel_index, e.inst, written);
        }
        l2.drain_events(|ev| hooks.l2(ev));
    }

    /// Issues warp `gw` the released model's way: its threads in groups by the first
    /// thread's access size (the whole warp for 4 bytes, halves for 8, quarters for 16, ...),
    /// each thread its next load; the effects due now are applied after each group. An
    /// MSHR stall of the first thread ends the first group; the other groups still issue.
    ///
    /// While the warp's lanes keep in step (all at one position of their streams), only the
    /// loads that request their line are visited, from the position's masks; a stall that
    /// leaves some lanes behind others puts the warp out of step, lane by lane from then on.
    pub(super) fn issue_portions(
        &mut self,
        gw: u32,
        warps: &mut Warps,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> Option<u64> {
        let ready_at = match warps.in_step(gw) {
            Some(pos) => self.issue_position(gw, pos, warps, run, hooks),
            None => self.issue_lanes(gw, warps, run, hooks),
        };
        warps.defer(gw);
        Some(ready_at)
    }

    /// Issues a thread's load that requests its line, for warp `gw` (warp `w` of CTA `cta`,
    /// in slot `slot`); `first`: the warp's first thread. `None` if it needed an MSHR and none was free (a
    /// stall: not issued); else the time its warp may go on from it (a miss's effect).
    fn issue_load(
        &mut self,
        a: ThreadLoad,
        (gw, cta, w, slot): (u32, u32, u32, usize),
        first: bool,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> Option<u64> {
        let (status, mut rec) = self.request(a.line, (gw, a.inst), first);
        rec.cta = cta;
        rec.warp = w;
        rec.inst = a.inst;
        self.record(&rec, hooks);
        if status == Status::Cancelled {
            self.stats.mshr_stalls += 1;
            return None;
        }
        run.transactions_inst[a.inst as usize] += 1;
        run.ctas.at(slot).transactions += 1;
        self.count(run, &rec, slot);
        Some(if status == Status::Miss {
            rec.effect_at
        } else {
            self.now
        })
    }

    /// [`Engine::issue_portions`] for a warp whose lanes are all at position `pos`.
    fn issue_position(
        &mut self,
        gw: u32,
        pos: u32,
        warps: &mut Warps,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> u64 {
        let wpc = warps.shape.wpc;
        let (cta, w) = (gw / wpc, gw % wpc);
        let (_, threads) = warps.threads_of(gw);
        let warp_size = warps.shape.warp_size;
        let slot = warps.slot_of(cta);
        let streams = warps.cta(cta);
        let at = streams.positions_of(w)[pos as usize];
        let lanes = threads.len();
        // Lane 0's load, where it has one, is the position's first leader.
        let bytes = if at.loads & 1 != 0 {
            streams.leader_loads[at.first as usize].bytes as u32
        } else {
            1
        };
        let (portions, per_portion) = groups(bytes, warp_size);
        let mut ready_at = self.now;
        let mut issued = false;
        // Lanes with a load here that did not issue it (an MSHR stall).
        let mut stayed = 0u64;
        for p in 0..portions {
            let group = lane_mask(p * per_portion, ((p + 1) * per_portion).min(lanes));
            let mut leaders = at.leaders & group;
            // Leaders come in the order of their loads (a stall skips the rest of a group's).
            let mut next = at.leader_load(p * per_portion);
            let mut moved = at.loads & group;
            while leaders != 0 {
                let lane = leaders.trailing_zeros() as usize;
                leaders &= leaders - 1;
                let a = streams.leader_loads[next];
                next += 1;
                let Some(at) = self.issue_load(a, (gw, cta, w, slot), lane == 0, run, hooks) else {
                    let behind = moved & !lane_mask(0, lane);
                    moved &= !behind;
                    stayed |= behind;
                    ready_at = self.now;
                    break;
                };
                issued = true;
                ready_at = ready_at.max(at);
            }
            run.rows += moved.count_ones() as u64;
            if self.p.rules.arrivals == Arrivals::AfterGroup {
                self.apply_effects(self.now + 1);
            }
        }
        run.warp_instructions += issued as u64;
        // Lanes past the last group (warps that are not a whole number of groups) wait for
        // an issue of smaller groups.
        stayed |= at.loads & !lane_mask(0, portions * per_portion);
        if stayed == 0 {
            warps.step_to(gw, pos + 1);
        } else if stayed != at.loads {
            warps.out_of_step(gw, pos, at.loads & !stayed);
            #[cfg(test)]
            {
                self.fell_out_of_step += 1;
            }
        }
        ready_at
    }

    /// [`Engine::issue_portions`] for a warp whose lanes are not in step, lane by lane.
    fn issue_lanes(
        &mut self,
        gw: u32,
        warps: &mut Warps,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> u64 {
        let wpc = warps.shape.wpc;
        let (cta, w) = (gw / wpc, gw % wpc);
        let (base, threads) = warps.threads_of(gw);
        let warp_size = warps.shape.warp_size;
        let slot = warps.slot_of(cta);
        let (streams, pcs) = warps.loads_of(cta);
        let positions = streams.positions_of(w);
        let lane0 = threads.start;
        let bytes = if has_load(positions, pcs[base + lane0], 0) {
            streams.leader_loads[positions[pcs[base + lane0] as usize].first as usize].bytes as u32
        } else {
            1
        };
        let (portions, per_portion) = groups(bytes, warp_size);
        let mut ready_at = self.now;
        let mut issued = false;
        for p in 0..portions {
            let lanes = p * per_portion..(p + 1) * per_portion;
            for lane in lanes.start..lanes.end.min(threads.len()) {
                let t = threads.start + lane;
                let pos = pcs[base + t];
                if !has_load(positions, pos, lane) {
                    continue;
                }
                let at = positions[pos as usize];
                pcs[base + t] += 1;
                if at.leaders >> lane & 1 == 0 {
                    run.rows += 1;
                    continue;
                }
                let a = streams.leader_loads[at.leader_load(lane)];
                let Some(at) = self.issue_load(a, (gw, cta, w, slot), lane == 0, run, hooks) else {
                    pcs[base + t] -= 1;
                    ready_at = self.now;
                    break;
                };
                issued = true;
                run.rows += 1;
                ready_at = ready_at.max(at);
            }
            if self.p.rules.arrivals == Arrivals::AfterGroup {
                self.apply_effects(self.now + 1);
            }
        }
        run.warp_instructions += issued as u64;
        ready_at
    }
}

/// The released model's groups for a warp whose first thread's access is of `bytes` bytes:
/// how many, and of how many threads (a warp for 4 bytes, halves for 8, quarters for 16,
/// ...). Groups are at least a thread: the released model's rule would make them empty for
/// accesses of over 4 bytes per lane of the warp, and its warps would never finish.
fn groups(bytes: u32, warp_size: u32) -> (usize, usize) {
    let portions = (bytes / 4).max(1);
    (portions as usize, (warp_size / portions).max(1) as usize)
}

#[cfg(test)]
mod tests {
    use super::super::{Engine, Hooks, Variant, WarpStreams};
    use crate::config::{self, SimConfig};
    use crate::trace::Kernel;
    use proptest::prelude::*;

    /// One load of a test kernel: instruction, line, word, bytes.
    type Load = (u8, u64, u64, u16);

    /// A kernel in the text format: per CTA, per thread, its loads; 16-byte lines.
    fn kernel(block: u32, ctas: &[Vec<Vec<Load>>]) -> Kernel {
        let mut src = format!("kernel k grid={} block={block}\n", ctas.len());
        for (c, threads) in ctas.iter().enumerate() {
            for (t, loads) in threads.iter().enumerate().take(block as usize) {
                for &(i, line, word, bytes) in loads {
                    let inst = ["a", "b", "c"][i as usize % 3];
                    let addr = line * 16 + word * 4;
                    src += &format!("{c} {t} {inst} 0 ld {addr} {bytes}\n");
                }
            }
        }
        crate::trace::text::read(src.as_bytes(), "t.wst")
            .expect("kernel")
            .kernels
            .remove(0)
    }

    /// The released model's setting on a small cache, with `mshrs` MSHRs, each checked
    /// at a warp's first thread or at every request.
    fn setting(warp_size: u32, mshrs: u32, first_thread: bool, sigma: f64) -> SimConfig {
        let mut c = config::preset("gtx470-16k").expect("preset");
        config::compat(&mut c, "gpu-cache-model").expect("compat");
        c.cache.size_bytes = 256;
        c.cache.line_bytes = 16;
        c.cache.sector_bytes = 16;
        c.cache.ways = 2;
        c.cache.set_index = config::SetIndex::Modulo;
        c.schedule.warp_size = warp_size;
        let t = c.timing.as_mut().expect("timing");
        t.mshrs = mshrs;
        t.miss_latency = 7;
        t.miss_latency_stddev = sigma;
        let check = if first_thread {
            "first-thread"
        } else {
            "every-new-line"
        };
        t.rules.set("mshr-check", check).expect("rule");
        c
    }

    /// Runs each of the four runs on SM 0, lane by lane or not: every issue attempt, the
    /// counts and the statistics; and how many warps fell out of step.
    fn runs(c: &SimConfig, k: &Kernel, lane_by_lane: bool) -> (Vec<String>, u64) {
        let (out, fell, _) = runs_slots(c, k, lane_by_lane, false);
        (out, fell)
    }

    /// [`runs`], and the most slots of threads' positions a kernel took in any run; the
    /// fills that arrived let go of at every fill where `let_go`, never otherwise.
    fn runs_slots(
        c: &SimConfig,
        k: &Kernel,
        lane_by_lane: bool,
        let_go: bool,
    ) -> (Vec<String>, u64, u32) {
        let t = c.timing.as_ref().expect("timing");
        let streams = streams_of(c, k);
        let (mut out, mut fell, mut slots) = (Vec::new(), 0, 0);
        for v in Variant::all(t) {
            let (p, fa) = v.params(t);
            let mut e = Engine::new(&c.cache, p, fa, c.seed);
            e.lane_by_lane = lane_by_lane;
            (e.prune_at, e.prune_min) = if let_go {
                (0, 0)
            } else {
                (usize::MAX, usize::MAX)
            };
            e.log = Some(Vec::new());
            let run = e
                .run_kernel(k, streams.shape(), &mut &streams, 0, &c.gpu, &mut Quiet)
                .expect("run");
            fell += e.fell_out_of_step;
            slots = slots.max(e.most_slots);
            let log = e.log.take().unwrap_or_default();
            out.extend(log.iter().map(|r| format!("{v:?} {r:?}")));
            out.push(format!("{v:?} {run:?}"));
            out.push(format!("{v:?} {:?}", e.stats));
        }
        (out, fell, slots)
    }

    struct Quiet;
    impl Hooks for Quiet {}

    /// The warps' streams of every CTA of `k` under `c`.
    fn streams_of(c: &SimConfig, k: &Kernel) -> WarpStreams {
        let t = c.timing.as_ref().expect("timing");
        WarpStreams::build(
            k,
            0..k.num_ctas(),
            c.schedule.warp_size,
            c.coalescing,
            &c.cache,
            &c.gpu,
            &t.rules,
        )
        .expect("streams")
    }

    /// The first line where two runs' records differ, with the one before it.
    fn difference(a: &[String], b: &[String]) -> Option<String> {
        let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
        Some(format!(
            "line {i}, after {:?}:\n  {:?}\n  {:?}",
            i.checked_sub(1).and_then(|j| a.get(j)),
            a.get(i),
            b.get(i)
        ))
    }

    /// 16-byte loads go in quarter warps: with one MSHR checked at the first thread, the
    /// first quarter stalls while the others issue, and the warp's lanes fall out of step.
    #[test]
    fn a_warp_whose_lanes_fall_out_of_step_issues_as_lane_by_lane() {
        let threads: Vec<Vec<_>> = (0..32u64)
            .map(|t| {
                (0..6)
                    .map(|p| (p as u8, (t / 2 + p * 3) % 20, t % 4, 16))
                    .collect()
            })
            .collect();
        let k = kernel(32, &[threads.clone(), threads]);
        for first_thread in [true, false] {
            let c = setting(32, 1, first_thread, 0.0);
            let (by_lane, none) = runs(&c, &k, true);
            let (in_step, fell) = runs(&c, &k, false);
            assert_eq!(none, 0);
            assert!(fell > 0, "no warp fell out of step");
            let d = difference(&in_step, &by_lane);
            assert!(d.is_none(), "{}", d.unwrap_or_default());
        }
    }

    /// CTAs that wait for room take the slots of the threads' positions that finished ones
    /// left, so that a run holds the positions of the resident CTAs' threads, not the
    /// kernel's: with room for one or two CTAs at a time, the warps of six CTAs fall out of
    /// step and still issue as lane by lane, whose threads take their positions from those
    /// slots from the start; lane by lane takes one or two slots.
    #[test]
    fn ctas_launched_later_reuse_the_positions_of_finished_ones() {
        let ctas: Vec<Vec<Vec<_>>> = (0..6u64)
            .map(|c| {
                (0..64u64)
                    .map(|t| {
                        (0..6)
                            .map(|p| (p as u8, (t / 2 + p * 3 + c) % 20, t % 4, 16))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let k = kernel(64, &ctas);
        for resident in [1, 2] {
            let mut c = setting(32, 1, true, 0.0);
            c.gpu.max_ctas_per_sm = resident;
            let (by_lane, _, slots) = runs_slots(&c, &k, true, false);
            let (in_step, fell) = runs(&c, &k, false);
            assert!(fell > 0, "no warp fell out of step ({resident} resident)");
            assert_eq!(slots, resident, "slots of positions");
            let d = difference(&in_step, &by_lane);
            assert!(d.is_none(), "{}", d.unwrap_or_default());
        }
    }

    /// A run holds per-CTA state (slot numbers, counts) for about its resident CTAs, not for
    /// every CTA of the kernel, under both issue units, and writes every CTA's counts.
    #[test]
    fn a_run_holds_per_cta_state_for_its_resident_ctas_only() {
        // 3000 one-thread CTAs, each loading a line of 50 and a line all of them load.
        let ctas: Vec<Vec<Vec<Load>>> = (0..3000u64)
            .map(|c| vec![vec![(0, c % 50, 0, 4), (1, 60, 0, 4)]])
            .collect();
        let k = kernel(1, &ctas);
        for portions in [true, false] {
            let mut c = setting(32, 2, true, 0.0);
            c.gpu.max_ctas_per_sm = 4;
            let t = c.timing.as_mut().expect("timing");
            if !portions {
                t.rules.set("issue", "warp").expect("rule");
            }
            let streams = streams_of(&c, &k);
            let t = c.timing.as_ref().expect("timing");
            let (p, fa) = Variant::Full.params(t);
            let mut e = Engine::new(&c.cache, p, fa, c.seed);
            let run = e
                .run_kernel(&k, streams.shape(), &mut &streams, 0, &c.gpu, &mut Quiet)
                .expect("run");
            assert!(e.most_held <= 8, "held {} CTAs' state", e.most_held);
            let written: Vec<u32> = run.ctas.iter().map(|(cta, _)| cta).collect();
            assert_eq!(written, (0..3000).collect::<Vec<u32>>());
            assert!(run.ctas.iter().all(|(_, t)| t.counts.requests == 2));
            // About ten bytes a CTA, where the dense tables took 64.
            let bytes = run.ctas.heap_bytes();
            assert!(
                bytes < 3000 * 24,
                "{bytes} bytes for 3000 CTAs ({portions})"
            );
        }
    }

    /// A 256-byte load makes groups of less than a thread by the released model's rule
    /// (64 of them in a warp of 32): each thread then goes alone, and the warps finish.
    #[test]
    fn loads_of_more_than_four_bytes_a_lane_issue_a_thread_at_a_time() {
        let threads: Vec<Vec<_>> = (0..4u64).map(|t| vec![(0, t * 16, 0, 256)]).collect();
        let k = kernel(4, &[threads]);
        let c = setting(32, 0, true, 0.0);
        let (in_step, _) = runs(&c, &k, false);
        assert_eq!(difference(&in_step, &runs(&c, &k, true).0), None);
        let requests = in_step
            .iter()
            .filter(|l| l.starts_with("Full TimedRequest"));
        assert_eq!(requests.count(), 4);
    }

    /// Warps of more than 64 threads are refused under thread portions, with the limit.
    #[test]
    fn warps_wider_than_a_mask_are_refused_under_thread_portions() {
        let threads: Vec<Vec<_>> = (0..128u64).map(|t| vec![(0, t, 0, 4)]).collect();
        let k = kernel(128, &[threads]);
        let c = setting(128, 0, true, 0.0);
        let t = c.timing.as_ref().expect("timing");
        let built = WarpStreams::build(&k, 0..1, 128, c.coalescing, &c.cache, &c.gpu, &t.rules);
        let e = built.expect_err("refused");
        assert_eq!(
            e,
            super::super::TimingError::WarpTooWide {
                threads: 128,
                max: 64
            }
        );
        assert!(e.to_string().contains("at most 64"), "{e}");
    }

    /// Random CTAs for [`kernel`]: `count` CTAs of 1 to 40 threads, each with up to 6 loads
    /// of 4, 8 or 16 bytes, to lines below `lines`.
    fn ctas(
        lines: u64,
        count: std::ops::Range<usize>,
    ) -> impl Strategy<Value = Vec<Vec<Vec<Load>>>> {
        let load = (
            0u8..3,
            0..lines,
            0u64..4,
            prop_oneof![Just(4u16), Just(8), Just(16)],
        );
        let thread = prop::collection::vec(load, 0..7);
        prop::collection::vec(prop::collection::vec(thread, 1..41), count)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Issuing a warp's loads position by position while its lanes keep in step gives
        /// every issue attempt, count and statistic of issuing them lane by lane: random
        /// per-thread loads of 4, 8 and 16 bytes, of unequal lengths, warps of 4 to 32
        /// threads, CTAs that are not whole warps, 1 to 3 or unlimited MSHRs checked either
        /// way, random latencies, room for 1 to 3 CTAs at a time (later CTAs take the slots
        /// of finished ones).
        #[test]
        fn issuing_in_step_is_issuing_lane_by_lane(
            ctas in ctas(24, 1..5),
            resident in 1u32..4,
            block in prop_oneof![Just(5u32), Just(8), Just(32), Just(40)],
            warp_size in prop_oneof![Just(4u32), Just(6), Just(8), Just(32)],
            mshrs in 0u32..4,
            first_thread in any::<bool>(),
            sigma in prop_oneof![Just(0.0), Just(3.0)],
        ) {
            let k = kernel(block, &ctas);
            let mut c = setting(warp_size, mshrs, first_thread, sigma);
            c.gpu.max_ctas_per_sm = resident;
            let d = difference(&runs(&c, &k, false).0, &runs(&c, &k, true).0);
            prop_assert!(d.is_none(), "{}", d.unwrap_or_default());
        }

        /// Letting go of the fills that arrived before the current step changes nothing: a
        /// run that lets go of them at every fill issues, counts and measures as one that
        /// keeps every fill (random per-thread loads on a small cache, under the released
        /// model's rules and ours, whose lines arriving in the very step are looked at).
        #[test]
        fn letting_go_of_arrived_fills_changes_nothing(
            ctas in ctas(40, 1..4),
            block in prop_oneof![Just(8u32), Just(32)],
            mshrs in 0u32..4,
            first_thread in any::<bool>(),
            sigma in prop_oneof![Just(0.0), Just(3.0)],
            ours in any::<bool>(),
        ) {
            let k = kernel(block, &ctas);
            let mut c = setting(8, mshrs, first_thread, sigma);
            if ours {
                let t = c.timing.as_mut().expect("timing");
                t.rules = crate::config::TimingRules::default();
            }
            let kept = runs_slots(&c, &k, false, false).0;
            let d = difference(&runs_slots(&c, &k, false, true).0, &kept);
            prop_assert!(d.is_none(), "{}", d.unwrap_or_default());
        }
    }
}
