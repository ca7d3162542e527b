//! The central area: the view tabs, and the panes side by side with their headers, their
//! views and the comparison table.

use std::sync::Arc;

use egui::{RichText, Ui};

use super::data::TraceData;
use super::raster::ColourBy;
use super::views::View;
use warpscope_core::config::SimConfig;

use super::*;

/// The width of the address view's "Colour by" label and box, in points.
const COLOUR_BY_WIDTH: f32 = 210.0;

impl WarpscopeApp {
    /// The one-line summary of the panes' differences ("gto 34.1% misses, round-robin 41.0%").
    /// The panes' absolute traffic side by side (a miss rate alone misleads when the panes
    /// make different numbers of requests), each later pane's difference from pane 1 in
    /// brackets.
    pub(super) fn comparison(&self, ui: &mut Ui) {
        let configs: Vec<&SimConfig> = self.settings.panes.iter().map(|p| &p.1).collect();
        let diffs = differences(&configs);
        let first = self.panes[0].result.as_ref().map(|r| r.report.totals);
        // With different kernels side by side, each row names its trace.
        let show_trace = self.traces_differ();
        // The miss classes side by side (what lessons ask to compare), the timing model's
        // two where a pane runs it; the numbers first, the words last, so a narrow window
        // shows the numbers.
        let timing = self
            .panes
            .iter()
            .any(|p| p.result.as_ref().is_some_and(|r| r.config.timing.is_some()));
        let classes = if timing { 5 } else { 3 };
        // The L2's miss rate and DRAM traffic where a pane simulated one.
        let l2 = self
            .panes
            .iter()
            .any(|p| p.result.as_ref().is_some_and(|r| r.report.l2.is_some()));
        let class_names = ["compulsory", "capacity", "conflict", "latency", "MSHR"];
        egui::Grid::new("pane-comparison")
            .striped(true)
            .spacing([16.0, 2.0])
            .show(ui, |ui| {
                ui.label(RichText::new("pane").weak());
                for h in ["requests", "misses", "miss rate"] {
                    ui.label(RichText::new(h).weak());
                }
                for h in &class_names[..classes] {
                    ui.label(RichText::new(*h).weak());
                }
                for h in ["bytes from memory", "bytes to memory"] {
                    ui.label(RichText::new(h).weak());
                }
                if l2 {
                    for h in ["L2 miss rate", "DRAM bytes read"] {
                        ui.label(RichText::new(h).weak());
                    }
                }
                if show_trace {
                    ui.label(RichText::new("trace").weak());
                }
                ui.label(RichText::new("differs in").weak());
                ui.end_row();
                for (i, p) in self.panes.iter().enumerate() {
                    ui.label(RichText::new(format!("{}", i + 1)).strong());
                    match &p.result {
                        Some(r) => {
                            let t = &r.report.totals;
                            let base = first.filter(|_| i > 0);
                            let cell = |v: u64, b: Option<u64>| match b {
                                Some(b) if v != b => format!("{v} ({:+})", v as i128 - b as i128),
                                _ => v.to_string(),
                            };
                            ui.label(cell(t.requests, base.map(|b| b.requests)));
                            ui.label(cell(t.misses, base.map(|b| b.misses)));
                            ui.label(format!("{:.2}%", r.miss_percent()));
                            let mc = &t.miss_classes;
                            let values =
                                [mc.compulsory, mc.capacity, mc.conflict, mc.latency, mc.mshr];
                            for v in &values[..classes] {
                                ui.label(v.to_string());
                            }
                            ui.label(cell(t.bytes_from_memory, base.map(|b| b.bytes_from_memory)));
                            ui.label(cell(t.bytes_to_memory, base.map(|b| b.bytes_to_memory)));
                            if l2 {
                                match &r.report.l2 {
                                    Some(l) => {
                                        ui.label(format!("{:.2}%", 100.0 * l.miss_rate));
                                        ui.label(l.totals.bytes_from_dram.to_string());
                                    }
                                    None => {
                                        ui.label("-");
                                        ui.label("-");
                                    }
                                }
                            }
                        }
                        None => {
                            for _ in 0..5 + classes + 2 * l2 as usize {
                                ui.label("…");
                            }
                        }
                    }
                    if show_trace {
                        let t = self.pane_trace(i);
                        let label = t.as_ref().map_or("-", |t| t.label.as_str());
                        let shown = shortened(label, DIFFERS_CHARS);
                        let c = ui.label(shown.as_str());
                        if shown != label {
                            c.on_hover_text(label);
                        }
                    }
                    let all = if diffs[i].is_empty() {
                        "-".to_string()
                    } else {
                        diffs[i].join(", ")
                    };
                    // Long lists are cut, the whole on hover.
                    let shown = shortened(&all, DIFFERS_CHARS);
                    let cell = ui.label(shown.as_str());
                    if shown != all {
                        cell.on_hover_text(all);
                    }
                    ui.end_row();
                }
            });
    }

    #[cfg(test)]
    pub(crate) fn summary(&self) -> String {
        let configs: Vec<&SimConfig> = self.settings.panes.iter().map(|p| &p.1).collect();
        let diffs = differences(&configs);
        self.panes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let what = if diffs[i].is_empty() {
                    format!("pane {}", i + 1)
                } else {
                    diffs[i].join(", ")
                };
                match &p.result {
                    Some(r) => format!("{what}: {:.1}% misses", r.miss_percent()),
                    None => format!("{what}: …"),
                }
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    pub(super) fn central(&mut self, ui: &mut Ui) {
        // Nothing below may widen the area past the window: rows wrap, the table scrolls and
        // each pane is held to its cell (`pane_grid`).
        let width = ui.available_width();
        self.view_bar(ui);
        if self.panes.len() > 1 {
            egui::ScrollArea::horizontal()
                .id_salt("pane-comparison-scroll")
                .max_width(width)
                .show(ui, |ui| self.comparison(ui));
        }
        ui.separator();
        self.view_rect = ui.available_rect_before_wrap();
        let nothing = || {
            RichText::new("Open a trace (File > Open, Ctrl+O), drop a file on the window,\nor generate a built-in kernel in the panel on the left.").size(16.0).weak()
        };
        if self.trace.is_none() && !self.traces_differ() {
            ui.centered_and_justified(|ui| {
                ui.label(nothing());
            });
            return;
        }
        self.panes_side_by_side(ui);
    }

    /// The row above the panes: the view tabs, the address view's colouring, "+ Compare".
    fn view_bar(&mut self, ui: &mut Ui) {
        ui.horizontal_wrapped(|ui| {
            if !self.settings.side_panel
                && ui
                    .button("Show settings")
                    .on_hover_text("Show the side panel: the trace and the panes' configuration")
                    .clicked()
            {
                self.settings.side_panel = true;
            }
            for v in View::ALL {
                ui.selectable_value(&mut self.settings.view, v, v.name());
            }
            ui.separator();
            if self.settings.view == View::Address {
                // The label and its box wrap together: a row without room for both (a nested
                // row is not wrapped, it would run off the window) ends before them.
                if ui.available_size_before_wrap().x < COLOUR_BY_WIDTH {
                    ui.end_row();
                }
                ui.horizontal(|ui| {
                    let l = ui.label("Colour by");
                    egui::ComboBox::from_id_salt("colour-by")
                        .selected_text(self.settings.colour.name())
                        .show_ui(ui, |ui| {
                            for c in ColourBy::ALL {
                                ui.selectable_value(&mut self.settings.colour, c, c.name());
                            }
                        })
                        .response
                        .labelled_by(l.id);
                });
                ui.separator();
            }
            if ui
                .add_enabled(self.panes.len() < MAX_PANES, egui::Button::new("+ Compare"))
                .on_hover_text("Add a pane with its own configuration, side by side")
                .clicked()
            {
                self.actions.push(Action::AddPane);
            }
        });
    }

    /// The panes side by side, each its header and the view chosen of its result; then what
    /// they asked for.
    fn panes_side_by_side(&mut self, ui: &mut Ui) {
        let n = self.panes.len();
        // Each pane's trace; panes link (hover, zoom, instruction filter) only to panes showing
        // the same trace.
        let traces: Vec<Option<Arc<TraceData>>> = (0..n).map(|i| self.pane_trace(i)).collect();
        let trace_ids: Vec<Option<usize>> = traces
            .iter()
            .map(|t| t.as_ref().map(pane_trace::trace_id))
            .collect();
        let show_trace = self.traces_differ();
        let mut share = None;
        let mut remove = None;
        let mut activate = None;
        let mut commands = Vec::new();
        // The request hovered in the last frame, with its pane's result, for the other panes.
        let linked = self.hover.and_then(|(p, generation, request)| {
            let src = self.panes.get(p)?;
            trace_ids.get(p)?.as_ref()?;
            let data = src
                .result
                .clone()
                .filter(|_| src.generation == generation)?;
            Some(views::LinkedHover {
                pane: p,
                generation,
                request,
                data,
            })
        });
        let shared = Shared {
            settings: &self.settings,
            only: &self.only,
            only_trace: self.only_trace,
            wake: &self.wake,
            linked: &linked,
            trace_ids: &trace_ids,
        };
        self.pane_rects.clear();
        let panes = &mut self.panes;
        let rects = &mut self.pane_rects;
        pane_grid(ui, n, |i, col| {
            rects.push(col.max_rect());
            let pane = &mut panes[i];
            let (preset, config) = &shared.settings.panes[i];
            let place = PanePlace {
                index: i,
                count: n,
                active: i == shared.settings.active,
            };
            let header = pane_header(col, pane, place, preset, config);
            activate = activate.or(header.activate.then_some(i));
            remove = remove.or(header.remove.then_some(i));
            if show_trace && trace_line(col, pane, traces[i].as_deref()) {
                share = Some(i);
            }
            pane_error(col, pane);
            if let Some(trace) = &traces[i] {
                commands.extend(pane_view(col, i, pane, trace, &shared));
            } else {
                col.centered_and_justified(|ui| {
                    ui.label(RichText::new("No trace yet").weak());
                });
            }
        });
        let mut hover = None;
        for c in commands {
            match c {
                // Hovering lasts a frame: a frame without it has nothing hovered.
                views::Command::Hover {
                    pane,
                    generation,
                    request,
                } => hover = Some((pane, generation, request)),
                c => self.actions.push(Action::View(c)),
            }
        }
        if let Some(i) = share {
            self.actions.push(Action::ShareTrace(i));
        }
        if hover != self.hover {
            self.hover = hover;
            if n > 1 {
                ui.ctx().request_repaint();
            }
        }
        if let Some(i) = activate {
            self.settings.active = i;
        }
        if let Some(i) = remove {
            self.actions.push(Action::RemovePane(i));
        }
    }
}

/// What every pane's view is drawn with, besides the pane's own.
struct Shared<'a> {
    settings: &'a Settings,
    only: &'a Option<data::InstFilter>,
    only_trace: Option<usize>,
    wake: &'a job::Wake,
    linked: &'a Option<views::LinkedHover>,
    trace_ids: &'a [Option<usize>],
}

/// The line naming a pane's trace where the panes show different ones; whether its "use the
/// shared trace" was clicked.
fn trace_line(ui: &mut Ui, pane: &Pane, trace: Option<&TraceData>) -> bool {
    let mut share = false;
    ui.horizontal_wrapped(|ui| {
        let label = trace.map_or("no trace yet", |t| t.label.as_str());
        let whose = if pane.own_trace.is_some() {
            "own trace"
        } else {
            "shared trace"
        };
        ui.label(RichText::new(format!("{whose}: {label}")).strong());
        share = pane.own_trace.is_some()
            && ui
                .small_button("use the shared trace")
                .on_hover_text("Show the trace the other panes share")
                .clicked();
    });
    share
}

/// A pane's error, and which result is shown below it instead.
fn pane_error(ui: &mut Ui, pane: &Pane) {
    let Some(e) = &pane.error else {
        return;
    };
    ui.colored_label(ui.visuals().error_fg_color, e);
    if let Some(r) = &pane.result {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            format!(
                "Below: the last valid result ({}), {:.2}% misses",
                short(&r.config),
                r.miss_percent()
            ),
        );
    }
}

/// Pane `i`'s view of its result (or why there is none yet); returns what the view asked for.
fn pane_view(
    col: &mut Ui,
    i: usize,
    pane: &mut Pane,
    trace: &Arc<TraceData>,
    shared: &Shared,
) -> Vec<views::Command> {
    let settings = shared.settings;
    if trace.streamed.is_some() && settings.view.needs_trace_in_memory() {
        col.centered_and_justified(|ui| {
            ui.label(views::STREAMED_NOTE);
        });
        return Vec::new();
    }
    let Some(data) = pane.result.clone() else {
        // Nothing to show yet, or (a failed run, said above) nothing at all.
        if pane.sim.is_some() || pane.error.is_none() {
            col.centered_and_justified(|ui| {
                crate::theme::working(ui);
            });
        }
        return Vec::new();
    };
    if data.preview {
        let read = pane
            .sim
            .as_ref()
            .and_then(|j| j.progress().fraction())
            .map_or(String::new(), |f| format!(" ({:.0}% read)", f * 100.0));
        col.label(
            RichText::new(format!(
                "Preview of the run so far{read}: the file is still being read. The \
                 tables and reuse distances come when it ends."
            ))
            .weak(),
        );
    }
    let ids = shared.trace_ids;
    let cx = views::PaneCx {
        pane: i,
        generation: pane.generation,
        run: pane.run,
        data: &data,
        trace,
        // Linked only to panes of the same trace on the same kind of time axis
        // (cycles under the timing model, request numbers otherwise).
        link: egui::Id::unique(("linked-panes", ids[i], data.config.timing.is_some())),
        colour: settings.colour,
        set_metric: settings.set_metric,
        miss: settings.misses,
        // Panes link (hover, zoom, instruction filter) only to panes of the same trace.
        linked_hover: shared
            .linked
            .clone()
            .filter(|l| l.pane != i && ids[l.pane] == ids[i]),
        only: shared.only.clone().filter(|_| ids[i] == shared.only_trace),
        wake: shared.wake,
    };
    match pane.views.get_mut(settings.view) {
        Some(view) => view.ui(col, &cx),
        None => Vec::new(),
    }
}

/// What a pane's result covers, for its header: which SMs of how many were simulated, their
/// CTAs and requests against the trace's ("SM 0 of 14: 16 of 256 CTAs, 15440 requests from
/// 263168 of 4210688 accesses"), then whether the trace was streamed and its reuse distances
/// sampled ("streamed, reuse distances sampled (1 in 8 lines)"). Only the simulated SMs' CTAs
/// are in the views.
fn scope(d: &SimData) -> String {
    let how = match &d.report.reuse {
        Some(u)
            if u.method == warpscope_core::report::ReuseMethod::Sampled
                && u.sampling_rate >= 1.0 =>
        {
            ", reuse distances sampled (every line kept: exact)".to_string()
        }
        Some(u) if u.method == warpscope_core::report::ReuseMethod::Sampled => format!(
            ", reuse distances sampled (1 in {:.0} lines)",
            1.0 / u.sampling_rate.max(1e-9)
        ),
        Some(_) => ", reuse distances exact".to_string(),
        None => String::new(),
    };
    let read = if d.streamed { "streamed" } else { "held whole" };
    format!("{}; {read}{how}", counts(&d.report))
}

/// [`scope`]'s counts: the SMs, CTAs, requests and accesses.
fn counts(r: &warpscope_core::report::Report) -> String {
    let sms = r.config.gpu.sms;
    let simulated = &r.simulated_sms;
    let which = match simulated.as_slice() {
        [one] if sms > 1 => format!("SM {one} of {sms}"),
        s if s.len() as u32 >= sms => format!("every SM ({sms})"),
        s => format!("{} of {sms} SMs", s.len()),
    };
    let ctas: u64 = r.kernels.iter().map(|k| k.grid.count()).sum();
    let rows: u64 = r.kernels.iter().map(|k| k.rows).sum();
    format!(
        "{which}: {} of {ctas} CTAs, {} requests from {} of {rows} accesses",
        r.ctas.len(),
        r.totals.requests,
        r.totals.accesses
    )
}

/// What a click in a pane's header asks for.
struct HeaderClicks {
    activate: bool,
    remove: bool,
}

/// Where a pane is among the panes.
#[derive(Clone, Copy)]
struct PanePlace {
    index: usize,
    /// How many panes there are.
    count: usize,
    /// The side panel edits this pane's configuration.
    active: bool,
}

/// A pane's header, two lines at any width: its number (click to edit it), its miss rate,
/// its configuration in a few words and a close button; then what its result covers and
/// whether it is being updated. Words that do not fit are cut, the whole on hover.
fn pane_header(
    ui: &mut Ui,
    pane: &Pane,
    place: PanePlace,
    preset: &str,
    cfg: &SimConfig,
) -> HeaderClicks {
    let PanePlace {
        index: i,
        count: n,
        active,
    } = place;
    let mut clicks = HeaderClicks {
        activate: false,
        remove: false,
    };
    let close = if n > 1 { 28.0 } else { 0.0 };
    ui.horizontal(|ui| {
        if n > 1 {
            clicks.activate = ui
                .selectable_label(active, RichText::new(format!("Pane {}", i + 1)).strong())
                .on_hover_text("Edit this pane's configuration in the side panel")
                .clicked();
        }
        match (&pane.error, &pane.result) {
            // The error stands where this configuration's numbers would.
            (Some(_), _) => {
                ui.colored_label(ui.visuals().error_fg_color, "not run");
            }
            (None, Some(r)) => {
                ui.label(RichText::new(format!("{:.2}% misses", r.miss_percent())).strong());
            }
            (None, None) => {}
        }
        let room = (ui.available_width() - close).max(0.0);
        ui.scope(|ui| {
            ui.set_max_width(room);
            let words = format!("{preset}, {}", short(cfg));
            ui.add(egui::Label::new(RichText::new(words).weak()).truncate());
        });
        if n > 1 {
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                clicks.remove = ui
                    .small_button("x")
                    .on_hover_text("Close this pane")
                    .clicked();
            });
        }
    });
    let updating = pane.sim.is_some() || pane.dirty_since.is_some();
    let partial = pane.result.as_ref().is_some_and(|r| r.preview);
    let note = match (pane.error.is_some(), updating, pane.stale) {
        (true, _, _) | (false, false, false) => None,
        (false, true, _) => Some("stale, updating…"),
        // Its run was cancelled: what is on screen stays, and says what it is.
        (false, false, true) if partial => Some("partial: its run was cancelled"),
        (false, false, true) => Some("stale: its run was cancelled"),
    };
    let scope_text = pane
        .result
        .as_ref()
        .filter(|_| pane.error.is_none())
        .map(|r| scope(r));
    if note.is_some() || scope_text.is_some() {
        ui.horizontal(|ui| {
            if let Some(note) = note {
                ui.label(RichText::new(note).color(ui.visuals().warn_fg_color));
            }
            if let Some(text) = scope_text {
                ui.add(egui::Label::new(RichText::new(text).weak()).truncate())
                    .on_hover_text(
                        "What this result covers: the SMs simulated (the GPU panel's \"Simulate\" \
                         setting), the CTAs that ran on them, their requests and accesses",
                    );
            }
        });
    }
    clicks
}

/// The narrowest a pane is drawn beside another before the panes go one under the other.
const MIN_PANE_WIDTH: f32 = 300.0;
/// The lowest a pane is drawn before the panes scroll instead of shrinking further: room for
/// its header and the Miss categories view's two charts with their legends and a few rows.
const MIN_PANE_HEIGHT: f32 = 260.0;

/// Lays out `n` panes so each stays readable: side by side for one or two, a grid of two
/// columns for three or four (rows share the height); one column where two would be narrower
/// than `MIN_PANE_WIDTH`, and a scrolled column where the rows would be lower than
/// `MIN_PANE_HEIGHT`. Each pane is held to its cell (drawn and clipped there), so a wide
/// label or table in one pane never pushes the others off screen. `body` draws pane `i`.
pub(super) fn pane_grid(ui: &mut Ui, n: usize, mut body: impl FnMut(usize, &mut Ui)) {
    let n = n.max(1);
    let gap = ui.spacing().item_spacing;
    let avail = ui.available_size_before_wrap();
    let cols = if n > 1 && (avail.x - gap.x) / 2.0 >= MIN_PANE_WIDTH {
        2
    } else {
        1
    };
    let rows = n.div_ceil(cols);
    let width = ((avail.x - gap.x * (cols - 1) as f32) / cols as f32).max(1.0);
    let fit = (avail.y - gap.y * (rows - 1) as f32) / rows as f32;
    let height = fit.max(MIN_PANE_HEIGHT);
    let mut draw = |ui: &mut Ui| {
        let total = egui::vec2(avail.x, height * rows as f32 + gap.y * (rows - 1) as f32);
        let (rect, _) = ui.allocate_exact_size(total, egui::Sense::hover());
        for i in 0..n {
            let (r, c) = ((i / cols) as f32, (i % cols) as f32);
            let min = rect.min + egui::vec2(c * (width + gap.x), r * (height + gap.y));
            let cell = egui::Rect::from_min_size(min, egui::vec2(width, height));
            let mut pane = ui.new_child(
                egui::UiBuilder::new()
                    .id_salt(("pane-cell", i))
                    .max_rect(cell)
                    .layout(egui::Layout::top_down(egui::Align::Min)),
            );
            pane.set_clip_rect(cell.intersect(ui.clip_rect()));
            body(i, &mut pane);
        }
    };
    if fit < MIN_PANE_HEIGHT {
        egui::ScrollArea::vertical()
            .id_salt("pane-grid-scroll")
            .auto_shrink(false)
            .show(ui, |ui| draw(ui));
    } else {
        draw(ui);
    }
}

/// A few words about a configuration for pane headers.
pub(super) fn short(c: &SimConfig) -> String {
    let ways = match c.cache.ways {
        0 => "full".to_string(),
        w => format!("{w}-way"),
    };
    format!(
        "{} {ways}, {}, {}",
        size_words(c.cache.size_bytes),
        c.cache.replacement.name(),
        c.schedule.policy.name()
    )
}

/// A cache size as the size field shows it: whole KiB, else bytes below 1 KiB, else KiB with
/// the fraction ("128 B", "1.5 KiB"; never "0 KiB" for a cache of 128 bytes).
pub(super) fn size_words(bytes: u64) -> String {
    if bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{} KiB", bytes as f64 / 1024.0)
    }
}

/// Characters of the comparison's "differs in" cell before it is cut (the whole on hover).
const DIFFERS_CHARS: usize = 48;

/// `text` cut to `most` characters, with an ellipsis when cut.
fn shortened(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let cut: String = text.chars().take(most.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end_matches([',', ' ']))
}

/// For each configuration, the settings in which the configurations differ ("ways 8").
pub fn differences(configs: &[&SimConfig]) -> Vec<Vec<String>> {
    let flat: Vec<Vec<(String, String)>> = configs
        .iter()
        .map(|c| {
            let mut out = Vec::new();
            if let Ok(v) = serde_json::to_value(c) {
                flatten("", &v, &mut out);
            }
            // A configuration without an L2 leaves it out of its JSON: it reads as one
            // difference, "L2 off", as the timing model's `null` does.
            if !out.iter().any(|(k, _)| k.starts_with("l2.")) {
                out.push(("l2".into(), "null".into()));
            }
            out
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for f in &flat {
        for (k, _) in f {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // A setting missing from a configuration is another variant of an enum there (the set
    // index `modulo` against `bits: [..]`): name the variant it has instead.
    let value = |f: &Vec<(String, String)>, k: &str| -> (String, String) {
        if let Some((kk, v)) = f.iter().find(|(kk, _)| kk == k) {
            return (kk.clone(), v.clone());
        }
        f.iter()
            .find(|(kk, _)| k.starts_with(&format!("{kk}.")) || kk.starts_with(&format!("{k}.")))
            .map(|(kk, v)| (kk.clone(), v.clone()))
            .unwrap_or_else(|| (k.to_string(), "none".into()))
    };
    let differing: Vec<&String> = keys
        .iter()
        .filter(|k| flat.iter().any(|f| value(f, k) != value(&flat[0], k)))
        .collect();
    // The L2's settings say so ("L2 ways 16"), beside the L1's of the same names.
    let words = |k: &str| {
        let w = k.rsplit('.').next().unwrap_or(k).replace('_', " ");
        match k {
            "l2" => "L2".to_string(),
            _ if k.starts_with("l2.") => format!("L2 {w}"),
            _ => w,
        }
    };
    // A group of settings some configurations leave out (`null`: the timing model off) is one
    // difference, "timing on" against "timing off", not each of its settings against "null";
    // its settings are named only where the configurations that have it differ in them.
    let group_of = |k: &str| -> Option<String> {
        let (key, _) = flat
            .iter()
            .map(|f| value(f, k))
            .find(|(_, v)| v == "null")?;
        let holders: Vec<_> = flat.iter().filter(|f| value(f, k).1 != "null").collect();
        let same = holders.iter().all(|f| value(f, k) == value(holders[0], k));
        (same || key == *k).then_some(key)
    };
    flat.iter()
        .map(|f| {
            let mut out: Vec<String> = Vec::new();
            let mut add = |text: String| {
                if !out.contains(&text) {
                    out.push(text);
                }
            };
            for k in &differing {
                let (key, mut v) = value(f, k);
                // A limit of 0 misses in flight is no limit.
                if v == "0" && (key.ends_with(".mshrs") || key.ends_with(".mshrs_per_warp")) {
                    v = "unlimited".into();
                }
                if v == "null" {
                    add(format!("{} off", words(&key)));
                    continue;
                }
                if let Some(group) = group_of(k) {
                    add(format!("{} on", words(&group)));
                    continue;
                }
                // A variant with fields reads with its setting's name: "set index bits [6,7]".
                let parent = key.rsplit_once('.').map(|p| p.0);
                add(match parent.filter(|p| differing.iter().any(|d| d == p)) {
                    Some(p) => format!("{} {} {v}", words(p), words(&key)),
                    None => format!("{} {v}", words(&key)),
                });
            }
            out
        })
        .collect()
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_sizes_read_as_the_size_field_shows_them() {
        assert_eq!(super::size_words(16 * 1024), "16 KiB");
        assert_eq!(super::size_words(128), "128 B");
        assert_eq!(super::size_words(1536), "1.5 KiB");
    }
}
