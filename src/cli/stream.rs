//! `sim` on a trace file without loading it whole: a reader thread decodes while the
//! simulation runs, through the core's `Session` (the pipeline `sim::run` is a loop over, so
//! the result is the whole trace's; `tests/cli/commands.rs` compares). With several SMs simulated,
//! their L1s are split over the cores, one session per part, fed the same pieces (`lanes`),
//! and the parts' reports are merged (`Report::merge`).
//! - A reference stream (Dinero IV `din`) goes over in chunks of rows and nothing of it is
//!   kept: memory is bounded by the distinct lines the trace touches, not by its length.
//! - Our binary format and Accel-Sim traces go over CTA by CTA (`trace::CtaSink`), each CTA
//!   dropped once its warps are done: memory is bounded by the resident CTAs, not by the size
//!   of a kernel (the sessions side by side share one copy of each).
//! - Other formats go over a kernel at a time, each dropped once simulated: memory is
//!   bounded by the largest kernels (the one simulated, one waiting, one being read), not
//!   by the number of launches.
//! - A built-in kernel's generator is a source like a file: its CTAs go over as they are
//!   built.

use super::args::InputArgs;
use anyhow::{bail, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use warpscope::config::SimConfig;
use warpscope::shell::lanes;
use warpscope::sim::{self, NoObserver, Observer, Report, Session};
use warpscope::trace;

/// Progress by the trace files' bytes read, out of their size.
pub struct ByBytes {
    shown: super::output::Progress,
    read: Arc<AtomicU64>,
    of: u64,
}

impl ByBytes {
    /// Progress through the opened trace `path`, whose bytes are counted in `read`.
    pub fn for_trace(
        path: &std::path::Path,
        open: &trace::OpenTrace,
        read: Arc<AtomicU64>,
        as_found: bool,
    ) -> Self {
        let of = open.streamed_reads(as_found) * warpscope::shell::trace_bytes(path);
        ByBytes {
            shown: super::output::Progress::bytes(of),
            read,
            of,
        }
    }
    /// Shows nothing (a generator shows its own progress).
    pub fn silent() -> Self {
        ByBytes {
            shown: super::output::Progress::bytes(0),
            read: Arc::default(),
            of: 0,
        }
    }
    /// Takes the progress line off the terminal.
    pub fn clear(&mut self) {
        self.shown.clear();
    }
}

impl Observer for ByBytes {
    fn wants_requests(&self) -> bool {
        false
    }
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        self.shown.show(self.read.load(Ordering::Relaxed), self.of);
        true
    }
}

/// Opens the trace file `path` and says which format was detected. Returns the opened
/// trace and the counter of its files' bytes read, for progress.
pub fn open(
    path: &std::path::Path,
    opts: trace::ReadOptions,
) -> Result<(trace::OpenTrace, Arc<AtomicU64>)> {
    let read = Arc::new(AtomicU64::new(0));
    let open = trace::open_trace(path, opts, &super::readahead::wrap, &counting(&read))?;
    if open.detected {
        super::options::say_detected(path, open.format, open.compression);
    }
    Ok((open, read))
}

/// A `watch` for the reader that adds the bytes read from each file to `read`.
fn counting(
    read: &Arc<AtomicU64>,
) -> impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static {
    let read = read.clone();
    warpscope::shell::policy::counted(
        move |n| {
            read.fetch_add(n, Ordering::Relaxed);
        },
        || false,
    )
}

/// A streamed run's input: what sends its pieces, the depth of the lanes' queues for them,
/// whether its CTAs can run on several SMs (a reference stream's one thread runs on one),
/// and its progress (the bytes read of a file; a generator shows its own).
pub struct Input {
    pub source: lanes::Source,
    pub depth: usize,
    pub splits: bool,
    pub progress: ByBytes,
}

/// Opens the trace file or the built-in kernel that `a` names, to be streamed; a file whose
/// kernels' instructions are known only at their ends is read once where `as_found`
/// ([`lanes::file_source`]). Progress is by the bytes read of the files: the file's, times
/// the reads a streamed read makes of it ([`trace::OpenTrace::streamed_reads`]); for an
/// Accel-Sim trace those of its `.traceg`, or of every file beside its `kernelslist.g`.
pub fn input(a: &InputArgs, as_found: bool) -> Result<Input> {
    if let Some(path) = &a.source {
        let (src, file) = super::options::read_source(path)?;
        let pairs = warpscope::gen::parse_pairs(&a.params).map_err(anyhow::Error::msg)?;
        // Checked here, so that a mistake is reported before anything starts.
        warpscope::gen::source::check(&src, &file)?;
        return Ok(Input {
            source: Box::new(move |to| {
                Ok(warpscope::gen::source::generate_by_cta(
                    &src, &file, &pairs, None, to,
                )?)
            }),
            depth: 1,
            splits: true,
            progress: ByBytes::silent(),
        });
    }
    match (&a.trace, &a.kernel) {
        (Some(path), None) => {
            if let Some(p) = a.params.first() {
                bail!("key=value parameters only apply to --kernel, found `{p}`");
            }
            let opts = trace::ReadOptions {
                format: a
                    .format
                    .as_deref()
                    .map(super::options::format)
                    .transpose()?,
                allow_truncated: false,
            };
            let (open, read) = open(path, opts)?;
            let progress = ByBytes::for_trace(path, &open, read.clone(), as_found);
            let f = lanes::file_source(open, super::readahead::wrap, counting(&read), as_found);
            Ok(Input {
                source: f.source,
                depth: f.depth,
                splits: f.splits,
                progress,
            })
        }
        (None, Some(kernel)) => {
            let pairs = warpscope::gen::parse_pairs(&a.params).map_err(anyhow::Error::msg)?;
            Ok(Input {
                source: from_generator(kernel.clone(), pairs),
                depth: 1,
                splits: true,
                progress: ByBytes::silent(),
            })
        }
        _ => bail!("give a trace (--trace FILE) or a built-in kernel (--kernel NAME)"),
    }
}

/// The CTAs of built-in kernel `name` with `pairs`, sent as they are generated; its
/// progress is shown on stderr as it goes.
fn from_generator(name: String, pairs: Vec<(String, String)>) -> lanes::Source {
    Box::new(move |to| {
        // Progress by the generator's count of accesses against its projection.
        let mut shown = super::output::Progress::named(0, "simulating");
        let mut control = |g: &warpscope::gen::GenProgress| {
            shown.set_total(g.projected);
            shown.show(g.accesses, g.projected);
            true
        };
        let generated = warpscope::gen::generate_by_cta(&name, &pairs, Some(&mut control), to);
        shown.clear();
        Ok(generated?)
    })
}

/// How a source hands the trace over.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Kernels loaded whole (reuse distances `auto` are exact).
    Whole,
    /// Streamed from a file or a generator (`auto` is sampled: `Session::streamed`).
    Streamed,
    /// A reference stream (what a `din` file sends: one thread's rows, on one SM), streamed;
    /// its exact reuse distances, when asked for, are measured on a thread of their own
    /// (`lanes::run_apart`).
    ReferenceStream,
}

/// Simulates what `source` sends with the SMs of `cfg` split over `jobs` lanes (one when
/// the observer wants every request: they would come from the parts out of order), and
/// combines the parts' reports into the whole run's. `total` accesses, if known, are for
/// progress.
pub fn simulate_parts(
    cfg: &SimConfig,
    jobs: usize,
    total: u64,
    depth: usize,
    observer: &mut dyn Observer,
    source: lanes::Source,
    held: Held,
) -> Result<Report> {
    let new = |sms: &[u32]| -> Result<Session> {
        let s = Session::for_sms(cfg, sms, total)?;
        Ok(match held {
            Held::Whole => s,
            Held::Streamed | Held::ReferenceStream => s.streamed(),
        })
    };
    if held == Held::ReferenceStream {
        let session = new(&sim::selected_sms(cfg))?;
        let session = lanes::run_apart(session, depth, observer, source)?;
        return Ok(session.finish(observer));
    }
    let parts = if observer.wants_requests() {
        1
    } else {
        lanes::cores(jobs)
    };
    let sessions = sim::partition_sms(cfg, parts)
        .iter()
        .map(|sms| new(sms))
        .collect::<Result<Vec<_>>>()?;
    let lanes = sessions.len();
    let sessions = lanes::run(sessions, lanes, depth, observer, source)?;
    let reports = sessions
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            if i == 0 {
                s.finish(observer)
            } else {
                s.finish(&mut NoObserver)
            }
        })
        .collect();
    Report::merge(reports).map_err(anyhow::Error::msg)
}
