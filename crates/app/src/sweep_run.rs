//! Sweeps from inside the app: axes typed as `KEY=V1,V2,...` (the CLI's `--vary`, read by
//! `config::grid`), run on the active pane's trace and configuration as a job (progress in
//! the status bar, Cancel, every core), the result shown in the sweep window's heatmap as the
//! table `warpscope sweep` would have written for the same grid. A page (which has no
//! threads) runs the points one after the other in pieces between frames ([`pieces`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use egui::{RichText, Ui};
use rayon::prelude::*;

use super::data::TraceData;
use super::job::{Finished, Job, JobError, Progress};
use super::sweep_view::{Key, SweepTable};
use warpscope_core::config::{grid, ReuseMode, SimConfig};
use warpscope_core::report::sweep_columns::{L2_METRICS, METRICS};
use warpscope_core::sim::{Observer, Report, RunSteps, SimError};

/// Axis fields the form offers.
const AXES: usize = 3;

/// The sweep form: its axes as typed, and the sweep running.
pub struct SweepRun {
    pub axes: [String; AXES],
    pub job: Option<Job<SweepTable>>,
    pub error: Option<String>,
}

impl Default for SweepRun {
    fn default() -> Self {
        SweepRun {
            // The values of Nugteren et al.'s (2014) fig. 12 for the cache size and the
            // associativity (0.25x to 4x the 16 KB 4-way L1's), as a grid. Modulo set indexing,
            // since the Fermi hash of the default preset indexes at most 64 sets (a 16 KB
            // direct-mapped L1 has 128); a key with one value is not an axis of the heatmap.
            axes: [
                "cache-size=4K,8K,16K,32K,64K".into(),
                "ways=1,2,4,8,16".into(),
                "set-index=modulo".into(),
            ],
            job: None,
            error: None,
        }
    }
}

/// Stops a run when its job is cancelled.
struct Stop<'a>(&'a Progress);

impl Observer for Stop<'_> {
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        !self.0.cancelled()
    }
    fn wants_requests(&self) -> bool {
        false
    }
}

/// Simulates `trace` with `base` at every point of `axes`, the points spread over the cores,
/// and makes the table a sweep of the CLI writes: an `input` key, one key per axis, the
/// counters of [`METRICS`] (and of [`L2_METRICS`] where a point simulates an L2). Reuse
/// distances are off, as in `warpscope sweep`.
pub fn run(
    trace: &TraceData,
    base: &SimConfig,
    axes: &[grid::Axis],
    progress: &Arc<Progress>,
) -> Finished<SweepTable> {
    let mut base = base.clone();
    base.reuse = ReuseMode::Off;
    let points = grid::points(axes);
    let configs = grid::configs(&base, &points).map_err(JobError::Failed)?;
    progress.set_total(configs.len() as u64);
    let done = AtomicU64::new(0);
    let reports: Vec<Report> = pool()?.install(|| {
        configs
            .par_iter()
            .zip(&points)
            .map(|(c, point)| {
                let r = warpscope_shell::timed::simulate(
                    c,
                    &trace.trace.kernels,
                    &mut Stop(progress),
                    1,
                );
                progress.report(
                    done.fetch_add(1, Ordering::Relaxed) + 1,
                    configs.len() as u64,
                );
                r.map_err(|e| match e {
                    warpscope_core::sim::SimError::Cancelled => JobError::Cancelled,
                    e => JobError::Failed(format!(
                        "{}: {}",
                        grid::describe(point),
                        super::worker::error_chain(&e)
                    )),
                })
            })
            .collect::<Result<_, _>>()
    })?;
    Ok(table(&trace.label, axes, &points, &reports))
}

/// The threads a sweep's points are spread over: as many as `warpscope --jobs N` gives the
/// app, one per core by default (`shell::lanes::cores`).
pub(crate) fn pool() -> Result<rayon::ThreadPool, JobError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(warpscope_shell::lanes::cores(0))
        .build()
        .map_err(|e| JobError::Failed(format!("starting the sweep's threads: {e}")))
}

/// [`run`] a point after the other, each point's run in the core's pieces: how a page runs a
/// sweep between frames ([`crate::sliced::Slices::job`]). The same table.
pub fn pieces(
    trace: Arc<TraceData>,
    base: &SimConfig,
    axes: Vec<grid::Axis>,
) -> impl FnMut(&Progress) -> Option<Finished<SweepTable>> + Send + 'static {
    let mut base = base.clone();
    base.reuse = ReuseMode::Off;
    let points = grid::points(&axes);
    let configs = grid::configs(&base, &points);
    let mut reports: Vec<Report> = Vec::new();
    let mut running: Option<RunSteps> = None;
    move |progress| {
        let configs = match &configs {
            Ok(c) => c,
            Err(e) => return Some(Err(JobError::Failed(e.clone()))),
        };
        let n = reports.len();
        let (Some(c), Some(point)) = (configs.get(n), points.get(n)) else {
            return Some(Ok(table(&trace.label, &axes, &points, &reports)));
        };
        let failed = |e: &SimError| match e {
            SimError::Cancelled => JobError::Cancelled,
            e => JobError::Failed(format!(
                "{}: {}",
                grid::describe(point),
                super::worker::error_chain(e)
            )),
        };
        let run = match &mut running {
            Some(r) => r,
            None => match RunSteps::new(c) {
                Ok(r) => running.insert(r),
                Err(e) => return Some(Err(failed(&e))),
            },
        };
        match run.step(c, &trace.trace.kernels, &mut Stop(progress)) {
            Ok(None) => None,
            Ok(Some(r)) => {
                reports.push(r);
                running = None;
                progress.report(reports.len() as u64, configs.len() as u64);
                None
            }
            Err(e) => Some(Err(failed(&e))),
        }
    }
}

/// The sweep's table: what `SweepTable::read` gives for the CLI's file of the same sweep.
fn table(
    input: &str,
    axes: &[grid::Axis],
    points: &[grid::Point],
    reports: &[Report],
) -> SweepTable {
    let n = points.len();
    let mut keys = vec![Key {
        name: "input".into(),
        rows: vec![0; n],
        distinct: vec![input.to_string()],
    }];
    for (a, (name, values)) in axes.iter().enumerate() {
        let rows = points
            .iter()
            .map(|p| values.iter().position(|v| *v == p[a].1).unwrap_or(0) as u32)
            .collect();
        keys.push(Key {
            name: name.clone(),
            rows,
            distinct: values.clone(),
        });
    }
    let l2 = reports.iter().any(|r| r.l2.is_some());
    let l2_metrics = if l2 { &L2_METRICS[..] } else { &[] };
    let values = METRICS
        .iter()
        .chain(l2_metrics)
        .map(|&m| {
            (
                m.to_string(),
                reports.iter().map(|r| metric(r, m)).collect(),
            )
        })
        .collect();
    SweepTable {
        file: format!("sweep of {input}"),
        keys,
        values,
    }
}

/// Sweep column `m` of a point's report (`METRICS`, `L2_METRICS`); NaN (no value) for the
/// L2's where the point simulated none.
fn metric(r: &Report, m: &str) -> f64 {
    let t = &r.totals;
    let c = &t.miss_classes;
    match m {
        "requests" => t.requests as f64,
        "hits" => t.hits as f64,
        "misses" => t.misses as f64,
        "miss_rate" => r.miss_rate,
        "compulsory" => c.compulsory as f64,
        "capacity" => c.capacity as f64,
        "conflict" => c.conflict as f64,
        "transactions" => t.transactions as f64,
        "bytes_from_memory" => t.bytes_from_memory as f64,
        "bytes_to_memory" => t.bytes_to_memory as f64,
        "writebacks" => t.writebacks as f64,
        l2_metric => r.l2.as_ref().map_or(f64::NAN, |l2| {
            let c = &l2.totals;
            match l2_metric {
                "l2_requests" => c.requests as f64,
                "l2_hits" => c.hits as f64,
                "l2_misses" => c.misses as f64,
                "l2_miss_rate" => l2.miss_rate,
                "bytes_from_dram" => c.bytes_from_dram as f64,
                _ => c.bytes_to_dram as f64,
            }
        }),
    }
}

impl super::WarpscopeApp {
    /// The form that runs a sweep on the active pane, at the top of the sweep window.
    pub(super) fn sweep_form(&mut self, ui: &mut Ui) {
        let pane = self.settings.active;
        let trace = self.pane_trace(pane);
        egui::CollapsingHeader::new(format!("Run a sweep on pane {}", pane + 1))
            .default_open(self.sweep.table.is_none())
            .show(ui, |ui| {
                ui.label(
                    RichText::new(
                        "Each line varies one key over its values (as warpscope sweep --vary: \
                         cache-size, ways, line-size, replacement, set-index, schedule, ...; \
                         docs/cli.md); every combination runs on this pane's trace and \
                         configuration.",
                    )
                    .weak(),
                );
                for (i, a) in self.sweep_run.axes.iter_mut().enumerate() {
                    ui.horizontal(|ui| {
                        let l = ui.label(format!("Vary {}", i + 1));
                        ui.add(egui::TextEdit::singleline(a).desired_width(320.0))
                            .labelled_by(l.id);
                    });
                }
                let vary: Vec<String> = self
                    .sweep_run
                    .axes
                    .iter()
                    .filter(|a| !a.trim().is_empty())
                    .cloned()
                    .collect();
                let base = &self.settings.panes[pane].1;
                let axes = grid::axes(&vary, base);
                let points: usize = axes
                    .as_ref()
                    .map_or(0, |a| a.iter().map(|x| x.1.len()).product());
                ui.horizontal(|ui| {
                    let running = self.sweep_run.job.is_some();
                    let ready = match (&axes, &trace) {
                        (Err(e), _) => Err(e.clone()),
                        (_, None) => Err("no trace yet".to_string()),
                        (_, Some(t)) if t.streamed.is_some() => Err(
                            "this trace is read from its file as each run goes: sweep it with \
                             warpscope sweep --trace FILE (docs/cli.md)"
                                .to_string(),
                        ),
                        (Ok(_), Some(_)) => Ok(()),
                    };
                    let start = ui
                        .add_enabled(
                            ready.is_ok() && !running,
                            egui::Button::new(format!("Run {points} configurations")),
                        )
                        .on_hover_text(if crate::sliced::PIECES {
                            "A point after the other, between the page's other work; Cancel in \
                             the status bar"
                                .to_string()
                        } else {
                            format!(
                                "On a worker, spread over {} threads (warpscope --jobs N); \
                                 Cancel in the status bar",
                                warpscope_shell::lanes::cores(0)
                            )
                        });
                    if let Err(e) = &ready {
                        ui.colored_label(ui.visuals().warn_fg_color, e);
                    }
                    if running && ui.button("Cancel").clicked() {
                        self.sweep_run.job = None;
                        self.status = super::Status::Info("Sweep cancelled".into());
                    }
                    if let (true, Ok(axes), Some(trace)) = (start.clicked(), axes, trace) {
                        let base = base.clone();
                        let label = format!("Sweep: {points} configurations of pane {}", pane + 1);
                        self.sweep_run.error = None;
                        self.sweep_run.job = Some(if crate::sliced::PIECES {
                            let pieces = pieces(trace, &base, axes);
                            crate::sliced::Slices::job(label, &self.wake, pieces)
                        } else {
                            Job::spawn(label, &self.wake, move |p| run(&trace, &base, &axes, p))
                        });
                    }
                });
                if let Some(e) = &self.sweep_run.error {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
            });
    }
}
