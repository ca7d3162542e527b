//! The eframe window around the app: persisted settings, the screenshot plan of
//! `--screenshots`, and [`run`].

use std::path::PathBuf;
use std::sync::Arc;

use egui::Ui;

use super::views::misses;
use super::views::View;
use warpscope_core::config;

use super::*;

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
    /// A large trace file for the last shot, opened streamed (`--shot-streamed`).
    pub streamed: Option<PathBuf>,
}

impl ScreenshotPlan {
    pub fn new(dir: PathBuf) -> Self {
        ScreenshotPlan {
            dir,
            step: 0,
            wait_frames: 0,
            inflight: None,
            prepared: None,
            streamed: None,
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
        let streamed = startup.shot_streamed.clone();
        let mut app = WarpscopeApp::new(settings, startup, wake);
        if shots.is_some() {
            // The sweep (`--sweep`) is read now but shown only in its own shot.
            app.sweep.open = false;
        }
        EframeApp {
            app,
            shots: shots.map(|dir| ScreenshotPlan {
                streamed,
                ..ScreenshotPlan::new(dir)
            }),
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
        // Steps 0..5: one per view with one pane (the performance view's file is
        // 5-performance.png); then, counted from there: side by side (gto vs round-robin); a box
        // selection in the light theme; the timing model's cycle axis; the communication view of
        // hotspot and of BFS levels; four panes in the address, miss and reuse views; naive and
        // tiled matmul side by side; misses per source line of the Accel-Sim sample with line
        // info; the performance model of naive and tiled matmul side by side.
        let first = plan.prepared != Some(plan.step);
        plan.prepared = Some(plan.step);
        let extra = plan.step.saturating_sub(views.len());
        let name = if plan.step < views.len() {
            app.settings.view = views[plan.step];
            // Step-through at a conflict miss a third of the way through.
            if first && views[plan.step] == View::Step {
                if let Some(d) = app.panes[0].result.clone() {
                    let conflicts: Vec<usize> = (0..d.points.len())
                        .filter(|&i| d.points.outcome(i) == crate::data::Outcome::Conflict)
                        .collect();
                    if let Some(&i) = conflicts.get(conflicts.len() / 3) {
                        app.panes[0].step.go_to(i);
                    }
                }
            }
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
                if app.panes[0].address.boxed().is_none() {
                    let n = d.points.len() as f64;
                    let h = t.segments.height();
                    // As a Shift + drag would: the view asks for its summary.
                    app.panes[0]
                        .address
                        .select_box([0.1 * n, 0.45 * n], [0.0, 0.3 * h]);
                }
            }
            "7-light-selection.png".to_string()
        } else if extra == 2 {
            if first {
                app.settings.dark = true;
                app.panes[0].address.clear_selection();
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
                app.open(PathBuf::from("sample-traces/accelsim-lineinfo"));
            }
            // Asked again each frame: the view falls back to per instruction while it still
            // shows the previous trace's result, which has no source lines.
            app.settings.misses.per = misses::Per::SourceLine;
            if app
                .trace
                .as_ref()
                .is_none_or(|t| !t.label.contains("accelsim-lineinfo"))
            {
                plan.wait_frames = 0;
                return;
            }
            "14-misses-per-source-line.png".to_string()
        } else if extra == 10 {
            // The performance model of naive and tiled matmul side by side.
            if first {
                app.settings.view = View::Performance;
                app.settings.misses.per = misses::Per::Instruction;
                app.settings.generator = START_KERNEL.to_string();
                app.settings.generator_params = START_PARAMS.to_string();
                app.generate(START_KERNEL.to_string(), START_PARAMS.to_string());
                app.add_pane(now);
                let c = app.settings.panes[0].1.clone();
                app.set_config(1, START_PRESET, c, now);
                app.generate_in_pane(1, "matmul-tiled".into(), "n=128 tile=16".into());
            }
            let waiting = app
                .trace
                .as_ref()
                .is_none_or(|t| !t.label.starts_with(START_KERNEL))
                || app.panes[1]
                    .own_trace
                    .as_ref()
                    .is_none_or(|t| !t.label.starts_with("matmul-tiled"))
                || app.panes.iter().any(|p| p.performance.waiting());
            if waiting {
                plan.wait_frames = 0;
                return;
            }
            "15-performance-side-by-side.png".to_string()
        } else if extra == 11 {
            // "Why did this miss?": a conflict miss of the naive matmul explained.
            if first {
                app.remove_pane(1);
                app.settings.view = View::Address;
            }
            let Some(d) = app.panes[0].result.clone() else {
                plan.wait_frames = 0;
                return;
            };
            let address = &mut app.panes[0].address;
            if address.explaining.is_none() {
                let conflicts: Vec<usize> = (0..d.points.len())
                    .filter(|&i| d.points.outcome(i) == crate::data::Outcome::Conflict)
                    .collect();
                if let Some(&i) = conflicts.get(conflicts.len() / 3) {
                    address.explain(i);
                }
            }
            if address
                .explaining
                .as_ref()
                .is_some_and(|a| a.answer.is_none())
            {
                plan.wait_frames = 0;
                return;
            }
            "16-explain.png".to_string()
        } else if extra == 12 {
            // The kernel-language editor on SpMV: host code draws the matrix, the kernel reads it.
            if first {
                app.panes[0].address.explaining = None;
                if let Some(text) = warpscope_core::gen::source::example("spmv") {
                    app.editor.open_with(text);
                }
            }
            if app.editor.good.is_none() && app.editor.error.is_none() {
                plan.wait_frames = 0;
                return;
            }
            "17-kernel-editor.png".to_string()
        } else if extra == 13 {
            // A lesson: set conflicts, modulo vs hashed index, with its text beside the panes.
            if first {
                app.editor.open = false;
                app.settings.view = View::Misses;
                app.open_lesson("set-conflicts", now);
            }
            let loading = app.panes.len() != 2
                || app
                    .panes
                    .iter()
                    .any(|p| p.own_trace.is_none() || p.trace_load.is_some());
            if loading {
                plan.wait_frames = 0;
                return;
            }
            "18-lesson.png".to_string()
        } else if extra == 14 && app.sweep.table.is_some() {
            // A merged sweep (`--sweep FILE`, which take.sh makes): miss rate over two keys.
            if first {
                app.lesson = None;
                app.sweep.open = true;
            }
            "19-sweep-heatmap.png".to_string()
        } else if let (15, Some(file)) = (extra, plan.streamed.clone()) {
            // A trace file opened streamed (as files over 256 MiB are): the views draw a regular
            // sample and the counts gathered as the file was read.
            if first {
                app.sweep.open = false;
                app.lesson = None;
                while app.panes.len() > 1 {
                    app.remove_pane(app.panes.len() - 1);
                }
                app.share_trace(0, now);
                app.settings.view = View::Address;
                app.whole_up_to = 0;
                app.open(file);
            }
            if app.trace.as_ref().is_none_or(|t| t.streamed.is_none()) {
                plan.wait_frames = 0;
                return;
            }
            "20-streamed.png".to_string()
        } else if extra == 16 && plan.streamed.is_some() {
            // The detail of a window of that run: the file read again up to its end.
            if first {
                let total = app.panes[0]
                    .result
                    .as_ref()
                    .map_or(0, |d| d.report.totals.requests);
                app.detail(0, Some(total / 3..total / 3 + 3000));
            }
            "21-streamed-detail.png".to_string()
        } else if extra == 17
            && plan.streamed.is_some()
            && app
                .trace
                .as_ref()
                .is_some_and(|t| t.format.is_some_and(|f| !f.is_reference_stream()))
        {
            // The same file with the timing model, its warps' streams built as it is read (not a
            // `din` file's: one thread's reference stream has no warps to time).
            if first {
                app.detail(0, None);
                let preset = "gtx470-16k";
                if let Ok(c) = config::preset(preset) {
                    app.set_config(0, preset, c, now);
                }
            }
            "22-streamed-timing.png".to_string()
        } else {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        };
        // Idle: no job runs, rasters included.
        let ready = app.idle()
            && app.trace.is_some()
            && app
                .panes
                .iter()
                .all(|p| (p.result.is_some() || p.error.is_some()) && !p.address.uploading());
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
