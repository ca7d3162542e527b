//! A kernel the scheduler orders, given CTA by CTA: only the resident CTAs are held, and the
//! issue order is the one the whole kernel gets.

use super::*;

impl Session {
    /// Starts a kernel whose rows come in pieces, so that only what is needed is held;
    /// `header` gives its name, shape, order, instructions and source facts (its rows, if
    /// any, are ignored). A kernel the scheduler orders comes CTA by CTA ([`Session::cta`]):
    /// its warps are scheduled as [`Session::kernel`] schedules the whole kernel, holding
    /// only the resident CTAs. An issued-order kernel comes in chunks of rows in issue order
    /// ([`Session::issued`]; a reference stream as [`Session::begin_stream`] takes it).
    /// Either way the result is the whole kernel's.
    pub fn begin_kernel(
        &mut self,
        header: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        if header.is_reference_stream() {
            return self.begin_stream(header, observer);
        }
        if header.order == Order::Issued {
            return self.begin_issued(header, observer);
        }
        let err = |source| SimError::Schedule {
            kernel: header.name.clone(),
            source,
        };
        let cfg = &self.cfg;
        // Checked before the kernel is numbered, so a refused one leaves no trace.
        let mut sched = CtaScheduler::new(
            header,
            &cfg.schedule,
            &cfg.gpu,
            cfg.seed ^ self.next_kernel as u64,
        )
        .map_err(err)?;
        if self.recycle {
            sched.recycle_rows();
        }
        let run = self.start_kernel(header, observer)?;
        let header = header.header();
        self.feeding = Feeding::ByCta(Box::new(ByCta {
            sched,
            run,
            header,
            rows: 0,
            wanted: Vec::new(),
        }));
        Ok(())
    }

    /// Simulates the kernel begun by [`Session::begin_kernel`] as far as the rows of CTA
    /// `cta` (linear id; CTAs in increasing order, one skipped has no rows) allow; the rows
    /// are grouped by thread in increasing order and copied.
    pub fn cta(
        &mut self,
        cta: u32,
        rows: &Columns,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        self.offer(rows.len(), observer, |s| s.offer(cta, rows))
    }

    /// As [`Session::cta`], but the rows are kept while the CTA is resident, not copied:
    /// sessions fed the same CTAs side by side share one copy.
    pub fn cta_shared(
        &mut self,
        cta: u32,
        rows: std::sync::Arc<Columns>,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        self.offer(rows.len(), observer, |s| s.offer_shared(cta, rows))
    }

    /// Keeps the rows of the finished CTAs given by [`Session::cta_shared`] once the
    /// scheduler lets go of them, for [`Session::release_rows`]: a shell that reads on another
    /// thread reuses their memory for later CTAs instead of allocating it afresh. Call
    /// [`Session::release_rows`] after each CTA given: they are kept until then.
    pub fn recycle_cta_rows(&mut self) {
        self.recycle = true;
        if let Some(b) = self.feeding.by_cta_mut() {
            b.sched.recycle_rows();
        }
    }

    /// Hands `f` the rows let go of since the last call ([`Session::recycle_cta_rows`]).
    pub fn release_rows(&mut self, f: &mut dyn FnMut(std::sync::Arc<Columns>)) {
        if let Some(b) = self.feeding.by_cta_mut() {
            b.sched.take_released(f);
        }
    }

    /// As [`Session::cta_shared`], but issues at most `warp_instructions` warp instructions;
    /// [`Session::go_on`] issues more. Returns whether it stopped at that limit rather than
    /// for want of the next CTA. A shell that keeps copies of the session
    /// ([`Session::snapshot`]) takes them between these steps, so a kernel whose CTAs finish
    /// in waves still gets copies within a wave.
    pub fn cta_shared_for(
        &mut self,
        cta: u32,
        rows: std::sync::Arc<Columns>,
        warp_instructions: u64,
        observer: &mut dyn Observer,
    ) -> Result<bool, SimError> {
        let mut more = false;
        self.offer_for(rows.len(), warp_instructions, &mut more, observer, |s| {
            s.offer_shared(cta, rows)
        })?;
        Ok(more)
    }

    /// Issues at most `warp_instructions` more warp instructions of the kernel begun CTA by
    /// CTA; returns whether it stopped at that limit (see [`Session::cta_shared_for`]).
    pub fn go_on(
        &mut self,
        warp_instructions: u64,
        observer: &mut dyn Observer,
    ) -> Result<bool, SimError> {
        let Some(mut b) = self.feeding.take_by_cta() else {
            return Ok(false);
        };
        let result = b
            .check_whole()
            .and_then(|()| self.run_by_cta(&mut b, warp_instructions, observer));
        self.feeding = Feeding::ByCta(b);
        result
    }

    /// Gives the scheduler a CTA of `len` rows with `offer`, then issues what it can.
    pub(super) fn offer(
        &mut self,
        len: usize,
        observer: &mut dyn Observer,
        offer: impl FnOnce(&mut CtaScheduler) -> Result<(), crate::schedule::ScheduleError>,
    ) -> Result<(), SimError> {
        self.offer_for(len, u64::MAX, &mut false, observer, offer)
    }

    /// [`Session::offer`], issuing at most `limit` warp instructions; `more` says whether it
    /// stopped at the limit.
    fn offer_for(
        &mut self,
        len: usize,
        limit: u64,
        more: &mut bool,
        observer: &mut dyn Observer,
        offer: impl FnOnce(&mut CtaScheduler) -> Result<(), crate::schedule::ScheduleError>,
    ) -> Result<(), SimError> {
        let Some(mut b) = self.feeding.take_by_cta() else {
            return Err(SimError::Config(
                "a CTA came before its kernel began, or in an issued-order kernel".into(),
            ));
        };
        if let Err(e) = b.check_whole() {
            self.feeding = Feeding::ByCta(b);
            return Err(e);
        }
        let result = offer(&mut b.sched).map_err(|source| SimError::Schedule {
            kernel: b.header.name.clone(),
            source,
        });
        let result = result.and_then(|()| {
            b.rows += len as u64;
            *more = self.run_by_cta(&mut b, limit, observer)?;
            Ok(())
        });
        self.feeding = Feeding::ByCta(b);
        result
    }

    /// Ends the kernel begun by [`Session::begin_kernel`]: CTAs not given have no rows.
    pub fn end_kernel(&mut self, observer: &mut dyn Observer) -> Result<(), SimError> {
        self.end_stream(observer);
        self.end_issued(observer)?;
        let Some(mut b) = self.feeding.take_by_cta() else {
            return Ok(());
        };
        if let Err(e) = b.check_whole() {
            self.feeding = Feeding::ByCta(b);
            return Err(e);
        }
        b.sched.close();
        self.run_by_cta(&mut b, u64::MAX, observer)?;
        let ByCta {
            sched,
            run,
            header,
            rows,
            ..
        } = *b;
        self.add_pieced(run, header, rows, |c| sched.cta_sm(c));
        Ok(())
    }

    /// Adds a kernel given in pieces (`header`, `rows` given) to the report.
    pub(in crate::sim) fn add_pieced(
        &mut self,
        run: Running,
        header: Kernel,
        rows: u64,
        cta_sm: impl Fn(u32) -> Option<u32>,
    ) {
        self.report.add_kernel_rows(
            KernelRow {
                kernel: run.ki,
                name: header.name,
                grid: header.grid,
                block: header.block,
                rows,
                warp_instructions: run.warp_insts,
            },
            &header.instructions,
            &run.insts,
            run.ctas.end(cta_sm),
        );
    }

    /// Issues warp instructions until the scheduler needs a CTA it has not been given, or
    /// `limit` are issued (then returns `true`).
    pub(super) fn run_by_cta(
        &mut self,
        b: &mut ByCta,
        limit: u64,
        observer: &mut dyn Observer,
    ) -> Result<bool, SimError> {
        let mut rows = Vec::with_capacity(64);
        let mut issued = 0u64;
        loop {
            if issued == limit {
                return Ok(true);
            }
            match b.sched.next(&mut rows) {
                Step::Issued(issue) => {
                    let cols = b.sched.columns(issue.cta);
                    b.run.issue(self, cols, &rows, issue, observer)?;
                    issued += 1;
                    if b.sched.any_finished() {
                        let (sched, ctas) = (&mut b.sched, &mut b.run.ctas);
                        sched.take_finished(|c, sm| ctas.finish(c, sm));
                    }
                }
                Step::Starved | Step::Done => return Ok(false),
            }
        }
    }

    /// The CTAs of the open kernel whose rows this copy of a session ([`Session::snapshot`])
    /// still wants before it can go on, in increasing order; empty for any other session.
    pub fn wanted_ctas(&self) -> &[u32] {
        self.feeding.by_cta().map_or(&[], |b| &b.wanted)
    }

    /// The instructions of the open kernel given CTA by CTA or in issue order so far (its
    /// header's, and those that came after it: [`Session::more_instructions`]); empty for
    /// any other session.
    pub fn kernel_instructions(&self) -> &[crate::trace::Instruction] {
        match &self.feeding {
            Feeding::ByCta(b) => &b.header.instructions,
            Feeding::ByIssue(b) => b.instructions(),
            Feeding::Whole | Feeding::Stream(_) => &[],
        }
    }

    /// Gives a copy of a session the rows of CTA `cta`, one of [`Session::wanted_ctas`], as
    /// the trace gave them (grouped by thread in increasing order).
    pub fn give_cta_rows(&mut self, cta: u32, rows: Columns) -> Result<(), SimError> {
        let Some(b) = self.feeding.by_cta_mut() else {
            return Err(SimError::Config(
                "no kernel is open to take CTA rows".into(),
            ));
        };
        let Some(i) = b.wanted.iter().position(|&c| c == cta) else {
            return Err(SimError::Config(format!(
                "kernel {}: the rows of CTA {cta} are not wanted",
                b.header.name
            )));
        };
        b.sched
            .give_rows(cta, rows)
            .map_err(|source| SimError::Schedule {
                kernel: b.header.name.clone(),
                source,
            })?;
        b.wanted.remove(i);
        Ok(())
    }
}

/// A kernel read CTA by CTA ([`Session::begin_kernel`]).
pub(in crate::sim) struct ByCta {
    sched: CtaScheduler,
    run: Running,
    /// The kernel without rows.
    header: Kernel,
    /// Rows given so far.
    rows: u64,
    /// CTAs whose rows a copy of the session still wants ([`Session::wanted_ctas`]).
    wanted: Vec<u32>,
}

impl ByCta {
    /// Takes instructions found after the kernel began; gives the kernel's number.
    pub(super) fn more_instructions(&mut self, added: &[crate::trace::Instruction]) -> u32 {
        super::super::running::add_instructions(
            &mut self.header.instructions,
            &mut self.run.insts,
            added,
        );
        self.run.ki
    }

    /// A copy holding no rows: they are wanted back.
    pub(super) fn copy_without_rows(&self) -> ByCta {
        let (sched, wanted) = self.sched.copy_without_rows();
        ByCta {
            sched,
            run: self.run.clone(),
            header: self.header.clone(),
            rows: self.rows,
            wanted,
        }
    }

    /// About the bytes it holds: the scheduler's state, the kernel's counters so far (one
    /// per instruction, and the per-CTA counters and rows) and its header.
    pub(super) fn heap_bytes(&self) -> usize {
        self.sched.heap_bytes() + self.run.heap_bytes(&self.header)
    }

    /// Refuses to go on while rows are wanted.
    fn check_whole(&self) -> Result<(), SimError> {
        match self.wanted.first() {
            None => Ok(()),
            Some(c) => Err(SimError::Config(format!(
                "kernel {}: this copy of a session still wants the rows of CTA {c} (and {} more)",
                self.header.name,
                self.wanted.len() - 1
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SmSelection;
    use crate::sim::NoObserver;

    #[test]
    fn the_counters_of_finished_ctas_become_rows_as_the_kernel_goes() {
        // 4096 CTAs of 32 threads over 4 SMs of at most 8 resident CTAs each.
        let pairs = [("n", "131072"), ("block", "32")].map(|(a, b)| (a.into(), b.into()));
        let trace = crate::gen::generate("vecadd", &pairs).unwrap();
        let k = &trace.kernels[0];
        let mut cfg = SimConfig::default();
        cfg.gpu.sms = 4;
        cfg.gpu.max_ctas_per_sm = 8;
        cfg.gpu.simulate = SmSelection::All;
        // The whole kernel's CTAs never say they finished: its counters are held in a window
        // of 4 CTAs, so rows are made while their CTAs run and get what comes late.
        crate::report::set_test_window(4);
        let mut whole = Session::new(&cfg, 0).unwrap();
        whole.kernel(k, &mut NoObserver).unwrap();
        crate::report::set_test_window(crate::report::WINDOW_CTAS);
        let mut s = Session::new(&cfg, 0).unwrap();
        s.begin_kernel(&k.header(), &mut NoObserver).unwrap();
        let mut rows = Columns::default();
        let (mut most, mut most_sched) = (0, 0);
        for c in 0..k.num_ctas() {
            rows.clear();
            rows.extend_from(k.columns(), k.cta_rows(c));
            s.cta(c, &rows, &mut NoObserver).unwrap();
            let b = s.feeding.by_cta().unwrap();
            most = most.max(b.run.ctas.held());
            most_sched = most_sched.max(b.sched.heap_bytes());
        }
        // Counters for about the resident CTAs (32) and the one offered, not for 4096.
        assert!(most <= 40, "counters held for {most} CTAs");
        // The scheduler: the SM of each of the 4096 CTAs (16 KiB), the cursors of the
        // resident CTAs' threads (8 KiB), and the state of about the resident CTAs and warps
        // (it was 17 bytes for each of the 4096 CTAs: 68 KiB more).
        assert!(
            most_sched < 40 << 10,
            "the scheduler held {most_sched} bytes"
        );
        s.end_kernel(&mut NoObserver).unwrap();
        let (a, b) = (whole.finish(&mut NoObserver), s.finish(&mut NoObserver));
        assert_eq!(a.ctas.len(), 4096);
        assert_eq!(a, b);
    }
}
