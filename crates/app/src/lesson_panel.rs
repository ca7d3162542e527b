//! A lesson in the app (the core's `lesson`): opened from the Lessons menu, it sets up one
//! pane per side of its comparison (each pane's settings, and its own trace from the lesson's
//! kernel and params) and shows its text in a panel beside the panes until closed.

use egui::{RichText, Ui};

use super::worker::Source;
use super::{Status, WarpscopeApp};

/// The narrowest window (points) that shows a lesson beside the side panel and two panes.
const LESSON_BESIDE_SIDE_PANEL: f32 = 1280.0;

impl WarpscopeApp {
    /// Opens lesson `name`: its panes, their settings and kernels, and its text.
    pub(crate) fn open_lesson(&mut self, name: &str, now: f64) {
        let l = match warpscope_core::lesson::lesson(name) {
            Ok(l) => l,
            Err(e) => {
                self.status = Status::Error(e);
                return;
            }
        };
        while self.panes.len() < l.panes.len() {
            let before = self.panes.len();
            self.add_pane(now);
            if self.panes.len() == before {
                break;
            }
        }
        while self.panes.len() > l.panes.len() {
            self.remove_pane(self.panes.len() - 1);
        }
        for (i, p) in l.panes.iter().enumerate().take(self.panes.len()) {
            self.set_config(i, &p.preset, p.config.clone(), now);
            let words: Vec<String> = p.params.split_whitespace().map(String::from).collect();
            let params = warpscope_core::gen::parse_pairs(&words).unwrap_or_default();
            let source = Source::Program {
                text: p.source.to_string(),
                file: p.source_name.clone(),
                params,
                max_accesses: self.max_generated_accesses,
            };
            self.start_pane_job(i, format!("Lesson: {} (pane {})", p.label, i + 1), source);
            // The previous lesson's pictures go at once: the new text must not sit beside
            // them while the new kernels are generated and simulated.
            let pane = &mut self.panes[i];
            pane.result = None;
            pane.sim = None;
            pane.stale = false;
        }
        self.settings.active = 0;
        self.lesson = Some(l);
        // In a small window the lesson's column takes the side panel's room, so the panes
        // keep theirs; the tab row's "Settings" button brings the panel back.
        if self.window_width < LESSON_BESIDE_SIDE_PANEL {
            self.settings.side_panel = false;
            self.status = Status::Info(
                "The side panel is hidden to make room for the lesson: \"Show settings\" (or View > \
                 Side panel) shows it"
                    .into(),
            );
        }
    }

    /// The open lesson's text, beside the panes.
    pub(super) fn lesson_panel(&mut self, ui: &mut Ui) {
        let Some(l) = &self.lesson else {
            return;
        };
        let mut close = false;
        egui::Panel::right("lesson")
            .resizable(true)
            .default_size(340.0)
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.label(RichText::new("Lesson").weak());
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        close = ui.small_button("Close lesson").clicked();
                    });
                });
                ui.heading(&l.title);
                egui::ScrollArea::vertical().show(ui, |ui| {
                    for para in l.text.split("\n\n") {
                        ui.label(para.trim());
                        ui.add_space(4.0);
                    }
                    ui.separator();
                    for (i, p) in l.panes.iter().enumerate() {
                        ui.label(RichText::new(format!("Pane {}: {}", i + 1, p.label)).strong());
                        ui.label(
                            RichText::new(format!(
                                "kernels/{} {} · {}",
                                p.source_name, p.params, p.preset
                            ))
                            .weak(),
                        );
                    }
                    ui.add_space(6.0);
                    if ui
                        .button("Edit this kernel…")
                        .on_hover_text(
                            "Open the lesson's first kernel in the kernel-language editor",
                        )
                        .clicked()
                    {
                        self.editor.open_with(l.panes[0].source);
                    }
                });
            });
        if close {
            self.lesson = None;
        }
    }
}
