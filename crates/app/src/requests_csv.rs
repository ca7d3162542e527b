//! The per-request table as CSV without polars: how the web build exports it (the desktop
//! writes CSV or Parquet through polars, `RequestExporter`, which the web build leaves out).
//! The same run (the pane's configuration on its trace, in the core's pieces between frames:
//! the requests the desktop's run gives, in its order) and the same columns and values
//! (`REQUEST_COLUMNS`; a test compares the two files), written to memory for a download.

use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{Observer, RequestEvent, RunSteps, SimError, REQUEST_COLUMNS};
use warpscope_core::trace::{Instruction, Kernel};

use super::data::TraceData;
use super::job::{Finished, JobError, Progress};

/// Writes every request of a run as a CSV row.
struct RequestCsv {
    out: csv::Writer<Vec<u8>>,
    /// Instruction names of each kernel announced so far.
    names: Vec<Vec<String>>,
    error: Option<csv::Error>,
}

/// The table being written, and the job's progress (a piece's).
struct Writing<'a> {
    table: &'a mut RequestCsv,
    progress: &'a Progress,
}

impl Observer for Writing<'_> {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.table.on_kernel(kernel, header);
    }
    fn on_instructions(&mut self, kernel: u32, added: &[Instruction]) {
        self.table.on_instructions(kernel, added);
    }
    fn on_request(&mut self, e: &RequestEvent) {
        self.table.on_request(e);
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.report(done, total) && self.table.error.is_none()
    }
}

impl RequestCsv {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        let k = kernel as usize;
        if self.names.len() <= k {
            self.names.resize(k + 1, Vec::new());
        }
        self.names[k] = header.instructions.iter().map(|i| i.name.clone()).collect();
    }
    fn on_instructions(&mut self, kernel: u32, added: &[Instruction]) {
        if let Some(names) = self.names.get_mut(kernel as usize) {
            names.extend(added.iter().map(|i| i.name.clone()));
        }
    }
    fn on_request(&mut self, e: &RequestEvent) {
        if self.error.is_some() {
            return;
        }
        let name = self
            .names
            .get(e.kernel as usize)
            .and_then(|k| k.get(e.inst as usize))
            .map_or("", |n| n.as_str());
        let row = [
            e.order.to_string(),
            e.sm.to_string(),
            e.kernel.to_string(),
            e.cta.to_string(),
            e.warp.to_string(),
            e.inst.to_string(),
            name.to_string(),
            e.line.to_string(),
            e.set.to_string(),
            e.write.to_string(),
            e.hit.to_string(),
            e.class.map_or(String::new(), |c| c.name().to_string()),
            e.reuse_distance.map_or(String::new(), |d| d.to_string()),
        ];
        if let Err(err) = self.out.write_record(row) {
            self.error = Some(err);
        }
    }
}

/// The table of every request of `cfg`'s run of `trace`, as CSV: the job's pieces
/// ([`crate::sliced::Slices::job`]), the run in the core's pieces.
// The web build's export (`download.rs`), and the tests'.
#[cfg_attr(not(any(test, target_arch = "wasm32")), allow(dead_code))]
pub fn requests_csv(
    cfg: SimConfig,
    trace: Arc<TraceData>,
) -> impl FnMut(&Progress) -> Option<Finished<Vec<u8>>> + Send + 'static {
    let failed = |e: String| JobError::Failed(format!("writing the request table: {e}"));
    let mut started: Option<(RequestCsv, RunSteps)> = None;
    move |progress| {
        let (table, run) = match &mut started {
            Some(s) => s,
            None => {
                let mut out = csv::Writer::from_writer(Vec::new());
                if let Err(e) = out.write_record(REQUEST_COLUMNS) {
                    return Some(Err(failed(e.to_string())));
                }
                let table = RequestCsv {
                    out,
                    names: Vec::new(),
                    error: None,
                };
                match RunSteps::new(&cfg) {
                    Ok(run) => started.insert((table, run)),
                    Err(e) => return Some(Err(failed(super::worker::error_chain(&e)))),
                }
            }
        };
        let mut writing = Writing { table, progress };
        let step = run.step(&cfg, &trace.trace.kernels, &mut writing);
        if let Some(e) = &table.error {
            return Some(Err(failed(e.to_string())));
        }
        match step {
            Ok(None) => None,
            Ok(Some(_)) => {
                let (table, _) = started.take()?;
                Some(table.out.into_inner().map_err(|e| failed(e.to_string())))
            }
            Err(SimError::Cancelled) => Some(Err(JobError::Cancelled)),
            Err(e) => Some(Err(failed(super::worker::error_chain(&e)))),
        }
    }
}
