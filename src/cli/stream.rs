//! `sim` on a trace file without loading it whole: a reader thread decodes while this thread
//! simulates, so the two use two cores, through the core's `Session` (the pipeline
//! `sim::run` is a loop over, so the result is the whole trace's; `tests/cli.rs` compares).
//! - A reference stream (Dinero IV `din`) goes over in chunks of rows and nothing of it is
//!   kept: memory is bounded by the distinct lines the trace touches, not by its length.
//! - Our binary format and Accel-Sim traces go over CTA by CTA (`trace::CtaSink`), each CTA
//!   dropped once its warps are done: memory is bounded by the resident CTAs, not by the size
//!   of a kernel.
//! - Other formats go over a kernel at a time, each dropped once simulated: memory is
//!   bounded by the largest kernels (the one simulated, one waiting, one being read), not
//!   by the number of launches.

use anyhow::{Context, Result};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel};
use std::sync::Arc;
use warpscope::config::SimConfig;
use warpscope::sim::{Observer, Report, Session, SimError};
use warpscope::trace::{self, Columns, ReferenceStream};

/// Rows per chunk: about 1.5 MB of columns, small enough to stay in the caches' reach and
/// large enough that handing a chunk over costs nothing measurable.
const CHUNK_ROWS: usize = 1 << 16;
/// Chunks parsed ahead of the simulation.
const AHEAD: usize = 4;

/// Counts the bytes read from the file (compressed or not), for progress.
struct Counted {
    inner: trace::source::Stream,
    read: Arc<AtomicU64>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

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
    ) -> Self {
        let of = total_bytes(path, open);
        ByBytes {
            shown: super::output::Progress::bytes(of),
            read,
            of,
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
    move |s| {
        Box::new(Counted {
            inner: s,
            read: read.clone(),
        })
    }
}

/// The bytes progress is measured against: the file's, or for an Accel-Sim trace twice
/// (each kernel file is scanned, then read: `trace::accelsim`) those of its `.traceg`, or of
/// every file beside its `kernelslist.g`.
fn total_bytes(path: &std::path::Path, open: &trace::OpenTrace) -> u64 {
    if open.format != trace::Format::AccelSim {
        return open.file_bytes;
    }
    let listed = path.is_dir()
        || path
            .file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.starts_with("kernelslist"));
    if !listed {
        return 2 * open.file_bytes;
    }
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(std::path::Path::new("."))
    };
    let files: u64 = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(open.file_bytes);
    2 * files
}

/// Simulates the opened trace under `cfg` (not the timing model) as it is read, telling
/// `observer` everything (the files' bytes read are counted in `read`).
pub fn simulate(
    open: trace::OpenTrace,
    read: &Arc<AtomicU64>,
    cfg: &SimConfig,
    observer: &mut dyn Observer,
) -> Result<Report> {
    match open.into_reference_stream() {
        Ok(stream) => simulate_references(stream, cfg, observer),
        Err(open) => simulate_kernels(*open, read, cfg, observer),
    }
}

/// What the reader hands the simulating thread: whole kernels where the format has them so,
/// else a kernel's header, its CTAs and its end.
enum Piece {
    Kernel(trace::Kernel),
    Begin(trace::Kernel),
    Cta(u32, Columns),
    End,
}

/// Hands what is read over to the simulating thread; CTA buffers come back to be reused.
struct ToSimulation {
    to: std::sync::mpsc::SyncSender<Piece>,
    spare: std::sync::mpsc::Receiver<Columns>,
}

impl ToSimulation {
    fn send(&self, p: Piece) -> Result<(), trace::TraceError> {
        // The simulation stopped (it failed): stop reading.
        self.to
            .send(p)
            .map_err(|_| trace::TraceError::Stopped("the simulation stopped".into()))
    }
}

impl trace::KernelSink for ToSimulation {
    fn kernel(&mut self, k: trace::Kernel) -> Result<(), trace::TraceError> {
        self.send(Piece::Kernel(k))
    }
}

impl trace::CtaSink for ToSimulation {
    fn begin_kernel(&mut self, header: &trace::Kernel) -> Result<(), trace::TraceError> {
        self.send(Piece::Begin(header.header()))
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), trace::TraceError> {
        let mut copy = self.spare.try_recv().unwrap_or_default();
        copy.clear();
        copy.extend_from(rows, 0..rows.len());
        self.send(Piece::Cta(cta, copy))
    }
    fn end_kernel(&mut self) -> Result<(), trace::TraceError> {
        self.send(Piece::End)
    }
}

/// Simulates a trace read on another thread: kernels whole, or CTA by CTA where the file
/// has them so (our binary format, Accel-Sim), so that memory holds the resident CTAs.
fn simulate_kernels(
    open: trace::OpenTrace,
    read: &Arc<AtomicU64>,
    cfg: &SimConfig,
    progress: &mut dyn Observer,
) -> Result<Report> {
    let mut session = Session::new(cfg, 0)?;
    // One piece waits while one is simulated and the next is read.
    let (tx, rx) = sync_channel::<Piece>(1);
    let (spare_tx, spare_rx) = channel::<Columns>();
    let watch = counting(read);
    let reader = std::thread::Builder::new()
        .name("read".into())
        .spawn(move || {
            let mut to = ToSimulation {
                to: tx,
                spare: spare_rx,
            };
            open.stream(&super::readahead::wrap, &watch, &mut to)
        })
        .context("starting the reader thread")?;
    let mut failed: Option<anyhow::Error> = None;
    for piece in rx.iter() {
        let done = match piece {
            Piece::Kernel(k) => session.kernel(&k, progress),
            Piece::Begin(header) => session.begin_kernel(&header, progress),
            Piece::Cta(cta, rows) => {
                let r = session.cta(cta, &rows, progress);
                // The reader may have finished already.
                let _ = spare_tx.send(rows);
                r
            }
            Piece::End => session.end_kernel(progress),
        };
        if let Err(e) = done {
            failed = Some(e.into());
            break;
        }
    }
    drop(rx);
    let read_result = reader.join();
    if let Some(e) = failed {
        return Err(e);
    }
    match read_result {
        Ok(Ok(())) => Ok(session.finish(progress)),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => anyhow::bail!("the reader thread failed"),
    }
}

/// Simulates a reference stream read in chunks.
fn simulate_references(
    stream: ReferenceStream,
    cfg: &SimConfig,
    progress: &mut dyn Observer,
) -> Result<Report> {
    let ReferenceStream {
        header, mut reader, ..
    } = stream;
    let mut session = Session::new(cfg, 0)?;
    session.begin_stream(&header, progress)?;
    let (full_tx, full_rx) = sync_channel::<Result<Columns, trace::TraceError>>(AHEAD);
    let (empty_tx, empty_rx) = channel::<Columns>();
    let parser = std::thread::Builder::new()
        .name("parse".into())
        .spawn(move || loop {
            let mut chunk = empty_rx.try_recv().unwrap_or_default();
            match reader.next_chunk(&mut chunk, CHUNK_ROWS) {
                Ok(true) => {
                    if full_tx.send(Ok(chunk)).is_err() {
                        return;
                    }
                }
                Ok(false) => return,
                Err(e) => {
                    let _ = full_tx.send(Err(e));
                    return;
                }
            }
        })
        .context("starting the parser thread")?;
    let mut failed = None;
    for msg in full_rx.iter() {
        match msg {
            Ok(chunk) => {
                if !session.feed(&chunk, progress) {
                    failed = Some(anyhow::Error::from(SimError::Cancelled));
                    break;
                }
                // The parser reuses the buffer; it may have finished already.
                let _ = empty_tx.send(chunk);
            }
            Err(e) => {
                failed = Some(e.into());
                break;
            }
        }
    }
    drop(full_rx);
    let _ = parser.join();
    if let Some(e) = failed {
        return Err(e);
    }
    session.end_stream(progress);
    Ok(session.finish(progress))
}
