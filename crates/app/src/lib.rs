//! The desktop app: a shell over the core (`warpscope-core`), opened by the `warpscope`
//! binary (feature `gui`). It loads traces and runs
//! simulations as jobs off the UI thread ([`job`], [`worker`]), draws the results
//! ([`views`]), and holds no simulation logic of its own.
//!
//! This file holds the app's state and its frame ([`WarpscopeApp::ui`]); the rest is split by
//! what it draws or does: `chrome.rs` (menu, status bar, shortcuts), `side.rs` (trace,
//! generator, configuration), `central.rs` (views and panes side by side), `actions.rs` (what
//! menus and buttons ask for, run after drawing), `work.rs` (starting jobs and taking their
//! results), `commands.rs` (what the views ask of the app, and their jobs' results each
//! frame), `window.rs` (the eframe window), `screenshots.rs` (the screenshot plan).
#![allow(rustdoc::private_intra_doc_links)]

mod actions;
mod central;
mod chrome;
mod commands;
mod config_panel;
mod data;
#[cfg(target_arch = "wasm32")]
mod download;
mod editor;
mod files;
mod job;
mod lesson_panel;
mod over_time;
mod pane_trace;
mod raster;
mod remote;
mod requests_csv;
mod screenshots;
mod side;
mod sliced;
mod streamed;
mod sweep_run;
mod sweep_view;
#[cfg(target_arch = "wasm32")]
mod tasks;
mod theme;
mod views;
mod window;
mod work;
mod worker;

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(test)]
mod tests;

use actions::write_png;
#[cfg(target_arch = "wasm32")]
pub use remote::page::serve as serve_worker;
use screenshots::ScreenshotPlan;
#[cfg(not(target_arch = "wasm32"))]
pub use window::run;
#[cfg(target_arch = "wasm32")]
pub use window::run_web;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use egui::Ui;
use serde::{Deserialize, Serialize};

use data::{SimData, TraceData};
use files::{Browser, NativeDialog, Purpose};
use job::{Job, Wake};
use raster::ColourBy;
use views::misses::MissOptions;
use views::{PaneView, PaneViews, SetMetric, View};
use warpscope_core::config::{self, SimConfig};
use worker::Loaded;

/// Seconds a configuration must stay unchanged before it is re-run (dragging a value gives
/// many changes; each new run also cancels the stale one).
pub(crate) const DEBOUNCE: f64 = 0.025;
/// Most panes side by side.
pub(crate) const MAX_PANES: usize = 4;
/// Recent files remembered.
const RECENT: usize = 10;

/// The built-in kernel shown at start.
pub(crate) const START_KERNEL: &str = "matmul";
pub(crate) const START_PARAMS: &str = "n=128 block=16,16";
pub(crate) const START_PRESET: &str = "fermi-16k";

/// What persists across restarts (window size and position persist through eframe).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// One configuration per pane, with the preset it started from.
    pub panes: Vec<(String, SimConfig)>,
    pub(crate) active: usize,
    pub(crate) view: View,
    pub(crate) colour: ColourBy,
    pub(crate) set_metric: SetMetric,
    pub(crate) misses: MissOptions,
    pub(crate) recent: Vec<PathBuf>,
    pub(crate) dark: bool,
    pub(crate) generator: String,
    pub(crate) generator_params: String,
    /// The last directory a file was chosen in.
    pub(crate) last_dir: Option<PathBuf>,
    /// The side panel (trace and configuration) is shown; hidden, the panes take its room.
    pub(crate) side_panel: bool,
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
            side_panel: true,
        }
    }
}

/// A pane's live state.
#[derive(Default)]
pub(crate) struct Pane {
    /// The newest result, kept on screen (marked stale) while a new one is computed.
    pub(crate) result: Option<Arc<SimData>>,
    /// Numbers results (unique across panes), so cached drawings know when to redraw and a
    /// raster never lands on another pane after one is closed.
    pub(crate) generation: u64,
    /// Numbers the runs whose results the pane shows (unique across panes): a streamed run's
    /// previews and its result share one, so a raster of an earlier preview can stand in
    /// until the newest one's is drawn. Set when a result of the run in `sim` comes.
    pub(crate) run: u64,
    /// The run of `sim`.
    pub(crate) sim_run: u64,
    pub(crate) stale: bool,
    /// The running simulation whose result this pane waits for.
    pub(crate) sim: Option<Job<Arc<SimData>>>,
    /// Where that simulation, streaming a trace, leaves previews of its result so far.
    pub(crate) preview: Option<data::PreviewSlot>,
    /// The whole run's result while the detail of a window of it is shown (or computed).
    pub(crate) whole: Option<Arc<SimData>>,
    /// Time of the last change not yet submitted.
    pub(crate) dirty_since: Option<f64>,
    pub(crate) error: Option<String>,
    /// The views of this pane's result (each with the jobs it started).
    pub(crate) views: PaneViews,
    /// A trace of this pane's own (another kernel side by side); `None` shows the shared one.
    pub(crate) own_trace: Option<Arc<TraceData>>,
    /// Loading or generating this pane's own trace.
    pub(crate) trace_load: Option<Job<Loaded>>,
    /// The kernel and parameters being generated for this pane.
    pub(crate) trace_job: Option<(String, String)>,
}

impl Pane {
    /// This pane's view of type `T` (`pane.view::<AddressView>()`).
    pub(crate) fn view<T: PaneView>(&self) -> Option<&T> {
        self.views.of()
    }
    /// This pane's view of type `T`, to change.
    pub(crate) fn view_mut<T: PaneView>(&mut self) -> Option<&mut T> {
        self.views.of_mut()
    }
}

/// Where the status bar's message came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Status {
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
    /// A merged sweep table to show (as a heatmap) at start.
    pub sweep: Option<PathBuf>,
    /// Stream every trace file (read by each simulation as it runs), however small.
    pub stream: bool,
    /// A trace file the screenshot plan opens streamed for its last shot.
    pub shot_streamed: Option<PathBuf>,
    /// Threads for the work the app spreads over the cores (sweeps, the timing model's runs
    /// and SMs); 0: one per core (`warpscope --jobs N`).
    pub jobs: usize,
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
    /// Open a lesson (its name).
    Lesson(String),
    RemovePane(usize),
    Chosen(Purpose, PathBuf),
    /// The browser's picker (or a drop on the page) handed over a file: its name and bytes.
    Picked(Purpose, String, Arc<[u8]>),
    /// The configuration panel changed pane `.0`'s preset or configuration.
    EditConfig(usize, Box<config_panel::Edit>),
    /// What a view asked for.
    View(views::Command),
    /// Stop the job with this progress (the status bar's Cancel).
    Cancel(Arc<job::Progress>),
    /// Generate a trace the user was told would not fit in memory.
    GenerateAnyway(TooLarge),
}

pub struct WarpscopeApp {
    pub(crate) settings: Settings,
    pub(crate) panes: Vec<Pane>,
    pub(crate) trace: Option<Arc<TraceData>>,
    pub(crate) status: Status,
    /// Asks the UI for a repaint (from job threads).
    wake: Wake,
    /// Loading or generating the shared trace.
    loading: Option<Job<Loaded>>,
    /// Exports running, each reporting a message.
    tasks: Vec<Job<String>>,
    dialog: Option<NativeDialog>,
    pub(crate) browser: Option<Browser>,
    /// Use the in-app browser even where a native dialog may open (tests).
    pub(crate) in_app_dialogs: bool,
    actions: Vec<Action>,
    /// The central area (for PNG export of the view).
    pub(crate) view_rect: egui::Rect,
    /// Each pane's cell in the last frame.
    pub(crate) pane_rects: Vec<egui::Rect>,
    /// A PNG export waiting for its screenshot: path.
    pending_png: Option<PathBuf>,
    /// The address-view request hovered in the last frame (pane, generation, request), for
    /// the linked panes' tooltips.
    pub(crate) hover: Option<(usize, u64, usize)>,
    /// The communication analysis of the loaded trace, and the density map being prepared.
    /// Results received so far (the source of [`Pane::generation`]).
    results_seen: u64,
    /// Runs started or results shown apart from a run (the source of [`Pane::run`]).
    runs_numbered: u64,
    /// Generators stop (and ask) once projected past this many accesses: what fits in the
    /// memory free at start ([`memory_budget_accesses`]); `None` = no limit.
    pub(crate) max_generated_accesses: Option<u64>,
    /// The kernel-language editor.
    pub(crate) editor: editor::Editor,
    /// The lesson open beside the panes.
    pub(crate) lesson: Option<warpscope_core::lesson::Lesson>,
    /// The sweep form and the sweep it runs.
    pub(crate) sweep_run: sweep_run::SweepRun,
    /// The window's width in points, as of the last frame (layout decisions outside `ui`).
    window_width: f32,
    /// A merged sweep table shown as a heatmap.
    pub(crate) sweep: sweep_view::SweepView,
    /// The kernel and parameters being generated.
    load_job: Option<(String, String)>,
    /// The file being loaded.
    load_file: Option<PathBuf>,
    /// A file whose load failed, offered again keeping its complete kernels.
    pub(crate) failed_file: Option<PathBuf>,
    /// A generator stopped because its trace would not fit: the question shown to the user.
    pub(crate) too_large: Option<TooLarge>,
    /// The instruction the address view is limited to (clicked in the miss table).
    pub(crate) only: Option<data::InstFilter>,
    /// The trace of the pane it was clicked in ([`pane_trace::trace_id`]).
    only_trace: Option<usize>,
    /// The largest trace file (bytes on disk) read whole; larger ones are streamed
    /// ([`worker::WHOLE_UP_TO`]; 0 with `--stream`).
    pub(crate) whole_up_to: u64,
}

/// A generated trace that would not fit in memory, waiting for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TooLarge {
    pub kernel: String,
    pub params: String,
    /// Accesses the trace would hold.
    pub projected: u64,
    /// The pane it was for, when only one pane was to get it.
    pub pane: Option<usize>,
}

/// Memory one access takes in the app: its trace columns and its share of a pane's result.
pub(crate) const BYTES_PER_ACCESS: u64 = 48;

/// How many accesses a generated trace may hold in the web page: what fits in half of what
/// its WebAssembly memory (4 GiB at most) has not grown into yet.
#[cfg(target_arch = "wasm32")]
pub(crate) fn memory_budget_accesses() -> Option<u64> {
    const MAX_BYTES: u64 = 4 << 30;
    let grown = core::arch::wasm32::memory_size(0) as u64 * 65536;
    Some(MAX_BYTES.saturating_sub(grown) / 2 / BYTES_PER_ACCESS)
}

/// How many accesses a generated trace may hold: what fits in half the memory available now
/// (Linux's MemAvailable), or `None` where that is unknown.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn memory_budget_accesses() -> Option<u64> {
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
            results_seen: 0,
            runs_numbered: 0,
            max_generated_accesses: memory_budget_accesses(),
            editor: Default::default(),
            sweep: Default::default(),
            lesson: None,
            sweep_run: Default::default(),
            window_width: 1280.0,
            load_job: None,
            load_file: None,
            failed_file: None,
            too_large: None,
            only: None,
            only_trace: None,
            whole_up_to: if startup.stream {
                0
            } else {
                worker::WHOLE_UP_TO
            },
        };
        if let Some(s) = &startup.sweep {
            app.sweep.open_file(s);
        }
        match (startup.file, startup.generator) {
            (Some(f), _) => app.open(f),
            (None, Some((kernel, params))) => {
                app.settings.generator = kernel.clone();
                app.settings.generator_params = params.clone();
                app.generate(kernel, params);
            }
            (None, None) => app.generate_example(),
        }
        app
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
        self.window_width = ctx.content_rect().width();
        if self.settings.side_panel {
            // Narrower in a small window, so the panes keep room.
            egui::Panel::left("side")
                .resizable(true)
                .default_size((self.window_width * 0.26).clamp(230.0, 300.0))
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| self.side(ui));
                });
        }
        self.lesson_panel(ui);
        egui::CentralPanel::default().show(ui, |ui| self.central(ui));
        self.editor_window(&ctx, now);
        self.sweep_window(&ctx);
        self.dialogs(&ctx);
        self.too_large_question(ui);
        let actions = std::mem::take(&mut self.actions);
        for a in actions {
            self.act(a, &ctx, now);
        }
        // Frames while a job runs show its progress; a job that asks for them itself (a page's
        // worker) needs none (on a page they take the CPU the worker and the drawing need).
        let watched = self.running().iter().any(|(_, p)| p.watched());
        if watched || self.panes.iter().any(|p| p.dirty_since.is_some()) {
            ctx.request_repaint_after(std::time::Duration::from_millis(30));
        }
    }
}

/// The last component of a path, for labels.
pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}
