//! The timing model run a piece at a time, for a caller that cannot run it whole at once (the
//! web build runs it between frames, where a whole run of a large trace would hold the page):
//! each [`TimedSteps::step`] builds the warp streams of a kernel's next CTA on a simulated SM
//! (the CTAs of the other SMs have none), or runs some
//! turns of one kernel of one job ([`TimedJob::turns`]), and the last gives the report. The pieces are the ones [`super::run`] runs, in its order,
//! so the report and every request the observer sees are the ones a whole run gives.

use super::turns::KernelTurns;
use super::{JobResult, TimedJob, TimedPlan};
use crate::config::SimConfig;
use crate::sim::{selected_sms, Observer, Report, SimError};
use crate::timing::WarpStreams;
use crate::trace::Kernel;

/// Turns (an SM's issue of a warp instruction, or its wait for one) one piece runs.
const TURNS: u32 = 1024;

/// Where a run in pieces stands (it holds no reference to the configuration or the kernels,
/// which each step is given: the same every time).
#[derive(Default)]
pub struct TimedSteps {
    /// Each kernel's warp streams, built so far.
    streams: Vec<WarpStreams>,
    /// The parts of the next kernel's streams built so far (a CTA that runs on a simulated
    /// SM each, and the CTAs before it that do not), and the CTA the next part starts at.
    parts: Vec<WarpStreams>,
    next_cta: u32,
    announced: bool,
    /// The job running, the next of its kernels to run, and that kernel's turns once begun.
    job: Option<TimedJob>,
    kernel: usize,
    turns: Option<KernelTurns>,
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
            let sms = selected_sms(cfg);
            let n_sms = cfg.gpu.sms.max(1);
            let (from, n) = (self.next_cta, k.num_ctas());
            let mut to = from;
            while to < n && !sms.contains(&(to % n_sms)) {
                to += 1;
            }
            let to = to.saturating_add(1).min(n);
            self.next_cta = to;
            self.parts
                .push(TimedPlan::kernel_streams(cfg, k, from..to)?);
            if to >= k.num_ctas() {
                let parts = std::mem::take(&mut self.parts);
                self.next_cta = 0;
                let whole = WarpStreams::join(parts).ok_or_else(|| {
                    SimError::Config(
                        "a kernel's streams were built in parts that do not fit".into(),
                    )
                })?;
                self.streams.push(whole);
            }
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
                match &mut self.turns {
                    None => {
                        let total = TimedPlan::progress_total(cfg, total_rows(launches))?;
                        let shape = streams.shape();
                        let run = job.begin_kernel(k, shape, observer, self.rows_done, total);
                        self.turns = Some(run);
                    }
                    Some(run) => {
                        if job.turns(run, k, &mut &*streams, observer, TURNS)? {
                            self.turns = None;
                            self.kernel += 1;
                        }
                    }
                }
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
