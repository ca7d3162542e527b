//! The L2 section of the configuration panel: on or off, its slices (channels and slices per
//! channel), how an address picks its slice, and each slice's cache.

use super::*;
use warpscope_core::config::{L2Config, SliceHash};

pub(super) fn l2(ui: &mut Ui, c: &mut SimConfig) {
    let mut on = c.l2.is_some();
    row(
        ui,
        "Shared L2",
        "An L2 behind every SM's L1, in slices (memory sub-partitions) as Accel-Sim configures real GPUs; the presets other than gtx470-* have theirs",
        |ui| ui.checkbox(&mut on, ""),
    );
    if on != c.l2.is_some() {
        c.l2 = on.then(L2Config::default);
    }
    if c.l2.is_some() && c.gpu.simulate != SmSelection::All {
        ui.horizontal_wrapped(|ui| {
            ui.label(
                egui::RichText::new("Simulated only when every SM is (it sees all their misses).")
                    .weak(),
            );
            if ui
                .small_button("Simulate every SM")
                .on_hover_text("GPU > Simulate: all SMs")
                .clicked()
            {
                c.gpu.simulate = SmSelection::All;
            }
        });
    }
    let Some(l2) = &mut c.l2 else {
        return;
    };
    slices(ui, l2);
    let s = &mut l2.slice;
    let mut kib = s.size_bytes / 1024;
    row(ui, "Slice (KiB)", "Each slice's capacity in KiB", |ui| {
        let r = ui.add(DragValue::new(&mut kib).range(1..=16384));
        if r.changed() {
            s.size_bytes = kib.max(1) * 1024;
        }
        r
    });
    row(ui, "Ways", "Ways per set of a slice", |ui| {
        ui.add(DragValue::new(&mut s.ways).range(1..=256))
    });
    row(
        ui,
        "Set index",
        "Which set of its slice a line goes to (computed on the address with the slice's bits taken out)",
        |ui| pick_choice(ui, "l2-set-index", &mut s.set_index),
    );
    row(
        ui,
        "Replacement",
        "Which line of a full set is evicted",
        |ui| pick_choice(ui, "l2-replacement", &mut s.replacement),
    );
    ui.label(
        egui::RichText::new(format!(
            "{} in {} slices of {} sets x {} ways",
            crate::views::bytes_text(l2.size_bytes()),
            l2.slices(),
            l2.slice.sets(),
            l2.slice.ways_effective()
        ))
        .weak(),
    );
    if let Err(e) = l2.validate() {
        ui.colored_label(ui.visuals().warn_fg_color, format!("Invalid: {e}"));
    }
}

/// The channels, the slices per channel and the slice hash.
fn slices(ui: &mut Ui, l2: &mut L2Config) {
    row(
        ui,
        "Channels",
        "Memory channels (GPGPU-Sim's -gpgpu_n_mem)",
        |ui| ui.add(DragValue::new(&mut l2.channels).range(1..=1024)),
    );
    row(
        ui,
        "Slices/channel",
        "L2 slices (memory sub-partitions) per channel, a power of two",
        |ui| {
            pick(
                ui,
                "l2-per-channel",
                &mut l2.slices_per_channel,
                &[
                    (1, "1", "one slice per channel"),
                    (2, "2", "two (Volta, Hopper)"),
                    (4, "4", "four (A100)"),
                    (8, "8", "eight"),
                ],
            )
        },
    );
    let mut hash = l2.slice_hash;
    row(
        ui,
        "Slice hash",
        "How the address bits above the channel bits choose the slice",
        |ui| pick_choice(ui, "l2-slice-hash", &mut hash),
    );
    if hash != l2.slice_hash {
        l2.slice_hash = hash;
        if hash == SliceHash::Xor && !l2.channels.is_power_of_two() {
            l2.channels = l2.channels.next_power_of_two();
        }
    }
}
