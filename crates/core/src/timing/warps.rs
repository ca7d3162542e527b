//! The warps of one kernel on one SM: where each is in its stream, the ready queue, CTA
//! barriers and which CTAs are resident, with their streams (a CTA's are let go when it
//! finishes, so that a run holds only those of its resident CTAs). Each resident CTA has a
//! slot, reused once it finishes, and every table (its warps' places and states, barrier
//! counts, and under thread portions the threads' own positions for warps whose lanes fell
//! out of step) is kept per slot: a run holds its resident CTAs' state, and slot numbers for
//! the CTAs from its lowest resident one on, not 4 bytes a thread and 14 a warp.

use std::collections::VecDeque;
use std::sync::Arc;

use super::streams::{CtaStreams, Event, Lanes, Shape, NO_ROWS};
use crate::schedule::{BARRIER, DONE, READY};

pub(super) struct Warps {
    pub shape: Shape,
    /// Per CTA: its slot while it is resident. Every other table is kept per slot, and a
    /// slot is reused once its CTA finishes, so that a run holds the state of its resident
    /// CTAs' warps, not the kernel's.
    slot: CtaSlots,
    /// Slots that finished CTAs left.
    free_slots: Vec<u32>,
    /// Per slot: its CTA's streams.
    streams: Vec<Option<Arc<CtaStreams>>>,
    /// Per warp of a slot: its next event (warp instructions); or, for thread portions, the
    /// position of its lanes' next loads while they keep in step ([`OUT_OF_STEP`] once they
    /// do not).
    pos: Vec<u32>,
    /// Thread portions: whether warps start in step (not lane by lane).
    in_step: bool,
    /// Thread portions: whether the streams are per thread.
    threads: bool,
    /// Per thread of a slot (thread portions, for warps out of step): the position of its
    /// next load, `tpb` entries a slot.
    pc: Vec<u32>,
    /// Room for [`Warps::enter`]'s warps to visit (kept, not made at each call).
    work: Vec<u32>,
    /// Per warp of a slot: its state once its current instruction completes.
    deferred: Vec<u8>,
    /// Per warp of a slot: finished, queued once more to take its last step
    /// ([`crate::config::FinishedWarps::TakeAStep`]).
    last_step: Vec<bool>,
    take_a_step: bool,
    /// Per slot: its CTA's warps at the barrier, and those done.
    cta_bar: Vec<u32>,
    cta_done: Vec<u32>,
    /// Warps ready to issue, in order.
    pub fifo: VecDeque<u32>,
    pub resident: u32,
    /// A CTA finished since the last launch.
    pub finished: bool,
    /// The streams of CTAs finished since, to give back to their feed.
    pub released: Vec<Arc<CtaStreams>>,
    /// The slots of CTAs that finished, before they go to other CTAs (taken by the engine).
    pub retired: Vec<u32>,
}

/// A warp of thread portions whose lanes are at different positions: each has its own `pc`.
const OUT_OF_STEP: u32 = u32::MAX;

/// The slots of a run's resident CTAs, kept for the CTAs from the lowest resident one (or the
/// last launched) on: a run launches its CTAs in increasing order, so the table spans about
/// its resident CTAs, not the kernel.
#[derive(Default)]
struct CtaSlots {
    /// The CTA of `slot[0]`.
    base: u32,
    /// Per CTA from `base` on: its slot, or `u32::MAX` when it is not resident.
    slot: Vec<u32>,
}

impl CtaSlots {
    /// CTA `cta`'s slot, `u32::MAX` when it is not resident.
    #[inline]
    fn get(&self, cta: u32) -> u32 {
        cta.checked_sub(self.base)
            .and_then(|i| self.slot.get(i as usize))
            .copied()
            .unwrap_or(u32::MAX)
    }

    fn set(&mut self, cta: u32, slot: u32) {
        if self.slot.is_empty() {
            self.base = cta;
        } else if cta < self.base {
            let before = (self.base - cta) as usize;
            self.slot
                .splice(0..0, std::iter::repeat_n(u32::MAX, before));
            self.base = cta;
        }
        let i = (cta - self.base) as usize;
        if self.slot.len() <= i {
            self.slot.resize(i + 1, u32::MAX);
        }
        self.slot[i] = slot;
    }

    /// CTA `cta` is no longer resident; the CTAs below the lowest resident one are let go.
    fn clear(&mut self, cta: u32) {
        if let Some(i) = cta.checked_sub(self.base) {
            if let Some(s) = self.slot.get_mut(i as usize) {
                *s = u32::MAX;
            }
        }
        let lead = self.slot.iter().take_while(|&&s| s == u32::MAX).count();
        if lead > 0 {
            self.slot.drain(..lead);
            self.base = self.base.saturating_add(lead as u32);
        }
    }
}

impl Warps {
    /// `threads`: whether the streams are per thread (the thread-portions issue unit).
    /// `lane_by_lane`: issue thread portions lane by lane from the start (the reference for
    /// issuing them position by position).
    pub fn new(shape: Shape, threads: bool, take_a_step: bool, lane_by_lane: bool) -> Self {
        Warps {
            shape,
            slot: CtaSlots::default(),
            free_slots: Vec::new(),
            streams: Vec::new(),
            pos: Vec::new(),
            in_step: threads && !lane_by_lane,
            threads,
            pc: Vec::new(),
            work: Vec::new(),
            deferred: Vec::new(),
            last_step: Vec::new(),
            take_a_step,
            cta_bar: Vec::new(),
            cta_done: Vec::new(),
            fifo: VecDeque::new(),
            resident: 0,
            finished: false,
            released: Vec::new(),
            retired: Vec::new(),
        }
    }

    /// Warp `gw`'s index in the per-slot warp tables (its CTA must be resident).
    #[inline]
    fn wi(&self, gw: u32) -> usize {
        let wpc = self.shape.wpc;
        self.slot.get(gw / wpc) as usize * wpc as usize + (gw % wpc) as usize
    }

    /// Gives CTA `cta` a slot, a finished CTA's or a new one, its tables cleared.
    fn take_slot(&mut self, cta: u32) -> usize {
        let Shape { wpc, tpb, .. } = self.shape;
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                let n = self.streams.len() + 1;
                self.streams.resize(n, None);
                self.pos.resize(n * wpc as usize, 0);
                self.deferred.resize(n * wpc as usize, 0);
                self.last_step.resize(n * wpc as usize, false);
                self.cta_bar.resize(n, 0);
                self.cta_done.resize(n, 0);
                if self.threads {
                    self.pc.resize(n * tpb as usize, 0);
                }
                (n - 1) as u32
            }
        };
        self.slot.set(cta, slot);
        let s = slot as usize;
        self.cta_bar[s] = 0;
        self.cta_done[s] = 0;
        let warps = s * wpc as usize..(s + 1) * wpc as usize;
        self.last_step[warps].fill(false);
        if self.threads {
            self.pc[s * tpb as usize..(s + 1) * tpb as usize].fill(0);
        }
        s
    }

    /// How many CTAs' slot numbers are held (from the lowest resident one on).
    #[cfg(test)]
    pub fn slot_span(&self) -> usize {
        self.slot.slot.len()
    }

    /// How many slots the kernel took so far.
    #[cfg(test)]
    pub fn slots(&self) -> u32 {
        self.streams.len() as u32
    }

    /// The streams of CTA `cta` (none once it has finished).
    pub fn cta(&self, cta: u32) -> &CtaStreams {
        streams_of(&self.slot, &self.streams, cta)
    }

    /// CTA `cta`'s streams, and the threads' next loads (thread portions), to issue from
    /// the one while moving the other on.
    pub fn loads_of(&mut self, cta: u32) -> (&CtaStreams, &mut [u32]) {
        (streams_of(&self.slot, &self.streams, cta), &mut self.pc)
    }

    /// Per thread (thread portions): where the `pc`s of warp `gw`'s CTA start (its slot's
    /// first), and the warp's thread range within its CTA.
    pub fn threads_of(&self, gw: u32) -> (usize, std::ops::Range<usize>) {
        let (cta, w) = (gw / self.shape.wpc, gw % self.shape.wpc);
        let slot = self.slot.get(cta);
        (
            slot as usize * self.shape.tpb as usize,
            self.shape.warp_threads(w),
        )
    }

    /// Thread portions: the position of warp `gw`'s lanes' next loads while they keep in
    /// step (`None`: each lane has its own `pc`).
    pub fn in_step(&self, gw: u32) -> Option<u32> {
        let p = self.pos[self.wi(gw)];
        (p != OUT_OF_STEP).then_some(p)
    }

    /// Thread portions: warp `gw`'s lanes moved on together to position `pos`.
    pub fn step_to(&mut self, gw: u32, pos: u32) {
        let i = self.wi(gw);
        self.pos[i] = pos;
    }

    /// Thread portions: warp `gw`'s lanes were at position `pos` and those of `moved` went
    /// on to the next one; from now on each lane has its own `pc`.
    pub fn out_of_step(&mut self, gw: u32, pos: u32, moved: u64) {
        let (base, threads) = self.threads_of(gw);
        for (lane, t) in threads.enumerate() {
            self.pc[base + t] = pos + (moved >> lane & 1) as u32;
        }
        let i = self.wi(gw);
        self.pos[i] = OUT_OF_STEP;
    }

    pub fn state_of(&self, gw: u32) -> u8 {
        let (cta, w) = (gw / self.shape.wpc, gw % self.shape.wpc);
        let c = self.cta(cta);
        if self.threads {
            let positions = c.positions_of(w);
            let live = match self.in_step(gw) {
                Some(p) => (p as usize) < positions.len(),
                None => {
                    let (base, threads) = self.threads_of(gw);
                    threads
                        .enumerate()
                        .any(|(lane, t)| has_load(positions, self.pc[base + t], lane))
                }
            };
            return if live { READY } else { DONE };
        }
        let p = self.pos[self.wi(gw)];
        if p >= c.warp_range(w).1 {
            DONE
        } else if c.events[p as usize].barrier {
            BARRIER
        } else {
            READY
        }
    }

    /// Makes a CTA resident with its streams and queues its warps; returns its slot.
    pub fn launch(&mut self, cta: u32, streams: Arc<CtaStreams>) -> usize {
        self.resident += 1;
        let wpc = self.shape.wpc;
        let s = self.take_slot(cta);
        let warps = s * wpc as usize..(s + 1) * wpc as usize;
        if self.threads {
            let start = if self.in_step { 0 } else { OUT_OF_STEP };
            self.pos[warps].fill(start);
        } else {
            for (w, p) in self.pos[warps].iter_mut().enumerate() {
                *p = streams.warp_range(w as u32).0;
            }
        }
        self.streams[s] = Some(streams);
        for gw in cta * wpc..(cta + 1) * wpc {
            self.defer(gw);
            self.rejoin(gw);
        }
        s
    }

    /// The slot of resident CTA `cta`.
    #[inline]
    pub fn slot_of(&self, cta: u32) -> usize {
        self.slot.get(cta) as usize
    }

    /// Sets the warp's state once its current instruction completes, from where it is.
    pub fn defer(&mut self, gw: u32) {
        let i = self.wi(gw);
        self.deferred[i] = self.state_of(gw);
    }

    /// Takes the warp's next instruction.
    pub fn issue(&mut self, gw: u32) -> Event {
        let i = self.wi(gw);
        let e = self.cta(gw / self.shape.wpc).events[self.pos[i] as usize];
        self.pos[i] += 1;
        self.defer(gw);
        e
    }

    /// The instruction the warp issued last.
    pub fn current(&self, gw: u32) -> &Event {
        &self.cta(gw / self.shape.wpc).events[self.pos[self.wi(gw)] as usize - 1]
    }

    /// A finished warp taken from the queue for its last step: it leaves now.
    pub fn is_last_step(&self, gw: u32) -> bool {
        self.last_step[self.wi(gw)]
    }

    pub fn leave(&mut self, gw: u32) {
        let i = self.wi(gw);
        self.last_step[i] = false;
        self.enter(gw, false);
    }

    /// The warp enters its deferred state: queue it, or count it at its CTA's barrier or as
    /// done; release the barrier when the whole CTA has arrived.
    pub fn rejoin(&mut self, gw: u32) {
        self.enter(gw, self.take_a_step);
    }

    /// [`Warps::rejoin`]; a finished warp is queued for a last step if `last_step`.
    fn enter(&mut self, gw: u32, last_step: bool) {
        let wpc = self.shape.wpc;
        let mut work = std::mem::take(&mut self.work);
        work.clear();
        work.push(gw);
        while let Some(gw) = work.pop() {
            let cta = gw / wpc;
            let (i, s) = (self.wi(gw), self.slot.get(cta) as usize);
            match self.deferred[i] {
                READY => {
                    self.fifo.push_back(gw);
                    continue;
                }
                BARRIER => self.cta_bar[s] += 1,
                _ if last_step => {
                    self.last_step[i] = true;
                    self.fifo.push_back(gw);
                    continue;
                }
                _ => self.cta_done[s] += 1,
            }
            if self.cta_bar[s] > 0 && self.cta_bar[s] + self.cta_done[s] == wpc {
                self.cta_bar[s] = 0;
                let before = work.len();
                for g in cta * wpc..(cta + 1) * wpc {
                    let j = self.wi(g);
                    if self.deferred[j] == BARRIER {
                        self.pos[j] += 1;
                        self.defer(g);
                        work.push(g);
                    }
                }
                // Keep warp order within the CTA when they rejoin the queue.
                work[before..].reverse();
            } else if self.cta_done[s] == wpc {
                self.resident -= 1;
                self.finished = true;
                // Its streams are let go (a streamed run frees them once every run has), and
                // its slot goes to a later CTA.
                if let Some(done) = self.streams[s].take() {
                    self.released.push(done);
                }
                self.slot.clear(cta);
                self.free_slots.push(s as u32);
                self.retired.push(s as u32);
            }
        }
        self.work = work;
    }
}

/// Thread portions: whether lane `lane` of a warp with these positions has a load at
/// position `pos`.
pub(super) fn has_load(positions: &[Lanes], pos: u32, lane: usize) -> bool {
    positions
        .get(pos as usize)
        .is_some_and(|at| at.loads >> lane & 1 != 0)
}

/// CTA `cta`'s streams, by its slot among `streams`, or those of a CTA without rows (one
/// not resident).
fn streams_of<'a>(
    slot: &CtaSlots,
    streams: &'a [Option<Arc<CtaStreams>>],
    cta: u32,
) -> &'a CtaStreams {
    match streams.get(slot.get(cta) as usize) {
        Some(Some(c)) => c,
        _ => &NO_ROWS,
    }
}
