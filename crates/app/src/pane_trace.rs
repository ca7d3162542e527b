//! Different kernels side by side: a pane may show a trace of its own (naive next to tiled
//! matmul) instead of the trace every other pane shares. Loading and generating work as
//! for the shared trace (on the worker, cancellable, asking before a trace that will not fit
//! in memory); the pane then simulates its own trace with its own configuration.
//!
//! Panes with different traces do not link their hovers, zoom or instruction filter: an
//! access of one kernel means nothing in another.

use std::path::PathBuf;
use std::sync::Arc;

use super::data::TraceData;
use super::job::JobError;
use super::remote;
use super::worker::{Loaded, Source};
use super::{Status, WarpscopeApp, DEBOUNCE};

/// Identifies a trace for linking panes: panes showing the same trace share it.
pub fn trace_id(t: &Arc<TraceData>) -> usize {
    Arc::as_ptr(t) as usize
}

impl WarpscopeApp {
    /// The trace pane `i` shows: its own, else the shared one.
    pub(crate) fn pane_trace(&self, i: usize) -> Option<Arc<TraceData>> {
        let p = self.panes.get(i)?;
        p.own_trace.clone().or_else(|| self.trace.clone())
    }

    /// True when some pane shows a trace of its own.
    pub(crate) fn traces_differ(&self) -> bool {
        self.panes.iter().any(|p| p.own_trace.is_some())
    }

    /// Generates a built-in kernel's trace for pane `pane` only; like
    /// [`WarpscopeApp::generate`], one that would not fit in memory stops and asks first.
    pub(crate) fn generate_in_pane(&mut self, pane: usize, kernel: String, params: String) {
        let limit = self.max_generated_accesses;
        self.generate_in_pane_limited(pane, kernel, params, limit);
    }

    pub(super) fn generate_in_pane_limited(
        &mut self,
        pane: usize,
        kernel: String,
        params: String,
        max_accesses: Option<u64>,
    ) {
        let Some(pairs) = self.generator_pairs(&kernel, &params) else {
            return;
        };
        let label = format!("Generating {kernel} {params} for pane {}", pane + 1);
        self.too_large = None;
        let source = Source::Generator {
            kernel: kernel.clone(),
            params: pairs,
            max_accesses,
        };
        if self.start_pane_job(pane, label, source) {
            self.panes[pane].trace_job = Some((kernel, params));
        }
    }

    /// Loads a trace file for pane `pane` only.
    pub(crate) fn open_in_pane(&mut self, pane: usize, path: PathBuf) {
        let label = format!("Loading {} for pane {}", path.display(), pane + 1);
        let source = Source::File {
            whole_up_to: self.whole_up_to,
            path: path.clone(),
            format: None,
            allow_truncated: false,
        };
        if self.start_pane_job(pane, label, source) {
            self.remember(&path);
            self.panes[pane].trace_job = None;
        }
    }

    pub(super) fn start_pane_job(&mut self, pane: usize, label: String, source: Source) -> bool {
        let Some(p) = self.panes.get_mut(pane) else {
            return false;
        };
        self.status = Status::Info(label.clone());
        // Replaces (and so cancels) the pane's load that was running.
        p.trace_load = Some(remote::load_job(label, &self.wake, source));
        true
    }

    /// Pane `pane` goes back to the shared trace.
    pub(crate) fn share_trace(&mut self, pane: usize, now: f64) {
        let Some(p) = self.panes.get_mut(pane) else {
            return;
        };
        p.trace_load = None;
        if p.own_trace.take().is_some() {
            // An instruction filter names an instruction of the trace it was chosen in.
            self.only = None;
            p.result = None;
            p.stale = false;
            p.dirty_since = Some(now - DEBOUNCE);
        }
    }

    /// Handles the end of pane `i`'s own load or generation.
    pub(super) fn pane_trace_finished(&mut self, i: usize, r: Result<Loaded, JobError>, now: f64) {
        let p = &mut self.panes[i];
        let job = p.trace_job.take();
        match r {
            Ok(Loaded::Trace(t)) => {
                self.status = Status::Info(format!("Pane {}: {}: {}", i + 1, t.label, t.summary()));
                p.own_trace = Some(t);
                self.only = None;
                // The run of the trace it showed before is of no use now.
                p.sim = None;
                p.result = None;
                p.stale = false;
                p.error = None;
                p.dirty_since = Some(now - DEBOUNCE);
            }
            Err(JobError::Failed(e)) | Ok(Loaded::Truncated { error: e }) => {
                self.status = Status::Error(format!("pane {}: {e}", i + 1))
            }
            Err(JobError::Cancelled) => {
                self.status = Status::Info(format!("Cancelled: pane {}'s trace stays", i + 1))
            }
            Ok(Loaded::TooLarge { projected }) => {
                if let Some((kernel, params)) = job {
                    self.ask_too_large(kernel, params, projected, Some(i));
                }
            }
        }
    }
}
