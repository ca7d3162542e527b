//! The CTA communication view: a zoomable writer x reader density map, the transfer-size
//! CDF, degree histograms and the per-launch evolution, drawn from [`warpscope_core::comm`]'s
//! report of the pane's trace. A view like the others: each pane holds one, which analyzes
//! the pane's trace once (a job of its own) whatever the pane's cache configuration, so panes
//! of different traces compare their communication side by side.

use std::sync::Arc;

use egui::{Color32, RichText, Ui};
use egui_plot::{Bar, BarChart, Legend, Line, Plot, PlotImage, PlotPoint, PlotPoints};

use super::{Command, PaneCx, PaneView, Polled};
use crate::data::{CommData, TraceData};
use crate::job::{take_finished, Job, JobError, Progress, Wake};
use crate::theme;
use warpscope_core::comm::{CommReport, Measure, Pair};
use warpscope_core::trace::Dim3;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Communication,
    name: "CTA communication",
    file_stem: "communication",
    needs_trace_in_memory: true,
    new: || Box::new(CommView::default()),
};

/// The density map is drawn at most this many cells a side; larger grids are binned.
pub const MAX_SIDE: u32 = 512;

/// The communication view of a pane's trace, with what it keeps between frames. The
/// analysis and the density maps are jobs the view starts and takes the results of
/// ([`PaneView::poll`]); forgetting the trace ([`CommView::reset`], when the pane's trace
/// changes) drops, and so stops, them.
#[derive(Default)]
pub struct CommView {
    /// The trace (by identity) the report or the running analysis is for.
    pub for_trace: Option<usize>,
    /// The analysis of the trace, once done.
    pub report: Option<Arc<CommReport>>,
    /// The launch pairs of the report, for the selector.
    launch_pairs: Vec<(u32, u32)>,
    /// The analysis was cancelled; it runs again only when asked.
    pub cancelled: bool,
    /// Why the analysis failed; it runs again only when asked.
    pub failed: Option<String>,
    /// One (writer launch, reader launch) pair, or all of them.
    pub launches: Option<(u32, u32)>,
    /// Count transfers instead of bytes.
    pub counts: bool,
    /// The density map drawn (possibly of an earlier selection while the current one is
    /// prepared).
    density: Option<Density>,
    /// A prepared density map handed over by the app, to upload.
    density_ready: Option<Box<DensityData>>,
    /// The selection whose map was last asked for.
    asked: Option<DensityKey>,
    /// The analysis, while it runs.
    analysis: Option<Job<CommData>>,
    /// Preparing the density map of a selection (a newer one replaces, and so stops, it).
    preparing: Option<Job<Box<DensityData>>>,
}

impl CommView {
    /// Forgets the report of the previous trace (keeps the display choices that still apply).
    pub fn reset(&mut self, for_trace: Option<usize>) {
        *self = CommView {
            for_trace,
            counts: self.counts,
            ..CommView::default()
        };
    }

    /// Takes the results of the view's jobs that have finished. Returns an error for the
    /// status bar: a failed analysis (also shown in the view, which does not start it again
    /// until asked) or density map.
    fn take_finished(&mut self) -> Option<String> {
        let mut error = None;
        match take_finished(&mut self.analysis) {
            Some(Ok(a)) => {
                self.report = Some(a.report);
                self.launch_pairs = a.launch_pairs;
            }
            Some(Err(JobError::Cancelled)) => self.cancelled = true,
            Some(Err(JobError::Failed(e))) => {
                self.failed = Some(e.clone());
                error = Some(e);
            }
            None => {}
        }
        match take_finished(&mut self.preparing) {
            Some(Ok(d)) => self.density_ready = Some(d),
            Some(Err(JobError::Failed(e))) => error = Some(e),
            _ => {}
        }
        error
    }

    /// Whether the analysis runs.
    #[cfg(test)]
    pub fn analyzing(&self) -> bool {
        self.analysis.is_some()
    }

    fn analyze(&mut self, trace: &Arc<TraceData>, wake: &Wake) {
        self.cancelled = false;
        self.failed = None;
        let t = trace.clone();
        let pieces = crate::worker::communicate(t);
        self.analysis = Some(crate::sliced::Slices::job(
            "Analyzing communication",
            wake,
            pieces,
        ));
    }

    /// The selection (launch pair, counting transfers) of the density map on screen.
    pub fn shown(&self) -> Option<(Option<(u32, u32)>, bool)> {
        self.density.as_ref().map(|d| (d.data.key.1, d.data.key.2))
    }

    /// Draws the view of `trace`: the analysis' progress while it runs, or its report. Starts
    /// the analysis the first time it is shown for the trace (and again only when asked,
    /// after a failure or a cancel), and a density map for each new selection.
    pub fn show(&mut self, ui: &mut Ui, trace: &Arc<TraceData>, wake: &Wake) {
        let id = crate::pane_trace::trace_id(trace);
        if self.for_trace != Some(id) {
            // Drops, and so cancels, the jobs of the previous trace.
            self.reset(Some(id));
        }
        if let Some(r) = self.report.clone() {
            if let Some(want) = self.draw(ui, &r, trace) {
                // Replaces (and so cancels) the map of an earlier selection.
                self.preparing = Some(Job::spawn("Preparing the density map", wake, move |_| {
                    Ok(Box::new(density(&want.report, want.launches, want.counts)))
                }));
            }
            return;
        }
        let stopped = self.cancelled || self.failed.is_some();
        if self.analysis.is_none() && !stopped {
            self.analyze(trace, wake);
        }
        let fraction = self.analysis.as_ref().and_then(|j| j.progress().fraction());
        ui.vertical_centered(|ui| {
            ui.add_space(ui.available_height() / 3.0);
            if stopped {
                ui.label(match &self.failed {
                    Some(e) => format!("The communication analysis failed: {e}"),
                    None => "The communication analysis was cancelled.".to_string(),
                });
                if ui.button("Analyze again").clicked() {
                    self.analyze(trace, wake);
                }
                return;
            }
            crate::theme::working(ui);
            ui.label(match fraction {
                Some(f) => format!("Analyzing inter-CTA communication: {:.0}%", 100.0 * f),
                None => "Analyzing inter-CTA communication".to_string(),
            });
            if ui.button("Cancel").clicked() {
                if let Some(j) = &self.analysis {
                    j.cancel();
                }
            }
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        });
    }
}

impl PaneView for CommView {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        // Each pane's plots and selector keep their own state.
        ui.push_id(("comm", cx.pane), |ui| self.show(ui, cx.trace, cx.wake));
        Vec::new()
    }

    fn poll(&mut self, pane: &Polled) -> Option<String> {
        if self.for_trace.is_some() && pane.trace != self.for_trace {
            // The pane shows another trace: the report and jobs of the old one go.
            self.reset(None);
        }
        self.take_finished()
    }

    fn busy(&self) -> bool {
        self.analysis.is_some() || self.preparing.is_some()
    }

    fn running(&self) -> Vec<(&str, &Arc<Progress>)> {
        let analysis = self.analysis.iter().map(|j| (j.label(), j.progress()));
        analysis
            .chain(self.preparing.iter().map(|j| (j.label(), j.progress())))
            .collect()
    }
}

/// What a density map is of: the report (by identity), the launch pair, counting transfers.
pub type DensityKey = (usize, Option<(u32, u32)>, bool);

fn key_of(r: &Arc<CommReport>, launches: Option<(u32, u32)>, counts: bool) -> DensityKey {
    (Arc::as_ptr(r) as usize, launches, counts)
}

/// The binned density map of one selection and what the side plots need, prepared on the
/// worker (aggregating a large report's transfers takes too long for a frame).
pub struct DensityData {
    key: DensityKey,
    /// CTA ids shown (the most CTAs of the launches involved).
    n: u32,
    /// CTAs per cell along each axis.
    bin: u32,
    side: usize,
    /// `values[reader_bin * side + writer_bin]`.
    values: Arc<Vec<u64>>,
    /// The map's image, row 0 at the top.
    pixels: Vec<Color32>,
    cdf: Vec<[f64; 2]>,
    in_hist: Vec<u64>,
    out_hist: Vec<u64>,
    writer_grid: Dim3,
    reader_grid: Dim3,
}

/// The density map on screen: its data and its texture.
struct Density {
    data: DensityData,
    texture: egui::TextureHandle,
}

impl Density {
    fn new(ctx: &egui::Context, mut data: DensityData) -> Self {
        let pixels = std::mem::take(&mut data.pixels);
        let texture = ctx.load_texture(
            "comm-density",
            egui::ColorImage::new([data.side, data.side], pixels),
            egui::TextureOptions::NEAREST,
        );
        Density { data, texture }
    }
}

/// Prepares the density map of `launches` (all pairs if `None`), in bytes or transfers.
pub fn density(r: &Arc<CommReport>, launches: Option<(u32, u32)>, counts: bool) -> DensityData {
    let key = key_of(r, launches, counts);
    let measure = if counts {
        Measure::Transfers
    } else {
        Measure::Bytes
    };
    let cells = r.density(launches, measure);
    let grid = |l: u32| r.per_launch.get(l as usize).map_or(Dim3::x(1), |l| l.grid);
    let (writer_grid, reader_grid, n) = match launches {
        Some((w, rd)) => {
            let (wg, rg) = (grid(w), grid(rd));
            (wg, rg, wg.count().max(rg.count()) as u32)
        }
        None => {
            let big = r
                .per_launch
                .iter()
                .max_by_key(|l| l.grid.count())
                .map_or(Dim3::x(1), |l| l.grid);
            (big, big, r.ctas)
        }
    };
    let n = n.max(1);
    let bin = n.div_ceil(MAX_SIDE);
    let side = n.div_ceil(bin) as usize;
    let mut values = vec![0u64; side * side];
    let mut in_deg = vec![0u32; n as usize];
    let mut out_deg = vec![0u32; n as usize];
    for &Pair(w, rd, v) in &cells {
        let (wb, rb) = ((w / bin) as usize, (rd / bin) as usize);
        if wb < side && rb < side {
            values[rb * side + wb] += v;
        }
        if let Some(d) = out_deg.get_mut(w as usize) {
            *d += 1;
        }
        if let Some(d) = in_deg.get_mut(rd as usize) {
            *d += 1;
        }
    }
    let max = values.iter().copied().max().unwrap_or(0).max(1);
    let scale = (max as f32 + 1.0).ln();
    let pixels: Vec<Color32> = (0..side * side)
        .map(|i| {
            // Texture row 0 is the top of the plot: the highest reader bin.
            let (row, col) = (i / side, i % side);
            let v = values[(side - 1 - row) * side + col];
            if v == 0 {
                Color32::TRANSPARENT
            } else {
                theme::ramp(0.15 + 0.85 * (v as f32 + 1.0).ln() / scale)
            }
        })
        .collect();
    let hist = |deg: &[u32]| {
        let mut h = vec![0u64; deg.iter().copied().max().unwrap_or(0) as usize + 1];
        for &d in deg {
            h[d as usize] += 1;
        }
        h
    };
    // The CDF as steps: up at each size from the fraction below it.
    let mut cdf = Vec::new();
    let mut before = 0.0;
    for (size, f) in r.transfer_cdf(launches) {
        cdf.push([size as f64, before]);
        cdf.push([size as f64, f]);
        before = f;
    }
    DensityData {
        key,
        n,
        bin,
        side,
        values: Arc::new(values),
        pixels,
        cdf,
        in_hist: hist(&in_deg),
        out_hist: hist(&out_deg),
        writer_grid,
        reader_grid,
    }
}

/// Bytes in binary units, e.g. `1.5 MiB`.
pub fn human(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn cta(grid: Dim3, id: u32) -> String {
    let c = grid.from_linear(u64::from(id));
    match (grid.y, grid.z) {
        (1, 1) => format!("{id}"),
        (_, 1) => format!("{id} ({},{})", c.x, c.y),
        _ => format!("{id} ({},{},{})", c.x, c.y, c.z),
    }
}

/// The launch pair's label: `k0 name -> k1 name`.
fn pair_label(r: &CommReport, (w, rd): (u32, u32)) -> String {
    let name = |l: u32| {
        r.per_launch
            .get(l as usize)
            .map_or(String::new(), |k| k.name.clone())
    };
    format!("launch {w} {} -> launch {rd} {}", name(w), name(rd))
}

/// The density map of a selection, to prepare off the UI thread ([`density`]).
pub struct DensityRequest {
    pub report: Arc<CommReport>,
    pub launches: Option<(u32, u32)>,
    pub counts: bool,
}

impl CommView {
    /// Draws the view of report `r`; asks for the density map of a new selection, which the app
    /// prepares off the UI thread (the previous map stays on screen meanwhile).
    fn draw(
        &mut self,
        ui: &mut Ui,
        r: &Arc<CommReport>,
        trace: &TraceData,
    ) -> Option<DensityRequest> {
        let st = self;
        ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(&trace.label).strong());
        ui.label(format!(
            "{} launch{}, up to {} CTAs · loads {} · stores {} · communicated {} ({:.1}% of the writes are read later) · intra-launch sharing {}",
            r.per_launch.len(),
            if r.per_launch.len() == 1 { "" } else { "es" },
            r.ctas,
            human(r.read_bytes),
            human(r.write_bytes),
            human(r.communicated_bytes),
            100.0 * r.communication_fraction,
            human(r.shared_bytes),
        ));
    });
        if r.transfers.is_empty() {
            crate::views::empty_text(
                ui,
                if r.per_launch.len() < 2 {
                    "This trace has one kernel launch: communication needs a later launch reading\n\
                 what an earlier one wrote. Generate hotspot, histogram2, nbody or bfs-levels\n\
                 in the panel on the left, or open a trace with several launches."
                } else {
                    "No launch reads what an earlier launch wrote in this trace."
                },
            );
            return None;
        }
        // Wrapped: a pane beside others may be narrower than the row.
        ui.horizontal_wrapped(|ui| {
            let l = ui.label("Launches");
            let selected = st
                .launches
                .map_or("all launch pairs".to_string(), |p| pair_label(r, p));
            egui::ComboBox::from_id_salt("comm-launches")
                .selected_text(selected)
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut st.launches, None, "all launch pairs");
                    for &p in &st.launch_pairs {
                        ui.selectable_value(&mut st.launches, Some(p), pair_label(r, p));
                    }
                })
                .response
                .labelled_by(l.id);
            ui.separator();
            ui.selectable_value(&mut st.counts, false, "bytes");
            ui.selectable_value(&mut st.counts, true, "transfers")
                .on_hover_text("Number of launch pairs with a transfer between the two CTAs");
            ui.separator();
            let dims: Vec<String> = ["x", "y", "z"]
                .iter()
                .zip(&r.bisection)
                .filter(|(_, b)| b.cuttable)
                .map(|(d, b)| format!("{d} {} ({:.1}%)", human(b.bytes), 100.0 * b.relative))
                .collect();
            if !dims.is_empty() {
                ui.label(format!("bisection: {}", dims.join(", ")))
                    .on_hover_text("Bytes crossing a cut of the CTA grid into two halves");
            }
        });
        let key = key_of(r, st.launches, st.counts);
        if let Some(d) = st.density_ready.take() {
            if d.key == key {
                st.density = Some(Density::new(ui.ctx(), *d));
            }
        }
        let current = st.density.as_ref().is_some_and(|d| d.data.key == key);
        let mut request = None;
        if !current && st.asked != Some(key) {
            st.asked = Some(key);
            request = Some(DensityRequest {
                report: r.clone(),
                launches: st.launches,
                counts: st.counts,
            });
        }
        if !current {
            // Until the job is done (the app is woken then).
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        }
        let Some(d) = &st.density else {
            ui.vertical_centered(|ui| {
                ui.add_space(ui.available_height() / 3.0);
                crate::theme::working(ui);
                ui.label("Preparing the density map");
            });
            return request;
        };
        if !current {
            ui.horizontal(|ui| {
                crate::theme::working(ui);
                ui.label("Updating the density map for the new selection");
            });
        }
        ui.columns(2, |cols| {
            density_plot(&mut cols[0], d);
            side_plots(&mut cols[1], &d.data, r);
        });
        request
    }
}

fn density_plot(ui: &mut Ui, shown: &Density) {
    let d = &shown.data;
    let counts = d.key.2;
    let n = f64::from(d.n);
    let span = f64::from(d.bin) * d.side as f64;
    let values = d.values.clone();
    let (side, bin) = (d.side, d.bin);
    let (wg, rg) = (d.writer_grid, d.reader_grid);
    let unit = if counts { "transfers" } else { "bytes" };
    let max = values.iter().copied().max().unwrap_or(0);
    ui.horizontal_wrapped(|ui| {
        let high = if counts { max.to_string() } else { human(max) };
        let what = if bin > 1 {
            format!("{unit} per cell of {bin} x {bin} CTAs (log scale)")
        } else {
            format!("{unit} per CTA pair (log scale)")
        };
        theme::colour_scale(ui, 0.15, if counts { "1" } else { "1 B" }, &high, &what);
    });
    Plot::new("comm-density")
        .data_aspect(1.0)
        .x_axis_label("writer CTA")
        .y_axis_label("reader CTA")
        .include_x(0.0)
        .include_x(n)
        .include_y(0.0)
        .include_y(n)
        .show_grid(false)
        .allow_double_click_reset(true)
        .label_formatter(move |h| {
            let p = super::hovered(h);
            if p.x < 0.0 || p.y < 0.0 || p.x >= n || p.y >= n {
                return None;
            }
            let (w, rd) = (p.x as u32, p.y as u32);
            let (wb, rb) = ((w / bin) as usize, (rd / bin) as usize);
            let v = values.get(rb * side + wb).copied().unwrap_or(0);
            let amount = if counts {
                format!("{v} {unit}")
            } else {
                human(v)
            };
            Some(if bin == 1 {
                format!(
                    "writer CTA {}\nreader CTA {}\n{amount}",
                    cta(wg, w),
                    cta(rg, rd)
                )
            } else {
                let (w0, r0) = (wb as u32 * bin, rb as u32 * bin);
                format!(
                    "writer CTAs {w0}..{}\nreader CTAs {r0}..{}\n{amount}",
                    w0 + bin - 1,
                    r0 + bin - 1
                )
            })
        })
        .show(ui, |pui| {
            pui.image(PlotImage::new(
                "density",
                shown.texture.id(),
                PlotPoint::new(span / 2.0, span / 2.0),
                egui::vec2(span as f32, span as f32),
            ));
        });
}

fn side_plots(ui: &mut Ui, d: &DensityData, r: &CommReport) {
    let h = ((ui.available_height() - 3.0 * ui.spacing().item_spacing.y) / 4.0).max(60.0);
    Plot::new("comm-cdf")
        .height(h)
        .x_axis_label("transfer size (bytes)")
        .y_axis_label("CDF")
        .include_y(0.0)
        .include_y(1.0)
        .show(ui, |pui| {
            pui.line(
                Line::new("transfer sizes", PlotPoints::from(d.cdf.clone()))
                    .color(theme::ramp(0.55))
                    .allow_band(false)
                    .width(2.0),
            );
        });
    let bars = |h: &[u64], offset: f64| -> Vec<Bar> {
        h.iter()
            .enumerate()
            .map(|(deg, &c)| Bar::new(deg as f64 + offset, c as f64).width(0.4))
            .collect()
    };
    let (c_in, c_out) = (theme::ramp(0.3), theme::ramp(0.8));
    Plot::new("comm-degrees")
        .height(h)
        .legend(Legend::default())
        .x_axis_label("partners (degree)")
        .y_axis_label("CTAs")
        .show(ui, |pui| {
            pui.bar_chart(BarChart::new("in-degree", bars(&d.in_hist, -0.2)).color(c_in));
            pui.bar_chart(BarChart::new("out-degree", bars(&d.out_hist, 0.2)).color(c_out));
        });
    // Loads can be communication from the second launch on, stores up to the last but one
    // (Rieber 2017 fig. 6.7).
    let n = r.per_launch.len();
    let launches =
        |from: usize, to: usize, f: &dyn Fn(&warpscope_core::comm::LaunchComm) -> f64| {
            let v: Vec<[f64; 2]> = r.per_launch[from.min(n)..to.min(n)]
                .iter()
                .enumerate()
                .map(|(i, l)| [(from + i) as f64, f(l)])
                .collect();
            PlotPoints::from(v)
        };
    let per_launch = |f: &dyn Fn(&warpscope_core::comm::LaunchComm) -> f64| launches(0, n - 1, f);
    Plot::new("comm-evolution")
        .height(h)
        .legend(Legend::default())
        .x_axis_label("launch")
        .y_axis_label("bytes")
        .include_y(0.0)
        .show(ui, |pui| {
            pui.line(
                Line::new(
                    "communicated loads",
                    launches(1, n, &|l| l.communicated_read_bytes as f64),
                )
                .color(c_in)
                .width(2.0),
            );
            pui.line(
                Line::new(
                    "communicated stores",
                    per_launch(&|l| l.communicated_write_bytes as f64),
                )
                .color(c_out)
                .width(2.0),
            );
        });
    Plot::new("comm-connectivity")
        .height(h)
        .legend(Legend::default())
        .x_axis_label("launch")
        .y_axis_label("out-degree")
        .include_y(0.0)
        .show(ui, |pui| {
            pui.line(
                Line::new("mean out-degree", per_launch(&|l| l.out_degree_mean))
                    .color(c_out)
                    .width(2.0),
            );
            pui.line(
                Line::new(
                    "mean + std",
                    per_launch(&|l| l.out_degree_mean + l.out_degree_std),
                )
                .color(c_out.gamma_multiply(0.5)),
            );
            pui.line(
                Line::new(
                    "mean - std",
                    per_launch(&|l| (l.out_degree_mean - l.out_degree_std).max(0.0)),
                )
                .color(c_out.gamma_multiply(0.5)),
            );
        });
}
