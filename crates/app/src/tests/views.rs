//! What the views draw, checked on their data and on screen: the timing model's misses and
//! stores, legends and colour scales.
use crate::data::Outcome;
use crate::theme;
use crate::views::misses::{self as miss_view, Per};
use crate::views::{timing_result, View};
use egui_kittest::kittest::Queryable;
use warpscope_core::config;

use super::support;
use support::*;

#[test]
fn the_timing_view_keeps_stores_and_gives_each_miss_its_meaning() {
    let t = trace("matmul", &[("n", "32")]);
    let cfg = config::preset("gtx470-16k").unwrap();
    let d = simulate(t.clone(), cfg.clone());
    // Stores bypass the L1: a row of their own, no requests, and a note saying so.
    let rows = d.miss_tables.rows(Per::Instruction);
    let names: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(names, ["ld_A", "ld_B", "st_C"]);
    let st = &rows[2];
    // The stores, coalesced into 64 requests, go to memory.
    assert_eq!((st.requests, st.misses, st.bypassed), (0, 0, 64));
    assert_eq!(d.report.totals.writes, 64);
    assert!(miss_view::store_note(&d)
        .unwrap()
        .starts_with("64 store requests bypassed the L1"));
    // Per instruction, the five classes of the report, adding up to the misses.
    for r in &rows {
        assert_eq!(r.classes.reads.iter().sum::<u64>(), r.misses, "{}", r.label);
    }
    assert!(rows[1].classes.reads[3] > 0, "ld_B has latency misses");
    let columns: Vec<&str> = miss_view::class_columns(&d).iter().map(|c| c.0).collect();
    assert_eq!(
        columns,
        ["compulsory", "capacity", "conflict", "latency", "MSHR"]
    );
    // An unclassified miss is not drawn in the colour of a latency miss.
    assert_ne!(theme::outcome(Outcome::Miss), theme::LATENCY);
    // Each request says what it saw; ld_B's repeated lines are in flight (latency misses).
    let p = &d.points;
    let mut saw = [false; 3];
    for i in 0..p.len() {
        if p.outcome(i) == Outcome::Hit {
            continue;
        }
        let distance = (p.reuse[i] != u32::MAX).then_some(p.reuse[i]);
        let text = timing_result(false, p.in_flight(i), distance, 4);
        saw[0] |= text.contains("a latency miss");
        saw[1] |= text.contains("first use");
        saw[2] |= text == "miss";
    }
    assert!(saw[0] && saw[1] && !saw[2], "{saw:?}");
    assert_eq!(
        timing_result(false, false, Some(4), 4),
        "miss: 4 other lines used in its set since, at least its 4 ways (evicted)"
    );

    // On screen: the store note and the store row.
    let mut a = app("matmul", "n=32");
    a.set_config(0, "gtx470-16k", cfg, 0.0);
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    h.get_by_label_contains("64 store requests bypassed the L1");
    h.get_by_label("st_C");
    // In the totals chart's legend and as a table column.
    assert_eq!(h.query_all_by_label("stores past the L1").count(), 2);
}

#[test]
fn a_density_pixel_with_misses_is_not_drawn_as_all_hits() {
    use crate::raster::{miss_share_colour, rasterize, ColourBy, View as RasterView};
    let t = trace("matmul", &[("n", "32")]);
    let d = simulate(t.clone(), config::preset("fermi-16k").unwrap());
    let p = &d.points;
    // Requests up to the last hit: the last one drawn into the pixel is a hit.
    let last = (0..p.len())
        .rev()
        .find(|&i| p.outcome(i) == Outcome::Hit)
        .unwrap();
    let first_miss = (0..last).find(|&i| p.outcome(i) != Outcome::Hit).unwrap();
    assert!(d.x(first_miss) < d.x(last));
    // One pixel holds them all: its colour is their miss share, not the last request's.
    let view = RasterView {
        x: [0.0, d.x(last) + 0.5],
        y: [-1.0, t.segments.height() + 1.0],
        width: 1,
        height: 1,
        colour: ColourBy::Outcome,
        only: None,
    };
    let (img, in_view) = rasterize(&d, &view);
    let drawn: Vec<usize> = d.visible(view.x[0], view.x[1]).collect();
    assert_eq!(in_view as usize, drawn.len());
    let misses = drawn
        .iter()
        .filter(|&&i| p.outcome(i) != Outcome::Hit)
        .count();
    let last_miss = drawn
        .iter()
        .rev()
        .map(|&i| p.outcome(i))
        .find(|&o| o != Outcome::Hit)
        .unwrap();
    let px = img.pixels[0];
    let hit = theme::outcome(Outcome::Hit);
    let alpha = px.a();
    let share = misses as f32 / in_view as f32;
    let want = miss_share_colour(hit, theme::outcome(last_miss), share);
    let unmul =
        |c: egui::Color32| egui::Color32::from_rgba_unmultiplied(c.r(), c.g(), c.b(), alpha);
    assert_eq!(px, unmul(want));
    assert_ne!(px, unmul(hit));
}

#[test]
fn every_colouring_has_a_legend_and_the_heatmaps_have_scales() {
    use crate::raster::ColourBy;
    use crate::views::{colour_legend, set_label, set_marks};
    let t = trace("matmul", &[("n", "64")]);
    let d = simulate(t.clone(), config::preset("fermi-16k").unwrap());
    // By instruction: one swatch per instruction, named, in its colour.
    let (entries, note) = colour_legend(&d, ColourBy::Instruction);
    let names: Vec<&str> = entries.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(names, ["ld_A", "ld_B", "st_C"]);
    assert_eq!(entries[1].0, theme::category(1));
    assert!(note.is_none());
    // By CTA: 16 CTAs, more than the palette: the note says colours repeat.
    let (entries, note) = colour_legend(&d, ColourBy::Cta);
    assert_eq!(entries.len(), theme::PALETTE_LEN);
    assert_eq!(entries[3].1, "CTA 3");
    assert!(note.unwrap().contains("modulo 12"));
    for by in ColourBy::ALL {
        assert!(!colour_legend(&d, by).0.is_empty(), "{by:?}");
    }
    // The set axis: labels at row centres only, marks inside the rows.
    assert_eq!(set_label(0.5), "0");
    assert_eq!(set_label(31.5), "31");
    assert_eq!(set_label(1.0), "");
    assert_eq!(set_label(-0.5), "");
    let marks: Vec<f64> = set_marks((-1.0, 33.0), 32.0, 4.0)
        .iter()
        .map(|m| m.value)
        .collect();
    assert_eq!(marks, [0.5, 4.5, 8.5, 12.5, 16.5, 20.5, 24.5, 28.5]);

    // On screen: the Sets view and the communication view carry colour scales.
    let mut a = app("matmul", "n=64");
    a.settings.view = View::Sets;
    let mut h = harness(a);
    settle(&mut h);
    h.get_by_label("accesses per cell (log scale)");
    h.state_mut().settings.colour = ColourBy::Instruction;
    h.state_mut().settings.view = View::Address;
    h.run_steps(3);
    h.get_by_label("ld_B");
}

#[test]
fn hovering_follows_the_same_access_across_panes() {
    use crate::views::linked_request;
    let t = trace("matmul", &[("n", "32")]);
    let rr = config::preset("fermi-16k").unwrap();
    let mut gto = rr.clone();
    gto.schedule.policy = config::IssuePolicy::Gto;
    let (a, b) = (simulate(t.clone(), rr), simulate(t.clone(), gto));
    let (p, q) = (&a.points, &b.points);
    assert_eq!(p.len(), q.len());
    let mut hit = vec![false; q.len()];
    let mut moved = 0;
    for i in 0..p.len() {
        let j = linked_request(&a, i, &b).expect("the same access");
        assert_eq!(
            (p.kernel[i], p.cta[i], p.warp[i], p.inst[i], p.line[i]),
            (q.kernel[j], q.cta[j], q.warp[j], q.inst[j], q.line[j])
        );
        assert!(!hit[j], "two requests linked to request {j}");
        hit[j] = true;
        moved += (i != j) as usize;
    }
    // GTO issues in another order: following by position would pick other requests.
    assert!(moved > p.len() / 2, "{moved} of {}", p.len());
    // With another line size, the line holding the same bytes.
    let mut wide = config::preset("fermi-16k").unwrap();
    wide.cache.line_bytes = 256;
    wide.cache.sector_bytes = 256;
    let c = simulate(t, wide);
    let j = linked_request(&a, 5, &c).unwrap();
    assert_eq!(c.points.line[j], p.line[5] * 128 / 256);
    assert_eq!(c.points.inst[j], p.inst[5]);
    // Looked up a few requests at a time (as a page's job does): the same answers.
    for (src, dst) in [(&a, &b), (&a, &c), (&c, &a)] {
        for i in (0..src.points.len()).step_by(97) {
            let mut linking = crate::views::Linking::new(i);
            let mut pieces = 0;
            let found = loop {
                pieces += 1;
                if let Some(found) = linking.step(src, dst, 5) {
                    break found;
                }
            };
            assert_eq!(found, linked_request(src, i, dst), "request {i}");
            assert!(pieces > 1);
        }
    }
}

#[test]
fn narrow_log_axes_keep_evenly_spaced_labels() {
    use crate::views::integer_marks;
    let marks = |lo: f64, hi: f64, base: f64| -> Vec<f64> {
        integer_marks(egui_plot::GridInput {
            bounds: (lo, hi),
            base_step_size: base,
        })
        .iter()
        .map(|m| m.value)
        .collect()
    };
    // Wide: every bin. Narrow: every 2nd or 4th bin, never just the two ends. (base_step_size
    // is 8 points in plot units; labels need about 80 points.)
    assert_eq!(marks(-0.5, 6.5, 0.05), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let every_2nd = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0];
    assert_eq!(marks(-0.5, 12.5, 0.15), every_2nd);
    assert_eq!(marks(-0.5, 16.5, 0.35), [0.0, 4.0, 8.0, 12.0, 16.0]);
}

#[test]
fn the_instruction_table_gives_coalescing_and_traffic_per_instruction() {
    let t = trace("matmul", &[("n", "32")]);
    let cfg = config::preset("fermi-16k").unwrap();
    let d = simulate(t.clone(), cfg.clone());
    let rows = d.miss_tables.rows(Per::Instruction);
    let tot = &d.report.totals;
    assert_eq!(rows.iter().map(|r| r.accesses).sum::<u64>(), tot.accesses);
    assert_eq!(
        rows.iter().map(|r| r.bytes_in).sum::<u64>(),
        tot.bytes_from_memory
    );
    assert_eq!(
        rows.iter().map(|r| r.bytes_out).sum::<u64>(),
        tot.bytes_to_memory
    );
    // A 16 x 16 block: a warp reads B along a row, 32 threads over two 64-byte halves of lines.
    let ld_b = rows.iter().find(|r| r.label == "ld_B").unwrap();
    assert!(ld_b.accesses_per_request() >= 16.0, "{ld_b:?}");
    assert_eq!(ld_b.transactions_per_request(), 1.0);
    // Without coalescing every access is its own request.
    let mut none = cfg;
    none.coalescing = config::Coalescing::None;
    let d = simulate(t.clone(), none);
    for r in d.miss_tables.rows(Per::Instruction) {
        assert_eq!(r.accesses_per_request(), 1.0, "{r:?}");
    }
    // On screen, with Nsight Compute's names in the hovers.
    let mut a = app("matmul", "n=32");
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    h.get_by_label("accesses / request");
    h.get_by_label("transactions / request");
}

#[test]
fn clicking_an_instruction_limits_the_address_view_to_it() {
    use crate::raster::{rasterize, ColourBy, View as RasterView};
    let mut a = app("matmul", "n=32");
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    click(&mut h, "ld_B");
    let f = h.state().only.clone().expect("an instruction chosen");
    assert_eq!((f.kernel, f.inst, f.name.as_str()), (0, 1, "ld_B"));
    h.state_mut().settings.view = View::Address;
    h.run_steps(3);
    h.get_by_label_contains("Only instruction ld_B");
    // A raster of the filtered view holds exactly that instruction's requests.
    let d = h.state().panes[0].result.clone().unwrap();
    let t = h.state().trace.clone().unwrap();
    let view = RasterView {
        x: [0.0, d.x_end() + 1.0],
        y: [-1.0, t.segments.height() + 1.0],
        width: 64,
        height: 64,
        colour: ColourBy::Outcome,
        only: Some((0, 1)),
    };
    let ld_b = (0..d.points.len())
        .filter(|&i| d.points.inst[i] == 1)
        .count();
    assert_eq!(rasterize(&d, &view).1 as usize, ld_b);
    click(&mut h, "Show all");
    assert!(h.state().only.is_none());
}

#[test]
fn the_miss_rate_over_time_adds_up_per_instruction_and_per_sm() {
    let t = trace("matmul", &[("n", "64")]);
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = config::SmSelection::All;
    let d = simulate(t, cfg);
    let by_inst = &d.inst_over_time;
    let mut labels: Vec<&str> = by_inst.series.iter().map(|s| s.label.as_str()).collect();
    labels.sort_unstable();
    assert_eq!(labels, ["ld_A", "ld_B", "st_C"]);
    for s in &by_inst.series {
        let row = d
            .report
            .instructions
            .iter()
            .find(|r| r.name == s.label)
            .unwrap();
        let sum = |v: &[u32]| v.iter().map(|&x| x as u64).sum::<u64>();
        assert_eq!(sum(&s.requests), row.counters.requests, "{}", s.label);
        assert_eq!(sum(&s.misses), row.counters.misses, "{}", s.label);
        assert_eq!(s.key, row.inst);
        assert!(s.rates().iter().all(|r| (0.0..=100.0).contains(&r[1])));
    }
    // Per SM: every simulated SM with requests (the busiest eight).
    let sms = &d.sm_over_time.series;
    assert_eq!(
        sms.len(),
        d.report
            .sms
            .iter()
            .filter(|s| s.counters.requests > 0)
            .count()
            .min(8)
    );
    let total: u64 = sms
        .iter()
        .flat_map(|s| &s.requests)
        .map(|&x| x as u64)
        .sum();
    assert!(total <= d.report.totals.requests);

    let mut a = app("matmul", "n=32");
    a.settings.view = View::Sets;
    let mut h = harness(a);
    settle(&mut h);
    h.get_by_label("Miss rate over time");
    click(&mut h, "per SM");
}

/// A trace with source lines (Accel-Sim `-lineinfo`) gets a table per source line; one
/// without lines does not offer it.
#[test]
fn a_trace_with_line_info_shows_misses_per_source_line() {
    let sample = crate::tests::support::sample("accelsim-lineinfo");
    let mut a = crate::WarpscopeApp::new(
        crate::Settings::default(),
        crate::Startup {
            file: Some(sample),
            fresh: true,
            generator: None,
            window: None,
            sweep: None,
            stream: false,
            shot_streamed: None,
            jobs: 0,
        },
        std::sync::Arc::new(|| {}),
    );
    a.in_app_dialogs = true;
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    // Instruction rows name their line; the hover of a request does too (data checked).
    h.get_by_label("STG.E@00d0 (line 9)");
    click(&mut h, "per source line");
    for l in ["line 6", "line 7", "line 8", "line 9"] {
        h.get_by_label(l);
    }
    let d = h.state().panes[0].result.clone().unwrap();
    let rows = d.miss_tables.rows(Per::SourceLine);
    let by_inst = d.miss_tables.rows(Per::Instruction);
    assert_eq!(rows.len(), 4);
    // One instruction per line here: each line's row is its instruction's row, classes too.
    for (l, i) in rows.iter().zip(&by_inst) {
        assert_eq!(
            (l.requests, l.misses, l.classes, l.bytes_in),
            (i.requests, i.misses, i.classes, i.bytes_in),
            "{}",
            l.label
        );
        assert_eq!(
            l.classes.reads.iter().sum::<u64>() + l.classes.writes.iter().sum::<u64>(),
            l.misses
        );
    }
    // The transposed store of line 9 misses on every request.
    assert_eq!(rows[3].misses, rows[3].requests);

    let mut a = app("matmul", "n=32");
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    assert!(h.query_by_label("per source line").is_none());
}

#[test]
fn a_raster_job_draws_what_rasterize_draws_and_stops_when_cancelled() {
    use crate::job::{JobError, Progress};
    use crate::raster::{draw, rasterize, ColourBy, Placement, RasterRequest, View as RasterView};
    let t = trace("matmul", &[("n", "32")]);
    let d = simulate(t.clone(), config::preset("fermi-16k").unwrap());
    let view = RasterView {
        x: [0.0, d.x(d.points.len() - 1) + 1.0],
        y: [-1.0, t.segments.height() + 1.0],
        width: 64,
        height: 48,
        colour: ColourBy::Outcome,
        only: None,
    };
    let want = rasterize(&d, &view);
    let request = {
        let d = d.clone();
        move || RasterRequest {
            generation: 7,
            view,
            data: d.clone(),
            placement: Placement::of(3, &d),
        }
    };
    // A part of the requests at a time, as the job takes them: the same picture.
    assert!(want.1 > 100, "{} requests in view", want.1);
    assert_eq!(crate::raster::rasterize_in_parts(&d, &view, 7), want);
    let wake: crate::job::Wake = std::sync::Arc::new(|| {});
    let r2 = request.clone();
    let mut job = crate::sliced::Slices::job("raster", &wake, draw(r2()));
    let r = job
        .wait(std::time::Duration::from_secs(60))
        .unwrap()
        .unwrap();
    assert_eq!((r.image, r.generation), (want.0, 7));
    assert_eq!(
        r.placement,
        Placement::of(3, &d),
        "it comes back with its placement"
    );
    let cancelled = Progress::default();
    cancelled.cancel();
    assert_eq!(
        draw(request())(&cancelled).map(|r| r.err()),
        Some(Some(JobError::Cancelled))
    );
}

/// Steps `h` until `done` holds of its state (the views' jobs run on their own threads).
fn step_until<S>(h: &mut egui_kittest::Harness<'_, S>, what: &str, done: impl Fn(&S) -> bool) {
    let start = std::time::Instant::now();
    while !done(h.state()) {
        assert!(start.elapsed().as_secs() < 60, "{what}: not within 60 s");
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// A wake for views drawn outside the app (the harness steps on its own).
fn no_wake() -> crate::job::Wake {
    std::sync::Arc::new(|| {})
}

#[test]
fn a_view_looks_up_a_linked_request_once_and_keeps_its_answer() {
    use crate::raster::ColourBy;
    use crate::views::{
        linked_request, AddressView, LinkedHover, PaneCx, PaneView, Polled, SetMetric,
    };
    let t = trace("matmul", &[("n", "32")]);
    let rr = config::preset("fermi-16k").unwrap();
    let mut gto = rr.clone();
    gto.schedule.policy = config::IssuePolicy::Gto;
    let (a, b) = (simulate(t.clone(), rr), simulate(t.clone(), gto));
    let (ta, tb) = (t.clone(), b.clone());
    let hovered = LinkedHover {
        pane: 0,
        generation: 1,
        request: 5,
        data: a.clone(),
    };
    let wake = no_wake();
    let mut h = egui_kittest::Harness::new_ui_state(
        move |ui, view: &mut AddressView| {
            let cx = PaneCx {
                pane: 1,
                generation: 2,
                run: 2,
                data: &tb,
                trace: &ta,
                link: egui::Id::unique("test-link"),
                colour: ColourBy::Outcome,
                set_metric: SetMetric::Accesses,
                miss: Default::default(),
                linked_hover: Some(hovered.clone()),
                only: None,
                wake: &wake,
            };
            view.ui(ui, &cx);
            view.poll(&Polled {
                generation: 2,
                run: 2,
                data: Some(&tb),
                trace: None,
            });
        },
        AddressView::default(),
    );
    step_until(&mut h, "the linked request", |v| v.linked().is_some());
    // The same access in the other pane's result, found off the UI thread.
    let found = linked_request(&a, 5, &b);
    assert!(found.is_some());
    assert_eq!(h.state().linked(), Some(((0, 1, 5, 2), found)));
    // Not looked up again while the hover stays (once its raster is drawn, nothing runs).
    step_until(&mut h, "the raster", |v| !v.busy());
    h.run_steps(3);
    assert!(!h.state().busy());
    assert_eq!(h.state().linked(), Some(((0, 1, 5, 2), found)));
}

#[test]
fn a_failed_communication_analysis_waits_to_be_asked_again() {
    use crate::views::CommView;
    let t = trace("hotspot", &[]);
    let id = crate::pane_trace::trace_id(&t);
    let wake = no_wake();
    let mut h = egui_kittest::Harness::new_ui_state(
        move |ui, view: &mut CommView| view.show(ui, &t, &wake),
        {
            let mut v = CommView::default();
            v.for_trace = Some(id);
            v.failed = Some("the launches have too many CTAs".into());
            v
        },
    );
    h.run_steps(3);
    // Not started again frame after frame: the failure is shown instead.
    assert!(!h.state().analyzing());
    h.get_by_label_contains("The communication analysis failed: the launches have too many CTAs");
    h.get_by_label("Analyze again").click();
    h.run_steps(1);
    assert!(h.state().analyzing());
    assert!(h.state().failed.is_none());
}

#[test]
fn the_performance_view_measures_once_shows_the_verdict_and_its_occupancy_slider_moves_the_point() {
    use crate::raster::ColourBy;
    use crate::views::performance::measure;
    use crate::views::{PaneCx, PaneView, PerformanceView, Polled, SetMetric};
    let t = trace("vecadd", &[("n", "65536"), ("block", "128")]);
    let data = simulate(t.clone(), config::preset("fermi-16k").unwrap());
    let (tt, dd) = (t.clone(), data.clone());
    let wake = no_wake();
    let mut h = egui_kittest::Harness::builder()
        .with_size([900.0, 900.0])
        .build_ui_state(
            move |ui, view: &mut PerformanceView| {
                let cx = PaneCx {
                    pane: 0,
                    generation: 1,
                    run: 1,
                    data: &dd,
                    trace: &tt,
                    link: egui::Id::unique("test-link"),
                    colour: ColourBy::Outcome,
                    set_metric: SetMetric::Accesses,
                    miss: Default::default(),
                    linked_hover: None,
                    only: None,
                    wake: &wake,
                };
                view.ui(ui, &cx);
                view.poll(&Polled {
                    generation: 1,
                    run: 1,
                    data: Some(&dd),
                    trace: None,
                });
            },
            PerformanceView::default(),
        );
    h.run_steps(1);
    // It says it is measuring, on its own thread.
    assert!(h.state().waiting());
    h.get_by_label_contains("Measuring the model's inputs");
    step_until(&mut h, "the measurement", |v| !v.waiting());
    // Measured once: nothing runs in the frames after.
    h.run_steps(2);
    assert!(!h.state().busy() && !h.state().waiting());
    let gt200 = warpscope_core::analyze::gt200;
    let m = to_end(measure(t.clone(), gt200()), &Default::default()).unwrap();
    let measured = m[0].1.as_ref().unwrap();
    let a = warpscope_core::analyze::analyze(&measured.inputs, &warpscope_core::analyze::gt200())
        .unwrap();
    let verdict = if a.memory_bound {
        "memory-bound"
    } else {
        "compute-bound"
    };
    assert!(
        h.query_all_by_label(verdict).count() >= 2,
        "headline and what-ifs"
    );
    h.get_by_label_contains(&format!("{:.4} ms", a.milliseconds));
    assert_eq!(
        h.query_all_by_label("active blocks per SM").count(),
        2,
        "slider and input"
    );
    h.get_by_label("Reset to gt200");
    h.get_by_label_contains("twice the active blocks per SM");
    // Cancelled, the measurement stops in its timing-model run (which looks every 4096 warp
    // instructions: the column copy issues 16384 on SM 0) and says so.
    let cancelled = crate::job::Progress::default();
    cancelled.cancel();
    let big = trace("column-copy", &[("threads", "256"), ("width", "1024")]);
    assert_eq!(
        to_end(measure(big, gt200()), &cancelled).err(),
        Some(crate::job::JobError::Cancelled)
    );
    // One block per SM instead of the measured eight: a slower prediction.
    assert_eq!(measured.inputs.active_blocks_per_sm, 8);
    h.state_mut().set_active_blocks(Some(1));
    h.run_steps(2);
    let one = warpscope_core::analyze::analyze(
        &warpscope_core::analyze::KernelInputs {
            active_blocks_per_sm: 1,
            ..measured.inputs.clone()
        },
        &warpscope_core::analyze::gt200(),
    )
    .unwrap();
    assert!(one.milliseconds > a.milliseconds);
    h.get_by_label_contains(&format!("{:.4} ms", one.milliseconds));
}

/// The CTA table on screen, sorted by a column: its rows, made from the compact table as they
/// are drawn, come in that column's order (descending, ties last row first), and every CTA's
/// label is there.
#[test]
fn the_cta_table_on_screen_sorts_its_rows_by_a_column() {
    let mut a = app("matmul", "n=128 block=16,16");
    a.settings.view = View::Misses;
    let mut h = harness(a);
    settle(&mut h);
    click(&mut h, "per CTA");
    let d = h.state().panes[0].result.clone().expect("a result");
    let rows = d.miss_tables.rows(Per::Cta);
    assert!(rows.len() >= 3, "{} rows", rows.len());
    // Shown top to bottom: the labels' places in the table (below its header).
    let header = h.get_by_label("misses").rect().bottom();
    let shown = |h: &egui_kittest::Harness<'static, crate::WarpscopeApp>| {
        let mut at: Vec<(f32, String)> = rows
            .iter()
            .map(|r| {
                let y = h
                    .query_all_by_label(&r.label)
                    .map(|n| n.rect().top())
                    .filter(|&y| y > header)
                    .fold(f32::NAN, f32::min);
                (y, r.label.clone())
            })
            .collect();
        assert!(at.iter().all(|(y, _)| y.is_finite()), "{at:?}");
        at.sort_by(|a, b| a.0.total_cmp(&b.0));
        at.into_iter().map(|(_, l)| l).collect::<Vec<_>>()
    };
    let labels =
        |order: &[usize]| -> Vec<String> { order.iter().map(|&i| rows[i].label.clone()).collect() };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    assert_eq!(shown(&h), labels(&order));
    click(&mut h, "misses");
    order.sort_by_key(|&i| rows[i].misses);
    order.reverse();
    assert_ne!(
        order,
        (0..rows.len()).collect::<Vec<_>>(),
        "the order changes"
    );
    assert_eq!(shown(&h), labels(&order));
}

/// Runs a job's pieces to the end on this thread.
fn to_end<T>(
    mut piece: impl FnMut(&crate::job::Progress) -> Option<T>,
    p: &crate::job::Progress,
) -> T {
    loop {
        if let Some(done) = piece(p) {
            return done;
        }
    }
}
