//! What the app starts and what it does with the results: loading and generating the shared
//! trace, panes added and removed, each pane's simulation re-run after its configuration
//! settles, and every finished job taken in once a frame ([`WarpscopeApp::update_jobs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::data::SimData;
use super::job::{take_finished, Job, JobError, Progress};
use super::worker::{Loaded, Source};
use warpscope_core::config::SimConfig;

use super::*;

impl WarpscopeApp {
    /// Starts loading a trace file.
    pub(crate) fn open(&mut self, path: PathBuf) {
        self.load(path, false);
    }

    /// Starts loading a trace file; with `allow_truncated`, keeps the complete kernels before
    /// an error (the CLI's `--allow-truncated`).
    pub(crate) fn load(&mut self, path: PathBuf, allow_truncated: bool) {
        let label = format!("Loading {}", path.display());
        self.status = Status::Info(label.clone());
        self.load_job = None;
        self.failed_file = None;
        self.remember(&path);
        self.load_file = Some(path.clone());
        let source = Source::File {
            whole_up_to: self.whole_up_to,
            path,
            format: None,
            allow_truncated,
        };
        // A new load replaces (and so cancels) the one running.
        self.loading = Some(remote::load_job(label, &self.wake, source));
    }

    /// Starts reading a trace file's bytes (the web build's picker, or a file dropped on the
    /// page).
    pub(crate) fn open_bytes(&mut self, name: String, bytes: Arc<[u8]>) {
        let label = format!("Loading {name}");
        self.status = Status::Info(label.clone());
        self.load_job = None;
        self.failed_file = None;
        self.load_file = None;
        let source = Source::Bytes { name, bytes };
        self.loading = Some(remote::load_job(label, &self.wake, source));
    }

    /// Starts generating a built-in kernel's trace; one projected to need more memory than
    /// the machine has free stops early and asks first ([`WarpscopeApp::too_large`]).
    pub(crate) fn generate(&mut self, kernel: String, params: String) {
        let limit = self.max_generated_accesses;
        self.generate_limited(kernel, params, limit, false);
    }

    /// Generates the built-in example the app opens with. A page does it on its own thread
    /// rather than in a worker: it is small (a few million accesses, under half a second),
    /// comes before the user can ask for anything, and its first picture comes sooner (a
    /// worker's start and the trace's way back to the page cost more than it does).
    pub(crate) fn generate_example(&mut self) {
        let limit = self.max_generated_accesses;
        self.generate_limited(START_KERNEL.into(), START_PARAMS.into(), limit, true);
    }

    /// A generator's `key=value` parameters, or `None` with the error in the status bar.
    pub(super) fn generator_pairs(
        &mut self,
        kernel: &str,
        params: &str,
    ) -> Option<Vec<(String, String)>> {
        let words: Vec<String> = params.split_whitespace().map(str::to_string).collect();
        warpscope_core::gen::parse_pairs(&words)
            .map_err(|e| self.status = Status::Error(format!("kernel {kernel}: {e}")))
            .ok()
    }

    /// A generator stopped because its trace would not fit: ask the user.
    pub(super) fn ask_too_large(
        &mut self,
        kernel: String,
        params: String,
        projected: u64,
        pane: Option<usize>,
    ) {
        self.status = Status::Info(format!(
            "{kernel} {params} would not fit in memory: not generated"
        ));
        self.too_large = Some(TooLarge {
            kernel,
            params,
            projected,
            pane,
        });
    }

    pub(super) fn generate_limited(
        &mut self,
        kernel: String,
        params: String,
        max_accesses: Option<u64>,
        on_page: bool,
    ) {
        let Some(pairs) = self.generator_pairs(&kernel, &params) else {
            return;
        };
        let label = format!("Generating {kernel} {params}");
        self.status = Status::Info(label.clone());
        self.too_large = None;
        self.load_file = None;
        self.failed_file = None;
        self.load_job = Some((kernel.clone(), params));
        let source = Source::Generator {
            kernel,
            params: pairs,
            max_accesses,
        };
        self.loading = Some(match on_page {
            true => Job::spawn(label, &self.wake, move |p| worker::load_source(source, p)),
            false => remote::load_job(label, &self.wake, source),
        });
    }

    pub(super) fn remember(&mut self, path: &Path) {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.settings.recent.retain(|p| p != &path);
        self.settings.recent.insert(0, path);
        self.settings.recent.truncate(RECENT);
    }

    /// Marks every pane that shows the shared trace for a re-run.
    pub(super) fn invalidate_all(&mut self, now: f64) {
        for p in self.panes.iter_mut().filter(|p| p.own_trace.is_none()) {
            p.dirty_since = Some(now - DEBOUNCE);
            p.stale = p.result.is_some();
        }
    }

    /// Adds a pane (a copy of the active one) for side-by-side comparison.
    pub(crate) fn add_pane(&mut self, now: f64) {
        if self.panes.len() >= MAX_PANES {
            return;
        }
        let a = self.settings.active;
        let copy = self.settings.panes[a].clone();
        self.settings.panes.push(copy);
        let own_trace = self.panes[a].own_trace.clone();
        self.panes.push(Pane {
            dirty_since: Some(now - DEBOUNCE),
            own_trace,
            ..Default::default()
        });
        self.settings.active = self.panes.len() - 1;
    }

    pub(crate) fn remove_pane(&mut self, i: usize) {
        if self.panes.len() <= 1 || i >= self.panes.len() {
            return;
        }
        // Its jobs are dropped, and so cancelled, with it.
        self.panes.remove(i);
        self.settings.panes.remove(i);
        self.settings.active = self.settings.active.min(self.panes.len() - 1);
        // What the status bar said may name a pane that is gone or renumbered.
        self.status = Status::Info(match self.panes.len() {
            1 => format!("Closed pane {}: one pane left", i + 1),
            n => format!("Closed pane {}: panes 1 to {n} left", i + 1),
        });
    }

    /// Takes finished jobs and starts due simulations. Called every frame.
    pub(crate) fn update_jobs(&mut self, now: f64) {
        if let Some(r) = take_finished(&mut self.loading) {
            self.loaded(r, now);
        }
        for i in 0..self.panes.len() {
            if let Some(r) = take_finished(&mut self.panes[i].trace_load) {
                self.pane_trace_finished(i, r, now);
            }
            if let Some(r) = take_finished(&mut self.panes[i].sim) {
                self.panes[i].preview = None;
                // The page's timeline marks each result (its test times a change by it).
                #[cfg(target_arch = "wasm32")]
                window::mark("warpscope: pane result");
                self.simulated(i, r);
            } else {
                self.previewed(i);
            }
        }
        self.view_jobs();
        match take_finished(&mut self.sweep_run.job) {
            Some(Ok(table)) => {
                self.status = Status::Info(format!("Done: {}", table.file));
                self.sweep.show(table);
            }
            Some(Err(JobError::Failed(e))) => self.sweep_run.error = Some(e),
            Some(Err(JobError::Cancelled)) => {
                self.status = Status::Info("Sweep cancelled".into());
            }
            None => {}
        }
        let mut finished = Vec::new();
        self.tasks.retain_mut(|j| match j.poll() {
            Some(r) => {
                finished.push(r);
                false
            }
            None => true,
        });
        for r in finished {
            match r {
                Ok(msg) => self.status = Status::Info(msg),
                Err(JobError::Failed(e)) => self.status = Status::Error(e),
                Err(JobError::Cancelled) => {}
            }
        }
        for (i, pane) in self.panes.iter_mut().enumerate() {
            let Some(since) = pane.dirty_since else {
                continue;
            };
            // A pane waits (still dirty) until it has a trace to simulate, and while its own
            // trace is being loaded (a result from the one it replaces would be thrown away).
            if pane.trace_load.is_some() {
                continue;
            }
            let Some(trace) = pane.own_trace.clone().or_else(|| self.trace.clone()) else {
                continue;
            };
            if now - since < DEBOUNCE {
                continue;
            }
            pane.dirty_since = None;
            // The stale run goes: its result could only be older than the one asked for.
            pane.sim = None;
            let config = self.settings.panes[i].1.clone();
            if let Err(e) = config.validate() {
                // Nothing runs: the result on screen is the last valid one, not an update.
                pane.error = Some(format!("This configuration is not valid: {e}"));
                pane.stale = false;
                continue;
            }
            pane.error = None;
            pane.stale = pane.result.is_some();
            pane.whole = None;
            self.runs_numbered += 1;
            pane.sim_run = self.runs_numbered;
            let label = format!("Simulating pane {}", i + 1);
            if trace.streamed.is_some() {
                // The picture fills in as the file is read.
                let slot = data::PreviewSlot::default();
                let preview = data::Preview::new(slot.clone(), self.wake.clone());
                pane.preview = Some(slot);
                pane.sim = Some(Job::spawn(label, &self.wake, move |p| {
                    worker::simulate_streamed(config, &trace, p, Some(preview))
                }));
            } else {
                pane.preview = None;
                pane.sim = Some(if cfg!(target_arch = "wasm32") {
                    // A page runs it between frames: it draws and answers Cancel meanwhile.
                    Job::stepped(label, &self.wake, sliced::Sliced::new(config, trace))
                } else {
                    Job::spawn(label, &self.wake, move |p| {
                        worker::simulate(config, &trace, p)
                    })
                });
            }
        }
    }

    /// The shared trace has been loaded or generated (or not).
    pub(super) fn loaded(&mut self, r: Result<Loaded, JobError>, now: f64) {
        match r {
            Ok(Loaded::Trace(t)) => {
                self.status = Status::Info(format!(
                    "{}: {}{}",
                    t.label,
                    t.summary(),
                    t.format
                        .map(|f| format!(", format {}", f.name()))
                        .unwrap_or_default()
                ));
                self.trace = Some(t);
                self.only = None;
                for p in self.panes.iter_mut().filter(|p| p.own_trace.is_none()) {
                    p.result = None;
                    p.stale = false;
                }
                self.invalidate_all(now);
            }
            Ok(Loaded::Truncated { error }) => {
                self.status = Status::Error(error);
                self.failed_file = self.load_file.take().filter(|p| p.is_file());
            }
            Err(JobError::Failed(e)) => {
                self.status = Status::Error(e);
                self.load_file = None;
            }
            Err(JobError::Cancelled) => {
                self.status = Status::Info("Cancelled: the current trace stays".into())
            }
            Ok(Loaded::TooLarge { projected }) => {
                if let Some((kernel, params)) = self.load_job.take() {
                    self.ask_too_large(kernel, params, projected, None);
                }
            }
        }
    }

    /// Shows every request of `window` of pane `i`'s streamed run (the file read again up to
    /// its end, as a job), or with `None` the whole run's result again. The whole run's result
    /// is kept while a detail is shown.
    pub(crate) fn detail(&mut self, i: usize, window: Option<std::ops::Range<u64>>) {
        let Some(trace) = self.pane_trace(i) else {
            return;
        };
        let Some(window) = window else {
            // A detail still running is dropped (and so cancelled); a full run started since
            // would have let go of `whole`.
            if self.back_to_whole(i) {
                self.panes[i].sim = None;
            }
            return;
        };
        let p = &mut self.panes[i];
        let Some(whole) = p.whole.clone().or_else(|| p.result.clone()) else {
            return;
        };
        if whole.window.is_some() || trace.streamed.is_none() {
            return;
        }
        p.whole = Some(whole.clone());
        p.preview = None;
        p.stale = true;
        self.runs_numbered += 1;
        p.sim_run = self.runs_numbered;
        p.sim = Some(Job::spawn(
            format!(
                "Reading pane {} again for requests {}..{}",
                i + 1,
                window.start,
                window.end
            ),
            &self.wake,
            move |pr| worker::simulate_window(&trace, pr, whole, window),
        ));
    }

    /// Shows the newest preview of pane `i`'s streamed run, if one has come since the last
    /// frame: on screen as a result, marked stale until the run's own result comes.
    fn previewed(&mut self, i: usize) {
        let p = &mut self.panes[i];
        let Some(d) = p
            .preview
            .as_ref()
            .and_then(|slot| slot.lock().ok().and_then(|mut s| s.take()))
        else {
            return;
        };
        p.result = Some(d);
        self.results_seen += 1;
        p.generation = self.results_seen;
        p.run = p.sim_run;
        p.stale = true;
    }

    /// Pane `i`'s simulation has finished (or failed, or was cancelled).
    pub(super) fn simulated(&mut self, i: usize, r: Result<Arc<SimData>, JobError>) {
        let p = &mut self.panes[i];
        match r {
            Ok(data) => {
                p.result = Some(data);
                self.results_seen += 1;
                p.generation = self.results_seen;
                p.run = p.sim_run;
                p.stale = false;
                p.error = None;
            }
            Err(JobError::Failed(e)) => {
                p.stale = false;
                p.error = Some(format!("The run failed: {e}"));
                // A preview of a streamed run that failed is not a result: the last one stays.
                if p.result.as_ref().is_some_and(|r| r.preview) {
                    p.result = p.whole.take();
                    self.results_seen += 1;
                    p.generation = self.results_seen;
                    self.runs_numbered += 1;
                    p.run = self.runs_numbered;
                }
                self.status = Status::Error(e);
            }
            Err(JobError::Cancelled) => {
                // A window's detail cancelled: the whole run's result again, as it was.
                self.back_to_whole(i);
                self.status =
                    Status::Info(format!("Cancelled: pane {} keeps what it showed", i + 1));
            }
        }
    }

    /// Puts the whole run's result kept while pane `i` shows a window's detail back on screen
    /// (a result of its own, fresh); false when it shows no detail.
    fn back_to_whole(&mut self, i: usize) -> bool {
        let p = &mut self.panes[i];
        let Some(whole) = p.whole.take() else {
            return false;
        };
        p.result = Some(whole);
        self.results_seen += 1;
        p.generation = self.results_seen;
        self.runs_numbered += 1;
        p.run = self.runs_numbered;
        p.stale = false;
        true
    }

    /// The jobs running, for the status bar: label and progress (whose `cancel` stops it).
    pub(crate) fn running(&self) -> Vec<(&str, &Arc<Progress>)> {
        fn of<T>(j: &Job<T>) -> (&str, &Arc<Progress>) {
            (j.label(), j.progress())
        }
        let mut out: Vec<(&str, &Arc<Progress>)> = self.loading.iter().map(of).collect();
        for p in &self.panes {
            out.extend(p.trace_load.iter().map(of));
            out.extend(p.sim.iter().map(of));
            out.extend(p.views.running());
        }
        // The kernel editor's run: its window says it runs; the status bar offers Cancel.
        out.extend(self.editor.job.iter().map(of));
        out.extend(self.tasks.iter().map(of));
        out.extend(self.sweep_run.job.iter().map(of));
        out
    }

    /// Sets the active pane's configuration (tests and scripts); it re-runs after the
    /// debounce.
    pub(crate) fn set_config(&mut self, pane: usize, preset: &str, cfg: SimConfig, now: f64) {
        if let (Some(s), Some(p)) = (self.settings.panes.get_mut(pane), self.panes.get_mut(pane)) {
            *s = (preset.to_string(), cfg);
            p.dirty_since = Some(now);
            p.stale = p.result.is_some();
        }
    }

    /// True when no job is running (the views' too) and no pane waits for a re-run.
    pub fn idle(&self) -> bool {
        self.running().is_empty()
            && self.editor.job.is_none()
            && self
                .panes
                .iter()
                .all(|p| p.dirty_since.is_none() && !p.views.busy())
    }

    /// True when a trace is loaded, every pane shows a result of it under its configuration
    /// (none stale) and nothing else runs: what a script driving the app waits for before it
    /// exports or takes a screenshot.
    pub fn settled(&self) -> bool {
        self.idle()
            && self.trace.is_some()
            && self.panes.iter().all(|p| p.result.is_some() && !p.stale)
    }
}
