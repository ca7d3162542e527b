//! A pane's run of the timing model a piece at a time, on the UI thread between frames: how
//! the web build runs it, where no thread can be started (`sliced.rs` does the same for the
//! other runs). The pieces are the core's ([`TimedSteps`]): one kernel's warp streams, or
//! one kernel of one job (one run on one SM, or on every SM behind a simulated L2), as many as
//! fit in a slice. The result is the one `worker::simulate` gives (`tests/web.rs` checks it);
//! a piece itself is not cut, so a kernel of many millions of accesses on one SM is one piece.

use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{SimError, TimedSteps};

use super::data::{Points, SimData, TraceData};
use super::job::{Finished, JobError, Progress, Step};
use super::worker::{error_chain, Collect};

/// The run: where it stands, and the requests gathered for the views.
pub struct SlicedTimed {
    config: SimConfig,
    trace: Arc<TraceData>,
    steps: TimedSteps,
    points: Points,
}

impl SlicedTimed {
    /// The timing model's run of `trace` under `config` (which has a timing section), not
    /// started.
    pub fn new(config: SimConfig, trace: Arc<TraceData>) -> Self {
        SlicedTimed {
            config,
            trace,
            steps: TimedSteps::new(),
            points: Points::default(),
        }
    }
}

impl Step<Arc<SimData>> for SlicedTimed {
    fn step(
        &mut self,
        progress: &Progress,
        until: web_time::Instant,
    ) -> Option<Finished<Arc<SimData>>> {
        loop {
            let mut collect = Collect {
                points: &mut self.points,
                progress,
            };
            match self
                .steps
                .step(&self.config, &self.trace.trace.kernels, &mut collect)
            {
                Ok(None) if web_time::Instant::now() < until => {}
                Ok(None) => return None,
                Ok(Some(report)) => {
                    let points = std::mem::take(&mut self.points);
                    let data = SimData::new(self.config.clone(), report, points, &self.trace);
                    return Some(Ok(Arc::new(data)));
                }
                Err(SimError::Cancelled) => return Some(Err(JobError::Cancelled)),
                Err(e) => return Some(Err(JobError::Failed(error_chain(&e)))),
            }
        }
    }
}
