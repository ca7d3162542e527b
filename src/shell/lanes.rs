//! Sessions side by side on several cores, fed by one source: a thread decodes (a trace
//! file, a built-in kernel's generator) and hands every piece to each lane; a lane is a
//! thread that gives the piece to its sessions in turn. `sim` runs one session per part of
//! the simulated SMs (`sim::partition_sms`, merged by `Report::merge`), `sweep` one per
//! configuration. The trace is decoded once whatever the number of sessions, and memory
//! holds the pieces in flight (shared, not copied) and each session's resident CTAs.
//!
//! The core stays free of threads: it gives the pieces ([`Session`]'s kernel, CTA and chunk
//! calls); this module runs them in parallel.

use crate::sim::{NoObserver, Observer, ReuseStage, Session, SimError};
use crate::trace::{self, din, Columns, CtaSink, Instruction, Kernel, KernelSink, TraceError};
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
    /// Shared by the sessions' schedulers while the CTA is resident; with the kernel's
    /// number in the file when the file can be read on from the next CTA.
    Cta(u32, Arc<Columns>, Option<u32>),
    /// The next rows of an issued-order kernel (one chunk of a binary file); with the place
    /// to read the file on from after them, where there is one ([`trace::ResumePoint::Issued`]
    /// numbered by [`Fanout::number_pieces`], or one an NVBit log's reader gave).
    Issued(Columns, Option<trace::ResumePoint>),
    /// Instructions of the open kernel found since it began (a file read once:
    /// [`Fanout::take_instructions_as_found`]).
    Instructions(Vec<Instruction>),
    /// The rows of a CTA a copy of a session holds resident without them, read again from
    /// the file (`trace::CtaSink::resident`).
    Resident(u32, Columns),
    End,
    /// One thread's reference stream: its header, then its rows in chunks, each with where
    /// the file's reader stood after it when the file can be read on from there.
    Stream(Kernel),
    Rows(Columns, Option<din::Resume>),
    /// Rows of a reference stream with the reuse distances of their requests, measured on
    /// a thread of their own ([`run_apart`]).
    Measured(Columns, Vec<u32>),
}

impl Piece {
    fn give(&self, s: &mut Session, obs: &mut dyn Observer) -> Result<(), SimError> {
        match self {
            Piece::Kernel(k) => s.kernel(k, obs),
            Piece::Begin(header) => s.begin_kernel(header, obs),
            Piece::Cta(cta, rows, _) => s.cta_shared(*cta, rows.clone(), obs),
            Piece::Issued(rows, _) => s.issued(rows, obs),
            Piece::Instructions(added) => s.more_instructions(added, obs),
            Piece::Resident(cta, rows) => s.give_cta_rows(*cta, rows.clone()),
            Piece::End => s.end_kernel(obs),
            Piece::Stream(header) => s.begin_stream(header, obs),
            Piece::Rows(rows, _) => s.feed(rows, obs).then_some(()).ok_or(SimError::Cancelled),
            Piece::Measured(rows, distances) => s
                .feed_measured(rows, distances, obs)?
                .then_some(())
                .ok_or(SimError::Cancelled),
        }
    }

    /// The rows the piece carries (what a batch is measured by).
    fn rows(&self) -> usize {
        match self {
            Piece::Kernel(k) => k.len(),
            Piece::Cta(_, rows, _) => rows.len(),
            Piece::Issued(rows, _) | Piece::Rows(rows, _) | Piece::Measured(rows, _) => rows.len(),
            Piece::Resident(_, rows) => rows.len(),
            Piece::Begin(_) | Piece::Instructions(_) | Piece::End | Piece::Stream(_) => 0,
        }
    }

    /// The rows of a chunk, to be reused for a later piece (a CTA's rows are held by the
    /// schedulers until the CTA is done, and let go then).
    pub fn into_rows(self) -> Option<Columns> {
        match self {
            Piece::Rows(rows, _) | Piece::Issued(rows, _) | Piece::Measured(rows, _) => Some(rows),
            // Where no session holds the CTA's rows any more.
            Piece::Cta(_, rows, _) => Arc::into_inner(rows),
            _ => None,
        }
    }
}

/// Pieces handed over together. A source sends a lane a batch at a time, so that a kernel of
/// many small CTAs does not cost two thread switches a CTA: with CTAs of 32 threads of three
/// accesses (`vecadd block=32`), the reader and the lane used to wake each other for every
/// CTA, and the run spent twice its simulation's time in the kernel's scheduler.
pub type Batch = Vec<Arc<Piece>>;

/// A batch is sent once its pieces hold this many rows (so a chunk of a reference stream,
/// or a CTA of this many rows, goes alone and at once)...
const BATCH_ROWS: usize = 1 << 14;
/// ...or once it holds this many pieces.
const BATCH_PIECES: usize = 1 << 10;

/// The source's end of the lanes: sends each piece to every lane, in batches ([`Batch`]). It
/// is what a reader or a generator writes into (`trace::KernelSink`, `trace::CtaSink`). What
/// is still in its batch goes when it is dropped, or at [`Fanout::flush`].
pub struct Fanout {
    lanes: Vec<SyncSender<Batch>>,
    /// The batch being filled, and its rows.
    batch: Batch,
    batch_rows: usize,
    spare: Receiver<Columns>,
    /// Kernels begun so far and chunks of issued rows sent in the current one, when the
    /// file can be read on from any CTA or chunk ([`trace::ResumePoint`]).
    place: Option<(u32, u32)>,
    /// The sessions take instructions found after their kernel began.
    as_found: bool,
    /// Rows between two places to read on from that the reader should give
    /// ([`CtaSink::read_on_every`]), and the place it gave for the next chunk.
    read_on_every: Option<u64>,
    read_on: Option<trace::ResumePoint>,
}

impl Fanout {
    fn new(lanes: Vec<SyncSender<Batch>>, spare: Receiver<Columns>) -> Self {
        Fanout {
            lanes,
            batch: Vec::new(),
            batch_rows: 0,
            spare,
            place: None,
            as_found: false,
            read_on_every: None,
            read_on: None,
        }
    }

    /// Adds `p` to the batch, and sends the batch when it is full.
    pub fn send(&mut self, p: Piece) -> Result<(), TraceError> {
        self.batch_rows += p.rows();
        self.batch.push(Arc::new(p));
        if self.batch_rows >= BATCH_ROWS || self.batch.len() >= BATCH_PIECES {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends what the batch holds.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.batch_rows = 0;
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        // The last lane gets the source's own references: once the lanes hold the pieces,
        // the source does not (a lone lane can take their rows out).
        let Some((last, others)) = self.lanes.split_last() else {
            return Ok(());
        };
        let stopped = |_| TraceError::Stopped("the simulation stopped".into());
        for lane in others {
            // A lane stopped (its simulation failed): stop reading.
            lane.send(batch.clone()).map_err(stopped)?;
        }
        last.send(batch).map_err(stopped)
    }

    /// Marks each CTA and chunk of issued rows sent from now on with its place in the file,
    /// `begun` kernels having begun already and `chunks` chunks of issued rows of the last
    /// one sent: the source is a file that can be read on from any CTA or chunk.
    pub fn number_pieces(&mut self, begun: u32, chunks: u32) {
        self.place = Some((begun, chunks));
    }

    /// Lets readers that would read the file twice to learn each kernel's instructions first
    /// read it once, sending instructions as they are found ([`Piece::Instructions`]), so the
    /// first requests come at once. Such a read may stop with
    /// [`TraceError::must_read_again`]; the shell then starts again without this.
    pub fn take_instructions_as_found(&mut self) {
        self.as_found = true;
    }

    /// Asks a reader that can (an NVBit log read in one pass) to give a place to read on
    /// from after a chunk of issued rows, every `rows` rows or so (each place costs a copy
    /// of the reader's tables).
    pub fn take_read_on_points(&mut self, rows: u64) {
        self.read_on_every = Some(rows);
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
        // A kernel of the file, though no piece of it can be read on from.
        if let Some((begun, chunks)) = &mut self.place {
            *begun += 1;
            *chunks = 0;
        }
        self.send(Piece::Kernel(k))
    }
}

impl Drop for Fanout {
    fn drop(&mut self) {
        // A source that ended without a flush: its last pieces still go (if the lanes have
        // stopped, their error is the one told).
        let _ = self.flush();
    }
}

impl CtaSink for Fanout {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        if let Some((begun, chunks)) = &mut self.place {
            *begun += 1;
            *chunks = 0;
        }
        self.send(Piece::Begin(header.header()))
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = self.buffer();
        copy.extend_from(rows, 0..rows.len());
        let kernel = self.place.map(|(begun, _)| begun.saturating_sub(1));
        self.send(Piece::Cta(cta, Arc::new(copy), kernel))
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = self.buffer();
        copy.extend_from(rows, 0..rows.len());
        let place = self.place.as_mut().map(|(begun, chunks)| {
            *chunks += 1;
            trace::ResumePoint::Issued {
                kernel: begun.saturating_sub(1),
                next_chunk: *chunks,
            }
        });
        let at = self.read_on.take().or(place);
        self.send(Piece::Issued(copy, at))
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.send(Piece::End)
    }
    fn takes_more_instructions(&self) -> bool {
        self.as_found
    }
    fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        self.send(Piece::Instructions(added.to_vec()))
    }
    fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = Columns::default();
        copy.extend_from(rows, 0..rows.len());
        self.send(Piece::Resident(cta, copy))
    }
    fn read_on_every(&self) -> Option<u64> {
        self.read_on_every
    }
    fn read_on_point(&mut self, at: trace::ResumePoint) {
        self.read_on = Some(at);
    }
}

/// Whether `e` (a source's error, or one with it in its chain) is a read that must start
/// again in two passes ([`TraceError::ReadAgain`]: a source of [`file_source`] with
/// `as_found` met what only two passes take).
pub fn must_read_again(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<TraceError>()
            .is_some_and(|t| t.must_read_again())
    })
}

/// A source's end with a single lane, for a receiver of the pieces that is not a session
/// (the timing model's streams are built from them: `shell::timed::run_streamed`). Batches
/// of pieces wait in a queue of `depth`. The receiver hands the rows of pieces it is done
/// with back to the source through the sender, which saves the source fresh memory for
/// each piece.
pub fn pipe(depth: usize) -> (Fanout, Receiver<Batch>, Sender<Columns>) {
    let (give_back, spare) = channel::<Columns>();
    let (to, from) = sync_channel::<Batch>(depth.max(1));
    (Fanout::new(vec![to], spare), from, give_back)
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
/// `lanes` threads (sessions dealt in turn; this thread is the first lane). Batches of
/// pieces wait in each lane's queue of `depth`. `observer` watches the first session; the
/// others report nothing. Returns the sessions, in their order, when the source is done:
/// the first simulation error comes before the source's.
pub fn run(
    sessions: Vec<Session>,
    lanes: usize,
    depth: usize,
    observer: &mut dyn Observer,
    source: Source,
) -> Result<Vec<Session>, Failure> {
    run_staged(sessions, lanes, depth, observer, source, None).map(|(s, _)| s)
}

/// [`run`] for one session fed a reference stream (a `din` file): the reuse distances of
/// its requests are measured on a thread of their own, between the source and the
/// simulation (`sim::ReuseStage`), so reading, measuring and simulating share the cores.
/// The session gets its trackers back at the end, so its report is the one [`run`] gives.
/// Without reuse distances it is [`run`].
pub fn run_apart(
    mut session: Session,
    depth: usize,
    observer: &mut dyn Observer,
    source: Source,
) -> Result<Session, Failure> {
    let stage = session.detach_reuse();
    let (mut sessions, stage) = run_staged(vec![session], 1, depth, observer, source, stage)?;
    let mut session = sessions
        .pop()
        .context("a session was lost")
        .map_err(Failure::Other)?;
    if let Some(stage) = stage {
        session
            .attach_reuse(stage, observer)
            .map_err(|e| Failure::Session(0, e))?;
    }
    Ok(session)
}

/// [`run`], with `stage` (for one session) measuring each chunk of rows before the lane
/// gets it; returns the stage when its thread ran to the end.
fn run_staged(
    sessions: Vec<Session>,
    lanes: usize,
    depth: usize,
    observer: &mut dyn Observer,
    source: Source,
    stage: Option<ReuseStage>,
) -> Result<(Vec<Session>, Option<ReuseStage>), Failure> {
    let n = sessions.len();
    let lanes = lanes.clamp(1, n.max(1));
    let mut dealt: Vec<Vec<(usize, Session)>> = (0..lanes).map(|_| Vec::new()).collect();
    for (i, s) in sessions.into_iter().enumerate() {
        dealt[i % lanes].push((i, s));
    }
    let (spare_tx, spare_rx) = channel::<Columns>();
    let (senders, mut receivers): (Vec<_>, Vec<_>) =
        (0..lanes).map(|_| sync_channel::<Batch>(depth)).unzip();
    // The stage sits between the source and the first lane.
    let stage = match (stage, receivers.first_mut()) {
        (Some(stage), Some(first)) if n == 1 => {
            let (to_lane, from_stage) = sync_channel::<Batch>(depth);
            Some((stage, std::mem::replace(first, from_stage), to_lane))
        }
        (Some(_), _) => {
            return Err(Failure::Other(anyhow::anyhow!(
                "reuse distances are measured apart for one session only"
            )))
        }
        (None, _) => None,
    };
    let mut fanout = Fanout::new(senders, spare_rx);
    let (simulated, read, measured) = std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("read".into())
            .spawn_scoped(scope, move || {
                source(&mut fanout)?;
                Ok::<_, anyhow::Error>(fanout.flush()?)
            });
        let measuring = stage.map(|(mut stage, from, to)| {
            std::thread::Builder::new()
                .name("reuse".into())
                .spawn_scoped(scope, move || {
                    measure(&mut stage, from, to).then_some(stage)
                })
        });
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
        let measured = measuring.map(|t| {
            t.context("starting the reuse thread").and_then(|t| {
                t.join()
                    .map_err(|_| anyhow::anyhow!("the reuse thread failed"))
            })
        });
        (simulated, read, measured)
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
    let stage = match measured.transpose().map_err(Failure::Other)? {
        Some(None) => {
            return Err(Failure::Other(anyhow::anyhow!(
                "the reuse thread stopped before the simulation"
            )))
        }
        Some(stage) => stage,
        None => None,
    };
    let sessions = out
        .into_iter()
        .map(|s| s.context("a session was lost").map_err(Failure::Other))
        .collect::<Result<_, _>>()?;
    Ok((sessions, stage))
}

/// The stage's thread: measures the distances of each chunk of rows from `from` and passes
/// every piece on to `to`, in order. Returns whether it ran to the source's end (not
/// stopped by the lane).
fn measure(stage: &mut ReuseStage, from: Receiver<Batch>, to: SyncSender<Batch>) -> bool {
    for batch in from.iter() {
        let mut out = Vec::with_capacity(batch.len());
        for piece in batch {
            let piece = match Arc::try_unwrap(piece) {
                Ok(Piece::Rows(rows, _)) => measured(stage, rows),
                Ok(other) => Arc::new(other),
                // Held elsewhere too (never with one lane): measured from a copy.
                Err(shared) => match &*shared {
                    Piece::Rows(rows, _) => measured(stage, rows.clone()),
                    _ => shared,
                },
            };
            if let Piece::Stream(header) = &*piece {
                stage.begin_stream(header);
            }
            out.push(piece);
        }
        if to.send(out).is_err() {
            return false;
        }
    }
    true
}

/// `rows` with the distances of their requests.
fn measured(stage: &mut ReuseStage, rows: Columns) -> Arc<Piece> {
    let mut distances = Vec::with_capacity(rows.len());
    stage.measure(&rows, &mut distances);
    Arc::new(Piece::Measured(rows, distances))
}

type Lane = (Vec<(usize, Session)>, Option<(usize, SimError)>);

/// One lane: gives each piece to its sessions until the source is done or one fails (then
/// it stops taking pieces, which stops the source). The first session tells `observer`.
fn lane(
    mut sessions: Vec<(usize, Session)>,
    rx: Receiver<Batch>,
    spare: Sender<Columns>,
    observer: &mut dyn Observer,
) -> Lane {
    for (_, s) in sessions.iter_mut() {
        s.recycle_cta_rows();
    }
    // The rows of CTAs the sessions are done with go back to the source when no one else
    // holds them.
    let mut give_back = |rows: Arc<Columns>| {
        if let Some(rows) = Arc::into_inner(rows) {
            let _ = spare.send(rows);
        }
    };
    for piece in rx.iter().flatten() {
        for (k, (i, s)) in sessions.iter_mut().enumerate() {
            let obs: &mut dyn Observer = if k == 0 {
                &mut *observer
            } else {
                &mut NoObserver
            };
            let given = match &*piece {
                Piece::Cta(cta, rows, Some(kernel)) if k == 0 => {
                    give_copying(s, obs, *cta, rows, *kernel)
                }
                _ => piece.give(s, obs),
            };
            if let Err(e) = given {
                let i = *i;
                return (sessions, Some((i, e)));
            }
            let at = match &*piece {
                Piece::Rows(_, Some(at)) => Some(trace::ResumePoint::Din(*at)),
                Piece::Issued(_, Some(at)) => Some(at.clone()),
                _ => None,
            };
            if let Some(at) = at {
                if k == 0 && obs.checkpoint_due(s.accesses_done()) {
                    if let Some(copy) = s.snapshot() {
                        obs.checkpoint(copy, at);
                    }
                }
            }
        }
        for (_, s) in sessions.iter_mut() {
            s.release_rows(&mut give_back);
        }
        // The last lane done with a piece hands its buffer back to the source.
        if let Some(rows) = Arc::into_inner(piece).and_then(Piece::into_rows) {
            let _ = spare.send(rows);
        }
    }
    (sessions, None)
}

/// Warp instructions between two chances to copy the session within a CTA's piece.
const COPY_STEP: u64 = 1 << 12;

/// Gives CTA `cta` of the file's kernel `kernel` to `s` a few warp instructions at a time,
/// offering `obs` a copy of the session between the steps when one is due: the CTAs of a
/// kernel often finish in waves, so copies between pieces alone would be few.
fn give_copying(
    s: &mut Session,
    obs: &mut dyn Observer,
    cta: u32,
    rows: &Arc<Columns>,
    kernel: u32,
) -> Result<(), SimError> {
    let at = trace::ResumePoint::Cta {
        kernel,
        next_cta: cta + 1,
    };
    let mut more = s.cta_shared_for(cta, rows.clone(), COPY_STEP, obs)?;
    loop {
        if obs.checkpoint_due(s.accesses_done()) {
            if let Some(copy) = s.snapshot() {
                obs.checkpoint(copy, at.clone());
            }
        }
        if !more {
            return Ok(());
        }
        more = s.go_on(COPY_STEP, obs)?;
    }
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
/// [`trace::OpenTrace::stream`]'s (decompression ahead, counting the bytes read). With
/// `as_found`, a file whose kernels' instructions are known only at their ends (NVBit) is
/// read once, its instructions sent as they are found ([`Fanout::take_instructions_as_found`]);
/// the run may then fail with [`TraceError::must_read_again`], to be started again without.
pub fn file_source(
    open: trace::OpenTrace,
    wrap: fn(trace::source::Stream) -> trace::source::Stream,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
) -> FileSource {
    file_source_marked(open, wrap, watch, (None, as_found))
}

/// [`file_source`] for a run that keeps copies of its session, one about every `every`
/// accesses: the CTAs and chunks of issued rows of a file that can be read on from them
/// ([`trace::OpenTrace::resumable`]: a binary file of version 4, and any other format but
/// `din`) go with their place in the file ([`Fanout::number_pieces`]), so
/// that the lane offers copies between and within them ([`trace::ResumePoint::Cta`],
/// [`trace::ResumePoint::Issued`]); an NVBit log's reader gives places itself, after a
/// chunk every `every` rows or so ([`Fanout::take_read_on_points`]). With `as_found`, a file
/// whose kernels' instructions are known only at their ends is read once, its instructions
/// sent as they are found ([`Fanout::take_instructions_as_found`]).
pub fn resumable_file_source(
    open: trace::OpenTrace,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
    every: u64,
) -> FileSource {
    file_source_marked(open, |s| s, watch, (Some(every), as_found))
}

fn file_source_marked(
    open: trace::OpenTrace,
    wrap: fn(trace::source::Stream) -> trace::source::Stream,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    (copies_every, as_found): (Option<u64>, bool),
) -> FileSource {
    match open.into_reference_stream() {
        Ok(stream) => FileSource {
            source: Box::new(move |to| send_reference_stream(stream, CHUNK_ROWS, to)),
            depth: AHEAD,
            splits: false,
        },
        Err(open) => {
            // A copy of a session can go on from any CTA or chunk of issued rows (of a
            // binary file of version 4, an Accel-Sim trace, a cuda-memtrace file, a file of
            // the formats read again from the start), or from a place an NVBit log's reader
            // gave.
            let resumable = copies_every.is_some() && open.resumable();
            FileSource {
                // One kernel or CTA waits while one is simulated and the next is read.
                source: Box::new(move |to| {
                    // An NVBit log's reader says itself where it can be read on from.
                    if let (true, trace::Format::NvBit, Some(every)) =
                        (resumable, open.format, copies_every)
                    {
                        to.take_read_on_points(every);
                    } else if resumable {
                        to.number_pieces(0, 0);
                    }
                    if as_found {
                        to.take_instructions_as_found();
                    }
                    Ok(open.stream(&wrap, &watch, to)?)
                }),
                depth: 1,
                splits: true,
            }
        }
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

/// The rest of the file at `path` (named `file`) from `at`, for `session`, a copy of a
/// session that stood there ([`Session::snapshot`]), sent as [`file_source`] sends it: a
/// reference stream's rows, or a kernel from the CTA or chunk after the copy on and the
/// kernels after it. A copy within a binary file's kernel gets back the rows of its resident
/// CTAs here, read through the file's index; one within an Accel-Sim kernel, a compressed
/// binary file's or another format's gets them from the source, which reads the kernel's
/// file again, walks the binary file from its start or reads the file again from its start
/// (`trace::CtaSink::resident`, `trace::SkipTo`). `watch`
/// sees the file's bytes from there; `as_found` is [`file_source`]'s.
pub fn resumed_source(
    path: std::path::PathBuf,
    file: String,
    at: trace::ResumePoint,
    session: &mut Session,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
) -> Result<FileSource> {
    let (kernel, next_chunk) = match at {
        trace::ResumePoint::NvBit(_) => (0, 0),
        trace::ResumePoint::Din(at) => {
            return Ok(FileSource {
                source: Box::new(move |to| {
                    let reader = din::reader_at(&path, &file, at, &watch)?;
                    send_rows(reader, true, CHUNK_ROWS, to)
                }),
                depth: AHEAD,
                splits: false,
            })
        }
        trace::ResumePoint::Cta { kernel, .. } => (kernel, 0),
        trace::ResumePoint::Issued { kernel, next_chunk } => (kernel, next_chunk),
    };
    let opts = trace::ReadOptions {
        format: None,
        allow_truncated: false,
    };
    let opened = trace::open_trace(&path, opts, &|s| s, &|s| s)?;
    if opened.format != trace::Format::Binary || opened.walks_to_resume() {
        // The reader goes on from `at` itself: issued rows only (cuda-memtrace: the copy
        // wants no CTA's rows back), or the resident CTAs' rows first, from the kernel file
        // read again (Accel-Sim), from the compressed binary file walked from its start, or
        // from a file of another format read again from its start.
        let instructions = session.kernel_instructions().to_vec();
        let wanted = session.wanted_ctas().to_vec();
        return Ok(FileSource {
            source: Box::new(move |to| {
                let open = trace::open_trace(&path, opts, &|s| s, &watch)?;
                // An NVBit log's places come from its reader (none is wanted here: a run
                // read on from a copy keeps no copies).
                if !matches!(at, trace::ResumePoint::NvBit(_)) {
                    to.number_pieces(kernel + 1, next_chunk);
                }
                if as_found {
                    to.take_instructions_as_found();
                }
                let held = trace::Held {
                    instructions: &instructions,
                    wanted_ctas: &wanted,
                };
                Ok(open.stream_from(at, held, &|s| s, &watch, to)?)
            }),
            depth: 1,
            splits: true,
        });
    }
    let open = || std::fs::File::open(&path).with_context(|| format!("opening {file}"));
    let refill = |session: &mut Session| -> Result<trace::binary::Index> {
        let mut r = std::io::BufReader::new(open()?);
        let index = trace::binary::Index::read(&mut r, &file)?;
        for cta in session.wanted_ctas().to_vec() {
            let rows = index.cta(&mut r, kernel as usize, cta)?;
            session.give_cta_rows(cta, rows)?;
        }
        Ok(index)
    };
    let index = refill(session).with_context(|| {
        format!(
            "{file}: reading on from kernel {kernel}, where the run stood (did the file \
             change since?)"
        )
    })?;
    // `at` is a binary file's place: `place` always finds it.
    let (k, chunk) = index.place(&at).unwrap_or((kernel as usize, 0));
    let f = open()?;
    Ok(FileSource {
        source: Box::new(move |to| {
            // A CTA's copy numbers no chunk.
            to.number_pieces(kernel + 1, next_chunk);
            Ok(index.stream_from(f, k, chunk, &watch, to)?)
        }),
        depth: 1,
        splits: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::sim::Report;

    /// A reference stream of `n` references over a few KiB, as `din::read` gives it.
    fn din_kernel(n: u64) -> Kernel {
        let mut text = String::new();
        for i in 0..n {
            let addr = (i * 40503 % 6151) * 8 + (i % 7) * 4096;
            text.push_str(&format!("{} {addr:x}\n", i % 2));
        }
        let t = din::read(text.as_bytes(), "t.din").unwrap();
        t.kernels.into_iter().next().unwrap()
    }

    /// Sends `k` as a file's reference stream is sent, in chunks of 1000 rows, then fails
    /// when `fail` is set.
    fn source(k: Kernel, fail: bool) -> Source {
        Box::new(move |to| {
            to.send(Piece::Stream(k.header()))?;
            let cols = k.columns();
            for at in (0..cols.len()).step_by(1000) {
                let mut chunk = to.buffer();
                chunk.extend_from(cols, at..(at + 1000).min(cols.len()));
                to.send(Piece::Rows(chunk, None))?;
            }
            if fail {
                anyhow::bail!("t.din: line 9: expected a hex address");
            }
            Ok(())
        })
    }

    fn unsectored() -> SimConfig {
        let mut cfg = SimConfig::default();
        cfg.cache.size_bytes = 4096;
        cfg.cache.sector_bytes = cfg.cache.line_bytes;
        cfg.cache.write_policy = crate::config::WritePolicy::Wbwa;
        cfg
    }

    fn plain(cfg: &SimConfig, k: &Kernel) -> Report {
        let s = Session::new(cfg, 0).unwrap();
        let mut s = run(vec![s], 1, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
        s.remove(0).finish(&mut NoObserver)
    }

    #[test]
    fn distances_measured_apart_give_the_report_of_one_thread() {
        let k = din_kernel(25_000);
        for cfg in [unsectored(), SimConfig::default()] {
            let want = plain(&cfg, &k);
            assert!(want.totals.misses > 1000 && want.reuse.is_some());
            let s = Session::new(&cfg, 0).unwrap();
            let got = run_apart(s, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
            assert_eq!(got.finish(&mut NoObserver), want);
        }
        // Without reuse distances: the cache's shadow is run apart where it is an LRU stack
        // (unsectored, write-allocate), else there is nothing to measure apart.
        for cfg in [unsectored(), SimConfig::default()] {
            let cfg = SimConfig {
                reuse: false,
                ..cfg
            };
            let mut s = Session::new(&cfg, 0).unwrap();
            let stack = cfg.cache.write_policy == crate::config::WritePolicy::Wbwa;
            assert_eq!(s.detach_reuse().is_some(), stack);
            let s = Session::new(&cfg, 0).unwrap();
            let got = run_apart(s, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
            assert_eq!(got.finish(&mut NoObserver), plain(&cfg, &k));
        }
    }

    /// `n` rows of loads, as a CTA's or a chunk's.
    fn rows(n: usize) -> Columns {
        let mut c = Columns::default();
        for i in 0..n as u32 {
            c.push(&trace::Access {
                thread: i,
                inst: 0,
                dyn_inst: 0,
                addr: u64::from(i) * 4,
                size: 4,
                kind: trace::AccessKind::Load,
                space: trace::MemSpace::Global,
            });
        }
        c
    }

    /// The CTA numbers and row counts of the pieces of `batches`, in order.
    fn ctas_in(batches: &[Batch]) -> Vec<(u32, usize)> {
        let pieces = batches.iter().flatten();
        pieces
            .filter_map(|p| match &**p {
                Piece::Cta(cta, rows, _) => Some((*cta, rows.len())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn small_ctas_are_sent_in_batches_in_order_and_the_last_on_a_flush() {
        // Room for every batch, so that sending never waits.
        let (mut to, from, _) = pipe(1 << 12);
        // CTAs of 32 threads of three accesses: about 170 to a batch.
        for cta in 0..1000 {
            to.send(Piece::Cta(cta, Arc::new(rows(96)), None)).unwrap();
        }
        let sent: Vec<Batch> = from.try_iter().collect();
        assert!((4..=6).contains(&sent.len()), "{} batches", sent.len());
        for b in &sent {
            let held: usize = b.iter().map(|p| p.rows()).sum();
            assert!((BATCH_ROWS..BATCH_ROWS + 96).contains(&held), "{held} rows");
        }
        let mut all = sent;
        assert!(from.try_recv().is_err(), "a partial batch went early");
        to.flush().unwrap();
        all.extend(from.try_iter());
        let want: Vec<(u32, usize)> = (0..1000).map(|cta| (cta, 96)).collect();
        assert_eq!(ctas_in(&all), want);
        // Pieces without rows are batched by their count.
        for _ in 0..BATCH_PIECES + 1 {
            to.send(Piece::End).unwrap();
        }
        assert_eq!(
            from.try_iter().map(|b| b.len()).collect::<Vec<_>>(),
            [BATCH_PIECES]
        );
    }

    #[test]
    fn a_large_piece_goes_at_once_and_a_dropped_source_sends_its_rest() {
        let (mut to, from, _) = pipe(4);
        to.send(Piece::Cta(0, Arc::new(rows(10)), None)).unwrap();
        assert!(from.try_recv().is_err());
        // A chunk of a stream, or a large CTA, goes with the pieces before it.
        to.send(Piece::Rows(rows(BATCH_ROWS), None)).unwrap();
        let first = from.try_recv().unwrap();
        assert_eq!(
            first.iter().map(|p| p.rows()).collect::<Vec<_>>(),
            [10, BATCH_ROWS]
        );
        to.send(Piece::Cta(1, Arc::new(rows(5)), None)).unwrap();
        to.send(Piece::End).unwrap();
        drop(to);
        let rest: Vec<Batch> = from.iter().collect();
        assert_eq!(ctas_in(&rest), [(1, 5)]);
        assert!(matches!(
            rest.concat().last().map(|p| &**p),
            Some(Piece::End)
        ));
    }

    /// Cancels after the first progress report.
    struct Cancel;
    impl Observer for Cancel {
        fn wants_requests(&self) -> bool {
            false
        }
        fn progress(&mut self, _: u64, _: u64) -> bool {
            false
        }
    }

    #[test]
    fn a_run_measured_apart_stops_on_a_cancel_or_a_bad_file() {
        let k = din_kernel(25_000);
        let s = Session::new(&unsectored(), 0).unwrap();
        match run_apart(s, 1, &mut Cancel, source(k.clone(), false)) {
            Err(Failure::Session(0, SimError::Cancelled)) => {}
            Err(e) => panic!("{:?}", anyhow::Error::from(e)),
            Ok(_) => panic!("not cancelled"),
        }
        let s = Session::new(&unsectored(), 0).unwrap();
        let e = match run_apart(s, 1, &mut NoObserver, source(k, true)) {
            Err(e) => anyhow::Error::from(e).to_string(),
            Ok(_) => panic!("the source's failure was lost"),
        };
        assert!(e.contains("line 9"), "{e}");
    }
}
