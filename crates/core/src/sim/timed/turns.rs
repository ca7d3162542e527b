//! One kernel of a timing-model job run a number of turns at a time ([`TimedJob::begin_kernel`],
//! [`TimedJob::turns`]), for a caller that runs the model between frames (`steps.rs`): the
//! SMs take their turns as they do in a whole run of the kernel, the earliest clock first (the
//! lowest numbered SM on a tie), so the result is the same however the turns are cut.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{timing_err, Adapter, TimedJob};
use crate::sim::{Observer, SimError};
use crate::timing::{CtaFeed, KernelState, Shape, Turn};
use crate::trace::Kernel;

/// A kernel under way in a job: each SM's state, whose turn comes next, and what the job's
/// hooks keep from one call to the next.
pub struct KernelTurns {
    kernel: u32,
    states: Vec<Option<KernelState>>,
    turns: BinaryHeap<Reverse<(u64, usize)>>,
    since_progress: u32,
    rows_before: u64,
    total: u64,
    sm_rows: Vec<u64>,
    refused: rustc_hash::FxHashMap<(u32, u32, u64), u32>,
}

/// Turns between two progress reports (each SM tells its own every 4096 of its turns too).
const PROGRESS_TURNS: u32 = 4096;

impl TimedJob {
    /// Starts kernel `k` (of `shape`) on every SM of the job, at the time the last one ended
    /// the kernel before. `observer` (its wish for requests) and progress counted from
    /// `rows_before` of `total` as for [`TimedJob::kernel`].
    pub fn begin_kernel(
        &mut self,
        k: &Kernel,
        shape: Shape,
        observer: &mut dyn Observer,
        rows_before: u64,
        total: u64,
    ) -> KernelTurns {
        let kernel = self.sms.first().map_or(0, |s| s.2.len()) as u32;
        if let Some(l2) = &mut self.l2 {
            l2.keep_events(self.full && observer.wants_requests());
        }
        let start = self.sms.iter().map(|s| s.1.now()).max().unwrap_or(0);
        let mut states = Vec::with_capacity(self.sms.len());
        let mut turns = BinaryHeap::with_capacity(self.sms.len());
        for (i, (sm, engine, _)) in self.sms.iter_mut().enumerate() {
            engine.wait_until(start);
            states.push(Some(engine.start_kernel(k, shape, *sm, &self.gpu)));
            turns.push(Reverse((engine.now(), i)));
        }
        KernelTurns {
            kernel,
            sm_rows: vec![0; states.len()],
            states,
            turns,
            since_progress: 0,
            rows_before: rows_before + self.rows,
            total,
            refused: Default::default(),
        }
    }

    /// Runs up to `max` turns of the kernel `run` is of (`k`, its CTAs from `feed`); `true`
    /// once the kernel has ended on every SM (its runs recorded, as [`TimedJob::kernel`]
    /// records them).
    pub fn turns(
        &mut self,
        run: &mut KernelTurns,
        k: &Kernel,
        feed: &mut dyn CtaFeed,
        observer: &mut dyn Observer,
        max: u32,
    ) -> Result<bool, SimError> {
        let mut hooks = Adapter {
            observer,
            full: self.full,
            sm: self.sms.first().map_or(0, |s| s.0),
            kernel: run.kernel,
            order: &mut self.order,
            rows_before: run.rows_before,
            sm_rows: std::mem::take(&mut run.sm_rows),
            current: 0,
            total: run.total,
            refused: std::mem::take(&mut run.refused),
        };
        let mut result = Ok(());
        for _ in 0..max {
            let Some(Reverse((_, i))) = run.turns.pop() else {
                break;
            };
            run.since_progress += 1;
            if run.since_progress >= PROGRESS_TURNS {
                run.since_progress = 0;
                for (r, st) in hooks.sm_rows.iter_mut().zip(&run.states) {
                    *r = st.as_ref().map_or(*r, KernelState::rows);
                }
                if !hooks.go_on() {
                    result = Err(SimError::Cancelled);
                    break;
                }
            }
            let (sm, engine, _) = &mut self.sms[i];
            let Some(st) = run.states[i].as_mut() else {
                continue;
            };
            hooks.sm = *sm;
            hooks.current = i;
            engine.l2 = self.l2.take();
            let turn = engine.step(st, feed, &mut hooks);
            self.l2 = engine.l2.take();
            match turn {
                Ok(Turn::More) => run.turns.push(Reverse((engine.now(), i))),
                Ok(_) => {}
                Err(e) => {
                    result = Err(timing_err(k, e));
                    break;
                }
            }
        }
        run.sm_rows = hooks.sm_rows;
        run.refused = hooks.refused;
        result?;
        if !run.turns.is_empty() {
            return Ok(false);
        }
        for ((_, engine, kernels), st) in self.sms.iter_mut().zip(&mut run.states) {
            if let Some(st) = st.take() {
                let kr = engine.end_kernel(st, feed);
                self.rows += kr.rows;
                kernels.push(kr);
            }
        }
        Ok(true)
    }
}
