//! The side panel: the trace, the generator of built-in kernels, and the active pane's
//! configuration.

use egui::{RichText, Ui};

use super::files::Purpose;

use super::*;

impl WarpscopeApp {
    pub(super) fn side(&mut self, ui: &mut Ui) {
        self.trace_section(ui);
        egui::CollapsingHeader::new("Generate a kernel")
            .default_open(true)
            .show(ui, |ui| self.generator(ui));
        ui.separator();
        ui.heading("Configuration");
        if self.panes.len() > 1 {
            ui.horizontal(|ui| {
                for i in 0..self.panes.len() {
                    ui.selectable_value(&mut self.settings.active, i, format!("Pane {}", i + 1));
                }
            });
        }
        let a = self.settings.active;
        let (preset, cfg) = &self.settings.panes[a];
        if let Some(edit) = config_panel::show(ui, a, preset, cfg) {
            self.actions.push(Action::EditConfig(a, Box::new(edit)));
        }
    }

    /// The shared trace (or why there is none), the active pane's own, and the buttons that
    /// open one.
    fn trace_section(&mut self, ui: &mut Ui) {
        ui.heading("Trace");
        match &self.trace {
            Some(t) => {
                ui.label(RichText::new(&t.label).strong());
                if let Some(why) = &t.truncated {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!("Only the complete kernels before an error: {why}"),
                    );
                }
                ui.label(t.summary());
            }
            None => {
                ui.label(
                    RichText::new(
                        "No trace yet: open a file, drop one here, or generate a kernel.",
                    )
                    .weak(),
                );
            }
        }
        let a = self.settings.active;
        if let Some(t) = &self.panes[a].own_trace {
            ui.label(format!(
                "Pane {} shows its own trace: {} ({})",
                a + 1,
                t.label,
                t.summary()
            ));
            if ui
                .button(format!("Pane {}: use the shared trace", a + 1))
                .clicked()
            {
                self.actions.push(Action::ShareTrace(a));
            }
        }
        ui.horizontal(|ui| {
            if ui
                .button("Open…")
                .on_hover_text(
                    "Open a trace file (Ctrl+O); any supported format, compressed or not",
                )
                .clicked()
            {
                self.actions.push(Action::Choose(Purpose::OpenTrace));
            }
            let a = self.settings.active;
            if self.panes.len() > 1
                && ui
                    .button(format!("Open for pane {} only…", a + 1))
                    .on_hover_text(
                        "Open a trace that only the active pane shows, to compare another kernel \
                         side by side",
                    )
                    .clicked()
            {
                self.actions.push(Action::Choose(Purpose::OpenPaneTrace(a)));
            }
            if !self.settings.recent.is_empty() {
                ui.menu_button("Recent", |ui| {
                    for p in self.settings.recent.clone() {
                        if ui.button(p.display().to_string()).clicked() {
                            self.actions.push(Action::Open(p));
                        }
                    }
                });
            }
        });
    }

    /// The built-in kernels: which one, its parameters, and the buttons that generate it.
    fn generator(&mut self, ui: &mut Ui) {
        let l = ui.label("Kernel");
        egui::ComboBox::from_id_salt("generator")
            .selected_text(self.settings.generator.as_str())
            .show_ui(ui, |ui| {
                for k in warpscope_core::gen::BUILTINS {
                    if ui
                        .selectable_label(self.settings.generator == k.name, k.name)
                        .on_hover_text(k.description)
                        .clicked()
                    {
                        let was =
                            std::mem::replace(&mut self.settings.generator, k.name.to_string());
                        let now = &self.settings.generator_params;
                        self.settings.generator_params =
                            shared_params((&was, k.name), k.params, now);
                    }
                }
            })
            .response
            .labelled_by(l.id);
        if ui
            .button("Write your own kernel…")
            .on_hover_text(
                "Open the kernel-language editor on this kernel (or on an example): \
                         CUDA-like indexing, simulated as you type",
            )
            .clicked()
        {
            let s = &self.settings;
            self.editor
                .open_on_generator(&s.generator, &s.generator_params);
        }
        let desc = warpscope_core::gen::builtin(&self.settings.generator);
        if let Some(k) = desc {
            ui.label(RichText::new(k.description).weak());
        }
        let l = ui.label("Parameters");
        let field = ui
            .text_edit_singleline(&mut self.settings.generator_params)
            .labelled_by(l.id)
            .on_hover_text("key=value pairs separated by spaces; Enter generates");
        let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        ui.horizontal(|ui| {
            if ui
                .button("Generate")
                .on_hover_text("The trace every pane shares (panes with their own keep it)")
                .clicked()
                || entered
            {
                self.actions.push(Action::Generate);
            }
            let a = self.settings.active;
            if self.panes.len() > 1
                && ui
                    .button(format!("Generate for pane {} only", a + 1))
                    .on_hover_text(
                        "Only the active pane shows this kernel: compare different kernels \
                                 side by side (naive and tiled matmul, say)",
                    )
                    .clicked()
            {
                self.actions.push(Action::GenerateInPane(a));
            }
        });
    }
}

/// A kernel's default `key=value` settings with the values of `current` (the kernel chosen
/// before) for the keys both have, so that switching kernels keeps what they share (matmul
/// `n=128`, then matmul-tiled: `n=128 tile=16`, a fair comparison). Only between kernels of
/// one family (`matmul`, `matmul-tiled`; `histogram`, `histogram2`), where a key means the
/// same: vecadd's `n=4096` elements is not a 4096 x 4096 matmul.
fn shared_params((from, to): (&str, &str), defaults: &str, current: &str) -> String {
    let family = |k: &str| {
        let stem = k.split('-').next().unwrap_or(k);
        stem.trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string()
    };
    if family(from) != family(to) {
        return defaults.to_string();
    }
    let value = |key: &str| {
        current
            .split_whitespace()
            .find_map(|w| w.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
    };
    let words: Vec<String> = defaults
        .split_whitespace()
        .map(|w| match w.split_once('=') {
            Some((k, v)) => format!("{k}={}", value(k).unwrap_or(v)),
            None => w.to_string(),
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn switching_kernels_keeps_the_settings_they_share() {
        let p = super::shared_params;
        let m = ("matmul", "matmul-tiled");
        assert_eq!(p(m, "n=64 tile=16", "n=128 block=16,16"), "n=128 tile=16");
        let m = ("matmul-tiled", "matmul");
        assert_eq!(
            p(m, "n=64 block=16,16", "n=128 tile=8"),
            "n=128 block=16,16"
        );
        let m = ("matmul", "matmul");
        assert_eq!(
            p(m, "n=64 block=16,16", "n=128 block=16,16"),
            "n=128 block=16,16"
        );
        let t = ("matmul", "transpose");
        assert_eq!(p(t, "width=64 height=64", "n=128"), "width=64 height=64");
        // vecadd's n counts elements: a matmul of n=4096 would be 2^36 accesses.
        let v = ("vecadd", "matmul");
        assert_eq!(
            p(v, "n=64 block=16,16", "n=4096 block=256"),
            "n=64 block=16,16"
        );
        let h = ("histogram", "histogram2");
        assert_eq!(
            p(h, "n=65536 bins=64", "n=4096 bins=256"),
            "n=4096 bins=256"
        );
    }
}
