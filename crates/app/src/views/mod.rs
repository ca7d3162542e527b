//! The views, one file each (`address.rs`, `reuse.rs`, `misses.rs`, `sets.rs`, `comm.rs`,
//! `performance.rs`, `step.rs`, `l2.rs`), each with its [`Entry`] listed once in [`ENTRIES`].
//! Each is a struct holding what it keeps between frames and the jobs it started, with a `ui`
//! method that draws from data made on the worker and returns [`Command`]s for the app to
//! carry out after drawing (`command.rs`). This module holds the view list and what several
//! views share: empty-state text, legends, axis marks.

use egui::{Color32, RichText, Ui};
use egui_plot::PlotPoint;

use super::data::{Outcome, SimData};
use super::raster::ColourBy;
use super::theme;

/// A view as the menus, the panes and the screenshot plan know it: one entry per view file,
/// listed once in [`ENTRIES`].
pub struct Entry {
    pub view: View,
    /// Its name in the tabs and the menu.
    pub name: &'static str,
    /// Its screenshots' file names (`1-address.png`).
    pub file_stem: &'static str,
    /// Whether it replays or re-analyzes the trace, so needs it in memory (not streamed).
    pub needs_trace_in_memory: bool,
    /// A fresh view of one pane's result (each pane holds one of each).
    pub new: fn() -> Box<dyn PaneView>,
}

/// The views, in menu order (Ctrl+1..8).
pub const ENTRIES: [Entry; 8] = [
    address::ENTRY,
    reuse::ENTRY,
    misses::ENTRY,
    sets::ENTRY,
    comm::ENTRY,
    performance::ENTRY,
    step::ENTRY,
    l2::ENTRY,
];

/// Which view is shown (kept in the settings); its [`Entry`] says the rest.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, Default,
)]
pub enum View {
    #[default]
    Address,
    Reuse,
    Misses,
    Sets,
    Communication,
    Performance,
    Step,
    L2,
}

impl View {
    /// Every view, in menu order.
    pub const ALL: [View; ENTRIES.len()] = {
        let mut all = [View::Address; ENTRIES.len()];
        let mut i = 0;
        while i < ENTRIES.len() {
            all[i] = ENTRIES[i].view;
            i += 1;
        }
        all
    };
    pub fn entry(self) -> &'static Entry {
        // Every view has its entry (a test checks); the first stands in otherwise.
        ENTRIES
            .iter()
            .find(|e| e.view == self)
            .unwrap_or(&ENTRIES[0])
    }
    pub fn needs_trace_in_memory(self) -> bool {
        self.entry().needs_trace_in_memory
    }
    pub fn name(self) -> &'static str {
        self.entry().name
    }
    pub fn file_stem(self) -> &'static str {
        self.entry().file_stem
    }
}

/// A pane's views, one of each built from [`ENTRIES`].
pub struct PaneViews(Vec<(View, Box<dyn PaneView>)>);

impl Default for PaneViews {
    fn default() -> Self {
        PaneViews(ENTRIES.iter().map(|e| (e.view, (e.new)())).collect())
    }
}

impl PaneViews {
    /// The pane's view `view` (every view has one: `None` only were it left out of
    /// [`ENTRIES`]).
    pub fn get_mut(&mut self, view: View) -> Option<&mut dyn PaneView> {
        let found = self.0.iter_mut().find(|(v, _)| *v == view);
        found.map(|(_, b)| b.as_mut())
    }
    /// The pane's view of type `T`.
    pub fn of<T: PaneView>(&self) -> Option<&T> {
        self.0
            .iter()
            .find_map(|(_, b)| (b.as_ref() as &dyn std::any::Any).downcast_ref())
    }
    /// The pane's view of type `T`, to change.
    pub fn of_mut<T: PaneView>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find_map(|(_, b)| (b.as_mut() as &mut dyn std::any::Any).downcast_mut())
    }
    /// Hands every view the results of its finished jobs; returns the last error of one
    /// that failed, for the status bar.
    pub fn poll(&mut self, pane: &Polled) -> Option<String> {
        let mut error = None;
        for (_, v) in &mut self.0 {
            error = v.poll(pane).or(error);
        }
        error
    }
    /// Whether a job of one of the views runs.
    pub fn busy(&self) -> bool {
        self.0.iter().any(|(_, v)| v.busy())
    }
    /// The views' jobs the status bar shows while they run.
    pub fn running(&self) -> impl Iterator<Item = (&str, &std::sync::Arc<crate::job::Progress>)> {
        self.0.iter().flat_map(|(_, v)| v.running())
    }
}

/// Where the pointer is in a plot's coordinates, near a data point or not (for the heat
/// maps' hover labels).
pub(super) fn hovered(h: &egui_plot::HoverPosition) -> PlotPoint {
    match h {
        egui_plot::HoverPosition::NearDataPoint { position, .. } => *position,
        egui_plot::HoverPosition::Elsewhere { position } => *position,
    }
}

/// A size or an amount of traffic in words: whole megabytes as such, else MB from 10 MB,
/// KB from 10 KB, bytes below (the L2's view and its configuration).
pub fn bytes_text(b: u64) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MB", b >> 20),
        b if b >= 10 << 20 => format!("{} MB", b >> 20),
        b if b >= 10 << 10 => format!("{} KB", b >> 10),
        b => format!("{b} B"),
    }
}

/// A centred, muted message filling the area.
pub fn empty_text(ui: &mut Ui, text: &str) {
    empty(ui, text);
}

fn empty(ui: &mut Ui, text: &str) {
    ui.centered_and_justified(|ui| {
        ui.label(RichText::new(text).size(15.0).weak());
    });
}

/// Whether an axis label at `value` would be cut by the plot's right edge (its text is
/// centred on its mark): such a label is left out rather than shown half.
pub(super) fn at_right_edge(value: f64, range: &std::ops::RangeInclusive<f64>) -> bool {
    let (lo, hi) = (*range.start(), *range.end());
    value > hi - (hi - lo) * 0.03
}

/// `plot`'s address axis over `segments`: hex labels where an address lies, ticks at round
/// hexadecimal addresses (the address view and step-through share it).
fn address_axis<'a>(
    plot: egui_plot::Plot<'a>,
    segments: &crate::data::Segments,
) -> egui_plot::Plot<'a> {
    let (labels, marks) = (segments.clone(), segments.clone());
    plot.y_axis_label("address")
        .y_axis_formatter(move |m, _| labels.addr(m.value).map_or(String::new(), hex))
        .y_grid_spacer(move |g| {
            marks
                .hex_marks(g.bounds.0, g.bounds.1, g.base_step_size * 4.0)
                .into_iter()
                .map(|(value, step)| egui_plot::GridMark {
                    value,
                    step_size: step as f64,
                })
                .collect()
        })
        .y_axis_min_width(80.0)
}

fn hex(a: u64) -> String {
    format!("0x{a:x}")
}

/// What a view that needs the trace in memory shows for a streamed one.
pub const STREAMED_NOTE: &str = "This trace is streamed from disk (it is too large to hold), \
     and this view needs it in memory. The address, reuse, miss and set views show it; \
     `warpscope comm`, `warpscope sim --timing` and `warpscope explain` work on the file.";

/// The address view's legend for a colouring: swatches, and a note where colours repeat.
pub fn colour_legend(d: &SimData, by: ColourBy) -> (Vec<(Color32, String)>, Option<String>) {
    let palette = theme::PALETTE_LEN as u32;
    match by {
        ColourBy::Outcome => {
            // The timing model gives each request only hit or miss (classes in aggregate).
            let timing = d.config.timing.is_some();
            let entries = Outcome::ALL
                .into_iter()
                .filter(|&o| o == Outcome::Hit || (o == Outcome::Miss) == timing)
                .map(|o| (theme::outcome(o), o.name().to_string()))
                .collect();
            (entries, None)
        }
        ColourBy::Instruction => {
            // Instruction ids are per kernel: an id's name in each kernel that has it.
            let count = d.ids.inst;
            let entries = (0..count.min(palette))
                .map(|i| {
                    let mut names: Vec<&str> = Vec::new();
                    for k in &d.kernels {
                        if let Some(inst) = k.instructions.get(i as usize) {
                            if !names.contains(&inst.name.as_str()) {
                                names.push(&inst.name);
                            }
                        }
                    }
                    (theme::category(i), names.join(" / "))
                })
                .collect();
            let note = (count > palette)
                .then(|| format!("{count} instructions: colours repeat every {palette}"));
            (entries, note)
        }
        _ => {
            // Counted on the worker: these columns hold a value per request.
            let ids = &d.ids;
            let (what, count) = match by {
                ColourBy::Warp => ("warp", ids.warp),
                ColourBy::Cta => ("CTA", ids.cta),
                ColourBy::Sm => ("SM", ids.sm),
                ColourBy::Kernel => ("kernel", ids.kernel),
                _ if d.points.thread.is_empty() => ("warp", ids.warp),
                _ => ("thread", ids.thread),
            };
            let entries = (0..count.min(palette))
                .map(|i| (theme::category(i), format!("{what} {i}")))
                .collect();
            let note = (count > palette)
                .then(|| format!("{count} {what} ids: the colour is the id modulo {palette}"));
            (entries, note)
        }
    }
}

/// Paints each array's label at its first byte, at the plot's left edge (painted, not a plot
/// item, so the labels never widen the plot's bounds). Labels closer than a line of text to the
/// one below are left out until the user zooms in.
fn array_labels(
    ui: &Ui,
    t: &egui_plot::PlotTransform,
    rect: egui::Rect,
    segments: &crate::data::Segments,
    colour: Color32,
) {
    let painter = ui.painter_at(rect);
    let font = egui::FontId::proportional(11.0);
    let mut last = f32::INFINITY;
    for (start, text) in &segments.labels {
        let y = t
            .position_from_point(&PlotPoint::new(0.0, segments.y(*start)))
            .y;
        if y > rect.bottom() + 1.0 || y < rect.top() + 12.0 || last - y < 14.0 {
            continue;
        }
        last = y;
        painter.text(
            egui::pos2(rect.left() + 4.0, y),
            egui::Align2::LEFT_BOTTOM,
            text,
            font.clone(),
            colour,
        );
    }
}

/// Grid marks at whole units (log bins, log2 capacities), every unit where there is room and
/// every 2nd, 4th... where there is not, so that narrow panes keep labels at readable spacing.
pub fn integer_marks(input: egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    // base_step_size is the plot's minimum grid spacing (8 points) in plot units; egui_plot
    // draws x labels only 60 points or more apart (in full at 80): aim for 80.
    let step = (input.base_step_size * 10.0).max(1.0).ceil() as u64;
    let step = step.next_power_of_two() as f64;
    let (lo, hi) = input.bounds;
    let mut marks = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi && marks.len() < 500 {
        marks.push(egui_plot::GridMark {
            value: v,
            step_size: step,
        });
        v += step;
    }
    marks
}

mod address;
pub mod address_explain;
mod address_hover;
mod address_streamed;
pub mod comm;
pub mod command;
mod l2;
pub mod misses;
pub mod performance;
mod reuse;
mod sets;
pub mod step;

pub use address::AddressView;
pub use comm::CommView;
pub use command::{Command, LinkedHover, PaneCx, PaneView, Polled};
pub use performance::PerformanceView;
pub use sets::SetMetric;
pub use step::StepView;
// What only the app's tests name from outside the views.
#[cfg(test)]
pub use {
    address::{linked_request, Linking, MARKER_LIMIT},
    address_hover::{store_note, timing_result},
    reuse::{distance_bin_x, limit_x},
    sets::{set_label, set_marks},
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_one_entry_and_a_file_stem_of_its_own() {
        for v in View::ALL {
            assert_eq!(ENTRIES.iter().filter(|e| e.view == v).count(), 1, "{v:?}");
        }
        let mut stems: Vec<&str> = ENTRIES.iter().map(|e| e.file_stem).collect();
        stems.sort();
        stems.dedup();
        assert_eq!(stems.len(), ENTRIES.len());
        // Every view is a pane's, built from its entry.
        let views = PaneViews::default();
        assert_eq!(views.0.len(), ENTRIES.len());
        for v in View::ALL {
            assert!(views.0.iter().any(|(w, _)| *w == v), "{v:?}");
        }
    }
}
