//! The screenshot plan of `--screenshots DIR` (`screenshots/take.sh`): a list of shots, each
//! set up once when its turn comes, then taken once what it waits for is there and the app
//! has been idle for a few frames. A new shot is one entry in [`shots`].

use std::path::PathBuf;
use std::sync::Arc;

use super::views::{misses, AddressView, PerformanceView, StepView, View};
use warpscope_core::config;

use super::*;

/// Frames the app stays idle before a shot is taken (rasters arrive, plots size themselves).
const SETTLE_FRAMES: u32 = 20;

/// `--screenshots DIR`: one PNG per main view and of the other scenes of [`shots`], then exit.
pub struct ScreenshotPlan {
    pub dir: PathBuf,
    step: usize,
    wait_frames: u32,
    inflight: Option<std::sync::mpsc::Receiver<()>>,
    /// The step whose inputs have been set up.
    prepared: Option<usize>,
    /// A large trace file for the streamed shots, opened streamed (`--shot-streamed`).
    pub streamed: Option<PathBuf>,
}

/// Whether a shot is taken, asked when its turn comes.
type Wanted = Box<dyn Fn(&WarpscopeApp, &ScreenshotPlan) -> bool>;
/// A shot's set-up: the app, the plan and the frame's time.
type Prepare = Box<dyn Fn(&mut WarpscopeApp, &ScreenshotPlan, f64)>;

/// One shot of the plan.
struct Shot {
    /// Its PNG's name.
    file: String,
    /// Whether it is taken at all, asked when its turn comes; the plan ends at the first
    /// that is not (the sweep's shot needs `--sweep`, the streamed ones `--shot-streamed`).
    wanted: Wanted,
    /// Sets it up, once, when its turn comes (the app and the frame's time).
    prepare: Prepare,
    /// Asked every frame once it is set up: whether what it waits for is there. It may also
    /// keep a setting the app would change meanwhile.
    ready: Box<dyn Fn(&mut WarpscopeApp) -> bool>,
}

impl Shot {
    fn new(file: impl Into<String>) -> Self {
        Shot {
            file: file.into(),
            wanted: Box::new(|_, _| true),
            prepare: Box::new(|_, _, _| {}),
            ready: Box::new(|_| true),
        }
    }
    fn wanted(mut self, f: impl Fn(&WarpscopeApp, &ScreenshotPlan) -> bool + 'static) -> Self {
        self.wanted = Box::new(f);
        self
    }
    fn prepare(mut self, f: impl Fn(&mut WarpscopeApp, &ScreenshotPlan, f64) + 'static) -> Self {
        self.prepare = Box::new(f);
        self
    }
    fn ready(mut self, f: impl Fn(&mut WarpscopeApp) -> bool + 'static) -> Self {
        self.ready = Box::new(f);
        self
    }
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

    /// Advances the plan by one frame: sets up the shot whose turn it is, waits for it, takes
    /// it, and closes the window after the last.
    pub fn frame(&mut self, app: &mut WarpscopeApp, ctx: &egui::Context) {
        ctx.request_repaint();
        if let Some(rx) = &self.inflight {
            if rx.try_recv().is_ok() {
                self.inflight = None;
                self.step += 1;
                self.wait_frames = 0;
            }
            return;
        }
        let shots = shots();
        let Some(shot) = shots.get(self.step).filter(|s| (s.wanted)(app, self)) else {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        };
        if self.prepared != Some(self.step) {
            self.prepared = Some(self.step);
            (shot.prepare)(app, self, ctx.input(|i| i.time));
        }
        // What the shot waits for, and then the app idle: no job runs, rasters included.
        let ready = (shot.ready)(app)
            && app.idle()
            && app.trace.is_some()
            && app.panes.iter().all(|p| {
                let uploading = p.view::<AddressView>().is_some_and(|a| a.uploading());
                (p.result.is_some() || p.error.is_some()) && !uploading
            });
        if !ready {
            self.wait_frames = 0;
            return;
        }
        self.wait_frames += 1;
        if self.wait_frames < SETTLE_FRAMES {
            return;
        }
        self.inflight = Some(take(ctx, self.dir.join(&shot.file)));
    }
}

/// Asks for a screenshot of the window into `path`; the receiver hears when it is written.
fn take(ctx: &egui::Context, path: PathBuf) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
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
    rx
}

/// The plan, in order: one shot per view with one pane on the start kernel (the
/// communication view comes later, on multi-launch kernels; the L2's needs every SM
/// simulated), then the scenes of [`scenes`].
fn shots() -> Vec<Shot> {
    let views: Vec<View> = View::ALL
        .into_iter()
        .filter(|v| !matches!(v, View::Communication | View::L2))
        .collect();
    let mut shots: Vec<Shot> = views
        .iter()
        .enumerate()
        .map(|(i, &view)| {
            Shot::new(format!("{}-{}.png", i + 1, view.file_stem()))
                .prepare(move |app, _, _| {
                    if view == View::Step {
                        step_to_a_conflict(app);
                    }
                })
                .ready(move |app| {
                    app.settings.view = view;
                    true
                })
        })
        .collect();
    shots.extend(scenes());
    shots
}

/// The first pane's address view.
fn address(app: &mut WarpscopeApp) -> Option<&mut AddressView> {
    app.panes.first_mut()?.view_mut()
}

/// Step-through at a conflict miss a third of the way through the run (if it has one).
fn step_to_a_conflict(app: &mut WarpscopeApp) {
    if let Some(i) = a_third_conflict(app) {
        if let Some(s) = app.panes[0].view_mut::<StepView>() {
            s.go_to(i);
        }
    }
}

/// The conflict miss a third of the way through the first pane's conflict misses.
fn a_third_conflict(app: &WarpscopeApp) -> Option<usize> {
    let d = app.panes[0].result.clone()?;
    let conflicts: Vec<usize> = (0..d.points.len())
        .filter(|&i| d.points.outcome(i) == crate::data::Outcome::Conflict)
        .collect();
    conflicts.get(conflicts.len() / 3).copied()
}

/// Whether the trace's label starts with `kernel`.
fn shows(t: &Option<Arc<data::TraceData>>, kernel: &str) -> bool {
    t.as_ref().is_some_and(|t| t.label.starts_with(kernel))
}

/// Starts the start kernel again in the shared trace.
fn start_kernel(app: &mut WarpscopeApp) {
    app.settings.generator = START_KERNEL.to_string();
    app.settings.generator_params = START_PARAMS.to_string();
    app.generate(START_KERNEL.to_string(), START_PARAMS.to_string());
}

/// Pane 1 on the same configuration as pane 0, running tiled matmul.
fn tiled_in_pane_1(app: &mut WarpscopeApp, now: f64) {
    let c = app.settings.panes[0].1.clone();
    app.set_config(1, START_PRESET, c, now);
    app.generate_in_pane(1, "matmul-tiled".into(), "n=128 tile=16".into());
}

/// The scenes after the views, each one shot.
fn scenes() -> Vec<Shot> {
    let mut shots = vec![
        // Side by side: round-robin vs greedy-then-oldest.
        Shot::new("6-side-by-side.png").prepare(|app, _, now| {
            app.settings.view = View::Address;
            app.add_pane(now);
            let mut c = app.settings.panes[1].1.clone();
            c.schedule.policy = config::IssuePolicy::Gto;
            app.set_config(1, START_PRESET, c, now);
        }),
        // A box selection in the light theme.
        Shot::new("7-light-selection.png")
            .prepare(|app, _, _| {
                app.remove_pane(1);
                app.settings.dark = false;
            })
            .ready(|app| {
                select_lower_left(app);
                true
            }),
        // The timing model's cycle axis: the paper's setting as the released model runs it.
        Shot::new("8-timing.png").prepare(|app, _, now| {
            app.settings.dark = true;
            if let Some(a) = address(app) {
                a.clear_selection();
            }
            if let Ok(mut c) = config::preset("gtx470-16k") {
                if config::compat(&mut c, "gpu-cache-model").is_ok() {
                    app.set_config(0, "gtx470-16k", c, now);
                }
            }
        }),
    ];
    shots.extend(communication());
    shots.extend(four_panes());
    shots.extend(more_scenes());
    shots.extend(streamed());
    shots
}

/// Selects the lower-left part of the requests once the result is there, as a Shift + drag
/// would: the view asks for its summary.
fn select_lower_left(app: &mut WarpscopeApp) {
    if let (Some(d), Some(t)) = (app.panes[0].result.clone(), app.trace.clone()) {
        if let Some(a) = address(app).filter(|a| a.boxed().is_none()) {
            let n = d.points.len() as f64;
            let h = t.segments.height();
            a.select_box([0.1 * n, 0.45 * n], [0.0, 0.3 * h]);
        }
    }
}

/// The communication view of hotspot and of BFS levels.
fn communication() -> Vec<Shot> {
    let scene = |file: &str, kernel: &'static str, params: &'static str| {
        Shot::new(file)
            .prepare(move |app, _, now| {
                if let Ok(c) = config::preset(START_PRESET) {
                    app.set_config(0, START_PRESET, c, now);
                }
                app.settings.view = View::Communication;
                app.settings.generator = kernel.to_string();
                app.settings.generator_params = params.to_string();
                app.generate(kernel.to_string(), params.to_string());
            })
            // The report, and its density map (prepared on the worker) unless it has none.
            .ready(|app| {
                let Some(c) = app.panes[0].view::<views::CommView>() else {
                    return false;
                };
                c.report.as_ref().is_some_and(|r| {
                    r.transfers.is_empty() || c.shown() == Some((c.launches, c.counts))
                })
            })
    };
    vec![
        scene(
            "5-communication.png",
            "hotspot",
            "nx=128 ny=128 steps=6 block=16,16",
        ),
        scene(
            "9-communication-bfs.png",
            "bfs-levels",
            "nodes=8192 degree=4 block=64",
        ),
    ]
}

/// Four panes (round-robin, GTO, 8-way, 2-way) in the address, miss and reuse views.
fn four_panes() -> Vec<Shot> {
    [View::Address, View::Misses, View::Reuse]
        .into_iter()
        .enumerate()
        .map(|(i, view)| {
            Shot::new(format!("{}-four-panes-{}.png", i + 10, view.file_stem()))
                .prepare(move |app, _, now| {
                    if i == 0 {
                        start_kernel(app);
                        while app.panes.len() < 4 {
                            app.add_pane(now);
                        }
                        for (p, policy, ways) in [
                            (1, config::IssuePolicy::Gto, 4),
                            (2, config::IssuePolicy::RoundRobin, 8),
                            (3, config::IssuePolicy::RoundRobin, 2),
                        ] {
                            let mut c = app.settings.panes[0].1.clone();
                            c.schedule.policy = policy;
                            c.cache.ways = ways;
                            app.set_config(p, START_PRESET, c, now);
                        }
                    }
                })
                .ready(move |app| {
                    app.settings.view = view;
                    shows(&app.trace, START_KERNEL)
                })
        })
        .collect()
}

/// Kernels side by side, source lines, the performance model, explain, the editor, a lesson
/// and a merged sweep.
fn more_scenes() -> Vec<Shot> {
    vec![
        // Different kernels side by side: naive and tiled matmul on the same cache.
        Shot::new("13-kernels-side-by-side.png")
            .prepare(|app, _, now| {
                app.settings.view = View::Address;
                while app.panes.len() > 2 {
                    app.remove_pane(app.panes.len() - 1);
                }
                tiled_in_pane_1(app, now);
            })
            .ready(|app| shows(&app.panes[1].own_trace, "matmul-tiled")),
        // An Accel-Sim trace with source lines: misses per line.
        Shot::new("14-misses-per-source-line.png")
            .prepare(|app, _, _| {
                app.remove_pane(1);
                app.settings.view = View::Misses;
                app.open(PathBuf::from("sample-traces/accelsim-lineinfo"));
            })
            .ready(|app| {
                // Asked again each frame: the view falls back to per instruction while it
                // still shows the previous trace's result, which has no source lines.
                app.settings.misses.per = misses::Per::SourceLine;
                app.trace
                    .as_ref()
                    .is_some_and(|t| t.label.contains("accelsim-lineinfo"))
            }),
        // The performance model of naive and tiled matmul side by side.
        Shot::new("15-performance-side-by-side.png")
            .prepare(|app, _, now| {
                app.settings.view = View::Performance;
                app.settings.misses.per = misses::Per::Instruction;
                start_kernel(app);
                app.add_pane(now);
                tiled_in_pane_1(app, now);
            })
            .ready(|app| {
                shows(&app.trace, START_KERNEL)
                    && shows(&app.panes[1].own_trace, "matmul-tiled")
                    && !app
                        .panes
                        .iter()
                        .any(|p| p.view::<PerformanceView>().is_some_and(|v| v.waiting()))
            }),
        // "Why did this miss?": a conflict miss of the naive matmul explained.
        Shot::new("16-explain.png")
            .prepare(|app, _, _| {
                app.remove_pane(1);
                app.settings.view = View::Address;
            })
            .ready(|app| {
                if app.panes[0].result.is_none() {
                    return false;
                }
                let conflict = a_third_conflict(app);
                let Some(a) = address(app) else {
                    return true;
                };
                if a.explaining.is_none() {
                    if let Some(i) = conflict {
                        a.explain(i);
                    }
                }
                a.explaining.as_ref().is_none_or(|a| a.answer.is_some())
            }),
        // The kernel-language editor on SpMV: host code draws the matrix, the kernel reads it.
        Shot::new("17-kernel-editor.png")
            .prepare(|app, _, _| {
                if let Some(a) = address(app) {
                    a.explaining = None;
                }
                if let Some(text) = warpscope_core::gen::source::example("spmv") {
                    app.editor.open_with(text);
                }
            })
            .ready(|app| app.editor.good.is_some() || app.editor.error.is_some()),
        // A lesson: set conflicts, modulo vs hashed index, with its text beside the panes.
        Shot::new("18-lesson.png")
            .prepare(|app, _, now| {
                app.editor.open = false;
                app.settings.view = View::Misses;
                app.open_lesson("set-conflicts", now);
            })
            .ready(|app| {
                app.panes.len() == 2
                    && app
                        .panes
                        .iter()
                        .all(|p| p.own_trace.is_some() && p.trace_load.is_none())
            }),
        // The shared L2 of the start kernel with every SM simulated: its slices over time and
        // where the DRAM bytes come from.
        Shot::new("23-l2.png")
            .prepare(|app, _, now| {
                app.lesson = None;
                while app.panes.len() > 1 {
                    app.remove_pane(app.panes.len() - 1);
                }
                app.share_trace(0, now);
                start_kernel(app);
                if let Ok(mut c) = config::preset("fermi-16k") {
                    c.gpu.simulate = config::SmSelection::All;
                    app.set_config(0, "fermi-16k (edited)", c, now);
                }
            })
            .ready(|app| {
                app.settings.view = View::L2;
                shows(&app.trace, START_KERNEL)
                    && app.panes[0]
                        .result
                        .as_ref()
                        .is_some_and(|d| d.report.l2.is_some())
            }),
        // A merged sweep (`--sweep FILE`, which take.sh makes): miss rate over two keys.
        Shot::new("19-sweep-heatmap.png")
            .wanted(|app, _| app.sweep.table.is_some())
            .prepare(|app, _, _| {
                app.lesson = None;
                app.sweep.open = true;
            }),
        // Two kernels' communication side by side: hotspot's stencil and BFS's levels.
        Shot::new("24-communication-side-by-side.png")
            .prepare(|app, _, now| {
                // Pane 1 keeps its configuration (the streamed shots after this use it).
                app.sweep.open = false;
                app.settings.view = View::Communication;
                app.generate("hotspot".into(), "nx=128 ny=128 steps=6 block=16,16".into());
                app.add_pane(now);
                app.generate_in_pane(
                    1,
                    "bfs-levels".into(),
                    "nodes=8192 degree=4 block=64".into(),
                );
            })
            .ready(|app| {
                app.panes.len() == 2
                    && shows(&app.trace, "hotspot")
                    && shows(&app.panes[1].own_trace, "bfs-levels")
                    && app.panes.iter().all(|p| {
                        p.view::<views::CommView>().is_some_and(|c| {
                            c.report.as_ref().is_some_and(|r| {
                                r.per_launch.len() > 1 && c.shown() == Some((c.launches, c.counts))
                            })
                        })
                    })
            }),
    ]
}

/// A trace file opened streamed (`--shot-streamed`, as files over 256 MiB are): its sample,
/// the detail of a window, and the timing model.
fn streamed() -> Vec<Shot> {
    vec![
        // The views draw a regular sample and the counts gathered as the file was read.
        Shot::new("20-streamed.png")
            .wanted(|_, plan| plan.streamed.is_some())
            .prepare(|app, plan, now| {
                app.sweep.open = false;
                app.lesson = None;
                while app.panes.len() > 1 {
                    app.remove_pane(app.panes.len() - 1);
                }
                app.share_trace(0, now);
                app.settings.view = View::Address;
                app.whole_up_to = 0;
                if let Some(file) = plan.streamed.clone() {
                    app.open(file);
                }
            })
            .ready(|app| app.trace.as_ref().is_some_and(|t| t.streamed.is_some())),
        // The detail of a window of that run: the file read again up to its end.
        Shot::new("21-streamed-detail.png")
            .wanted(|_, plan| plan.streamed.is_some())
            .prepare(|app, _, _| {
                let total = app.panes[0]
                    .result
                    .as_ref()
                    .map_or(0, |d| d.report.totals.requests);
                app.detail(0, Some(total / 3..total / 3 + 3000));
            }),
        // The same file with the timing model, its warps' streams built as it is read (not a
        // `din` file's: one thread's reference stream has no warps to time).
        Shot::new("22-streamed-timing.png")
            .wanted(|app, plan| {
                plan.streamed.is_some()
                    && app
                        .trace
                        .as_ref()
                        .is_some_and(|t| t.format.is_some_and(|f| !f.is_reference_stream()))
            })
            .prepare(|app, _, now| {
                app.detail(0, None);
                let preset = "gtx470-16k";
                if let Ok(c) = config::preset(preset) {
                    app.set_config(0, preset, c, now);
                }
            }),
    ]
}
