//! A kernel scheduled as it is read, CTA by CTA: memory holds the rows of the CTAs resident
//! on the SMs (and of the one offered next), never the whole kernel. The issue order is the
//! one [`super::Scheduler`] gives the whole kernel: the scheduler runs until it needs a CTA
//! that was not offered yet ([`Step::Starved`]), and the caller offers the next one.

use std::collections::VecDeque;
use std::sync::Arc;

use super::threads::{Rows, ThreadSched};
use super::{Issue, ScheduleError};
use crate::config::{GpuConfig, ScheduleConfig};
use crate::trace::{Columns, Kernel, Order};

/// What the scheduler did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A warp instruction issued.
    Issued(Issue),
    /// It needs the next CTA's rows first ([`CtaScheduler::offer`], or
    /// [`CtaScheduler::close`] when there are no more).
    Starved,
    /// Every CTA has finished.
    Done,
}

/// The rows of offered and resident CTAs, one slot each; a slot's columns are reused once
/// its CTA finishes, unless they are shared (given by [`CtaScheduler::offer_shared`]).
struct Slots {
    cols: Vec<Arc<Columns>>,
    free: Vec<u32>,
    /// Offered CTAs not launched yet, in order, with their slots.
    offered: VecDeque<(u32, u32)>,
    /// Shared rows of finished CTAs let go of, kept for the caller to reuse
    /// ([`CtaScheduler::recycle_rows`]); `None`: dropped.
    released: Option<Vec<Arc<Columns>>>,
    /// CTAs finished since [`CtaScheduler::take_finished`] was last called.
    finished: Vec<u32>,
}

impl Slots {
    /// Lets go of the rows of finished CTAs that other schedulers share (its own are kept
    /// for reuse), to the caller when it asked ([`CtaScheduler::recycle_rows`]).
    fn let_go_of_shared(&mut self) {
        for i in 0..self.free.len() {
            let c = &mut self.cols[self.free[i] as usize];
            if Arc::strong_count(c) > 1 {
                let old = std::mem::take(c);
                self.release(old);
            }
        }
    }

    /// Keeps `rows` for the caller, when it asked and they hold anything.
    fn release(&mut self, rows: Arc<Columns>) {
        if let Some(r) = self.released.as_mut().filter(|_| !rows.is_empty()) {
            r.push(rows);
        }
    }

    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.cols.push(Arc::default());
            (self.cols.len() - 1) as u32
        })
    }
}

impl Rows for Slots {
    fn cols(&self, slot: u32) -> &Columns {
        &self.cols[slot as usize]
    }
    fn slot_for(&mut self, cta: u32, s: &mut ThreadSched) -> u32 {
        let slot = match self.offered.front() {
            Some(&(c, slot)) if c == cta => {
                self.offered.pop_front();
                slot
            }
            // A CTA that was never offered has no rows.
            _ => {
                let slot = self.take();
                self.cols[slot as usize] = Arc::default();
                slot
            }
        };
        let tpb = s.tpb;
        let base = s.slot_threads(slot);
        let need = s.slot_threads(slot + 1);
        if s.cursor.len() < need {
            s.cursor.resize(need, 0);
            s.end.resize(need, 0);
        }
        // Rows are grouped by thread in increasing order (checked by `offer`).
        let first = cta * tpb;
        let threads = &self.cols[slot as usize].thread;
        let mut at = 0usize;
        for t in 0..tpb {
            s.cursor[base + t as usize] = at as u32;
            while at < threads.len() && threads[at] == first + t {
                at += 1;
            }
            s.end[base + t as usize] = at as u32;
        }
        slot
    }
    fn retired(&mut self, cta: u32, slot: u32) {
        // Its rows stay until the next offer: the warp instruction that finished the CTA
        // is simulated after this.
        self.free.push(slot);
        self.finished.push(cta);
    }
}

/// Schedules one kernel whose CTAs arrive in order ([`CtaScheduler::offer`]).
pub struct CtaScheduler {
    s: ThreadSched,
    slots: Slots,
    /// CTAs offered so far (the next offer is CTA `offered` or later).
    offered: u32,
    grid_ctas: u32,
}

impl CtaScheduler {
    /// A scheduler for the kernel `header` describes (its rows are ignored). Only kernels
    /// whose warps the scheduler forms can be read CTA by CTA, not issued-order ones.
    pub fn new(
        header: &Kernel,
        sched: &ScheduleConfig,
        gpu: &GpuConfig,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        if header.order == Order::Issued {
            return Err(ScheduleError::CtaRows {
                cta: 0,
                message: "an issued-order kernel is replayed as recorded, not scheduled by CTA"
                    .into(),
            });
        }
        Ok(CtaScheduler {
            s: ThreadSched::new(header, sched, gpu, seed)?,
            slots: Slots {
                cols: Vec::new(),
                free: Vec::new(),
                offered: VecDeque::new(),
                released: None,
                finished: Vec::new(),
            },
            offered: 0,
            grid_ctas: header.num_ctas(),
        })
    }

    /// Gives the rows of CTA `cta` (linear id), grouped by thread in increasing order.
    /// CTAs must come in increasing order; one skipped has no rows. Offer only when
    /// [`CtaScheduler::next`] says [`Step::Starved`]: then memory holds the resident CTAs
    /// and this one.
    pub fn offer(&mut self, cta: u32, rows: &Columns) -> Result<(), ScheduleError> {
        self.offer_with(cta, rows, |c| {
            // The slot's old columns are reused unless someone else still holds them.
            let c = Arc::make_mut(c);
            c.clear();
            c.extend_from(rows, 0..rows.len());
            None
        })
    }

    /// As [`CtaScheduler::offer`], but the rows are kept, not copied: schedulers of
    /// several sessions fed the same CTAs (sessions side by side on several cores) share
    /// one copy of each resident CTA.
    pub fn offer_shared(&mut self, cta: u32, rows: Arc<Columns>) -> Result<(), ScheduleError> {
        let shared = rows.clone();
        self.offer_with(cta, &rows, move |c| Some(std::mem::replace(c, shared)))
    }

    /// Keeps the shared rows of finished CTAs, once this scheduler lets go of them, for
    /// [`CtaScheduler::take_released`], so that the caller can reuse their memory for later
    /// CTAs (a shell reading on another thread: `shell::lanes`). Take them often: they are
    /// kept until taken.
    pub fn recycle_rows(&mut self) {
        self.slots.released.get_or_insert_with(Vec::new);
    }

    /// Hands `f` the shared rows let go of since the last call
    /// ([`CtaScheduler::recycle_rows`]).
    pub fn take_released(&mut self, f: &mut dyn FnMut(Arc<Columns>)) {
        if let Some(r) = self.slots.released.as_mut() {
            r.drain(..).for_each(f);
        }
    }

    /// Hands `f` the CTAs that finished since the last call, in the order they did, with the
    /// SM each ran on ([`CtaScheduler::cta_sm`]). A CTA finishes as its last warp instruction
    /// is issued ([`CtaScheduler::next`]): once that instruction is simulated, nothing more
    /// of the CTA comes.
    pub fn take_finished(&mut self, mut f: impl FnMut(u32, Option<u32>)) {
        let s = &self.s;
        self.slots
            .finished
            .drain(..)
            .for_each(|c| f(c, s.cta_sm(c)));
    }

    /// Whether any CTA finished since [`CtaScheduler::take_finished`] was last called.
    #[inline]
    pub fn any_finished(&self) -> bool {
        !self.slots.finished.is_empty()
    }

    /// Offers CTA `cta`'s `rows`, which `keep` puts in the slot (returning what the slot held
    /// before, when that is to be let go of).
    fn offer_with(
        &mut self,
        cta: u32,
        rows: &Columns,
        keep: impl FnOnce(&mut Arc<Columns>) -> Option<Arc<Columns>>,
    ) -> Result<(), ScheduleError> {
        let err = |message: String| Err(ScheduleError::CtaRows { cta, message });
        if cta < self.offered || cta >= self.grid_ctas {
            return err(format!(
                "expected a CTA from {} to {} in order",
                self.offered,
                self.grid_ctas.saturating_sub(1)
            ));
        }
        let tpb = self.s.tpb;
        let (first, last) = (cta * tpb, cta * tpb + tpb);
        if let Some(i) = rows.thread.windows(2).position(|w| w[1] < w[0]) {
            return err(format!(
                "rows are not grouped by thread: thread {} after thread {}",
                rows.thread[i + 1],
                rows.thread[i]
            ));
        }
        if let Some(&t) = rows.thread.iter().find(|&&t| t < first || t >= last) {
            return err(format!(
                "thread {t} is not one of its threads ({first} to {})",
                last - 1
            ));
        }
        self.offered = cta + 1;
        // CTAs past the thread limit never run: nothing of them is kept.
        if cta >= self.s.ctas() {
            return Ok(());
        }
        self.s.avail = self.offered.min(self.s.ctas());
        self.slots.let_go_of_shared();
        let slot = self.slots.take();
        if let Some(old) = keep(&mut self.slots.cols[slot as usize]) {
            self.slots.release(old);
        }
        self.slots.offered.push_back((cta, slot));
        Ok(())
    }

    /// No more CTAs will be offered: those not offered have no rows.
    pub fn close(&mut self) {
        self.offered = self.grid_ctas;
        self.s.avail = self.s.ctas();
    }

    /// The next warp instruction; its rows, in [`CtaScheduler::columns`] of its CTA, go to
    /// `rows`.
    pub fn next(&mut self, rows: &mut Vec<u32>) -> Step {
        self.s.next(&mut self.slots, rows)
    }

    /// The rows of CTA `cta`, while it runs (the rows of a [`Step::Issued`] index them).
    pub fn columns(&self, cta: u32) -> &Columns {
        self.slots.cols(self.s.slot_of(cta))
    }

    /// The SM a CTA ran on (`None` if it never ran).
    pub fn cta_sm(&self, cta: u32) -> Option<u32> {
        self.s.cta_sm(cta)
    }

    /// A copy that holds every decision made so far but no rows, and the CTAs whose rows it
    /// needs back ([`CtaScheduler::give_rows`]) before it goes on: the resident ones and any
    /// offered but not launched, in increasing order. The rows are what a trace file gives
    /// again (a copy of a session to zoom from later would otherwise pin every resident CTA).
    pub fn copy_without_rows(&self) -> (CtaScheduler, Vec<u32>) {
        let mut wanted = self.s.resident();
        wanted.extend(self.slots.offered.iter().map(|&(c, _)| c));
        wanted.sort_unstable();
        let copy = CtaScheduler {
            s: self.s.clone(),
            slots: Slots {
                cols: vec![Arc::default(); self.slots.cols.len()],
                free: self.slots.free.clone(),
                offered: self.slots.offered.clone(),
                released: None,
                finished: self.slots.finished.clone(),
            },
            offered: self.offered,
            grid_ctas: self.grid_ctas,
        };
        (copy, wanted)
    }

    /// Gives a copy ([`CtaScheduler::copy_without_rows`]) back the rows of CTA `cta`, one of
    /// those it wants. They must be the rows it had: a resident CTA's threads must end where
    /// its cursors say, so a trace file that changed since is an error, not a wrong result.
    pub fn give_rows(&mut self, cta: u32, rows: Columns) -> Result<(), ScheduleError> {
        let err = |message: String| Err(ScheduleError::CtaRows { cta, message });
        let tpb = self.s.tpb;
        let first = cta.saturating_mul(tpb);
        if let Some(&(_, slot)) = self.slots.offered.iter().find(|&&(c, _)| c == cta) {
            let last = first.saturating_add(tpb);
            let grouped = rows.thread.windows(2).all(|w| w[0] <= w[1]);
            if !grouped || rows.thread.iter().any(|&t| t < first || t >= last) {
                return err("rows not of its threads, or not grouped by thread".into());
            }
            self.slots.cols[slot as usize] = Arc::new(rows);
            return Ok(());
        }
        if !self.s.resident().contains(&cta) {
            return err("it is not resident nor offered: its rows are not wanted".into());
        }
        let slot = self.s.slot_of(cta);
        let base = self.s.slot_threads(slot);
        let mut at = 0usize;
        for t in 0..tpb {
            while at < rows.len() && rows.thread[at] == first + t {
                at += 1;
            }
            if self.s.end[base + t as usize] as usize != at {
                return err(format!(
                    "thread {} has other rows than when the copy was taken (the trace changed)",
                    first + t
                ));
            }
        }
        if at != rows.len() {
            return err("rows of other threads (the trace changed since the copy)".into());
        }
        self.slots.cols[slot as usize] = Arc::new(rows);
        Ok(())
    }

    /// About the bytes it holds besides the rows.
    pub fn heap_bytes(&self) -> usize {
        self.s.heap_bytes() + 8 * self.slots.cols.capacity()
    }
}
