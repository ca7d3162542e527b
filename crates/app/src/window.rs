//! The eframe window around the app: persisted settings, the screenshot plan of
//! `--screenshots` (`screenshots.rs`) run frame by frame, and [`run`].

use std::path::PathBuf;
use std::sync::Arc;

use egui::Ui;

use super::*;

/// The eframe wrapper: persistence and the screenshot plan.
pub struct EframeApp {
    pub app: WarpscopeApp,
    shots: Option<ScreenshotPlan>,
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
