//! One scheduled warp instruction through the coalescer, the simulated SM's L1 and its reuse
//! tracker, and what a kernel's warp instructions add up to (per instruction and per CTA).
//! Whole kernels and kernels given CTA by CTA go through this same code ([`super::Session`]).

use super::{Observer, RequestEvent, Session, SimError};
use crate::cache::Counters;
use crate::coalesce::{Coalesced, Coalescer};
use crate::report::CtaCounters;
use crate::schedule::Issue;
use crate::trace::{Columns, Instruction};

/// A scheduled kernel being simulated: what its warp instructions add up to.
#[derive(Clone)]
pub(super) struct Running {
    pub(super) ki: u32,
    pub(super) coalescer: Coalescer,
    pub(super) uncoalesced: bool,
    pub(super) insts: Vec<Counters>,
    pub(super) ctas: CtaCounters,
    pub(super) warp_insts: u64,
    pub(super) since_progress: u32,
    pub(super) reqs: Vec<Coalesced>,
    pub(super) taken: Vec<bool>,
    pub(super) events: bool,
}

/// Adds instructions a streamed kernel found after it began (`added`, numbered after those of
/// `declared`, which takes them) and their counters, at zero, to `counters`.
pub(super) fn add_instructions(
    declared: &mut Vec<Instruction>,
    counters: &mut Vec<Counters>,
    added: &[Instruction],
) {
    declared.extend_from_slice(added);
    counters.resize(declared.len(), Counters::default());
}

impl Running {
    /// About the bytes it holds: the kernel's counters so far (one per instruction, and the
    /// per-CTA counters and rows), and those of `header`, the kernel without rows that its
    /// session keeps (its instructions and CTA-to-SM table).
    pub(super) fn heap_bytes(&self, header: &crate::trace::Kernel) -> usize {
        let counters = std::mem::size_of::<Counters>();
        let instruction = std::mem::size_of::<Instruction>() + 32;
        counters * self.insts.capacity()
            + self.ctas.heap_bytes()
            + instruction * header.instructions.len()
            + 4 * header.info.cta_sm.capacity()
    }

    /// Simulates one issued warp instruction: `rows` of `cols`.
    pub(super) fn issue(
        &mut self,
        session: &mut Session,
        cols: &Columns,
        rows: &[u32],
        issue: Issue,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        session.done += rows.len() as u64;
        self.since_progress += 1;
        if self.since_progress >= 4096 {
            self.since_progress = 0;
            if !observer.progress(session.done, session.total) {
                return Err(SimError::Cancelled);
            }
        }
        let slot = session.slot_of_sm[issue.sm as usize];
        if slot == usize::MAX {
            return Ok(());
        }
        let line_bytes = (session.cfg.cache.line_bytes as u64).max(1);
        let s = &mut session.sims[slot];
        let reqs = &mut self.reqs;
        let used = self.coalescer.coalesce(cols, rows, reqs);
        if used == 0 {
            return Ok(());
        }
        self.warp_insts += 1;
        if self.events {
            observer.on_warp_instruction(cols, rows);
        }
        observer.on_coalesced(cols, rows, reqs);
        let inst = cols.inst[rows[0] as usize];
        let taken = &mut self.taken;
        taken.clear();
        taken.resize(rows.len(), false);
        let mut cursor = 0;
        let mut local = Counters {
            accesses: used as u64,
            ..Default::default()
        };
        for (ci, c) in reqs.iter().enumerate() {
            let written = if c.request.write && (session.l2.is_some() || s.cache.wants_written()) {
                self.coalescer.byte_mask(ci)
            } else {
                None
            };
            let (o, reuse_distance) = s.access(&c.request, written);
            local.record(c.request.write, &o);
            if let Some(l2) = &mut session.l2 {
                l2.keep_events(self.events);
                l2.below_l1(&c.request, &o, self.ki, inst, written);
            }
            local.transactions += c.transactions as u64;
            if self.events {
                // The k-th request to a line belongs to the k-th access starting in it (one
                // request per access without coalescing, the lowest such thread with it).
                // Uncoalesced requests come in row order: search from after the last match.
                let found = (cursor..rows.len()).chain(0..cursor).find(|&j| {
                    !taken[j] && cols.addr[rows[j] as usize] / line_bytes == c.request.line
                });
                if let Some(j) = found {
                    taken[j] = true;
                    // Coalesced requests name their lowest thread: search from the start.
                    if self.uncoalesced {
                        cursor = j + 1;
                    }
                }
                let thread = found
                    .or(rows
                        .iter()
                        .position(|&r| cols.addr[r as usize] / line_bytes <= c.request.line))
                    .and_then(|j| rows.get(j))
                    .map(|&r| cols.thread[r as usize]);
                let event = RequestEvent {
                    order: s.order,
                    sm: s.sm,
                    kernel: self.ki,
                    cta: issue.cta,
                    warp: issue.warp,
                    inst,
                    line: c.request.line,
                    set: o.set,
                    write: c.request.write,
                    hit: o.hit,
                    class: o.class,
                    reuse_distance,
                    time: None,
                    thread,
                    in_flight: false,
                    set_distance: None,
                    sectors: c.request.sectors,
                    evicted: o.evicted,
                    effect_at: None,
                    refused: 0,
                    first: ci == 0,
                };
                observer.on_request(&event);
                observer.after_request(&event, &s.cache);
                if let Some(l2) = &mut session.l2 {
                    l2.drain_events(|e| observer.on_l2(e));
                }
            }
            s.order += 1;
        }
        s.counters.add(&local);
        self.insts[inst as usize].add(&local);
        self.ctas.add(issue.cta, issue.sm, &local);
        Ok(())
    }
}
