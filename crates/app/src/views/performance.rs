//! The performance model view (`warpscope_core::analyze`: Dasgupta 2011 over Hong and Kim 2009): MWP
//! and CWP against the active warps per SM, in the shape of Hong and Kim's figures, with the
//! kernel's point and the MWP limit that binds it highlighted; what-if sliders (occupancy,
//! bandwidth, latency, departure delays) that move the point live; the verdict, the
//! explanation, the inputs with their sources and the what-if table. Each pane has its own, so
//! two kernels or two GPU settings sit side by side.
//!
//! The inputs are measured once per trace off the UI thread (the duplicate loads run the
//! timing model); the sliders change only the GPU model, so the point moves at once.

use egui::{Color32, RichText, Ui};
use egui_plot::{Legend, Line, LineStyle, Plot, PlotPoints, Points, VLine};

use super::command::{Command, PaneCx, PaneView, Polled};
use super::*;
use crate::data::TraceData;
use crate::job::{take_finished, Finished, Job, JobError, Progress};
use crate::worker::Relay;
use std::sync::Arc;

use warpscope_core::analyze::{
    self, Analysis, GpuModel, KernelInputs, Measured, Measuring, MwpLimit,
};

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Performance,
    name: "Performance model",
    file_stem: "performance",
    needs_trace_in_memory: true,
    new: || Box::new(PerformanceView::default()),
};

/// What a measurement job gives: one entry per kernel of the trace (a kernel without global
/// memory, or one that does not fit, has its error instead).
pub type Measurements = Vec<(String, Result<Measured, String>)>;

/// The job's pieces: every kernel of `trace` measured on `gpu`, its runs a piece at a time
/// ([`crate::sliced::Slices::job`]); its progress follows the runs, and cancelling the job
/// stops them.
pub fn measure(
    trace: Arc<TraceData>,
    gpu: GpuModel,
) -> impl FnMut(&Progress) -> Option<Finished<Measurements>> + Send + 'static {
    let mut out: Measurements = Vec::new();
    let mut measuring = None;
    move |progress| {
        let Some(k) = trace.trace.kernels.get(out.len()) else {
            return Some(Ok(std::mem::take(&mut out)));
        };
        let m = measuring.get_or_insert_with(|| Measuring::new(&gpu, &analyze::Given::default()));
        let measured = match m.step(k, &mut Relay(progress)) {
            Ok(None) => return None,
            Err(analyze::MeasureError::Sim(warpscope_core::sim::SimError::Cancelled)) => {
                return Some(Err(JobError::Cancelled))
            }
            Ok(Some(m)) => Ok(m),
            Err(e) => Err(e.to_string()),
        };
        measuring = None;
        out.push((k.name.clone(), measured));
        None
    }
}

/// The performance view of one pane.
#[derive(Default)]
pub struct PerformanceView {
    /// The trace (its `Arc`'s address) the measurements are of.
    for_trace: Option<usize>,
    /// A measurement was asked for this trace (its answer has not come yet, or has).
    asked: bool,
    measured: Option<Measurements>,
    kernel: usize,
    /// The GPU model as the sliders left it.
    gpu: GpuModel,
    /// Active blocks per SM chosen with the slider (`None`: as measured).
    active_blocks: Option<u32>,
    /// Measuring the trace (its `Arc`'s address, and what was measured).
    job: Option<Job<(usize, Measurements)>>,
}

impl PerformanceView {
    /// The measurements of `trace` arrived.
    fn measured(&mut self, trace: usize, m: Measurements) {
        if self.for_trace == Some(trace) {
            self.measured = Some(m);
        }
    }

    /// Whether the view waits for a measurement.
    pub fn waiting(&self) -> bool {
        self.asked && self.measured.is_none()
    }

    /// Moves the occupancy slider (as a user would), for the screenshot plan and tests.
    #[cfg(test)]
    pub fn set_active_blocks(&mut self, blocks: Option<u32>) {
        self.active_blocks = blocks;
    }
}

impl PaneView for PerformanceView {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let id = std::sync::Arc::as_ptr(cx.trace) as usize;
        if self.for_trace != Some(id) {
            *self = PerformanceView {
                for_trace: Some(id),
                gpu: self.gpu.clone(),
                ..PerformanceView::default()
            };
        }
        let Some(measured) = &self.measured else {
            if !self.asked {
                self.asked = true;
                let (trace, gpu) = (cx.trace.clone(), analyze::gt200());
                let mut pieces = measure(trace, gpu);
                self.job = Some(crate::sliced::Slices::job(
                    format!("Measuring the model's inputs of pane {}", cx.pane + 1),
                    cx.wake,
                    move |p: &Progress| pieces(p).map(|r| r.map(|m| (id, m))),
                ));
            }
            ui.centered_and_justified(|ui| {
                ui.label(
                    RichText::new("Measuring the model's inputs (the timing model finds the duplicate loads)…")
                        .weak(),
                );
            });
            return Vec::new();
        };
        if measured.is_empty() {
            empty(ui, "The trace has no kernel.");
            return Vec::new();
        }
        self.kernel = self.kernel.min(measured.len() - 1);
        if measured.len() > 1 {
            let names: Vec<String> = measured
                .iter()
                .enumerate()
                .map(|(i, (n, _))| format!("{i}: {n}"))
                .collect();
            egui::ComboBox::from_id_salt(("perf-kernel", cx.pane))
                .selected_text(&names[self.kernel])
                .show_index(ui, &mut self.kernel, names.len(), |i| names[i].clone());
        }
        let m = match &measured[self.kernel].1 {
            Ok(m) => m.clone(),
            Err(e) => {
                empty(ui, &format!("No model for this kernel: {e}"));
                return Vec::new();
            }
        };
        let inputs = KernelInputs {
            active_blocks_per_sm: self.active_blocks.unwrap_or(m.inputs.active_blocks_per_sm),
            ..m.inputs.clone()
        };
        let a = match analyze::analyze(&inputs, &self.gpu) {
            Ok(a) => a,
            Err(e) => {
                empty(ui, &format!("The model cannot run: {e}"));
                return Vec::new();
            }
        };
        headline(ui, &a);
        let h = ui.available_height();
        curves(ui, cx.pane, &inputs, &self.gpu, &a, h * 0.46);
        egui::ScrollArea::vertical()
            .id_salt(("perf-scroll", cx.pane))
            .show(ui, |ui| {
                self.sliders(ui, &m, cx.pane);
                ui.label(RichText::new(analyze::explain(&inputs, &a)).italics());
                ui.add_space(4.0);
                numbers(ui, cx.pane, &m, &inputs, &a);
                ui.add_space(4.0);
                what_ifs(ui, cx.pane, &inputs, &self.gpu, &a);
            });
        Vec::new()
    }

    fn poll(&mut self, _pane: &Polled) -> Option<String> {
        if let Some(Ok((trace, m))) = take_finished(&mut self.job) {
            self.measured(trace, m);
        }
        None
    }

    fn busy(&self) -> bool {
        self.job.is_some()
    }
}

impl PerformanceView {
    fn sliders(&mut self, ui: &mut Ui, m: &Measured, pane: usize) {
        let g = &mut self.gpu;
        egui::Grid::new(("perf-sliders", pane))
            .num_columns(2)
            .spacing([10.0, 2.0])
            .show(ui, |ui| {
                let measured = m.inputs.active_blocks_per_sm;
                let top = (g.max_blocks_per_sm * 2).max(measured);
                let mut blocks = self.active_blocks.unwrap_or(measured);
                ui.label("active blocks per SM");
                if ui
                    .add(egui::Slider::new(&mut blocks, 1..=top))
                    .on_hover_text(format!(
                        "Measured: {measured} (the GPU allows {})",
                        g.max_blocks_per_sm
                    ))
                    .changed()
                {
                    self.active_blocks = (blocks != measured).then_some(blocks);
                }
                ui.end_row();
                ui.label("bandwidth (GB/s)");
                ui.add(egui::Slider::new(&mut g.bandwidth_gb_s, 10.0..=4000.0).logarithmic(true));
                ui.end_row();
                ui.label("base memory latency (cycles)");
                ui.add(egui::Slider::new(&mut g.base_latency, 50.0..=2000.0).logarithmic(true));
                ui.end_row();
                for (i, size) in ["32", "64", "128"].iter().enumerate() {
                    ui.label(format!("departure delay, {size} B (cycles)"));
                    ui.add(
                        egui::Slider::new(&mut g.departure_delay[i], 1.0..=400.0).logarithmic(true),
                    );
                    ui.end_row();
                }
                ui.label("departure delay, vector (cycles)");
                ui.add(
                    egui::Slider::new(&mut g.departure_delay_vector, 1.0..=400.0).logarithmic(true),
                );
                ui.end_row();
            });
        if ui
            .small_button("Reset to gt200")
            .on_hover_text("Dasgupta 2011's tuned Tesla C1060 and the measured occupancy")
            .clicked()
        {
            self.gpu = analyze::gt200();
            self.active_blocks = None;
        }
    }
}

fn verdict(a: &Analysis) -> &'static str {
    if a.memory_bound {
        "memory-bound"
    } else {
        "compute-bound"
    }
}

fn headline(ui: &mut Ui, a: &Analysis) {
    let colour = if a.memory_bound {
        Color32::from_rgb(0xE1, 0x57, 0x59)
    } else {
        Color32::from_rgb(0x59, 0xA1, 0x4F)
    };
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(verdict(a)).strong().size(16.0).color(colour));
        ui.label(format!(
            "{:.4} ms ({:.0} cycles) · MWP {:.2} set by {} · CWP {:.2} · N {:.0}",
            a.milliseconds,
            a.cycles,
            a.mwp,
            a.mwp_limit.name(),
            a.cwp,
            a.active_warps
        ));
    });
}

const MWP_COLOUR: Color32 = Color32::from_rgb(0x4E, 0x79, 0xA7);
const CWP_COLOUR: Color32 = Color32::from_rgb(0xF2, 0x8E, 0x2B);
const BINDING: Color32 = Color32::from_rgb(0xE1, 0x57, 0x59);

/// MWP, its three limits and CWP for every occupancy from one block per SM to twice the GPU's
/// limit, against the active warps; the kernel's point on both.
fn curves(ui: &mut Ui, pane: usize, k: &KernelInputs, g: &GpuModel, a: &Analysis, height: f32) {
    let top = (g.max_blocks_per_sm * 2).max(k.active_blocks_per_sm);
    let mut mwp = Vec::new();
    let mut cwp = Vec::new();
    let mut limits: [Vec<[f64; 2]>; 3] = Default::default();
    for b in 1..=top {
        let Ok(x) = analyze::analyze(
            &KernelInputs {
                active_blocks_per_sm: b,
                ..k.clone()
            },
            g,
        ) else {
            continue;
        };
        let n = x.active_warps;
        mwp.push([n, x.mwp]);
        cwp.push([n, x.cwp]);
        for (i, v) in [
            x.mwp_peak_bandwidth,
            x.mwp_without_bandwidth,
            x.active_warps_for_mwp,
        ]
        .into_iter()
        .enumerate()
        {
            if v.is_finite() {
                limits[i].push([n, v]);
            }
        }
    }
    let names = [
        (MwpLimit::Bandwidth, "MWP limit: peak bandwidth"),
        (MwpLimit::Latency, "MWP limit: latency / departure delay"),
        (MwpLimit::ActiveWarps, "MWP limit: active warps"),
    ];
    let gpu_limit =
        (g.max_warps_per_sm as f64).min((g.max_blocks_per_sm * k.warps_per_block(g)) as f64);
    // MWP and CWP set the height; the limits are drawn up to it (a limit far above does not
    // bind), with room above the curves for the legend.
    let y_top = mwp.iter().chain(&cwp).map(|p| p[1]).fold(1.0, f64::max) * 1.7;
    for l in limits.iter_mut() {
        l.retain(|p| p[1] <= y_top);
    }
    Plot::new(("perf-curves", pane))
        .height(height)
        .legend(Legend::default().follow_insertion_order(true))
        .x_axis_label("active warps per SM (N)")
        .y_axis_label("warps")
        .include_x(0.0)
        .include_y(0.0)
        .include_y(y_top)
        .show(ui, |pui| {
            for (i, (limit, name)) in names.into_iter().enumerate() {
                let binds = limit == a.mwp_limit;
                let line = Line::new(name, PlotPoints::from(limits[i].clone()))
                    .style(if binds {
                        LineStyle::Solid
                    } else {
                        LineStyle::dashed_loose()
                    })
                    .width(if binds { 3.0 } else { 1.0 })
                    .color(if binds { BINDING } else { Color32::GRAY });
                pui.line(line);
            }
            pui.line(
                Line::new("MWP", PlotPoints::from(mwp))
                    .width(2.5)
                    .color(MWP_COLOUR),
            );
            pui.line(
                Line::new("CWP", PlotPoints::from(cwp))
                    .width(2.5)
                    .color(CWP_COLOUR),
            );
            // Unnamed (kept out of the legend): the headline gives their values.
            pui.vline(VLine::new("", gpu_limit).color(Color32::DARK_GRAY));
            pui.points(
                Points::new("", PlotPoints::from(vec![[a.active_warps, a.mwp]]))
                    .radius(6.0)
                    .color(MWP_COLOUR),
            );
            pui.points(
                Points::new("", PlotPoints::from(vec![[a.active_warps, a.cwp]]))
                    .radius(6.0)
                    .color(CWP_COLOUR),
            );
        });
}

/// The inputs with their sources, and the model's intermediates.
fn numbers(ui: &mut Ui, pane: usize, m: &Measured, k: &KernelInputs, a: &Analysis) {
    egui::Grid::new(("perf-inputs", pane))
        .striped(true)
        .spacing([10.0, 1.0])
        .show(ui, |ui| {
            for h in ["input", "value", "from"] {
                ui.label(RichText::new(h).weak());
            }
            ui.end_row();
            for r in analyze::input_rows(m, k) {
                ui.label(r.name);
                ui.label(r.value);
                ui.label(RichText::new(r.from).weak());
                ui.end_row();
            }
        });
    ui.add_space(4.0);
    egui::Grid::new(("perf-model", pane))
        .striped(true)
        .spacing([10.0, 1.0])
        .show(ui, |ui| {
            ui.label(RichText::new("model").weak());
            ui.label(RichText::new("value").weak());
            ui.end_row();
            for (name, v) in analyze::model_rows(a) {
                ui.label(name);
                ui.label(v);
                ui.end_row();
            }
        });
}

fn what_ifs(ui: &mut Ui, pane: usize, k: &KernelInputs, g: &GpuModel, a: &Analysis) {
    let Ok(ws) = analyze::what_ifs(k, g, a) else {
        return;
    };
    egui::Grid::new(("perf-whatif", pane))
        .striped(true)
        .spacing([10.0, 1.0])
        .show(ui, |ui| {
            for h in ["what if", "MWP", "CWP", "verdict", "ms", "time"] {
                ui.label(RichText::new(h).weak());
            }
            ui.end_row();
            for w in ws {
                ui.label(w.label);
                ui.label(format!("{:.2}", w.analysis.mwp));
                ui.label(format!("{:.2}", w.analysis.cwp));
                ui.label(verdict(&w.analysis));
                ui.label(format!("{:.4}", w.analysis.milliseconds));
                let colour = if w.speedup < 0.995 {
                    Color32::from_rgb(0x59, 0xA1, 0x4F)
                } else if w.speedup > 1.005 {
                    Color32::from_rgb(0xE1, 0x57, 0x59)
                } else {
                    ui.visuals().weak_text_color()
                };
                ui.label(RichText::new(format!("×{:.2}", w.speedup)).color(colour));
                ui.end_row();
            }
        });
}
