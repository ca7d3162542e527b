//! The window's frame around the views: the menu bar, the status bar with the running jobs,
//! keyboard shortcuts, dropped files, and the question before a trace too large to generate.

use std::path::PathBuf;

use egui::{Key, KeyboardShortcut, Modifiers, RichText, Ui};

use super::files::Purpose;
use super::views::View;

use super::*;

/// Width of a running job's progress bar in the status bar, in points.
const PROGRESS_WIDTH: f32 = 160.0;

impl WarpscopeApp {
    /// Asks whether to generate a trace that will not fit in memory anyway.
    pub(super) fn too_large_question(&mut self, ui: &mut Ui) {
        let Some(q) = self.too_large.clone() else {
            return;
        };
        let gib = (q.projected * BYTES_PER_ACCESS) as f64 / (1u64 << 30) as f64;
        let free = self
            .max_generated_accesses
            .map(|m| (m * 2 * BYTES_PER_ACCESS) as f64 / (1u64 << 30) as f64);
        let modal = egui::Modal::new(egui::Id::unique("too-large")).show(ui.ctx(), |ui| {
            ui.heading("This trace will not fit in memory");
            ui.label(format!(
                "{} {} would hold about {} accesses, about {gib:.1} GiB in the app{}.",
                q.kernel,
                q.params,
                q.projected,
                free.map(|f| format!(", with {f:.1} GiB free"))
                    .unwrap_or_default()
            ));
            ui.label(
                "Nothing was generated; the current trace stays. Smaller parameters will fit.",
            );
            ui.horizontal(|ui| {
                let anyway = ui.button("Generate anyway").clicked();
                let keep = ui.button("Keep the current trace").clicked();
                (anyway, keep)
            })
            .inner
        });
        let (anyway, keep) = modal.inner;
        if anyway {
            self.too_large = None;
            self.actions.push(Action::GenerateAnyway(q));
        } else if keep || modal.should_close() {
            self.too_large = None;
        }
    }

    pub(super) fn shortcuts(&mut self, ctx: &egui::Context) {
        let cmd = |k| KeyboardShortcut::new(Modifiers::COMMAND, k);
        ctx.input_mut(|i| {
            if i.consume_shortcut(&cmd(Key::O)) {
                self.actions.push(Action::Choose(Purpose::OpenTrace));
            }
            if i.consume_shortcut(&cmd(Key::S)) {
                self.actions.push(Action::Choose(Purpose::SaveConfig));
            }
            if i.consume_shortcut(&cmd(Key::E)) {
                self.actions.push(Action::Choose(Purpose::ExportReport));
            }
            for (k, v) in [
                Key::Num1,
                Key::Num2,
                Key::Num3,
                Key::Num4,
                Key::Num5,
                Key::Num6,
                Key::Num7,
                Key::Num8,
            ]
            .into_iter()
            .zip(View::ALL)
            {
                if i.consume_shortcut(&cmd(k)) {
                    self.settings.view = v;
                }
            }
        });
    }

    pub(super) fn handle_drops(&mut self, ctx: &egui::Context) {
        // A page's dropped file has its name for a path and its bytes still to read.
        #[cfg(target_arch = "wasm32")]
        if let Some(f) = ctx.input(|i| i.raw.dropped_files.first().cloned()) {
            self.dialog = Some(files::NativeDialog::dropped(f));
            return;
        }
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if let Some(p) = dropped.into_iter().next() {
            self.actions.push(Action::Open(p));
        }
    }

    pub(super) fn menu(&mut self, ui: &mut Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| self.file_menu(ui));
            ui.menu_button("View", |ui| self.view_menu(ui));
            ui.menu_button("Panes", |ui| self.panes_menu(ui));
            ui.menu_button("Lessons", |ui| {
                for (name, _) in warpscope_core::lesson::LESSONS {
                    let title =
                        warpscope_core::lesson::lesson(name).map_or_else(|e| e, |l| l.title);
                    if ui.button(title).clicked() {
                        self.actions.push(Action::Lesson(name.to_string()));
                    }
                }
            });
        });
    }

    /// Open, load and save, export, quit.
    fn file_menu(&mut self, ui: &mut Ui) {
        self.choose_button(ui, "Open trace…", Some("Ctrl+O"), Purpose::OpenTrace);
        // A page has no paths to open again, and no window to quit.
        let desktop = !cfg!(target_arch = "wasm32");
        if desktop {
            ui.menu_button("Open recent", |ui| {
                if self.settings.recent.is_empty() {
                    ui.label(RichText::new("No recent files").weak());
                }
                for p in self.settings.recent.clone() {
                    if ui.button(p.display().to_string()).clicked() {
                        self.actions.push(Action::Open(p));
                    }
                }
            });
        }
        self.choose_button(ui, "Open sweep result…", None, Purpose::OpenSweep);
        ui.separator();
        self.choose_button(ui, "Load configuration…", None, Purpose::LoadConfig);
        self.choose_button(
            ui,
            "Save configuration…",
            Some("Ctrl+S"),
            Purpose::SaveConfig,
        );
        ui.separator();
        self.choose_button(ui, "Export report…", Some("Ctrl+E"), Purpose::ExportReport);
        self.choose_button(ui, "Export request table…", None, Purpose::ExportRequests);
        self.choose_button(ui, "Export view as PNG…", None, Purpose::ExportView);
        if desktop {
            ui.separator();
            if ui.button("Quit").clicked() {
                ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
            }
        }
    }

    /// A menu entry that asks for a file for `purpose`; greyed out, with the reason on hover,
    /// where this build cannot do it ([`Purpose::unavailable`]).
    fn choose_button(&mut self, ui: &mut Ui, text: &str, shortcut: Option<&str>, purpose: Purpose) {
        let mut button = egui::Button::new(text);
        if let Some(s) = shortcut {
            button = button.shortcut_text(s);
        }
        let why = purpose.unavailable();
        let r = ui.add_enabled(why.is_none(), button);
        let r = match why {
            Some(why) => r.on_disabled_hover_text(why),
            None => r,
        };
        if r.clicked() {
            self.actions.push(Action::Choose(purpose));
        }
    }

    /// The view (with its shortcut), the side panel, the theme.
    fn view_menu(&mut self, ui: &mut Ui) {
        for (i, v) in View::ALL.into_iter().enumerate() {
            if ui
                .add(egui::Button::new(v.name()).shortcut_text(format!("Ctrl+{}", i + 1)))
                .clicked()
            {
                self.settings.view = v;
            }
        }
        ui.separator();
        ui.checkbox(
            &mut self.settings.side_panel,
            "Side panel (trace and configuration)",
        );
        ui.checkbox(&mut self.settings.dark, "Dark theme");
    }

    /// Panes side by side, and a sweep of the active one.
    fn panes_menu(&mut self, ui: &mut Ui) {
        if ui
            .add_enabled(
                self.panes.len() < MAX_PANES,
                egui::Button::new("Add a pane"),
            )
            .on_hover_text("Compare another configuration side by side (up to 4)")
            .clicked()
        {
            self.actions.push(Action::AddPane);
        }
        if ui
            .add_enabled(
                self.panes.len() > 1,
                egui::Button::new("Remove the active pane"),
            )
            .clicked()
        {
            self.actions.push(Action::RemovePane(self.settings.active));
        }
        ui.separator();
        if ui
            .button("Sweep the active pane…")
            .on_hover_text(
                "Run a grid of configurations (as warpscope sweep --vary) on the active \
                 pane's trace and configuration, and see it as a heatmap",
            )
            .clicked()
        {
            self.sweep.open = true;
        }
    }

    pub(super) fn status_bar(&mut self, ui: &mut Ui) {
        let mut cancel = Vec::new();
        ui.horizontal(|ui| {
            for (label, p) in self.running() {
                if p.watched() {
                    ui.spinner();
                }
                ui.label(label);
                // The bar and its stand-in take the same room, so the Cancel button after them
                // stays put when the total becomes known (a click aimed at it still lands).
                let size = egui::vec2(PROGRESS_WIDTH, ui.spacing().interact_size.y);
                match p.fraction() {
                    Some(f) => {
                        ui.add_sized(size, egui::ProgressBar::new(f).show_percentage());
                    }
                    None => {
                        ui.add_sized(size, egui::Label::new(RichText::new("working…").weak()));
                    }
                }
                if ui.button("Cancel").clicked() {
                    cancel.push(p.clone());
                }
                ui.separator();
            }
            if let Some(path) = self.failed_file.clone() {
                if ui
                    .button("Keep its complete kernels")
                    .on_hover_text(
                        "Load the kernels read completely before the error, as the CLI's \
                         --allow-truncated does; the app marks the trace as truncated",
                    )
                    .clicked()
                {
                    self.actions.push(Action::OpenTruncated(path));
                }
            }
            // One line, cut at the window's edge (the whole on hover), so a long message
            // never widens the window's panels.
            match &self.status {
                Status::Info(s) => ui.add(egui::Label::new(s.as_str()).truncate()),
                Status::Error(s) => ui.add(
                    egui::Label::new(
                        RichText::new(format!("Error: {s}")).color(ui.visuals().error_fg_color),
                    )
                    .truncate(),
                ),
            };
        });
        self.actions.extend(cancel.into_iter().map(Action::Cancel));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Job;
    use egui_kittest::kittest::Queryable;
    use egui_kittest::Harness;

    /// A job's Cancel button stays where it was when its progress becomes known: a click
    /// aimed at it on one frame lands on it on the next (it used to shift right by the
    /// progress bar's width, and a click aimed at "working…" hit the bar).
    #[test]
    fn a_jobs_cancel_button_does_not_move_when_its_progress_becomes_known() {
        let app = WarpscopeApp::new(
            Settings::default(),
            Startup {
                file: None,
                fresh: true,
                generator: Some(("vecadd".into(), "n=256".into())),
                window: None,
                sweep: None,
                stream: false,
                shot_streamed: None,
                jobs: 0,
            },
            Arc::new(|| {}),
        );
        let mut h = Harness::builder()
            .with_size([1400.0, 900.0])
            .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), app);
        let start = std::time::Instant::now();
        while !(h.state().idle() && h.state().panes.iter().all(|p| p.result.is_some())) {
            assert!(start.elapsed().as_secs() < 60, "the app did not settle");
            h.step();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (job, _done) = Job::<String>::pending("Exporting x.png", &h.state().wake.clone());
        let progress = job.progress().clone();
        h.state_mut().tasks.push(job);
        h.run_steps(2);
        let unknown = h.get_by_label("Cancel").rect();
        progress.report(1, 4);
        h.run_steps(2);
        let known = h.get_by_label("Cancel").rect();
        assert_eq!(unknown, known);
        h.get_by_label("Cancel").click();
        h.run_steps(2);
        assert!(progress.cancelled(), "the click reached the button");
    }
}
