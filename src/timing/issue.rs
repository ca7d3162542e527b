//! The two issue units of the timing model: a warp instruction with its coalesced requests
//! (ours), or the released model of Nugteren et al. (2014)'s groups of threads by access
//! size, each thread with its own program counter ([`crate::config::IssueUnit`]).

use rustc_hash::FxHashMap;

use super::engine::{Engine, Hooks, KernelRun, Status, TimedRequest, MAX_LATENCY_BIN};
use super::warps::Warps;
use crate::config::Arrivals;

impl Engine {
    /// Counts one issued request.
    pub(super) fn count(&mut self, run: &mut KernelRun, rec: &TimedRequest) {
        let miss = self.reported_miss(rec.distance);
        let infinite = rec.distance.is_none();
        let fill = rec.status == Status::Miss && !rec.in_flight;
        for counts in [
            &mut run.counts,
            &mut run.per_inst[rec.inst as usize],
            &mut run.per_cta[rec.cta as usize],
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
        let (inst, first, end) = match replay.remove(&gw) {
            Some((inst, next)) => (inst, next, warps.current(gw).req_end),
            None => {
                let e = warps.issue(gw);
                run.rows += e.accesses as u64;
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
        let start = warps.current(gw).req_start;
        for i in first..end {
            let line = warps.cta(cta).reqs[i as usize];
            let (status, mut rec) = self.request(line, gw, i == first);
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
            self.count(run, &rec);
        }
        if self.p.rules.arrivals == Arrivals::AfterGroup {
            self.apply_effects(self.now + 1);
        }
        Some(ready_at)
    }

    /// Issues warp `gw` the released model's way: its threads in groups by the first
    /// thread's access size (the whole warp for 4 bytes, halves for 8, quarters for 16, ...),
    /// each thread its next load; the effects due now are applied after each group. An
    /// MSHR stall of the first thread ends the first group; the other groups still issue.
    pub(super) fn issue_portions(
        &mut self,
        gw: u32,
        warps: &mut Warps,
        run: &mut KernelRun,
        hooks: &mut dyn Hooks,
    ) -> Option<u64> {
        let wpc = warps.shape.wpc;
        let (cta, w) = (gw / wpc, gw % wpc);
        let (base, threads) = warps.threads_of(gw);
        let warp_size = warps.shape.warp_size;
        let (streams, pcs) = warps.loads_of(cta);
        let lane0 = threads.start;
        let bytes = if pcs[base + lane0] < streams.thread_range(lane0).1 {
            streams.loads[pcs[base + lane0] as usize].bytes as u32
        } else {
            1
        };
        let portions = (bytes / 4).max(1);
        // A warp's loads lie lane by lane, position by position (`build::add_threads`).
        let stride = threads.len() as u32;
        let per_portion = (warp_size / portions) as usize;
        let mut ready_at = self.now;
        let mut issued = false;
        for p in 0..portions as usize {
            let lanes = threads.start + p * per_portion..threads.start + (p + 1) * per_portion;
            for t in lanes.start..lanes.end.min(threads.end) {
                let pc = pcs[base + t];
                if pc >= streams.thread_range(t).1 {
                    continue;
                }
                let a = streams.loads[pc as usize];
                pcs[base + t] += stride;
                if !a.leader {
                    self.count_access(run, a.inst, cta);
                    continue;
                }
                let (status, mut rec) = self.request(a.line, gw, t == lane0);
                rec.cta = cta;
                rec.warp = w;
                rec.inst = a.inst;
                self.record(&rec, hooks);
                if status == Status::Cancelled {
                    pcs[base + t] -= stride;
                    self.stats.mshr_stalls += 1;
                    ready_at = self.now;
                    break;
                }
                issued = true;
                self.count_access(run, a.inst, cta);
                run.transactions_inst[a.inst as usize] += 1;
                run.transactions_cta[cta as usize] += 1;
                if rec.status == Status::Miss {
                    ready_at = ready_at.max(rec.effect_at);
                }
                self.count(run, &rec);
            }
            if self.p.rules.arrivals == Arrivals::AfterGroup {
                self.apply_effects(self.now + 1);
            }
        }
        run.warp_instructions += issued as u64;
        warps.deferred[gw as usize] = warps.state_of(gw);
        Some(ready_at)
    }

    fn count_access(&mut self, run: &mut KernelRun, inst: u32, cta: u32) {
        run.rows += 1;
        run.accesses_inst[inst as usize] += 1;
        run.accesses_cta[cta as usize] += 1;
    }
}
