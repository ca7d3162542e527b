//! One kernel on one SM under the timing model, a step at a time: the issue loop of
//! Nugteren et al. (2014) §4.5 (launch CTAs, let the warps whose latency has passed rejoin
//! the queue, issue the next warp's instruction) as a state that a driver advances turn by
//! turn. [`Engine::run_kernel`] runs it to the end on its own; with a shared L2 the driver
//! (`sim::timed`) advances every SM's in the order of their clocks, so that the L2 sees
//! their requests in the order they issue.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::engine::{Engine, Hooks, KernelRun, TimingError};
use super::streams::{CtaFeed, Shape};
use super::warps::Warps;
use crate::config::{
    CtaLaunch, FinishedWarps, GpuConfig, IssueUnit, Kernels, MshrCheck, WarpReturn,
};
use crate::trace::Kernel;

/// Where one SM is in one kernel ([`Engine::start_kernel`]).
pub struct KernelState {
    run: KernelRun,
    warps: Warps,
    /// The CTAs this SM has still to launch, and how many it may hold at once.
    my_ctas: std::iter::StepBy<std::ops::Range<u32>>,
    resident_max: u32,
    /// A warp whose instruction was cut short by an MSHR stall: (instruction, next request).
    replay: FxHashMap<u32, (u32, u32)>,
    /// Warps waiting for their requests: (step they rejoin, tie-break, warp).
    delayed: BinaryHeap<Reverse<(u64, u64, u32)>>,
    dseq: u64,
    since_progress: u32,
}

/// What a turn of the issue loop left ([`Engine::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// The kernel goes on (the clock may or may not have moved).
    More,
    /// Every CTA of the SM has finished.
    Done,
}

impl KernelState {
    /// Rows (thread accesses) issued so far.
    pub fn rows(&self) -> u64 {
        self.run.rows
    }
}

impl Engine {
    /// Starts kernel `k` (its header: its rows are not read) of `shape` on SM `sm`: its CTAs
    /// `sm, sm + sms, ...`.
    pub fn start_kernel(
        &mut self,
        k: &Kernel,
        shape: Shape,
        sm: u32,
        gpu: &GpuConfig,
    ) -> KernelState {
        let rules = self.p.rules;
        if rules.kernels == Kernels::Cold {
            self.reset();
        }
        let mut run = KernelRun::default();
        run.take_insts(k.instructions.len());
        let sms = gpu.sms.max(1);
        let take_a_step = rules.finished_warps == FinishedWarps::TakeAStep;
        let threads = rules.issue == IssueUnit::ThreadPortions;
        KernelState {
            run,
            warps: Warps::new(shape, threads, take_a_step, self.lane_by_lane),
            my_ctas: (sm..shape.ctas).step_by(sms as usize),
            resident_max: shape.resident_max(gpu),
            replay: FxHashMap::default(),
            delayed: BinaryHeap::new(),
            dseq: 0,
            since_progress: 0,
        }
    }

    /// One turn of the issue loop: CTAs launched where there is room, the warps whose
    /// latency has passed back in the queue, then one warp's instruction issued (the clock
    /// moves a step), or the clock moved on to the next warp's return when none is ready.
    pub fn step(
        &mut self,
        st: &mut KernelState,
        feed: &mut dyn CtaFeed,
        hooks: &mut dyn Hooks,
    ) -> Result<Turn, TimingError> {
        let rules = self.p.rules;
        let KernelState { run, warps, .. } = st;
        // Start CTAs: whenever one finished, or a whole set when the last one did.
        warps.finished = false;
        retire(warps, run, feed);
        #[cfg(test)]
        {
            let held = warps.slot_span().max(run.ctas.waiting());
            self.most_held = self.most_held.max(held);
        }
        if rules.cta_launch == CtaLaunch::AsFinished || warps.resident == 0 {
            let room = Room {
                resident_max: st.resident_max,
                ctas: &mut st.my_ctas,
            };
            launch_ctas(room, warps, run, feed, hooks)?;
        }
        // Warps whose latency has passed rejoin the queue.
        while let Some(&Reverse((t, _, gw))) = st.delayed.peek() {
            if t > self.now {
                break;
            }
            st.delayed.pop();
            warps.rejoin(gw);
        }
        if warps.finished {
            return Ok(Turn::More);
        }
        let Some(gw) = warps.fifo.pop_front() else {
            return Ok(match st.delayed.peek() {
                Some(&Reverse((t, _, _))) => {
                    self.stats.idle_steps += t - self.now;
                    self.now = t;
                    Turn::More
                }
                None => Turn::Done,
            });
        };
        if rules.mshr_check == MshrCheck::FirstThread {
            // Lines arriving in this step still hold their MSHR at its start.
            self.apply_effects(self.now);
            self.pending_at_step = self.pending.len();
        }
        if warps.is_last_step(gw) {
            warps.leave(gw);
            self.now += 1;
            return Ok(Turn::More);
        }
        let ready_at = if rules.issue == IssueUnit::ThreadPortions {
            self.issue_portions(gw, warps, run, hooks)
        } else {
            self.issue_warp(gw, warps, &mut st.replay, run, hooks)
        };
        st.since_progress += 1;
        if st.since_progress >= 4096 {
            st.since_progress = 0;
            if !hooks.progress(run.rows) {
                return Err(TimingError::Cancelled);
            }
        }
        match ready_at {
            None => warps.fifo.push_back(gw),
            Some(at) if self.p.warp_delay && at > self.now => {
                let (due, tie) = match rules.warp_return {
                    WarpReturn::OnArrival => (at, st.dseq),
                    WarpReturn::StepAfterByWarpId => (at + 1, gw as u64),
                };
                st.delayed.push(Reverse((due, tie, gw)));
                st.dseq += 1;
            }
            Some(_) => warps.rejoin(gw),
        }
        self.sample_occupancy();
        self.now += 1;
        Ok(Turn::More)
    }

    /// Ends a kernel whose last turn was [`Turn::Done`]: its last CTAs let go, every pending
    /// request applied; what it produced.
    pub fn end_kernel(&mut self, st: KernelState, feed: &mut dyn CtaFeed) -> KernelRun {
        let KernelState {
            mut run, mut warps, ..
        } = st;
        #[cfg(test)]
        {
            self.most_slots = self.most_slots.max(warps.slots());
        }
        retire(&mut warps, &mut run, feed);
        self.stats.time_steps = self.now;
        self.drain();
        self.kernel_index += 1;
        run
    }

    /// Runs one kernel's CTAs `sm, sm + sms, ...` on this SM, from the warps' streams
    /// (of the kernel's `shape`) that `feed` gives as each CTA is launched. `k`: the
    /// kernel's header (its rows are not read).
    pub fn run_kernel(
        &mut self,
        k: &Kernel,
        shape: Shape,
        feed: &mut dyn CtaFeed,
        sm: u32,
        gpu: &GpuConfig,
        hooks: &mut dyn Hooks,
    ) -> Result<KernelRun, TimingError> {
        let mut st = self.start_kernel(k, shape, sm, gpu);
        while self.step(&mut st, feed, hooks)? == Turn::More {}
        Ok(self.end_kernel(st, feed))
    }
}

/// The CTAs an SM may still launch and how many it may hold at once.
struct Room<'c, I> {
    resident_max: u32,
    ctas: &'c mut I,
}

/// Launches the SM's next CTAs from `feed` while it has room for them.
fn launch_ctas<I: Iterator<Item = u32>>(
    room: Room<'_, I>,
    warps: &mut Warps,
    run: &mut KernelRun,
    feed: &mut dyn CtaFeed,
    hooks: &mut dyn Hooks,
) -> Result<(), TimingError> {
    while warps.resident < room.resident_max {
        let Some(c) = room.ctas.next() else { break };
        let streams = feed.cta(c, &mut Progress(&mut *hooks, run.rows))?;
        run.take_insts(streams.insts as usize);
        // Thread portions: its loads, counted once (every one is issued or served before the
        // kernel ends).
        let mut loads = 0;
        for &(i, n) in &streams.inst_loads {
            run.accesses_inst[i as usize] += n;
            loads += n;
        }
        let slot = warps.launch(c, streams);
        run.ctas.open(slot, c);
        run.ctas.at(slot).accesses += loads;
        // A CTA without loads has finished already: its slot may go to the next.
        retire(warps, run, feed);
    }
    Ok(())
}

/// Lets go of the CTAs that finished since the last call: their streams go back to the feed
/// and their tallies are final (their slots may be taken by the next CTAs launched).
fn retire(warps: &mut Warps, run: &mut KernelRun, feed: &mut dyn CtaFeed) {
    for done in warps.released.drain(..) {
        feed.done(done);
    }
    for slot in warps.retired.drain(..) {
        run.ctas.close(slot as usize);
    }
}

/// The hooks of a run while its feed waits for a CTA: progress stays at the run's rows.
struct Progress<'h>(&'h mut dyn Hooks, u64);

impl Hooks for Progress<'_> {
    fn progress(&mut self, _rows: u64) -> bool {
        self.0.progress(self.1)
    }
    fn more_instructions(&mut self, added: &[crate::trace::Instruction]) {
        self.0.more_instructions(added);
    }
}
