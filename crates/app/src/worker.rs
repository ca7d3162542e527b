//! What the app's background jobs do ([`super::job::Job`] runs them): load a trace, generate
//! one, simulate a pane's configuration, analyze the trace's communication. Each takes the
//! job's [`Progress`], reports through it and stops when it is cancelled: a load fails its
//! next read, a simulation stops at its next progress call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{self, Observer, RequestEvent};
use warpscope_core::trace::{self, Trace};
use warpscope_shell::policy;

use super::data::{Points, SimData, TraceData};
use super::job::{Finished, JobError, Progress};
use super::streamed;
pub use super::streamed::{simulate as simulate_streamed, simulate_window};

/// A trace read or generated, or a generator stopped because its trace would not fit.
pub enum Loaded {
    Trace(Arc<TraceData>),
    /// A generator stopped early because its trace would hold about `projected` accesses,
    /// more than the job's limit.
    TooLarge {
        projected: u64,
    },
    /// A file that failed to load (`error`) but holds complete kernels before the error, which
    /// the app offers to keep (as the CLI's `--allow-truncated`).
    Truncated {
        error: String,
    },
}

/// What loads a trace: a file, or a built-in generator. It crosses to a page's worker as
/// JSON (`remote/wire.rs`), a file's bytes beside it rather than in it; a file named by its
/// path never does (a page has none).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Source {
    /// Read a trace file (format detected unless given); with `allow_truncated`, keep the
    /// complete kernels before an error (the CLI's `--allow-truncated`).
    #[serde(skip)]
    File {
        path: PathBuf,
        format: Option<trace::Format>,
        allow_truncated: bool,
        /// The largest file read whole, in bytes on disk ([`WHOLE_UP_TO`] unless a test or
        /// `--stream` says otherwise); a larger one is read by each simulation as it runs.
        whole_up_to: u64,
    },
    /// A file's bytes handed over whole (the web build's file picker, or a file dropped on
    /// the page); `name` gives its extension and names it in errors.
    Bytes {
        name: String,
        #[serde(skip)]
        bytes: Arc<[u8]>,
    },
    /// Run a built-in generator; stop (with [`Loaded::TooLarge`]) as soon as the trace is
    /// projected to hold more accesses than `max_accesses`.
    Generator {
        kernel: String,
        params: Vec<(String, String)>,
        max_accesses: Option<u64>,
    },
    /// Run a kernel-language program (`file` names it in errors and labels), stopping with
    /// an error if it is projected past `max_accesses`.
    Program {
        text: String,
        file: String,
        params: Vec<(String, String)>,
        max_accesses: Option<u64>,
    },
}

/// Loads the trace `source` names.
pub fn load_source(source: Source, progress: &Arc<Progress>) -> Finished<Loaded> {
    match source {
        Source::File {
            path,
            format,
            allow_truncated,
            whole_up_to,
        } => {
            let views = policy::Purpose::Views { whole_up_to };
            if policy::reading(&path, format, views) == policy::Reading::Streamed
                && !allow_truncated
            {
                return streamed::open(&path, format, warpscope_shell::trace_bytes(&path));
            }
            load(&path, format, allow_truncated, progress)
        }
        Source::Bytes { name, bytes } => load_bytes(name, bytes, progress),
        Source::Generator {
            kernel,
            params,
            max_accesses,
        } => {
            let t = match generate(&kernel, &params, max_accesses, progress)? {
                Ok(t) => t,
                Err(projected) => return Ok(Loaded::TooLarge { projected }),
            };
            let mut label = kernel.clone();
            for (k, v) in &params {
                label.push_str(&format!(" {k}={v}"));
            }
            Ok(Loaded::Trace(Arc::new(TraceData::new(
                t, label, None, None,
            ))))
        }
        Source::Program {
            text,
            file,
            params,
            max_accesses,
        } => {
            let t = program(&text, &file, &params, max_accesses, progress)?;
            let mut label = file;
            for (k, v) in &params {
                label.push_str(&format!(" {k}={v}"));
            }
            Ok(Loaded::Trace(Arc::new(TraceData::new(
                t, label, None, None,
            ))))
        }
    }
}

/// Runs a kernel-language program as the generators run: progress, cancel, and an error
/// instead of a trace projected past `max_accesses` (the CLI streams such a program).
pub fn program(
    text: &str,
    file: &str,
    params: &[(String, String)],
    max_accesses: Option<u64>,
    progress: &Progress,
) -> Finished<Trace> {
    let mut limit = Limit::new(progress, max_accesses);
    let mut control = |g: &warpscope_core::gen::GenProgress| limit.go_on(g);
    match warpscope_core::gen::source::generate(text, file, params, Some(&mut control)) {
        Ok(t) => Ok(t),
        Err(warpscope_core::gen::GenError::Stopped { projected, .. }) => match limit.too_large {
            Some(_) => Err(JobError::Failed(format!(
                "{file}: about {projected} accesses would not fit in memory: make it smaller, or run it with `warpscope sim --source`"
            ))),
            None => Err(JobError::Cancelled),
        },
        Err(e) => Err(JobError::Failed(e.to_string())),
    }
}

/// The communication analysis of `trace`, a piece per call ([`crate::sliced::Slices::job`]:
/// in pieces of a few milliseconds where [`crate::sliced::PIECES`], else whole launches).
pub fn communicate(
    trace: Arc<TraceData>,
) -> impl FnMut(&Progress) -> Option<Finished<super::data::CommData>> + Send + 'static {
    use warpscope_core::comm::{Analyzing, CommError, PIECE_ROWS};
    let rows = if crate::sliced::PIECES {
        PIECE_ROWS
    } else {
        usize::MAX
    };
    let mut analyzing = Analyzing::new(rows);
    move |progress| {
        let mut relay = |done: u64, total: u64| progress.report(done, total);
        match analyzing.step(&trace.trace, &mut relay) {
            Ok(None) => None,
            Ok(Some(r)) => Some(Ok(super::data::CommData {
                launch_pairs: r.launch_pairs(),
                report: Arc::new(r),
            })),
            Err(CommError::Cancelled) => Some(Err(JobError::Cancelled)),
            Err(e) => Some(Err(JobError::Failed(format!(
                "Communication analysis: {e}"
            )))),
        }
    }
}

/// The largest trace file the app reads whole (the shells' one policy: a larger one is read
/// by each simulation as it runs, and the views draw what that run gathered, `data::Gather`).
pub const WHOLE_UP_TO: u64 = policy::VIEWS_WHOLE_UP_TO;

fn load(
    path: &Path,
    format: Option<trace::Format>,
    allow_truncated: bool,
    progress: &Arc<Progress>,
) -> Finished<Loaded> {
    let size = if path.is_dir() {
        0
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    };
    progress.set_total(size);
    let watch = watching(progress);
    // Read keeping the complete kernels before an error either way, to know whether there are
    // any: they are offered only where there are (not for an empty file, or random bytes).
    let opts = trace::ReadOptions {
        format,
        allow_truncated: true,
    };
    match trace::load_watched(path, opts, &|s| s, &watch) {
        Ok(loaded) if !allow_truncated && loaded.truncated.is_some() => {
            let error = loaded.truncated.map(|e| e.to_string()).unwrap_or_default();
            match loaded.trace.kernels.is_empty() {
                true => Err(JobError::Failed(error)),
                false => Ok(Loaded::Truncated { error }),
            }
        }
        Ok(loaded) if loaded.trace.kernels.is_empty() => Err(JobError::Failed(format!(
            "no complete kernel before the error: {}",
            loaded
                .truncated
                .map(|e| e.to_string())
                .unwrap_or_else(|| "the file holds no kernel".into())
        ))),
        Ok(loaded) => {
            let mut label = super::file_name(path);
            if loaded.truncated.is_some() {
                label.push_str(" (complete kernels only)");
            }
            let mut t = TraceData::new(
                loaded.trace,
                label,
                Some(path.to_path_buf()),
                Some(loaded.format),
            );
            t.truncated = loaded.truncated.map(|e| e.to_string());
            Ok(Loaded::Trace(Arc::new(t)))
        }
        Err(_) if progress.cancelled() => Err(JobError::Cancelled),
        Err(e) => Err(JobError::Failed(e.to_string())),
    }
}

/// Reads a file's bytes whole. A file with an error is refused whole: the picker's bytes are
/// not kept to offer its complete kernels.
fn load_bytes(name: String, bytes: Arc<[u8]>, progress: &Arc<Progress>) -> Finished<Loaded> {
    progress.set_total(bytes.len() as u64);
    let opts = trace::ReadOptions {
        format: None,
        allow_truncated: false,
    };
    match trace::load_bytes(&name, bytes, opts, &watching(progress)) {
        Ok(loaded) => Ok(Loaded::Trace(Arc::new(TraceData::new(
            loaded.trace,
            name,
            None,
            Some(loaded.format),
        )))),
        Err(_) if progress.cancelled() => Err(JobError::Cancelled),
        Err(e) => Err(JobError::Failed(e.to_string())),
    }
}

/// Collects the requests of a run for the views, and relays progress and cancellation (a
/// run on a worker here; a run in slices, `sliced.rs`, a slice at a time).
pub(crate) struct Collect<'a> {
    pub points: &'a mut Points,
    pub progress: &'a Progress,
}

impl Observer for Collect<'_> {
    fn on_request(&mut self, e: &RequestEvent) {
        self.points.push(e);
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.report(done, total)
    }
}

/// Relays a run's progress to its job, and stops the run when the job is cancelled.
pub struct Relay<'a>(pub &'a Progress);

impl Observer for Relay<'_> {
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.0.report(done, total)
    }
}

/// Simulates `trace` under `config` for one pane, collecting its requests for the views.
pub fn simulate(
    config: SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
) -> Finished<Arc<SimData>> {
    if trace.streamed.is_some() {
        return streamed::simulate(config, trace, progress, None);
    }
    progress.set_total(trace.trace.total_accesses() as u64);
    let mut points = Points::default();
    let mut collect = Collect {
        points: &mut points,
        progress,
    };
    match warpscope_shell::timed::simulate(&config, &trace.trace.kernels, &mut collect, 0) {
        Ok(report) => Ok(Arc::new(SimData::new(config, report, points, trace))),
        Err(sim::SimError::Cancelled) => Err(JobError::Cancelled),
        Err(e) => Err(JobError::Failed(error_chain(&e))),
    }
}

/// A `watch` for a reader: counts the bytes read into `progress`, and fails the next read
/// once it is cancelled.
pub(super) fn watching(
    progress: &Arc<Progress>,
) -> impl Fn(trace::source::Stream) -> trace::source::Stream + Send + Sync + 'static {
    let (counts, asks) = (progress.clone(), progress.clone());
    policy::counted(move |n| counts.add(n), move || asks.cancelled())
}

/// An error and its sources on one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The trace data of a loaded trace shared with jobs (a convenience for callers that hold a
/// bare [`Trace`]).
#[cfg(test)]
pub fn shared(trace: Trace, label: &str) -> Arc<TraceData> {
    Arc::new(TraceData::new(trace, label.to_string(), None, None))
}

/// Runs a generator with the job's progress: cancelled when asked, stopped with the
/// projected size once it passes `max_accesses`.
fn generate(
    kernel: &str,
    params: &[(String, String)],
    max_accesses: Option<u64>,
    progress: &Progress,
) -> Finished<Result<Trace, u64>> {
    let mut limit = Limit::new(progress, max_accesses);
    let mut control = |g: &warpscope_core::gen::GenProgress| limit.go_on(g);
    match warpscope_core::gen::generate_with(kernel, params, Some(&mut control)) {
        Ok(t) => Ok(Ok(t)),
        Err(warpscope_core::gen::GenError::Stopped { .. }) => match limit.too_large {
            Some(projected) => Ok(Err(projected)),
            None => Err(JobError::Cancelled),
        },
        Err(e) => Err(JobError::Failed(format!("kernel {kernel}: {e}"))),
    }
}

/// A generator's control in a job: reports progress, and stops once the trace is projected
/// past `max` accesses (remembering it) or the job is cancelled.
struct Limit<'a> {
    progress: &'a Progress,
    max: Option<u64>,
    /// The projection that stopped it, if that is why it stopped.
    too_large: Option<u64>,
}

impl<'a> Limit<'a> {
    fn new(progress: &'a Progress, max: Option<u64>) -> Self {
        Limit {
            progress,
            max,
            too_large: None,
        }
    }
    fn go_on(&mut self, g: &warpscope_core::gen::GenProgress) -> bool {
        let go_on = self.progress.report(g.ctas_done, g.ctas);
        if self.max.is_some_and(|m| g.projected > m) {
            self.too_large = Some(g.projected);
            return false;
        }
        go_on
    }
}
