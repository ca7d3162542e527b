//! A pane's simulation a slice at a time, on the UI thread between frames: how the web build
//! runs it, where no thread can be started, and the page still draws, shows the progress and
//! answers Cancel while it runs ([`crate::job::Job::stepped`]). The kernels go to the core's
//! session in pieces, as a trace read from disk goes (`Session::begin_kernel`): a scheduled
//! kernel CTA by CTA, a bounded number of warp instructions at a time; a reference stream
//! or an issued-order kernel in chunks of rows. The result is the one
//! `warpscope_shell::timed::simulate` gives for the same trace and configuration (the core
//! promises a kernel given in pieces the whole kernel's result; `tests/web.rs` checks it).
//! The timing model goes in its own pieces (`sliced_timed.rs`).

use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{Session, SimError};
use warpscope_core::trace::{Columns, Kernel, Order};

use super::data::{Points, SimData, TraceData};
use super::job::{Finished, JobError, Progress, Step};
use super::worker::Collect;

/// Warp instructions issued between two looks at the clock.
const WARP_INSTRUCTIONS: u64 = 2048;
/// Rows of a reference stream or an issued-order kernel given at once.
const CHUNK_ROWS: usize = 1 << 15;

/// The run: the session, the requests gathered for the views, and where it stands.
pub struct Sliced {
    config: SimConfig,
    trace: Arc<TraceData>,
    /// `None` until the first slice (a configuration the session refuses fails there).
    session: Option<Session>,
    points: Points,
    /// The kernel being given, and how far.
    kernel: usize,
    at: At,
}

/// Where the kernel being given stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Not begun.
    Start,
    /// Its CTAs before `next` given; `more`: the session stopped at its warp-instruction
    /// limit, not for want of the next CTA.
    Cta { next: u32, more: bool },
    /// Its rows before `next` given (a reference stream, or an issued-order kernel).
    Rows { next: usize },
    /// Everything given: it ends.
    End,
}

impl Sliced {
    /// The run of `trace` under `config` (without the timing model), not started.
    pub fn new(config: SimConfig, trace: Arc<TraceData>) -> Self {
        Sliced {
            config,
            trace,
            session: None,
            points: Points::default(),
            kernel: 0,
            at: At::Start,
        }
    }

    /// Gives the session what comes next, a piece; `Ok(true)` when the run is over.
    fn piece(&mut self, progress: &Progress) -> Result<bool, SimError> {
        let trace = self.trace.clone();
        let Some(k) = trace.trace.kernels.get(self.kernel) else {
            return Ok(true);
        };
        let Some(session) = &mut self.session else {
            return Ok(false);
        };
        let mut obs = Collect {
            points: &mut self.points,
            progress,
        };
        self.at = match self.at {
            At::Start => {
                session.begin_kernel(k, &mut obs)?;
                if by_rows(k) {
                    At::Rows { next: 0 }
                } else {
                    At::Cta {
                        next: 0,
                        more: false,
                    }
                }
            }
            At::Cta { next, more: true } => At::Cta {
                next,
                more: session.go_on(WARP_INSTRUCTIONS, &mut obs)?,
            },
            // A CTA without rows is not given, as a reader of a file never meets one.
            At::Cta { next, .. } if next < k.num_ctas() && k.cta_rows(next).is_empty() => At::Cta {
                next: next + 1,
                more: false,
            },
            At::Cta { next, .. } if next < k.num_ctas() => {
                let rows = cta_rows(k, next);
                At::Cta {
                    next: next + 1,
                    more: session.cta_shared_for(next, rows, WARP_INSTRUCTIONS, &mut obs)?,
                }
            }
            At::Rows { next } if next < k.len() => {
                let end = (next + CHUNK_ROWS).min(k.len());
                let mut rows = Columns::default();
                rows.extend_from(k.columns(), next..end);
                if k.is_reference_stream() {
                    if !session.feed(&rows, &mut obs) {
                        return Err(SimError::Cancelled);
                    }
                } else {
                    session.issued(&rows, &mut obs)?;
                }
                At::Rows { next: end }
            }
            At::Cta { .. } | At::Rows { .. } => At::End,
            At::End => {
                session.end_kernel(&mut obs)?;
                self.kernel += 1;
                At::Start
            }
        };
        Ok(false)
    }
}

/// Whether kernel `k` is given in chunks of rows rather than CTA by CTA.
fn by_rows(k: &Kernel) -> bool {
    k.is_reference_stream() || k.order == Order::Issued
}

/// A copy of the rows of CTA `cta` of `k`.
fn cta_rows(k: &Kernel, cta: u32) -> Arc<Columns> {
    let mut rows = Columns::default();
    rows.extend_from(k.columns(), k.cta_rows(cta));
    Arc::new(rows)
}

impl Step<Arc<SimData>> for Sliced {
    fn step(
        &mut self,
        progress: &Progress,
        until: web_time::Instant,
    ) -> Option<Finished<Arc<SimData>>> {
        if self.session.is_none() {
            let total = self.trace.trace.total_accesses() as u64;
            progress.set_total(total);
            match Session::new(&self.config, total) {
                Ok(s) => self.session = Some(s),
                Err(e) => return Some(Err(failed(&e))),
            }
        }
        loop {
            match self.piece(progress) {
                Ok(false) if web_time::Instant::now() < until => {}
                Ok(false) => {
                    // The session reports as it goes only now and then: the slice says how far.
                    if let Some(s) = &self.session {
                        let total = self.trace.trace.total_accesses() as u64;
                        progress.report(s.accesses_done().min(total), total);
                    }
                    return None;
                }
                Ok(true) => return Some(self.finish(progress)),
                Err(SimError::Cancelled) => return Some(Err(JobError::Cancelled)),
                Err(e) => return Some(Err(failed(&e))),
            }
        }
    }
}

impl Sliced {
    /// The report and what the views draw, once every kernel has been given.
    fn finish(&mut self, progress: &Progress) -> Finished<Arc<SimData>> {
        let Some(session) = self.session.take() else {
            return Err(JobError::Failed("the simulation ended twice".into()));
        };
        let report = session.finish(&mut Collect {
            points: &mut self.points,
            progress,
        });
        let points = std::mem::take(&mut self.points);
        let data = SimData::new(self.config.clone(), report, points, &self.trace);
        Ok(Arc::new(data))
    }
}

fn failed(e: &SimError) -> JobError {
    JobError::Failed(super::worker::error_chain(e))
}
