//! The eframe window around the app: persisted settings, the screenshot plan of
//! `--screenshots` (`screenshots.rs`) run frame by frame, and [`run`] (in the web build,
//! `run_web`).

use std::path::PathBuf;
use std::sync::Arc;

use egui::Ui;

use super::*;

/// The eframe wrapper: persistence and the screenshot plan.
pub struct EframeApp {
    pub app: WarpscopeApp,
    shots: Option<ScreenshotPlan>,
    /// The page's title as last set (the web build names the open trace there).
    #[cfg(target_arch = "wasm32")]
    title: String,
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
        let streamed = startup.shot_streamed.clone();
        let mut app = WarpscopeApp::new(settings, startup, wake);
        if shots.is_some() {
            // The sweep (`--sweep`) is read now but shown only in its own shot.
            app.sweep.open = false;
        }
        EframeApp {
            app,
            shots: shots.map(|dir| {
                let mut plan = ScreenshotPlan::new(dir);
                plan.streamed = streamed;
                plan
            }),
            #[cfg(target_arch = "wasm32")]
            title: String::new(),
        }
    }

    /// Advances the screenshot plan by one frame.
    fn screenshots(&mut self, ctx: &egui::Context) {
        if let Some(plan) = &mut self.shots {
            plan.frame(&mut self.app, ctx);
        }
    }
}

impl eframe::App for EframeApp {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.app.ui(ui);
        let ctx = ui.ctx().clone();
        self.screenshots(&ctx);
        #[cfg(target_arch = "wasm32")]
        self.page_title();
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
#[cfg(not(target_arch = "wasm32"))]
pub fn run(startup: Startup, shots: Option<PathBuf>) -> Result<(), String> {
    warpscope_shell::lanes::set_default_jobs(startup.jobs);
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

#[cfg(target_arch = "wasm32")]
impl EframeApp {
    /// Names the active pane's trace in the page's title (the browser's tab), as a window's
    /// title would.
    fn page_title(&mut self) {
        let title = match &self.app.pane_trace(self.app.settings.active) {
            Some(t) => format!("{} — Warpscope", t.label),
            None => "Warpscope".to_string(),
        };
        if title != self.title {
            if let Some(d) = web_sys::window().and_then(|w| w.document()) {
                d.set_title(&title);
            }
            self.title = title;
        }
    }
}

/// Marks `name` on the page's performance timeline (`performance.mark`), where the browser's
/// profiler and the page's test (`web/test_page.py`) see when it happened.
#[cfg(target_arch = "wasm32")]
pub(crate) fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// Starts the app in the page's canvas `canvas` (the web build, `crates/web`): the built-in
/// example, as `cargo run` opens it, with settings kept in the browser's local storage.
#[cfg(target_arch = "wasm32")]
pub async fn run_web(canvas: web_sys::HtmlCanvasElement) -> Result<(), String> {
    let startup = Startup {
        file: None,
        fresh: false,
        generator: None,
        window: None,
        sweep: None,
        stream: false,
        shot_streamed: None,
        jobs: 0,
    };
    eframe::WebRunner::new()
        .start(
            canvas,
            eframe::WebOptions::default(),
            Box::new(move |cc| Ok(Box::new(EframeApp::new(cc, startup, None)))),
        )
        .await
        .map_err(|e| format!("{e:?}"))
}
