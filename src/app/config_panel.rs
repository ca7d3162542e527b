//! The configuration panel: a preset picker and every parameter of the core, each with a
//! one-line tooltip. Edits change the pane's configuration; the app re-runs it.

use egui::{ComboBox, DragValue, Ui};

use crate::config::{
    self, Arrivals, Classes, Coalescing, CtaLaunch, EffectOrder, FinishedWarps, HitRule,
    IssuePolicy, IssueUnit, Kernels, MshrCheck, Replacement, SetIndex, SimConfig, SmSelection,
    Stores, TimingConfig, TimingRules, WarpReturn, WritePolicy,
};

/// Draws the editors; returns true when something changed.
pub fn show(ui: &mut Ui, id: usize, preset: &mut String, c: &mut SimConfig) -> bool {
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
        ui.checkbox(&mut c.reuse, "Reuse distances").on_hover_text(
            "Compute exact reuse distances and the miss-rate curve (costs some speed)",
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
    *c != before
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

fn cache(ui: &mut Ui, c: &mut SimConfig) {
    let cc = &mut c.cache;
    let mut kib = cc.size_bytes as f64 / 1024.0;
    row(
        ui,
        "Size (KiB)",
        "L1 capacity in KiB (a multiple of the line size)",
        |ui| {
            let r = ui.add(DragValue::new(&mut kib).range(0.125..=65536.0).speed(1.0));
            if r.changed() {
                cc.size_bytes = ((kib * 1024.0).round() as u64).max(1);
            }
            r
        },
    );
    let lines_options = [16u32, 32, 64, 128, 256];
    row(
        ui,
        "Line (bytes)",
        "Bytes per cache line: the unit of allocation and of a miss",
        |ui| {
            let r = ComboBox::from_id_salt("line")
                .selected_text(cc.line_bytes.to_string())
                .show_ui(ui, |ui| {
                    for l in lines_options {
                        if ui
                            .selectable_value(&mut cc.line_bytes, l, l.to_string())
                            .changed()
                            && cc.sector_bytes > l
                        {
                            cc.sector_bytes = l;
                        }
                    }
                })
                .response;
            if cc.sector_bytes > cc.line_bytes {
                cc.sector_bytes = cc.line_bytes;
            }
            r
        },
    );
    // Associativities that divide the number of lines, plus fully associative.
    let lines = cc.lines().max(1);
    let mut ways_options: Vec<u32> = (0..=24)
        .map(|b| 1u64 << b)
        .filter(|&w| w <= lines && lines % w == 0 && w < lines)
        .map(|w| w as u32)
        .collect();
    for w in [3u32, 6, 12, 24, 48] {
        if (w as u64) < lines && lines % w as u64 == 0 {
            ways_options.push(w);
        }
    }
    ways_options.sort_unstable();
    let ways_name = |w: u32| {
        if w == 0 {
            "fully associative".to_string()
        } else if w == 1 {
            "direct mapped".to_string()
        } else {
            format!("{w}-way")
        }
    };
    row(
        ui,
        "Ways",
        "Lines per set (associativity); fully associative has one set",
        |ui| {
            ComboBox::from_id_salt("ways")
                .selected_text(ways_name(cc.ways))
                .show_ui(ui, |ui| {
                    for w in ways_options.iter().copied().chain([0]) {
                        ui.selectable_value(&mut cc.ways, w, ways_name(w));
                    }
                })
                .response
        },
    );
    row(
        ui,
        "Sector (bytes)",
        "Sector size: sectored caches fetch only the sectors used (equal to the line: no sectors)",
        |ui| {
            ComboBox::from_id_salt("sector")
                .selected_text(cc.sector_bytes.to_string())
                .show_ui(ui, |ui| {
                    for s in [4u32, 8, 16, 32, 64, 128, 256] {
                        if s <= cc.line_bytes {
                            ui.selectable_value(&mut cc.sector_bytes, s, s.to_string());
                        }
                    }
                })
                .response
        },
    );
    let kind = match cc.set_index {
        SetIndex::Modulo => 0,
        SetIndex::FermiHash => 1,
        SetIndex::Bits(_) => 2,
    };
    let mut new_kind = kind;
    row(ui, "Set index", "How an address picks its set: low line-address bits, Fermi's XOR hash, or chosen address bits", |ui| {
        pick(
            ui,
            "set-index",
            &mut new_kind,
            &[
                (0, "modulo", "set = line address mod sets"),
                (1, "fermi-hash", "Fermi's XOR hash (128-byte lines, 32 or 64 sets)"),
                (2, "address bits", "the set index is made of the address bits you list"),
            ],
        )
    });
    if new_kind != kind {
        cc.set_index = match new_kind {
            0 => SetIndex::Modulo,
            1 => SetIndex::FermiHash,
            _ => {
                let off = cc.line_bytes.trailing_zeros() as u8;
                let bits = cc.sets().max(1).trailing_zeros() as u8;
                SetIndex::Bits((off..off + bits).collect())
            }
        };
    }
    if let SetIndex::Bits(bits) = &mut cc.set_index {
        let mut text = bits
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(",");
        row(
            ui,
            "  bits",
            "Address bits of the set index, low to high, comma separated",
            |ui| {
                let r = ui.text_edit_singleline(&mut text);
                if r.changed() {
                    if let Ok(SetIndex::Bits(b)) = SetIndex::parse(&format!("bits:{text}")) {
                        *bits = b;
                    }
                }
                r
            },
        );
    }
    row(
        ui,
        "Replacement",
        "Which line of a full set is evicted",
        |ui| {
            pick(
                ui,
                "replacement",
                &mut cc.replacement,
                &[
                    (Replacement::Lru, "LRU", "least recently used"),
                    (Replacement::Fifo, "FIFO", "first in, first out"),
                    (Replacement::Lfu, "LFU", "least frequently used"),
                    (Replacement::Mfu, "MFU", "most frequently used"),
                    (Replacement::Random, "random", "a seeded random way"),
                    (
                        Replacement::Plru,
                        "tree-PLRU",
                        "tree pseudo-LRU (power-of-two ways)",
                    ),
                ],
            )
        },
    );
    row(ui, "Writes", "What a store does to the L1", |ui| {
        pick(
            ui,
            "write-policy",
            &mut cc.write_policy,
            &[
                (
                    WritePolicy::Wtna,
                    "write-through, no allocate",
                    "stores go to memory; a store miss does not fill a line (Fermi L1)",
                ),
                (
                    WritePolicy::Wbwa,
                    "write-back, allocate",
                    "stores dirty the line; a store miss fills it; evictions write back",
                ),
            ],
        )
    });
    if let Err(e) = cc.validate() {
        ui.colored_label(ui.visuals().warn_fg_color, format!("Invalid: {e}"));
    }
}

fn coalescing(ui: &mut Ui, c: &mut SimConfig) {
    let kind = match c.coalescing {
        Coalescing::None => 0,
        Coalescing::Line => 1,
        Coalescing::Sector => 2,
        Coalescing::Gt200 => 3,
        Coalescing::Bits { .. } => 4,
    };
    let mut new_kind = kind;
    row(
        ui,
        "Requests",
        "How one warp instruction's accesses become cache requests",
        |ui| {
            pick(
                ui,
                "coalescing",
                &mut new_kind,
                &[
                    (0, "none", "every thread's access is its own request"),
                    (1, "per line", "one request per distinct line"),
                    (
                        2,
                        "per line, sectors",
                        "one request per line with a mask of the sectors used",
                    ),
                    (
                        3,
                        "GT200 segments",
                        "compute capability 1.2/1.3: per half-warp 32/64/128-byte segments",
                    ),
                    (
                        4,
                        "address bits",
                        "accesses merge when they differ only in bits LO..=HI",
                    ),
                ],
            )
        },
    );
    if new_kind != kind {
        c.coalescing = match new_kind {
            0 => Coalescing::None,
            1 => Coalescing::Line,
            2 => Coalescing::Sector,
            3 => Coalescing::Gt200,
            _ => Coalescing::Bits { lo: 0, hi: 6 },
        };
    }
    if let Coalescing::Bits { lo, hi } = &mut c.coalescing {
        row(
            ui,
            "  bits",
            "Lowest and highest address bit that may differ within a request",
            |ui| {
                let a = ui.add(DragValue::new(lo).range(0..=63));
                let b = ui.add(DragValue::new(hi).range(0..=63));
                if *lo > *hi {
                    *hi = *lo;
                }
                a | b
            },
        );
    }
}

fn schedule(ui: &mut Ui, c: &mut SimConfig) {
    let s = &mut c.schedule;
    row(ui, "Warp issue", "Which ready warp issues next", |ui| {
        pick(
            ui,
            "policy",
            &mut s.policy,
            &[
                (
                    IssuePolicy::RoundRobin,
                    "round-robin",
                    "each ready warp issues one instruction in turn",
                ),
                (
                    IssuePolicy::Sequential,
                    "sequential",
                    "a warp runs until it finishes or reaches a barrier",
                ),
                (
                    IssuePolicy::Gto,
                    "greedy-then-oldest",
                    "keep issuing one warp until it stalls, then the oldest",
                ),
                (
                    IssuePolicy::TwoLevel,
                    "two-level",
                    "round-robin within a fetch group; next group when it stalls",
                ),
                (IssuePolicy::Random, "random", "a seeded random ready warp"),
            ],
        )
    });
    row(
        ui,
        "Warp size",
        "Threads per warp (1 = per-thread scheduling, as Crawford 2014 §5.2)",
        |ui| ui.add(DragValue::new(&mut s.warp_size).range(1..=1024)),
    );
    if s.policy == IssuePolicy::TwoLevel {
        row(
            ui,
            "Fetch group",
            "Warps per fetch group of the two-level scheduler",
            |ui| ui.add(DragValue::new(&mut s.fetch_group).range(1..=64)),
        );
    }
}

fn gpu(ui: &mut Ui, c: &mut SimConfig) {
    let g = &mut c.gpu;
    row(
        ui,
        "SMs",
        "Streaming multiprocessors the CTAs are spread over",
        |ui| ui.add(DragValue::new(&mut g.sms).range(1..=1024)),
    );
    row(
        ui,
        "CTAs per SM",
        "Most CTAs resident on one SM at a time",
        |ui| ui.add(DragValue::new(&mut g.max_ctas_per_sm).range(1..=64)),
    );
    row(
        ui,
        "Threads per SM",
        "Most threads resident on one SM",
        |ui| ui.add(DragValue::new(&mut g.max_threads_per_sm).range(1..=4096)),
    );
    row(ui, "Warps per SM", "Most warps resident on one SM", |ui| {
        ui.add(DragValue::new(&mut g.max_warps_per_sm).range(1..=128))
    });
    row(
        ui,
        "Thread limit",
        "Model only the CTAs whose threads all have ids below this (0 = all; the GTX470 presets use the first 8192 threads, as Nugteren et al. 2014 did)",
        |ui| ui.add(DragValue::new(&mut g.thread_limit).range(0..=1 << 30)),
    );
    let kind = match g.simulate {
        SmSelection::One(_) => 0,
        SmSelection::Sample(_) => 1,
        SmSelection::All => 2,
    };
    let mut new_kind = kind;
    row(ui, "Simulate", "Which SMs get an L1 model", |ui| {
        pick(
            ui,
            "simulate",
            &mut new_kind,
            &[
                (0, "one SM", "one chosen SM, as the seeds do"),
                (1, "a sample", "a seeded random sample of SMs"),
                (2, "all SMs", "every SM with its own L1"),
            ],
        )
    });
    if new_kind != kind {
        g.simulate = match new_kind {
            0 => SmSelection::One(0),
            1 => SmSelection::Sample(g.sms.min(4)),
            _ => SmSelection::All,
        };
    }
    let max = g.sms;
    match &mut g.simulate {
        SmSelection::One(s) => row(ui, "  SM", "The SM whose L1 is simulated", |ui| {
            ui.add(DragValue::new(s).range(0..=max.saturating_sub(1)))
        }),
        SmSelection::Sample(n) => row(ui, "  SMs", "How many SMs to sample", |ui| {
            ui.add(DragValue::new(n).range(1..=max))
        }),
        SmSelection::All => {}
    }
}

fn timing(ui: &mut Ui, c: &mut SimConfig) {
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
    let Some(t) = &mut c.timing else {
        return;
    };
    row(
        ui,
        "Hit latency",
        "Time steps from issue to effect for a hit",
        |ui| ui.add(DragValue::new(&mut t.hit_latency).range(0..=10_000)),
    );
    row(
        ui,
        "Miss latency",
        "Minimum miss latency (time steps)",
        |ui| ui.add(DragValue::new(&mut t.miss_latency).range(0..=100_000)),
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
        |ui| ui.add(DragValue::new(&mut t.mshrs).range(0..=4096)),
    );
    row(
        ui,
        "MSHRs per warp",
        "Misses in flight per warp (0 = no limit)",
        |ui| ui.add(DragValue::new(&mut t.mshrs_per_warp).range(0..=4096)),
    );
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
        .show(ui, |ui| {
            let r = &mut t.rules;
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
        });
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
