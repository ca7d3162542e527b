//! Sessions side by side on several cores, fed by one source: a thread decodes (a trace
//! file, a built-in kernel's generator) and hands every piece to each lane; a lane is a
//! thread that gives the piece to its sessions in turn. `sim` runs one session per part of
//! the simulated SMs (`sim::partition_sms`, merged by `Report::merge`), `sweep` one per
//! configuration. The trace is decoded once whatever the number of sessions, and memory
//! holds the pieces in flight (shared, not copied) and each session's resident CTAs.
//!
//! The core stays free of threads: it gives the pieces ([`Session`]'s kernel, CTA and chunk
//! calls); this module runs them in parallel.

use crate::sim::{NoObserver, Observer, Session, SimError};
use crate::trace::{self, din, Columns, CtaSink, Kernel, KernelSink, TraceError};
use anyhow::{Context, Result};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;

/// What sends the pieces, on a thread of its own.
pub type Source = Box<dyn FnOnce(&mut Fanout) -> Result<()> + Send>;

/// What a source hands the sessions.
pub enum Piece {
    /// A whole kernel.
    Kernel(Kernel),
    /// A kernel read CTA by CTA: its header, its CTAs in order, its end.
    Begin(Kernel),
    /// Shared by the sessions' schedulers while the CTA is resident.
    Cta(u32, Arc<Columns>),
    /// The next rows of an issued-order kernel.
    Issued(Columns),
    End,
    /// One thread's reference stream: its header, then its rows in chunks, each with where
    /// the file's reader stood after it when the file can be read on from there.
    Stream(Kernel),
    Rows(Columns, Option<din::Resume>),
}

impl Piece {
    fn give(&self, s: &mut Session, obs: &mut dyn Observer) -> Result<(), SimError> {
        match self {
            Piece::Kernel(k) => s.kernel(k, obs),
            Piece::Begin(header) => s.begin_kernel(header, obs),
            Piece::Cta(cta, rows) => s.cta_shared(*cta, rows.clone(), obs),
            Piece::Issued(rows) => s.issued(rows, obs),
            Piece::End => s.end_kernel(obs),
            Piece::Stream(header) => s.begin_stream(header, obs),
            Piece::Rows(rows, _) => s.feed(rows, obs).then_some(()).ok_or(SimError::Cancelled),
        }
    }

    /// The rows of a chunk, to be reused for a later piece (a CTA's rows are held by the
    /// schedulers until the CTA is done, and let go then).
    fn into_rows(self) -> Option<Columns> {
        match self {
            Piece::Rows(rows, _) | Piece::Issued(rows) => Some(rows),
            _ => None,
        }
    }
}

/// The source's end of the lanes: sends each piece to every lane. It is what a reader or a
/// generator writes into (`trace::KernelSink`, `trace::CtaSink`).
pub struct Fanout {
    lanes: Vec<SyncSender<Arc<Piece>>>,
    spare: Receiver<Columns>,
}

impl Fanout {
    pub fn send(&self, p: Piece) -> Result<(), TraceError> {
        let p = Arc::new(p);
        for lane in &self.lanes {
            // A lane stopped (its simulation failed): stop reading.
            lane.send(p.clone())
                .map_err(|_| TraceError::Stopped("the simulation stopped".into()))?;
        }
        Ok(())
    }

    /// An empty buffer for a piece's rows: one a lane is done with, or a new one.
    pub fn buffer(&self) -> Columns {
        let mut c = self.spare.try_recv().unwrap_or_default();
        c.clear();
        c
    }
}

impl KernelSink for Fanout {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.send(Piece::Kernel(k))
    }
}

impl CtaSink for Fanout {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        self.send(Piece::Begin(header.header()))
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = Columns::default();
        copy.extend_from(rows, 0..rows.len());
        self.send(Piece::Cta(cta, Arc::new(copy)))
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = self.buffer();
        copy.extend_from(rows, 0..rows.len());
        self.send(Piece::Issued(copy))
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.send(Piece::End)
    }
}

/// Why [`run`] failed.
#[derive(Debug)]
pub enum Failure {
    /// Session number `.0` failed (the source was stopped).
    Session(usize, SimError),
    /// The source failed, or a thread could not start.
    Other(anyhow::Error),
}

impl From<Failure> for anyhow::Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Session(_, e) => e.into(),
            Failure::Other(e) => e,
        }
    }
}

/// Runs `source` on a thread of its own and gives what it sends to `sessions`, spread over
/// `lanes` threads (sessions dealt in turn; this thread is the first lane). Pieces wait in
/// each lane's queue of `depth`. `observer` watches the first session; the others report
/// nothing. Returns the sessions, in their order, when the source is done: the first
/// simulation error comes before the source's.
pub fn run(
    sessions: Vec<Session>,
    lanes: usize,
    depth: usize,
    observer: &mut dyn Observer,
    source: Source,
) -> Result<Vec<Session>, Failure> {
    let n = sessions.len();
    let lanes = lanes.clamp(1, n.max(1));
    let mut dealt: Vec<Vec<(usize, Session)>> = (0..lanes).map(|_| Vec::new()).collect();
    for (i, s) in sessions.into_iter().enumerate() {
        dealt[i % lanes].push((i, s));
    }
    let (spare_tx, spare_rx) = channel::<Columns>();
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..lanes)
        .map(|_| sync_channel::<Arc<Piece>>(depth))
        .unzip();
    let mut fanout = Fanout {
        lanes: senders,
        spare: spare_rx,
    };
    let (simulated, read) = std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("read".into())
            .spawn_scoped(scope, move || source(&mut fanout));
        let mut lanes = dealt.into_iter().zip(receivers);
        let first = lanes.next();
        let others: Vec<_> = lanes
            .enumerate()
            .map(|(i, (sessions, rx))| {
                let spare = spare_tx.clone();
                std::thread::Builder::new()
                    .name(format!("simulate-{}", i + 1))
                    .spawn_scoped(scope, move || lane(sessions, rx, spare, &mut NoObserver))
            })
            .collect();
        let mut simulated = Vec::new();
        if let Some((sessions, rx)) = first {
            simulated.push(Ok(lane(sessions, rx, spare_tx, observer)));
        }
        for t in others {
            simulated.push(t.context("starting a simulation thread").and_then(|t| {
                t.join()
                    .map_err(|_| anyhow::anyhow!("a simulation thread failed"))
            }));
        }
        let read = reader.context("starting the reader thread").and_then(|t| {
            t.join()
                .map_err(|_| anyhow::anyhow!("the reader thread failed"))
        });
        (simulated, read)
    });
    let mut out: Vec<Option<Session>> = (0..n).map(|_| None).collect();
    for lane in simulated {
        let (sessions, failed) = lane.map_err(Failure::Other)?;
        if let Some((i, e)) = failed {
            return Err(Failure::Session(i, e));
        }
        for (i, s) in sessions {
            out[i] = Some(s);
        }
    }
    read.and_then(|r| r).map_err(Failure::Other)?;
    out.into_iter()
        .map(|s| s.context("a session was lost").map_err(Failure::Other))
        .collect()
}

type Lane = (Vec<(usize, Session)>, Option<(usize, SimError)>);

/// One lane: gives each piece to its sessions until the source is done or one fails (then
/// it stops taking pieces, which stops the source). The first session tells `observer`.
fn lane(
    mut sessions: Vec<(usize, Session)>,
    rx: Receiver<Arc<Piece>>,
    spare: Sender<Columns>,
    observer: &mut dyn Observer,
) -> Lane {
    for piece in rx.iter() {
        for (k, (i, s)) in sessions.iter_mut().enumerate() {
            let obs: &mut dyn Observer = if k == 0 {
                &mut *observer
            } else {
                &mut NoObserver
            };
            if let Err(e) = piece.give(s, obs) {
                let i = *i;
                return (sessions, Some((i, e)));
            }
            if let Piece::Rows(_, Some(at)) = &*piece {
                if k == 0 && obs.checkpoint_due() {
                    if let Some(copy) = s.snapshot() {
                        obs.checkpoint(copy, *at);
                    }
                }
            }
        }
        // The last lane done with a piece hands its buffer back to the source.
        if let Some(rows) = Arc::into_inner(piece).and_then(Piece::into_rows) {
            let _ = spare.send(rows);
        }
    }
    (sessions, None)
}

/// The number of lanes to use: `jobs`, or one per core when 0.
pub fn cores(jobs: usize) -> usize {
    if jobs > 0 {
        return jobs;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Rows per chunk of a reference stream: about 1.5 MB of columns, small enough to stay in
/// the caches' reach and large enough that handing a chunk over costs nothing measurable.
pub const CHUNK_ROWS: usize = 1 << 16;
/// Chunks of a reference stream parsed ahead of the simulation.
const AHEAD: usize = 4;

/// How an opened trace file is sent: its source, the depth of the lanes' queues for its
/// pieces, and whether its CTAs can run on several SMs (a reference stream's one thread runs
/// on one).
pub struct FileSource {
    pub source: Source,
    pub depth: usize,
    pub splits: bool,
}

/// The pieces of an opened trace file: a `din` reference stream in chunks of rows, any other
/// format CTA by CTA where it is grouped so (else a kernel at a time). `wrap` and `watch` are
/// [`trace::OpenTrace::stream`]'s (decompression ahead, counting the bytes read).
pub fn file_source(
    open: trace::OpenTrace,
    wrap: fn(trace::source::Stream) -> trace::source::Stream,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
) -> FileSource {
    match open.into_reference_stream() {
        Ok(stream) => FileSource {
            source: Box::new(move |to| send_reference_stream(stream, CHUNK_ROWS, to)),
            depth: AHEAD,
            splits: false,
        },
        Err(open) => FileSource {
            // One kernel or CTA waits while one is simulated and the next is read.
            source: Box::new(move |to| Ok(open.stream(&wrap, &watch, to)?)),
            depth: 1,
            splits: true,
        },
    }
}

/// Sends a reference stream, its header and then its rows in chunks of `rows_per_chunk`.
pub fn send_reference_stream(
    stream: trace::ReferenceStream,
    rows_per_chunk: usize,
    to: &mut Fanout,
) -> Result<()> {
    let trace::ReferenceStream {
        header,
        reader,
        seekable,
    } = stream;
    to.send(Piece::Stream(header))?;
    send_rows(reader, seekable, rows_per_chunk, to)
}

/// Sends the rows of a reference stream whose header was sent, in chunks of
/// `rows_per_chunk`, with their resume points if `seekable`.
fn send_rows<R: std::io::BufRead>(
    mut reader: din::Reader<R>,
    seekable: bool,
    rows_per_chunk: usize,
    to: &mut Fanout,
) -> Result<()> {
    loop {
        let mut chunk = to.buffer();
        if !reader.next_chunk(&mut chunk, rows_per_chunk)? {
            return Ok(());
        }
        let at = seekable.then(|| reader.resume_point());
        to.send(Piece::Rows(chunk, at))?;
    }
}

/// The rest of the reference stream in the file at `path` (named `file`) from `at`, for a
/// session that stood there ([`Session::snapshot`]): its rows only, as [`file_source`] sends
/// them. `watch` sees the file's bytes from there.
pub fn resumed_source(
    path: std::path::PathBuf,
    file: String,
    at: din::Resume,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
) -> FileSource {
    FileSource {
        source: Box::new(move |to| {
            let reader = din::reader_at(&path, &file, at, &watch)?;
            send_rows(reader, true, CHUNK_ROWS, to)
        }),
        depth: AHEAD,
        splits: false,
    }
}
