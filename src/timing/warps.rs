//! The warps of one kernel on one SM: where each is in its stream, the ready queue, CTA
//! barriers and which CTAs are resident, with their streams (a CTA's are let go when it
//! finishes, so that a run holds only those of its resident CTAs). Under thread portions, the
//! threads' own positions (for warps whose lanes fell out of step) are kept per slot of a
//! resident CTA, reused once it finishes: a kernel of 10^8 threads does not take 4 bytes a
//! thread in each run.

use std::collections::VecDeque;
use std::sync::Arc;

use super::streams::{CtaStreams, Event, Lanes, Shape, NO_ROWS};
use crate::schedule::{BARRIER, DONE, READY};

pub(super) struct Warps {
    pub shape: Shape,
    /// Per CTA: its streams while it is resident.
    ctas: Vec<Option<Arc<CtaStreams>>>,
    /// Per warp: its next event (warp instructions); or, for thread portions, the position
    /// of its lanes' next loads while they keep in step ([`OUT_OF_STEP`] once they do not).
    pos: Vec<u32>,
    /// Thread portions: whether warps start in step (not lane by lane).
    in_step: bool,
    /// Thread portions: whether the streams are per thread.
    threads: bool,
    /// Per thread of a resident CTA (thread portions, for warps out of step): the position of
    /// its next load, `tpb` entries a slot, so that it holds the resident CTAs' threads, not
    /// the kernel's.
    pc: Vec<u32>,
    /// Thread portions: per CTA, its slot in `pc` while it is resident.
    slot: Vec<u32>,
    /// Slots of `pc` that finished CTAs left, and how many there are in all.
    free_slots: Vec<u32>,
    slots: u32,
    /// Room for [`Warps::enter`]'s warps to visit (kept, not made at each call).
    work: Vec<u32>,
    /// Per warp: its state once its current instruction completes.
    pub deferred: Vec<u8>,
    /// Per warp: finished, queued once more to take its last step
    /// ([`crate::config::FinishedWarps::TakeAStep`]).
    last_step: Vec<bool>,
    take_a_step: bool,
    cta_bar: Vec<u32>,
    cta_done: Vec<u32>,
    /// Warps ready to issue, in order.
    pub fifo: VecDeque<u32>,
    pub resident: u32,
    /// A CTA finished since the last launch.
    pub finished: bool,
    /// The streams of CTAs finished since, to give back to their feed.
    pub released: Vec<Arc<CtaStreams>>,
}

/// A warp of thread portions whose lanes are at different positions: each has its own `pc`.
const OUT_OF_STEP: u32 = u32::MAX;

impl Warps {
    /// `threads`: whether the streams are per thread (the thread-portions issue unit).
    /// `lane_by_lane`: issue thread portions lane by lane from the start (the reference for
    /// issuing them position by position).
    pub fn new(
        shape: Shape,
        n_ctas: u32,
        threads: bool,
        take_a_step: bool,
        lane_by_lane: bool,
    ) -> Self {
        let n_warps = n_ctas as usize * shape.wpc as usize;
        Warps {
            shape,
            ctas: vec![None; n_ctas as usize],
            pos: vec![0; n_warps],
            in_step: threads && !lane_by_lane,
            threads,
            pc: Vec::new(),
            slot: if threads {
                vec![u32::MAX; n_ctas as usize]
            } else {
                Vec::new()
            },
            free_slots: Vec::new(),
            slots: 0,
            work: Vec::new(),
            deferred: vec![0; n_warps],
            last_step: vec![false; n_warps],
            take_a_step,
            cta_bar: vec![0; n_ctas as usize],
            cta_done: vec![0; n_ctas as usize],
            fifo: VecDeque::new(),
            resident: 0,
            finished: false,
            released: Vec::new(),
        }
    }

    /// How many slots of threads' positions the kernel took so far.
    #[cfg(test)]
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// The streams of CTA `cta` (none once it has finished).
    pub fn cta(&self, cta: u32) -> &CtaStreams {
        streams_of(&self.ctas, cta)
    }

    /// CTA `cta`'s streams, and the threads' next loads (thread portions), to issue from
    /// the one while moving the other on.
    pub fn loads_of(&mut self, cta: u32) -> (&CtaStreams, &mut [u32]) {
        (streams_of(&self.ctas, cta), &mut self.pc)
    }

    /// Per thread (thread portions): where the `pc`s of warp `gw`'s CTA start (its slot's
    /// first), and the warp's thread range within its CTA.
    pub fn threads_of(&self, gw: u32) -> (usize, std::ops::Range<usize>) {
        let (cta, w) = (gw / self.shape.wpc, gw % self.shape.wpc);
        let slot = self.slot.get(cta as usize).copied().unwrap_or(0);
        (
            slot as usize * self.shape.tpb as usize,
            self.shape.warp_threads(w),
        )
    }

    /// Thread portions: the position of warp `gw`'s lanes' next loads while they keep in
    /// step (`None`: each lane has its own `pc`).
    pub fn in_step(&self, gw: u32) -> Option<u32> {
        let p = self.pos[gw as usize];
        (p != OUT_OF_STEP).then_some(p)
    }

    /// Thread portions: warp `gw`'s lanes moved on together to position `pos`.
    pub fn step_to(&mut self, gw: u32, pos: u32) {
        self.pos[gw as usize] = pos;
    }

    /// Thread portions: warp `gw`'s lanes were at position `pos` and those of `moved` went
    /// on to the next one; from now on each lane has its own `pc`.
    pub fn out_of_step(&mut self, gw: u32, pos: u32, moved: u64) {
        let (base, threads) = self.threads_of(gw);
        for (lane, t) in threads.enumerate() {
            self.pc[base + t] = pos + (moved >> lane & 1) as u32;
        }
        self.pos[gw as usize] = OUT_OF_STEP;
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
        let p = self.pos[gw as usize];
        if p >= c.warp_range(w).1 {
            DONE
        } else if c.events[p as usize].barrier {
            BARRIER
        } else {
            READY
        }
    }

    /// Makes a CTA resident with its streams and queues its warps.
    pub fn launch(&mut self, cta: u32, streams: Arc<CtaStreams>) {
        self.resident += 1;
        let Shape { wpc, tpb, .. } = self.shape;
        for w in 0..wpc {
            self.pos[(cta * wpc + w) as usize] = streams.warp_range(w).0;
        }
        if self.threads {
            let slot = match self.free_slots.pop() {
                Some(slot) => slot,
                None => {
                    self.slots += 1;
                    self.pc.resize(self.slots as usize * tpb as usize, 0);
                    self.slots - 1
                }
            };
            self.slot[cta as usize] = slot;
            let base = slot as usize * tpb as usize;
            self.pc[base..base + tpb as usize].fill(0);
            let start = if self.in_step { 0 } else { OUT_OF_STEP };
            self.pos[(cta * wpc) as usize..((cta + 1) * wpc) as usize].fill(start);
        }
        self.ctas[cta as usize] = Some(streams);
        for gw in cta * wpc..(cta + 1) * wpc {
            self.deferred[gw as usize] = self.state_of(gw);
            self.rejoin(gw);
        }
    }

    /// Takes the warp's next instruction.
    pub fn issue(&mut self, gw: u32) -> Event {
        let e = self.cta(gw / self.shape.wpc).events[self.pos[gw as usize] as usize];
        self.pos[gw as usize] += 1;
        self.deferred[gw as usize] = self.state_of(gw);
        e
    }

    /// The instruction the warp issued last.
    pub fn current(&self, gw: u32) -> &Event {
        &self.cta(gw / self.shape.wpc).events[self.pos[gw as usize] as usize - 1]
    }

    /// A finished warp taken from the queue for its last step: it leaves now.
    pub fn is_last_step(&self, gw: u32) -> bool {
        self.last_step[gw as usize]
    }

    pub fn leave(&mut self, gw: u32) {
        self.last_step[gw as usize] = false;
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
            let cta = (gw / wpc) as usize;
            match self.deferred[gw as usize] {
                READY => {
                    self.fifo.push_back(gw);
                    continue;
                }
                BARRIER => self.cta_bar[cta] += 1,
                _ if last_step => {
                    self.last_step[gw as usize] = true;
                    self.fifo.push_back(gw);
                    continue;
                }
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
                // Its streams are let go (a streamed run frees them once every run has).
                if let Some(done) = self.ctas[cta].take() {
                    self.released.push(done);
                }
                if let Some(slot) = self.slot.get_mut(cta) {
                    self.free_slots.push(std::mem::replace(slot, u32::MAX));
                }
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

/// CTA `cta`'s streams among `ctas`, or those of a CTA without rows.
fn streams_of(ctas: &[Option<Arc<CtaStreams>>], cta: u32) -> &CtaStreams {
    match ctas.get(cta as usize) {
        Some(Some(c)) => c,
        _ => &NO_ROWS,
    }
}
