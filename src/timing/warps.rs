//! The warps of one kernel on one SM: where each is in its stream, the ready queue, CTA
//! barriers and which CTAs are resident.

use super::streams::{Event, WarpStreams};
use crate::schedule::{BARRIER, DONE, READY};
use std::collections::VecDeque;

pub(super) struct Warps<'s> {
    pub streams: &'s WarpStreams,
    /// Per warp: its next event (warp instructions).
    pos: Vec<u32>,
    /// Per thread: its next load (thread portions).
    pub pc: Vec<u32>,
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
}

impl<'s> Warps<'s> {
    pub fn new(streams: &'s WarpStreams, n_ctas: u32, take_a_step: bool) -> Self {
        let n_warps = streams.warp_events.len();
        Warps {
            streams,
            pos: streams.warp_events.iter().map(|r| r.0).collect(),
            pc: streams.thread_loads.iter().map(|r| r.0).collect(),
            deferred: vec![0; n_warps],
            last_step: vec![false; n_warps],
            take_a_step,
            cta_bar: vec![0; n_ctas as usize],
            cta_done: vec![0; n_ctas as usize],
            fifo: VecDeque::new(),
            resident: 0,
            finished: false,
        }
    }

    pub fn state_of(&self, gw: u32) -> u8 {
        if !self.streams.thread_loads.is_empty() {
            let live = self
                .streams
                .warp_threads(gw)
                .any(|t| self.pc[t] < self.streams.thread_loads[t].1);
            return if live { READY } else { DONE };
        }
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
    pub fn launch(&mut self, cta: u32) {
        self.resident += 1;
        let wpc = self.streams.wpc;
        for gw in cta * wpc..(cta + 1) * wpc {
            self.deferred[gw as usize] = self.state_of(gw);
            self.rejoin(gw);
        }
    }

    /// Takes the warp's next instruction.
    pub fn issue(&mut self, gw: u32) -> Event {
        let e = self.streams.events[self.pos[gw as usize] as usize];
        self.pos[gw as usize] += 1;
        self.deferred[gw as usize] = self.state_of(gw);
        e
    }

    /// The instruction the warp issued last.
    pub fn current(&self, gw: u32) -> &Event {
        &self.streams.events[self.pos[gw as usize] as usize - 1]
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
            }
        }
    }
}
