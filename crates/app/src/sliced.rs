//! Work done a slice at a time on the UI thread: how the web build runs what the desktop runs
//! on a thread, where no thread can be started, so that the page still draws, shows the
//! progress and answers Cancel meanwhile ([`crate::job::Job::stepped`]; on a page the slices
//! run between the browser's tasks, `tasks.rs`).
//! [`Slices`] turns any piecewise computation of the core (a run of the pipeline, an
//! explanation, a step-through's state, a measurement) into a job's steps; [`Sliced`] is a
//! pane's simulation, over the core's `RunSteps` (the pipeline in pieces, with or without the
//! timing model), giving the result `worker::simulate` gives for the same trace and
//! configuration (`tests/web.rs` checks it).

use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{RunSteps, SimError};

use super::data::{Points, SimData, TraceData};
use super::job::{Finished, Job, JobError, Progress, Step, Wake};
use super::worker::{error_chain, Collect};

/// A computation given as its next piece (`None` until one gives the result), run as many
/// pieces as fit in a slice.
pub struct Slices<F>(pub F);

impl<T, F> Step<T> for Slices<F>
where
    F: FnMut(&Progress) -> Option<Finished<T>> + Send,
{
    fn step(&mut self, progress: &Progress, until: web_time::Instant) -> Option<Finished<T>> {
        loop {
            if let Some(done) = (self.0)(progress) {
                return Some(done);
            }
            if web_time::Instant::now() >= until {
                return None;
            }
        }
    }
}

impl<F> Slices<F> {
    /// A job that does `piece` after piece until one gives the result: in slices between
    /// frames in a page, all of them on a thread of its own on the desktop. Whether the core's
    /// runs go in pieces or whole is the caller's (`PIECES`).
    pub fn job<T>(label: impl Into<String>, wake: &Wake, mut piece: F) -> Job<T>
    where
        T: Send + 'static,
        F: FnMut(&Progress) -> Option<Finished<T>> + Send + 'static,
    {
        if PIECES {
            Job::stepped(label, wake, Slices(piece))
        } else {
            Job::spawn(label, wake, move |p| loop {
                if let Some(done) = piece(p) {
                    return done;
                }
            })
        }
    }
}

/// Whether the core's runs go a piece at a time (a page, which has no threads) or whole (the
/// desktop, on a job's thread).
pub const PIECES: bool = cfg!(target_arch = "wasm32");

/// A pane's run: where it stands, and the requests gathered for the views.
pub struct Sliced {
    config: SimConfig,
    trace: Arc<TraceData>,
    /// `None` until the first slice (a configuration the core refuses fails there).
    steps: Option<RunSteps>,
    points: Points,
}

impl Sliced {
    /// The run of `trace` under `config`, not started.
    pub fn new(config: SimConfig, trace: Arc<TraceData>) -> Self {
        Sliced {
            config,
            trace,
            steps: None,
            points: Points::default(),
        }
    }

    /// The next piece; the result after the last.
    fn piece(&mut self, progress: &Progress) -> Option<Finished<Arc<SimData>>> {
        let steps = match &mut self.steps {
            Some(s) => s,
            None => {
                progress.set_total(self.trace.trace.total_accesses() as u64);
                match RunSteps::new(&self.config) {
                    Ok(s) => self.steps.insert(s),
                    Err(e) => return Some(Err(failed(&e))),
                }
            }
        };
        let mut collect = Collect {
            points: &mut self.points,
            progress,
        };
        match steps.step(&self.config, &self.trace.trace.kernels, &mut collect) {
            Ok(None) => None,
            Ok(Some(report)) => {
                let points = std::mem::take(&mut self.points);
                let data = SimData::new(self.config.clone(), report, points, &self.trace);
                Some(Ok(Arc::new(data)))
            }
            Err(SimError::Cancelled) => Some(Err(JobError::Cancelled)),
            Err(e) => Some(Err(failed(&e))),
        }
    }
}

impl Step<Arc<SimData>> for Sliced {
    fn step(
        &mut self,
        progress: &Progress,
        until: web_time::Instant,
    ) -> Option<Finished<Arc<SimData>>> {
        let done = Slices(|p: &Progress| self.piece(p)).step(progress, until);
        if done.is_none() {
            // A session reports its progress only now and then: the slice says how far.
            if let Some(n) = self.steps.as_ref().and_then(RunSteps::accesses_done) {
                let total = self.trace.trace.total_accesses() as u64;
                progress.report(n.min(total), total);
            }
        }
        done
    }
}

fn failed(e: &SimError) -> JobError {
    JobError::Failed(error_chain(e))
}
