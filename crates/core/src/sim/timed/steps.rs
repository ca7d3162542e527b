//! The timing model run a piece at a time, for a caller that cannot run it whole at once (the
//! web build runs it between frames, where a whole run of a large trace would hold the page):
//! each [`TimedSteps::step`] builds one kernel's warp streams, or runs one kernel of one job,
//! and the last gives the report. The pieces are the ones [`super::run`] runs, in its order,
//! so the report and every request the observer sees are the ones a whole run gives.

use super::{JobResult, TimedJob, TimedPlan};
use crate::config::SimConfig;
use crate::sim::{Observer, Report, SimError};
use crate::timing::WarpStreams;
use crate::trace::Kernel;

/// Where a run in pieces stands (it holds no reference to the configuration or the kernels,
/// which each step is given: the same every time).
#[derive(Default)]
pub struct TimedSteps {
    /// Each kernel's warp streams, built so far.
    streams: Vec<WarpStreams>,
    announced: bool,
    /// The job running, and the next of its kernels to run.
    job: Option<TimedJob>,
    kernel: usize,
    results: Vec<JobResult>,
    /// Rows the finished jobs issued.
    rows_done: u64,
}

impl TimedSteps {
    /// A run not begun.
    pub fn new() -> Self {
        TimedSteps::default()
    }

    /// Does the next piece of the timing model's run of `launches` under `cfg`; the report
    /// once the last piece is done.
    pub fn step(
        &mut self,
        cfg: &SimConfig,
        launches: &[Kernel],
        observer: &mut dyn Observer,
    ) -> Result<Option<Report>, SimError> {
        if let Some(k) = launches.get(self.streams.len()) {
            self.streams.push(TimedPlan::kernel_streams(cfg, k)?);
            return Ok(None);
        }
        if !self.announced {
            for (ki, k) in launches.iter().enumerate() {
                observer.on_kernel(ki as u32, k);
            }
            self.announced = true;
        }
        let (jobs, _) = TimedJob::count(cfg)?;
        let done = self.results.len();
        if done < jobs {
            let job = match &mut self.job {
                Some(j) => j,
                None => self.job.insert(TimedJob::new(cfg, done)?),
            };
            if let (Some(k), Some(streams)) =
                (launches.get(self.kernel), self.streams.get(self.kernel))
            {
                let total = TimedPlan::progress_total(cfg, total_rows(launches))?;
                job.kernel(
                    k,
                    streams.shape(),
                    &mut &*streams,
                    observer,
                    self.rows_done,
                    total,
                )?;
                self.kernel += 1;
            }
            if self.kernel >= launches.len() {
                if let Some(j) = self.job.take() {
                    let r = j.finish();
                    self.rows_done += r.rows();
                    self.results.push(r);
                }
                self.kernel = 0;
            }
            return Ok(None);
        }
        let rows = launches.iter().map(|k| k.len() as u64).collect();
        let plan = TimedPlan::read(cfg, launches, rows)?;
        plan.finish(std::mem::take(&mut self.results), observer)
            .map(Some)
    }
}

fn total_rows(launches: &[Kernel]) -> u64 {
    launches.iter().map(|k| k.len() as u64).sum()
}
