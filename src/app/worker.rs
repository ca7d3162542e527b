//! Background jobs: loading a trace, generating one, simulating a pane's configuration,
//! analyzing the trace's communication.
//!
//! Each job runs on its own thread, so the UI never waits. A job reports progress through
//! shared counters (read by the UI each frame) and its result through a channel. Cancelling
//! sets a flag that the job checks: a load fails its next read, a simulation stops at its next
//! progress call. The UI keeps the ticket of the newest job per purpose and ignores results of
//! any other ticket, so the last request wins even if an older job finishes later.

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use crate::config::SimConfig;
use crate::sim::{self, Observer, RequestEvent};
use crate::trace::{self, Trace};

use super::data::{Points, SimData, TraceData};

/// What a job does.
pub enum Job {
    /// Read a trace file (format detected unless given).
    Load {
        path: PathBuf,
        format: Option<trace::Format>,
        /// Keep the complete kernels before an error (the CLI's `--allow-truncated`).
        allow_truncated: bool,
    },
    /// Run a built-in generator.
    Generate {
        kernel: String,
        params: Vec<(String, String)>,
        /// Stop (with [`Outcome::TooLarge`]) as soon as the trace is projected to hold more
        /// accesses than this.
        max_accesses: Option<u64>,
    },
    /// Simulate `trace` under `config` for one pane.
    Simulate {
        pane: usize,
        config: SimConfig,
        trace: Arc<TraceData>,
    },
    /// Analyze the inter-CTA communication of `trace` (the Communication view).
    Communicate { trace: Arc<TraceData> },
    /// Prepare the Communication view's density map of one selection of `report`.
    Density {
        report: Arc<crate::comm::CommReport>,
        launches: Option<(u32, u32)>,
        counts: bool,
    },
    /// Any other slow work (exports): runs `work` off the UI thread and reports its message.
    Task { label: String, work: Task },
}

/// Slow work other than loading and simulating: gets the job's progress, returns a message.
pub type Task = Box<dyn FnOnce(&Progress) -> Result<String, String> + Send>;

/// Identifies one submitted job.
pub type Ticket = u64;

/// Progress and cancellation shared between a job and the UI.
#[derive(Default)]
pub struct Progress {
    pub done: AtomicU64,
    pub total: AtomicU64,
    pub cancel: AtomicBool,
}

impl Progress {
    /// Fraction done, if the total is known.
    pub fn fraction(&self) -> Option<f32> {
        let total = self.total.load(Ordering::Relaxed);
        (total > 0)
            .then(|| (self.done.load(Ordering::Relaxed) as f64 / total as f64).min(1.0) as f32)
    }
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// A finished job.
pub enum Outcome {
    Loaded(Arc<TraceData>),
    Simulated {
        pane: usize,
        data: Arc<SimData>,
    },
    Communicated(Arc<crate::comm::CommReport>),
    Density(Box<super::comm_view::DensityData>),
    Done(String),
    Failed(String),
    Cancelled,
    /// A generator stopped early because its trace would hold about `projected` accesses,
    /// more than the job's limit.
    TooLarge {
        projected: u64,
    },
}

/// Starts jobs on threads and collects their outcomes.
pub struct Worker {
    tx: Sender<(Ticket, Outcome)>,
    rx: Receiver<(Ticket, Outcome)>,
    next: Ticket,
    running: Vec<(Ticket, String, Arc<Progress>)>,
    wake: Arc<dyn Fn() + Send + Sync>,
}

impl Worker {
    /// `wake` is called from the job's thread when it finishes (the app asks for a repaint).
    pub fn new(wake: Arc<dyn Fn() + Send + Sync>) -> Self {
        let (tx, rx) = channel();
        Worker {
            tx,
            rx,
            next: 1,
            running: Vec::new(),
            wake,
        }
    }

    /// Starts `job`; `label` is what the status bar shows while it runs.
    pub fn submit(&mut self, label: impl Into<String>, job: Job) -> Ticket {
        let ticket = self.next;
        self.next += 1;
        let progress = Arc::new(Progress::default());
        self.running.push((ticket, label.into(), progress.clone()));
        let tx = self.tx.clone();
        let wake = self.wake.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("warpscope-job-{ticket}"))
            .spawn(move || {
                let outcome = run_job(job, &progress);
                // The receiver is gone only when the app is closing.
                let _ = tx.send((ticket, outcome));
                wake();
            });
        if let Err(e) = spawned {
            let _ = self.tx.send((
                ticket,
                Outcome::Failed(format!("could not start a worker thread: {e}")),
            ));
        }
        ticket
    }

    /// Asks a job to stop; its outcome will be [`Outcome::Cancelled`] (or its result, if it
    /// finished first).
    pub fn cancel(&self, ticket: Ticket) {
        if let Some((_, _, p)) = self.running.iter().find(|(t, _, _)| *t == ticket) {
            p.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Finished jobs since the last call.
    pub fn poll(&mut self) -> Vec<(Ticket, Outcome)> {
        let done: Vec<(Ticket, Outcome)> = self.rx.try_iter().collect();
        self.running
            .retain(|(t, _, _)| !done.iter().any(|(d, _)| d == t));
        done
    }

    /// Jobs still running: ticket, label, progress.
    pub fn running(&self) -> &[(Ticket, String, Arc<Progress>)] {
        &self.running
    }

    pub fn progress(&self, ticket: Ticket) -> Option<&Arc<Progress>> {
        self.running
            .iter()
            .find(|(t, _, _)| *t == ticket)
            .map(|(_, _, p)| p)
    }

    /// Waits (up to `timeout`) for the next outcome; for tests and the screenshot mode.
    pub fn wait(&mut self, timeout: std::time::Duration) -> Option<(Ticket, Outcome)> {
        let got = self.rx.recv_timeout(timeout).ok()?;
        self.running.retain(|(t, _, _)| *t != got.0);
        Some(got)
    }
}

fn run_job(job: Job, progress: &Arc<Progress>) -> Outcome {
    match job {
        Job::Load {
            path,
            format,
            allow_truncated,
        } => load(&path, format, allow_truncated, progress),
        Job::Generate {
            kernel,
            params,
            max_accesses,
        } => match generate(&kernel, &params, max_accesses, progress) {
            Err(o) => o,
            Ok(t) => {
                let mut label = kernel.clone();
                for (k, v) in &params {
                    label.push_str(&format!(" {k}={v}"));
                }
                Outcome::Loaded(Arc::new(TraceData::new(t, label, None, None)))
            }
        },
        Job::Simulate {
            pane,
            config,
            trace,
        } => simulate(pane, config, &trace, progress),
        Job::Communicate { trace } => {
            let mut relay = |done: u64, total: u64| {
                progress.done.store(done, Ordering::Relaxed);
                progress.total.store(total, Ordering::Relaxed);
                !progress.cancelled()
            };
            match crate::comm::analyze(&trace.trace, &mut relay) {
                Ok(r) => Outcome::Communicated(Arc::new(r)),
                Err(crate::comm::CommError::Cancelled) => Outcome::Cancelled,
                Err(e) => Outcome::Failed(format!("Communication analysis: {e}")),
            }
        }
        Job::Density {
            report,
            launches,
            counts,
        } => Outcome::Density(Box::new(super::comm_view::density(
            &report, launches, counts,
        ))),
        Job::Task { label, work } => match work(progress) {
            Ok(msg) => Outcome::Done(msg),
            Err(_) if progress.cancelled() => Outcome::Cancelled,
            Err(e) => Outcome::Failed(format!("{label}: {e}")),
        },
    }
}

/// Counts the bytes read from the file and fails the next read once cancelled.
struct Watched {
    inner: trace::source::Stream,
    progress: Arc<Progress>,
}

impl Read for Watched {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.progress.cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = self.inner.read(buf)?;
        self.progress.done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn load(
    path: &std::path::Path,
    format: Option<trace::Format>,
    allow_truncated: bool,
    progress: &Arc<Progress>,
) -> Outcome {
    let size = if path.is_dir() {
        0
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    };
    progress.total.store(size, Ordering::Relaxed);
    let p = progress.clone();
    let watch = move |s: trace::source::Stream| -> trace::source::Stream {
        Box::new(Watched {
            inner: s,
            progress: p.clone(),
        })
    };
    let opts = trace::ReadOptions {
        format,
        allow_truncated,
    };
    match trace::load_watched(path, opts, &|s| s, &watch) {
        Ok(loaded) if loaded.trace.kernels.is_empty() => Outcome::Failed(format!(
            "no complete kernel before the error: {}",
            loaded
                .truncated
                .map(|e| e.to_string())
                .unwrap_or_else(|| "the file holds no kernel".into())
        )),
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
            Outcome::Loaded(Arc::new(t))
        }
        Err(_) if progress.cancelled() => Outcome::Cancelled,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Collects the requests of a run for the views, and relays progress and cancellation.
struct Collect<'a> {
    points: Points,
    progress: &'a Progress,
}

impl Observer for Collect<'_> {
    fn on_request(&mut self, e: &RequestEvent) {
        self.points.push(e);
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.done.store(done, Ordering::Relaxed);
        self.progress.total.store(total, Ordering::Relaxed);
        !self.progress.cancelled()
    }
}

fn simulate(pane: usize, config: SimConfig, trace: &TraceData, progress: &Progress) -> Outcome {
    progress
        .total
        .store(trace.trace.total_accesses() as u64, Ordering::Relaxed);
    let mut collect = Collect {
        points: Points::default(),
        progress,
    };
    match sim::run(&config, &trace.trace, &mut collect) {
        Ok(report) => Outcome::Simulated {
            pane,
            data: Arc::new(SimData::new(config, report, collect.points, trace)),
        },
        Err(sim::SimError::Cancelled) => Outcome::Cancelled,
        Err(e) => Outcome::Failed(error_chain(&e)),
    }
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
pub fn shared(trace: Trace, label: &str) -> Arc<TraceData> {
    Arc::new(TraceData::new(trace, label.to_string(), None, None))
}

/// Runs a generator with the job's progress: cancelled when asked, stopped with
/// [`Outcome::TooLarge`] once its projected size passes `max_accesses`.
fn generate(
    kernel: &str,
    params: &[(String, String)],
    max_accesses: Option<u64>,
    progress: &Progress,
) -> Result<crate::trace::Trace, Outcome> {
    let mut too_large = None;
    let mut control = |g: &crate::gen::GenProgress| {
        progress.done.store(g.ctas_done, Ordering::Relaxed);
        progress.total.store(g.ctas, Ordering::Relaxed);
        if max_accesses.is_some_and(|m| g.projected > m) {
            too_large = Some(g.projected);
            return false;
        }
        !progress.cancelled()
    };
    match crate::gen::generate_with(kernel, params, Some(&mut control)) {
        Ok(t) => Ok(t),
        Err(crate::gen::GenError::Stopped { .. }) => Err(match too_large {
            Some(projected) => Outcome::TooLarge { projected },
            None => Outcome::Cancelled,
        }),
        Err(e) => Err(Outcome::Failed(format!("kernel {kernel}: {e}"))),
    }
}
