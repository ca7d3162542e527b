//! The timing-model section of the configuration panel: latencies, MSHRs and the model's rules.

use super::*;

pub(super) fn timing(ui: &mut Ui, c: &mut SimConfig) {
    let mut on = c.timing.is_some();
    if ui
        .checkbox(&mut on, "Timing model (Nugteren et al. 2014)")
        .on_hover_text(
            "Latencies, MSHRs and a warp queue; adds latency and MSHR miss classes (needs LRU)",
        )
        .changed()
    {
        c.timing = on.then(TimingConfig::default);
        if on {
            c.cache.replacement = Replacement::Lru;
        }
    }
    if c.timing.is_some() {
        presets(ui, c);
    }
    let Some(t) = &mut c.timing else {
        return;
    };
    numbers(ui, t);
    ui.checkbox(&mut t.clip, "Clip to in-flight lines")
        .on_hover_text(
            "A request for a line already in flight takes effect when that line arrives",
        );
    ui.checkbox(&mut t.warp_delay, "Warps wait for their data")
        .on_hover_text("A warp re-enters the queue only when its requests' latency has passed");
    ui.checkbox(&mut t.classify, "Classify misses")
        .on_hover_text("Also run the comparison models that split misses into five classes");
    egui::CollapsingHeader::new("Rules: ours or the released model's")
        .id_salt(("rules", t.rules != TimingRules::default()))
        .default_open(t.rules != TimingRules::default())
        .show(ui, |ui| rules(ui, &mut t.rules));
}

/// The two sets of rules at a click: the released model's (and its fixed settings), or ours.
fn presets(ui: &mut Ui, c: &mut SimConfig) {
    ui.horizontal(|ui| {
        if ui
            .button("Released model")
            .on_hover_text(
                "Reproduce the released model of Nugteren et al. (2014) exactly: its rules \
                 and fixed settings (one SM, Fermi hash, no clipping, hit latency 0)",
            )
            .clicked()
        {
            // Only an unknown mode name fails, and this one is known.
            let _ = config::compat(c, "gpu-cache-model");
        }
        if ui
            .button("Our rules")
            .on_hover_text("Every rule back to our model's behaviour")
            .clicked()
        {
            if let Some(t) = &mut c.timing {
                t.rules = TimingRules::default();
            }
        }
    });
}

/// The latencies and MSHR counts.
fn numbers(ui: &mut Ui, t: &mut TimingConfig) {
    row(
        ui,
        "Hit latency",
        "Time steps from issue to effect for a hit",
        |ui| ui.add(DragValue::new(&mut t.hit_latency).range(0..=10_000)),
    );
    row(
        ui,
        "Miss latency",
        "Minimum miss latency (time steps); with the L2 simulated, of a fill it misses (DRAM)",
        |ui| ui.add(DragValue::new(&mut t.miss_latency).range(0..=100_000)),
    );
    row(
        ui,
        "L2 latency",
        "Minimum latency of a fill the simulated L2 hits (time steps; unused with no L2)",
        |ui| ui.add(DragValue::new(&mut t.l2_latency).range(0..=100_000)),
    );
    row(
        ui,
        "Latency σ",
        "Standard deviation of the half-normal part of the miss latency",
        |ui| {
            ui.add(
                DragValue::new(&mut t.miss_latency_stddev)
                    .range(0.0..=10_000.0)
                    .speed(0.5),
            )
        },
    );
    row(
        ui,
        "MSHRs",
        "Misses in flight per SM (0 = unlimited)",
        |ui| {
            ui.add(unlimited_at_zero(
                DragValue::new(&mut t.mshrs).range(0..=4096),
            ))
        },
    );
    row(
        ui,
        "MSHRs per warp",
        "Misses in flight per warp (0 = no limit)",
        |ui| {
            ui.add(unlimited_at_zero(
                DragValue::new(&mut t.mshrs_per_warp).range(0..=4096),
            ))
        },
    );
}

/// Each rule: ours or the released model's.
fn rules(ui: &mut Ui, r: &mut TimingRules) {
    rule(
        ui,
        "CTA launch",
        &mut r.cta_launch,
        CtaLaunch::ALL,
        CtaLaunch::name,
    );
    rule(
        ui,
        "Issue unit",
        &mut r.issue,
        IssueUnit::ALL,
        IssueUnit::name,
    );
    rule(
        ui,
        "MSHR check",
        &mut r.mshr_check,
        MshrCheck::ALL,
        MshrCheck::name,
    );
    rule(
        ui,
        "Arrivals",
        &mut r.arrivals,
        Arrivals::ALL,
        Arrivals::name,
    );
    rule(
        ui,
        "Effect order",
        &mut r.effect_order,
        EffectOrder::ALL,
        EffectOrder::name,
    );
    rule(
        ui,
        "Warp return",
        &mut r.warp_return,
        WarpReturn::ALL,
        WarpReturn::name,
    );
    rule(
        ui,
        "Finished warps",
        &mut r.finished_warps,
        FinishedWarps::ALL,
        FinishedWarps::name,
    );
    rule(ui, "Stores", &mut r.stores, Stores::ALL, Stores::name);
    rule(ui, "Kernels", &mut r.kernels, Kernels::ALL, Kernels::name);
    rule(ui, "Hit rule", &mut r.hit_rule, HitRule::ALL, HitRule::name);
    rule(ui, "Classes", &mut r.classes, Classes::ALL, Classes::name);
    rule(ui, "Merging", &mut r.merging, Merging::ALL, Merging::name);
}

/// One timing rule: the first value is ours, the other the released model's.
fn rule<T: PartialEq + Copy>(
    ui: &mut Ui,
    label: &str,
    value: &mut T,
    all: &[T],
    name: fn(T) -> &'static str,
) {
    let options: Vec<(T, &str, &str)> = all
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let tip = if i == 0 {
                "ours"
            } else {
                "the released model's"
            };
            (v, name(v), tip)
        })
        .collect();
    row(
        ui,
        label,
        "See docs/model.md, \"Where we differ from the released model\"",
        |ui| pick(ui, label, value, &options),
    );
}

/// A count whose 0 means "no limit" shows (and takes) the word "unlimited" there.
fn unlimited_at_zero(d: DragValue<'_>) -> DragValue<'_> {
    d.custom_formatter(|v, _| {
        if v == 0.0 {
            "unlimited".into()
        } else {
            format!("{v}")
        }
    })
    .custom_parser(|s| match s.trim() {
        "unlimited" | "" => Some(0.0),
        s => s.parse().ok(),
    })
}
