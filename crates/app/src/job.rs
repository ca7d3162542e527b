//! One way to run slow work off the UI thread. [`Job::spawn`] starts the work on a thread of
//! its own and returns a typed handle; its owner keeps it in an `Option<Job<T>>` and asks it
//! each frame whether it is done ([`Job::poll`]). The work reports progress and checks for
//! cancellation through one [`Progress`]; dropping the handle cancels the work, so replacing
//! an owner's job with a newer one cancels the older one, and a result can only reach the
//! owner that asked for it. A browser page starts no threads: there (the web build) a job is
//! work done in slices between the browser's tasks ([`Job::stepped`], `tasks.rs`; in frames
//! where the page offers no message channel), work done elsewhere and finished
//! through a [`Completion`] ([`Job::pending`]; a page's worker, stopped by the job's guard,
//! [`Job::guarded`]), or else run on the UI thread at the job's first poll ([`Job::on_poll`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;

/// Called from a job's thread when it finishes (the app asks for a repaint).
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Progress and cancellation shared between a job's work and its handle.
#[derive(Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    cancel: AtomicBool,
    /// Whether the job asks for a frame itself when its progress changes (a page's worker's
    /// messages do), so that the UI need not draw frames to watch it.
    wakes: AtomicBool,
    /// Told of every change (done, total): how a page's worker passes its progress on to the
    /// page ([`Progress::told`]).
    listener: Option<Listener>,
}

/// What [`Progress::told`] tells.
pub type Listener = Box<dyn Fn(u64, u64) + Send + Sync>;

impl Progress {
    /// Progress that tells `listener` of every change.
    // Only the web build's worker tells anyone (and the tests).
    #[cfg_attr(not(any(test, target_arch = "wasm32")), allow(dead_code))]
    pub fn told(listener: Listener) -> Self {
        Progress {
            listener: Some(listener),
            ..Progress::default()
        }
    }
    /// Records `done` of `total` and says whether to go on: the one progress relay of every
    /// job (simulation observers, the communication analysis, generators, file reads).
    pub fn report(&self, done: u64, total: u64) -> bool {
        self.done.store(done, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.tell();
        !self.cancelled()
    }
    /// Sets the amount the work will count up to.
    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
        self.tell();
    }
    /// Adds `n` to the amount done (bytes read).
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
        self.tell();
    }
    fn tell(&self) {
        if let Some(l) = &self.listener {
            l(
                self.done.load(Ordering::Relaxed),
                self.total.load(Ordering::Relaxed),
            );
        }
    }
    /// Fraction done, if the total is known.
    pub fn fraction(&self) -> Option<f32> {
        let total = self.total.load(Ordering::Relaxed);
        (total > 0)
            .then(|| (self.done.load(Ordering::Relaxed) as f64 / total as f64).min(1.0) as f32)
    }
    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
    /// Says that the job asks for a frame itself when its progress changes.
    // Only the web build's worker jobs do (and the tests').
    #[cfg_attr(not(any(test, target_arch = "wasm32")), allow(dead_code))]
    pub fn set_wakes(&self) {
        self.wakes.store(true, Ordering::Relaxed);
    }
    /// Whether the UI must draw frames to show this job's progress move (it does not ask).
    pub fn watched(&self) -> bool {
        !self.wakes.load(Ordering::Relaxed)
    }
}

/// Why a job gave no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobError {
    /// It was cancelled (by its handle, or dropped).
    Cancelled,
    /// It failed; the message is for the status bar.
    Failed(String),
}

/// A job's result.
pub type Finished<T> = Result<T, JobError>;

/// A running job: its label, progress and, once done, its result.
pub struct Job<T> {
    label: String,
    progress: Arc<Progress>,
    rx: Receiver<Finished<T>>,
    /// The work of a [`Job::on_poll`] job (the web build's), waiting for its first poll.
    deferred: Option<Box<dyn FnOnce() + Send>>,
    /// The work of a [`Job::stepped`] job, a slice each poll, and who to wake for the next.
    steps: Option<(Box<dyn Step<T>>, Wake)>,
    /// What stops work done elsewhere ([`Job::guarded`]: a page's worker), dropped with the
    /// job or when it is cancelled.
    guard: Option<Box<dyn Send>>,
}

/// Work done a slice at a time on the caller's thread ([`Job::stepped`]): each call does
/// some, until about `until`, and returns the result once there is one.
pub trait Step<T>: Send {
    fn step(&mut self, progress: &Progress, until: web_time::Instant) -> Option<Finished<T>>;
}

/// How long a stepped job's slice runs: half a 30 Hz frame, so the page keeps drawing at
/// 30 frames a second or more while it runs (and stays under the 50 ms a browser counts as a
/// long task).
const SLICE: std::time::Duration = std::time::Duration::from_millis(16);

impl<T: Send + 'static> Job<T> {
    /// Starts `work` on a thread of its own; `label` is what the status bar shows while it
    /// runs, `wake` is called when it finishes.
    pub fn spawn(
        label: impl Into<String>,
        wake: &Wake,
        work: impl FnOnce(&Arc<Progress>) -> Finished<T> + Send + 'static,
    ) -> Self {
        // A browser page has no threads to start (the web build).
        if cfg!(target_arch = "wasm32") {
            return Job::on_poll(label, wake, work);
        }
        let (label, progress, rx, run) = Job::parts(label, wake, work);
        let spawned = std::thread::Builder::new()
            .name(format!("warpscope: {label}"))
            .spawn(run);
        if let Err(e) = spawned {
            let (tx, failed) = channel();
            let _ = tx.send(Err(JobError::Failed(format!(
                "could not start a worker thread: {e}"
            ))));
            return Job {
                label,
                progress,
                rx: failed,
                deferred: None,
                steps: None,
                guard: None,
            };
        }
        Job {
            label,
            progress,
            rx,
            deferred: None,
            steps: None,
            guard: None,
        }
    }

    /// A job done in slices on the caller's thread: each poll runs `work` for a slice
    /// ([`SLICE`]) and asks for the next frame, so the UI draws (and its progress bar and
    /// Cancel work) while it runs. In a page the slices run between the browser's tasks
    /// instead (`tasks.rs`): the web build's simulations, explanations, measurements and
    /// sweeps, which cannot run on a thread there.
    pub fn stepped(label: impl Into<String>, wake: &Wake, work: impl Step<T> + 'static) -> Self {
        #[cfg(target_arch = "wasm32")]
        if crate::tasks::available() {
            return Job::in_tasks(label, wake, work);
        }
        let (_tx, rx) = channel();
        Job {
            label: label.into(),
            progress: Arc::new(Progress::default()),
            rx,
            deferred: None,
            steps: Some((Box::new(work), wake.clone())),
            guard: None,
        }
    }

    /// [`Job::stepped`] on a page: the slices run between the browser's tasks
    /// (`tasks.rs`), not inside frames; the job asks for a frame when it finishes and now and
    /// then to show its progress.
    #[cfg(target_arch = "wasm32")]
    fn in_tasks(label: impl Into<String>, wake: &Wake, mut work: impl Step<T> + 'static) -> Self {
        let progress = Arc::new(Progress::default());
        progress.set_wakes();
        let (tx, rx) = channel();
        let (p, wake) = (progress.clone(), wake.clone());
        let mut framed = web_time::Instant::now();
        let task = Box::new(move |until: web_time::Instant| {
            let done = if p.cancelled() {
                Some(Err(JobError::Cancelled))
            } else {
                work.step(&p, until)
            };
            let now = web_time::Instant::now();
            match done {
                Some(result) => {
                    // The handle is gone when the job was dropped: nobody wants the result.
                    let _ = tx.send(result);
                    wake();
                    true
                }
                None => {
                    if now.duration_since(framed) >= crate::tasks::FRAME_EVERY {
                        framed = now;
                        wake();
                    }
                    false
                }
            }
        });
        let mut job = Job {
            label: label.into(),
            progress,
            rx,
            deferred: None,
            steps: None,
            guard: None,
        };
        if let Err(e) = crate::tasks::start(task) {
            let (tx, rx) = channel();
            let _ = tx.send(Err(JobError::Failed(format!(
                "could not start the work: {e}"
            ))));
            job.rx = rx;
        }
        job
    }

    /// [`Job::spawn`] without a thread: the work runs on the caller's thread when the job is
    /// first polled, a frame after the one that started it (so that frame shows the job in the
    /// status bar); a job cancelled or dropped before then never runs it. The web build's
    /// jobs, until they run in a Web Worker.
    pub fn on_poll(
        label: impl Into<String>,
        wake: &Wake,
        work: impl FnOnce(&Arc<Progress>) -> Finished<T> + Send + 'static,
    ) -> Self {
        let (label, progress, rx, run) = Job::parts(label, wake, work);
        Job {
            label,
            progress,
            rx,
            deferred: Some(Box::new(run)),
            steps: None,
            guard: None,
        }
    }

    /// A job's label, progress and receiver, and its work wrapped to send its result.
    #[allow(clippy::type_complexity)]
    fn parts(
        label: impl Into<String>,
        wake: &Wake,
        work: impl FnOnce(&Arc<Progress>) -> Finished<T> + Send + 'static,
    ) -> (
        String,
        Arc<Progress>,
        Receiver<Finished<T>>,
        impl FnOnce() + Send + 'static,
    ) {
        let progress = Arc::new(Progress::default());
        let (tx, rx) = channel();
        let p = progress.clone();
        let wake = wake.clone();
        let run = move || {
            let result = match work(&p) {
                Err(JobError::Failed(_)) if p.cancelled() => Err(JobError::Cancelled),
                r => r,
            };
            // The handle is gone when the job was dropped: nobody wants the result.
            let _ = tx.send(result);
            wake();
        };
        (label.into(), progress, rx, run)
    }
}

impl<T> Job<T> {
    /// A job whose work is done elsewhere (a callback of the window backend) and finished
    /// through the [`Completion`] given with it.
    pub fn pending(label: impl Into<String>, wake: &Wake) -> (Self, Completion<T>) {
        let (tx, rx) = channel();
        let job = Job {
            label: label.into(),
            progress: Arc::new(Progress::default()),
            rx,
            deferred: None,
            steps: None,
            guard: None,
        };
        let done = Completion {
            tx,
            wake: wake.clone(),
        };
        (job, done)
    }
    /// The job with `guard`, which stops its work when dropped: dropped with the job, or at
    /// its first poll after it is cancelled (the job then finishes as cancelled).
    // Only the web build's worker jobs are guarded (and the tests').
    #[cfg_attr(not(any(test, target_arch = "wasm32")), allow(dead_code))]
    pub fn guarded(mut self, guard: Box<dyn Send>) -> Self {
        self.guard = Some(guard);
        self
    }
    pub fn label(&self) -> &str {
        &self.label
    }
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }
    /// Asks the work to stop; the job then finishes with [`JobError::Cancelled`] (or its
    /// result, if it was done first).
    pub fn cancel(&self) {
        self.progress.cancel();
    }
    /// The result, once the job has finished (given once; `None` while it runs).
    pub fn poll(&mut self) -> Option<Finished<T>> {
        if let Some((work, wake)) = &mut self.steps {
            let done = if self.progress.cancelled() {
                Some(Err(JobError::Cancelled))
            } else {
                work.step(&self.progress, web_time::Instant::now() + SLICE)
            };
            if done.is_some() {
                self.steps = None;
            } else {
                wake();
            }
            return done;
        }
        if self.guard.is_some() && self.progress.cancelled() {
            self.guard = None;
            return Some(Err(JobError::Cancelled));
        }
        self.run_deferred();
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(stopped())),
        }
    }
    /// Waits up to `timeout` for the result (tests and the screenshot mode).
    #[cfg(any(test, feature = "bench"))]
    pub fn wait(&mut self, timeout: std::time::Duration) -> Option<Finished<T>> {
        if self.steps.is_some() {
            let until = web_time::Instant::now() + timeout;
            while web_time::Instant::now() < until {
                if let Some(r) = self.poll() {
                    return Some(r);
                }
            }
            return None;
        }
        self.run_deferred();
        match self.rx.recv_timeout(timeout) {
            Ok(r) => Some(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Some(Err(stopped())),
        }
    }
}

impl<T> Job<T> {
    /// Runs the work of a [`Job::on_poll`] job, unless it was cancelled first.
    fn run_deferred(&mut self) {
        if let Some(run) = self.deferred.take() {
            if self.progress.cancelled() {
                // Dropping the work drops its sender: the result is the cancellation.
                self.rx = {
                    let (tx, rx) = channel();
                    let _ = tx.send(Err(JobError::Cancelled));
                    rx
                };
            } else {
                run();
            }
        }
    }
}

/// What finishes a [`Job::pending`] job.
pub struct Completion<T> {
    tx: Sender<Finished<T>>,
    wake: Wake,
}

impl<T> Completion<T> {
    /// Hands the job its result (dropped, the job fails as one whose thread stopped).
    pub fn finish(self, result: Finished<T>) {
        // The handle is gone when the job was dropped: nobody wants the result.
        let _ = self.tx.send(result);
        (self.wake)();
    }
}

/// The result of a job whose thread ended without one (it panicked).
fn stopped() -> JobError {
    JobError::Failed("the job stopped unexpectedly".into())
}

impl<T> Drop for Job<T> {
    fn drop(&mut self) {
        self.progress.cancel();
    }
}

/// Takes the result of the job in `slot`, if it has finished; the slot is then empty.
pub fn take_finished<T>(slot: &mut Option<Job<T>>) -> Option<Finished<T>> {
    let r = slot.as_mut()?.poll()?;
    *slot = None;
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn wake() -> Wake {
        Arc::new(|| {})
    }

    #[test]
    fn a_job_run_on_poll_runs_at_its_first_poll_and_not_once_cancelled() {
        let ran = Arc::new(AtomicU64::new(0));
        let r = ran.clone();
        let mut j = Job::on_poll("later", &wake(), move |p| {
            r.fetch_add(1, Ordering::Relaxed);
            p.report(3, 3);
            Ok(7)
        });
        assert_eq!(ran.load(Ordering::Relaxed), 0, "ran before it was polled");
        assert_eq!(j.poll(), Some(Ok(7)));
        assert_eq!(j.progress().fraction(), Some(1.0));
        assert_eq!(ran.load(Ordering::Relaxed), 1);
        let r = ran.clone();
        let mut j: Job<u32> = Job::on_poll("dropped", &wake(), move |_| {
            r.fetch_add(1, Ordering::Relaxed);
            Ok(1)
        });
        j.cancel();
        assert_eq!(j.poll(), Some(Err(JobError::Cancelled)));
        assert_eq!(ran.load(Ordering::Relaxed), 1, "a cancelled job's work ran");
    }

    #[test]
    fn a_job_reports_progress_and_its_result() {
        let (go, wait) = channel::<()>();
        let mut j = Job::spawn("count", &wake(), move |p| {
            p.report(1, 4);
            let _ = wait.recv();
            Ok(7)
        });
        while j.progress().fraction().is_none() {
            std::thread::yield_now();
        }
        assert_eq!(j.progress().fraction(), Some(0.25));
        assert_eq!(j.poll(), None);
        go.send(()).unwrap();
        assert_eq!(j.wait(Duration::from_secs(10)), Some(Ok(7)));
        assert_eq!(j.label(), "count");
    }

    #[test]
    fn cancelling_or_dropping_stops_the_work() {
        let looping = |p: &Arc<Progress>| {
            while p.report(0, 1) {
                std::thread::yield_now();
            }
            Err(JobError::Failed("stopped".into()))
        };
        let mut j: Job<()> = Job::spawn("loop", &wake(), looping);
        j.cancel();
        assert_eq!(
            j.wait(Duration::from_secs(10)),
            Some(Err(JobError::Cancelled))
        );
        // Replacing a job drops, and so cancels, the old one.
        let seen = Arc::new(AtomicBool::new(false));
        let s = seen.clone();
        let old = Job::spawn("old", &wake(), move |p: &Arc<Progress>| {
            while !p.cancelled() {
                std::thread::yield_now();
            }
            s.store(true, Ordering::Relaxed);
            Ok(0)
        });
        let mut slot = Some(old);
        assert!(slot.as_ref().is_some_and(|j| !j.progress().cancelled()));
        slot = Some(Job::spawn("new", &wake(), |_| Ok(1)));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !seen.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(seen.load(Ordering::Relaxed));
        while slot.is_some() {
            if let Some(r) = take_finished(&mut slot) {
                assert_eq!(r, Ok(1));
            }
        }
    }

    #[test]
    fn a_pending_job_finishes_when_completed() {
        let (mut j, done) = Job::<&str>::pending("png", &wake());
        assert_eq!(j.poll(), None);
        std::thread::spawn(move || done.finish(Ok("wrote")));
        assert_eq!(j.wait(Duration::from_secs(10)), Some(Ok("wrote")));
        let (mut dropped, done) = Job::<()>::pending("png", &wake());
        drop(done);
        assert!(matches!(dropped.poll(), Some(Err(JobError::Failed(_)))));
    }

    #[test]
    fn a_job_that_panics_fails() {
        let mut j: Job<u32> = Job::spawn("boom", &wake(), |_| panic!("boom"));
        assert_eq!(
            j.wait(Duration::from_secs(10)),
            Some(Err(JobError::Failed("the job stopped unexpectedly".into())))
        );
    }

    /// Sets its flag when dropped.
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_guarded_job_stops_its_work_when_cancelled_or_dropped() {
        let stopped = Arc::new(AtomicBool::new(false));
        let (job, done) = Job::<u32>::pending("remote", &wake());
        let mut job = job.guarded(Box::new(Flag(stopped.clone())));
        assert_eq!(job.poll(), None);
        assert!(!stopped.load(Ordering::Relaxed));
        job.cancel();
        assert_eq!(job.poll(), Some(Err(JobError::Cancelled)));
        assert!(stopped.load(Ordering::Relaxed), "the guard was not dropped");
        // A result that comes after is nobody's.
        done.finish(Ok(1));

        let stopped = Arc::new(AtomicBool::new(false));
        let (job, done) = Job::<u32>::pending("remote", &wake());
        let mut job = job.guarded(Box::new(Flag(stopped.clone())));
        done.finish(Ok(7));
        assert_eq!(job.poll(), Some(Ok(7)));
        assert!(!stopped.load(Ordering::Relaxed));
        drop(job);
        assert!(
            stopped.load(Ordering::Relaxed),
            "dropping the job kept the guard"
        );
    }

    #[test]
    fn told_progress_tells_every_change() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let p = Progress::told(Box::new(move |done, total| {
            s.lock().unwrap().push((done, total))
        }));
        p.set_total(10);
        p.add(3);
        assert!(p.report(5, 10));
        assert_eq!(*seen.lock().unwrap(), vec![(0, 10), (3, 10), (5, 10)]);
        assert_eq!(p.fraction(), Some(0.5));
        // The UI draws frames to watch it until it says it asks for them itself.
        assert!(p.watched());
        p.set_wakes();
        assert!(!p.watched());
    }
}
