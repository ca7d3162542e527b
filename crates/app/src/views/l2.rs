//! The shared L2 of a pane's run: its slices over time (a heat map of L2 requests, misses or
//! the miss rate per slice, in the L2's own issue order), and per instruction its L1 and L2
//! hits and the DRAM bytes it caused: where the DRAM traffic comes from. When the run has no
//! L2, it says why and what to change.

use egui::{Color32, RichText, Ui};
use egui_plot::{Plot, PlotImage, PlotPoint};
use warpscope_core::l2::{L2Report, MAX_BINS};

use super::command::{Command, PaneCx, PaneView};
use super::empty;
use crate::data::SimData;
use crate::theme;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::L2,
    name: "L2",
    file_stem: "l2",
    needs_trace_in_memory: false,
    new: || Box::new(L2View::default()),
};

/// What the heat map shows per slice and time bin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeatMetric {
    #[default]
    Requests,
    Misses,
    MissRate,
}

/// The L2 view of one pane: the heat map's texture and what it shows.
#[derive(Default)]
pub struct L2View {
    texture: Option<(u64, HeatMetric, egui::TextureHandle)>,
    metric: HeatMetric,
}

impl PaneView for L2View {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let d = cx.data;
        let Some(l2) = &d.report.l2 else {
            empty(ui, &why_none(d));
            return Vec::new();
        };
        summary(ui, l2);
        ui.horizontal(|ui| {
            ui.label(RichText::new("Slices over time").strong());
            ui.selectable_value(&mut self.metric, HeatMetric::Requests, "requests");
            ui.selectable_value(&mut self.metric, HeatMetric::Misses, "misses");
            ui.selectable_value(&mut self.metric, HeatMetric::MissRate, "miss rate");
        });
        self.heat(ui, cx.pane, cx.generation, l2);
        per_instruction(ui, cx.pane, d, l2);
        Vec::new()
    }
}

/// Why the run has no L2, and what would give it one.
fn why_none(d: &SimData) -> String {
    let c = &d.config;
    if c.l2.is_none() {
        "This configuration has no L2. Switch it on in the configuration's L2 section, or pick \
         a preset that has one (every preset but gtx470-*)."
            .into()
    } else {
        "The L2 sees every SM's misses, so it is simulated only when every SM is: \
         GPU > Simulate > all SMs (or the button in the configuration's L2 section)."
            .into()
    }
}

/// One line of totals.
fn summary(ui: &mut Ui, l2: &L2Report) {
    let t = &l2.totals;
    let hit = if t.requests == 0 {
        0.0
    } else {
        100.0 * t.hits as f64 / t.requests as f64
    };
    ui.label(format!(
        "{} in {} slices: {} requests, {:.1}% hit; DRAM read {}, written {} (dirty at the end {})",
        bytes(l2.size_bytes),
        l2.slices,
        t.requests,
        hit,
        bytes(t.bytes_from_dram),
        bytes(t.bytes_to_dram),
        bytes(l2.dirty_bytes_at_end)
    ));
}

use super::bytes_text as bytes;

impl L2View {
    /// The slices-by-time heat map.
    fn heat(&mut self, ui: &mut Ui, pane: usize, generation: u64, l2: &L2Report) {
        let h = &l2.heat;
        let (slices, bins) = (h.slices.max(1), h.bins.clamp(1, MAX_BINS));
        let metric = self.metric;
        let value = |s: usize, b: usize| {
            let (r, m) = h.at(s, b);
            match metric {
                HeatMetric::Requests => r as f64,
                HeatMetric::Misses => m as f64,
                HeatMetric::MissRate if r > 0 => m as f64 / r as f64,
                HeatMetric::MissRate => 0.0,
            }
        };
        let max = (0..slices)
            .flat_map(|s| (0..bins).map(move |b| (s, b)))
            .map(|(s, b)| value(s, b))
            .fold(0.0f64, f64::max)
            .max(f64::MIN_POSITIVE);
        let (low, high, what): (&str, String, &str) = match metric {
            HeatMetric::Requests => ("0", format!("{max}"), "requests per slice and bin"),
            HeatMetric::Misses => ("0", format!("{max}"), "misses per slice and bin"),
            HeatMetric::MissRate => ("0%", "100%".to_string(), "miss rate"),
        };
        ui.horizontal(|ui| {
            theme::colour_scale(ui, 0.0, low, &high, what);
            theme::swatch(ui, Color32::from_gray(20), "no request");
        });
        let stale = self
            .texture
            .as_ref()
            .is_none_or(|(g, m, _)| *g != generation || *m != metric);
        if stale {
            let mut pixels = Vec::with_capacity(slices * bins);
            // Row 0 of the image is the top: the highest slice.
            for s in (0..slices).rev() {
                for b in 0..bins {
                    let (r, _) = h.at(s, b);
                    let scale = if metric == HeatMetric::MissRate {
                        1.0
                    } else {
                        max
                    };
                    pixels.push(if r == 0 {
                        Color32::from_gray(20)
                    } else {
                        theme::ramp((value(s, b) / scale) as f32)
                    });
                }
            }
            let image = egui::ColorImage {
                size: [bins, slices],
                pixels,
                source_size: egui::vec2(bins as f32, slices as f32),
            };
            let tex = ui.ctx().load_texture(
                format!("l2-heat-{pane}"),
                image,
                egui::TextureOptions::NEAREST,
            );
            self.texture = Some((generation, metric, tex));
        }
        let Some((_, _, tex)) = &self.texture else {
            return;
        };
        let per_bin = h.per_bin;
        let width = (bins as u64 * per_bin) as f64;
        let n = slices as f64;
        let heat = h.clone();
        Plot::new(("l2-heat", pane))
            .height(ui.available_height() * 0.5)
            .x_axis_label("L2 request (issue order)")
            .y_axis_label("slice")
            .include_x(0.0)
            .include_x(width)
            .include_y(0.0)
            .include_y(n)
            .show_grid(false)
            .y_axis_formatter(|m, _| super::sets::set_label(m.value))
            .y_grid_spacer(move |g| {
                // Slice numbers at row centres, a power of two of slices apart, 32 points or more.
                let step = ((g.base_step_size * 4.0).max(1.0).ceil() as u64).next_power_of_two();
                super::sets::set_marks(g.bounds, n, step as f64)
            })
            .label_formatter(move |hover| {
                let p = super::hovered(hover);
                if p.x < 0.0 || p.y < 0.0 || p.y >= n {
                    return None;
                }
                let (s, b) = (p.y as usize, (p.x as u64 / per_bin) as usize);
                let (r, m) = heat.at(s, b);
                Some(format!(
                    "slice {s}, L2 requests {}..{}\n{r} requests, {m} misses",
                    b as u64 * per_bin,
                    (b as u64 + 1) * per_bin
                ))
            })
            .show(ui, |pui| {
                pui.image(PlotImage::new(
                    "l2",
                    tex.id(),
                    PlotPoint::new(width / 2.0, n / 2.0),
                    egui::vec2(width as f32, n as f32),
                ));
            });
    }
}

/// Per instruction: L1 requests and hits, L2 requests and hits, DRAM bytes and their share.
fn per_instruction(ui: &mut Ui, pane: usize, d: &SimData, l2: &L2Report) {
    ui.label(RichText::new("Per instruction: where the DRAM bytes come from").strong());
    // Each instruction's L1 row, found once a frame (not searched for per row).
    let l1_rows: rustc_hash::FxHashMap<(u32, u32), &warpscope_core::report::InstRow> = d
        .report
        .instructions
        .iter()
        .map(|r| ((r.kernel, r.inst), r))
        .collect();
    let dram_total: u64 = l2
        .instructions
        .iter()
        .map(|i| i.counters.bytes_from_dram + i.counters.bytes_to_dram)
        .sum::<u64>()
        .max(1);
    egui::ScrollArea::vertical()
        .id_salt(("l2-insts", pane))
        .show(ui, |ui| {
            egui::Grid::new(("l2-grid", pane))
                .striped(true)
                .num_columns(7)
                .show(ui, |ui| {
                    for h in [
                        "instruction",
                        "L1 requests",
                        "L1 hits",
                        "L2 requests",
                        "L2 hits",
                        "DRAM read / written",
                        "share of DRAM bytes",
                    ] {
                        ui.label(RichText::new(h).strong());
                    }
                    ui.end_row();
                    for row in &l2.instructions {
                        let l1 = l1_rows.get(&(row.kernel, row.inst));
                        let c = &row.counters;
                        ui.label(&row.name);
                        ui.label(l1.map_or(0, |r| r.counters.requests).to_string());
                        ui.label(l1.map_or(0, |r| r.counters.hits).to_string());
                        ui.label(c.requests.to_string());
                        ui.label(c.hits.to_string());
                        ui.label(format!(
                            "{} / {}",
                            bytes(c.bytes_from_dram),
                            bytes(c.bytes_to_dram)
                        ));
                        let share =
                            (c.bytes_from_dram + c.bytes_to_dram) as f32 / dram_total as f32;
                        share_bar(ui, share);
                        ui.end_row();
                    }
                });
        });
}

/// A bar of `share` (0..=1) of a fixed width, with its percentage.
fn share_bar(ui: &mut Ui, share: f32) {
    ui.horizontal(|ui| {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(100.0, 10.0), egui::Sense::hover());
        ui.painter()
            .rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
        let mut full = rect;
        full.set_width(rect.width() * share.clamp(0.0, 1.0));
        ui.painter().rect_filled(full, 2.0, theme::ramp(0.75));
        ui.label(format!("{:.0}%", share * 100.0));
    });
}
