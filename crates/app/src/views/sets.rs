//! Accesses and misses per cache set, and the miss rate over time per instruction or SM.

use egui::{Color32, RichText, Ui};
use egui_plot::{Legend, Line, Plot, PlotImage, PlotPoint, PlotPoints, Points};

use super::command::{Command, PaneCx, PaneView};
use super::*;
pub use crate::data::SetMetric;
use crate::data::SimData;
use crate::theme;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Sets,
    name: "Sets",
    file_stem: "sets",
    needs_trace_in_memory: false,
    new: || Box::new(SetsView::default()),
};

/// A set-axis label: the set number at a row's centre, nothing elsewhere.
pub fn set_label(y: f64) -> String {
    let row = y - 0.5;
    if row >= 0.0 && row.fract() == 0.0 {
        format!("{row}")
    } else {
        String::new()
    }
}

/// Grid marks at the centres of every `step`-th row inside `bounds`.
pub fn set_marks(bounds: (f64, f64), sets: f64, step: f64) -> Vec<egui_plot::GridMark> {
    let first = (bounds.0.max(0.0) / step).ceil() * step;
    let mut marks = Vec::new();
    let mut s = first;
    while s < sets.min(bounds.1) && marks.len() < 200 {
        marks.push(egui_plot::GridMark {
            value: s + 0.5,
            step_size: step,
        });
        s += step;
    }
    marks
}

/// The set view of one pane: the heatmap's texture, made from the worker's image of the
/// metric shown.
#[derive(Default)]
pub struct SetsView {
    texture: Option<(u64, SetMetric, egui::TextureHandle)>,
    /// Requests of the data last shown (a change resets the view to the new extent).
    extent: Option<u64>,
    /// The miss rate over time per SM instead of per instruction.
    by_sm: bool,
}

impl PaneView for SetsView {
    /// Accesses and misses per set over time.
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let mut metric = cx.set_metric;
        self.draw(ui, cx, &mut metric);
        if metric != cx.set_metric {
            vec![Command::SetMetric(metric)]
        } else {
            Vec::new()
        }
    }
}

impl SetsView {
    fn draw(&mut self, ui: &mut Ui, cx: &PaneCx, metric: &mut SetMetric) {
        let (pane, d, generation, link) = (cx.pane, cx.data, cx.generation, cx.link);
        let state = self;
        let g = &d.sets;
        if g.accesses.is_empty() || d.points.is_empty() {
            empty(ui, "No requests reached the simulated L1.");
            return;
        }
        ui.horizontal(|ui| {
            ui.selectable_value(metric, SetMetric::Accesses, "accesses");
            ui.selectable_value(metric, SetMetric::Misses, "misses");
            ui.selectable_value(metric, SetMetric::MissRate, "miss rate");
            ui.label(
                RichText::new(format!(
                    "{} sets x {} time slices of {} requests",
                    g.sets, g.bins, g.per_bin
                ))
                .weak(),
            );
        });
        let (low, high, what) = g.scale(*metric);
        ui.horizontal(|ui| {
            theme::colour_scale(ui, 0.0, &low, &high, &what);
            theme::swatch(ui, Color32::from_gray(20), "none");
        });
        let stale = state
            .texture
            .as_ref()
            .is_none_or(|(gen, m, _)| *gen != generation || *m != *metric);
        if stale {
            let tex = ui.ctx().load_texture(
                format!("sets-{pane}"),
                g.images[metric.index()].clone(),
                egui::TextureOptions::NEAREST,
            );
            state.texture = Some((generation, *metric, tex));
        }
        let Some((_, _, tex)) = &state.texture else {
            return;
        };
        let width = (g.bins as u64 * g.per_bin) as f64;
        let sets_n = g.sets as f64;
        let per_bin = g.per_bin;
        let shared = d.clone();
        let bins = g.bins;
        let reset = state.extent != Some(width.to_bits());
        state.extent = Some(width.to_bits());
        let heat_height = ui.available_height() * 0.55;
        let plot = Plot::new(("sets", pane)).height(heat_height);
        let plot = if reset { plot.reset() } else { plot };
        // Row s spans [s, s + 1): label rows at their centres, never at their edges.
        plot.link_axis(link, [true, false])
            .x_axis_label("request (issue order)")
            .y_axis_label("set")
            .include_x(0.0)
            .include_x(width)
            .include_y(0.0)
            .include_y(sets_n)
            .set_margin_fraction(egui::vec2(0.01, 0.0))
            .y_axis_formatter(|m, _| set_label(m.value))
            .y_grid_spacer(move |gi| {
                // egui_plot draws y labels 20 points or more apart (in full at 30); the grid's
                // base step is 8 points: a power of two of sets at least 32 points apart.
                let step = ((gi.base_step_size * 4.0).max(1.0).ceil() as u64).next_power_of_two();
                set_marks(gi.bounds, sets_n, step as f64)
            })
            .show_grid(false)
            .label_formatter(move |h| {
                let p = super::hovered(h);
                if p.x < 0.0 || p.y < 0.0 || p.y >= sets_n {
                    return None;
                }
                let b = ((p.x as u64) / per_bin) as usize;
                let s = p.y as usize;
                if b >= bins {
                    return None;
                }
                let a = shared.sets.accesses[s * bins + b];
                let m = shared.sets.misses[s * bins + b];
                Some(format!(
                    "set {s}, requests {}..{}\n{a} accesses, {m} misses",
                    b as u64 * per_bin,
                    (b as u64 + 1) * per_bin
                ))
            })
            .show(ui, |pui| {
                pui.image(PlotImage::new(
                    "sets",
                    tex.id(),
                    PlotPoint::new(width / 2.0, sets_n / 2.0),
                    egui::vec2(width as f32, sets_n as f32),
                ));
            });
        over_time(ui, pane, d, &mut state.by_sm);
    }
}

/// Miss rate over time per instruction or per SM (the busiest few), in the same issue-order
/// slices for every series.
fn over_time(ui: &mut Ui, pane: usize, d: &SimData, by_sm: &mut bool) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("Miss rate over time").strong());
        ui.selectable_value(by_sm, false, "per instruction");
        ui.selectable_value(by_sm, true, "per SM");
    });
    let t = if *by_sm {
        &d.sm_over_time
    } else {
        &d.inst_over_time
    };
    let per_slice = t.per_slice;
    // What is left of the pane, however small (a plot is otherwise at least 96 points high).
    let height = (ui.available_height() - ui.spacing().item_spacing.y).max(24.0);
    Plot::new(("over-time", pane))
        .height(height)
        .legend(Legend::default().follow_insertion_order(true))
        .x_axis_label(format!(
            "time slice ({per_slice} requests each, issue order)"
        ))
        .y_axis_label("miss rate (%)")
        .include_y(0.0)
        .include_y(100.0)
        .include_x(0.0)
        .include_x(t.slices as f64 * 1.25)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .show(ui, |pui| {
            // In the colours the address view gives instructions and SMs.
            for s in &t.series {
                let colour = theme::category(s.key);
                let rates = s.rates();
                // Markers too, so a series with requests in one slice only still shows.
                pui.points(
                    Points::new(s.label.as_str(), PlotPoints::from(rates.clone()))
                        .color(colour)
                        .radius(2.0),
                );
                pui.line(
                    Line::new(s.label.as_str(), PlotPoints::from(rates))
                        .color(colour)
                        .width(1.5),
                );
            }
        });
}
