//! Step-through: a pane's requests one at a time, forwards and backwards, played at a chosen
//! speed, by request, warp instruction or CTA, or on to the next miss of an instruction. At
//! each step it shows what the core's `explain::step::snapshot` gives: the request, how its
//! warp instruction's threads coalesced into lines, its set's ways (lines, sectors, dirty
//! bits, the policy's state; in the timing model the LRU stack, lines in flight and MSHRs),
//! the requests just before it, and a scatter of the requests around it with the time cursor.
//! Each step's state is made by a job that re-runs the pane's simulation to that request.

use egui::{Color32, RichText, Ui};
use egui_plot::{MarkerShape, Plot, PlotPoints, Points, VLine};

use super::command::{Command, PaneCx, PaneView, Polled};
use super::*;
use crate::data::{Outcome, Points as Requests, SimData};
use crate::job::{take_finished, Job};
use crate::theme;
use warpscope_core::explain::step::Snapshot;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Step,
    name: "Step through",
    file_stem: "step",
    needs_trace_in_memory: true,
    new: || Box::new(StepView::default()),
};

/// What one step moves by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StepBy {
    #[default]
    Request,
    WarpInstruction,
    Cta,
}

impl StepBy {
    const ALL: [StepBy; 3] = [StepBy::Request, StepBy::WarpInstruction, StepBy::Cta];
    fn name(self) -> &'static str {
        match self {
            StepBy::Request => "request",
            StepBy::WarpInstruction => "warp instruction",
            StepBy::Cta => "CTA",
        }
    }
}

/// The request after `i` one step `by` on (`None` at the end).
pub fn next(p: &Requests, i: usize, by: StepBy) -> Option<usize> {
    let n = p.len();
    let cta = |j: usize| (p.kernel[j], p.sm[j], p.cta[j]);
    match by {
        StepBy::Request => (i + 1 < n).then_some(i + 1),
        StepBy::WarpInstruction => (i + 1..n).find(|&j| p.starts_instruction(j)),
        StepBy::Cta => (i + 1..n).find(|&j| cta(j) != cta(i)),
    }
}

/// The request one step `by` before `i` (`None` at the start): the previous request, the
/// start of the previous warp instruction, or the start of the previous CTA's run.
pub fn prev(p: &Requests, i: usize, by: StepBy) -> Option<usize> {
    let cta = |j: usize| (p.kernel[j], p.sm[j], p.cta[j]);
    match by {
        StepBy::Request => i.checked_sub(1),
        StepBy::WarpInstruction => (0..i).rev().find(|&j| p.starts_instruction(j)),
        StepBy::Cta => {
            let j = (0..i).rev().find(|&j| cta(j) != cta(i))?;
            let start = (0..j)
                .rev()
                .find(|&s| cta(s) != cta(j))
                .map_or(0, |s| s + 1);
            Some(start)
        }
    }
}

/// The next miss after `i`, of instruction `only` (kernel, instruction) if given.
pub fn next_miss(p: &Requests, i: usize, only: Option<(u16, u32)>) -> Option<usize> {
    (i + 1..p.len()).find(|&j| p.outcome(j) != Outcome::Hit && p.of_inst(j, only))
}

/// A step's state as it came back from its job.
pub struct Shown {
    pub generation: u64,
    pub request: usize,
    pub snapshot: Result<Snapshot, String>,
}

/// The job's pieces: the state at request `request` of `trace` simulated under `config` (an
/// error other than a cancel is shown in the view; [`crate::sliced::Slices::job`], the runs a
/// piece at a time where `pieces`).
pub fn snapshot(
    trace: std::sync::Arc<crate::data::TraceData>,
    config: warpscope_core::config::SimConfig,
    generation: u64,
    request: usize,
    pieces: bool,
) -> impl FnMut(&crate::job::Progress) -> Option<crate::job::Finished<Shown>> + Send + 'static {
    use warpscope_core::explain::{step::Stepping, ExplainError};
    let mut stepping = None;
    move |progress| {
        let step = match &mut stepping {
            Some(s) => Ok(s),
            None => Stepping::new(&config, request as u64, pieces).map(|s| stepping.insert(s)),
        };
        let snapshot = match step {
            Ok(s) => match s.step(&trace.trace.kernels, &mut |d, t| progress.report(d, t)) {
                Ok(None) => return None,
                Ok(Some(s)) => Ok(s),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        Some(match snapshot {
            Err(ExplainError::Cancelled) => Err(crate::job::JobError::Cancelled),
            s => Ok(Shown {
                generation,
                request,
                snapshot: s.map_err(|e| e.to_string()),
            }),
        })
    }
}

/// The step-through view of one pane.
pub struct StepView {
    /// The request shown (its index in the run's requests).
    pub cursor: usize,
    pub by: StepBy,
    pub playing: bool,
    /// Steps per second while playing.
    pub speed: f32,
    /// When the last step was played (the UI clock, seconds).
    last_step: Option<f64>,
    /// "Next miss" is of this instruction (kernel, instruction), or of any.
    pub miss_of: Option<(u16, u32)>,
    /// The state last arrived.
    pub shown: Option<Shown>,
    /// The state last asked for: (generation, request).
    asked: Option<(u64, usize)>,
    /// Finding the state of a step (a newer one replaces, and so stops, an older one).
    job: Option<Job<Shown>>,
}

impl Default for StepView {
    fn default() -> Self {
        StepView {
            cursor: 0,
            by: StepBy::Request,
            playing: false,
            speed: 4.0,
            last_step: None,
            miss_of: None,
            shown: None,
            asked: None,
            job: None,
        }
    }
}

impl StepView {
    /// A step's state from its job (kept only if it is the one last asked for).
    fn arrived(&mut self, s: Shown) {
        if self.asked == Some((s.generation, s.request)) {
            self.shown = Some(s);
        }
    }
    /// Shows request `i`.
    pub fn go_to(&mut self, i: usize) {
        self.cursor = i;
    }
    /// Whether the state of the request shown is still to come.
    #[cfg(test)]
    pub fn waiting(&self, generation: u64) -> bool {
        self.shown
            .as_ref()
            .is_none_or(|s| (s.generation, s.request) != (generation, self.cursor))
    }

    fn controls(&mut self, ui: &mut Ui, d: &SimData, cx: &PaneCx) {
        let p = &d.points;
        let last = p.len().saturating_sub(1);
        ui.horizontal_wrapped(|ui| {
            if ui
                .button("|< First")
                .on_hover_text("First request")
                .clicked()
            {
                self.cursor = 0;
                self.playing = false;
            }
            if ui
                .button("< Step back")
                .on_hover_text("One step back (re-simulates to there)")
                .clicked()
            {
                self.cursor = prev(p, self.cursor, self.by).unwrap_or(0);
                self.playing = false;
            }
            let play = if self.playing { "Pause" } else { "Play" };
            if ui.button(play).clicked() {
                self.playing = !self.playing;
                self.last_step = None;
            }
            if ui.button("Step >").on_hover_text("One step on").clicked() {
                self.cursor = next(p, self.cursor, self.by).unwrap_or(last);
                self.playing = false;
            }
            let l = ui.label("by");
            egui::ComboBox::from_id_salt(("step-by", cx.pane))
                .selected_text(self.by.name())
                .show_ui(ui, |ui| {
                    for b in StepBy::ALL {
                        ui.selectable_value(&mut self.by, b, b.name());
                    }
                })
                .response
                .labelled_by(l.id);
            ui.add(
                egui::Slider::new(&mut self.speed, 0.5..=30.0)
                    .logarithmic(true)
                    .text("steps/s"),
            );
            ui.separator();
            if ui
                .button("Next miss")
                .on_hover_text("Run on to the next miss of the chosen instruction")
                .clicked()
            {
                if let Some(j) = next_miss(p, self.cursor, self.miss_of) {
                    self.cursor = j;
                }
                self.playing = false;
            }
            let l = ui.label("of");
            let name = |k: u16, i: u32| {
                cx.trace
                    .trace
                    .kernels
                    .get(k as usize)
                    .and_then(|k| k.instructions.get(i as usize))
                    .map_or_else(|| format!("#{i}"), |x| x.name.clone())
            };
            let chosen = self
                .miss_of
                .map_or_else(|| "any instruction".to_string(), |(k, i)| name(k, i));
            egui::ComboBox::from_id_salt(("miss-of", cx.pane))
                .selected_text(chosen)
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.miss_of, None, "any instruction");
                    for (ki, k) in cx.trace.trace.kernels.iter().enumerate().take(64) {
                        for (ii, x) in k.instructions.iter().enumerate().take(256) {
                            let v = Some((ki as u16, ii as u32));
                            ui.selectable_value(&mut self.miss_of, v, x.name.as_str());
                        }
                    }
                })
                .response
                .labelled_by(l.id);
        });
        ui.horizontal(|ui| {
            ui.spacing_mut().slider_width = (ui.available_width() - 160.0).max(120.0);
            ui.add(egui::Slider::new(&mut self.cursor, 0..=last).text("request"));
        });
    }

    /// Plays: one step every 1/speed seconds.
    fn play(&mut self, ui: &Ui, p: &Requests) {
        if !self.playing {
            return;
        }
        let now = ui.input(|i| i.time);
        let period = 1.0 / self.speed.max(0.1) as f64;
        match self.last_step {
            Some(t) if now - t < period => {}
            _ => {
                if self.last_step.is_some() {
                    match next(p, self.cursor, self.by) {
                        Some(j) => self.cursor = j,
                        None => self.playing = false,
                    }
                }
                self.last_step = Some(now);
            }
        }
        ui.ctx()
            .request_repaint_after(std::time::Duration::from_secs_f64(period / 2.0));
    }
}

impl PaneView for StepView {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let d = cx.data;
        if d.points.is_empty() {
            empty(
                ui,
                "No requests reached the simulated L1: nothing to step through.",
            );
            return Vec::new();
        }
        self.cursor = self.cursor.min(d.points.len() - 1);
        self.play(ui, &d.points);
        self.controls(ui, d, cx);
        self.cursor = self.cursor.min(d.points.len() - 1);
        let want = (cx.generation, self.cursor);
        if self.asked != Some(want) {
            self.asked = Some(want);
            let (generation, request) = want;
            let (trace, config) = (cx.trace.clone(), d.config.clone());
            let pieces = snapshot(trace, config, generation, request, crate::sliced::PIECES);
            self.job = Some(crate::sliced::Slices::job(
                format!("Stepping to request {request} in pane {}", cx.pane + 1),
                cx.wake,
                pieces,
            ));
        }
        ui.separator();
        let current = self
            .shown
            .as_ref()
            .filter(|s| s.generation == cx.generation);
        match current.map(|s| &s.snapshot) {
            None => {
                crate::theme::working(ui);
            }
            Some(Err(e)) => {
                ui.label(RichText::new(e).color(ui.visuals().error_fg_color));
            }
            Some(Ok(s)) => {
                let stale = current.is_some_and(|c| c.request != self.cursor);
                state(ui, d, s, stale);
            }
        }
        ui.separator();
        scatter(ui, d, self.cursor, cx);
        Vec::new()
    }

    fn poll(&mut self, _pane: &Polled) -> Option<String> {
        if let Some(Ok(s)) = take_finished(&mut self.job) {
            self.arrived(s);
        }
        None
    }

    fn busy(&self) -> bool {
        self.job.is_some()
    }
}

/// `0-15, 32, 40-41`.
fn ranges(v: &[u32]) -> String {
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// Sectors as marks: `x` valid, `·` not.
fn sectors(valid: u32, n: u32) -> String {
    (0..n.clamp(1, 32))
        .map(|b| if valid >> b & 1 == 1 { 'x' } else { '·' })
        .collect()
}

fn state(ui: &mut Ui, d: &SimData, s: &Snapshot, stale: bool) {
    let r = &s.request;
    let i = r.request as usize;
    let outcome = if i < d.points.len() {
        d.points.outcome(i)
    } else if r.hit {
        Outcome::Hit
    } else {
        Outcome::Miss
    };
    ui.columns(2, |cols| {
        request_column(&mut cols[0], d, s, outcome, stale);
        set_column(&mut cols[1], d, s, outcome);
    });
}

/// The request at the step: its outcome, its warp instruction's lines and threads, and what
/// its SM issued before it.
fn request_column(ui: &mut Ui, d: &SimData, s: &Snapshot, outcome: Outcome, stale: bool) {
    let r = &s.request;
    ui.horizontal(|ui| {
        ui.label(
            RichText::new(format!(
                "Request {} · {}",
                r.request,
                if r.hit {
                    "hit".to_string()
                } else {
                    outcome.name().to_string()
                }
            ))
            .strong()
            .size(16.0)
            .color(theme::outcome(outcome)),
        );
        if stale {
            crate::theme::working(ui);
        }
    });
    ui.label(format!(
        "{} {} of warp {} in CTA {} on SM {}{}",
        if r.write { "store" } else { "load" },
        r.inst_name,
        r.warp,
        r.cta,
        r.sm,
        r.time.map_or(String::new(), |t| format!(", cycle {t}"))
    ));
    ui.label(
        RichText::new(format!(
            "Its warp instruction: {} accesses into {} lines",
            s.accesses.len(),
            s.lines.len()
        ))
        .weak(),
    );
    egui::Grid::new("coalescing").striped(true).show(ui, |ui| {
        ui.label(RichText::new("line").weak());
        ui.label(RichText::new("threads").weak());
        ui.end_row();
        for g in s.lines.iter().take(32) {
            let this = g.line_address / d.line_bytes.max(1) == r.line;
            let text = format!("0x{:x}", g.line_address);
            if this {
                ui.label(RichText::new(format!("> {text}")).strong());
            } else {
                ui.label(text);
            }
            ui.label(ranges(&g.threads));
            ui.end_row();
        }
    });
    ui.add_space(6.0);
    ui.label(RichText::new(format!("Issued before it on SM {}", r.sm)).weak());
    ui.horizontal_wrapped(|ui| {
        for u in &s.recent {
            let c = if u.hit {
                theme::outcome(Outcome::Hit)
            } else {
                theme::outcome(Outcome::Miss)
            };
            ui.label(
                RichText::new(format!("w{}·{}", u.warp, u.inst_name))
                    .color(c)
                    .monospace(),
            )
            .on_hover_text(format!(
                "request {}: warp {} of CTA {}, {}",
                u.request,
                u.warp,
                u.cta,
                if u.hit { "hit" } else { "miss" }
            ));
        }
        ui.label(
            RichText::new(format!("> w{}·{}", r.warp, r.inst_name))
                .strong()
                .monospace(),
        );
    });
}

/// The request's set after it: each way's line, sectors, dirty sectors and policy state, what
/// its fill evicted, the MSHRs in use.
fn set_column(ui: &mut Ui, d: &SimData, s: &Snapshot, outcome: Outcome) {
    let n_sectors = d.config.cache.line_bytes / d.config.cache.sector_bytes.max(1);
    ui.label(
        RichText::new(format!(
            "Set {} ({} ways)",
            s.set,
            d.config.cache.ways_effective()
        ))
        .strong(),
    );
    egui::Grid::new("ways").striped(true).show(ui, |ui| {
        for h in ["way", "line", "sectors", "dirty", &s.policy_meaning] {
            ui.label(RichText::new(h).weak());
        }
        ui.end_row();
        for (w, way) in s.ways.iter().enumerate().take(64) {
            let colour = way.current.then(|| theme::outcome(outcome));
            let cell = |ui: &mut Ui, t: String| match colour {
                Some(c) => ui.label(RichText::new(t).color(c).strong()),
                None => ui.label(t),
            };
            cell(ui, w.to_string());
            cell(
                ui,
                way.line_address
                    .map_or_else(|| "empty".into(), |a| format!("0x{a:x}")),
            );
            cell(ui, sectors(way.valid_sectors, n_sectors));
            cell(ui, sectors(way.dirty_sectors, n_sectors));
            cell(ui, way.policy.to_string());
            ui.end_row();
        }
    });
    if s.ways.len() > 64 {
        ui.label(RichText::new(format!("and {} more ways", s.ways.len() - 64)).weak());
    }
    if let Some(v) = s.evicted {
        ui.label(
            RichText::new(format!("Its fill evicted line 0x{v:x}"))
                .color(Color32::from_rgb(230, 80, 80)),
        );
    }
    if let Some((held, total)) = s.mshrs {
        ui.label(format!(
            "MSHRs held: {held}{}",
            total.map_or(" (unlimited)".into(), |t| format!(" of {t}"))
        ));
        for (line, at) in s.in_flight.iter().take(16) {
            ui.label(RichText::new(format!("0x{line:x} arrives at cycle {at}")).weak());
        }
    }
}

/// The requests around the cursor: those issued so far by outcome, the rest grey, the cursor
/// a vertical line.
fn scatter(ui: &mut Ui, d: &SimData, cursor: usize, cx: &PaneCx) {
    let p = &d.points;
    let (lo, hi) = (cursor.saturating_sub(400), (cursor + 400).min(p.len()));
    let mut groups: Vec<(Color32, Vec<[f64; 2]>)> = Vec::new();
    for i in lo..hi {
        let c = if i <= cursor {
            theme::outcome(p.outcome(i))
        } else {
            Color32::from_gray(90)
        };
        let pt = [d.x(i), d.y[i]];
        match groups.iter_mut().find(|g| g.0 == c) {
            Some(g) => g.1.push(pt),
            None => groups.push((c, vec![pt])),
        }
    }
    let (cx_, cy) = (d.x(cursor), d.y[cursor]);
    let strong = ui.visuals().strong_text_color();
    // What the colours say, as in the address view, and the requests still to come.
    ui.horizontal_wrapped(|ui| {
        let (entries, _) = colour_legend(d, crate::raster::ColourBy::Outcome);
        for (colour, text) in entries {
            theme::swatch(ui, colour, &text);
        }
        theme::swatch(ui, Color32::from_gray(90), "not issued yet");
        theme::swatch(ui, strong, "this request");
    });
    let plot = Plot::new(("step-scatter", cx.pane))
        .height(ui.available_height().max(120.0))
        .x_axis_label(d.x_label());
    address_axis(plot, &d.segments)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .label_formatter(|_| None)
        .show(ui, |pui| {
            for (c, pts) in groups {
                pui.points(
                    Points::new("", PlotPoints::from(pts))
                        .color(c)
                        .radius(2.0)
                        .allow_hover(false),
                );
            }
            pui.vline(VLine::new("now", cx_).color(strong));
            pui.points(
                Points::new("this request", vec![[cx_, cy]])
                    .shape(MarkerShape::Circle)
                    .filled(false)
                    .radius(7.0)
                    .color(strong)
                    .allow_hover(false),
            );
        });
}
