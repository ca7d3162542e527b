//! `sim` on a reference-stream trace (Dinero IV `din`) without loading it: a reader thread
//! parses chunks of rows while this thread simulates them, so decoding and simulation use
//! two cores and memory is bounded by the distinct lines the trace touches, not by its
//! length. The result is the one `sim::run` gives for the whole trace (the core's
//! `Session` is the same pipeline; `tests/cli.rs` compares the two).

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

/// Progress by the file's bytes read.
struct ByBytes {
    shown: super::output::Progress,
    read: Arc<AtomicU64>,
    of: u64,
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

/// Opens `path` for streaming if its format allows (`None` otherwise: read it whole).
pub fn open(
    path: &std::path::Path,
    opts: trace::ReadOptions,
) -> Result<Option<(ReferenceStream, Arc<AtomicU64>)>> {
    let read = Arc::new(AtomicU64::new(0));
    let counter = read.clone();
    let watch = move |s: trace::source::Stream| -> trace::source::Stream {
        Box::new(Counted {
            inner: s,
            read: counter.clone(),
        })
    };
    let stream = trace::open_reference_stream(path, opts, &super::readahead::wrap, &watch)?;
    Ok(stream.map(|s| (s, read)))
}

/// Simulates an opened reference stream under `cfg` (not the timing model).
pub fn simulate(stream: ReferenceStream, read: Arc<AtomicU64>, cfg: &SimConfig) -> Result<Report> {
    let ReferenceStream {
        header,
        mut reader,
        file_bytes,
        ..
    } = stream;
    let mut session = Session::new(cfg, 0)?;
    session.begin_stream(&header)?;
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
    let mut progress = ByBytes {
        shown: super::output::Progress::bytes(file_bytes),
        read,
        of: file_bytes,
    };
    let mut failed = None;
    for msg in full_rx.iter() {
        match msg {
            Ok(chunk) => {
                if !session.feed(&chunk, &mut progress) {
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
    progress.shown.clear();
    if let Some(e) = failed {
        return Err(e);
    }
    session.end_stream(&mut progress);
    Ok(session.finish(&mut progress))
}
