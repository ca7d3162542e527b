//! The kernel-language editor: a window where the user writes a kernel, or starts from one of
//! the built-in kernels written in the language (`docs/kernel-language.md`). The source is
//! checked as it is typed and run a moment after typing stops (debounced); its trace becomes
//! the one every pane without its own shows, and they re-simulate. Errors point at line and
//! column, and the last good trace stays on screen until the source is good again.

use std::sync::Arc;

use egui::{RichText, Ui};

use super::data::TraceData;
use super::job::{take_finished, Job, JobError};
use super::worker::{Loaded, Source};
use super::WarpscopeApp;

/// Seconds after the last keystroke before the source runs.
pub const EDIT_DEBOUNCE: f64 = 0.4;

/// The editor's state.
#[derive(Default)]
pub struct Editor {
    pub open: bool,
    pub text: String,
    /// `key=value` values for the program's params.
    pub params: String,
    /// When the text or the params last changed (the UI clock).
    changed_at: Option<f64>,
    /// The (text, params) last run.
    ran: Option<(String, String)>,
    /// The (text, params) of the last frame: a change (typed or set) restarts the debounce.
    seen: (String, String),
    /// The program being run.
    pub job: Option<Job<Loaded>>,
    /// What is wrong with the source (from the check or the run).
    pub error: Option<String>,
    /// What the last good run gave.
    pub good: Option<String>,
    /// What the editor says of where its params came from (the generator's settings it could
    /// not carry over).
    pub note: Option<String>,
}

impl Editor {
    /// Opens the editor on `text` (an example, say), to run at once.
    pub fn open_with(&mut self, text: &str) {
        self.open_on(text, String::new(), None);
    }

    /// Opens the editor on `text` with `params` (`key=value` words) and a `note` about them,
    /// to run at once.
    fn open_on(&mut self, text: &str, params: String, note: Option<String>) {
        self.open = true;
        self.text = text.to_string();
        self.params = params;
        self.note = note;
        self.changed_at = Some(f64::NEG_INFINITY);
    }

    /// Opens the editor on the program that writes the built-in kernel `generator`, with its
    /// settings `params` (the generator's `key=value` words) carried over, so that the first
    /// run gives the trace the generator gave; a kernel without a program opens an example.
    pub fn open_on_generator(&mut self, generator: &str, params: &str) {
        let Some(src) = warpscope_core::gen::source::example(generator) else {
            let note = format!("{generator} is not written in the language: an example instead");
            let matmul = warpscope_core::gen::source::example("matmul").unwrap_or_default();
            return self.open_on(matmul, String::new(), Some(note));
        };
        let words: Vec<String> = params.split_whitespace().map(str::to_string).collect();
        let pairs = warpscope_core::gen::parse_pairs(&words).unwrap_or_default();
        let (carried, dropped) = warpscope_core::gen::source::carry_pairs(src, &pairs);
        let text: Vec<String> = carried.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let note = (!dropped.is_empty()).then(|| {
            format!(
                "Not carried over from the generator (no such param here): {}",
                dropped.join(", ")
            )
        });
        self.open_on(src, text.join(" "), note);
    }
}

/// The editor's run's trace, labelled with the kernel's name and the run's params.
fn labelled(t: Arc<TraceData>, params: &str) -> Arc<TraceData> {
    let name = t
        .trace
        .kernels
        .first()
        .map_or("kernel", |k| k.name.as_str());
    let mut label = format!("{name} (kernel source)");
    for w in params.split_whitespace() {
        label.push(' ');
        label.push_str(w);
    }
    match Arc::try_unwrap(t) {
        Ok(mut data) => {
            data.label = label;
            Arc::new(data)
        }
        // Not expected (the job held the only other handle, and it has finished): the
        // trace keeps the load's label.
        Err(shared) => shared,
    }
}

impl WarpscopeApp {
    /// The editor window, when open; starts a run once typing has stopped.
    pub(super) fn editor_window(&mut self, ctx: &egui::Context, now: f64) {
        if let Some(r) = take_finished(&mut self.editor.job) {
            let params = self
                .editor
                .ran
                .as_ref()
                .map(|r| r.1.clone())
                .unwrap_or_default();
            let r = match r {
                Ok(Loaded::Trace(t)) => Ok(labelled(t, &params)),
                Ok(Loaded::TooLarge { projected }) => Err(JobError::Failed(format!(
                    "about {projected} accesses would not fit in memory"
                ))),
                Ok(Loaded::Truncated { error }) => Err(JobError::Failed(error)),
                Err(e) => Err(e),
            };
            match r {
                Ok(t) => {
                    self.editor.error = None;
                    self.editor.good = Some(format!(
                        "{} kernel(s), {} accesses",
                        t.trace.kernels.len(),
                        t.accesses
                    ));
                    // The panes keep their results on screen, marked stale, until the new
                    // ones come.
                    self.trace = Some(t);
                    self.only = None;
                    self.invalidate_all(now);
                }
                Err(JobError::Failed(e)) => {
                    self.editor.error = Some(e);
                    // The same source runs again (and says so again) once it comes back.
                    self.editor.ran = None;
                }
                Err(JobError::Cancelled) => {}
            }
        }
        if !self.editor.open {
            return;
        }
        let mut open = true;
        // On the right, over the views rather than the configuration panel.
        let right = ctx.content_rect().right();
        egui::Window::new("Kernel source")
            .open(&mut open)
            .default_pos([(right - 660.0).max(320.0), 70.0])
            .default_size([620.0, 560.0])
            .show(ctx, |ui| self.editor_ui(ui, now));
        self.editor.open = open;
        let e = &mut self.editor;
        if e.seen.0 != e.text || e.seen.1 != e.params {
            e.seen = (e.text.clone(), e.params.clone());
            if e.changed_at.is_none_or(|t| t.is_finite()) {
                e.changed_at = Some(now);
            }
        }
        let due = e.changed_at.is_some_and(|t| now - t >= EDIT_DEBOUNCE);
        if due {
            e.changed_at = None;
            let want = (e.text.clone(), e.params.clone());
            // The syntax first, at once; the run (and its errors) on a worker.
            match warpscope_core::gen::source::check(&e.text, "kernel") {
                Err(err) => e.error = Some(err.to_string()),
                // Good again: the error goes at once, not when the run ends (nor stays
                // when the source is the one last run, whose trace is on screen).
                Ok(()) => {
                    e.error = None;
                    if e.ran.as_ref() != Some(&want) {
                        e.ran = Some(want.clone());
                        let (text, params) = want;
                        let words: Vec<String> =
                            params.split_whitespace().map(str::to_string).collect();
                        match warpscope_core::gen::parse_pairs(&words) {
                            Err(err) => e.error = Some(err),
                            Ok(params) => {
                                let source = Source::Program {
                                    text,
                                    file: "kernel".into(),
                                    params,
                                    max_accesses: self.max_generated_accesses,
                                };
                                let label = "Running the kernel source".to_string();
                                e.job = Some(super::remote::load_job(label, &self.wake, source));
                            }
                        }
                    }
                }
            }
        }
        if self.editor.changed_at.is_some() || self.editor.job.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
    }

    fn editor_ui(&mut self, ui: &mut Ui, now: f64) {
        let e = &mut self.editor;
        ui.horizontal(|ui| {
            let l = ui.label("Start from");
            egui::ComboBox::from_id_salt("examples")
                .selected_text("a built-in kernel…")
                .show_ui(ui, |ui| {
                    for (name, text) in warpscope_core::gen::source::examples() {
                        if ui.selectable_label(false, name).clicked() {
                            e.text = text.to_string();
                            e.params.clear();
                            e.note = None;
                            e.changed_at = Some(f64::NEG_INFINITY);
                        }
                    }
                })
                .response
                .labelled_by(l.id);
            let l = ui.label("Params");
            if ui
                .add(egui::TextEdit::singleline(&mut e.params).hint_text("n=128 ..."))
                .labelled_by(l.id)
                .on_hover_text("key=value for the program's params, separated by spaces")
                .changed()
            {
                e.changed_at = Some(now);
            }
        });
        if let Some(note) = &e.note {
            ui.label(RichText::new(note).weak());
        }
        match (&e.error, &e.job, &e.good) {
            (Some(err), _, _) => {
                ui.label(
                    RichText::new(err)
                        .color(ui.visuals().error_fg_color)
                        .monospace(),
                );
                if e.good.is_some() {
                    ui.label(RichText::new("The last good trace stays on screen.").weak());
                }
            }
            (None, Some(_), _) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label("running…");
                });
            }
            (None, None, Some(good)) => {
                ui.label(RichText::new(format!("OK: {good}")).weak());
            }
            (None, None, None) => {
                ui.label(RichText::new("Type a kernel, or start from a built-in one.").weak());
            }
        }
        egui::ScrollArea::vertical()
            .id_salt("source")
            .show(ui, |ui| {
                let l = ui.label(RichText::new("Source").weak());
                // An id of its own: the error banner above it must not move its focus away.
                let edit = egui::TextEdit::multiline(&mut e.text)
                    .id_salt("kernel-source")
                    .code_editor()
                    .desired_rows(28)
                    .desired_width(f32::INFINITY);
                if ui.add(edit).labelled_by(l.id).changed() {
                    e.changed_at = Some(now);
                }
            });
    }
}
