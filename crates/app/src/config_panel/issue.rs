//! The coalescing, scheduling and GPU sections of the configuration panel.

use super::*;

pub(super) fn coalescing(ui: &mut Ui, c: &mut SimConfig) {
    row(
        ui,
        "Requests",
        "How one warp instruction's accesses become cache requests",
        |ui| pick_choice(ui, "coalescing", &mut c.coalescing),
    );
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

pub(super) fn schedule(ui: &mut Ui, c: &mut SimConfig) {
    let s = &mut c.schedule;
    row(ui, "Warp issue", "Which ready warp issues next", |ui| {
        pick_choice(ui, "policy", &mut s.policy)
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

pub(super) fn gpu(ui: &mut Ui, c: &mut SimConfig) {
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
