//! The scheduler of per-thread and per-warp kernels (module header: the rules). CTAs are
//! launched in order as SMs have room, and the scheduler can run ahead of the trace: it only
//! needs a CTA's rows when it launches it. [`ThreadSched::avail`] says how many CTAs are
//! there; when the next one is not, it stops before any further decision ([`Step::Starved`])
//! and takes up exactly where it stopped once more arrive. A whole kernel has them all from
//! the start ([`Whole`]); a kernel read CTA by CTA keeps only the resident ones
//! ([`super::CtaScheduler`]).
//!
//! Each launched CTA has a slot: its threads' cursors are `cursor[slot * tpb + t]`, rows of
//! the slot's columns. A whole kernel's slot is the CTA itself and its columns the kernel's.

use super::policy::SmState;
use super::{Issue, ScheduleError, Step, WarpThreads, BARRIER, DONE, HW_WARP, READY};
use crate::config::{GpuConfig, ScheduleConfig};
use crate::rng::Rng;
use crate::trace::{Columns, Kernel, Order};
use std::collections::VecDeque;

/// Where the rows of launched CTAs are.
pub(super) trait Rows {
    /// The columns the rows of slot `slot` index.
    fn cols(&self, slot: u32) -> &Columns;
    /// Gives CTA `cta`, about to launch, a slot and sets its threads' rows in `cursor` and
    /// `end` (grown as needed).
    fn slot_for(&mut self, cta: u32, s: &mut ThreadSched) -> u32;
    /// CTA `cta`, in `slot`, has finished.
    fn retired(&mut self, cta: u32, slot: u32);
}

/// A kernel in memory: the slot of CTA `c` is `c`, and the cursors are set once.
pub(super) struct Whole<'k>(pub &'k Columns);

impl Rows for Whole<'_> {
    fn cols(&self, _: u32) -> &Columns {
        self.0
    }
    fn slot_for(&mut self, cta: u32, _: &mut ThreadSched) -> u32 {
        cta
    }
    fn retired(&mut self, _: u32, _: u32) {}
}

/// What a launched CTA's warps are at: how many wait at a barrier, how many are done, and
/// its slot.
#[derive(Clone, Copy)]
struct Launched {
    bar: u32,
    done: u32,
    slot: u32,
}

#[derive(Clone)]
pub(super) struct ThreadSched {
    ws: u32,
    pub tpb: u32,
    wpc: u32,
    n_ctas: u32,
    order: Order,
    limits: GpuConfig,
    /// Next row of each slot thread, and one past its last.
    pub cursor: Vec<u32>,
    pub end: Vec<u32>,
    /// The state of each warp of CTAs `base..next_cta` (launched; those before `base` have
    /// all finished, so a kernel of 10^7 CTAs holds these for about the resident ones).
    warp_state: VecDeque<u8>,
    /// Barrier and done counts and the slot of CTAs `base..next_cta`.
    launched: VecDeque<Launched>,
    base: u32,
    /// The SM of every CTA of the kernel (asked for after it finished, for its row).
    cta_sm: Vec<u32>,
    sms: Vec<SmState>,
    next_cta: u32,
    next_sm: usize,
    rng: Rng,
    /// CTAs `0..avail` can be launched.
    pub avail: u32,
    /// SMs that want CTAs because one of theirs finished (the latest last).
    wanting: Vec<usize>,
    /// The first distribution, round-robin over SMs until none takes another CTA: the next
    /// SM of the round and whether this round placed one; `None` once it is over.
    fill: Option<(usize, bool)>,
}

impl ThreadSched {
    pub fn new(
        k: &Kernel,
        sched: &ScheduleConfig,
        gpu: &GpuConfig,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        let tpb = k.threads_per_cta().max(1);
        let ws = sched.warp_size.max(1);
        let wpc = tpb.div_ceil(ws);
        // Residency limits count hardware warps of 32 threads, whatever the modelled warp size.
        let hw_warps = tpb.div_ceil(HW_WARP);
        if tpb > gpu.max_threads_per_sm || hw_warps > gpu.max_warps_per_sm {
            return Err(ScheduleError::CtaTooLarge {
                threads: tpb,
                warps: hw_warps,
                max_threads: gpu.max_threads_per_sm,
                max_warps: gpu.max_warps_per_sm,
            });
        }
        // CTAs past the thread limit never start.
        let n_ctas = gpu.modelled_ctas(k.num_ctas(), tpb);
        Ok(ThreadSched {
            ws,
            tpb,
            wpc,
            n_ctas,
            order: k.order,
            limits: gpu.clone(),
            cursor: Vec::new(),
            end: Vec::new(),
            warp_state: VecDeque::new(),
            launched: VecDeque::new(),
            base: 0,
            cta_sm: vec![u32::MAX; n_ctas as usize],
            sms: (0..gpu.sms.max(1))
                .map(|_| SmState::new(sched.policy, sched.fetch_group.max(1)))
                .collect(),
            next_cta: 0,
            next_sm: 0,
            rng: Rng::fork(seed, 0x5C4ED),
            avail: 0,
            wanting: Vec::new(),
            fill: Some((0, false)),
        })
    }

    /// CTAs that run (those past the thread limit never do).
    pub fn ctas(&self) -> u32 {
        self.n_ctas
    }

    /// Slot threads of `slots` slots.
    pub fn slot_threads(&self, slots: u32) -> usize {
        slots as usize * self.tpb as usize
    }

    /// The SM a CTA ran on (`None` if it never ran).
    pub fn cta_sm(&self, cta: u32) -> Option<u32> {
        self.cta_sm
            .get(cta as usize)
            .copied()
            .filter(|&v| v != u32::MAX)
    }

    /// Where CTA `cta` (launched, not yet let go of) is in `launched`.
    fn at(&self, cta: u32) -> usize {
        (cta - self.base) as usize
    }

    /// Where warp `gw` (of such a CTA) is in `warp_state`.
    fn warp_at(&self, gw: u32) -> usize {
        (gw - self.base * self.wpc) as usize
    }

    /// Lets go of the state of the lowest CTAs once they have finished. Called before a
    /// decision, so the CTA of the last [`Issue`] keeps its slot until the next one.
    fn let_go_of_finished(&mut self) {
        while self.launched.front().is_some_and(|l| l.done == self.wpc) {
            self.launched.pop_front();
            self.warp_state.drain(..self.wpc as usize);
            self.base += 1;
        }
    }

    fn fits(&self, sm: usize) -> bool {
        let s = &self.sms[sm];
        s.ctas.len() < self.limits.max_ctas_per_sm as usize
            && s.threads + self.tpb <= self.limits.max_threads_per_sm
            && (s.ctas.len() as u32 + 1) * self.tpb.div_ceil(HW_WARP)
                <= self.limits.max_warps_per_sm
    }

    /// Launches what SMs with room are owed: the SMs whose CTAs finished (latest first,
    /// each until full), then the first distribution. Returns `false` when it stopped
    /// because the next CTA is not there yet.
    pub fn serve(&mut self, r: &mut impl Rows) -> bool {
        loop {
            if let Some(&sm) = self.wanting.last() {
                if self.next_cta >= self.n_ctas || !self.fits(sm) {
                    self.wanting.pop();
                    continue;
                }
                if self.next_cta >= self.avail {
                    return false;
                }
                self.launch_next(r, sm);
                continue;
            }
            let Some((sm, placed)) = self.fill else {
                return true;
            };
            if sm == self.sms.len() {
                self.fill = placed.then_some((0, false));
                continue;
            }
            if self.next_cta < self.n_ctas && self.fits(sm) {
                if self.next_cta >= self.avail {
                    return false;
                }
                self.fill = Some((sm + 1, true));
                self.launch_next(r, sm);
            } else {
                self.fill = Some((sm + 1, placed));
            }
        }
    }

    fn launch_next(&mut self, r: &mut impl Rows, sm: usize) {
        let cta = self.next_cta;
        self.next_cta += 1;
        let slot = r.slot_for(cta, self);
        debug_assert_eq!(self.base + self.launched.len() as u32, cta);
        self.launched.push_back(Launched {
            bar: 0,
            done: 0,
            slot,
        });
        self.warp_state
            .extend(std::iter::repeat_n(0, self.wpc as usize));
        self.cta_sm[cta as usize] = sm as u32;
        let s = &mut self.sms[sm];
        s.ctas.push(cta);
        s.threads += self.tpb;
        for w in 0..self.wpc {
            s.warps.push(cta * self.wpc + w);
        }
        let cols = r.cols(slot);
        for w in 0..self.wpc {
            let st = self.warp(cta, w).state(cols);
            self.set_state(cta, w, st, sm);
        }
        self.settle(r, cta, sm);
    }

    fn warp(&mut self, cta: u32, w: u32) -> WarpThreads<'_> {
        let slot = self.slot_of(cta);
        let t0 = slot * self.tpb + w * self.ws;
        let t1 = (t0 + self.ws).min((slot + 1) * self.tpb);
        let (t0, t1) = (t0 as usize, t1 as usize);
        WarpThreads {
            cursor: &mut self.cursor[t0..t1],
            end: &self.end[t0..t1],
        }
    }

    fn set_state(&mut self, cta: u32, w: u32, st: u8, sm: usize) {
        let gw = self.warp_at(cta * self.wpc + w);
        let old = self.warp_state[gw];
        if old == st {
            return;
        }
        if old == READY {
            self.sms[sm].ready -= 1;
        }
        if st == READY {
            self.sms[sm].ready += 1;
        }
        let at = self.at(cta);
        let l = &mut self.launched[at];
        match old {
            BARRIER => l.bar -= 1,
            DONE => l.done -= 1,
            _ => {}
        }
        match st {
            BARRIER => l.bar += 1,
            DONE => l.done += 1,
            _ => {}
        }
        self.warp_state[gw] = st;
    }

    /// Releases barriers that every warp has reached and retires finished CTAs.
    fn settle(&mut self, r: &mut impl Rows, cta: u32, sm: usize) {
        let ci = self.at(cta);
        let cols = r.cols(self.launched[ci].slot);
        let w0 = self.warp_at(cta * self.wpc);
        while {
            let l = &self.launched[ci];
            l.bar > 0 && l.bar + l.done == self.wpc
        } {
            for w in 0..self.wpc {
                if self.warp_state[w0 + w as usize] == BARRIER {
                    self.warp(cta, w).pass_barrier(cols);
                }
            }
            for w in 0..self.wpc {
                if self.warp_state[w0 + w as usize] == BARRIER {
                    let st = self.warp(cta, w).state(cols);
                    self.set_state(cta, w, st, sm);
                }
            }
        }
        if self.launched[ci].done == self.wpc {
            self.retire(r, cta, sm);
        }
    }

    /// A finished CTA leaves its SM, which then wants new ones.
    fn retire(&mut self, r: &mut impl Rows, cta: u32, sm: usize) {
        let wpc = self.wpc;
        let s = &mut self.sms[sm];
        s.ctas.retain(|&c| c != cta);
        s.threads -= self.tpb;
        s.remove_warps(|w| w / wpc == cta);
        r.retired(cta, self.slot_of(cta));
        self.wanting.push(sm);
    }

    /// The next warp instruction: its rows (in the columns of its CTA's slot) go to `rows`.
    pub fn next(&mut self, r: &mut impl Rows, rows: &mut Vec<u32>) -> Step {
        rows.clear();
        self.let_go_of_finished();
        if !self.serve(r) {
            return Step::Starved;
        }
        let n = self.sms.len();
        let Some(sm) = (0..n)
            .map(|i| (self.next_sm + i) % n)
            .find(|&s| self.sms[s].ready > 0)
        else {
            return Step::Done;
        };
        self.next_sm = (sm + 1) % n;
        let states = &self.warp_state;
        let first = self.base * self.wpc;
        let Some(gw) = self.sms[sm].pick(&mut self.rng, |w| states[(w - first) as usize] == READY)
        else {
            return Step::Done;
        };
        let (cta, w) = (gw / self.wpc, gw % self.wpc);
        let order = self.order;
        let cols = r.cols(self.slot_of(cta));
        let st = self.warp(cta, w).exec(cols, order, rows);
        self.set_state(cta, w, st, sm);
        if st != READY {
            self.settle(r, cta, sm);
        }
        Step::Issued(Issue {
            sm: sm as u32,
            cta,
            warp: w,
        })
    }

    /// The slot of a launched CTA that has not finished.
    pub fn slot_of(&self, cta: u32) -> u32 {
        self.launched[self.at(cta)].slot
    }

    /// The CTAs resident on the SMs (launched, not finished), in increasing order.
    pub fn resident(&self) -> Vec<u32> {
        let mut ctas: Vec<u32> = self
            .sms
            .iter()
            .flat_map(|s| s.ctas.iter().copied())
            .collect();
        ctas.sort_unstable();
        ctas
    }

    /// About the bytes it holds: cursors, and a few per CTA and warp of the kernel.
    pub fn heap_bytes(&self) -> usize {
        8 * self.cursor.capacity()
            + self.warp_state.capacity()
            + std::mem::size_of::<Launched>() * self.launched.capacity()
            + 4 * self.cta_sm.capacity()
            + self
                .sms
                .iter()
                .map(|s| 4 * (s.ctas.capacity() + s.warps.capacity()))
                .sum::<usize>()
    }
}
