//! The timing model on a trace read from its source while the model runs. One thread reads
//! the trace, one builds each CTA's warp streams as its rows come and puts them on a board,
//! and every job (one run on one SM) runs on a thread of its own, taking each CTA's streams
//! from the board when it launches the CTA. A CTA's streams are let go once every job that
//! runs it has finished it, and the builder waits while a few CTAs wait on the board, so the
//! memory held is that of the CTAs in flight, not the trace's. At most `cores` jobs run at
//! once: a job waiting for a CTA gives its turn to another.
//!
//! The full model's first job runs on the calling thread with the caller's observer. Where
//! the observer wants the requests of several simulated SMs, the full model's other jobs keep
//! theirs in temporary files, told to it one SM after another once the job before has told
//! its own (`spool.rs`), so that it sees the requests in the order [`super::run`] gives them.
//! The report is built from every job's result in job order, so it is the same for any
//! number of threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::super::lanes::{self, Failure, Piece};
use super::spool::{Spool, Spooling};
use warpscope_core::config::SimConfig;
use warpscope_core::sim::{JobResult, Observer, Report, SimError, TimedJob, TimedPlan};
use warpscope_core::timing::{CtaFeed, CtaStreams, Hooks, Shape, StreamsBuilder, TimingError};
use warpscope_core::trace::{Columns, Kernel};

/// How often a thread waiting on the board wakes to ask its observer whether to go on.
const WAKE: Duration = Duration::from_millis(20);

/// [`super::run`] on the trace that `source` sends, read on a thread of its own (batches of
/// pieces wait in a queue of `depth`): each CTA's warp streams are built as its rows come,
/// and the jobs run on them as they are built. `reading` is told of progress while the
/// source is read (its counts mean nothing: a reader's progress is its bytes), `observer` of
/// the model's accesses once the whole trace has been read (their total is known only then)
/// and where the run ended; the observer sees each kernel when the full model's first job
/// starts it. The same report and requests as [`super::run`] on the trace read whole.
///
/// The memory held is that of the CTAs in flight (where the observer wants the requests of
/// several simulated SMs, those of the second and later SMs wait in temporary files). With
/// `max_rows`, a trace whose streams held at once would pass that many accesses is refused
/// ([`super::too_many_rows`]).
pub fn run_streamed(
    cfg: &SimConfig,
    source: lanes::Source,
    depth: usize,
    reading: &mut (dyn Observer + Send),
    observer: &mut dyn Observer,
    threads: usize,
    max_rows: Option<u64>,
) -> Result<Report, Failure> {
    let cores = lanes::cores(threads).max(1);
    let (jobs, full_jobs) = TimedJob::count(cfg).map_err(|e| Failure::Session(0, e))?;
    // Later SMs' full models wait for the earlier ones' when their requests are wanted.
    // The later SMs' full models keep their requests for the observer, in order.
    let in_order = observer.wants_requests() && full_jobs > 1;
    let spools = spools(in_order, jobs, full_jobs)?;
    let board = Board::new(cores, max_rows.unwrap_or(u64::MAX), jobs);
    let (mut fanout, pieces, used) = lanes::pipe(depth);
    let (built, read, results) = std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("read".into())
            .spawn_scoped(scope, move || {
                source(&mut fanout)?;
                Ok::<_, anyhow::Error>(fanout.flush()?)
            });
        let board = &board;
        let builder = std::thread::Builder::new()
            .name("build".into())
            .spawn_scoped(scope, move || {
                board.guard(|| {
                    board.build(
                        cfg,
                        Pieces {
                            batches: pieces,
                            used,
                        },
                        reading,
                        full_jobs,
                        jobs,
                    )
                })
            });
        if builder.is_err() {
            board.stop();
        }
        // The calling thread runs the full model's first job.
        let others = spawn_jobs(scope, board, cfg, spools);
        let mut caller = Caller {
            board,
            observer,
            announced: 0,
        };
        let mut results = Vec::with_capacity(jobs);
        results.push(Some(board.guard(|| board.job(cfg, 0, &mut caller))));
        // Wait for the rest, telling the observers of progress meanwhile, and each kept
        // request in job order.
        for job in others.into_iter().flatten() {
            while !job.is_finished() {
                caller.go_on();
                board.sleep();
            }
            let done = job.join().ok().map(|(r, spool)| match (r, spool) {
                (Ok(done), Some(spool)) => {
                    let told = spool.replay(&mut caller, |c| c.progress(0, 0));
                    if told.is_err() {
                        board.stop();
                    }
                    told.map(|()| done)
                }
                (r, _) => r,
            });
            results.push(done);
        }
        // The caller's observer hears where the run ended: the jobs may all have finished
        // before it was told of any progress since the read ended, and it may still stop the
        // run.
        caller.go_on();
        let built = builder
            .map_err(|e| SimError::Config(e.to_string()))
            .and_then(|b| {
                b.join()
                    .map_err(|_| SimError::Config("the building thread failed".into()))?
            });
        let read = reader.map_err(anyhow::Error::from).and_then(|t| {
            t.join()
                .map_err(|_| anyhow::anyhow!("the reader thread failed"))
        });
        (built, read, results)
    });
    conclude(
        cfg,
        &board,
        Ended {
            built,
            read,
            results,
        },
        observer,
    )
}

/// Where each thread of a streamed run ended: the builder (the launches and their rows), the
/// reader, and the jobs.
struct Ended {
    built: Result<Vec<(Kernel, u64)>, SimError>,
    read: anyhow::Result<anyhow::Result<()>>,
    results: Vec<Option<Result<JobResult, SimError>>>,
}

/// The run's report from where its threads ended, or the error to tell: a failed build
/// stopped the reader, and a failed job everything, so their errors are the ones to tell;
/// then the reader's, which stopped the build (so it wins over what was built before it).
fn conclude(
    cfg: &SimConfig,
    board: &Board,
    ended: Ended,
    observer: &mut dyn Observer,
) -> Result<Report, Failure> {
    let Ended {
        built,
        read,
        results,
    } = ended;
    let built = match built {
        Err(SimError::Cancelled) => None,
        Err(e) => return Err(Failure::Session(0, e)),
        Ok(headers) => Some(headers),
    };
    let (done, cancelled) = super::gather_results(results).map_err(|e| Failure::Session(0, e))?;
    if board.cancelled.load(Ordering::Relaxed) {
        return Err(Failure::Session(0, SimError::Cancelled));
    }
    read.and_then(|r| r).map_err(Failure::Other)?;
    let headers = match built {
        Some(headers) if !cancelled && !board.stopped() => headers,
        _ => return Err(Failure::Session(0, SimError::Cancelled)),
    };
    let (launches, rows): (Vec<Kernel>, Vec<u64>) = headers.into_iter().unzip();
    let plan = TimedPlan::read(cfg, &launches, rows).map_err(|e| Failure::Session(0, e))?;
    plan.finish(done, observer)
        .map_err(|e| Failure::Session(0, e))
}

/// A job's result, and the spool of requests it kept for the observer.
type JobDone = (Result<JobResult, SimError>, Option<Spool>);

/// Starts every job but the first (which the calling thread runs), each with its spool; a
/// job that cannot start stops the run (the CTAs would wait for it for ever).
fn spawn_jobs<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    board: &'scope Board,
    cfg: &'scope SimConfig,
    spools: Vec<Option<Spool>>,
) -> Vec<Option<std::thread::ScopedJoinHandle<'scope, JobDone>>> {
    let mut others = Vec::new();
    for (j, spool) in spools.into_iter().enumerate().skip(1) {
        let job = std::thread::Builder::new()
            .name(format!("job {j}"))
            .spawn_scoped(scope, move || {
                let mut spool = spool;
                let r = match spool.as_mut() {
                    Some(spool) => {
                        let go_on = || !board.stopped();
                        board.guard(|| board.job(cfg, j, &mut Spooling { spool, go_on }))
                    }
                    None => board.guard(|| board.job(cfg, j, &mut Quiet(board))),
                };
                (r, spool)
            });
        if job.is_err() {
            board.stop();
        }
        others.push(job.ok());
    }
    others
}

/// A spool for each job whose requests wait for the earlier jobs' (`in_order`: the later SMs'
/// full models, when the observer wants requests in order).
fn spools(in_order: bool, jobs: usize, full_jobs: usize) -> Result<Vec<Option<Spool>>, Failure> {
    (0..jobs)
        .map(|j| {
            let kept = in_order && j > 0 && j < full_jobs;
            kept.then(Spool::new)
                .transpose()
                .map_err(|e| Failure::Session(0, e))
        })
        .collect()
}

/// The pieces a source sends the builder, and where it gives back their rows once built
/// from.
struct Pieces {
    batches: Receiver<lanes::Batch>,
    used: Sender<Columns>,
}

/// What the builder and the jobs share.
struct Board {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    /// An observer stopped the run (not a failure).
    cancelled: AtomicBool,
    /// Accesses issued by every job, for progress.
    rows: AtomicU64,
    /// What progress counts to, once the read has ended (`u64::MAX` before).
    total: AtomicU64,
    cores: usize,
    max_rows: u64,
}

#[derive(Default)]
struct State {
    kernels: Vec<Posted>,
    /// The read has ended: every kernel is posted.
    ended: bool,
    /// CTAs on the board, and their accesses.
    held: usize,
    held_rows: u64,
    /// Jobs running (not waiting on the board).
    running: usize,
    /// Jobs not finished, and the CTAs (kernel, CTA) that those of them waiting for a CTA
    /// not yet on the board wait for: when every job waits so, the builder puts CTAs past
    /// the window up to the one waited for (a job that runs every SM at once may need a CTA
    /// past the window before it takes those on the board, which wait for its other SMs).
    jobs_left: usize,
    starving: Vec<(usize, u32)>,
    /// The builder waits for room on the board (only then does a job that starves wake it).
    builder_waits: bool,
    /// Streams of CTAs every job has finished, for the builder to build in.
    spare: Vec<CtaStreams>,
}

impl State {
    /// The CTAs waited for that are not yet decided (a job woken for one that has come may
    /// not have taken it yet: it no longer starves).
    fn starving_now(&self) -> impl Iterator<Item = &(usize, u32)> {
        self.starving
            .iter()
            .filter(|&&(k, c)| self.kernels.get(k).is_none_or(|p| c >= p.decided))
    }

    /// Every job not finished waits for a CTA not yet decided.
    fn all_starve(&self) -> bool {
        self.jobs_left > 0 && self.starving_now().count() >= self.jobs_left
    }

    /// Every job waits for a CTA not yet decided, one of them for kernel `ki`'s CTA `cta` or
    /// a later one: the builder must put `cta` even past the window, or wait for ever.
    fn starved_for(&self, ki: usize, cta: u32) -> bool {
        self.all_starve() && self.starving_now().any(|&(k, c)| k == ki && cta <= c)
    }
}

/// One kernel as posted: its header (instructions found as it is read are added), its
/// warps' shape, and its CTAs' streams until every job that runs them has taken them.
struct Posted {
    header: Kernel,
    shape: Shape,
    /// The CTAs on the board (at most `window`): their streams and the jobs yet to take them.
    ctas: FxHashMap<u32, (Arc<CtaStreams>, u32)>,
    /// Every CTA below this is decided: on the board, taken, or without rows.
    decided: u32,
    /// The most CTAs the board holds before the builder waits.
    window: usize,
}

impl Board {
    fn new(cores: usize, max_rows: u64, jobs: usize) -> Self {
        Board {
            state: Mutex::new(State {
                jobs_left: jobs,
                ..State::default()
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            rows: AtomicU64::new(0),
            total: AtomicU64::new(u64::MAX),
            cores,
            max_rows,
        }
    }

    /// Runs a thread's `work`; if it panics, every other thread stops (they would wait on the
    /// board for it for ever).
    fn guard<T>(&self, work: impl FnOnce() -> Result<T, SimError>) -> Result<T, SimError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|_| {
            self.stop();
            Err(SimError::Config(
                "a thread of the timing model failed".into(),
            ))
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, SimError> {
        self.state
            .lock()
            .map_err(|_| SimError::Config("a thread of the timing model failed".into()))
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        // Taking the lock orders the flag before the waiters' next look.
        drop(self.state.lock());
        self.changed.notify_all();
    }

    /// An observer stops the run.
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        self.stop();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn sleep(&self) {
        if let Ok(st) = self.state.lock() {
            let _ = self.changed.wait_timeout(st, WAKE);
        }
    }

    /// Waits on the board (at most [`WAKE`]); an error when the run stopped.
    fn wait<'g>(&self, st: MutexGuard<'g, State>) -> Result<MutexGuard<'g, State>, SimError> {
        if self.stopped() {
            return Err(SimError::Cancelled);
        }
        let (st, _) = self
            .changed
            .wait_timeout(st, WAKE)
            .map_err(|_| SimError::Config("a thread of the timing model failed".into()))?;
        if self.stopped() {
            return Err(SimError::Cancelled);
        }
        Ok(st)
    }

    /// The builder: posts every kernel and the streams of its CTAs from the pieces as they
    /// come; returns the kernels' headers and rows. A failure stops every job.
    fn build(
        &self,
        cfg: &SimConfig,
        pieces: Pieces,
        reading: &mut dyn Observer,
        full_jobs: usize,
        jobs: usize,
    ) -> Result<Vec<(Kernel, u64)>, SimError> {
        let r = self.build_all(cfg, pieces, reading, full_jobs, jobs);
        if r.is_err() {
            self.stop();
        }
        r
    }

    /// Builds each CTA's streams from the pieces as they come; gives back the rows of each
    /// piece built from (`used`).
    fn build_all(
        &self,
        cfg: &SimConfig,
        Pieces { batches, used }: Pieces,
        reading: &mut dyn Observer,
        full_jobs: usize,
        jobs: usize,
    ) -> Result<Vec<(Kernel, u64)>, SimError> {
        // Each CTA is run by every run of its SM (when that SM is simulated).
        let takers = (jobs / full_jobs.max(1)) as u32;
        let sims = full_jobs as u32;
        let mut headers: Vec<(Kernel, u64)> = Vec::new();
        let mut open = None;
        let failed = |k: &Kernel, e: TimingError| SimError::Timing {
            kernel: k.name.clone(),
            source: e,
        };
        for piece in batches.iter().flatten() {
            if !reading.progress(0, 0) {
                self.cancel();
            }
            if self.stopped() {
                return Err(SimError::Cancelled);
            }
            match (&*piece, open.as_mut()) {
                (Piece::Kernel(k), None) => {
                    let mut b = TimedPlan::builder(cfg, k)?;
                    let ki = self.post(&b, k.header(), sims, cfg)?;
                    let starts = k.thread_starts();
                    for cta in 0..k.num_ctas() {
                        if let Some(built) = b.add_held(k, &starts, cta) {
                            self.put(&mut b, ki, cta, built, takers)?;
                        }
                    }
                    self.decide(ki, k.num_ctas())?;
                    headers.push((k.header(), k.len() as u64));
                }
                (Piece::Begin(header), None) => {
                    let b = TimedPlan::builder(cfg, header)?;
                    let ki = self.post(&b, header.clone(), sims, cfg)?;
                    headers.push((header.clone(), 0));
                    open = Some((b, ki));
                }
                (Piece::Cta(cta, rows, _), Some((b, ki))) => {
                    let Some((header, n)) = headers.last_mut() else {
                        break;
                    };
                    *n += rows.len() as u64;
                    match b.add_cta(*cta, rows).map_err(|e| failed(header, e))? {
                        Some(built) => self.put(b, *ki, *cta, built, takers)?,
                        None => self.decide(*ki, cta + 1)?,
                    }
                }
                (Piece::Instructions(added), Some((_, ki))) => {
                    if let Some((header, _)) = headers.last_mut() {
                        header.instructions.extend_from_slice(added);
                    }
                    let mut st = self.lock()?;
                    if let Some(k) = st.kernels.get_mut(*ki) {
                        k.header.instructions.extend_from_slice(added);
                    }
                }
                (Piece::End, Some((_, ki))) => {
                    self.decide(*ki, u32::MAX)?;
                    open = None;
                }
                // A recorded issue order (an NVBit log, a Dinero trace) has no per-thread
                // streams.
                (Piece::Stream(header), None) => {
                    return Err(failed(header, TimingError::IssuedOrder));
                }
                (Piece::Issued(..) | Piece::Rows(..) | Piece::Measured(..), _) => {
                    let name = headers.last().map(|h| h.0.name.clone()).unwrap_or_default();
                    return Err(SimError::Timing {
                        kernel: name,
                        source: TimingError::IssuedOrder,
                    });
                }
                _ => {
                    return Err(SimError::Config(
                        "the trace's reader gave its pieces out of order".into(),
                    ))
                }
            }
            if let Some(rows) = Arc::into_inner(piece).and_then(Piece::into_rows) {
                // The reader may be done: then the rows are let go here.
                let _ = used.send(rows);
            }
        }
        if open.is_some() || self.stopped() {
            // The reader stopped inside a kernel: its error tells why.
            return Err(SimError::Cancelled);
        }
        let rows: u64 = headers.iter().map(|h| h.1).sum();
        let total = TimedPlan::progress_total(cfg, rows)?;
        self.lock()?.ended = true;
        self.total.store(total, Ordering::Relaxed);
        self.changed.notify_all();
        Ok(headers)
    }

    /// Posts a kernel; its number.
    fn post(
        &self,
        b: &StreamsBuilder,
        header: Kernel,
        sims: u32,
        cfg: &SimConfig,
    ) -> Result<usize, SimError> {
        let shape = b.shape();
        // Room for every simulated SM's resident CTAs twice over, and one a core.
        let window = 2 * shape.resident_max(&cfg.gpu) as usize * sims as usize + self.cores;
        let mut st = self.lock()?;
        st.kernels.push(Posted {
            header,
            shape,
            ctas: FxHashMap::default(),
            decided: 0,
            window,
        });
        self.changed.notify_all();
        Ok(st.kernels.len() - 1)
    }

    /// Puts CTA `cta`'s streams on the board for `takers` jobs, once there is room; gives
    /// `b` the room of the CTAs done with.
    fn put(
        &self,
        b: &mut StreamsBuilder,
        ki: usize,
        cta: u32,
        built: CtaStreams,
        takers: u32,
    ) -> Result<(), SimError> {
        let rows = built.rows();
        let mut st = self.lock()?;
        for spare in st.spare.drain(..) {
            b.recycle(spare);
        }
        loop {
            let window = st.kernels.get(ki).map_or(0, |k| k.window);
            if st.held < window || st.starved_for(ki, cta) {
                break;
            }
            st.builder_waits = true;
            st = self.wait(st)?;
            st.builder_waits = false;
        }
        if st.held_rows + rows > self.max_rows {
            return Err(super::too_many_rows(self.max_rows));
        }
        st.held += 1;
        st.held_rows += rows;
        if let Some(k) = st.kernels.get_mut(ki) {
            k.ctas.insert(cta, (Arc::new(built), takers));
            k.decided = k.decided.max(cta + 1);
        }
        self.changed.notify_all();
        Ok(())
    }

    /// Every CTA of kernel `ki` below `upto` is decided.
    fn decide(&self, ki: usize, upto: u32) -> Result<(), SimError> {
        let mut st = self.lock()?;
        if let Some(k) = st.kernels.get_mut(ki) {
            k.decided = k.decided.max(upto);
        }
        self.changed.notify_all();
        Ok(())
    }

    /// Runs job `j` on every kernel as it is posted.
    fn job(
        &self,
        cfg: &SimConfig,
        j: usize,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, SimError> {
        let mut job = TimedJob::new(cfg, j)?;
        let mut feed = Feed {
            board: self,
            kernel: 0,
            instructions: 0,
            turn: false,
        };
        let mut counting = Counting {
            observer,
            board: self,
            reported: 0,
        };
        let r = self.job_kernels(&mut job, &mut feed, &mut counting);
        feed.give_turn();
        if let Ok(mut st) = self.state.lock() {
            st.jobs_left = st.jobs_left.saturating_sub(1);
            self.changed.notify_all();
        }
        if r.is_err() {
            self.stop();
        }
        let done = r.map(|()| job.finish())?;
        let rest = done.rows().saturating_sub(counting.reported);
        self.rows.fetch_add(rest, Ordering::Relaxed);
        Ok(done)
    }

    fn job_kernels(
        &self,
        job: &mut TimedJob,
        feed: &mut Feed,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        for ki in 0.. {
            // Wait for the kernel, or the end of the read.
            let (header, shape) = {
                let mut st = self.lock()?;
                loop {
                    if let Some(k) = st.kernels.get(ki) {
                        break (k.header.clone(), k.shape);
                    }
                    if st.ended {
                        return Ok(());
                    }
                    feed.give_turn_locked(&mut st);
                    drop(self.wait(st)?);
                    if !observer.progress(0, 0) {
                        return Err(SimError::Cancelled);
                    }
                    st = self.lock()?;
                }
            };
            observer.on_kernel(ki as u32, &header);
            feed.kernel = ki;
            feed.instructions = header.instructions.len();
            job.kernel(&header, shape, feed, observer, 0, 0)?;
        }
        Ok(())
    }
}

/// A job's way to its CTAs on the board: it takes its turn to run (one of `cores`) when it
/// has a CTA, and gives it while it waits for one.
struct Feed<'b> {
    board: &'b Board,
    kernel: usize,
    /// The kernel's instructions the job has been told of.
    instructions: usize,
    /// The job holds a turn.
    turn: bool,
}

impl Feed<'_> {
    fn give_turn(&mut self) {
        if let Ok(mut st) = self.board.state.lock() {
            self.give_turn_locked(&mut st);
        }
    }

    fn give_turn_locked(&mut self, st: &mut State) {
        if self.turn {
            self.turn = false;
            st.running -= 1;
            self.board.changed.notify_all();
        }
    }
}

impl CtaFeed for Feed<'_> {
    fn done(&mut self, streams: Arc<CtaStreams>) {
        // The last job to finish the CTA gives its room to the builder.
        if let Some(spare) = Arc::into_inner(streams) {
            if let Ok(mut st) = self.board.state.lock() {
                st.spare.push(spare);
            }
        }
    }

    fn cta(&mut self, cta: u32, hooks: &mut dyn Hooks) -> Result<Arc<CtaStreams>, TimingError> {
        let board = self.board;
        let stopped = |_| TimingError::Cancelled;
        let mut st = board.lock().map_err(stopped)?;
        // Take the CTA from the board, waiting until it is decided.
        let got = loop {
            let Some(k) = st.kernels.get_mut(self.kernel) else {
                return Err(TimingError::Cancelled);
            };
            let (decided, on_board) = (k.decided, k.ctas.get_mut(&cta));
            match on_board {
                Some((streams, left)) => {
                    let streams = streams.clone();
                    *left -= 1;
                    if *left == 0 {
                        k.ctas.remove(&cta);
                        st.held_rows -= streams.rows();
                        st.held -= 1;
                        board.changed.notify_all();
                    }
                    break streams;
                }
                _ if cta < decided => break Arc::new(CtaStreams::default()),
                _ => {}
            }
            self.give_turn_locked(&mut st);
            let want = (self.kernel, cta);
            st.starving.push(want);
            if st.builder_waits && st.all_starve() {
                // Every job waits, and so does the builder: it must go past the window.
                board.changed.notify_all();
            }
            st = board.wait(st).map_err(stopped)?;
            drop(st);
            let go_on = hooks.progress(0);
            st = board.lock().map_err(stopped)?;
            if let Some(i) = st.starving.iter().position(|&w| w == want) {
                st.starving.swap_remove(i);
            }
            if !go_on {
                return Err(TimingError::Cancelled);
            }
        };
        // Instructions found since, before the CTA's requests.
        let added = match st.kernels.get(self.kernel) {
            Some(k) if k.header.instructions.len() > self.instructions => {
                k.header.instructions[self.instructions..].to_vec()
            }
            _ => Vec::new(),
        };
        if !added.is_empty() {
            self.instructions += added.len();
            drop(st);
            hooks.more_instructions(&added);
            st = board.lock().map_err(stopped)?;
        }
        // Then wait for a turn to run.
        while !self.turn {
            if st.running < board.cores {
                st.running += 1;
                self.turn = true;
                break;
            }
            st = board.wait(st).map_err(stopped)?;
            drop(st);
            if !hooks.progress(0) {
                return Err(TimingError::Cancelled);
            }
            st = board.lock().map_err(stopped)?;
        }
        Ok(got)
    }
}

/// The observer of the jobs on threads of their own: their accesses go to the board's
/// count; they stop when the run does.
struct Quiet<'b>(&'b Board);

impl Observer for Quiet<'_> {
    fn wants_requests(&self) -> bool {
        false
    }
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        !self.0.stopped()
    }
}

/// A job's observer: its accesses go to the board's count, for progress.
struct Counting<'a, 'b> {
    observer: &'a mut dyn Observer,
    board: &'b Board,
    /// The job's accesses counted so far.
    reported: u64,
}

impl Observer for Counting<'_, '_> {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.observer.on_kernel(kernel, header);
    }
    fn on_instructions(&mut self, kernel: u32, added: &[warpscope_core::trace::Instruction]) {
        self.observer.on_instructions(kernel, added);
    }
    fn on_request(&mut self, event: &warpscope_core::sim::RequestEvent) {
        self.observer.on_request(event);
    }
    fn on_l2(&mut self, event: &warpscope_core::l2::L2Event) {
        self.observer.on_l2(event);
    }
    fn wants_requests(&self) -> bool {
        self.observer.wants_requests()
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        let more = done.saturating_sub(self.reported);
        self.reported = self.reported.max(done);
        self.board.rows.fetch_add(more, Ordering::Relaxed);
        self.observer.progress(done, total)
    }
}

/// The calling thread's observer: the caller's, for the full model's jobs.
struct Caller<'b, 'o> {
    board: &'b Board,
    observer: &'o mut dyn Observer,
    /// Kernels the observer has been told of.
    announced: usize,
}

impl Caller<'_, '_> {
    /// Tells the caller's observer of every job's accesses, once the trace has been read
    /// (the reading observer is told while it is); whether to go on.
    fn go_on(&mut self) -> bool {
        if self.board.stopped() {
            return false;
        }
        let go = match self.board.total.load(Ordering::Relaxed) {
            u64::MAX => true,
            total => {
                let done = self.board.rows.load(Ordering::Relaxed).min(total);
                self.observer.progress(done, total)
            }
        };
        if !go {
            self.board.cancel();
        }
        go
    }
}

impl Observer for Caller<'_, '_> {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        if kernel as usize == self.announced {
            self.announced += 1;
            self.observer.on_kernel(kernel, header);
        }
    }
    fn on_instructions(&mut self, kernel: u32, added: &[warpscope_core::trace::Instruction]) {
        self.observer.on_instructions(kernel, added);
    }
    fn on_request(&mut self, event: &warpscope_core::sim::RequestEvent) {
        self.observer.on_request(event);
    }
    fn on_l2(&mut self, event: &warpscope_core::l2::L2Event) {
        self.observer.on_l2(event);
    }
    fn wants_requests(&self) -> bool {
        self.observer.wants_requests()
    }
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        self.go_on()
    }
}
