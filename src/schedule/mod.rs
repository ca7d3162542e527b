//! Scheduling: the order in which warp instructions reach each SM's L1.
//!
//! - CTAs go to SMs round-robin until every SM is full (CTA, thread and warp limits); after
//!   that a waiting CTA starts on the SM where one finishes (Nugteren et al. 2014 §4.1). SMs advance in
//!   lock-step, one warp instruction each per round, so "finishes first" is well defined.
//! - Threads form warps of `warp_size` consecutive linear thread ids within a CTA. A warp's
//!   next instruction groups the next access of each thread that shares the smallest
//!   (instruction id, dynamic instance): instruction ids follow program order, so threads
//!   that diverged in a loop run the loop first (min-PC reconvergence). For warp-level traces
//!   ([`Order::PerWarp`]) the dynamic instance alone orders them: it is the instruction's
//!   position in the warp's recorded stream. No access moves across a
//!   CTA barrier: a warp whose live threads all wait at a barrier stalls until every warp of
//!   its CTA has arrived or finished.
//! - The issue policy picks among ready warps ([`IssuePolicy`]). With `warp_size = 1` the
//!   policies are the per-thread ones of Crawford 2014 §5.2.
//!
//! Kernels whose rows are already in issue order ([`Order::Issued`]) are replayed as they
//! are: consecutive rows of one warp with the same instruction and instance form one warp
//! instruction, and CTA `c` runs on the SM the trace recorded for it (modulo `sms`), or on SM
//! `c mod sms` when it recorded none.

mod policy;

use crate::config::{GpuConfig, IssuePolicy, ScheduleConfig};
use crate::rng::Rng;
use crate::trace::{Kernel, Order, BARRIER_CODE};
use policy::SmState;

/// One issued warp instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issue {
    pub sm: u32,
    /// Linear CTA id.
    pub cta: u32,
    /// Warp index within the CTA.
    pub warp: u32,
}

/// Why a kernel cannot be scheduled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    #[error("a CTA of {threads} threads ({warps} warps) does not fit on an SM (limits: {max_threads} threads, {max_warps} warps)")]
    CtaTooLarge {
        threads: u32,
        warps: u32,
        max_threads: u32,
        max_warps: u32,
    },
}

/// Threads per hardware warp, the unit of the per-SM warp limit.
pub(crate) const HW_WARP: u32 = 32;

/// Warp states: can issue, waits at a CTA barrier, finished.
pub(crate) const READY: u8 = 1;
pub(crate) const BARRIER: u8 = 2;
pub(crate) const DONE: u8 = 3;

/// The threads of one warp: `cursor[t]` is thread `t`'s next row, `end[t]` one past its last.
pub(crate) struct WarpThreads<'a> {
    pub cursor: &'a mut [u32],
    pub end: &'a [u32],
}

impl WarpThreads<'_> {
    /// A warp's state from its threads' next rows.
    pub(crate) fn state(&self, k: &Kernel) -> u8 {
        let flags = &k.columns().flags;
        let mut live = false;
        for (&c, &e) in self.cursor.iter().zip(self.end) {
            if c < e {
                live = true;
                if flags[c as usize] & 0x1f != BARRIER_CODE {
                    return READY;
                }
            }
        }
        if live {
            BARRIER
        } else {
            DONE
        }
    }

    /// Moves every thread waiting at a barrier past it.
    pub(crate) fn pass_barrier(&mut self, k: &Kernel) {
        let flags = &k.columns().flags;
        for (c, &e) in self.cursor.iter_mut().zip(self.end) {
            if *c < e && flags[*c as usize] & 0x1f == BARRIER_CODE {
                *c += 1;
            }
        }
    }

    /// Issues the warp's next instruction: the smallest (instruction, instance) among its
    /// threads' next non-barrier rows, for every thread that has it. Returns the warp's state
    /// afterwards (computed in the same pass).
    pub(crate) fn exec(&mut self, k: &Kernel, rows: &mut Vec<u32>) -> u8 {
        let c = k.columns();
        let order = k.order;
        let mut best = u64::MAX;
        for (&r, &e) in self.cursor.iter().zip(self.end) {
            let r = r as usize;
            if r < e as usize && c.flags[r] & 0x1f != BARRIER_CODE {
                best = best.min(order.warp_key(c.inst[r], c.dyn_inst[r]));
            }
        }
        let (mut live, mut ready) = (false, false);
        for (cur, &e) in self.cursor.iter_mut().zip(self.end) {
            let mut r = *cur as usize;
            let end = e as usize;
            if r < end
                && c.flags[r] & 0x1f != BARRIER_CODE
                && order.warp_key(c.inst[r], c.dyn_inst[r]) == best
            {
                rows.push(r as u32);
                r += 1;
                *cur = r as u32;
            }
            if r < end {
                live = true;
                ready |= c.flags[r] & 0x1f != BARRIER_CODE;
            }
        }
        if ready {
            READY
        } else if live {
            BARRIER
        } else {
            DONE
        }
    }
}

/// Produces the warp instructions of one kernel in issue order.
pub struct Scheduler<'k> {
    k: &'k Kernel,
    inner: Inner,
}

enum Inner {
    Threads(Box<ThreadSched>),
    Issued {
        next: usize,
        sms: u32,
        warp_size: u32,
    },
}

struct ThreadSched {
    policy: IssuePolicy,
    fetch_group: u32,
    ws: u32,
    tpb: u32,
    wpc: u32,
    n_ctas: u32,
    limits: GpuConfig,
    cursor: Vec<u32>,
    /// One past the last row of each thread.
    end: Vec<u32>,
    warp_state: Vec<u8>,
    cta_bar: Vec<u32>,
    cta_done: Vec<u32>,
    cta_sm: Vec<u32>,
    sms: Vec<SmState>,
    next_cta: u32,
    next_sm: usize,
    rng: Rng,
}

impl<'k> Scheduler<'k> {
    pub fn new(
        k: &'k Kernel,
        sched: &ScheduleConfig,
        gpu: &GpuConfig,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        if k.order == Order::Issued {
            return Ok(Scheduler {
                k,
                inner: Inner::Issued {
                    next: 0,
                    sms: gpu.sms.max(1),
                    warp_size: sched.warp_size.max(1),
                },
            });
        }
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
        let threads = k.num_threads() as usize;
        let starts = k.thread_starts();
        let cursor: Vec<u32> = starts[..threads].to_vec();
        let end: Vec<u32> = starts[1..].to_vec();
        let mut s = ThreadSched {
            policy: sched.policy,
            fetch_group: sched.fetch_group.max(1),
            ws,
            tpb,
            wpc,
            n_ctas,
            limits: gpu.clone(),
            cursor,
            end,
            warp_state: vec![0; (n_ctas as usize) * wpc as usize],
            cta_bar: vec![0; n_ctas as usize],
            cta_done: vec![0; n_ctas as usize],
            cta_sm: vec![u32::MAX; n_ctas as usize],
            sms: (0..gpu.sms.max(1)).map(|_| SmState::default()).collect(),
            next_cta: 0,
            next_sm: 0,
            rng: Rng::fork(seed, 0x5C4ED),
        };
        // Initial distribution: round-robin over SMs until none can take another CTA.
        loop {
            let mut placed = false;
            for sm in 0..s.sms.len() {
                if s.next_cta < n_ctas && s.fits(sm) {
                    let c = s.next_cta;
                    s.next_cta += 1;
                    s.launch(k, c, sm);
                    placed = true;
                }
            }
            if !placed {
                break;
            }
        }
        Ok(Scheduler {
            k,
            inner: Inner::Threads(Box::new(s)),
        })
    }

    /// The SM a CTA ran on (after scheduling; `None` if it never ran).
    pub fn cta_sm(&self, cta: u32) -> Option<u32> {
        match &self.inner {
            Inner::Threads(s) => s
                .cta_sm
                .get(cta as usize)
                .copied()
                .filter(|&v| v != u32::MAX),
            Inner::Issued { sms, .. } => Some(issued_sm(self.k, cta, *sms)),
        }
    }

    /// Writes the rows of the next warp instruction into `rows` and says where it ran;
    /// `None` when the kernel is finished.
    pub fn next(&mut self, rows: &mut Vec<u32>) -> Option<Issue> {
        rows.clear();
        let k = self.k;
        match &mut self.inner {
            Inner::Issued {
                next,
                sms,
                warp_size,
            } => issued_next(k, next, *sms, *warp_size, rows),
            Inner::Threads(s) => s.next(k, rows),
        }
    }
}

/// The SM of a CTA in an issued-order kernel: the one the trace recorded (folded onto the
/// modelled SMs), else round-robin.
fn issued_sm(k: &Kernel, cta: u32, sms: u32) -> u32 {
    k.info.cta_sm.get(cta as usize).copied().unwrap_or(cta) % sms
}

fn issued_next(
    k: &Kernel,
    next: &mut usize,
    sms: u32,
    ws: u32,
    rows: &mut Vec<u32>,
) -> Option<Issue> {
    let c = k.columns();
    let tpb = k.threads_per_cta().max(1);
    let n = k.len();
    // Skip barriers: in an issued stream they carry no ordering information.
    while *next < n && c.flags[*next] & 0x1f == BARRIER_CODE {
        *next += 1;
    }
    if *next >= n {
        return None;
    }
    let first = *next;
    let key = |i: usize| {
        (
            c.thread[i] / tpb,
            (c.thread[i] % tpb) / ws,
            c.inst[i],
            c.dyn_inst[i],
        )
    };
    let k0 = key(first);
    while *next < n && c.flags[*next] & 0x1f != BARRIER_CODE && key(*next) == k0 {
        rows.push(*next as u32);
        *next += 1;
    }
    Some(Issue {
        sm: issued_sm(k, k0.0, sms),
        cta: k0.0,
        warp: k0.1,
    })
}

impl ThreadSched {
    fn fits(&self, sm: usize) -> bool {
        let s = &self.sms[sm];
        s.ctas.len() < self.limits.max_ctas_per_sm as usize
            && s.threads + self.tpb <= self.limits.max_threads_per_sm
            && (s.ctas.len() as u32 + 1) * self.tpb.div_ceil(HW_WARP)
                <= self.limits.max_warps_per_sm
    }

    fn warp_threads(&self, cta: u32, w: u32) -> (usize, usize) {
        let t0 = cta * self.tpb + w * self.ws;
        let t1 = (t0 + self.ws).min((cta + 1) * self.tpb);
        (t0 as usize, t1 as usize)
    }

    fn warp(&mut self, cta: u32, w: u32) -> WarpThreads<'_> {
        let (t0, t1) = self.warp_threads(cta, w);
        WarpThreads {
            cursor: &mut self.cursor[t0..t1],
            end: &self.end[t0..t1],
        }
    }

    /// Computes a warp's state from its threads' next rows.
    fn state_of(&mut self, k: &Kernel, cta: u32, w: u32) -> u8 {
        self.warp(cta, w).state(k)
    }

    fn launch(&mut self, k: &Kernel, cta: u32, sm: usize) {
        self.cta_sm[cta as usize] = sm as u32;
        let s = &mut self.sms[sm];
        s.ctas.push(cta);
        s.threads += self.tpb;
        for w in 0..self.wpc {
            s.warps.push(cta * self.wpc + w);
        }
        for w in 0..self.wpc {
            let st = self.state_of(k, cta, w);
            self.set_state(cta, w, st, sm);
        }
        self.settle(k, cta, sm);
    }

    fn set_state(&mut self, cta: u32, w: u32, st: u8, sm: usize) {
        let gw = (cta * self.wpc + w) as usize;
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
        match old {
            BARRIER => self.cta_bar[cta as usize] -= 1,
            DONE => self.cta_done[cta as usize] -= 1,
            _ => {}
        }
        match st {
            BARRIER => self.cta_bar[cta as usize] += 1,
            DONE => self.cta_done[cta as usize] += 1,
            _ => {}
        }
        self.warp_state[gw] = st;
    }

    /// Releases barriers that every warp has reached and retires finished CTAs.
    fn settle(&mut self, k: &Kernel, cta: u32, sm: usize) {
        let ci = cta as usize;
        while self.cta_bar[ci] > 0 && self.cta_bar[ci] + self.cta_done[ci] == self.wpc {
            for w in 0..self.wpc {
                if self.warp_state[(cta * self.wpc + w) as usize] == BARRIER {
                    self.warp(cta, w).pass_barrier(k);
                }
            }
            for w in 0..self.wpc {
                if self.warp_state[(cta * self.wpc + w) as usize] == BARRIER {
                    let st = self.state_of(k, cta, w);
                    self.set_state(cta, w, st, sm);
                }
            }
        }
        if self.cta_done[ci] == self.wpc {
            self.retire(k, cta, sm);
        }
    }

    fn retire(&mut self, k: &Kernel, cta: u32, sm: usize) {
        let wpc = self.wpc;
        let s = &mut self.sms[sm];
        s.ctas.retain(|&c| c != cta);
        s.threads -= self.tpb;
        s.remove_warps(|w| w / wpc == cta);
        while self.next_cta < self.n_ctas && self.fits(sm) {
            let c = self.next_cta;
            self.next_cta += 1;
            self.launch(k, c, sm);
        }
    }

    fn next(&mut self, k: &Kernel, rows: &mut Vec<u32>) -> Option<Issue> {
        let n = self.sms.len();
        let sm = (0..n)
            .map(|i| (self.next_sm + i) % n)
            .find(|&s| self.sms[s].ready > 0)?;
        self.next_sm = (sm + 1) % n;
        let states = &self.warp_state;
        let gw = self.sms[sm].pick(self.policy, self.fetch_group, &mut self.rng, |w| {
            states[w as usize] == READY
        })?;
        let (cta, w) = (gw / self.wpc, gw % self.wpc);
        let st = self.exec(k, cta, w, rows);
        self.set_state(cta, w, st, sm);
        if st != READY {
            self.settle(k, cta, sm);
        }
        Some(Issue {
            sm: sm as u32,
            cta,
            warp: w,
        })
    }

    fn exec(&mut self, k: &Kernel, cta: u32, w: u32, rows: &mut Vec<u32>) -> u8 {
        self.warp(cta, w).exec(k, rows)
    }
}
