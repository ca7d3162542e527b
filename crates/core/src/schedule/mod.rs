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
//! - The issue policy picks among ready warps ([`IssuePolicy`](crate::config::IssuePolicy)). With `warp_size = 1` the
//!   policies are the per-thread ones of Crawford 2014 §5.2.
//!
//! Kernels whose rows are already in issue order ([`Order::Issued`]) are replayed as they
//! are: consecutive rows of one warp with the same instruction and instance form one warp
//! instruction, and CTA `c` runs on the SM the trace recorded for it (modulo `sms`), or on SM
//! `c mod sms` when it recorded none.

mod by_cta;
mod policy;
mod threads;

pub use by_cta::{CtaScheduler, Step};

use crate::config::{GpuConfig, ScheduleConfig};
use crate::trace::{Columns, Kernel, Order, BARRIER_CODE};
use threads::{ThreadSched, Whole};

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
    #[error("CTA {cta}: {message}")]
    CtaRows { cta: u32, message: String },
    #[error("row {row}: {message}")]
    Rows { row: u64, message: String },
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
    pub(crate) fn state(&self, c: &Columns) -> u8 {
        let flags = &c.flags;
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
    pub(crate) fn pass_barrier(&mut self, c: &Columns) {
        let flags = &c.flags;
        for (c, &e) in self.cursor.iter_mut().zip(self.end) {
            if *c < e && flags[*c as usize] & 0x1f == BARRIER_CODE {
                *c += 1;
            }
        }
    }

    /// Issues the warp's next instruction: the smallest (instruction, instance) among its
    /// threads' next non-barrier rows, for every thread that has it. Returns the warp's state
    /// afterwards (computed in the same pass).
    pub(crate) fn exec(&mut self, c: &Columns, order: Order, rows: &mut Vec<u32>) -> u8 {
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
    s: KernelSchedule,
}

impl<'k> Scheduler<'k> {
    pub fn new(
        k: &'k Kernel,
        sched: &ScheduleConfig,
        gpu: &GpuConfig,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        Ok(Scheduler {
            k,
            s: KernelSchedule::new(k, sched, gpu, seed)?,
        })
    }

    /// The SM a CTA ran on (after scheduling; `None` if it never ran).
    pub fn cta_sm(&self, cta: u32) -> Option<u32> {
        self.s.cta_sm(self.k, cta)
    }

    /// Writes the rows of the next warp instruction into `rows` and says where it ran;
    /// `None` when the kernel is finished.
    pub fn next(&mut self, rows: &mut Vec<u32>) -> Option<Issue> {
        self.s.next(self.k, rows)
    }
}

/// A [`Scheduler`] that does not hold its kernel: each call is given it (the same one every
/// time), so a caller can keep it between calls (`sim::RunSteps`, a run in pieces).
pub struct KernelSchedule {
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

impl KernelSchedule {
    pub fn new(
        k: &Kernel,
        sched: &ScheduleConfig,
        gpu: &GpuConfig,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        if k.order == Order::Issued {
            return Ok(KernelSchedule {
                inner: Inner::Issued {
                    next: 0,
                    sms: gpu.sms.max(1),
                    warp_size: sched.warp_size.max(1),
                },
            });
        }
        let mut s = ThreadSched::new(k, sched, gpu, seed)?;
        // Every CTA's rows are there: the scheduler never waits for one.
        let starts = k.thread_starts();
        let threads = s.slot_threads(s.ctas());
        s.cursor = starts[..threads].to_vec();
        s.end = starts[1..=threads].to_vec();
        s.avail = s.ctas();
        s.serve(&mut Whole(k.columns()));
        Ok(KernelSchedule {
            inner: Inner::Threads(Box::new(s)),
        })
    }

    /// [`Scheduler::cta_sm`] of kernel `k`.
    pub fn cta_sm(&self, k: &Kernel, cta: u32) -> Option<u32> {
        match &self.inner {
            Inner::Threads(s) => s.cta_sm(cta),
            Inner::Issued { sms, .. } => Some(issued_sm(&k.info.cta_sm, cta, *sms)),
        }
    }

    /// [`Scheduler::next`] of kernel `k`.
    pub fn next(&mut self, k: &Kernel, rows: &mut Vec<u32>) -> Option<Issue> {
        rows.clear();
        match &mut self.inner {
            Inner::Issued {
                next,
                sms,
                warp_size,
            } => issued_next(k, next, *sms, *warp_size, rows),
            Inner::Threads(s) => match s.next(&mut Whole(k.columns()), rows) {
                Step::Issued(i) => Some(i),
                Step::Starved | Step::Done => None,
            },
        }
    }
}

/// The SM of a CTA in an issued-order kernel: the one the trace recorded (folded onto the
/// modelled SMs), else round-robin.
pub(crate) fn issued_sm(cta_sm: &[u32], cta: u32, sms: u32) -> u32 {
    cta_sm.get(cta as usize).copied().unwrap_or(cta) % sms.max(1)
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
        sm: issued_sm(&k.info.cta_sm, k0.0, sms),
        cta: k0.0,
        warp: k0.1,
    })
}
