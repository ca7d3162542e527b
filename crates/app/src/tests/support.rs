//! What the app's kittest flows share: an app started on a built-in kernel, a harness, and
//! steps until the background work is done.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::job::Job;
use crate::{Settings, Startup, WarpscopeApp};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use warpscope_core::config;

pub fn app(kernel: &str, params: &str) -> WarpscopeApp {
    let mut a = WarpscopeApp::new(
        Settings::default(),
        Startup {
            file: None,
            fresh: true,
            generator: Some((kernel.into(), params.into())),
            window: None,
            sweep: None,
            stream: false,
            shot_streamed: None,
            jobs: 0,
        },
        Arc::new(|| {}),
    );
    a.in_app_dialogs = true;
    a
}

/// A sample trace of the repository's `sample-traces`.
pub fn sample(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sample-traces")
        .join(name)
}

pub fn trace_label(h: &Harness<'static, WarpscopeApp>) -> String {
    h.state().trace.as_ref().expect("a trace").label.clone()
}

pub fn harness(a: WarpscopeApp) -> Harness<'static, WarpscopeApp> {
    Harness::builder()
        .with_size([1400.0, 900.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), a)
}

/// Steps the UI until every job is done and every pane has a fresh result.
pub fn settle(h: &mut Harness<'static, WarpscopeApp>) {
    let start = Instant::now();
    loop {
        h.step();
        let s = h.state();
        if s.settled() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the app did not settle"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h.step();
}

/// Clicks the node labelled `label` and lets the UI react (menus and combo boxes open on the
/// next frame).
pub fn click(h: &mut Harness<'static, WarpscopeApp>, label: &str) {
    h.get_by_label(label).click();
    h.run_steps(3);
}

pub fn miss_rate(h: &Harness<'static, WarpscopeApp>, pane: usize) -> f64 {
    h.state().panes[pane]
        .result
        .as_ref()
        .map(|r| r.report.miss_rate)
        .expect("a result")
}

pub fn trace(kernel: &str, params: &[(&str, &str)]) -> Arc<crate::data::TraceData> {
    let pairs: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    crate::worker::shared(
        warpscope_core::gen::generate(kernel, &pairs).unwrap(),
        kernel,
    )
}

/// Runs one simulation as the app runs a pane's, and returns its result.
pub fn simulate(
    t: Arc<crate::data::TraceData>,
    cfg: config::SimConfig,
) -> Arc<crate::data::SimData> {
    let mut job = Job::spawn("sim", &(Arc::new(|| {}) as _), move |p| {
        crate::worker::simulate(cfg, &t, p)
    });
    match job.wait(Duration::from_secs(120)).expect("an outcome") {
        Ok(data) => data,
        Err(e) => panic!("expected a result: {e:?}"),
    }
}

/// Steps the UI until `done` holds (work on the worker), then a few frames more.
pub fn step_until(
    h: &mut Harness<'static, WarpscopeApp>,
    what: &str,
    done: impl Fn(&WarpscopeApp) -> bool,
) {
    let start = Instant::now();
    while !done(h.state()) {
        h.step();
        assert!(start.elapsed() < Duration::from_secs(120), "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(3);
}
