//! Sessions side by side on several cores, fed by one source: a thread decodes (a trace
//! file, a built-in kernel's generator) and hands every piece to each lane; a lane is a
//! thread that gives the piece to its sessions in turn. `sim` runs one session per part of
//! the simulated SMs (`sim::partition_sms`, merged by `Report::merge`), `sweep` one per
//! configuration. The trace is decoded once whatever the number of sessions, and memory
//! holds the pieces in flight (shared, not copied) and each session's resident CTAs.
//!
//! The core stays free of threads: it gives the pieces ([`Session`]'s kernel, CTA and chunk
//! calls); this module runs them in parallel.
//!
//! [`Fanout`] (`fanout.rs`) is the source's end, which batches the pieces; `sources.rs` opens
//! a trace file (from its start, or on from a copy's place) as a source.

mod fanout;
mod sources;

pub use fanout::{must_read_again, pipe, Fanout};
pub use sources::{
    file_source, resumable_file_source, resumed_source, send_reference_stream, FileSource,
    CHUNK_ROWS,
};

use anyhow::{Context, Result};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;
use warpscope_core::sim::{NoObserver, Observer, ReuseStage, Session, SimError};
use warpscope_core::trace::{self, din, Columns, Instruction, Kernel};

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
    /// the file (`trace::SinkHooks::resident`).
    Resident(u32, Columns),
    End,
    /// One thread's reference stream: its header, then its rows in chunks, each with where
    /// the file's reader stood after it when the file can be read on from there.
    Stream(Kernel),
    Rows(Columns, Option<din::Resume>),
    /// Rows of a reference stream (possibly none) and the tags of the requests of the warp
    /// instructions they complete, measured on a thread of their own ([`run_apart`]).
    Measured(Columns, Vec<u8>),
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
            Piece::Measured(rows, tags) => {
                s.take_tags(tags)?;
                s.feed(rows, obs).then_some(()).ok_or(SimError::Cancelled)
            }
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

/// [`run`] for one session fed a reference stream (a `din` file): the miss classes and reuse
/// distances of its requests are measured on a thread of their own, between the source and
/// the simulation (`sim::ReuseStage`), so reading, measuring and simulating share the cores.
/// The session gets its classifiers and meters back at the end, so its report is the one
/// [`run`] gives. With an observer that wants every request's distance, it is [`run`].
pub fn run_apart(
    mut session: Session,
    depth: usize,
    observer: &mut dyn Observer,
    source: Source,
) -> Result<Session, Failure> {
    let stage = match observer.wants_requests() {
        true => None,
        false => session.detach_reuse(),
    };
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

/// [`run`], with `stage` (for one session) measuring each chunk of rows before the lane gets
/// it, on a thread of its own; returns the stage when its thread ran to the end.
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

/// The stage's thread: measures each chunk of rows from `from` and passes every piece on to
/// `to` with the tags of its requests, in order. Returns whether it ran to the source's end
/// (not stopped by the lane).
fn measure(stage: &mut ReuseStage, from: Receiver<Batch>, to: SyncSender<Batch>) -> bool {
    for batch in from.iter() {
        let mut out = Vec::with_capacity(batch.len() + 1);
        for piece in batch {
            let mut tags = Vec::new();
            let piece = match Arc::try_unwrap(piece) {
                Ok(Piece::Rows(rows, _)) => {
                    stage.measure(&rows, &mut tags);
                    Arc::new(Piece::Measured(rows, tags))
                }
                Ok(other) => Arc::new(other),
                // Held elsewhere too (never with one lane): measured from a copy.
                Err(shared) => match &*shared {
                    Piece::Rows(rows, _) => {
                        stage.measure(rows, &mut tags);
                        Arc::new(Piece::Measured(rows.clone(), tags))
                    }
                    _ => shared,
                },
            };
            if let Piece::Stream(header) = &*piece {
                // The previous stream's last tags go before its end.
                let mut last = Vec::new();
                stage.begin_stream(header, &mut last);
                if !last.is_empty() {
                    out.push(Arc::new(Piece::Measured(Columns::default(), last)));
                }
            }
            out.push(piece);
        }
        if to.send(out).is_err() {
            return false;
        }
    }
    let mut last = Vec::new();
    stage.end_stream(&mut last);
    last.is_empty()
        || to
            .send(vec![Arc::new(Piece::Measured(Columns::default(), last))])
            .is_ok()
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

/// The threads a front end gives work that it does not size itself (0: one per core): the
/// app's `--jobs`, set once as it starts ([`set_default_jobs`]).
static DEFAULT_JOBS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Makes `jobs` threads (0: one per core) what [`cores`]`(0)` gives from now on: the app's
/// `--jobs`, which its timing-model runs and sweeps then use.
pub fn set_default_jobs(jobs: usize) {
    DEFAULT_JOBS.store(jobs, std::sync::atomic::Ordering::Relaxed);
}

/// The number of lanes to use: `jobs`, or when 0 the default ([`set_default_jobs`]), one
/// per core unless a front end set it.
pub fn cores(jobs: usize) -> usize {
    let jobs = match jobs {
        0 => DEFAULT_JOBS.load(std::sync::atomic::Ordering::Relaxed),
        n => n,
    };
    if jobs > 0 {
        return jobs;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests;
