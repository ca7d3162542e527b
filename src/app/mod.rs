//! The desktop app (feature `gui`): a shell over the core library. It loads traces and runs
//! simulations on worker threads ([`worker`]), draws the results ([`views`]), and holds no
//! simulation logic of its own.

pub mod config_panel;
pub mod data;
pub mod files;
pub mod job;
pub mod over_time;
pub mod pane_trace;
pub mod raster;
pub mod theme;
pub mod views;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use egui::{Key, KeyboardShortcut, Modifiers, RichText, Ui};
use serde::{Deserialize, Serialize};

use crate::config::{self, SimConfig};
use data::{SimData, TraceData};
use files::{Browser, BrowserAction, DialogPoll, NativeDialog, Purpose};
use job::{take_finished, Job, JobError, Progress, Wake};
use raster::ColourBy;
use views::misses::{self, MissOptions, MissState};
use views::{AddressState, SetMetric, SetsState, View};
use worker::{Loaded, Source};

/// Seconds a configuration must stay unchanged before it is re-run (dragging a value gives
/// many changes; each new run also cancels the stale one).
pub const DEBOUNCE: f64 = 0.025;
/// Most panes side by side.
pub const MAX_PANES: usize = 4;
/// Recent files remembered.
const RECENT: usize = 10;

/// The built-in kernel shown at start.
pub const START_KERNEL: &str = "matmul";
pub const START_PARAMS: &str = "n=128 block=16,16";
pub const START_PRESET: &str = "fermi-16k";

/// What persists across restarts (window size and position persist through eframe).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// One configuration per pane, with the preset it started from.
    pub panes: Vec<(String, SimConfig)>,
    pub active: usize,
    pub view: View,
    pub colour: ColourBy,
    pub set_metric: SetMetric,
    pub misses: MissOptions,
    pub recent: Vec<PathBuf>,
    pub dark: bool,
    pub generator: String,
    pub generator_params: String,
    /// The last directory a file was chosen in.
    pub last_dir: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            panes: vec![(
                START_PRESET.to_string(),
                config::preset(START_PRESET).unwrap_or_default(),
            )],
            active: 0,
            view: View::Address,
            colour: ColourBy::Outcome,
            set_metric: SetMetric::Accesses,
            misses: MissOptions::default(),
            recent: Vec::new(),
            dark: true,
            generator: START_KERNEL.to_string(),
            generator_params: START_PARAMS.to_string(),
            last_dir: None,
        }
    }
}

/// A pane's live state.
#[derive(Default)]
pub struct Pane {
    /// The newest result, kept on screen (marked stale) while a new one is computed.
    pub result: Option<Arc<SimData>>,
    /// Numbers results (unique across panes), so cached drawings know when to redraw and a
    /// raster never lands on another pane after one is closed.
    pub generation: u64,
    pub stale: bool,
    /// The running simulation whose result this pane waits for.
    pub sim: Option<Job<Arc<SimData>>>,
    /// Time of the last change not yet submitted.
    pub dirty_since: Option<f64>,
    pub error: Option<String>,
    pub address: AddressState,
    pub sets: SetsState,
    pub misses: MissState,
    /// A trace of this pane's own (another kernel side by side); `None` shows the shared one.
    pub own_trace: Option<Arc<TraceData>>,
    /// Loading or generating this pane's own trace.
    pub trace_load: Option<Job<Loaded>>,
    /// The kernel and parameters being generated for this pane.
    pub trace_job: Option<(String, String)>,
}

/// Where the status bar's message came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Info(String),
    Error(String),
}

/// How the app starts.
#[derive(Clone, Debug, Default)]
pub struct Startup {
    /// A trace to open instead of the built-in kernel.
    pub file: Option<PathBuf>,
    /// A generator and its parameters to start with instead of the built-in example.
    pub generator: Option<(String, String)>,
    /// Ignore persisted settings (the screenshot script and tests use fixed inputs).
    pub fresh: bool,
    /// The window's inner size in points, instead of the default or the saved one.
    pub window: Option<[f32; 2]>,
}

/// Something asked for by a menu, a shortcut or a button, handled after drawing.
enum Action {
    Choose(Purpose),
    Open(PathBuf),
    OpenTruncated(PathBuf),
    Generate,
    /// Generate the kernel for one pane only.
    GenerateInPane(usize),
    /// A pane goes back to the shared trace.
    ShareTrace(usize),
    AddPane,
    RemovePane(usize),
    Chosen(Purpose, PathBuf),
}

pub struct WarpscopeApp {
    pub settings: Settings,
    pub panes: Vec<Pane>,
    pub trace: Option<Arc<TraceData>>,
    pub status: Status,
    /// Asks the UI for a repaint (from job threads).
    wake: Wake,
    /// Loading or generating the shared trace.
    loading: Option<Job<Loaded>>,
    /// Exports running, each reporting a message.
    tasks: Vec<Job<String>>,
    dialog: Option<NativeDialog>,
    pub browser: Option<Browser>,
    /// Use the in-app browser even where a native dialog may open (tests).
    pub in_app_dialogs: bool,
    actions: Vec<Action>,
    /// The central area (for PNG export of the view).
    pub view_rect: egui::Rect,
    /// Each pane's cell in the last frame.
    pub pane_rects: Vec<egui::Rect>,
    /// A PNG export waiting for its screenshot: path.
    pending_png: Option<PathBuf>,
    /// The address-view request hovered in the last frame (pane, generation, request), for
    /// the linked panes' tooltips.
    hover: Option<(usize, u64, usize)>,
    /// The communication view's report of the loaded trace and its display choices.
    pub comm: views::comm::CommState,
    /// Results received so far (the source of [`Pane::generation`]).
    results_seen: u64,
    /// Generators stop (and ask) once projected past this many accesses: what fits in the
    /// memory free at start ([`memory_budget_accesses`]); `None` = no limit.
    pub max_generated_accesses: Option<u64>,
    /// The kernel and parameters being generated.
    load_job: Option<(String, String)>,
    /// The file being loaded.
    load_file: Option<PathBuf>,
    /// A file whose load failed, offered again keeping its complete kernels.
    pub failed_file: Option<PathBuf>,
    /// A generator stopped because its trace would not fit: the question shown to the user.
    pub too_large: Option<TooLarge>,
    /// The instruction the address view is limited to (clicked in the miss table).
    pub only: Option<data::InstFilter>,
    /// The trace of the pane it was clicked in ([`pane_trace::trace_id`]).
    only_trace: Option<usize>,
}

/// A generated trace that would not fit in memory, waiting for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct TooLarge {
    pub kernel: String,
    pub params: String,
    /// Accesses the trace would hold.
    pub projected: u64,
    /// The pane it was for, when only one pane was to get it.
    pub pane: Option<usize>,
}

/// Memory one access takes in the app: its trace columns and its share of a pane's result.
pub const BYTES_PER_ACCESS: u64 = 48;

/// How many accesses a generated trace may hold: what fits in half the memory available now
/// (Linux's MemAvailable), or `None` where that is unknown.
pub fn memory_budget_accesses() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024 / 2 / BYTES_PER_ACCESS)
}

impl WarpscopeApp {
    /// Creates the app; `wake` asks the UI for a repaint (from worker threads).
    pub fn new(settings: Settings, startup: Startup, wake: Arc<dyn Fn() + Send + Sync>) -> Self {
        let mut settings = settings;
        if startup.fresh {
            settings = Settings::default();
        }
        if settings.panes.is_empty() {
            settings.panes = Settings::default().panes;
        }
        settings.panes.truncate(MAX_PANES);
        settings.active = settings.active.min(settings.panes.len() - 1);
        let mut app = WarpscopeApp {
            panes: settings.panes.iter().map(|_| Pane::default()).collect(),
            settings,
            trace: None,
            status: Status::Info("Starting".into()),
            wake,
            loading: None,
            tasks: Vec::new(),
            dialog: None,
            browser: None,
            in_app_dialogs: !files::native_available(),
            actions: Vec::new(),
            view_rect: egui::Rect::NOTHING,
            pane_rects: Vec::new(),
            pending_png: None,
            hover: None,
            comm: views::comm::CommState::default(),
            results_seen: 0,
            max_generated_accesses: memory_budget_accesses(),
            load_job: None,
            load_file: None,
            failed_file: None,
            too_large: None,
            only: None,
            only_trace: None,
        };
        match (startup.file, startup.generator) {
            (Some(f), _) => app.open(f),
            (None, Some((kernel, params))) => {
                app.settings.generator = kernel.clone();
                app.settings.generator_params = params.clone();
                app.generate(kernel, params);
            }
            (None, None) => app.generate(START_KERNEL.to_string(), START_PARAMS.to_string()),
        }
        app
    }

    /// Starts loading a trace file.
    pub fn open(&mut self, path: PathBuf) {
        self.load(path, false);
    }

    /// Starts loading a trace file; with `allow_truncated`, keeps the complete kernels before
    /// an error (the CLI's `--allow-truncated`).
    pub fn load(&mut self, path: PathBuf, allow_truncated: bool) {
        let label = format!("Loading {}", path.display());
        self.status = Status::Info(label.clone());
        self.load_job = None;
        self.failed_file = None;
        self.remember(&path);
        self.load_file = Some(path.clone());
        let source = Source::File {
            path,
            format: None,
            allow_truncated,
        };
        // A new load replaces (and so cancels) the one running.
        self.loading = Some(Job::spawn(label, &self.wake, move |p| {
            worker::load_source(source, p)
        }));
    }

    /// Starts generating a built-in kernel's trace; one projected to need more memory than
    /// the machine has free stops early and asks first ([`WarpscopeApp::too_large`]).
    pub fn generate(&mut self, kernel: String, params: String) {
        let limit = self.max_generated_accesses;
        self.generate_limited(kernel, params, limit);
    }

    /// A generator's `key=value` parameters, or `None` with the error in the status bar.
    fn generator_pairs(&mut self, kernel: &str, params: &str) -> Option<Vec<(String, String)>> {
        let words: Vec<String> = params.split_whitespace().map(str::to_string).collect();
        crate::gen::parse_pairs(&words)
            .map_err(|e| self.status = Status::Error(format!("kernel {kernel}: {e}")))
            .ok()
    }

    /// A generator stopped because its trace would not fit: ask the user.
    fn ask_too_large(
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

    fn generate_limited(&mut self, kernel: String, params: String, max_accesses: Option<u64>) {
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
        self.loading = Some(Job::spawn(label, &self.wake, move |p| {
            worker::load_source(source, p)
        }));
    }

    fn remember(&mut self, path: &Path) {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.settings.recent.retain(|p| p != &path);
        self.settings.recent.insert(0, path);
        self.settings.recent.truncate(RECENT);
    }

    /// Marks every pane that shows the shared trace for a re-run.
    fn invalidate_all(&mut self, now: f64) {
        for p in self.panes.iter_mut().filter(|p| p.own_trace.is_none()) {
            p.dirty_since = Some(now - DEBOUNCE);
            p.stale = p.result.is_some();
        }
    }

    /// Adds a pane (a copy of the active one) for side-by-side comparison.
    pub fn add_pane(&mut self, now: f64) {
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

    pub fn remove_pane(&mut self, i: usize) {
        if self.panes.len() <= 1 || i >= self.panes.len() {
            return;
        }
        // Its jobs are dropped, and so cancelled, with it.
        self.panes.remove(i);
        self.settings.panes.remove(i);
        self.settings.active = self.settings.active.min(self.panes.len() - 1);
    }

    /// Takes finished jobs and starts due simulations. Called every frame.
    pub fn update_jobs(&mut self, now: f64) {
        if let Some(r) = take_finished(&mut self.loading) {
            self.loaded(r, now);
        }
        for i in 0..self.panes.len() {
            if let Some(r) = take_finished(&mut self.panes[i].trace_load) {
                self.pane_trace_finished(i, r, now);
            }
            if let Some(r) = take_finished(&mut self.panes[i].sim) {
                self.simulated(i, r);
            }
        }
        if let Some(r) = take_finished(&mut self.comm.job) {
            match r {
                Ok(r) => self.comm.report = Some(r),
                Err(JobError::Cancelled) => self.comm.cancelled = true,
                Err(JobError::Failed(e)) => self.status = Status::Error(e),
            }
        }
        if let Some(r) = self.comm.density_job.as_mut().and_then(|(j, _)| j.poll()) {
            self.comm.density_job = None;
            match r {
                Ok(d) => self.comm.density_ready = Some(d),
                Err(JobError::Failed(e)) => self.status = Status::Error(e),
                Err(JobError::Cancelled) => {}
            }
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
        for p in self.panes.iter_mut() {
            // A raster of an older result is of no use (a failed one keeps the markers).
            if let Some(Ok(r)) = take_finished(&mut p.address.raster_job) {
                if p.generation == r.generation {
                    p.address.pending_image = Some((r.view, r.image, r.generation));
                }
            }
        }
        for (i, pane) in self.panes.iter_mut().enumerate() {
            let Some(since) = pane.dirty_since else {
                continue;
            };
            // A pane waits (still dirty) until it has a trace to simulate.
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
                pane.error = Some(e);
                pane.stale = false;
                continue;
            }
            pane.error = None;
            pane.stale = pane.result.is_some();
            pane.sim = Some(Job::spawn(
                format!("Simulating pane {}", i + 1),
                &self.wake,
                move |p| worker::simulate(config, &trace, p),
            ));
        }
    }

    /// The shared trace has been loaded or generated (or not).
    fn loaded(&mut self, r: Result<Loaded, JobError>, now: f64) {
        match r {
            Ok(Loaded::Trace(t)) => {
                self.status = Status::Info(format!(
                    "{}: {} kernel(s), {} global/local accesses{}",
                    t.label,
                    t.trace.kernels.len(),
                    t.accesses,
                    t.format
                        .map(|f| format!(", format {}", f.name()))
                        .unwrap_or_default()
                ));
                self.trace = Some(t);
                self.only = None;
                self.comm.reset(None);
                for p in self.panes.iter_mut().filter(|p| p.own_trace.is_none()) {
                    p.result = None;
                    p.stale = false;
                }
                self.invalidate_all(now);
            }
            Err(JobError::Failed(e)) => {
                self.status = Status::Error(e);
                self.failed_file = self.load_file.take().filter(|p| p.is_file());
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

    /// Pane `i`'s simulation has finished (or failed, or was cancelled).
    fn simulated(&mut self, i: usize, r: Result<Arc<SimData>, JobError>) {
        let p = &mut self.panes[i];
        match r {
            Ok(data) => {
                p.result = Some(data);
                self.results_seen += 1;
                p.generation = self.results_seen;
                p.stale = false;
                p.error = None;
            }
            Err(JobError::Failed(e)) => {
                p.stale = false;
                p.error = Some(e.clone());
                self.status = Status::Error(e);
            }
            Err(JobError::Cancelled) => {}
        }
    }

    /// The jobs running, for the status bar: label and progress (whose `cancel` stops it).
    pub fn running(&self) -> Vec<(&str, &Progress)> {
        fn of<T>(j: &Job<T>) -> (&str, &Progress) {
            (j.label(), j.progress())
        }
        let mut out: Vec<(&str, &Progress)> = self.loading.iter().map(of).collect();
        for p in &self.panes {
            out.extend(p.trace_load.iter().map(of));
            out.extend(p.sim.iter().map(of));
        }
        out.extend(self.comm.job.iter().map(of));
        out.extend(self.comm.density_job.iter().map(|(j, _)| of(j)));
        out.extend(self.tasks.iter().map(of));
        out
    }

    /// The communication view: one analysis of the loaded trace, started the first time the
    /// view is shown for it.
    fn communication_view(&mut self, ui: &mut egui::Ui, trace: &Arc<TraceData>) {
        let id = Arc::as_ptr(trace) as usize;
        if self.comm.for_trace != Some(id) {
            self.comm.reset(Some(id));
        }
        if self.comm.report.is_none() && self.comm.job.is_none() && !self.comm.cancelled {
            let t = trace.clone();
            self.comm.job = Some(Job::spawn(
                "Analyzing communication",
                &self.wake,
                move |p| worker::communicate(&t, p),
            ));
        }
        if let Some(r) = self.comm.report.clone() {
            if let Some(want) = views::comm::draw(ui, &mut self.comm, &r, trace) {
                let key = want.key;
                let job = Job::spawn("Preparing the density map", &self.wake, move |_| {
                    Ok(Box::new(views::comm::density(
                        &want.report,
                        want.launches,
                        want.counts,
                    )))
                });
                // Replaces (and so cancels) the map of an earlier selection.
                self.comm.density_job = Some((job, key));
            }
            return;
        }
        ui.vertical_centered(|ui| {
            ui.add_space(ui.available_height() / 3.0);
            if self.comm.cancelled {
                ui.label("The communication analysis was cancelled.");
                if ui.button("Analyze again").clicked() {
                    self.comm.cancelled = false;
                    ui.ctx().request_repaint();
                }
                return;
            }
            ui.spinner();
            let fraction = self.comm.job.as_ref().and_then(|j| j.progress().fraction());
            ui.label(match fraction {
                Some(f) => format!("Analyzing inter-CTA communication: {:.0}%", 100.0 * f),
                None => "Analyzing inter-CTA communication".to_string(),
            });
            if ui.button("Cancel").clicked() {
                if let Some(j) = &self.comm.job {
                    j.cancel();
                }
            }
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        });
    }

    /// The one-line summary of the panes' differences ("gto 34.1% misses, round-robin 41.0%").
    /// The panes' absolute traffic side by side (a miss rate alone misleads when the panes
    /// make different numbers of requests), each later pane's difference from pane 1 in
    /// brackets.
    fn comparison(&self, ui: &mut Ui) {
        let configs: Vec<&SimConfig> = self.settings.panes.iter().map(|p| &p.1).collect();
        let diffs = differences(&configs);
        let first = self.panes[0].result.as_ref().map(|r| r.report.totals);
        // With different kernels side by side, each row names its trace.
        let show_trace = self.traces_differ();
        egui::Grid::new("pane-comparison")
            .striped(true)
            .spacing([16.0, 2.0])
            .show(ui, |ui| {
                ui.label(RichText::new("pane").weak());
                if show_trace {
                    ui.label(RichText::new("trace").weak());
                }
                for h in [
                    "differs in",
                    "requests",
                    "misses",
                    "miss rate",
                    "bytes from memory",
                    "bytes to memory",
                ] {
                    ui.label(RichText::new(h).weak());
                }
                ui.end_row();
                for (i, p) in self.panes.iter().enumerate() {
                    ui.label(RichText::new(format!("{}", i + 1)).strong());
                    if show_trace {
                        let t = self.pane_trace(i);
                        ui.label(t.as_ref().map_or("-", |t| t.label.as_str()));
                    }
                    ui.label(if diffs[i].is_empty() {
                        "-".to_string()
                    } else {
                        diffs[i].join(", ")
                    });
                    let Some(r) = &p.result else {
                        ui.label("…");
                        ui.end_row();
                        continue;
                    };
                    let t = &r.report.totals;
                    let base = first.filter(|_| i > 0);
                    let cell = |v: u64, b: Option<u64>| match b {
                        Some(b) if v != b => format!("{v} ({:+})", v as i128 - b as i128),
                        _ => v.to_string(),
                    };
                    ui.label(cell(t.requests, base.map(|b| b.requests)));
                    ui.label(cell(t.misses, base.map(|b| b.misses)));
                    ui.label(format!("{:.2}%", r.miss_percent()));
                    ui.label(cell(t.bytes_from_memory, base.map(|b| b.bytes_from_memory)));
                    ui.label(cell(t.bytes_to_memory, base.map(|b| b.bytes_to_memory)));
                    ui.end_row();
                }
            });
    }

    pub fn summary(&self) -> String {
        let configs: Vec<&SimConfig> = self.settings.panes.iter().map(|p| &p.1).collect();
        let diffs = differences(&configs);
        self.panes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let what = if diffs[i].is_empty() {
                    format!("pane {}", i + 1)
                } else {
                    diffs[i].join(", ")
                };
                match &p.result {
                    Some(r) => format!("{what}: {:.1}% misses", r.miss_percent()),
                    None => format!("{what}: …"),
                }
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Draws the whole app.
    pub fn ui(&mut self, ui: &mut Ui) {
        let ctx = ui.ctx().clone();
        let now = ctx.input(|i| i.time);
        ctx.set_theme(if self.settings.dark {
            egui::Theme::Dark
        } else {
            egui::Theme::Light
        });
        self.update_jobs(now);
        self.shortcuts(&ctx);
        self.handle_drops(&ctx);
        egui::Panel::top("menu").show(ui, |ui| self.menu(ui));
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        egui::Panel::left("side")
            .resizable(true)
            .default_size(300.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.side(ui, now));
            });
        egui::CentralPanel::default().show(ui, |ui| self.central(ui));
        self.dialogs(&ctx);
        self.too_large_question(ui);
        let actions = std::mem::take(&mut self.actions);
        for a in actions {
            self.act(a, &ctx, now);
        }
        if !self.running().is_empty() || self.panes.iter().any(|p| p.dirty_since.is_some()) {
            ctx.request_repaint_after(std::time::Duration::from_millis(30));
        }
    }

    /// Asks whether to generate a trace that will not fit in memory anyway.
    fn too_large_question(&mut self, ui: &mut Ui) {
        let Some(q) = self.too_large.clone() else {
            return;
        };
        let gib = (q.projected * BYTES_PER_ACCESS) as f64 / (1u64 << 30) as f64;
        let free = self
            .max_generated_accesses
            .map(|m| (m * 2 * BYTES_PER_ACCESS) as f64 / (1u64 << 30) as f64);
        let modal = egui::Modal::new(egui::Id::unique("too-large")).show(ui.ctx(), |ui| {
            ui.heading("This trace will not fit in memory");
            ui.label(format!(
                "{} {} would hold about {} accesses, about {gib:.1} GiB in the app{}.",
                q.kernel,
                q.params,
                q.projected,
                free.map(|f| format!(", with {f:.1} GiB free"))
                    .unwrap_or_default()
            ));
            ui.label(
                "Nothing was generated; the current trace stays. Smaller parameters will fit.",
            );
            ui.horizontal(|ui| {
                let anyway = ui.button("Generate anyway").clicked();
                let keep = ui.button("Keep the current trace").clicked();
                (anyway, keep)
            })
            .inner
        });
        let (anyway, keep) = modal.inner;
        if anyway {
            self.too_large = None;
            match q.pane {
                Some(i) => self.generate_in_pane_limited(i, q.kernel, q.params, None),
                None => self.generate_limited(q.kernel, q.params, None),
            }
        } else if keep || modal.should_close() {
            self.too_large = None;
        }
    }

    fn shortcuts(&mut self, ctx: &egui::Context) {
        let cmd = |k| KeyboardShortcut::new(Modifiers::COMMAND, k);
        ctx.input_mut(|i| {
            if i.consume_shortcut(&cmd(Key::O)) {
                self.actions.push(Action::Choose(Purpose::OpenTrace));
            }
            if i.consume_shortcut(&cmd(Key::S)) {
                self.actions.push(Action::Choose(Purpose::SaveConfig));
            }
            if i.consume_shortcut(&cmd(Key::E)) {
                self.actions.push(Action::Choose(Purpose::ExportTables));
            }
            for (k, v) in [Key::Num1, Key::Num2, Key::Num3, Key::Num4, Key::Num5]
                .into_iter()
                .zip(View::ALL)
            {
                if i.consume_shortcut(&cmd(k)) {
                    self.settings.view = v;
                }
            }
        });
    }

    fn handle_drops(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if let Some(p) = dropped.into_iter().next() {
            self.actions.push(Action::Open(p));
        }
    }

    fn menu(&mut self, ui: &mut Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui
                    .add(egui::Button::new("Open trace…").shortcut_text("Ctrl+O"))
                    .clicked()
                {
                    self.actions.push(Action::Choose(Purpose::OpenTrace));
                }
                ui.menu_button("Open recent", |ui| {
                    if self.settings.recent.is_empty() {
                        ui.label(RichText::new("No recent files").weak());
                    }
                    for p in self.settings.recent.clone() {
                        if ui.button(p.display().to_string()).clicked() {
                            self.actions.push(Action::Open(p));
                        }
                    }
                });
                ui.separator();
                if ui.button("Load configuration…").clicked() {
                    self.actions.push(Action::Choose(Purpose::LoadConfig));
                }
                if ui
                    .add(egui::Button::new("Save configuration…").shortcut_text("Ctrl+S"))
                    .clicked()
                {
                    self.actions.push(Action::Choose(Purpose::SaveConfig));
                }
                ui.separator();
                if ui
                    .add(egui::Button::new("Export tables…").shortcut_text("Ctrl+E"))
                    .clicked()
                {
                    self.actions.push(Action::Choose(Purpose::ExportTables));
                }
                if ui.button("Export request table…").clicked() {
                    self.actions.push(Action::Choose(Purpose::ExportRequests));
                }
                if ui.button("Export view as PNG…").clicked() {
                    self.actions.push(Action::Choose(Purpose::ExportView));
                }
                ui.separator();
                if ui.button("Quit").clicked() {
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
            });
            ui.menu_button("View", |ui| {
                for (i, v) in View::ALL.into_iter().enumerate() {
                    if ui
                        .add(egui::Button::new(v.name()).shortcut_text(format!("Ctrl+{}", i + 1)))
                        .clicked()
                    {
                        self.settings.view = v;
                    }
                }
                ui.separator();
                ui.checkbox(&mut self.settings.dark, "Dark theme");
            });
            ui.menu_button("Panes", |ui| {
                if ui
                    .add_enabled(
                        self.panes.len() < MAX_PANES,
                        egui::Button::new("Add a pane"),
                    )
                    .on_hover_text("Compare another configuration side by side (up to 4)")
                    .clicked()
                {
                    self.actions.push(Action::AddPane);
                }
                if ui
                    .add_enabled(
                        self.panes.len() > 1,
                        egui::Button::new("Remove the active pane"),
                    )
                    .clicked()
                {
                    self.actions.push(Action::RemovePane(self.settings.active));
                }
            });
        });
    }

    fn status_bar(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            for (label, p) in self.running() {
                ui.spinner();
                ui.label(label);
                match p.fraction() {
                    Some(f) => {
                        ui.add(
                            egui::ProgressBar::new(f)
                                .desired_width(160.0)
                                .show_percentage(),
                        );
                    }
                    None => {
                        ui.label(RichText::new("working…").weak());
                    }
                }
                if ui.button("Cancel").clicked() {
                    p.cancel();
                }
                ui.separator();
            }
            if let Some(path) = self.failed_file.clone() {
                if ui
                    .button("Keep its complete kernels")
                    .on_hover_text(
                        "Load the kernels read completely before the error, as the CLI's \
                         --allow-truncated does; the app marks the trace as truncated",
                    )
                    .clicked()
                {
                    self.actions.push(Action::OpenTruncated(path));
                }
            }
            match &self.status {
                Status::Info(s) => ui.label(s),
                Status::Error(s) => {
                    ui.colored_label(ui.visuals().error_fg_color, format!("Error: {s}"))
                }
            };
        });
    }

    fn side(&mut self, ui: &mut Ui, now: f64) {
        ui.heading("Trace");
        match &self.trace {
            Some(t) => {
                ui.label(RichText::new(&t.label).strong());
                if let Some(why) = &t.truncated {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!("Only the complete kernels before an error: {why}"),
                    );
                }
                ui.label(format!(
                    "{} kernel(s), {} global/local accesses",
                    t.trace.kernels.len(),
                    t.accesses
                ));
            }
            None => {
                ui.label(
                    RichText::new(
                        "No trace yet: open a file, drop one here, or generate a kernel.",
                    )
                    .weak(),
                );
            }
        }
        let a = self.settings.active;
        if let Some(t) = &self.panes[a].own_trace {
            ui.label(format!(
                "Pane {} shows its own trace: {} ({} kernel(s), {} global/local accesses)",
                a + 1,
                t.label,
                t.trace.kernels.len(),
                t.accesses
            ));
            if ui
                .button(format!("Pane {}: use the shared trace", a + 1))
                .clicked()
            {
                self.actions.push(Action::ShareTrace(a));
            }
        }
        ui.horizontal(|ui| {
            if ui
                .button("Open…")
                .on_hover_text(
                    "Open a trace file (Ctrl+O); any supported format, compressed or not",
                )
                .clicked()
            {
                self.actions.push(Action::Choose(Purpose::OpenTrace));
            }
            let a = self.settings.active;
            if self.panes.len() > 1
                && ui
                    .button(format!("Open for pane {} only…", a + 1))
                    .on_hover_text(
                        "Open a trace that only the active pane shows, to compare another kernel \
                         side by side",
                    )
                    .clicked()
            {
                self.actions.push(Action::Choose(Purpose::OpenPaneTrace(a)));
            }
            if !self.settings.recent.is_empty() {
                ui.menu_button("Recent", |ui| {
                    for p in self.settings.recent.clone() {
                        if ui.button(p.display().to_string()).clicked() {
                            self.actions.push(Action::Open(p));
                        }
                    }
                });
            }
        });
        egui::CollapsingHeader::new("Generate a kernel")
            .default_open(true)
            .show(ui, |ui| {
                let l = ui.label("Kernel");
                egui::ComboBox::from_id_salt("generator")
                    .selected_text(self.settings.generator.as_str())
                    .show_ui(ui, |ui| {
                        for k in crate::gen::KERNELS {
                            if ui
                                .selectable_label(self.settings.generator == k.name, k.name)
                                .on_hover_text(k.description)
                                .clicked()
                            {
                                self.settings.generator = k.name.to_string();
                                self.settings.generator_params = k.params.to_string();
                            }
                        }
                    })
                    .response
                    .labelled_by(l.id);
                let desc = crate::gen::KERNELS
                    .iter()
                    .find(|k| k.name == self.settings.generator);
                if let Some(k) = desc {
                    ui.label(RichText::new(k.description).weak());
                }
                let l = ui.label("Parameters");
                let field = ui
                    .text_edit_singleline(&mut self.settings.generator_params)
                    .labelled_by(l.id)
                    .on_hover_text("key=value pairs separated by spaces; Enter generates");
                let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                ui.horizontal(|ui| {
                    if ui
                        .button("Generate")
                        .on_hover_text("The trace every pane shares (panes with their own keep it)")
                        .clicked()
                        || entered
                    {
                        self.actions.push(Action::Generate);
                    }
                    let a = self.settings.active;
                    if self.panes.len() > 1
                        && ui
                            .button(format!("Generate for pane {} only", a + 1))
                            .on_hover_text(
                                "Only the active pane shows this kernel: compare different kernels \
                                 side by side (naive and tiled matmul, say)",
                            )
                            .clicked()
                    {
                        self.actions.push(Action::GenerateInPane(a));
                    }
                });
            });
        ui.separator();
        ui.heading("Configuration");
        if self.panes.len() > 1 {
            ui.horizontal(|ui| {
                for i in 0..self.panes.len() {
                    ui.selectable_value(&mut self.settings.active, i, format!("Pane {}", i + 1));
                }
            });
        }
        let a = self.settings.active;
        let (preset, cfg) = &mut self.settings.panes[a];
        if config_panel::show(ui, a, preset, cfg) {
            self.panes[a].dirty_since = Some(now);
            self.panes[a].stale = self.panes[a].result.is_some();
        }
    }

    fn central(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            for v in View::ALL {
                ui.selectable_value(&mut self.settings.view, v, v.name());
            }
            ui.separator();
            if self.settings.view == View::Address {
                let l = ui.label("Colour by");
                egui::ComboBox::from_id_salt("colour-by")
                    .selected_text(self.settings.colour.name())
                    .show_ui(ui, |ui| {
                        for c in ColourBy::ALL {
                            ui.selectable_value(&mut self.settings.colour, c, c.name());
                        }
                    })
                    .response
                    .labelled_by(l.id);
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .add_enabled(self.panes.len() < MAX_PANES, egui::Button::new("+ Compare"))
                    .on_hover_text("Add a pane with its own configuration, side by side")
                    .clicked()
                {
                    self.actions.push(Action::AddPane);
                }
            });
        });
        if self.panes.len() > 1 {
            self.comparison(ui);
        }
        ui.separator();
        self.view_rect = ui.available_rect_before_wrap();
        let nothing = || {
            RichText::new("Open a trace (File > Open, Ctrl+O), drop a file on the window,\nor generate a built-in kernel in the panel on the left.").size(16.0).weak()
        };
        if self.trace.is_none() && !self.traces_differ() {
            ui.centered_and_justified(|ui| {
                ui.label(nothing());
            });
            return;
        }
        if self.settings.view == View::Communication {
            // The communication view analyses the shared trace.
            match self.trace.clone() {
                Some(trace) => self.communication_view(ui, &trace),
                None => {
                    ui.centered_and_justified(|ui| {
                        ui.label(nothing());
                    });
                }
            }
            return;
        }
        let n = self.panes.len();
        // Each pane's trace; panes link (hover, zoom, instruction filter) only to panes showing
        // the same trace.
        let traces: Vec<Option<Arc<TraceData>>> = (0..n).map(|i| self.pane_trace(i)).collect();
        let trace_ids: Vec<Option<usize>> = traces
            .iter()
            .map(|t| t.as_ref().map(pane_trace::trace_id))
            .collect();
        let show_trace = self.traces_differ();
        let mut share = None;
        let view = self.settings.view;
        let colour = self.settings.colour;
        let mut metric = self.settings.set_metric;
        let mut miss_opts = self.settings.misses;
        let mut remove = None;
        let mut activate = None;
        let mut hover = None;
        // The request hovered in the last frame, with its pane's result, for the other panes.
        let linked = self.hover.and_then(|(p, generation, request)| {
            let src = self.panes.get(p)?;
            trace_ids.get(p)?.as_ref()?;
            let data = src
                .result
                .clone()
                .filter(|_| src.generation == generation)?;
            Some(views::LinkedHover {
                pane: p,
                generation,
                request,
                data,
            })
        });
        let mut only = self.only.clone();
        let shown_only = self.only.clone();
        let only_trace = self.only_trace;
        let mut only_from = None;
        self.pane_rects.clear();
        pane_grid(ui, n, |i, col| {
            self.pane_rects.push(col.max_rect());
            let pane = &mut self.panes[i];
            let link = egui::Id::unique(("linked-panes", trace_ids[i]));
            // The instruction filter applies to the panes of the trace it was chosen in.
            let shown_only = shown_only.clone().filter(|_| trace_ids[i] == only_trace);
            let (preset, cfg) = &self.settings.panes[i];
            col.horizontal_wrapped(|ui| {
                if n > 1 {
                    let active = i == self.settings.active;
                    if ui
                        .selectable_label(active, RichText::new(format!("Pane {}", i + 1)).strong())
                        .on_hover_text("Edit this pane's configuration in the side panel")
                        .clicked()
                    {
                        activate = Some(i);
                    }
                }
                ui.label(RichText::new(format!("{preset}, {}", short(cfg))).weak());
                match (&pane.error, &pane.result) {
                    // The error stands where this configuration's numbers would.
                    (Some(_), _) => {
                        ui.colored_label(ui.visuals().error_fg_color, "not run");
                    }
                    (None, Some(r)) => {
                        ui.label(
                            RichText::new(format!("{:.2}% misses", r.miss_percent())).strong(),
                        );
                    }
                    (None, None) => {}
                }
                if pane.error.is_none() && (pane.stale || pane.sim.is_some()) {
                    ui.label(RichText::new("stale, updating…").color(ui.visuals().warn_fg_color));
                }
                if n > 1
                    && ui
                        .small_button("x")
                        .on_hover_text("Close this pane")
                        .clicked()
                {
                    remove = Some(i);
                }
            });
            if show_trace {
                col.horizontal_wrapped(|ui| {
                    let label = traces[i]
                        .as_ref()
                        .map_or("no trace yet", |t| t.label.as_str());
                    let whose = if pane.own_trace.is_some() {
                        "own trace"
                    } else {
                        "shared trace"
                    };
                    ui.label(RichText::new(format!("{whose}: {label}")).strong());
                    if pane.own_trace.is_some()
                        && ui
                            .small_button("use the shared trace")
                            .on_hover_text("Show the trace the other panes share")
                            .clicked()
                    {
                        share = Some(i);
                    }
                });
            }
            if let Some(e) = &pane.error {
                col.colored_label(
                    col.visuals().error_fg_color,
                    format!("This configuration is not valid: {e}"),
                );
                if let Some(r) = &pane.result {
                    col.colored_label(
                        col.visuals().warn_fg_color,
                        format!(
                            "Below: the last valid result ({}), {:.2}% misses",
                            short(&r.config),
                            r.miss_percent()
                        ),
                    );
                }
            }
            let Some(trace) = traces[i].clone() else {
                col.centered_and_justified(|ui| {
                    ui.label(RichText::new("No trace yet").weak());
                });
                return;
            };
            let Some(data) = pane.result.clone() else {
                col.centered_and_justified(|ui| {
                    ui.spinner();
                });
                return;
            };
            // Upload a finished raster.
            if let Some((v, img, g)) = pane.address.pending_image.take() {
                let tex = col.ctx().load_texture(
                    format!("raster-{i}"),
                    img,
                    egui::TextureOptions::NEAREST,
                );
                pane.address.texture = Some((v, tex, g));
            }
            match view {
                View::Address => {
                    let at = views::address(
                        col,
                        i,
                        &data,
                        &trace,
                        pane.generation,
                        &mut pane.address,
                        &views::AddressOptions {
                            colour,
                            link,
                            linked_hover: linked
                                .clone()
                                .filter(|l| l.pane != i && trace_ids[l.pane] == trace_ids[i]),
                            only: shown_only.clone(),
                        },
                    );
                    if let Some(request) = at.hovered {
                        hover = Some((i, pane.generation, request));
                    }
                    if let Some(want) = at.raster {
                        // Replaces (and so stops) the raster of an earlier view.
                        pane.address.raster_job = Some(Job::spawn(
                            format!("Drawing pane {}", i + 1),
                            &self.wake,
                            move |p| raster::draw(want, p),
                        ));
                    }
                }
                View::Reuse => views::reuse(col, i, &data, link),
                View::Misses => {
                    let mut chosen = shown_only.clone();
                    misses::misses(
                        col,
                        i,
                        &data,
                        &trace,
                        pane.generation,
                        &mut pane.misses,
                        misses::MissChoices {
                            opts: &mut miss_opts,
                            only: &mut chosen,
                        },
                    );
                    if chosen != shown_only {
                        only = chosen;
                        only_from = Some(trace_ids[i]);
                    }
                }
                View::Sets => views::sets(
                    col,
                    i,
                    &data,
                    pane.generation,
                    &mut metric,
                    &mut pane.sets,
                    link,
                ),
                // Drawn once for the whole area above: it does not depend on a pane.
                View::Communication => {}
            }
        });
        let mut show_all = false;
        for p in &mut self.panes {
            show_all |= std::mem::take(&mut p.address.show_all);
        }
        if show_all {
            only = None;
        }
        if let Some(t) = only_from {
            self.only_trace = t;
        }
        self.only = only;
        if let Some(i) = share {
            self.actions.push(Action::ShareTrace(i));
        }
        self.settings.set_metric = metric;
        if hover != self.hover {
            self.hover = hover;
            if n > 1 {
                ui.ctx().request_repaint();
            }
        }
        self.settings.misses = miss_opts;
        if let Some(i) = activate {
            self.settings.active = i;
        }
        if let Some(i) = remove {
            self.actions.push(Action::RemovePane(i));
        }
    }

    fn dialogs(&mut self, ctx: &egui::Context) {
        if let Some(d) = &self.dialog {
            match d.poll() {
                DialogPoll::Waiting => {
                    ctx.request_repaint_after(std::time::Duration::from_millis(100))
                }
                DialogPoll::Chosen(p) => {
                    let purpose = d.purpose;
                    self.dialog = None;
                    self.actions.push(Action::Chosen(purpose, p));
                }
                DialogPoll::Cancelled => self.dialog = None,
                DialogPoll::Unavailable => {
                    let purpose = d.purpose;
                    self.dialog = None;
                    self.in_app_dialogs = true;
                    self.browser = Some(Browser::new(purpose, self.start_dir(purpose)));
                }
            }
        }
        if let Some(b) = &mut self.browser {
            match b.show(ctx) {
                BrowserAction::None => {}
                BrowserAction::Closed => self.browser = None,
                BrowserAction::Chosen(p) => {
                    let purpose = b.purpose;
                    self.browser = None;
                    self.actions.push(Action::Chosen(purpose, p));
                }
            }
        }
    }

    /// The folder a file dialog opens in: the last one used; for saving, the first of the
    /// last folder, the current folder, the home folder and the temporary folder that can be
    /// written (a trace's folder is often read-only).
    pub fn start_dir(&self, purpose: Purpose) -> PathBuf {
        let last = self.settings.last_dir.clone().filter(|d| d.is_dir());
        let cwd = std::env::current_dir().ok();
        if !purpose.saves() {
            return last.or(cwd).unwrap_or_else(|| PathBuf::from("."));
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        [last, cwd, home, Some(std::env::temp_dir())]
            .into_iter()
            .flatten()
            .find(|d| files::writable(d))
            .unwrap_or_else(|| PathBuf::from("."))
    }

    fn act(&mut self, a: Action, ctx: &egui::Context, now: f64) {
        match a {
            Action::Choose(purpose) => {
                if self.in_app_dialogs {
                    self.browser = Some(Browser::new(purpose, self.start_dir(purpose)));
                } else if self.dialog.is_none() {
                    self.dialog = Some(NativeDialog::open(purpose, Some(&self.start_dir(purpose))));
                }
            }
            Action::Open(p) => self.open(p),
            Action::OpenTruncated(p) => self.load(p, true),
            Action::Generate => {
                let (k, p) = (
                    self.settings.generator.clone(),
                    self.settings.generator_params.clone(),
                );
                self.generate(k, p);
            }
            Action::GenerateInPane(i) => {
                let (k, p) = (
                    self.settings.generator.clone(),
                    self.settings.generator_params.clone(),
                );
                self.generate_in_pane(i, k, p);
            }
            Action::ShareTrace(i) => self.share_trace(i, now),
            Action::AddPane => self.add_pane(now),
            Action::RemovePane(i) => self.remove_pane(i),
            Action::Chosen(purpose, path) => {
                if let Some(d) = path.parent() {
                    if d.is_dir() {
                        self.settings.last_dir = Some(d.to_path_buf());
                    }
                }
                self.chosen(purpose, path, ctx, now);
            }
        }
    }

    fn chosen(&mut self, purpose: Purpose, path: PathBuf, ctx: &egui::Context, now: f64) {
        let a = self.settings.active;
        match purpose {
            Purpose::OpenTrace => self.open(path),
            Purpose::OpenPaneTrace(i) => self.open_in_pane(i, path),
            Purpose::LoadConfig => match load_config(&path) {
                Ok(c) => {
                    self.settings.panes[a] = (file_name(&path), c);
                    self.panes[a].dirty_since = Some(now - DEBOUNCE);
                    self.status = Status::Info(format!("Loaded {}", path.display()));
                }
                Err(e) => self.status = Status::Error(e),
            },
            Purpose::SaveConfig => match save_config(&path, &self.settings.panes[a].1) {
                Ok(()) => self.status = Status::Info(format!("Saved {}", path.display())),
                Err(e) => self.status = Status::Error(e),
            },
            Purpose::ExportView => {
                self.pending_png = Some(path);
                self.request_png(ctx);
            }
            Purpose::ExportTables => self.export_tables(path),
            Purpose::ExportRequests => self.export_requests(path),
        }
    }

    /// Asks the backend for a screenshot and writes the view area of it to the pending path.
    fn request_png(&mut self, ctx: &egui::Context) {
        let Some(path) = self.pending_png.take() else {
            return;
        };
        let rect = self.view_rect;
        let ppp = ctx.pixels_per_point();
        let (job, done) = Job::pending(format!("Exporting {}", path.display()), &self.wake);
        self.tasks.push(job);
        ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
            egui::ScreenshotCallback::new(move |img: Arc<egui::ColorImage>| {
                done.finish(match write_png(&path, &img, rect, ppp) {
                    Ok(()) => Ok(format!("Wrote {}", path.display())),
                    Err(e) => Err(JobError::Failed(format!("{}: {e}", path.display()))),
                });
            }),
        ));
    }

    /// Writes the per-instruction and per-CTA tables of the active pane (on a worker).
    pub fn export_tables(&mut self, path: PathBuf) {
        let Some(r) = self.panes[self.settings.active].result.clone() else {
            self.status = Status::Error("nothing to export yet: wait for the simulation".into());
            return;
        };
        let label = format!("Exporting {}", path.display());
        self.tasks.push(Job::spawn(label, &self.wake, move |_| {
            crate::export::write_summary(&path, &r.report)
                .map(|[i, c]| format!("Wrote {} and {}", i.display(), c.display()))
                .map_err(|e| JobError::Failed(format!("exporting {}: {e}", path.display())))
        }));
    }

    /// Re-runs the active pane while writing every request to a table (on a worker).
    pub fn export_requests(&mut self, path: PathBuf) {
        let Some(trace) = self.pane_trace(self.settings.active) else {
            return;
        };
        let cfg = self.settings.panes[self.settings.active].1.clone();
        let label = format!("Exporting {}", path.display());
        self.tasks
            .push(Job::spawn(label, &self.wake, move |progress| {
                let failed =
                    |e: String| JobError::Failed(format!("exporting {}: {e}", path.display()));
                let mut ex = crate::export::RequestExporter::create(&path, worker::Relay(progress))
                    .map_err(|e| failed(e.to_string()))?;
                let run = crate::sim::run(&cfg, &trace.trace, &mut ex);
                if let Some(e) = ex.error() {
                    return Err(failed(e.to_string()));
                }
                match run {
                    Err(crate::sim::SimError::Cancelled) => return Err(JobError::Cancelled),
                    r => r.map_err(|e| failed(worker::error_chain(&e)))?,
                };
                let (rows, _) = ex.finish().map_err(|e| failed(e.to_string()))?;
                Ok(format!("Wrote {} ({rows} requests)", path.display()))
            }));
    }

    /// Sets the active pane's configuration (tests and scripts); it re-runs after the
    /// debounce.
    pub fn set_config(&mut self, pane: usize, preset: &str, cfg: SimConfig, now: f64) {
        if let (Some(s), Some(p)) = (self.settings.panes.get_mut(pane), self.panes.get_mut(pane)) {
            *s = (preset.to_string(), cfg);
            p.dirty_since = Some(now);
            p.stale = p.result.is_some();
        }
    }

    /// True when no job is running and no pane waits for a re-run.
    pub fn idle(&self) -> bool {
        self.running().is_empty() && self.panes.iter().all(|p| p.dirty_since.is_none())
    }
}

/// The last component of a path, for labels.
/// Lays out `n` panes so each stays readable: side by side for one or two, a grid of two
/// columns for three or four (rows share the height); `body` draws pane `i` into its cell.
fn pane_grid(ui: &mut Ui, n: usize, mut body: impl FnMut(usize, &mut Ui)) {
    let cols = n.clamp(1, 2);
    let rows = n.div_ceil(cols).max(1);
    let gap = ui.spacing().item_spacing.y;
    let height = ((ui.available_height() - gap * (rows - 1) as f32) / rows as f32).max(160.0);
    for r in 0..rows {
        let width = ui.available_width();
        ui.allocate_ui(egui::vec2(width, height), |ui| {
            ui.set_height(height);
            ui.columns(cols, |cells| {
                for (j, cell) in cells.iter_mut().enumerate() {
                    let i = r * cols + j;
                    if i < n {
                        body(i, cell);
                    }
                }
            });
        });
    }
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// A few words about a configuration for pane headers.
fn short(c: &SimConfig) -> String {
    let ways = match c.cache.ways {
        0 => "full".to_string(),
        w => format!("{w}-way"),
    };
    format!(
        "{} KiB {ways}, {}, {}",
        c.cache.size_bytes / 1024,
        c.cache.replacement.name(),
        c.schedule.policy.name()
    )
}

/// For each configuration, the settings in which the configurations differ ("ways 8").
pub fn differences(configs: &[&SimConfig]) -> Vec<Vec<String>> {
    let flat: Vec<Vec<(String, String)>> = configs
        .iter()
        .map(|c| {
            let mut out = Vec::new();
            if let Ok(v) = serde_json::to_value(c) {
                flatten("", &v, &mut out);
            }
            out
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for f in &flat {
        for (k, _) in f {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // A setting missing from a configuration is another variant of an enum there (the set
    // index `modulo` against `bits: [..]`): name the variant it has instead.
    let value = |f: &Vec<(String, String)>, k: &str| -> (String, String) {
        if let Some((kk, v)) = f.iter().find(|(kk, _)| kk == k) {
            return (kk.clone(), v.clone());
        }
        f.iter()
            .find(|(kk, _)| k.starts_with(&format!("{kk}.")) || kk.starts_with(&format!("{k}.")))
            .map(|(kk, v)| (kk.clone(), v.clone()))
            .unwrap_or_else(|| (k.to_string(), "none".into()))
    };
    let differing: Vec<&String> = keys
        .iter()
        .filter(|k| flat.iter().any(|f| value(f, k) != value(&flat[0], k)))
        .collect();
    let words = |k: &str| k.rsplit('.').next().unwrap_or(k).replace('_', " ");
    flat.iter()
        .map(|f| {
            let mut out: Vec<String> = Vec::new();
            for k in &differing {
                let (key, v) = value(f, k);
                // A variant with fields reads with its setting's name: "set index bits [6,7]".
                let parent = key.rsplit_once('.').map(|p| p.0);
                let text = match parent.filter(|p| differing.iter().any(|d| d == p)) {
                    Some(p) => format!("{} {} {v}", words(p), words(&key)),
                    None => format!("{} {v}", words(&key)),
                };
                if !out.contains(&text) {
                    out.push(text);
                }
            }
            out
        })
        .collect()
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Reads a configuration file: TOML by extension `.toml`, JSON otherwise.
pub fn load_config(path: &Path) -> Result<SimConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cfg: SimConfig = if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: line {}, column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })?
    };
    cfg.validate()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(cfg)
}

/// Writes a configuration: TOML for `.toml`, JSON otherwise.
pub fn save_config(path: &Path, cfg: &SimConfig) -> Result<(), String> {
    let text = if path.extension().is_some_and(|e| e == "toml") {
        toml::to_string_pretty(cfg).map_err(|e| e.to_string())?
    } else {
        serde_json::to_string_pretty(cfg).map_err(|e| e.to_string())?
    };
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes the part of a screenshot inside `rect` (points) as a PNG.
pub fn write_png(
    path: &Path,
    img: &egui::ColorImage,
    rect: egui::Rect,
    ppp: f32,
) -> Result<(), String> {
    let [w, h] = img.size;
    let r = if rect.is_finite() && rect.width() > 0.0 {
        egui::Rect::from_min_max(
            (rect.min.to_vec2() * ppp).to_pos2(),
            (rect.max.to_vec2() * ppp).to_pos2(),
        )
    } else {
        egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(w as f32, h as f32))
    };
    let x0 = (r.min.x.max(0.0) as usize).min(w);
    let y0 = (r.min.y.max(0.0) as usize).min(h);
    let x1 = (r.max.x.max(0.0) as usize).min(w);
    let y1 = (r.max.y.max(0.0) as usize).min(h);
    if x1 <= x0 || y1 <= y0 {
        return Err("the view area is empty".into());
    }
    let mut rgba = Vec::with_capacity((x1 - x0) * (y1 - y0) * 4);
    for y in y0..y1 {
        for x in x0..x1 {
            rgba.extend_from_slice(&img.pixels[y * w + x].to_array());
        }
    }
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut enc = png::Encoder::new(
        std::io::BufWriter::new(file),
        (x1 - x0) as u32,
        (y1 - y0) as u32,
    );
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgba).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

/// The eframe wrapper: persistence and the screenshot plan.
pub struct EframeApp {
    pub app: WarpscopeApp,
    shots: Option<ScreenshotPlan>,
}

/// `--screenshots DIR`: one PNG per main view and one of the side-by-side mode, then exit.
pub struct ScreenshotPlan {
    pub dir: PathBuf,
    step: usize,
    wait_frames: u32,
    inflight: Option<std::sync::mpsc::Receiver<()>>,
    /// The step whose inputs have been set up.
    prepared: Option<usize>,
}

impl ScreenshotPlan {
    pub fn new(dir: PathBuf) -> Self {
        ScreenshotPlan {
            dir,
            step: 0,
            wait_frames: 0,
            inflight: None,
            prepared: None,
        }
    }
}

impl EframeApp {
    pub fn new(cc: &eframe::CreationContext<'_>, startup: Startup, shots: Option<PathBuf>) -> Self {
        let settings = if startup.fresh || shots.is_some() {
            Settings::default()
        } else {
            cc.storage
                .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
                .unwrap_or_default()
        };
        if shots.is_some() {
            // Fixed inputs: forget panel and plot state saved by earlier sessions.
            cc.egui_ctx.memory_mut(|m| *m = Default::default());
        }
        let ctx = cc.egui_ctx.clone();
        let wake: Arc<dyn Fn() + Send + Sync> = Arc::new(move || ctx.request_repaint());
        let startup = Startup {
            fresh: startup.fresh || shots.is_some(),
            ..startup
        };
        EframeApp {
            app: WarpscopeApp::new(settings, startup, wake),
            shots: shots.map(ScreenshotPlan::new),
        }
    }

    /// Advances the screenshot plan by one frame.
    fn screenshots(&mut self, ctx: &egui::Context) {
        let Some(plan) = &mut self.shots else {
            return;
        };
        ctx.request_repaint();
        if let Some(rx) = &plan.inflight {
            if rx.try_recv().is_ok() {
                plan.inflight = None;
                plan.step += 1;
                plan.wait_frames = 0;
            }
            return;
        }
        let app = &mut self.app;
        // The views of one pane on the start kernel; the communication view comes last, on
        // multi-launch kernels.
        let views: Vec<View> = View::ALL
            .into_iter()
            .filter(|v| *v != View::Communication)
            .collect();
        let now = ctx.input(|i| i.time);
        // Steps 0..4: one per view with one pane; step 4: side by side (gto vs round-robin);
        // step 5: a box selection in the light theme; step 6: the timing model's cycle axis;
        // steps 7 and 8: the communication view of hotspot and of BFS levels; steps 9 to 11: four
        // panes in the address, miss and reuse views; step 12: naive and tiled matmul side by
        // side; step 13: misses per source line of the Accel-Sim sample with line info.
        let first = plan.prepared != Some(plan.step);
        plan.prepared = Some(plan.step);
        let extra = plan.step.saturating_sub(views.len());
        let name = if plan.step < views.len() {
            app.settings.view = views[plan.step];
            format!("{}-{}.png", plan.step + 1, views[plan.step].file_stem())
        } else if extra == 0 {
            if first {
                app.settings.view = View::Address;
                app.add_pane(now);
                let mut c = app.settings.panes[1].1.clone();
                c.schedule.policy = config::IssuePolicy::Gto;
                app.set_config(1, START_PRESET, c, now);
            }
            "6-side-by-side.png".to_string()
        } else if extra == 1 {
            if first {
                app.remove_pane(1);
                app.settings.dark = false;
            }
            // Select the lower-left part of the requests once the result is there.
            if let (Some(d), Some(t)) = (app.panes[0].result.clone(), app.trace.clone()) {
                if app.panes[0].address.selection.is_none() {
                    let n = d.points.len() as f64;
                    let h = t.segments.height();
                    let sel = d.select([0.1 * n, 0.45 * n], [0.0, 0.3 * h]);
                    app.panes[0].address.selection = Some((sel, app.panes[0].generation));
                }
            }
            "7-light-selection.png".to_string()
        } else if extra == 2 {
            if first {
                app.settings.dark = true;
                app.panes[0].address.selection = None;
                // The paper's setting, as the released model of Nugteren et al. runs it.
                if let Ok(mut c) = config::preset("gtx470-16k") {
                    if config::compat(&mut c, "gpu-cache-model").is_ok() {
                        app.set_config(0, "gtx470-16k", c, now);
                    }
                }
            }
            "8-timing.png".to_string()
        } else if extra == 3 || extra == 4 {
            if first {
                if let Ok(c) = config::preset(START_PRESET) {
                    app.set_config(0, START_PRESET, c, now);
                }
                app.settings.view = View::Communication;
                let (kernel, params) = if extra == 3 {
                    ("hotspot", "nx=128 ny=128 steps=6 block=16,16")
                } else {
                    ("bfs-levels", "nodes=8192 degree=4 block=64")
                };
                app.settings.generator = kernel.to_string();
                app.settings.generator_params = params.to_string();
                app.generate(kernel.to_string(), params.to_string());
            }
            // The report, and its density map (prepared on the worker) unless it has none.
            let c = &app.comm;
            let waiting = c.report.as_ref().is_none_or(|r| {
                !r.transfers.is_empty() && c.shown() != Some((c.launches, c.counts))
            });
            if waiting {
                plan.wait_frames = 0;
                return;
            }
            if extra == 3 {
                "5-communication.png".to_string()
            } else {
                "9-communication-bfs.png".to_string()
            }
        } else if (5..8).contains(&extra) {
            // Four panes (round-robin, GTO, 8-way, 2-way) in three views.
            let views = [View::Address, View::Misses, View::Reuse];
            if extra == 5 && first {
                app.settings.generator = START_KERNEL.to_string();
                app.settings.generator_params = START_PARAMS.to_string();
                app.generate(START_KERNEL.to_string(), START_PARAMS.to_string());
                while app.panes.len() < 4 {
                    app.add_pane(now);
                }
                for (i, policy, ways) in [
                    (1, config::IssuePolicy::Gto, 4),
                    (2, config::IssuePolicy::RoundRobin, 8),
                    (3, config::IssuePolicy::RoundRobin, 2),
                ] {
                    let mut c = app.settings.panes[0].1.clone();
                    c.schedule.policy = policy;
                    c.cache.ways = ways;
                    app.set_config(i, START_PRESET, c, now);
                }
            }
            app.settings.view = views[extra - 5];
            if app
                .trace
                .as_ref()
                .is_none_or(|t| !t.label.starts_with(START_KERNEL))
            {
                plan.wait_frames = 0;
                return;
            }
            format!(
                "{}-four-panes-{}.png",
                extra + 5,
                views[extra - 5].file_stem()
            )
        } else if extra == 8 {
            // Different kernels side by side: naive and tiled matmul on the same cache.
            if first {
                app.settings.view = View::Address;
                while app.panes.len() > 2 {
                    app.remove_pane(app.panes.len() - 1);
                }
                let c = app.settings.panes[0].1.clone();
                app.set_config(1, START_PRESET, c, now);
                app.generate_in_pane(1, "matmul-tiled".into(), "n=128 tile=16".into());
            }
            if app.panes[1]
                .own_trace
                .as_ref()
                .is_none_or(|t| !t.label.starts_with("matmul-tiled"))
            {
                plan.wait_frames = 0;
                return;
            }
            "13-kernels-side-by-side.png".to_string()
        } else if extra == 9 {
            // An Accel-Sim trace with source lines: misses per line.
            if first {
                app.remove_pane(1);
                app.settings.view = View::Misses;
                app.settings.misses.per = misses::Per::SourceLine;
                app.open(PathBuf::from("sample-traces/accelsim-lineinfo"));
            }
            if app
                .trace
                .as_ref()
                .is_none_or(|t| !t.label.contains("accelsim-lineinfo"))
            {
                plan.wait_frames = 0;
                return;
            }
            "14-misses-per-source-line.png".to_string()
        } else {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        };
        let ready = app.idle()
            && app.trace.is_some()
            && app
                .panes
                .iter()
                .all(|p| p.result.is_some() || p.error.is_some())
            && app
                .panes
                .iter()
                .all(|p| p.address.pending_image.is_none() && p.address.raster_job.is_none());
        if !ready {
            plan.wait_frames = 0;
            return;
        }
        // Let the view settle (rasters arrive, plots size themselves).
        plan.wait_frames += 1;
        if plan.wait_frames < 20 {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let path = plan.dir.join(name);
        ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
            egui::ScreenshotCallback::new(move |img: Arc<egui::ColorImage>| {
                let full = egui::Rect::NOTHING;
                if let Err(e) = write_png(&path, &img, full, 1.0) {
                    eprintln!("error: {}: {e}", path.display());
                } else {
                    eprintln!("wrote {}", path.display());
                }
                let _ = tx.send(());
            }),
        ));
        plan.inflight = Some(rx);
    }
}

impl eframe::App for EframeApp {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.app.ui(ui);
        let ctx = ui.ctx().clone();
        self.screenshots(&ctx);
    }
    fn persist_egui_memory(&self) -> bool {
        self.shots.is_none()
    }
    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if self.shots.is_none() {
            eframe::set_value(storage, eframe::APP_KEY, &self.app.settings);
        }
    }
}

/// Opens the window (glow renderer: much faster than wgpu on software renderers).
pub fn run(startup: Startup, shots: Option<PathBuf>) -> Result<(), String> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Warpscope")
            .with_app_id("warpscope")
            .with_inner_size(startup.window.unwrap_or([1500.0, 940.0]))
            .with_min_inner_size([800.0, 500.0])
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Glow,
        persist_window: shots.is_none() && startup.window.is_none(),
        ..Default::default()
    };
    eframe::run_native(
        "Warpscope",
        options,
        Box::new(move |cc| Ok(Box::new(EframeApp::new(cc, startup, shots)))),
    )
    .map_err(|e| e.to_string())
}
