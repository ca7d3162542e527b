//! The per-request table as CSV without polars: how the web build exports it (the desktop
//! writes CSV or Parquet through polars, `RequestExporter`, which the web build leaves out).
//! The same run (the pane's configuration on its trace, through the shell as the desktop runs
//! it) and the same columns and values (`REQUEST_COLUMNS`; a test compares the two files),
//! written to memory for a download.

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{Observer, RequestEvent, SimError, REQUEST_COLUMNS};
use warpscope_core::trace::{Instruction, Kernel};

use super::data::TraceData;
use super::job::{Finished, JobError, Progress};

/// Writes every request of a run as a CSV row.
struct RequestCsv<'a> {
    out: csv::Writer<Vec<u8>>,
    /// Instruction names of each kernel announced so far.
    names: Vec<Vec<String>>,
    progress: &'a Progress,
    error: Option<csv::Error>,
}

impl Observer for RequestCsv<'_> {
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
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.report(done, total) && self.error.is_none()
    }
}

/// The table of every request of `cfg`'s run of `trace`, as CSV.
// The web build's export (`download.rs`), and the tests'.
#[cfg_attr(not(any(test, target_arch = "wasm32")), allow(dead_code))]
pub fn requests_csv(cfg: &SimConfig, trace: &TraceData, progress: &Progress) -> Finished<Vec<u8>> {
    let failed = |e: String| JobError::Failed(format!("writing the request table: {e}"));
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(REQUEST_COLUMNS)
        .map_err(|e| failed(e.to_string()))?;
    let mut table = RequestCsv {
        out,
        names: Vec::new(),
        progress,
        error: None,
    };
    let run = warpscope_shell::timed::simulate(cfg, &trace.trace.kernels, &mut table, 0);
    if let Some(e) = table.error {
        return Err(failed(e.to_string()));
    }
    match run {
        Err(SimError::Cancelled) => return Err(JobError::Cancelled),
        r => r.map_err(|e| failed(super::worker::error_chain(&e)))?,
    };
    table.out.into_inner().map_err(|e| failed(e.to_string()))
}
