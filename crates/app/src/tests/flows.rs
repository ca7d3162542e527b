//! The desktop app's flows, driven through egui_kittest (no window, no GPU), and its jobs
//! (progress, cancel, last result wins) without any UI.
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::job::{Job, JobError, Wake};
use crate::views::AddressView;
use crate::worker::{self, Source};
use crate::WarpscopeApp;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use warpscope_core::config;

use super::support;
use support::*;

#[test]
fn start_pick_a_generator_change_associativity_and_see_the_miss_rate_change() {
    let mut h = harness(app("vecadd", "n=256"));
    settle(&mut h);
    assert!(trace_label(&h).starts_with("vecadd"), "{}", trace_label(&h));
    // Pick another kernel in the generator panel and generate it.
    click(&mut h, "Kernel");
    click(&mut h, "matmul");
    let params = h.get_by_label("Parameters");
    params.focus();
    h.step();
    h.state_mut().settings.generator_params = "n=64 block=16,16".into();
    click(&mut h, "Generate");
    settle(&mut h);
    assert!(trace_label(&h).starts_with("matmul"));
    let before = miss_rate(&h, 0);
    // The Fermi preset is 4-way with its XOR set hash; index sets by the low line bits,
    // then make the cache direct mapped.
    click(&mut h, "Set index");
    click(&mut h, "modulo");
    settle(&mut h);
    assert_eq!(
        miss_rate(&h, 0),
        before,
        "4-way modulo misses as 4-way hashed here"
    );
    click(&mut h, "Ways");
    click(&mut h, "direct mapped");
    assert_eq!(h.state().settings.panes[0].1.cache.ways, 1);
    assert!(h.state().panes[0].stale || h.state().panes[0].dirty_since.is_some());
    settle(&mut h);
    let after = miss_rate(&h, 0);
    assert_ne!(
        before, after,
        "associativity changed but the miss rate did not"
    );
    // The pane header shows the new rate.
    h.get_by_label_contains(&format!("{:.2}% misses", after * 100.0));
}

#[test]
fn second_pane_with_another_policy_and_a_summary_of_the_difference() {
    let mut h = harness(app("matmul", "n=32 block=8,8"));
    settle(&mut h);
    click(&mut h, "+ Compare");
    assert_eq!(h.state().panes.len(), 2);
    assert_eq!(h.state().settings.active, 1);
    click(&mut h, "Warp issue");
    click(&mut h, "greedy-then-oldest");
    settle(&mut h);
    let s = h.state();
    assert_eq!(
        s.settings.panes[1].1.schedule.policy,
        config::IssuePolicy::Gto
    );
    assert_eq!(
        s.settings.panes[0].1.schedule.policy,
        config::IssuePolicy::RoundRobin
    );
    let summary = s.summary();
    assert!(summary.contains("policy round-robin"), "{summary}");
    assert!(summary.contains("policy gto"), "{summary}");
    assert!(summary.contains("% misses"), "{summary}");
    h.get_by_label_contains("policy gto");
}

#[test]
fn export_a_table_through_the_in_app_file_browser() {
    let dir = std::env::temp_dir().join(format!("warpscope-gui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut h = harness(app("vecadd", "n=512"));
    settle(&mut h);
    h.state_mut().settings.last_dir = Some(dir.clone());
    click(&mut h, "File");
    h.get_by_label_contains("Export report").click();
    h.run_steps(3);
    assert!(
        h.state().browser.is_some(),
        "the in-app browser opens where no native dialog can"
    );
    h.state_mut().browser.as_mut().unwrap().name = "summary.csv".into();
    click(&mut h, "Save");
    let start = Instant::now();
    while !dir.join("summary.instructions.csv").exists() || !h.state().idle() {
        h.step();
        assert!(start.elapsed() < Duration::from_secs(60), "no export");
        std::thread::sleep(Duration::from_millis(5));
    }
    let text = std::fs::read_to_string(dir.join("summary.instructions.csv")).unwrap();
    assert!(text.lines().count() >= 3, "{text}");
    assert!(dir.join("summary.ctas.csv").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn views_switch_with_ctrl_and_a_digit_and_each_draws() {
    let mut h = harness(app("matmul", "n=32 block=8,8"));
    settle(&mut h);
    for (key, view) in [
        (egui::Key::Num2, crate::views::View::Reuse),
        (egui::Key::Num3, crate::views::View::Misses),
        (egui::Key::Num4, crate::views::View::Sets),
        (egui::Key::Num5, crate::views::View::Communication),
        (egui::Key::Num1, crate::views::View::Address),
    ] {
        h.key_press_modifiers(egui::Modifiers::COMMAND, key);
        h.step();
        h.step();
        assert_eq!(h.state().settings.view, view);
    }
}

#[test]
fn a_bad_trace_file_shows_the_file_line_and_reason_in_the_status_bar() {
    let path = std::env::temp_dir().join(format!("warpscope-bad-{}.din", std::process::id()));
    std::fs::write(&path, "0 1000\n7 zz\n").unwrap();
    let mut a = app("vecadd", "n=64");
    a.open(path.clone());
    let mut h = harness(a);
    let start = Instant::now();
    while !matches!(h.state().status, crate::Status::Error(_)) {
        h.step();
        assert!(start.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    let crate::Status::Error(e) = h.state().status.clone() else {
        unreachable!()
    };
    assert!(
        e.contains(&path.display().to_string()) && e.contains("line 2"),
        "{e}"
    );
    std::fs::remove_file(&path).ok();
}

// The app's jobs, without a window.

fn no_wake() -> Wake {
    Arc::new(|| {})
}

#[test]
fn a_simulation_job_reports_progress_and_cancels() {
    let t = trace("matmul", &[("n", "256")]);
    let cfg = config::preset("fermi-16k").unwrap();
    let mut job = Job::spawn("sim", &no_wake(), move |p| worker::simulate(cfg, &t, p));
    let start = Instant::now();
    while job.progress().fraction().unwrap_or(0.0) == 0.0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no progress reported"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    job.cancel();
    let outcome = job.wait(Duration::from_secs(60)).expect("an outcome");
    assert!(
        matches!(outcome, Err(JobError::Cancelled)),
        "a cancelled run reports Cancelled"
    );
}

#[test]
fn the_last_submitted_result_wins_in_the_app() {
    // Two quick changes: only the second configuration's result may land in the pane.
    let mut a = app("matmul", "n=32 block=8,8");
    let start = Instant::now();
    while a.trace.is_none() {
        a.update_jobs(0.0);
        std::thread::sleep(Duration::from_millis(2));
        assert!(start.elapsed() < Duration::from_secs(30));
    }
    let mut first = config::preset("fermi-16k").unwrap();
    first.cache.set_index = config::SetIndex::Modulo;
    first.cache.ways = 1;
    let mut second = first.clone();
    second.cache.ways = 0;
    let running = |a: &WarpscopeApp| a.panes[0].sim.as_ref().map(|j| Arc::as_ptr(j.progress()));
    a.set_config(0, "first", first, 1.0);
    a.update_jobs(2.0);
    let t1 = running(&a).expect("submitted");
    a.set_config(0, "second", second.clone(), 2.0);
    a.update_jobs(3.0);
    let t2 = running(&a).expect("resubmitted");
    assert_ne!(t1, t2, "the second run replaces the first");
    let mut now = 3.0;
    while !a.idle() {
        now += 0.01;
        a.update_jobs(now);
        std::thread::sleep(Duration::from_millis(2));
        assert!(start.elapsed() < Duration::from_secs(60));
    }
    let r = a.panes[0].result.as_ref().expect("a result");
    assert_eq!(
        r.config, second,
        "the stale run's result must not replace the newest"
    );
}

#[test]
fn loading_reports_progress_and_failure_names_the_file() {
    let source = Source::File {
        path: "/nonexistent/trace.din".into(),
        format: None,
        allow_truncated: false,
        whole_up_to: worker::WHOLE_UP_TO,
    };
    let mut job = Job::spawn("load", &no_wake(), move |p| worker::load_source(source, p));
    match job.wait(Duration::from_secs(30)).expect("an outcome") {
        Err(JobError::Failed(e)) => assert!(e.contains("/nonexistent/trace.din"), "{e}"),
        _ => panic!("expected a failure"),
    }
}

#[test]
fn per_instruction_and_per_cta_class_splits_add_up_to_the_report() {
    use crate::data::Outcome as O;
    let t = trace("matmul", &[("n", "64"), ("block", "8,8")]);
    for policy in [config::WritePolicy::Wbwa, config::WritePolicy::Wtna] {
        let mut cfg = config::preset("fermi-16k").unwrap();
        cfg.gpu.sms = 2;
        cfg.gpu.simulate = config::SmSelection::All;
        cfg.cache.write_policy = policy;
        let data = simulate(t.clone(), cfg);
        let r = &data.report;
        assert_eq!(data.per_inst.len(), r.instructions.len());
        for (s, row) in data.per_inst.iter().zip(&r.instructions) {
            assert_eq!(s.total(), row.counters.requests, "{}", row.name);
            assert_eq!(s.misses(), row.counters.misses, "{}", row.name);
            let classes = row.counters.miss_classes;
            let class = |o| s.get(false, o) + s.get(true, o);
            assert_eq!(class(O::Compulsory), classes.compulsory);
            assert_eq!(class(O::Capacity), classes.capacity);
            assert_eq!(class(O::Conflict), classes.conflict);
        }
        // Each CTA row's classes, by reads and writes, are its requests' (every request is
        // kept here), and sum to the report's classes of that CTA.
        let p = &data.points;
        let mut want = std::collections::HashMap::<(u16, u32), [[u64; 5]; 2]>::new();
        for i in 0..p.len() {
            let o = p.outcome(i);
            let c = match o {
                O::Compulsory => 0,
                O::Capacity => 1,
                O::Conflict => 2,
                _ => continue,
            };
            want.entry((p.kernel[i], p.cta[i])).or_default()[p.is_write(i) as usize][c] += 1;
        }
        let ctas: Vec<_> = r
            .ctas
            .iter()
            .filter(|c| c.counters.requests > 0 || c.counters.writes > 0)
            .collect();
        let rows = &data.miss_tables.rows(crate::data::Per::Cta);
        assert_eq!(rows.len(), ctas.len());
        let mut writes = 0;
        for (row, c) in rows.iter().zip(&ctas) {
            let g = data.kernels[c.kernel as usize].grid;
            let id = (c.cta.z * g.y + c.cta.y) * g.x + c.cta.x;
            let w = want
                .get(&(c.kernel as u16, id))
                .copied()
                .unwrap_or_default();
            assert_eq!(row.classes.reads, w[0], "{policy:?} {}", row.label);
            assert_eq!(row.classes.writes, w[1], "{policy:?} {}", row.label);
            assert_eq!(row.requests, c.counters.requests);
            let m = c.counters.miss_classes;
            let sum = |k: usize| row.classes.reads[k] + row.classes.writes[k];
            assert_eq!(
                [sum(0), sum(1), sum(2)],
                [m.compulsory, m.capacity, m.conflict]
            );
            writes += row.classes.writes.iter().sum::<u64>();
        }
        assert!(rows.iter().filter(|r| r.misses > 0).count() > 1);
        // Stores miss (and are classed) under either policy: the write columns are checked.
        assert!(writes > 0, "{policy:?}");
        // The set grid counts every request once.
        let sum: u64 = data.sets.accesses.iter().map(|&v| v as u64).sum();
        assert_eq!(sum, r.totals.requests);
    }
}

#[test]
fn the_density_raster_is_drawn_off_the_ui_thread_and_redrawn_for_each_new_result() {
    // 120 000 requests: more than the marker limit, so the address view draws a raster.
    let mut a = app("vecadd", "n=40000");
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.coalescing = config::Coalescing::None;
    cfg.gpu.simulate = config::SmSelection::All;
    cfg.cache.set_index = config::SetIndex::Modulo;
    a.set_config(0, "test", cfg.clone(), 0.0);
    let mut h = harness(a);
    let drawn = |h: &mut Harness<'static, WarpscopeApp>| {
        let start = Instant::now();
        loop {
            h.step();
            let p = &h.state().panes[0];
            if h.state().idle()
                && !p.stale
                && p.result.is_some()
                && p.view::<AddressView>()
                    .unwrap()
                    .texture
                    .as_ref()
                    .is_some_and(|t| t.generation == p.generation)
            {
                return p.generation;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no raster for the newest result"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let first = drawn(&mut h);
    assert!(h.state().panes[0].result.as_ref().unwrap().points.len() > crate::views::MARKER_LIMIT);
    cfg.cache.ways = 2;
    let now = h.ctx.input(|i| i.time);
    h.state_mut().set_config(0, "test", cfg, now);
    let second = drawn(&mut h);
    assert!(second > first);
}

#[test]
fn in_the_timing_model_the_address_view_runs_on_cycles() {
    use crate::data::XAxis;
    let t = trace("matmul", &[("n", "32"), ("block", "8,8")]);
    // Without timing, x is the issue order.
    let plain = simulate(t.clone(), config::preset("fermi-16k").unwrap());
    assert_eq!(plain.x, XAxis::Order);
    assert_eq!(plain.x_end(), plain.points.len() as f64);
    assert_eq!(plain.visible(2.5, 5.0).collect::<Vec<_>>(), vec![3, 4, 5]);
    // With it, x is the issue cycle: requests miss for ~100 cycles, so the cycle axis is far
    // longer than the request count, and the requests in a window are those issued in it.
    // 14 SMs (the hardware view), so SM 0 has few requests against ~100-cycle misses.
    let mut gtx = config::preset("gtx470-16k").unwrap();
    gtx.gpu.sms = 14;
    let timed = simulate(t, gtx);
    let XAxis::Time { x, by_x, end, .. } = &timed.x else {
        panic!("expected a time axis")
    };
    let n = timed.points.len();
    assert_eq!(x.len(), n);
    assert!(*end as usize > n, "{end} cycles for {n} requests");
    assert!(by_x
        .windows(2)
        .all(|w| x[w[0] as usize] <= x[w[1] as usize]));
    // One SM: its requests come in cycle order.
    assert!(x.windows(2).all(|w| w[0] <= w[1]));
    let (lo, hi) = (x[n / 3] as f64, x[2 * n / 3] as f64);
    let inside: Vec<usize> = timed.visible(lo, hi).collect();
    let expected: Vec<usize> = (0..n)
        .filter(|&i| (x[i] as f64) >= lo && (x[i] as f64) <= hi)
        .collect();
    assert_eq!(inside, expected);
    assert!(!inside.is_empty());
    // In parts (as the raster's job takes them), on both axes: the same requests, in order.
    for (d, (lo, hi)) in [(&plain, (2.5, 40.0)), (&timed, (lo, hi))] {
        let whole: Vec<usize> = d.visible(lo, hi).collect();
        let parts: Vec<usize> = (0..whole.len() + 5)
            .step_by(3)
            .flat_map(|from| d.visible(lo, hi).part(from, 3))
            .collect();
        assert_eq!(parts, whole);
        assert_eq!(d.visible(lo, hi).part(whole.len(), 3).count(), 0);
    }
}

#[test]
fn a_box_selection_counts_exactly_the_requests_inside_it() {
    let t = trace("matmul", &[("n", "32"), ("block", "8,8")]);
    let d = simulate(t, config::preset("fermi-16k").unwrap());
    let n = d.points.len();
    let (y0, y1) = (d.y[n / 4].min(d.y[n / 2]), d.y[n / 4].max(d.y[n / 2]));
    let x = [(n / 5) as f64, (4 * n / 5) as f64];
    let s = d.select(x, [y0, y1]);
    let inside: Vec<usize> = (n / 5..=4 * n / 5)
        .filter(|&i| d.y[i] >= y0 && d.y[i] <= y1)
        .collect();
    assert!(inside.len() > 10);
    assert_eq!(s.requests, inside.len() as u64);
    assert_eq!(s.outcomes.iter().sum::<u64>(), s.requests);
    let hits = inside
        .iter()
        .filter(|&&i| d.points.outcome(i) == crate::data::Outcome::Hit)
        .count();
    assert_eq!(s.outcomes[0], hits as u64);
    let mut lines: Vec<u64> = inside.iter().map(|&i| d.points.line[i]).collect();
    lines.sort();
    lines.dedup();
    assert_eq!(s.lines, lines.len() as u64);
    assert_eq!(s.lowest, lines[0] * d.line_bytes);
    assert_eq!(s.instructions.iter().map(|i| i.2).sum::<u64>(), s.requests);
    assert!(s.instructions.windows(2).all(|w| w[0].2 >= w[1].2));
    // An empty box holds nothing.
    assert_eq!(d.select([-10.0, -5.0], [0.0, 1e12]).requests, 0);
    // Made a few requests at a time (as a page's job makes it): the same summary.
    let mut parts = crate::data::Selecting::new(x, [y0, y1]);
    while parts.add(&d, 7) {}
    assert_eq!(parts.finish(), s);
}

#[test]
fn shift_drag_selects_a_box_and_esc_clears_it() {
    let mut h = harness(app("matmul", "n=32 block=8,8"));
    settle(&mut h);
    assert!(h.state().panes[0]
        .view::<AddressView>()
        .unwrap()
        .selection
        .is_none());
    // Drag across the middle of the plot area with Shift held.
    let area = h.state().view_rect;
    let from = area.center() - egui::vec2(200.0, 150.0);
    let to = area.center() + egui::vec2(200.0, 150.0);
    let shift = egui::Modifiers::SHIFT;
    h.hover_at(from);
    h.event(egui::Event::ModifiersChanged(shift));
    h.run_steps(2);
    h.event(egui::Event::PointerButton {
        pos: from,
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: shift,
    });
    for k in 1..=10 {
        h.event(egui::Event::PointerMoved(
            from + (to - from) * (k as f32 / 10.0),
        ));
    }
    h.event(egui::Event::PointerButton {
        pos: to,
        button: egui::PointerButton::Primary,
        pressed: false,
        modifiers: shift,
    });
    h.event(egui::Event::ModifiersChanged(egui::Modifiers::NONE));
    // The box is summarized off the UI thread.
    settle(&mut h);
    let sel = h.state().panes[0]
        .view::<AddressView>()
        .unwrap()
        .selection
        .as_ref()
        .map(|s| s.0.clone())
        .expect("a selection");
    assert!(sel.requests > 0, "{sel:?}");
    h.get_by_label_contains(&format!("Selected {} requests", sel.requests));
    h.key_press(egui::Key::Escape);
    h.run_steps(2);
    assert!(h.state().panes[0]
        .view::<AddressView>()
        .unwrap()
        .selection
        .is_none());
}

/// The wheel over the address plot zooms around the pointer, as docs/app.md says (it
/// panned, keeping the width): up narrows the requests shown, down widens them again.
#[test]
fn the_wheel_zooms_the_address_plot() {
    let mut h = harness(app("matmul", "n=32 block=8,8"));
    settle(&mut h);
    let shown = |h: &egui_kittest::Harness<'static, crate::WarpscopeApp>| {
        let (x0, x1) = h.state().panes[0]
            .view::<AddressView>()
            .unwrap()
            .shown_x()
            .expect("a plot shown");
        (x0, x1, x1 - x0)
    };
    let (a0, a1, before) = shown(&h);
    let centre = h.state().view_rect.center();
    h.hover_at(centre);
    h.run_steps(2);
    let wheel = |h: &mut egui_kittest::Harness<'static, crate::WarpscopeApp>, dy: f32| {
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, dy),
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Wheel,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(20);
    };
    wheel(&mut h, 120.0);
    let (b0, b1, zoomed) = shown(&h);
    assert!(zoomed < before * 0.8, "{before} -> {zoomed}");
    // Around the pointer: the new range lies inside the old one.
    assert!(b0 >= a0 && b1 <= a1, "({a0}, {a1}) -> ({b0}, {b1})");
    wheel(&mut h, -240.0);
    let (_, _, out) = shown(&h);
    assert!(out > zoomed * 1.5, "{zoomed} -> {out}");
}

#[test]
fn each_request_knows_the_lowest_thread_whose_access_starts_in_its_line() {
    // vecadd with 4-byte elements: a warp's 32 accesses fill one 128-byte line, so each
    // request belongs to the warp's first thread.
    let t = trace("vecadd", &[("n", "1024"), ("block", "256")]);
    let d = simulate(t, config::preset("fermi-16k").unwrap());
    let p = &d.points;
    assert_eq!(p.thread.len(), p.len());
    for i in 0..p.len() {
        let thread = p.thread(i).unwrap();
        assert_eq!(thread % 32, 0, "request {i}");
        assert_eq!(thread / 256, p.cta[i], "request {i}");
        assert_eq!(thread % 256 / 32, p.warp[i], "request {i}");
    }
    // Without coalescing, each request is one access and names its own thread.
    let t = trace("vecadd", &[("n", "64"), ("block", "32")]);
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.coalescing = config::Coalescing::None;
    let d = simulate(t, cfg);
    let threads: std::collections::BTreeSet<u32> = (0..d.points.len())
        .map(|i| d.points.thread(i).unwrap())
        .collect();
    assert_eq!(threads.len(), 32, "SM 0 runs CTA 0's 32 threads");
    // The timing model has no thread per request.
    let t = trace("vecadd", &[("n", "64"), ("block", "32")]);
    let d = simulate(t, config::preset("gtx470-16k").unwrap());
    assert!(d.points.thread.is_empty() && d.points.thread(0).is_none());
}

/// Pane `i`'s communication view.
fn comm(a: &WarpscopeApp, i: usize) -> &crate::views::CommView {
    a.panes[i]
        .view()
        .expect("every pane has a communication view")
}

/// Steps the UI until the first pane's communication view has its report.
fn settle_comm(h: &mut Harness<'static, WarpscopeApp>) {
    step_until(h, "the communication analysis did not finish", |a| {
        comm(a, 0).report.is_some()
    });
}

/// Steps the UI until the density map on screen is of the current selection (it is prepared
/// on the worker).
fn settle_density(h: &mut Harness<'static, WarpscopeApp>) {
    step_until(h, "the density map was not prepared", |a| {
        let c = comm(a, 0);
        c.shown() == Some((c.launches, c.counts))
    });
}

#[test]
fn the_communication_view_analyzes_the_trace_and_selects_a_launch_pair() {
    use crate::views::View;
    let mut h = harness(app("hotspot", "nx=64 ny=64 steps=3"));
    settle(&mut h);
    click(&mut h, "CTA communication");
    assert_eq!(h.state().settings.view, View::Communication);
    settle_comm(&mut h);
    let r = comm(h.state(), 0).report.clone().expect("a report");
    assert_eq!(r.per_launch.len(), 3);
    settle_density(&mut h);
    assert_eq!(comm(h.state(), 0).shown(), Some((None, false)));
    // The summary, the launch selector, the map's colour scale and the side plots are drawn.
    h.get_by_label("Launches");
    h.get_by_label("bytes per CTA pair (log scale)");
    assert!(h
        .query_all_by_label_contains("launches, up to 16 CTAs")
        .next()
        .is_some());
    // Pick the second launch pair: the same pattern, half the transfers.
    click(&mut h, "Launches");
    click(&mut h, "launch 1 hotspot -> launch 2 hotspot");
    assert_eq!(comm(h.state(), 0).launches, Some((1, 2)));
    // The map of the old selection stays until the new one is ready.
    h.run_steps(1);
    settle_density(&mut h);
    assert_eq!(comm(h.state(), 0).shown(), Some((Some((1, 2)), false)));
    // Counting transfers instead of bytes.
    click(&mut h, "transfers");
    assert!(comm(h.state(), 0).counts);
    settle_density(&mut h);
    assert_eq!(comm(h.state(), 0).shown(), Some((Some((1, 2)), true)));

    // A new trace replaces the report; a one-launch trace says why there is nothing to see.
    h.state_mut()
        .generate("matmul".into(), "n=16 block=8,8".into());
    settle(&mut h);
    settle_comm(&mut h);
    assert_eq!(
        comm(h.state(), 0)
            .report
            .as_ref()
            .map(|r| r.per_launch.len()),
        Some(1)
    );
    assert_eq!(comm(h.state(), 0).launches, None);
    assert!(h
        .query_all_by_label_contains("communication needs a later launch")
        .next()
        .is_some());
}

/// The communication view is a pane's view like the others: panes of different traces
/// each analyze their own, side by side, and a pane whose trace changes drops the old report.
#[test]
fn panes_of_different_traces_show_their_own_communication() {
    use crate::views::View;
    let mut h = harness(app("hotspot", "nx=64 ny=64 steps=3"));
    settle(&mut h);
    h.state_mut().add_pane(0.0);
    settle(&mut h);
    h.state_mut().generate_in_pane(
        1,
        "bfs-levels".into(),
        "nodes=1024 degree=4 block=64".into(),
    );
    step_until(&mut h, "pane 2's own trace", |a| {
        a.panes[1].own_trace.is_some()
    });
    settle(&mut h);
    click(&mut h, "CTA communication");
    assert_eq!(h.state().settings.view, View::Communication);
    step_until(&mut h, "both panes' analyses", |a| {
        comm(a, 0).report.is_some() && comm(a, 1).report.is_some()
    });
    let launches = |h: &Harness<'static, WarpscopeApp>, i| {
        comm(h.state(), i)
            .report
            .as_ref()
            .map(|r| r.per_launch.len())
    };
    // Each pane's report is of its own trace: hotspot's 3 launches, BFS's levels.
    assert_eq!(launches(&h, 0), Some(3));
    let bfs = launches(&h, 1).expect("pane 2's report");
    assert!(bfs > 1 && bfs != 3, "{bfs} launches");
    // Both are drawn, each with its own selector.
    assert_eq!(h.query_all_by_label("Launches").count(), 2);
    // Pane 2 back on the shared trace: its old report goes, and the shared trace's comes.
    h.state_mut().panes[1].own_trace = None;
    step_until(&mut h, "pane 2 on the shared trace", |a| {
        comm(a, 1)
            .report
            .as_ref()
            .is_some_and(|r| r.per_launch.len() == 3)
    });
}

#[test]
fn the_communication_analysis_can_be_cancelled_and_run_again() {
    let t = trace("bfs-levels", &[("nodes", "200000"), ("degree", "8")]);
    let analyze = |t: Arc<crate::data::TraceData>| {
        crate::sliced::Slices::job("comm", &no_wake(), worker::communicate(t))
    };
    let mut job = analyze(t.clone());
    job.cancel();
    match job.wait(Duration::from_secs(120)) {
        Some(Err(JobError::Cancelled)) => {}
        Some(Ok(_)) => panic!("finished before the cancel was seen"),
        _ => panic!("expected the cancelled analysis"),
    }
    match analyze(t).wait(Duration::from_secs(120)) {
        Some(Ok(r)) => assert!(r.report.communicated_bytes > 0),
        _ => panic!("expected a report"),
    }
}

#[test]
fn the_released_model_button_reproduces_it_and_the_app_matches_the_library() {
    // Tall enough for the whole configuration panel, rules included.
    let mut h = Harness::builder()
        .with_size([1400.0, 2000.0])
        .build_ui_state(
            |ui, app: &mut WarpscopeApp| app.ui(ui),
            app("stencil2d", "nx=66 ny=66"),
        );
    settle(&mut h);
    let now = h.ctx.input(|i| i.time);
    h.state_mut()
        .set_config(0, "gtx470-16k", config::preset("gtx470-16k").unwrap(), now);
    settle(&mut h);
    h.get_by_label("Released model").click();
    h.run_steps(3);
    settle(&mut h);
    let c = h.state().settings.panes[0].1.clone();
    let t = c.timing.as_ref().unwrap();
    assert_eq!(t.rules, config::TimingRules::released());
    assert!(!t.clip);
    // The rules section is open; one rule switched back by its menu.
    click(&mut h, "CTA launch");
    click(&mut h, "as-finished");
    assert_eq!(
        h.state().settings.panes[0]
            .1
            .timing
            .as_ref()
            .unwrap()
            .rules
            .cta_launch,
        config::CtaLaunch::AsFinished
    );
    click(&mut h, "CTA launch");
    click(&mut h, "in-sets");
    settle(&mut h);
    // The same trace and configuration through the library give the same numbers.
    let trace = warpscope_core::gen::generate(
        "stencil2d",
        &warpscope_core::gen::parse_pairs(&["nx=66".into(), "ny=66".into()]).unwrap(),
    )
    .unwrap();
    let want = warpscope_core::sim::run(&c, &trace, &mut warpscope_core::sim::NoObserver).unwrap();
    let got = &h.state().panes[0].result.as_ref().unwrap().report;
    assert_eq!(got.totals, want.totals);
    assert_eq!(got.timing, want.timing);
    // Back to our rules.
    h.get_by_label("Our rules").click();
    h.run_steps(3);
    assert_eq!(
        h.state().settings.panes[0].1.timing.as_ref().unwrap().rules,
        config::TimingRules::default()
    );
}

#[test]
fn reuse_markers_put_a_distance_equal_to_the_capacity_on_the_miss_side() {
    use crate::views::{distance_bin_x, limit_x};
    use warpscope_core::reuse::Histogram;
    // Every distance 0..4096 once, in log bins [0,1) [1,2) [2,4) ...
    let bins = Histogram {
        counts: vec![1; 4096],
        ..Default::default()
    }
    .log2_bins();
    for limit in 1..=2048u64 {
        let x = limit_x(limit);
        for b in &bins {
            let centre = distance_bin_x(b.lo);
            if b.hi <= limit {
                // Only hits in this bin: left of the marker.
                assert!(
                    centre < x,
                    "limit {limit}: bin {}..{} at {centre} vs {x}",
                    b.lo,
                    b.hi
                );
            } else if b.lo >= limit {
                // Only misses (a distance equal to the limit misses): right of it.
                assert!(
                    centre > x,
                    "limit {limit}: bin {}..{} at {centre} vs {x}",
                    b.lo,
                    b.hi
                );
            } else {
                // The bin holds both: the marker lies inside it.
                assert!((centre - 0.5..centre + 0.5).contains(&x), "limit {limit}");
            }
        }
    }
    // The issue's cases: 64 lines between the 32..64 and 64..128 bins, 4 ways between 2..4
    // and 4..8.
    assert_eq!(limit_x(64), 6.5);
    assert_eq!(limit_x(4), 2.5);
}

#[test]
fn an_empty_or_binary_file_is_an_error_that_keeps_the_current_trace() {
    let dir = std::env::temp_dir().join(format!("warpscope-undetectable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.trc");
    std::fs::write(&empty, b"").unwrap();
    let noise = dir.join("noise.bin");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&noise, &bytes).unwrap();
    let mut h = harness(app("vecadd", "n=64"));
    settle(&mut h);
    for (path, expect) in [(&empty, "empty"), (&noise, "binary bytes `\\x")] {
        h.state_mut().open(path.clone());
        let start = Instant::now();
        while !matches!(h.state().status, crate::Status::Error(_)) {
            h.step();
            assert!(start.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(5));
        }
        let crate::Status::Error(e) = h.state().status.clone() else {
            unreachable!()
        };
        assert!(e.contains(expect), "{e}");
        assert!(!e.contains('\u{fffd}'), "raw bytes in {e}");
        assert!(trace_label(&h).starts_with("vecadd"), "{}", trace_label(&h));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn enter_in_the_parameters_generates_and_reverting_every_change_drops_edited() {
    let mut h = harness(app("vecadd", "n=64"));
    settle(&mut h);
    // Enter in the parameter field generates, as the button does.
    h.get_by_label("Parameters").focus();
    h.step();
    h.state_mut().settings.generator_params = "n=128".into();
    h.key_press(egui::Key::Enter);
    h.run_steps(2);
    settle(&mut h);
    assert!(trace_label(&h).contains("n=128"), "{}", trace_label(&h));
    // Direct mapped, then back to 4 ways: the preset is no longer "(edited)".
    let preset = |h: &Harness<'static, WarpscopeApp>| h.state().settings.panes[0].0.clone();
    let start = preset(&h);
    click(&mut h, "Ways");
    click(&mut h, "direct mapped");
    assert_eq!(preset(&h), format!("{start} (edited)"));
    click(&mut h, "Ways");
    click(&mut h, "4-way");
    assert_eq!(preset(&h), start);
}

#[test]
fn a_store_miss_under_write_no_allocate_says_why_in_its_hover() {
    use crate::data::Outcome;
    use crate::views::store_note;
    use warpscope_core::config::WritePolicy;
    let note = store_note(true, Outcome::Capacity, WritePolicy::Wtna).unwrap();
    assert!(note.contains("never allocates"), "{note}");
    assert!(store_note(false, Outcome::Capacity, WritePolicy::Wtna).is_none());
    assert!(store_note(true, Outcome::Hit, WritePolicy::Wtna).is_none());
    assert!(store_note(true, Outcome::Capacity, WritePolicy::Wbwa).is_none());
}

#[test]
fn the_address_axis_and_the_access_count_cover_only_what_reaches_the_l1() {
    // The Accel-Sim matrixmul sample: 3072 global accesses (what `sim` reports) among
    // shared-memory accesses and barriers at low addresses.
    let path = support::sample("accelsim-matrixmul");
    let loaded = warpscope_core::trace::load(&path, Default::default(), &|s| s).unwrap();
    let d = crate::data::TraceData::new(loaded.trace, "m".into(), None, None);
    let cfg = config::preset("fermi-16k").unwrap();
    let r = warpscope_core::sim::run(&cfg, &d.trace, &mut warpscope_core::sim::NoObserver).unwrap();
    assert_eq!(d.accesses, r.totals.accesses);
    assert_eq!(d.accesses, 3072);
    // No phantom band from address 0: every segment starts where global data does.
    let lowest = d.segments.ranges.iter().map(|r| r.0).min().unwrap();
    assert!(lowest >= 0x2000, "lowest segment at {lowest:#x}");
}

#[test]
fn address_ticks_fall_on_round_hexadecimal_addresses() {
    use crate::data::Segments;
    let segs = Segments::from_addresses([0x1000_0123u64, 0x1003_4567].into_iter());
    let (lo, hi) = (0.0, segs.height());
    let marks = segs.hex_marks(lo, hi, 1000.0);
    assert!(marks.len() >= 4, "{marks:?}");
    for &(y, step) in &marks {
        assert!(step.is_power_of_two() && step >= 1024, "step {step}");
        let a = segs.addr(y).expect("a mark inside a segment");
        assert_eq!(a % 1024, 0, "{a:#x} is not round");
        assert_eq!(a % step, 0, "{a:#x} not a multiple of its step {step}");
    }
}

#[test]
fn the_configuration_panel_returns_an_edit_only_when_something_changed() {
    use crate::config_panel::{show, Edit};
    // State: (the configuration shown, the edits returned).
    type State = (config::SimConfig, Vec<Option<Edit>>);
    let start = config::preset("fermi-16k").unwrap();
    let mut h = Harness::builder()
        .with_size([400.0, 1600.0])
        .build_ui_state(
            |ui, st: &mut State| {
                let edit = show(ui, 0, "fermi-16k", &st.0);
                st.1.push(edit);
            },
            (start.clone(), Vec::new()),
        );
    h.run_steps(2);
    assert!(
        h.state().1.iter().all(Option::is_none),
        "drawing alone edits nothing"
    );
    for label in ["Ways", "direct mapped"] {
        h.get_by_label(label).click();
        h.run_steps(3);
    }
    let edit = h.state_mut().1.drain(..).flatten().next().expect("an edit");
    assert!(edit.changed);
    assert_eq!(edit.config.cache.ways, 1);
    assert_eq!(edit.preset, "fermi-16k (edited)");
    // The panel changed a copy: what it was given is untouched.
    assert_eq!(h.state().0, start);
}

#[test]
fn switching_kernels_in_the_generator_keeps_the_size_they_share() {
    let mut h = harness(app("matmul", "n=128 block=16,16"));
    settle(&mut h);
    click(&mut h, "Kernel");
    click(&mut h, "matmul-tiled");
    assert_eq!(h.state().settings.generator_params, "n=128 tile=16");
    click(&mut h, "Kernel");
    click(&mut h, "matmul");
    assert_eq!(h.state().settings.generator_params, "n=128 block=16,16");
}
