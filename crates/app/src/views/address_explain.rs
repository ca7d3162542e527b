//! "Why did this request miss?" in the address view: the job that explains a clicked request
//! (the core's `explain` on the pane's trace and configuration), the panel that tells its
//! story with links to the previous use, the evicting request and the fetch in flight, and
//! their marks in the scatter.

use std::sync::Arc;

use egui::{Color32, RichText, Ui};
use egui_plot::{Arrows, MarkerShape, PlotBounds, PlotPoint, PlotUi, Points, Text};

use crate::data::{SimData, TraceData};
use crate::job::{Finished, JobError, Progress};
use crate::theme;
use warpscope_core::config::SimConfig;
use warpscope_core::explain::{self, ExplainError, Explaining, Explanation, Why};

/// An explanation and what it explains.
pub struct Explained {
    /// The result generation the request number is of.
    pub generation: u64,
    pub request: usize,
    pub explanation: Explanation,
}

/// The explanation the address view shows or waits for.
pub struct Asked {
    pub generation: u64,
    pub request: usize,
    /// The trace the request is of, by identity ([`crate::pane_trace::trace_id`]); `None`
    /// until the view's next frame. A request of another trace means nothing: it is dropped.
    pub trace: Option<usize>,
    /// `None` while the job runs; `Err` with the reason when it failed.
    pub answer: Option<Result<Explanation, String>>,
}

/// The job's pieces: request `request` of `trace` simulated under `config`, explained
/// ([`crate::sliced::Slices::job`]; the runs a piece at a time where `pieces`).
pub fn explain(
    trace: Arc<TraceData>,
    config: SimConfig,
    generation: u64,
    request: usize,
    pieces: bool,
) -> impl FnMut(&Progress) -> Option<Finished<Explained>> + Send + 'static {
    let failed = move |e: ExplainError| match e {
        ExplainError::Cancelled => JobError::Cancelled,
        e => JobError::Failed(format!("explaining request {request}: {e}")),
    };
    let mut explaining = None;
    move |progress| {
        let e = match &mut explaining {
            Some(e) => e,
            None => match Explaining::new(&config, request as u64, pieces) {
                Ok(e) => explaining.insert(e),
                Err(e) => return Some(Err(failed(e))),
            },
        };
        match e.step(&trace.trace.kernels, &mut |d, t| progress.report(d, t)) {
            Ok(None) => None,
            Ok(Some(explanation)) => Some(Ok(Explained {
                generation,
                request,
                explanation,
            })),
            Err(e) => Some(Err(failed(e))),
        }
    }
}

/// What the panel asks for.
pub enum PanelAction {
    Close,
    /// Explain another request (a link was followed).
    Explain(usize),
}

/// The colour of a class.
pub fn why_colour(w: Why) -> Color32 {
    use crate::data::Outcome;
    theme::outcome(match w {
        Why::Hit => Outcome::Hit,
        Why::Compulsory => Outcome::Compulsory,
        Why::Capacity => Outcome::Capacity,
        Why::Conflict => Outcome::Conflict,
        Why::Latency | Why::Mshr | Why::Bypassed => Outcome::Miss,
    })
}

/// Colours of the marks: the request, its previous use, the request that evicted its line,
/// the fetch it waited for.
pub const PREVIOUS: Color32 = Color32::from_rgb(90, 200, 120);
pub const EVICTOR: Color32 = Color32::from_rgb(230, 80, 80);
pub const FETCH: Color32 = Color32::from_rgb(240, 170, 60);

/// The explanation panel above the plot.
pub fn panel(ui: &mut Ui, asked: &Asked) -> Option<PanelAction> {
    let mut action = None;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            let title = match &asked.answer {
                None => format!("Request {}: explaining…", asked.request),
                Some(Err(_)) => format!("Request {}: no explanation", asked.request),
                Some(Ok(e)) => format!("Request {}: {}", asked.request, e.why.name()),
            };
            let colour = match &asked.answer {
                Some(Ok(e)) => why_colour(e.why),
                _ => ui.visuals().text_color(),
            };
            ui.label(RichText::new(title).strong().color(colour));
            if asked.answer.is_none() {
                crate::theme::working(ui);
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .small_button("Close")
                    .on_hover_text("Close the explanation (Esc)")
                    .clicked()
                {
                    action = Some(PanelAction::Close);
                }
            });
        });
        match &asked.answer {
            None => {}
            Some(Err(why)) => {
                ui.label(RichText::new(why).color(ui.visuals().error_fg_color));
            }
            Some(Ok(e)) => {
                if let Some(a) = story(ui, e) {
                    action = Some(a);
                }
            }
        }
    });
    action
}

fn story(ui: &mut Ui, e: &Explanation) -> Option<PanelAction> {
    let mut action = None;
    egui::ScrollArea::vertical()
        .max_height(190.0)
        .id_salt("explanation")
        .show(ui, |ui| {
            for p in &e.story {
                ui.label(p);
            }
        });
    ui.horizontal_wrapped(|ui| {
        let mut link = |ui: &mut Ui, colour: Color32, what: &str, u: &explain::Use| {
            theme::swatch(ui, colour, what);
            if ui
                .link(format!("request {}", u.request))
                .on_hover_text(format!(
                    "Explain request {} ({}, warp {} of CTA {})",
                    u.request, u.inst_name, u.warp, u.cta
                ))
                .clicked()
            {
                action = Some(PanelAction::Explain(u.request as usize));
            }
        };
        if let Some(p) = &e.previous {
            link(ui, PREVIOUS, "previous use", p);
        }
        if let Some(ev) = &e.eviction {
            link(ui, EVICTOR, "evicted by", &ev.by);
        }
        if let Some(f) = &e.flight {
            link(ui, FETCH, "fetched by", &f.fetched_by);
        }
        let coalesced = e.asked.accesses.iter().filter(|a| a.in_line).count();
        if !e.asked.accesses.is_empty() {
            ui.label(
                RichText::new(format!(
                    "· {coalesced} of {} accesses in this line",
                    e.asked.accesses.len()
                ))
                .weak(),
            );
        }
    });
    if let Some(ev) = e.eviction.as_ref().filter(|ev| !ev.residents.is_empty()) {
        ui.collapsing(
            format!(
                "Set {} just before request {}",
                e.request.set, ev.by.request
            ),
            |ui| {
                egui::Grid::new("residents").striped(true).show(ui, |ui| {
                    for h in ["line", "filled by", "last use", "uses"] {
                        ui.label(RichText::new(h).weak());
                    }
                    ui.end_row();
                    for r in &ev.residents {
                        let text = format!("{:#x}", r.line * e.cache.line_bytes as u64);
                        if r.line == e.request.line {
                            ui.label(RichText::new(text).strong());
                        } else {
                            ui.label(text);
                        }
                        ui.label(r.filled_by.to_string());
                        ui.label(r.last_use.to_string());
                        ui.label(r.uses.to_string());
                        ui.end_row();
                    }
                });
            },
        );
    }
    action
}

/// The part of the plot the story happens in: from the earliest request it names to the
/// latest, and the lines they use, with a margin (`None` if none of them is drawn).
pub fn story_bounds(data: &SimData, e: &Explanation, height: f64) -> Option<PlotBounds> {
    let mut named = vec![e.request.request];
    named.extend(e.previous.as_ref().map(|p| p.request));
    named.extend(e.eviction.as_ref().map(|v| v.by.request));
    named.extend(e.flight.as_ref().map(|f| f.fetched_by.request));
    let at: Vec<(f64, f64)> = named
        .into_iter()
        .map(|r| r as usize)
        .filter(|&i| i < data.points.len())
        .map(|i| (data.x(i), data.y[i]))
        .collect();
    let (x0, x1) = at
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = at
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if at.is_empty() {
        return None;
    }
    let pad_x = ((x1 - x0) * 0.4).max(20.0);
    let pad_y = ((y1 - y0) * 0.4).max(height * 0.02);
    Some(PlotBounds::from_min_max(
        [x0 - pad_x, y0 - pad_y],
        [x1 + pad_x, y1 + pad_y],
    ))
}

/// Rings around the explained request and the requests its story names, and an arrow from its
/// line's previous use to it (requests beyond those the view keeps are not drawn).
pub fn marks(pui: &mut PlotUi, data: &SimData, e: &Explanation, own: Color32) {
    let at = |r: u64| {
        let i = r as usize;
        (i < data.points.len()).then(|| PlotPoint::new(data.x(i), data.y[i]))
    };
    let ring = |pui: &mut PlotUi, r: u64, colour: Color32, label: &str, anchor: egui::Align2| {
        if let Some(p) = at(r) {
            pui.points(
                Points::new(label, vec![[p.x, p.y]])
                    .shape(MarkerShape::Circle)
                    .filled(false)
                    .radius(7.0)
                    .color(colour)
                    .allow_hover(false),
            );
            pui.text(
                Text::new(
                    label,
                    p,
                    RichText::new(format!("  {label}  ")).color(colour),
                )
                .anchor(anchor)
                .allow_hover(false),
            );
        }
    };
    ring(
        pui,
        e.request.request,
        own,
        "this request",
        egui::Align2::LEFT_BOTTOM,
    );
    if let Some(p) = &e.previous {
        ring(
            pui,
            p.request,
            PREVIOUS,
            "previous use",
            egui::Align2::RIGHT_TOP,
        );
        if let (Some(from), Some(to)) = (at(p.request), at(e.request.request)) {
            pui.arrows(
                Arrows::new("reuse", vec![[from.x, from.y]], vec![[to.x, to.y]])
                    .tip_length(10.0)
                    .color(PREVIOUS)
                    .allow_hover(false),
            );
        }
    }
    if let Some(ev) = &e.eviction {
        ring(
            pui,
            ev.by.request,
            EVICTOR,
            "evicted by",
            egui::Align2::LEFT_TOP,
        );
    }
    if let Some(f) = &e.flight {
        ring(
            pui,
            f.fetched_by.request,
            FETCH,
            "fetched by",
            egui::Align2::RIGHT_BOTTOM,
        );
    }
}
