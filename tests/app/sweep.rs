//! A sweep the CLI runs in shards and merges opens in the app as a heatmap (`warpscope gui
//! --sweep FILE` starts this way): its key selectors and value chooser are in the window; a
//! damaged table is an error in the window naming the file, and the app keeps running. The
//! heatmap's cells against the table's values, and a sweep run in the app against the CLI's,
//! are tested inside the app's crate on tables the CLI wrote (`tests/fixtures/sweep`).
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use warpscope::app::{Settings, Startup, WarpscopeApp};

use crate::sweeps;

/// The app started on a small built-in kernel with the sweep table `table` open, once settled.
fn app_with_sweep(table: &Path) -> Harness<'static, WarpscopeApp> {
    let startup = Startup {
        generator: Some(("vecadd".into(), "n=256".into())),
        fresh: true,
        sweep: Some(table.to_path_buf()),
        ..Startup::default()
    };
    let app = WarpscopeApp::new(Settings::default(), startup, Arc::new(|| {}));
    let mut h = Harness::builder()
        .with_size([1400.0, 900.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), app);
    let start = Instant::now();
    while !h.state().settled() {
        h.step();
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the app did not settle"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h.run_steps(3);
    h
}

#[test]
fn a_merged_sweep_from_the_cli_opens_in_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let h = app_with_sweep(&sweeps::merged_two_inputs(dir.path()));
    h.get_by_label("Sweep");
    h.get_by_label("Columns");
    h.get_by_label("Value");
    // The input, the one key along neither axis, has its selector.
    h.get_by_label("input");
    // The table whole, and no error.
    h.get_by_label_contains("merged.csv: 8 rows");
    assert!(h.query_by_label_contains("expected").is_none());

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "id,input,ways\n1,x,2\n").unwrap();
    let h = app_with_sweep(&bad);
    h.get_by_label_contains("bad.csv");
    h.get_by_label_contains("expected the columns");
}
