//! The configuration panel: a preset picker and every parameter of the core, each with a
//! one-line tooltip. Edits change the pane's configuration; the app re-runs it.

use egui::{ComboBox, DragValue, Ui};
use warpscope_core::config::choice::{self, Choice};

use warpscope_core::config::{
    self, Arrivals, CacheConfig, Classes, Coalescing, CtaLaunch, EffectOrder, FinishedWarps,
    HitRule, IssuePolicy, IssueUnit, Kernels, Merging, MshrCheck, Replacement, SetIndex, SimConfig,
    SmSelection, Stores, TimingConfig, TimingRules, WarpReturn,
};

mod cache;
mod issue;
mod l2;
mod timing;

use cache::cache;
use issue::{coalescing, gpu, schedule};
use l2::l2;
use timing::timing;

/// A pane's configuration as the panel's editors left it.
pub struct Edit {
    /// The preset's name, with " (edited)" while the configuration differs from it.
    pub preset: String,
    pub config: SimConfig,
    /// The configuration changed (not only the preset's name): the pane must re-run.
    pub changed: bool,
}

/// Draws the editors of the configuration `current` (started from preset `preset`); returns
/// the edit when the user changed something, for the app to apply after drawing.
pub fn show(ui: &mut Ui, id: usize, preset: &str, current: &SimConfig) -> Option<Edit> {
    let mut name = preset.to_string();
    let mut c = current.clone();
    edit(ui, id, &mut name, &mut c);
    let changed = c != *current;
    (changed || name != preset).then_some(Edit {
        preset: name,
        config: c,
        changed,
    })
}

/// The editors, changing a copy of the configuration and its preset's name.
fn edit(ui: &mut Ui, id: usize, preset: &mut String, c: &mut SimConfig) {
    let before = c.clone();
    ui.push_id(id, |ui| {
        ui.horizontal(|ui| {
            let l = ui.label("Preset");
            ComboBox::from_id_salt("preset")
                .selected_text(preset.as_str())
                .show_ui(ui, |ui| {
                    for p in config::PRESETS {
                        if ui
                            .selectable_label(preset == p.name, p.name)
                            .on_hover_text(p.description)
                            .clicked()
                        {
                            if let Ok(cfg) = config::preset(p.name) {
                                *c = cfg;
                                *preset = p.name.to_string();
                            }
                        }
                    }
                })
                .response
                .labelled_by(l.id)
                .on_hover_text(
                    "Start from a real GPU's L1; every parameter below can then be changed",
                );
        });
        egui::CollapsingHeader::new("Cache")
            .default_open(true)
            .show(ui, |ui| cache(ui, c));
        egui::CollapsingHeader::new("Coalescing")
            .default_open(true)
            .show(ui, |ui| coalescing(ui, c));
        egui::CollapsingHeader::new("Scheduling")
            .default_open(true)
            .show(ui, |ui| schedule(ui, c));
        egui::CollapsingHeader::new("GPU")
            .default_open(false)
            .show(ui, |ui| gpu(ui, c));
        egui::CollapsingHeader::new("L2 cache")
            .default_open(false)
            .show(ui, |ui| l2(ui, c));
        // A fresh header state when timing is switched on, so that it opens.
        egui::CollapsingHeader::new("Timing model")
            .id_salt(("timing", c.timing.is_some()))
            .default_open(c.timing.is_some())
            .show(ui, |ui| timing(ui, c));
        ui.horizontal(|ui| {
            let l = ui.label("Seed");
            ui.add(DragValue::new(&mut c.seed))
                .labelled_by(l.id)
                .on_hover_text(
                    "Seed of every random choice (random scheduling and replacement, SM sampling)",
                );
        });
        row(
            ui,
            "Reuse distances",
            "How reuse distances and the miss-rate curve are measured (off is faster; miss \
             classes are exact in every mode)",
            |ui| pick_choice(ui, "reuse", &mut c.reuse),
        );
    });
    // "(edited)" while the configuration differs from its preset, gone again when every
    // change is reverted.
    let base = preset.trim_end_matches(" (edited)").to_string();
    if *c != before && !base.is_empty() {
        *preset = if preset_differs(&base, c) {
            format!("{base} (edited)")
        } else {
            base
        };
    }
}

fn preset_differs(preset: &str, c: &SimConfig) -> bool {
    let base = preset.trim_end_matches(" (edited)");
    config::preset(base).map(|p| p != *c).unwrap_or(true)
}

fn row(ui: &mut Ui, label: &str, tip: &str, add: impl FnOnce(&mut Ui) -> egui::Response) {
    ui.horizontal(|ui| {
        let l = ui.label(label);
        add(ui).labelled_by(l.id).on_hover_text(tip);
    });
}

/// A menu of every option of a configuration choice, from its registry (`config::choice`):
/// the entries' labels, their descriptions on hover; an option with parameters takes its
/// default when picked.
fn pick_choice<T: Choice>(ui: &mut Ui, salt: &str, value: &mut T) -> egui::Response {
    let current = choice::entry_of(value).map_or("?", |e| e.label);
    let mut picked = None;
    let response = ComboBox::from_id_salt(salt)
        .selected_text(current)
        .show_ui(ui, |ui| {
            for e in T::ENTRIES {
                let on = e.is(value);
                let r = ui
                    .selectable_label(on, e.label)
                    .on_hover_text(e.description);
                if r.clicked() && !on {
                    picked = Some(e.value());
                }
            }
        })
        .response;
    if let Some(v) = picked {
        *value = v;
    }
    response
}

fn pick<T: PartialEq + Copy>(
    ui: &mut Ui,
    salt: &str,
    value: &mut T,
    options: &[(T, &str, &str)],
) -> egui::Response {
    let current = options
        .iter()
        .find(|o| o.0 == *value)
        .map(|o| o.1)
        .unwrap_or("?");
    ComboBox::from_id_salt(salt)
        .selected_text(current)
        .show_ui(ui, |ui| {
            for (v, name, tip) in options {
                ui.selectable_value(value, *v, *name).on_hover_text(*tip);
            }
        })
        .response
}
