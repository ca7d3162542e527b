//! The reuse-distance histogram and the miss-rate curve it gives for every cache size.

use egui::{Color32, Ui};
use egui_plot::{Bar, BarChart, Legend, Line, Plot, PlotPoints, Points, VLine};

use super::command::{Command, PaneCx, PaneView};
use super::*;
use crate::data::{Outcome, SimData};
use crate::theme;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Reuse,
    name: "Reuse distance",
    file_stem: "reuse",
    needs_trace_in_memory: false,
    new: || Box::new(ReuseView),
};

/// x of the reuse-distance bin `[lo, 2 lo)` (bin `[0, 1)` at 0): one unit per bin.
pub fn distance_bin_x(lo: u64) -> f64 {
    if lo == 0 {
        0.0
    } else {
        (lo as f64).log2() + 1.0
    }
}

/// x of the boundary between distances below `limit` (hits in a cache of `limit` lines or
/// ways) and the rest: the edge between two bins when `limit` is a power of two, otherwise
/// inside the bin that holds both, in proportion.
pub fn limit_x(limit: u64) -> f64 {
    if limit == 0 {
        return -0.5;
    }
    let lo = 1u64 << (63 - limit.leading_zeros());
    distance_bin_x(lo) - 0.5 + (limit - lo) as f64 / lo as f64
}

/// The reuse view of one pane (it keeps nothing between frames).
#[derive(Default)]
pub struct ReuseView;

impl PaneView for ReuseView {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        reuse(ui, cx.pane, cx.data, cx.link);
        Vec::new()
    }
}

fn reuse(ui: &mut Ui, pane: usize, d: &SimData, link: egui::Id) {
    let Some(r) = &d.report.reuse else {
        empty(
            ui,
            "Reuse tracking is off.\nPick a mode of \"Reuse distances\" in the configuration.",
        );
        return;
    };
    let lines = d.config.cache.lines();
    let ways = d.config.cache.ways_effective();
    let h = ui.available_height();
    summary(ui, r, lines, ways);
    // A distance equal to the capacity (or the associativity) misses under LRU.
    histogram(
        ui,
        pane,
        link,
        Histogram {
            id: "reuse",
            height: h * 0.36,
            x_label: "reuse distance (distinct lines, log bins)",
            bins: &r.histogram,
            colour: Color32::from_rgb(0x4E, 0x79, 0xA7),
            name: "whole cache",
            mark_x: limit_x(lines),
            mark_label: format!("capacity: {lines} lines"),
            mark_colour: theme::outcome(Outcome::Conflict),
        },
    );
    histogram(
        ui,
        pane,
        link,
        Histogram {
            id: "reuse-set",
            height: h * 0.28,
            x_label: "reuse distance within the set (log bins)",
            bins: &r.set_histogram,
            colour: Color32::from_rgb(0x76, 0xB7, 0xB2),
            name: "within the set",
            mark_x: limit_x(ways as u64),
            mark_label: format!("associativity: {ways} ways"),
            mark_colour: theme::outcome(Outcome::Capacity),
        },
    );
    miss_rate_curve(ui, pane, d, r);
}

/// The counts above the plots, and how a sampled run's distances were measured.
fn summary(ui: &mut Ui, r: &warpscope_core::report::ReuseReport, lines: u64, ways: u32) {
    let estimated = match r.method {
        warpscope_core::sim::ReuseMethod::Exact => "",
        warpscope_core::sim::ReuseMethod::Sampled => "about ",
    };
    ui.label(format!(
        "{estimated}{} reuses, {estimated}{} first uses, {estimated}{} distinct lines. Capacity: \
         {lines} lines, {ways} ways per set.",
        r.histogram.iter().map(|b| b.count).sum::<u64>(),
        r.infinite,
        r.distinct_lines
    ));
    if r.method == warpscope_core::sim::ReuseMethod::Sampled {
        ui.colored_label(
            theme::outcome(Outcome::Capacity),
            format!(
                "Sampled (SHARDS): 1 line in {:.0} beyond the {} most recent, expected error of \
                 the miss-rate curve ±{:.2} points. Exact: --reuse exact.",
                1.0 / r.sampling_rate,
                warpscope_core::reuse::NEAR_LINES.max(2 * lines as usize),
                r.expected_error * 100.0
            ),
        )
        .on_hover_text(
            "A streamed trace measures reuse distances on a sample of its lines chosen by a \
             hash (Waldspurger et al. 2015), so that memory stays bounded; distances to the most \
             recent lines are exact. Hits, misses and miss classes are exact in every mode.",
        );
    }
}

/// One histogram of reuse distances in log bins, with a marker where distances start to miss.
struct Histogram<'a> {
    id: &'static str,
    height: f32,
    x_label: &'static str,
    bins: &'a [warpscope_core::reuse::LogBin],
    colour: Color32,
    name: &'static str,
    /// Where distances start to miss (the capacity or the associativity), its legend and colour.
    mark_x: f64,
    mark_label: String,
    mark_colour: Color32,
}

/// Draws `hist` for pane `pane`, its x axis linked to the pane's other plots through `link`.
fn histogram(ui: &mut Ui, pane: usize, link: egui::Id, hist: Histogram) {
    let bin_x = distance_bin_x;
    let fmt = |m: egui_plot::GridMark, range: &std::ops::RangeInclusive<f64>| {
        if at_right_edge(m.value, range) {
            return String::new();
        }
        if m.value < 0.5 || m.value.fract() != 0.0 {
            if m.value == 0.0 {
                "0".into()
            } else {
                String::new()
            }
        } else {
            format!("{}", 1u64 << (m.value as u32 - 1).min(62))
        }
    };
    // Room right of the last bin and the marker for the legend.
    let right = hist
        .bins
        .iter()
        .map(|b| bin_x(b.lo))
        .fold(hist.mark_x, f64::max)
        + 4.0;
    let bars = BarChart::new(
        hist.name,
        hist.bins
            .iter()
            .map(|b| {
                Bar::new(bin_x(b.lo), b.count as f64)
                    .width(0.9)
                    .name(format!("{}..{}", b.lo, b.hi))
            })
            .collect(),
    )
    .color(hist.colour);
    Plot::new((hist.id, pane))
        .height(hist.height)
        .legend(Legend::default().follow_insertion_order(true))
        .link_axis(link, [true, false])
        .x_axis_label(hist.x_label)
        .y_axis_label("reuses")
        .x_axis_formatter(fmt)
        .x_grid_spacer(integer_marks)
        .include_x(right)
        .include_y(0.0)
        .show(ui, |pui| {
            pui.bar_chart(bars);
            pui.vline(
                VLine::new(hist.mark_label, hist.mark_x)
                    .color(hist.mark_colour)
                    .width(2.0),
            );
        });
}

/// The miss rate of a fully associative LRU cache of every size, and this cache's point.
fn miss_rate_curve(ui: &mut Ui, pane: usize, d: &SimData, r: &warpscope_core::report::ReuseReport) {
    let lines = d.config.cache.lines();
    let curve: Vec<[f64; 2]> = r
        .miss_rate_curve
        .iter()
        .map(|c| [(c.lines.max(1) as f64).log2(), c.miss_rate * 100.0])
        .collect();
    // Room right of the curve and this cache's point for the legend.
    let right = curve
        .iter()
        .map(|p| p[0])
        .fold((lines.max(1) as f64).log2(), f64::max)
        + 4.0;
    Plot::new(("mrc", pane))
        .legend(Legend::default().follow_insertion_order(true))
        .x_grid_spacer(integer_marks)
        .include_x(right)
        .x_axis_label("fully associative LRU capacity (lines, log2)")
        .y_axis_label("miss rate (%)")
        .x_axis_formatter(|m, range| {
            if m.value.fract() == 0.0 && m.value >= 0.0 && !at_right_edge(m.value, range) {
                format!("{}", 1u64 << (m.value as u32).min(62))
            } else {
                String::new()
            }
        })
        .include_y(0.0)
        .include_y(100.0)
        .show(ui, |pui| {
            pui.line(Line::new("miss-rate curve", PlotPoints::from(curve)).width(2.0));
            pui.vline(
                VLine::new("its capacity", (lines.max(1) as f64).log2())
                    .color(theme::outcome(Outcome::Conflict)),
            );
            pui.points(
                Points::new(
                    format!("this cache: {:.1}%", d.miss_percent()),
                    PlotPoints::from(vec![[(lines.max(1) as f64).log2(), d.miss_percent()]]),
                )
                .radius(5.0)
                .color(theme::outcome(Outcome::Conflict)),
            );
        });
}
