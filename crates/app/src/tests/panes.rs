//! Flows with several panes and with configurations that change under them: every pane shows
//! its own current result, and a pane whose configuration cannot run says so.
use std::time::{Duration, Instant};

use crate::views::AddressView;
use crate::WarpscopeApp;
use egui_kittest::kittest::Queryable;
use warpscope_core::config;

use super::support;
use support::*;

/// A configuration whose address view draws a density raster (more requests than markers).
fn raster_config() -> config::SimConfig {
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.coalescing = config::Coalescing::None;
    cfg.gpu.simulate = config::SmSelection::All;
    cfg.cache.set_index = config::SetIndex::Modulo;
    cfg
}

/// Whether every pane shows a raster drawn from its newest result.
fn every_raster_current(a: &WarpscopeApp) -> bool {
    a.idle()
        && a.panes.iter().all(|p| {
            !p.stale
                && p.result.is_some()
                && p.view::<AddressView>()
                    .unwrap()
                    .texture
                    .as_ref()
                    .is_some_and(|t| t.generation == p.generation)
        })
}

#[test]
fn after_a_change_every_pane_gets_a_raster_of_its_own_new_result() {
    let mut a = app("vecadd", "n=40000");
    let cfg = raster_config();
    a.set_config(0, "test", cfg.clone(), 0.0);
    a.add_pane(0.0);
    a.add_pane(0.0);
    let mut h = harness(a);
    step_until(
        &mut h,
        "not every pane drew its raster",
        every_raster_current,
    );
    for round in 0..3 {
        // Change every pane at once, as loading a new trace or a shared setting does.
        let now = h.ctx.input(|i| i.time);
        let before: Vec<u64> = h.state().panes.iter().map(|p| p.generation).collect();
        for pane in 0..3 {
            let mut c = cfg.clone();
            c.cache.ways = 1 << ((pane + round) % 4);
            h.state_mut().set_config(pane, "test", c, now);
        }
        step_until(
            &mut h,
            "a pane kept an old raster or none",
            every_raster_current,
        );
        for (p, b) in h.state().panes.iter().zip(before) {
            assert!(p.generation > b);
        }
    }
    // Generations are unique across panes, so a raster cannot land on the wrong one.
    let mut g: Vec<u64> = h.state().panes.iter().map(|p| p.generation).collect();
    g.dedup();
    assert_eq!(g.len(), 3);
}

#[test]
fn an_invalid_configuration_shows_its_error_and_marks_the_last_valid_result() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    let valid = h.state().panes[0].result.as_ref().unwrap().report.clone();
    let good = h.state().settings.panes[0].1.clone();
    let mut cfg = good.clone();
    cfg.cache.line_bytes = 96;
    let now = h.ctx.input(|i| i.time);
    h.state_mut().set_config(0, "test", cfg, now);
    let start = Instant::now();
    while h.state().panes[0].error.is_none() {
        h.step();
        assert!(start.elapsed() < Duration::from_secs(30), "no error shown");
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(3);
    let p = &h.state().panes[0];
    assert!(!p.stale, "nothing runs, so nothing is updating");
    assert!(p.sim.is_none());
    assert_eq!(
        p.result.as_ref().unwrap().report.totals.requests,
        valid.totals.requests
    );
    assert!(h
        .query_all_by_label_contains("stale, updating")
        .next()
        .is_none());
    h.get_by_label_contains("This configuration is not valid: line size 96");
    h.get_by_label_contains("the last valid result (16 KiB");
    // Fixing it runs again and clears the marks.
    let now = h.ctx.input(|i| i.time);
    h.state_mut().set_config(0, "test", good, now);
    settle(&mut h);
    assert!(
        h.state().panes[0].error.is_none(),
        "{:?}",
        h.state().panes[0].error
    );
    assert!(h
        .query_all_by_label_contains("the last valid result")
        .next()
        .is_none());
}

#[test]
fn cancelling_a_generator_stops_it_and_keeps_the_current_trace() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    // 16.8 M accesses: long enough to cancel while it runs.
    h.state_mut().max_generated_accesses = None;
    h.state_mut().generate("matmul".into(), "n=256".into());
    h.step();
    let running = h.state().running();
    assert_eq!(running.len(), 1);
    running[0].1.cancel();
    let start = Instant::now();
    step_until(&mut h, "the generator did not stop", |a| a.idle());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(trace_label(&h).starts_with("vecadd"), "{}", trace_label(&h));
    h.get_by_label_contains("Cancelled: the current trace stays");
}

#[test]
fn a_trace_that_will_not_fit_is_not_generated_until_the_user_says_so() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    h.state_mut().max_generated_accesses = Some(1_000_000);
    h.state_mut().generate("matmul".into(), "n=256".into());
    step_until(&mut h, "no question", |a| a.too_large.is_some());
    let q = h.state().too_large.clone().unwrap();
    // 256 x 256 threads, 2 x 256 loads and a store each.
    assert_eq!(q.projected, 256 * 256 * 513);
    assert!(trace_label(&h).starts_with("vecadd"));
    h.get_by_label("This trace will not fit in memory");
    click(&mut h, "Keep the current trace");
    assert!(h.state().too_large.is_none());
    assert!(trace_label(&h).starts_with("vecadd"));
    // Asked again, the user goes ahead: the whole trace is generated.
    h.state_mut().max_generated_accesses = Some(1_000);
    h.state_mut().generate("matmul".into(), "n=32".into());
    step_until(&mut h, "no question", |a| a.too_large.is_some());
    click(&mut h, "Generate anyway");
    settle(&mut h);
    assert!(trace_label(&h).starts_with("matmul"), "{}", trace_label(&h));
    assert_eq!(h.state().trace.as_ref().unwrap().accesses, 32 * 32 * 65);
    // A kernel for one pane asks the same question, and going ahead gives it to that pane only.
    h.state_mut().add_pane(0.0);
    settle(&mut h);
    h.state_mut()
        .generate_in_pane(1, "matmul-tiled".into(), "n=32 tile=16".into());
    step_until(&mut h, "no question", |a| a.too_large.is_some());
    assert_eq!(h.state().too_large.as_ref().unwrap().pane, Some(1));
    click(&mut h, "Generate anyway");
    step_until(&mut h, "pane 2's own trace", |a| {
        a.panes[1].own_trace.is_some()
    });
    settle(&mut h);
    assert!(trace_label(&h).starts_with("matmul n=32"));
    assert!(h
        .state()
        .pane_trace(1)
        .unwrap()
        .label
        .starts_with("matmul-tiled"));
}

#[test]
fn four_panes_at_1280x800_each_get_a_cell_of_their_own() {
    use crate::views::View;
    let mut a = app("matmul", "n=64");
    for _ in 0..3 {
        a.add_pane(0.0);
    }
    let mut h = egui_kittest::Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), a);
    settle(&mut h);
    for view in [View::Address, View::Misses, View::Reuse, View::Sets] {
        h.state_mut().settings.view = view;
        h.run_steps(4);
        let rects = h.state().pane_rects.clone();
        let area = h.state().view_rect;
        assert_eq!(rects.len(), 4, "{view:?}");
        for (i, r) in rects.iter().enumerate() {
            // A 2 x 2 grid: every cell inside the view, at least 400 x 250, none overlapping.
            assert!(
                area.expand(1.0).contains_rect(*r),
                "{view:?} pane {i}: {r:?} in {area:?}"
            );
            assert!(
                r.width() >= 400.0 && r.height() >= 250.0,
                "{view:?} pane {i}: {r:?}"
            );
            for o in &rects[i + 1..] {
                assert!(
                    r.intersect(*o).area() < 1.0,
                    "{view:?}: {r:?} overlaps {o:?}"
                );
            }
            // Its header is drawn inside its cell.
            // (the side panel has a "Pane i" button too).
            let header = h
                .query_all_by_label(&format!("Pane {}", i + 1))
                .map(|n| n.rect())
                .find(|r| r.left() >= area.left() - 1.0)
                .expect("a pane header");
            assert!(
                r.expand(1.0).contains_rect(header),
                "{view:?} pane {i}: {header:?}"
            );
        }
    }
}

#[test]
fn save_dialogs_never_start_in_a_folder_that_cannot_be_written() {
    use crate::files::{writable, Purpose};
    let mut a = app("vecadd", "n=256");
    // A trace opened from a read-only place (even root cannot create files in /proc).
    let read_only = std::path::PathBuf::from("/proc");
    assert!(!writable(&read_only));
    a.settings.last_dir = Some(read_only.clone());
    assert_eq!(a.start_dir(Purpose::OpenTrace), read_only);
    for p in [
        Purpose::SaveConfig,
        Purpose::ExportReport,
        Purpose::ExportRequests,
        Purpose::ExportView,
    ] {
        let d = a.start_dir(p);
        assert_ne!(d, read_only);
        assert!(writable(&d), "{p:?}: {}", d.display());
    }
}

#[test]
fn a_truncated_file_can_be_opened_keeping_its_complete_kernels() {
    // A three-launch trace, its last launch cut short.
    let t = trace("hotspot", &[("nx", "32"), ("ny", "32"), ("steps", "3")]);
    assert_eq!(t.trace.kernels.len(), 3);
    let mut bytes = Vec::new();
    warpscope_core::trace::binary::write(&t.trace, &mut bytes).unwrap();
    let dir = std::env::temp_dir().join(format!("warpscope-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.wsb");
    // Cut inside the last kernel's rows (before the index the end record points to).
    let index_at = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap()) as usize;
    std::fs::write(&path, &bytes[..index_at - 12]).unwrap();

    let mut h = harness(app("vecadd", "n=256"));
    settle(&mut h);
    h.state_mut().open(path.clone());
    step_until(&mut h, "the load did not fail", |a| a.failed_file.is_some());
    // The current trace stays; the error names the file; the app offers the complete kernels.
    assert!(trace_label(&h).starts_with("vecadd"));
    click(&mut h, "Keep its complete kernels");
    settle(&mut h);
    let d = h.state().trace.clone().unwrap();
    assert_eq!(d.label, "cut.wsb (complete kernels only)");
    assert_eq!(d.trace.kernels.len(), 2);
    assert!(
        d.truncated.as_ref().unwrap().contains("cut.wsb"),
        "{:?}",
        d.truncated
    );
    h.get_by_label_contains("Only the complete kernels before an error");
    assert!(h.state().failed_file.is_none());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_differences_of_two_set_index_functions_read_as_words() {
    use crate::central::differences;
    let a = config::preset("fermi-16k").unwrap();
    let mut b = a.clone();
    b.cache.set_index = config::SetIndex::Modulo;
    let mut c = a.clone();
    c.cache.set_index = config::SetIndex::Bits(vec![7, 8, 9, 10, 11]);
    let d = differences(&[&b, &c]);
    assert_eq!(d[0], ["set index modulo"], "{d:?}");
    assert_eq!(d[1], ["set index bits [7,8,9,10,11]"], "{d:?}");
    assert!(!d
        .concat()
        .iter()
        .any(|s| s.contains("off") || s.contains("none")));
}

#[test]
fn the_timing_model_on_in_one_pane_only_is_one_difference() {
    use crate::central::differences;
    let off = config::preset("fermi-16k").unwrap();
    let mut on = off.clone();
    on.timing = Some(config::TimingConfig::default());
    let d = differences(&[&off, &on]);
    assert_eq!(d[0], ["timing off"], "{d:?}");
    assert_eq!(d[1], ["timing on"], "{d:?}");
    // Two panes with the model and one without: what the two differ in is named too.
    let mut slow = on.clone();
    slow.timing.as_mut().unwrap().mshrs = 8;
    let d = differences(&[&off, &on, &slow]);
    assert_eq!(d[0], ["timing off"], "{d:?}");
    assert_eq!(d[1], ["timing on", "timing mshrs 64"], "{d:?}");
    assert_eq!(d[2], ["timing on", "timing mshrs 8"], "{d:?}");
    assert!(d.concat().iter().all(|s| !s.contains("null")), "{d:?}");
    // No limit on the misses in flight reads as such, not as "mshrs 0".
    slow.timing.as_mut().unwrap().mshrs = 0;
    let d = differences(&[&on, &slow]);
    assert_eq!(d[1], ["mshrs unlimited"], "{d:?}");
}

#[test]
fn an_l2_in_one_pane_only_is_one_difference_and_its_settings_say_l2() {
    use crate::central::differences;
    let with = config::preset("fermi-16k").unwrap();
    let mut without = with.clone();
    without.l2 = None;
    let d = differences(&[&with, &without]);
    assert_eq!(d[0], ["L2 on"], "{d:?}");
    assert_eq!(d[1], ["L2 off"], "{d:?}");
    let mut wide = with.clone();
    if let Some(l2) = &mut wide.l2 {
        l2.slice.ways = 16;
    }
    let d = differences(&[&with, &wide]);
    assert_eq!(d[1], ["L2 ways 16"], "{d:?}");
}

#[test]
fn side_by_side_panes_show_their_traffic_and_its_difference() {
    let mut h = harness(app("matmul", "n=64"));
    settle(&mut h);
    let mut big = h.state().settings.panes[0].1.clone();
    big.cache.size_bytes = 2 * 1024;
    let now = h.ctx.input(|i| i.time);
    h.state_mut().add_pane(now);
    h.state_mut().set_config(1, "test", big, now);
    settle(&mut h);
    h.run_steps(2);
    let t: Vec<_> = h
        .state()
        .panes
        .iter()
        .map(|p| p.result.as_ref().unwrap().report.totals)
        .collect();
    assert!(t[1].bytes_from_memory > t[0].bytes_from_memory, "{t:?}");
    h.get_by_label("bytes from memory");
    h.get_by_label_contains("size bytes 2048");
    let delta = t[1].bytes_from_memory - t[0].bytes_from_memory;
    h.get_by_label(&format!("{} (+{delta})", t[1].bytes_from_memory));
    // The same trace: the same requests in both panes, no difference shown.
    assert_eq!(t[0].requests, t[1].requests);
    assert_eq!(h.query_all_by_label(&t[0].requests.to_string()).count(), 2);
}

/// Different kernels side by side: a pane gets a kernel of its own (naive vs tiled matmul),
/// keeps it when the shared trace changes, and the comparison names each pane's trace.
#[test]
fn a_pane_can_show_another_kernel_beside_the_shared_one() {
    let mut h = harness(app("matmul", "n=32"));
    settle(&mut h);
    h.state_mut().add_pane(0.0);
    settle(&mut h);
    // Pane 2 is active: generate tiled matmul for it alone, through the side panel.
    h.state_mut().settings.generator = "matmul-tiled".into();
    h.state_mut().settings.generator_params = "n=32 tile=16".into();
    h.run_steps(2);
    click(&mut h, "Generate for pane 2 only");
    step_until(&mut h, "pane 2's own trace", |a| {
        a.panes[1].own_trace.is_some()
    });
    settle(&mut h);
    let (naive, tiled) = {
        let a = h.state();
        assert!(a.panes[0].own_trace.is_none());
        assert_eq!(a.pane_trace(0).unwrap().label, "matmul n=32");
        assert_eq!(a.pane_trace(1).unwrap().label, "matmul-tiled n=32 tile=16");
        let r = |i: usize| a.panes[i].result.clone().unwrap().report.totals;
        (r(0), r(1))
    };
    // Each pane simulated its own kernel: the tiled one makes far fewer global requests.
    assert!(tiled.requests < naive.requests, "{tiled:?} vs {naive:?}");
    // The comparison table names each pane's trace, with absolute traffic and its difference.
    h.get_by_label("trace");
    h.get_by_label("matmul-tiled n=32 tile=16");
    h.get_by_label(&format!(
        "{} ({:+})",
        tiled.requests,
        tiled.requests as i128 - naive.requests as i128
    ));
    h.get_by_label("own trace: matmul-tiled n=32 tile=16");
    h.get_by_label("shared trace: matmul n=32");

    // An instruction chosen in pane 1's table filters pane 1's addresses only: tiled matmul's
    // instruction of the same number is another instruction.
    h.state_mut().settings.view = crate::views::View::Misses;
    h.run_steps(3);
    click(&mut h, "ld_B");
    assert!(h.state().only.is_some());
    h.state_mut().settings.view = crate::views::View::Address;
    h.run_steps(3);
    assert_eq!(
        h.query_all_by_label_contains("Only instruction").count(),
        1,
        "the filter shows in the pane it was chosen in, and only there"
    );
    click(&mut h, "Show all");

    // A new shared trace replaces pane 1's, not pane 2's own.
    h.state_mut().generate("vecadd".into(), "n=4096".into());
    step_until(&mut h, "the new shared trace", |a| {
        a.trace.as_ref().is_some_and(|t| t.label == "vecadd n=4096")
    });
    settle(&mut h);
    assert_eq!(h.state().pane_trace(0).unwrap().label, "vecadd n=4096");
    assert_eq!(
        h.state().pane_trace(1).unwrap().label,
        "matmul-tiled n=32 tile=16"
    );
    // A pane added from pane 2 copies its trace along with its configuration.
    h.state_mut().add_pane(0.0);
    settle(&mut h);
    assert_eq!(
        h.state().pane_trace(2).unwrap().label,
        "matmul-tiled n=32 tile=16"
    );
    h.state_mut().remove_pane(2);
    // A file for pane 2 alone; one that cannot be read leaves pane 2's trace as it was.
    let lines = support::sample("accelsim-lineinfo");
    h.state_mut().open_in_pane(1, lines.join("blur_rows.cu"));
    step_until(&mut h, "the bad file's error", |a| {
        a.panes[1].trace_load.is_none()
    });
    assert!(matches!(&h.state().status, crate::Status::Error(e) if e.starts_with("pane 2: ")));
    assert_eq!(
        h.state().pane_trace(1).unwrap().label,
        "matmul-tiled n=32 tile=16"
    );
    h.state_mut().open_in_pane(1, lines);
    step_until(&mut h, "pane 2's file", |a| {
        a.pane_trace(1)
            .is_some_and(|t| t.label == "accelsim-lineinfo")
    });
    settle(&mut h);
    assert_eq!(h.state().pane_trace(0).unwrap().label, "vecadd n=4096");
    assert!(!h.state().panes[1]
        .result
        .as_ref()
        .unwrap()
        .report
        .source_lines
        .is_empty());
    h.run_steps(2);
    // Back to the shared trace.
    click(&mut h, "use the shared trace");
    settle(&mut h);
    assert!(h.state().panes[1].own_trace.is_none());
    assert_eq!(
        h.state().panes[1].result.as_ref().unwrap().report.totals,
        h.state().panes[0].result.as_ref().unwrap().report.totals
    );
    assert!(h.query_by_label("trace").is_none());
}

#[test]
fn the_status_bar_cancels_a_generation_and_keeps_the_current_trace() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    // Large enough to be still running when the button is clicked (about 134 M accesses).
    h.state_mut().max_generated_accesses = None;
    h.state_mut().generate("matmul".into(), "n=512".into());
    h.run_steps(2);
    assert!(!h.state().running().is_empty(), "the generation runs");
    h.get_by_label("Cancel").click();
    step_until(&mut h, "the generation stops", |a| a.running().is_empty());
    assert!(trace_label(&h).starts_with("vecadd"), "{}", trace_label(&h));
    assert_eq!(
        h.state().status,
        crate::Status::Info("Cancelled: the current trace stays".into())
    );
}

#[test]
fn each_pane_says_which_sms_ctas_and_accesses_its_result_covers() {
    let mut h = harness(app("matmul", "n=64"));
    settle(&mut h);
    let r = h.state().panes[0].result.clone().unwrap();
    let rep = &r.report;
    assert_eq!(rep.simulated_sms, [0]);
    let sms = rep.config.gpu.sms;
    assert!(sms > 1);
    // 16 CTAs of 16x16 threads, 64x64 threads of 2x64 loads and a store each.
    // Then how the trace was read and how the reuse distances were measured.
    let text = format!(
        "SM 0 of {sms}: {} of 16 CTAs, {} requests from {} of {} accesses; held whole, reuse \
         distances exact",
        rep.ctas.len(),
        rep.totals.requests,
        rep.totals.accesses,
        64 * 64 * 129
    );
    h.get_by_label(&text);
    assert!(rep.ctas.len() < 16 && rep.totals.accesses < 64 * 64 * 129);
}

#[test]
fn keeping_the_complete_kernels_is_offered_only_for_a_file_that_has_some() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.wst");
    std::fs::write(&empty, "").unwrap();
    let random = dir.path().join("random.bin");
    let mut rng = warpscope_core::rng::Rng::new(7);
    let bytes: Vec<u8> = (0..4096).map(|_| rng.below(256) as u8).collect();
    std::fs::write(&random, bytes).unwrap();
    let mut h = harness(app("vecadd", "n=256"));
    settle(&mut h);
    for path in [empty, random] {
        h.state_mut().open(path.clone());
        settle(&mut h);
        h.run_steps(2);
        let status = format!("{:?}", h.state().status);
        assert!(status.contains("Error"), "{path:?}: {status}");
        assert!(h.state().failed_file.is_none(), "{path:?}");
        assert!(
            h.query_by_label("Keep its complete kernels").is_none(),
            "{path:?}"
        );
        assert!(
            trace_label(&h).starts_with("vecadd"),
            "the current trace stays"
        );
    }
}

/// The window's rect, for "is it on screen".
fn window(w: f32, h: f32) -> egui::Rect {
    egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(w, h))
}

/// At 1024x700, with the timing model on in one pane only (the comparison's longest words),
/// every view tab, "Colour by" and "+ Compare" are on screen and not under one another, and
/// both panes sit inside the window side by side: nothing is pushed past the right edge.
#[test]
fn at_1024x700_every_tab_and_both_panes_are_on_screen() {
    let mut a = app("matmul", "n=64");
    a.add_pane(0.0);
    let mut timed = a.settings.panes[1].1.clone();
    timed.timing = Some(config::TimingConfig::default());
    a.set_config(1, "test", timed, 0.0);
    let mut h = egui_kittest::Harness::builder()
        .with_size([1024.0, 700.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), a);
    settle(&mut h);
    h.run_steps(4);
    let screen = window(1024.0, 700.0);
    let mut seen: Vec<(String, egui::Rect)> = Vec::new();
    let views = crate::views::View::ALL.map(|v| v.name().to_string());
    for label in views
        .iter()
        .map(String::as_str)
        .chain(["Colour by", "+ Compare"])
    {
        let r = h.get_by_label(label).rect();
        assert!(screen.contains_rect(r), "{label} at {r:?} is off screen");
        for (other, o) in &seen {
            assert!(r.intersect(*o).area() < 1.0, "{label} covers {other}");
        }
        seen.push((label.to_string(), r));
    }
    let rects = h.state().pane_rects.clone();
    assert_eq!(rects.len(), 2);
    for (i, r) in rects.iter().enumerate() {
        assert!(
            screen.expand(1.0).contains_rect(*r) && r.width() >= 300.0,
            "pane {i}: {r:?}"
        );
    }
    assert!(rects[0].right() <= rects[1].left(), "{rects:?}");
}

/// A lesson's text takes a column of its own: the panes re-flow beside it and none is under
/// it, at the default size and at 1024x700 (where it takes the side panel's room, which the
/// "Show settings" button brings back).
#[test]
fn a_lessons_column_never_covers_the_panes() {
    for (w, hgt) in [(1280.0, 800.0), (1024.0, 700.0)] {
        let mut h = egui_kittest::Harness::builder()
            .with_size([w, hgt])
            .build_ui_state(
                |ui, app: &mut WarpscopeApp| app.ui(ui),
                app("matmul", "n=32"),
            );
        settle(&mut h);
        let now = h.ctx.input(|i| i.time);
        h.state_mut().open_lesson("latency-and-mshrs", now);
        step_until(&mut h, "the lesson's panes", |a| {
            a.panes.len() == 3 && a.panes.iter().all(|p| p.result.is_some() && !p.stale)
        });
        h.run_steps(4);
        let title = warpscope_core::lesson::lesson("latency-and-mshrs")
            .unwrap()
            .title;
        let lesson = h.get_by_label(&title).rect();
        let screen = window(w, hgt);
        assert!(screen.contains_rect(lesson), "{w}: {lesson:?}");
        for (i, r) in h.state().pane_rects.iter().enumerate() {
            assert!(
                r.right() <= lesson.left(),
                "{w}: pane {i} {r:?} under {lesson:?}"
            );
            assert!(r.left() >= 0.0 && r.width() >= 280.0, "{w}: pane {i} {r:?}");
            // Never squeezed below a readable height (the grid scrolls instead).
            assert!(r.height() >= 259.0, "{w}: pane {i} {r:?}");
        }
        let narrow = w < 1280.0;
        assert_eq!(h.state().settings.side_panel, !narrow, "{w}");
        if narrow {
            click(&mut h, "Show settings");
            h.run_steps(2);
            assert!(h.state().settings.side_panel);
        }
    }
}

/// Closing a pane says so in the status bar, which named the pane's last job before ("Pane
/// 4: matmul ..." stayed on screen after pane 4 was gone).
#[test]
fn the_status_bar_does_not_name_a_pane_that_was_closed() {
    let mut a = app("matmul", "n=32");
    for _ in 0..3 {
        a.add_pane(0.0);
    }
    let mut h = harness(a);
    settle(&mut h);
    // What a job of pane 4 leaves in the status bar.
    h.state_mut().status = crate::Status::Info("Pane 4: matmul n=16: 1 kernel(s)".into());
    h.state_mut().remove_pane(3);
    h.run_steps(2);
    let crate::Status::Info(s) = h.state().status.clone() else {
        panic!("an error");
    };
    assert!(!s.contains("Pane 4"), "{s}");
    assert_eq!(s, "Closed pane 4: panes 1 to 3 left");
}

/// Opening another lesson takes the old lesson's pictures away at once: its text never sits
/// beside the panes of the lesson before while the new kernels run.
#[test]
fn another_lesson_never_shows_its_text_over_the_old_lessons_panes() {
    let mut h = harness(app("matmul", "n=32"));
    settle(&mut h);
    let now = h.ctx.input(|i| i.time);
    h.state_mut().open_lesson("coalescing", now);
    step_until(&mut h, "the first lesson", |a| {
        a.panes.iter().all(|p| p.result.is_some() && !p.stale) && a.idle()
    });
    let now = h.ctx.input(|i| i.time);
    h.state_mut().open_lesson("warp-scheduling", now);
    assert!(h.state().panes.iter().all(|p| p.result.is_none()));
    step_until(&mut h, "the second lesson", |a| {
        a.panes.iter().all(|p| p.result.is_some() && !p.stale) && a.idle()
    });
    let label = h.state().pane_trace(0).unwrap().label.clone();
    assert!(label.contains("column-copy"), "{label}");
}
