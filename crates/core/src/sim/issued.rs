//! A kernel recorded in issue order (cuda-memtrace, NVBit: [`Order::Issued`] with many
//! threads) simulated as its rows arrive, so that nothing of it is kept but the warp
//! instruction that may go on in the next piece.
//!
//! The rows are replayed as the scheduler replays a whole issued-order kernel
//! (`schedule::issued_next`): consecutive rows of one warp with the same instruction and
//! instance form one warp instruction, a barrier row ends one and is skipped, and CTA `c`
//! runs on the SM the trace recorded for it (folded onto the modelled SMs), or on `c mod
//! sms`. The result is the whole kernel's (tested below on random kernels cut anywhere).

use super::running::{add_instructions, Running};
use super::session::Feeding;
use super::{Observer, Session, SimError};
use crate::schedule::{issued_sm, Issue, ScheduleError};
use crate::trace::{Columns, Kernel, Order, BARRIER_CODE};

/// An issued-order kernel being streamed ([`Session::issued`]).
#[derive(Clone)]
pub(super) struct ByIssue {
    run: Running,
    /// The kernel without rows.
    header: Kernel,
    /// Rows given so far.
    rows: u64,
    threads_per_cta: u32,
    warp_size: u32,
    sms: u32,
    /// The warp instruction that may go on in the next piece.
    pending: Columns,
    /// Row numbers of the warp instruction being issued.
    idx: Vec<u32>,
}

/// What makes rows one warp instruction: CTA, warp, instruction, instance.
type Key = (u32, u32, u32, u32);

impl ByIssue {
    /// About the bytes it holds: the kernel's counters so far (the per-CTA ones of a window
    /// of up to 65,536 CTAs, [`crate::report::CtaCounters`]), its header and the warp
    /// instruction held over.
    pub(super) fn heap_bytes(&self) -> usize {
        self.run.heap_bytes(&self.header) + self.pending.heap_bytes() + 4 * self.idx.capacity()
    }

    /// The kernel's instructions given so far.
    pub(super) fn instructions(&self) -> &[crate::trace::Instruction] {
        &self.header.instructions
    }

    /// Takes instructions found after the kernel began; gives the kernel's number.
    pub(super) fn more_instructions(&mut self, added: &[crate::trace::Instruction]) -> u32 {
        add_instructions(&mut self.header.instructions, &mut self.run.insts, added);
        self.run.ki
    }

    fn key(&self, c: &Columns, i: usize) -> Key {
        let t = c.thread[i];
        (
            t / self.threads_per_cta,
            (t % self.threads_per_cta) / self.warp_size,
            c.inst[i],
            c.dyn_inst[i],
        )
    }

    fn rows_error(&self, row: u64, message: String) -> SimError {
        SimError::Schedule {
            kernel: self.header.name.clone(),
            source: ScheduleError::Rows { row, message },
        }
    }

    /// Checks that every row names a thread and an instruction of the kernel.
    fn check(&self, c: &Columns) -> Result<(), SimError> {
        let threads = self.header.num_threads();
        let insts = self.header.instructions.len() as u64;
        let bad =
            (0..c.len()).find(|&i| c.thread[i] as u64 >= threads || c.inst[i] as u64 >= insts);
        match bad {
            None => Ok(()),
            Some(i) => Err(self.rows_error(
                self.rows + i as u64,
                format!(
                    "thread {} and instruction {}: the kernel has {threads} threads and {insts} instructions",
                    c.thread[i], c.inst[i]
                ),
            )),
        }
    }

    /// Simulates rows `range` of `c`, one warp instruction.
    fn issue(
        &mut self,
        s: &mut Session,
        c: &Columns,
        range: std::ops::Range<usize>,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let (cta, warp, _, _) = self.key(c, range.start);
        let issue = Issue {
            sm: issued_sm(&self.header.info.cta_sm, cta, self.sms),
            cta,
            warp,
        };
        self.idx.clear();
        self.idx.extend(range.start as u32..range.end as u32);
        self.run.issue(s, c, &self.idx, issue, observer)
    }

    /// Issues the pending warp instruction, if any.
    fn issue_pending(
        &mut self,
        s: &mut Session,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let result = self.issue(s, &pending, 0..pending.len(), observer);
        self.pending = pending;
        self.pending.clear();
        result
    }

    /// Simulates the warp instructions `c` completes; keeps its last one, which may go on.
    fn take(
        &mut self,
        s: &mut Session,
        c: &Columns,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        self.check(c)?;
        self.rows += c.len() as u64;
        let barrier = |i: usize| c.flags[i] & 0x1f == BARRIER_CODE;
        let n = c.len();
        let mut i = 0;
        if !self.pending.is_empty() {
            let k0 = self.key(&self.pending, 0);
            while i < n && !barrier(i) && self.key(c, i) == k0 {
                i += 1;
            }
            self.pending.extend_from(c, 0..i);
            if i == n {
                return Ok(());
            }
            self.issue_pending(s, observer)?;
        }
        while i < n {
            if barrier(i) {
                i += 1;
                continue;
            }
            let k0 = self.key(c, i);
            let mut j = i + 1;
            while j < n && !barrier(j) && self.key(c, j) == k0 {
                j += 1;
            }
            if j == n {
                self.pending.extend_from(c, i..j);
                return Ok(());
            }
            self.issue(s, c, i..j, observer)?;
            i = j;
        }
        Ok(())
    }
}

impl Session {
    /// Starts an issued-order kernel of many threads (see [`Session::begin_kernel`]).
    pub(super) fn begin_issued(
        &mut self,
        header: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        debug_assert_eq!(header.order, Order::Issued);
        let run = self.start_kernel(header, observer)?;
        self.feeding = Feeding::ByIssue(Box::new(ByIssue {
            run,
            header: header.header(),
            rows: 0,
            threads_per_cta: header.threads_per_cta().max(1),
            warp_size: self.cfg.schedule.warp_size.max(1),
            sms: self.cfg.gpu.sms.max(1),
            pending: Columns::default(),
            idx: Vec::with_capacity(64),
        }));
        Ok(())
    }

    /// Simulates the next rows of the issued-order kernel begun by
    /// [`Session::begin_kernel`], in issue order and cut anywhere; their threads and
    /// instructions must be the header's.
    pub fn issued(&mut self, rows: &Columns, observer: &mut dyn Observer) -> Result<(), SimError> {
        if self.feeding.stream_mut().is_some() {
            return self
                .feed(rows, observer)
                .then_some(())
                .ok_or(SimError::Cancelled);
        }
        let Some(mut b) = self.feeding.take_by_issue() else {
            return Err(SimError::Config(
                "issued rows came before an issued-order kernel began".into(),
            ));
        };
        let result = b.take(self, rows, observer);
        self.feeding = Feeding::ByIssue(b);
        result
    }

    /// Ends the issued-order kernel, if one is open: its last warp instruction is simulated
    /// and its rows go into the report.
    pub(super) fn end_issued(&mut self, observer: &mut dyn Observer) -> Result<(), SimError> {
        let Some(mut b) = self.feeding.take_by_issue() else {
            return Ok(());
        };
        b.issue_pending(self, observer)?;
        let ByIssue {
            run,
            mut header,
            rows,
            sms,
            ..
        } = *b;
        let cta_sm = std::mem::take(&mut header.info.cta_sm);
        self.add_pieced(run, header, rows, |c| Some(issued_sm(&cta_sm, c, sms)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Coalescing, SimConfig, SmSelection};
    use crate::sim::{NoObserver, RequestEvent};
    use crate::trace::{Access, AccessKind, Dim3, KernelBuilder, MemSpace};
    use proptest::prelude::*;

    #[derive(Default)]
    struct Events(Vec<RequestEvent>);
    impl Observer for Events {
        fn on_request(&mut self, e: &RequestEvent) {
            self.0.push(*e);
        }
    }

    /// First thread, instruction, CTA, kind (load, store, barrier), instance, addresses.
    type Run = (u32, u32, u32, u8, u32, Vec<u64>);

    /// An issued-order kernel of `grid` CTAs of 8 threads: runs of rows of one warp
    /// instruction (the tracers write a warp's accesses together), sometimes barriers, and
    /// often runs of the same key next to each other (one warp instruction, or two split by
    /// a barrier).
    fn kernel(runs: &[Run], grid: u32, cta_sm: &[u32]) -> Kernel {
        let mut b = KernelBuilder::new("k", Dim3::x(grid), Dim3::x(8), Order::Issued).unwrap();
        for name in ["ld", "st", "ld2"] {
            b.instruction(name, None);
        }
        for (thread0, inst, cta, kind, dyn_inst, addrs) in runs {
            for (lane, &addr) in addrs.iter().enumerate() {
                let kind =
                    [AccessKind::Load, AccessKind::Store, AccessKind::Barrier][*kind as usize];
                b.push(Access {
                    thread: (cta % grid) * 8 + (thread0 + lane as u32) % 8,
                    inst: *inst,
                    dyn_inst: *dyn_inst,
                    addr,
                    size: 4,
                    kind,
                    space: MemSpace::Global,
                })
                .unwrap();
            }
        }
        let mut k = b.finish();
        k.info.cta_sm = cta_sm.to_vec();
        k
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Streamed in pieces of any size, an issued-order kernel gives the whole kernel's
        /// report and request events; also when its instructions come as they are found
        /// (`as_found`: each piece's before it, the others at the end).
        #[test]
        fn a_kernel_streamed_in_issue_order_matches_the_whole_one(
            runs in prop::collection::vec(
                (0u32..8, 0u32..2, 0u32..3, prop_oneof![4 => Just(0u8), 2 => Just(1u8), 2 => Just(2u8)],
                 0u32..2, prop::collection::vec(0u64..4096, 1..6)),
                0..40),
            pieces in prop::collection::vec(1usize..25, 1..8),
            grid in 1u32..5,
            cta_sm in prop::collection::vec(0u32..6, 0..4),
            sms in 1u32..4,
            warp_size in prop_oneof![Just(4u32), Just(8)],
            coalesce in any::<bool>(),
            kernels in 1usize..3,
            copy_at in 0usize..30,
            as_found in any::<bool>(),
            window in 1usize..4,
        ) {
            let mut cfg = SimConfig::default();
            cfg.gpu.sms = sms;
            cfg.gpu.simulate = SmSelection::All;
            cfg.schedule.warp_size = warp_size;
            cfg.coalescing = if coalesce { Coalescing::Line } else { Coalescing::None };
            cfg.cache.size_bytes = 1024;
            cfg.cache.ways = 2;
            let k = kernel(&runs, grid, &cta_sm);

            // The whole kernel's per-CTA counters in a window that holds every CTA; the
            // streamed one's in one of a few CTAs, so rows are made before their CTAs end.
            crate::report::set_test_window(crate::report::WINDOW_CTAS);
            let mut want_events = Events::default();
            let mut s = Session::new(&cfg, 0).unwrap();
            for _ in 0..kernels {
                s.kernel(&k, &mut want_events).unwrap();
            }
            let want = s.finish(&mut NoObserver);

            crate::report::set_test_window(window);
            let mut got_events = Events::default();
            let mut s = Session::new(&cfg, 0).unwrap();
            // A copy of the session after piece `copy_at` of the first kernel: where it
            // stood in the rows, and the requests made before it.
            let mut copy = None;
            let insts = &k.instructions;
            // Gives the instructions before `upto` not given yet.
            let give = |s: &mut Session, given: &mut usize, upto: usize, obs: &mut Events| {
                if upto > *given {
                    s.more_instructions(&insts[*given..upto], obs).unwrap();
                    *given = upto;
                }
            };
            for ki in 0..kernels {
                let mut header = k.header();
                let mut given = insts.len();
                if as_found {
                    header.instructions.clear();
                    given = 0;
                }
                s.begin_kernel(&header, &mut got_events).unwrap();
                let cols = k.columns();
                let (mut at, mut p) = (0, 0);
                while at < cols.len() {
                    let n = pieces[p % pieces.len()].min(cols.len() - at);
                    let mut piece = Columns::default();
                    piece.extend_from(cols, at..at + n);
                    let upto = piece.inst.iter().max().map_or(0, |&i| i as usize + 1);
                    give(&mut s, &mut given, upto, &mut got_events);
                    s.issued(&piece, &mut got_events).unwrap();
                    at += n;
                    if ki == 0 && p == copy_at {
                        copy = Some((s.snapshot().unwrap(), at, got_events.0.len(), given));
                    }
                    p += 1;
                }
                give(&mut s, &mut given, insts.len(), &mut got_events);
                s.end_kernel(&mut got_events).unwrap();
            }
            let got = s.finish(&mut NoObserver);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(&got_events.0, &want_events.0);

            // The copy goes on with the rest, as the session it copied did.
            if let Some((mut copy, at, before, mut given)) = copy {
                let mut copy_events = Events::default();
                give(&mut copy, &mut given, insts.len(), &mut copy_events);
                let cols = k.columns();
                let mut rest = Columns::default();
                rest.extend_from(cols, at..cols.len());
                copy.issued(&rest, &mut copy_events).unwrap();
                copy.end_kernel(&mut copy_events).unwrap();
                for _ in 1..kernels {
                    copy.kernel(&k, &mut copy_events).unwrap();
                }
                prop_assert_eq!(&copy.finish(&mut NoObserver), &want);
                prop_assert_eq!(&copy_events.0[..], &want_events.0[before..]);
            }
        }
    }

    /// A session within an issued-order kernel counts its per-CTA counters (a window of
    /// them, which grows with the CTAs met up to its limit) in the bytes it says it holds:
    /// the app keeps copies of sessions within a budget of those bytes.
    #[test]
    fn a_session_within_an_issued_kernel_counts_its_per_cta_counters() {
        let runs: Vec<Run> = (0..4000u32)
            .map(|c| (0, 0, c, 0, 0, vec![c as u64 * 128]))
            .collect();
        let k = kernel(&runs, 4000, &[]);
        let mut s = Session::new(&SimConfig::default(), 0).unwrap();
        s.begin_kernel(&k.header(), &mut NoObserver).unwrap();
        let before = s.approx_bytes();
        s.issued(k.columns(), &mut NoObserver).unwrap();
        let held = s.feeding.by_issue().map_or(0, |b| b.run.ctas.heap_bytes());
        assert!(held > 4000 * 100, "{held} bytes of per-CTA counters");
        let after = s.approx_bytes();
        assert!(
            after >= before + held as u64,
            "{before} then {after}, {held} held"
        );
    }

    #[test]
    fn rows_outside_the_kernel_are_refused_with_their_number() {
        let k = kernel(&[(0, 0, 0, 0, 0, vec![0x100, 0x104])], 1, &[]);
        let mut s = Session::new(&SimConfig::default(), 0).unwrap();
        let e = s.issued(k.columns(), &mut NoObserver).unwrap_err();
        assert!(
            e.to_string()
                .contains("before an issued-order kernel began"),
            "{e}"
        );
        s.begin_kernel(&k.header(), &mut NoObserver).unwrap();
        s.issued(k.columns(), &mut NoObserver).unwrap();
        let mut bad = k.columns().clone();
        bad.thread[1] = 8;
        let e = s.issued(&bad, &mut NoObserver).unwrap_err();
        let chain = format!(
            "{e}: {}",
            std::error::Error::source(&e)
                .map(|s| s.to_string())
                .unwrap_or_default()
        );
        assert!(
            chain.contains("row 3") && chain.contains("thread 8"),
            "{chain}"
        );
    }
}
