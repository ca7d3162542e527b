//! The model's inputs measured a piece at a time ([`Measuring`]), for a caller that must not
//! hold its thread long (the web build's page, between frames): the count of requests and
//! transactions is a run of the pipeline on every SM (the GT200 coalescer's requests of each
//! warp instruction, as the scheduler issues them: the sums do not depend on the order),
//! then the timing model's run for the duplicate loads, each in the pieces of
//! [`RunSteps`]. The result is [`super::measure_with`]'s (tested in `tests.rs`).

use super::measure::{count_requests, duplicates, duplicates_config, shape, Raw, RequestCounts};
use super::{Given, GpuModel, MeasureError, Measured};
use crate::coalesce::Coalesced;
use crate::config::SmSelection;
use crate::sim::{Observer, RunSteps};
use crate::trace::{Columns, Kernel};

/// One kernel's inputs being measured, a piece per [`Measuring::step`].
pub struct Measuring {
    g: GpuModel,
    given: Given,
    /// The run that counts the requests: the GPU's shape, every SM simulated.
    count: crate::config::SimConfig,
    stage: Stage,
}

enum Stage {
    /// Counting the requests; `None` until the first step.
    Count(Option<RunSteps>, RequestCounts),
    /// The duplicate loads' run.
    Duplicates(Box<Raw>, crate::config::SimConfig, RunSteps),
    Over,
}

/// Counts the requests the run's warp instructions make, and passes progress on.
struct Counting<'a> {
    counts: &'a mut RequestCounts,
    outer: &'a mut dyn Observer,
}

impl Observer for Counting<'_> {
    fn wants_requests(&self) -> bool {
        false
    }
    fn on_coalesced(&mut self, cols: &Columns, rows: &[u32], requests: &[Coalesced]) {
        self.counts.add(cols, rows, requests);
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.outer.progress(done, total)
    }
}

impl Measuring {
    /// The inputs of a kernel on `g`, what the user gave filling in what a trace lacks.
    pub fn new(g: &GpuModel, given: &Given) -> Self {
        let mut count = shape(g);
        count.gpu.simulate = SmSelection::All;
        Measuring {
            g: g.clone(),
            given: given.clone(),
            count,
            stage: Stage::Count(None, RequestCounts::default()),
        }
    }

    /// Does the next piece of the measurement of `k` (the same kernel each time); the inputs
    /// once they are known. `observer` hears the runs' progress and can stop them (then the
    /// error is a cancelled simulation). After the inputs, or an error, it does nothing more.
    pub fn step(
        &mut self,
        k: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<Option<Measured>, MeasureError> {
        let stage = std::mem::replace(&mut self.stage, Stage::Over);
        self.stage = match stage {
            Stage::Count(None, _) if k.is_reference_stream() => {
                // Not given to the coalescer per warp instruction: counted whole, as
                // `measure_with` counts them.
                let counts = count_requests(k, &shape(&self.g))?;
                self.counted(k, counts)?
            }
            Stage::Count(None, counts) => Stage::Count(Some(RunSteps::new(&self.count)?), counts),
            Stage::Count(Some(mut run), mut counts) => {
                let mut counting = Counting {
                    counts: &mut counts,
                    outer: observer,
                };
                match run.step(&self.count, std::slice::from_ref(k), &mut counting)? {
                    None => Stage::Count(Some(run), counts),
                    Some(_) => self.counted(k, counts)?,
                }
            }
            Stage::Duplicates(raw, cfg, mut run) => {
                match run.step(&cfg, std::slice::from_ref(k), observer)? {
                    None => Stage::Duplicates(raw, cfg, run),
                    Some(report) => return Ok(Some(raw.measured(k, duplicates(&report)))),
                }
            }
            Stage::Over => Stage::Over,
        };
        Ok(None)
    }

    /// The requests are counted: the duplicate loads' run, next.
    fn counted(&self, k: &Kernel, counts: RequestCounts) -> Result<Stage, MeasureError> {
        let raw = Raw::of(k, &self.g, &self.given, counts)?;
        let cfg = duplicates_config(&self.g, &raw.inputs)?;
        let run = RunSteps::new(&cfg)?;
        Ok(Stage::Duplicates(Box::new(raw), cfg, run))
    }
}
