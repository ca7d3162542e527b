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
        let sched = CtaScheduler::new(
            header,
            &cfg.schedule,
            &cfg.gpu,
            cfg.seed ^ self.next_kernel as u64,
        )
        .map_err(err)?;
        let run = self.start_kernel(header, observer)?;
        let header = header.header();
        self.by_cta = Some(Box::new(ByCta {
            sched,
            run,
            header,
            rows: 0,
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

    /// Gives the scheduler a CTA of `len` rows with `offer`, then issues what it can.
    pub(super) fn offer(
        &mut self,
        len: usize,
        observer: &mut dyn Observer,
        offer: impl FnOnce(&mut CtaScheduler) -> Result<(), crate::schedule::ScheduleError>,
    ) -> Result<(), SimError> {
        let Some(mut b) = self.by_cta.take() else {
            return Err(SimError::Config(
                "a CTA came before its kernel began, or in an issued-order kernel".into(),
            ));
        };
        let result = offer(&mut b.sched).map_err(|source| SimError::Schedule {
            kernel: b.header.name.clone(),
            source,
        });
        let result = result.and_then(|()| {
            b.rows += len as u64;
            self.run_by_cta(&mut b, observer)
        });
        self.by_cta = Some(b);
        result
    }

    /// Ends the kernel begun by [`Session::begin_kernel`]: CTAs not given have no rows.
    pub fn end_kernel(&mut self, observer: &mut dyn Observer) -> Result<(), SimError> {
        self.end_stream(observer);
        self.end_issued(observer)?;
        let Some(mut b) = self.by_cta.take() else {
            return Ok(());
        };
        b.sched.close();
        self.run_by_cta(&mut b, observer)?;
        let ByCta {
            sched,
            run,
            header,
            rows,
        } = *b;
        self.add_pieced(&run, header, rows, |c| sched.cta_sm(c));
        Ok(())
    }

    /// Adds a kernel given in pieces (`header`, `rows` given) to the report.
    pub(in crate::sim) fn add_pieced(
        &mut self,
        run: &Running,
        header: Kernel,
        rows: u64,
        cta_sm: impl Fn(u32) -> Option<u32>,
    ) {
        self.report.add_kernel(
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
            &run.ctas,
            cta_sm,
        );
    }

    /// Issues warp instructions until the scheduler needs a CTA it has not been given.
    pub(super) fn run_by_cta(
        &mut self,
        b: &mut ByCta,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let mut rows = Vec::with_capacity(64);
        loop {
            match b.sched.next(&mut rows) {
                Step::Issued(issue) => {
                    let cols = b.sched.columns(issue.cta);
                    b.run.issue(self, cols, &rows, issue, observer)?;
                }
                Step::Starved | Step::Done => return Ok(()),
            }
        }
    }
}

/// A kernel read CTA by CTA ([`Session::begin_kernel`]).
pub(super) struct ByCta {
    sched: CtaScheduler,
    run: Running,
    /// The kernel without rows.
    header: Kernel,
    /// Rows given so far.
    rows: u64,
}
