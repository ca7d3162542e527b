//! What the web build does differently, checked on the desktop: files handed over as their
//! name and bytes (the browser's picker, a file dropped on the page) and the menus' word on
//! what a build cannot do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::support::{self, app, harness, miss_rate, settle, trace_label};
use crate::files::Purpose;
use crate::{Action, Status, WarpscopeApp};
use egui_kittest::Harness;

fn picked(h: &mut Harness<'static, WarpscopeApp>, purpose: Purpose, name: &str, bytes: &[u8]) {
    let bytes: Arc<[u8]> = bytes.into();
    h.state_mut()
        .actions
        .push(Action::Picked(purpose, name.to_string(), bytes));
}

fn wait_for_error(h: &mut Harness<'static, WarpscopeApp>) -> String {
    let start = Instant::now();
    loop {
        if let Status::Error(e) = &h.state().status {
            return e.clone();
        }
        h.step();
        assert!(start.elapsed() < Duration::from_secs(30), "no error came");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_picked_trace_loads_from_its_bytes_as_its_file_does() {
    let path = support::sample("dinero-small.din");
    let mut from_file = harness(app("vecadd", "n=64"));
    from_file.state_mut().open(path.clone());
    settle(&mut from_file);
    let mut h = harness(app("vecadd", "n=64"));
    settle(&mut h);
    picked(
        &mut h,
        Purpose::OpenTrace,
        "dinero-small.din",
        &std::fs::read(&path).unwrap(),
    );
    settle(&mut h);
    assert_eq!(trace_label(&h), "dinero-small.din");
    assert_eq!(miss_rate(&h, 0), miss_rate(&from_file, 0));
    // A file for the second pane only.
    h.state_mut().add_pane(0.0);
    settle(&mut h);
    let wst = support::sample("table2.wst");
    picked(
        &mut h,
        Purpose::OpenPaneTrace(1),
        "table2.wst",
        &std::fs::read(&wst).unwrap(),
    );
    settle(&mut h);
    let own = h.state().panes[1]
        .own_trace
        .clone()
        .expect("pane 2 has its own trace");
    assert_eq!(own.label, "table2.wst");
    assert_eq!(
        trace_label(&h),
        "dinero-small.din",
        "the shared trace changed"
    );
}

#[test]
fn a_bad_picked_file_is_an_error_naming_it_and_the_trace_stays() {
    let mut h = harness(app("vecadd", "n=64"));
    settle(&mut h);
    picked(&mut h, Purpose::OpenTrace, "bad.din", b"0 1000\n7 zz\n");
    let e = wait_for_error(&mut h);
    assert!(e.contains("bad.din") && e.contains("line 2"), "{e}");
    assert!(trace_label(&h).starts_with("vecadd"), "{}", trace_label(&h));
}

#[test]
fn a_picked_configuration_is_loaded_and_a_bad_one_is_an_error_naming_it() {
    let mut h = harness(app("vecadd", "n=64"));
    settle(&mut h);
    let mut cfg = h.state().settings.panes[0].1.clone();
    cfg.cache.ways *= 2;
    let text = serde_json::to_string(&cfg).unwrap();
    picked(&mut h, Purpose::LoadConfig, "mine.json", text.as_bytes());
    settle(&mut h);
    assert_eq!(h.state().settings.panes[0].0, "mine.json");
    assert_eq!(h.state().settings.panes[0].1, cfg);
    picked(
        &mut h,
        Purpose::LoadConfig,
        "broken.toml",
        b"[cache\nways = 2\n",
    );
    let e = wait_for_error(&mut h);
    assert!(e.contains("broken.toml") && e.contains("line 1"), "{e}");
    assert_eq!(
        h.state().settings.panes[0].1,
        cfg,
        "a bad file changed the configuration"
    );
}

#[test]
fn the_desktop_build_can_do_everything_its_menus_offer() {
    for p in [
        Purpose::OpenTrace,
        Purpose::OpenPaneTrace(1),
        Purpose::OpenSweep,
        Purpose::LoadConfig,
        Purpose::SaveConfig,
        Purpose::ExportView,
        Purpose::ExportReport,
        Purpose::ExportRequests,
    ] {
        assert_eq!(p.unavailable(), None, "{p:?}");
    }
}

#[test]
fn the_page_refuses_a_file_too_large_to_hold_and_says_where_to_open_it() {
    use crate::files::{too_large_for_the_page, PAGE_FILE_BYTES};
    assert_eq!(too_large_for_the_page("a.wsb", PAGE_FILE_BYTES), None);
    let why = too_large_for_the_page("big.trc", PAGE_FILE_BYTES + (1 << 20)).unwrap();
    assert!(
        why.contains("big.trc: 513 MiB") && why.contains("desktop app"),
        "{why}"
    );
}

/// The web build's pane simulation, run a slice at a time between frames, gives what the
/// desktop's worker thread gives: the report and every request the views draw.
#[test]
fn a_simulation_run_in_slices_gives_the_whole_runs_result() {
    use warpscope_core::config::{preset, SmSelection};
    let file = |name: &str| {
        let t = warpscope_core::trace::read_file(&support::sample(name), None)
            .unwrap()
            .0;
        crate::worker::shared(t, name)
    };
    let traces = [
        support::trace("matmul", &[("n", "48")]),
        support::trace("spmv", &[]),
        file("dinero-small.din"),
        file("accelsim-matrixmul"),
        file("table2.wst"),
    ];
    let fermi = preset("fermi-16k").unwrap();
    let mut every_sm = fermi.clone();
    every_sm.gpu.simulate = SmSelection::All;
    let mut write_back = preset("volta").unwrap();
    write_back.seed = 7;
    for t in &traces {
        for (c, cfg) in [&fermi, &every_sm, &write_back].into_iter().enumerate() {
            let whole = support::simulate(t.clone(), cfg.clone());
            let (sliced, slices) = in_slices(cfg, t);
            let what = format!("{} under configuration {c}", t.label);
            assert!(slices > 2, "{what}: {slices} slices");
            assert_eq!(
                serde_json::to_value(&sliced.report).unwrap(),
                serde_json::to_value(&whole.report).unwrap(),
                "{what}"
            );
            let (a, b) = (&sliced.points, &whole.points);
            assert!(!a.is_empty(), "{what}");
            assert_eq!(a.line, b.line, "{what}");
            let ids = |p: &crate::data::Points| (p.cta.clone(), p.warp.clone(), p.inst.clone());
            assert_eq!(ids(a), ids(b), "{what}");
            let places = |p: &crate::data::Points| (p.kernel.clone(), p.sm.clone(), p.set.clone());
            assert_eq!(places(a), places(b), "{what}");
            assert_eq!((&a.outcome, &a.reuse), (&b.outcome, &b.reuse), "{what}");
            assert_eq!((&a.thread, a.dropped), (&b.thread, b.dropped), "{what}");
        }
    }
}

/// A pane's run of `t` under `cfg` as the page makes it, one piece a slice (no time at all:
/// the most slices a run can take), and how many slices it took.
fn in_slices(
    cfg: &warpscope_core::config::SimConfig,
    t: &std::sync::Arc<crate::data::TraceData>,
) -> (std::sync::Arc<crate::data::SimData>, usize) {
    use crate::job::{Progress, Step};
    let mut run = crate::sliced::Sliced::new(cfg.clone(), t.clone());
    let progress = Progress::default();
    let mut slices = 0;
    loop {
        slices += 1;
        if let Some(r) = run.step(&progress, web_time::Instant::now()) {
            return (r.unwrap(), slices);
        }
    }
}

/// The web build's run of the timing model, in pieces between frames, gives what the
/// desktop's worker thread gives.
#[test]
fn a_timing_model_run_in_slices_gives_the_whole_runs_result() {
    use warpscope_core::config::{preset, L2Config, SmSelection};
    let accelsim = warpscope_core::trace::read_file(&support::sample("accelsim-matrixmul"), None)
        .unwrap()
        .0;
    let traces = [
        support::trace("matmul", &[("n", "48")]),
        support::trace("hotspot", &[("steps", "2")]),
        crate::worker::shared(accelsim, "accelsim-matrixmul"),
    ];
    let gtx470 = preset("gtx470-16k").unwrap();
    let mut with_l2 = gtx470.clone();
    with_l2.gpu.sms = 4;
    with_l2.gpu.simulate = SmSelection::All;
    with_l2.l2 = Some(L2Config::default());
    for t in &traces {
        for (c, cfg) in [&gtx470, &with_l2].into_iter().enumerate() {
            let whole = support::simulate(t.clone(), cfg.clone());
            let (sliced, slices) = in_slices(cfg, t);
            let what = format!("{} under configuration {c}", t.label);
            assert!(
                slices > t.trace.kernels.len() * 2,
                "{what}: {slices} slices"
            );
            assert!(sliced.report.timing.is_some(), "{what}");
            assert_eq!(
                serde_json::to_value(&sliced.report).unwrap(),
                serde_json::to_value(&whole.report).unwrap(),
                "{what}"
            );
            let (a, b) = (&sliced.points, &whole.points);
            assert!(!a.is_empty(), "{what}");
            assert_eq!((&a.line, &a.time), (&b.line, &b.time), "{what}");
            let ids = |p: &crate::data::Points| (p.cta.clone(), p.warp.clone(), p.inst.clone());
            assert_eq!(ids(a), ids(b), "{what}");
            let places = |p: &crate::data::Points| (p.kernel.clone(), p.sm.clone(), p.set.clone());
            assert_eq!(places(a), places(b), "{what}");
            assert_eq!(a.outcome, b.outcome, "{what}");
        }
    }
}

#[test]
fn a_simulation_in_slices_reports_progress_and_stops_when_cancelled() {
    use crate::job::{Job, JobError};
    let t = support::trace("matmul", &[("n", "128")]);
    let mut cfg = warpscope_core::config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = warpscope_core::config::SmSelection::All;
    let wake: crate::job::Wake = Arc::new(|| {});
    let mut job = Job::stepped(
        "sim",
        &wake,
        crate::sliced::Sliced::new(cfg.clone(), t.clone()),
    );
    // Slices until the progress moves (the session takes CTAs in before it issues).
    let mut done = 0.0;
    for _ in 0..10_000 {
        assert!(
            job.poll().is_none(),
            "the run ended before its progress moved"
        );
        done = job.progress().fraction().unwrap_or(0.0);
        if done > 0.0 {
            break;
        }
    }
    assert!(done > 0.0 && done < 1.0, "{done}");
    job.cancel();
    assert_eq!(
        job.poll().map(|r| r.map(|_| ())),
        Some(Err(JobError::Cancelled))
    );
    // Run to its end, it is the desktop's result.
    let mut job = Job::stepped(
        "sim",
        &wake,
        crate::sliced::Sliced::new(cfg.clone(), t.clone()),
    );
    let data = job.wait(Duration::from_secs(60)).unwrap().unwrap();
    let whole = support::simulate(t, cfg);
    assert_eq!(
        serde_json::to_value(&data.report).unwrap(),
        serde_json::to_value(&whole.report).unwrap()
    );
}

/// The web build's request table (CSV, written without polars) is the file the desktop
/// writes through polars for the same run: byte for byte.
#[test]
fn the_pages_request_table_is_the_desktops() {
    use warpscope_core::config::{preset, SmSelection};
    let accelsim = warpscope_core::trace::read_file(&support::sample("accelsim-matrixmul"), None)
        .unwrap()
        .0;
    let din = warpscope_core::trace::read_file(&support::sample("dinero-small.din"), None)
        .unwrap()
        .0;
    let fermi = preset("fermi-16k").unwrap();
    let mut every_sm = preset("volta").unwrap();
    every_sm.gpu.simulate = SmSelection::All;
    let gtx470 = preset("gtx470-16k").unwrap();
    let cases = [
        (support::trace("matmul", &[("n", "32")]), fermi.clone()),
        (support::trace("hotspot", &[("steps", "2")]), every_sm),
        (crate::worker::shared(din, "din"), fermi),
        (crate::worker::shared(accelsim, "accelsim"), gtx470),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (t, cfg)) in cases.into_iter().enumerate() {
        let progress = crate::job::Progress::default();
        let mut pieces = crate::requests_csv::requests_csv(cfg.clone(), t.clone());
        let page = loop {
            if let Some(done) = pieces(&progress) {
                break done.unwrap();
            }
        };
        let path = dir.path().join(format!("r{i}.csv"));
        let mut ex =
            warpscope_core::sim::RequestExporter::create(&path, crate::worker::Relay(&progress))
                .unwrap();
        warpscope_shell::timed::simulate(&cfg, &t.trace.kernels, &mut ex, 0).unwrap();
        let (rows, _) = ex.finish().unwrap();
        assert!(rows > 10, "case {i}: {rows} requests");
        let desktop = std::fs::read_to_string(&path).unwrap();
        assert_eq!(String::from_utf8(page).unwrap(), desktop, "case {i}");
    }
}
