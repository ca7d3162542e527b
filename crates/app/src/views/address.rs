//! Address vs time: every request as a marker, or a density raster when there are more than
//! pixels; hover, linked hover across panes, box selection, the request tooltip.

use egui::{Color32, RichText, Ui};
use egui_plot::{Plot, PlotImage, PlotPoint, PlotPoints, Points};

use super::address_explain::{self, Asked, Explained, PanelAction};
use super::address_hover::{request_tooltip, selection_panel};
use super::address_streamed::{detail_buttons, drawn_note};
use super::command::{Command, LinkKey, PaneCx, PaneView, Polled};
use super::*;
use crate::data::{InstFilter, Selecting, Selection, SimData};
use crate::job::{take_finished, Job, JobError};
use crate::raster::{Band, Placement, Raster, RasterRequest, View as RasterView};
use crate::sliced::{Slices, PIECES};
use crate::theme;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Address,
    name: "Address vs time",
    file_stem: "address",
    needs_trace_in_memory: false,
    new: || Box::new(AddressView::default()),
};

/// Above this many requests in view, the address plot draws a raster instead of markers.
pub const MARKER_LIMIT: usize = 50_000;

/// The markers of the requests from `x[0]` to `x[1]` (of instruction `only`, if given), one
/// group per colour, in the order they are drawn: coloured by outcome, hits first, so that
/// misses are drawn over them (a few misses among many hits stay visible).
pub fn marker_groups(
    data: &SimData,
    x: [f64; 2],
    colour: ColourBy,
    only: Option<(u16, u32)>,
) -> Vec<(Color32, Vec<[f64; 2]>)> {
    let mut groups: Vec<(Color32, Vec<[f64; 2]>)> = Vec::new();
    for i in data.visible(x[0], x[1]) {
        if !data.points.of_inst(i, only) {
            continue;
        }
        let c = colour.colour(data, i);
        let pt = [data.x(i), data.y[i]];
        match groups.iter_mut().find(|g| g.0 == c) {
            Some(g) => g.1.push(pt),
            None => groups.push((c, vec![pt])),
        }
    }
    if colour == ColourBy::Outcome {
        let hit = theme::outcome(Outcome::Hit);
        groups.sort_by_key(|g| g.0 != hit);
    }
    groups
}

/// The legend of the density image's mixed pixels (`raster::miss_share_colour`).
pub const MIXED_PIXELS: &str =
    "a pixel of hits and misses: mixed, nearer the miss colour the more misses";

/// A raster on the GPU: the view it covers and the result it was drawn from.
pub struct Drawn {
    pub view: RasterView,
    pub texture: egui::TextureHandle,
    /// The result's generation.
    pub generation: u64,
    pub placement: Placement,
}

/// The address view of one pane, with what it keeps between frames.
#[derive(Default)]
pub struct AddressView {
    pub texture: Option<Drawn>,
    /// The view and data generation last asked for.
    requested: Option<(RasterView, u64)>,
    /// A raster that arrived from its job, to upload as a texture.
    arrived: Option<Raster>,
    /// The generation of the result whose raster the plot showed in the last frame (that of
    /// an earlier preview of the same run while the newest one's is drawn).
    shown_raster: Option<u64>,
    /// Requests and axis extents of the data last shown: when they change, the view resets
    /// to the new data's extent.
    extent: Option<(usize, u64, u64)>,
    /// The corners of a box selection being dragged (Shift + drag), in plot units.
    select_from: Option<(PlotPoint, PlotPoint)>,
    /// The box selected (x and y ranges in plot units).
    boxed: Option<([f64; 2], [f64; 2])>,
    /// The summary of the box and the result generation it is of.
    pub selection: Option<(Selection, u64)>,
    /// The summary last asked for: box and generation.
    select_asked: Option<([f64; 2], [f64; 2], u64)>,
    /// The last linked lookup and the request found here.
    linked: Option<(LinkKey, Option<usize>)>,
    /// The lookup last asked for.
    link_asked: Option<LinkKey>,
    /// The request clicked to be explained, and its explanation once it has come.
    pub explaining: Option<Asked>,
    /// The explanation the view last zoomed to (result generation, request).
    zoomed_to: Option<(u64, usize)>,
    /// The x range shown in the last frame.
    shown_x: Option<(f64, f64)>,
    /// The jobs this view started.
    jobs: AddressJobs,
}

/// The address view's jobs (a newer one replaces, and so stops, an older one).
#[derive(Default)]
struct AddressJobs {
    /// Drawing the raster.
    raster: Option<Job<Raster>>,
    /// Summarizing the box selection: the summary and the result generation it is of.
    select: Option<Job<(Selection, u64)>>,
    /// Finding the request linked to one hovered in another pane.
    link: Option<Job<(LinkKey, Option<usize>)>>,
    /// Explaining a request.
    explain: Option<Job<Explained>>,
}

impl AddressView {
    /// The x range (requests or cycles) the plot showed in the last frame.
    #[cfg(test)]
    pub fn shown_x(&self) -> Option<(f64, f64)> {
        self.shown_x
    }

    /// A raster drawn by the job this view asked for, while the pane shows `data`, its result
    /// `generation` of run `run`. Kept if it is of that result, or of an earlier one of the same
    /// run newer than the raster shown (it stands in until the newest result's is drawn).
    fn raster_arrived(&mut self, r: Raster, generation: u64, run: u64, data: Option<&SimData>) {
        let current = r.generation == generation;
        let newer = self
            .texture
            .as_ref()
            .is_none_or(|t| t.generation < r.generation);
        let fits = data.is_some_and(|d| r.placement.fits(run, d));
        if current || (newer && fits) {
            self.arrived = Some(r);
        }
    }
    /// The generation of the result whose raster the plot showed in the last frame.
    #[cfg(test)]
    pub fn shown_raster(&self) -> Option<u64> {
        self.shown_raster
    }
    /// The summary of a box this view asked for (dropped if the box has changed since).
    fn selection_arrived(&mut self, s: Selection, generation: u64) {
        if self.boxed == Some((s.x, s.y)) {
            self.selection = Some((s, generation));
        }
    }
    /// The last linked lookup (source pane, source generation, source request, this pane's
    /// generation) and the request it found here.
    #[cfg(test)]
    pub fn linked(&self) -> Option<(LinkKey, Option<usize>)> {
        self.linked
    }
    /// The result of a linked lookup this view asked for.
    fn link_arrived(&mut self, key: LinkKey, found: Option<usize>) {
        self.linked = Some((key, found));
    }
    /// Asks for request `request` to be explained (as clicking it does); the view starts the
    /// job in its next frame.
    pub fn explain(&mut self, request: usize) {
        self.explaining = Some(Asked {
            generation: u64::MAX,
            request,
            trace: None,
            answer: None,
        });
    }
    /// An explanation this view asked for (dropped if another request was asked for since).
    fn explained(&mut self, e: Explained) {
        if let Some(a) = &mut self.explaining {
            if (a.generation, a.request) == (e.generation, e.request) {
                a.answer = Some(Ok(e.explanation));
            }
        }
    }
    /// The explanation job failed.
    fn explain_failed(&mut self, why: String) {
        if let Some(a) = &mut self.explaining {
            a.answer = Some(Err(why));
        }
    }
    /// A raster has arrived and waits for the next frame to be shown.
    pub fn uploading(&self) -> bool {
        self.arrived.is_some()
    }
    /// Selects a box (x and y ranges in plot units), as Shift + drag does.
    pub fn select_box(&mut self, x: [f64; 2], y: [f64; 2]) {
        self.clear_selection();
        self.boxed = Some((x, y));
    }
    /// The box selected, if any.
    pub fn boxed(&self) -> Option<([f64; 2], [f64; 2])> {
        self.boxed
    }
    /// Forgets the box and its summary.
    pub fn clear_selection(&mut self) {
        self.boxed = None;
        self.selection = None;
        self.select_asked = None;
    }
}

/// The request of `dst` that serves the same access as request `i` of `src`: the same
/// kernel, CTA, warp and instruction, the line holding the same bytes, and the same
/// occurrence among such requests (a warp issues its instructions in program order whatever
/// the scheduling policy, so the k-th is the same dynamic access). With another line size
/// the line holding the request's first byte is used. `None` if `dst` has no such request.
/// The app looks it up a part at a time ([`Linking`]); the tests whole.
#[cfg(test)]
pub fn linked_request(src: &SimData, i: usize, dst: &SimData) -> Option<usize> {
    let mut linking = Linking::new(i);
    loop {
        if let Some(found) = linking.step(src, dst, usize::MAX) {
            return found;
        }
    }
}

/// Requests a piece of a job looks at (the linked request's scans, a box's summary): a few
/// milliseconds in a page.
const PART: usize = 1 << 16;

/// The request of another pane that serves the same access (`linked_request`) being looked
/// up, a part of the requests at a time: the occurrences of the access among the source's
/// requests before it, then the destination's requests.
pub struct Linking {
    i: usize,
    /// Counting the occurrences before request `i` of the source (else searching the
    /// destination), and the next request to look at.
    counting: bool,
    at: usize,
    k: usize,
    seen: usize,
    found: Option<usize>,
}

impl Linking {
    pub fn new(i: usize) -> Self {
        Linking {
            i,
            counting: true,
            at: 0,
            k: 0,
            seen: 0,
            found: None,
        }
    }

    /// Looks at the next `n` requests (the same `src` and `dst` each time); the answer once
    /// it is known.
    pub fn step(&mut self, src: &SimData, dst: &SimData, n: usize) -> Option<Option<usize>> {
        let (p, q, i) = (&src.points, &dst.points, self.i);
        if i >= p.len() {
            return Some(None);
        }
        let same = |pts: &crate::data::Points, j: usize| {
            pts.kernel[j] == p.kernel[i]
                && pts.cta[j] == p.cta[i]
                && pts.warp[j] == p.warp[i]
                && pts.inst[j] == p.inst[i]
        };
        let byte = p.line[i] * src.line_bytes;
        let dst_line = byte / dst.line_bytes.max(1);
        if self.counting {
            // Occurrence of this (instruction, line) among the source's requests before it.
            let src_line_of = |j: usize| p.line[j] * src.line_bytes / dst.line_bytes.max(1);
            let end = self.at.saturating_add(n).min(i);
            self.k += (self.at..end)
                .filter(|&j| same(p, j) && src_line_of(j) == dst_line)
                .count();
            self.at = end;
            if end == i {
                (self.counting, self.at) = (false, 0);
            }
            return None;
        }
        let end = self.at.saturating_add(n).min(q.len());
        for j in self.at..end {
            if same(q, j) && q.line[j] == dst_line {
                self.found = Some(j);
                if self.seen == self.k {
                    return Some(self.found);
                }
                self.seen += 1;
            }
        }
        self.at = end;
        (end == q.len()).then_some(self.found)
    }
}

impl PaneView for AddressView {
    /// Address vs time (Crawford 2014 figs 8.1, 8.5, 8.10).
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let mut out = Vec::new();
        // Upload a finished raster.
        if let Some(r) = self.arrived.take() {
            let texture = ui.ctx().load_texture(
                format!("raster-{}", cx.pane),
                r.image,
                egui::TextureOptions::NEAREST,
            );
            self.texture = Some(Drawn {
                view: r.view,
                texture,
                generation: r.generation,
                placement: r.placement,
            });
        }
        self.shown_raster = None;
        if cx.data.points.is_empty() {
            empty(ui, "No requests reached the simulated L1.\nTry another SM, or \"all SMs\" in the GPU settings.");
            return out;
        }
        self.draw(ui, cx, &mut out);
        out
    }

    fn poll(&mut self, pane: &Polled) -> Option<String> {
        // A summary of an older result is of no use, a raster only of an earlier preview of
        // the same run (a failed raster keeps the markers).
        if let Some(Ok(r)) = take_finished(&mut self.jobs.raster) {
            self.raster_arrived(r, pane.generation, pane.run, pane.data);
        }
        if let Some(Ok((s, generation))) = take_finished(&mut self.jobs.select) {
            if pane.generation == generation {
                self.selection_arrived(s, generation);
            }
        }
        if let Some(Ok((key, found))) = take_finished(&mut self.jobs.link) {
            self.link_arrived(key, found);
        }
        match take_finished(&mut self.jobs.explain) {
            Some(Ok(e)) if e.generation == pane.generation => self.explained(e),
            Some(Err(JobError::Failed(why))) => self.explain_failed(why),
            _ => {}
        }
        None
    }

    fn busy(&self) -> bool {
        let j = &self.jobs;
        j.raster.is_some() || j.select.is_some() || j.link.is_some() || j.explain.is_some()
    }
}

impl AddressView {
    fn draw(&mut self, ui: &mut Ui, cx: &PaneCx, out: &mut Vec<Command>) {
        self.header(ui, cx, out);
        if ui.input(|i| i.key_pressed(egui::Key::Escape)) {
            if self.boxed.is_some() {
                self.clear_selection();
            } else {
                self.explaining = None;
            }
        }
        self.explanation(ui, cx);
        self.selection_summary(ui, cx);
        let shift = ui.input(|i| i.modifiers.shift);
        let resp = self.plot(ui, cx, shift);
        array_labels(
            ui,
            &resp.transform,
            resp.response.rect,
            &cx.data.segments,
            ui.visuals().text_color(),
        );
        let b = resp.transform.bounds();
        self.shown_x = Some((b.min()[0], b.max()[0]));
        if let Some(want) = resp.inner {
            self.ask_raster(ui, cx, want);
        }
        self.drag_box(ui, &resp.response, &resp.transform, shift);
        self.hover(ui, cx, &resp.response, &resp.transform, shift, out);
    }

    /// The counts and the legend above the plot, a streamed run's detail buttons, the
    /// instruction the view is limited to.
    fn header(&mut self, ui: &mut Ui, cx: &PaneCx, out: &mut Vec<Command>) {
        let (pane, data) = (cx.pane, cx.data);
        let n = data.points.len();
        let legend_note = drawn_note(data, n);
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("{n} requests{legend_note}")).weak());
            let (entries, note) = colour_legend(data, cx.colour);
            for (colour, text) in entries {
                theme::swatch(ui, colour, &text);
            }
            // The density image mixes a pixel's hits and misses: say how.
            let dense = match self.shown_x {
                Some((a, b)) => data.visible(a, b).len() > MARKER_LIMIT,
                None => n > MARKER_LIMIT,
            };
            if dense && cx.colour == ColourBy::Outcome && data.config.timing.is_none() {
                theme::blend_swatch(ui, MIXED_PIXELS);
            }
            if let Some(note) = note {
                ui.label(RichText::new(note).weak());
            }
        });
        if data.streamed {
            let (stride, total) = (data.x.stride(), data.report.totals.requests);
            ui.horizontal(|ui| detail_buttons(ui, self.shown_x, data, stride, total, pane, out));
        }
        if let Some(f) = &cx.only {
            ui.horizontal(|ui| {
                ui.label(
                    RichText::new(format!(
                        "Only instruction {} (chosen in Miss categories)",
                        f.name
                    ))
                    .color(ui.visuals().warn_fg_color),
                );
                if ui.small_button("Show all").clicked() {
                    out.push(Command::Only { pane, filter: None });
                }
            });
        }
    }

    /// The explanation of the request clicked, asked for again for each new result (a changed
    /// configuration), and its panel.
    fn explanation(&mut self, ui: &mut Ui, cx: &PaneCx) {
        let (pane, generation) = (cx.pane, cx.generation);
        let trace = crate::pane_trace::trace_id(cx.trace);
        if let Some(a) = &mut self.explaining {
            if *a.trace.get_or_insert(trace) != trace {
                // The pane shows another trace now (a file opened, a lesson's kernel).
                self.explaining = None;
                self.jobs.explain = None;
            }
        }
        if let Some(a) = &mut self.explaining {
            if a.generation != generation {
                a.generation = generation;
                a.answer = None;
                let (request, trace) = (a.request, cx.trace.clone());
                let config = cx.data.config.clone();
                let pieces = address_explain::explain(trace, config, generation, request, PIECES);
                self.jobs.explain = Some(Slices::job(
                    format!("Explaining request {request} of pane {}", pane + 1),
                    cx.wake,
                    pieces,
                ));
            }
        }
        if let Some(a) = &self.explaining {
            match address_explain::panel(ui, a) {
                Some(PanelAction::Close) => self.explaining = None,
                Some(PanelAction::Explain(i)) => self.explain(i),
                None => {}
            }
        }
    }

    /// The summary of the box selected, made off the UI thread again for each new result, and
    /// its panel.
    fn selection_summary(&mut self, ui: &mut Ui, cx: &PaneCx) {
        let generation = cx.generation;
        if let Some((x, y)) = self.boxed {
            let current = self.selection.as_ref().is_some_and(|s| s.1 == generation);
            if !current && self.select_asked != Some((x, y, generation)) {
                self.select_asked = Some((x, y, generation));
                let data = cx.data.clone();
                let mut selecting = Some(Selecting::new(x, y));
                self.jobs.select = Some(Slices::job(
                    format!("Summarizing the selection of pane {}", cx.pane + 1),
                    cx.wake,
                    move |_: &crate::job::Progress| {
                        if selecting.as_mut()?.add(&data, PART) {
                            return None;
                        }
                        Some(Ok((selecting.take()?.finish(), generation)))
                    },
                ));
            }
        }
        if let Some((sel, _)) = &self.selection {
            if selection_panel(ui, cx.trace, sel) {
                self.clear_selection();
            }
        }
    }

    /// The plot: markers, or the raster of the requests in view (its wanted view returned when
    /// there are more than [`MARKER_LIMIT`]), the box selected and the explanation's marks.
    fn plot(
        &mut self,
        ui: &mut Ui,
        cx: &PaneCx,
        shift: bool,
    ) -> egui_plot::PlotResponse<Option<RasterView>> {
        let (data, generation) = (cx.data, cx.generation);
        let segs = &data.segments;
        let plot = self.plot_frame(cx, shift);
        let texture = self.raster_bands(cx);
        let sel_stroke = ui.visuals().selection.bg_fill;
        let sel_fill = sel_stroke.gamma_multiply(0.15);
        let explained = self
            .explaining
            .as_ref()
            .filter(|a| a.generation == generation)
            .and_then(|a| a.answer.as_ref())
            .and_then(|a| a.as_ref().ok());
        let strong = ui.visuals().strong_text_color();
        // A new explanation brings its story into view once; the user may zoom away after.
        let zoom = explained
            .filter(|e| self.zoomed_to != Some((generation, e.request.request as usize)))
            .map(|e| {
                self.zoomed_to = Some((generation, e.request.request as usize));
                address_explain::story_bounds(data, e, segs.height())
            });
        let only_key = cx.only.as_ref().map(InstFilter::key);
        let boxed = self.boxed;
        let mut shown_raster = None;
        let resp = plot.show(ui, |pui| {
            if let Some(Some(b)) = zoom {
                pui.set_plot_bounds(b);
            }
            wheel_zooms(pui);
            let b = pui.plot_bounds();
            let (x0, x1) = (b.min()[0], b.max()[0]);
            let visible = data.visible(x0, x1).len();
            // Segment separators (each array's label is painted over the plot below).
            for (lo, y) in segs.separators() {
                pui.hline(
                    egui_plot::HLine::new(hex(lo), y)
                        .color(Color32::from_gray(110))
                        .style(egui_plot::LineStyle::dashed_loose()),
                );
            }
            if let Some((x, y)) = boxed {
                selection_box(pui, x, y, sel_stroke, sel_fill);
            }
            let drawn = if visible <= MARKER_LIMIT {
                let radius = if visible < 2000 { 2.5 } else { 1.5 };
                for (c, pts) in marker_groups(data, [x0, x1], cx.colour, only_key) {
                    pui.points(
                        Points::new("", PlotPoints::from(pts))
                            .color(c)
                            .radius(radius)
                            .allow_hover(false),
                    );
                }
                None
            } else {
                let want = raster_view(pui, data, cx.colour, only_key);
                if let Some((tex, g, bands)) = &texture {
                    for &Band { uv, centre, size } in bands {
                        pui.image(
                            PlotImage::new(
                                "density",
                                *tex,
                                PlotPoint::new(centre[0], centre[1]),
                                egui::vec2(size[0] as f32, size[1] as f32),
                            )
                            .uv(uv),
                        );
                    }
                    shown_raster = Some(*g);
                }
                Some(want)
            };
            if let Some(e) = explained {
                address_explain::marks(pui, data, e, strong);
            }
            drawn
        });
        // None before drawing (`ui`): the raster shown in this frame, if any.
        self.shown_raster = shown_raster;
        resp
    }

    /// The plot's axes and behaviour, reset to the whole result when its extent changed.
    fn plot_frame(&mut self, cx: &PaneCx, shift: bool) -> Plot<'static> {
        let data = cx.data;
        let segs = &data.segments;
        let plot = address_axis(Plot::new(("address", cx.pane)), segs)
            .allow_drag(!shift && self.select_from.is_none())
            .link_axis(cx.link, [true, true])
            .link_cursor(cx.link, [true, true])
            .x_axis_label(data.x_label())
            .include_x(data.x_start())
            .include_x(data.x_end())
            .include_y(segs.separators().first().map_or(0.0, |s| s.1))
            .include_y(segs.height())
            .allow_boxed_zoom(true)
            // The wheel zooms (below), as docs/app.md says; dragging pans.
            .allow_scroll(false)
            .show_grid([true, false])
            .label_formatter(|_| None);
        let extent = (
            data.points.len(),
            data.x_end().to_bits(),
            segs.height().to_bits(),
        );
        if self.extent != Some(extent) {
            self.extent = Some(extent);
            plot.reset()
        } else {
            plot
        }
    }

    /// The raster to show and where: one of this result (drawn at another zoom meanwhile if
    /// need be), or one of an earlier preview of the same run moved to this result's axis (it
    /// shows requests this one holds too, with the same outcomes). One of another run would
    /// show its outcomes under this result's header.
    fn raster_bands(&self, cx: &PaneCx) -> Option<(egui::TextureId, u64, Vec<Band>)> {
        self.texture.as_ref().and_then(|d| {
            let bands = if d.generation == cx.generation {
                vec![Band::whole(&d.view)]
            } else if d.placement.fits(cx.run, cx.data) {
                d.placement.bands(&d.view, &cx.data.segments)
            } else {
                Vec::new()
            };
            (!bands.is_empty()).then(|| (d.texture.id(), d.generation, bands))
        })
    }

    /// Asks for a raster of `want` when the view changed and the newest request is not this
    /// one.
    fn ask_raster(&mut self, ui: &Ui, cx: &PaneCx, want: RasterView) {
        let (data, generation) = (cx.data, cx.generation);
        let current = self.texture.as_ref().map(|d| (d.view, d.generation));
        let fresh = current == Some((want, generation));
        if !fresh && self.requested != Some((want, generation)) {
            self.requested = Some((want, generation));
            let request = RasterRequest {
                generation,
                view: want,
                data: data.clone(),
                placement: Placement::of(cx.run, data),
            };
            self.jobs.raster = Some(Slices::job(
                format!("Drawing pane {}", cx.pane + 1),
                cx.wake,
                crate::raster::draw(request),
            ));
        }
        if !fresh {
            ui.ctx().request_repaint();
        }
    }

    /// Box selection: Shift + drag with the primary button.
    fn drag_box(&mut self, ui: &Ui, r: &egui::Response, t: &egui_plot::PlotTransform, shift: bool) {
        if r.drag_started_by(egui::PointerButton::Primary) && shift {
            self.select_from = r
                .interact_pointer_pos()
                .map(|p| (t.value_from_position(p), t.value_from_position(p)));
        }
        let Some((from, to)) = &mut self.select_from else {
            return;
        };
        if let Some(now) = r.interact_pointer_pos().or(r.hover_pos()) {
            *to = t.value_from_position(now);
        }
        let (a, b) = (t.position_from_point(from), t.position_from_point(to));
        ui.painter_at(r.rect).rect_stroke(
            egui::Rect::from_two_pos(a, b),
            0.0,
            egui::Stroke::new(1.0, ui.visuals().strong_text_color()),
            egui::StrokeKind::Inside,
        );
        if r.drag_stopped() || !ui.input(|i| i.pointer.primary_down()) {
            let x = [from.x.min(to.x), from.x.max(to.x)];
            let y = [from.y.min(to.y), from.y.max(to.y)];
            if (a - b).length() >= 3.0 {
                self.clear_selection();
                self.boxed = Some((x, y));
                ui.ctx().request_repaint();
            }
            self.select_from = None;
        }
    }

    /// Hover: the nearest request within a few pixels of the pointer (its tooltip; a click
    /// explains it), or else the request of this pane serving the access hovered in a linked
    /// pane.
    fn hover(
        &mut self,
        ui: &Ui,
        cx: &PaneCx,
        r: &egui::Response,
        t: &egui_plot::PlotTransform,
        shift: bool,
        out: &mut Vec<Command>,
    ) {
        let (pane, data, generation) = (cx.pane, cx.data, cx.generation);
        let only_key = cx.only.as_ref().map(InstFilter::key);
        let hovered = r
            .hover_pos()
            .filter(|p| self.select_from.is_none() && r.rect.contains(*p))
            .and_then(|pos| nearest(data, t, pos, only_key));
        if let Some(i) = hovered {
            // Explaining replays the trace up to the request: it needs the trace in memory.
            if r.clicked() && !shift && cx.trace.streamed.is_none() {
                self.explain(i);
                ui.ctx().request_repaint();
            }
            r.clone().on_hover_ui_at_pointer(|ui| {
                request_tooltip(ui, data, i);
            });
            out.push(Command::Hover {
                pane,
                generation,
                request: i,
            });
            return;
        }
        // The same access as the one hovered in another pane, looked up once per hover.
        let Some(h) = cx.linked_hover.as_ref().filter(|h| h.pane != pane) else {
            return;
        };
        let key = (h.pane, h.generation, h.request, generation);
        let i = match self.linked {
            Some((k, found)) if k == key => found,
            _ => {
                // Looked up off the UI thread (a scan of both results).
                if self.link_asked != Some(key) {
                    self.link_asked = Some(key);
                    let (src, request, dst) = (h.data.clone(), h.request, data.clone());
                    let mut linking = Linking::new(request);
                    self.jobs.link = Some(Slices::job(
                        "Finding the linked request",
                        cx.wake,
                        move |_: &crate::job::Progress| {
                            let found = linking.step(&src, &dst, PART)?;
                            Some(Ok((key, found)))
                        },
                    ));
                }
                None
            }
        };
        let at = i.map(|i| {
            (
                i,
                t.position_from_point(&PlotPoint::new(data.x(i), data.y[i])),
            )
        });
        if let Some((i, at)) = at.filter(|(_, at)| r.rect.contains(*at)) {
            ui.painter_at(r.rect).circle_stroke(
                at,
                5.0,
                egui::Stroke::new(1.5, ui.visuals().strong_text_color()),
            );
            egui::Tooltip::always_open(
                ui.ctx().clone(),
                ui.layer_id(),
                r.id.with("linked"),
                egui::PopupAnchor::Position(at + egui::vec2(12.0, 12.0)),
            )
            .show(|ui| request_tooltip(ui, data, i));
        }
    }
}

/// The raster that covers the part of the plot's view that holds data, at screen resolution
/// (covering more would also widen the plot's automatic bounds each frame).
fn raster_view(
    pui: &egui_plot::PlotUi<'_>,
    data: &SimData,
    colour: ColourBy,
    only: Option<(u16, u32)>,
) -> RasterView {
    let b = pui.plot_bounds();
    let (x0, x1) = (b.min()[0], b.max()[0]);
    let size = pui.response().rect.size();
    let (y0, y1) = (b.min()[1], b.max()[1]);
    let rx = [x0.max(data.x_start()), x1.min(data.x_end())];
    let ry = [y0.max(0.0), y1.min(data.segments.height())];
    let frac = |lo: f64, hi: f64, span: f64| ((hi - lo) / span.max(1e-9)).clamp(0.0, 1.0);
    RasterView {
        x: rx,
        y: ry,
        width: (size.x as f64 * frac(rx[0], rx[1], x1 - x0)).max(1.0) as usize,
        height: (size.y as f64 * frac(ry[0], ry[1], y1 - y0)).max(1.0) as usize,
        colour,
        only,
    }
}

/// The request drawn nearest to screen position `pos`, within 8 pixels.
fn nearest(
    data: &SimData,
    t: &egui_plot::PlotTransform,
    pos: egui::Pos2,
    only: Option<(u16, u32)>,
) -> Option<usize> {
    let at = t.value_from_position(pos);
    let px_per_x = t.dpos_dvalue_x().abs().max(1e-9);
    let reach = (8.0 / px_per_x).max(0.5);
    let near = data.visible(at.x - reach, at.x + reach);
    // Bound the scan so hovering a zoomed-out view of 10^7 requests stays cheap.
    let step = (near.len() / 200_000).max(1);
    let mut best: Option<(f32, usize)> = None;
    for i in near.step_by(step) {
        if !data.points.of_inst(i, only) {
            continue;
        }
        let sp = t.position_from_point(&PlotPoint::new(data.x(i), data.y[i]));
        let d = sp.distance(pos);
        if d < 8.0 && best.is_none_or(|b| d < b.0) {
            best = Some((d, i));
        }
    }
    best.map(|b| b.1)
}

/// The scroll wheel over the plot zooms around the pointer (up: in), on both axes; a
/// horizontal scroll zooms the time axis alone. Ctrl and the wheel zoom as egui_plot does.
fn wheel_zooms(pui: &mut egui_plot::PlotUi<'_>) {
    let scroll = pui.ctx().input(|i| i.smooth_scroll_delta);
    if scroll == egui::Vec2::ZERO || !pui.response().contains_pointer() {
        return;
    }
    let step = |d: f32| (d / 200.0).exp();
    let factor = if scroll.y != 0.0 {
        egui::Vec2::splat(step(scroll.y))
    } else {
        egui::vec2(step(scroll.x), 1.0)
    };
    pui.zoom_bounds_around_hovered(factor);
}

/// The box selected, from `x[0]` to `x[1]` and `y[0]` to `y[1]`.
fn selection_box(
    pui: &mut egui_plot::PlotUi,
    x: [f64; 2],
    y: [f64; 2],
    stroke: Color32,
    fill: Color32,
) {
    pui.polygon(
        egui_plot::Polygon::new(
            "selection",
            PlotPoints::from(vec![[x[0], y[0]], [x[1], y[0]], [x[1], y[1]], [x[0], y[1]]]),
        )
        .fill_color(fill)
        .stroke(egui::Stroke::new(1.5, stroke))
        .allow_hover(false),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Outcome;
    use crate::data::TraceData;

    #[test]
    fn misses_are_drawn_over_hits() {
        let params = [("n".to_string(), "16".to_string())];
        let t = warpscope_core::gen::generate("matmul", &params).unwrap();
        let trace = TraceData::new(t, "matmul".into(), None, None);
        let mut cfg = warpscope_core::config::preset("fermi-16k").unwrap();
        cfg.gpu.sms = 1;
        let progress = std::sync::Arc::new(crate::job::Progress::default());
        let data = crate::worker::simulate(cfg, &trace, &progress).unwrap();
        // The first request is a compulsory miss: drawn in the order met, misses would go
        // under the hits that follow.
        assert_ne!(data.points.outcome(0), Outcome::Hit);
        let x = [data.x_start(), data.x_end()];
        let groups = marker_groups(&data, x, ColourBy::Outcome, None);
        let hit = theme::outcome(Outcome::Hit);
        assert_eq!(groups[0].0, hit);
        assert!(groups.len() > 1 && groups[1..].iter().all(|g| g.0 != hit));
        let drawn: usize = groups.iter().map(|g| g.1.len()).sum();
        assert_eq!(drawn, data.points.len());
    }
}
