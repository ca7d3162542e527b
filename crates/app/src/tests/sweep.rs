//! A merged sweep result in the app: the heatmap's cells are the table's values, the axes and
//! the value column can be changed, the other keys are chosen by selectors; a damaged table
//! is an error in the window, not a crash. The tables are the CLI's (`tests/fixtures/sweep`,
//! which the CLI's tests check it still writes byte for byte).
use egui_kittest::kittest::Queryable;

use super::support;
use support::*;

/// A sweep table the CLI wrote (`tests/fixtures/sweep`).
fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sweep")
        .join(name)
}

/// The app `a` with its sweep form open (Panes > Sweep the active pane…).
fn sweep_form(a: crate::WarpscopeApp) -> egui_kittest::Harness<'static, crate::WarpscopeApp> {
    let mut h = harness(a);
    settle(&mut h);
    click(&mut h, "Panes");
    click(&mut h, "Sweep the active pane…");
    h.run_steps(2);
    h
}

/// Runs the sweep of the form's axes (`button`: the run button's label) to its table.
fn run_sweep(h: &mut egui_kittest::Harness<'static, crate::WarpscopeApp>, button: &str) {
    h.run_steps(2);
    click(h, button);
    step_until(h, "the sweep", |a| {
        a.sweep_run.job.is_none() && a.sweep.table.is_some()
    });
}

#[test]
fn a_merged_sweep_opens_as_a_heatmap_over_two_chosen_keys() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // `sweep --kernel vecadd n=1024 --input "--kernel transpose width=64 height=64" --vary
    // ways=1,4 --vary line-size=32,128 --plan D`, its one shard, then `sweep merge D`.
    let merged = fixture("merged.csv");
    let table = warpscope_core::report::sweep::read(&merged).unwrap();
    // The table's misses for an input, ways and line size.
    let misses = |input: &str, ways: &str, line: &str| -> f64 {
        let col = |c: &str| -> Vec<String> {
            let s = table
                .column(c)
                .unwrap()
                .as_materialized_series()
                .cast(&polars::prelude::DataType::String)
                .unwrap();
            s.str()
                .unwrap()
                .iter()
                .map(|v| v.unwrap().to_string())
                .collect()
        };
        let (i, w, l, m) = (col("input"), col("ways"), col("line-size"), col("misses"));
        let r = (0..i.len())
            .find(|&r| i[r].contains(input) && w[r] == ways && l[r] == line)
            .unwrap();
        m[r].parse().unwrap()
    };

    let mut h = harness(app("vecadd", "n=256"));
    settle(&mut h);
    h.state_mut().sweep.open_file(&merged);
    h.run_steps(3);
    let t = h.state().sweep.table.clone().expect("the table");
    let names: Vec<&str> = t.keys.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["input", "ways", "line-size"]);
    // By default: the two last keys, the miss rate; the input chosen by a selector.
    let s = h.state().sweep.selection.clone();
    assert_eq!(
        (s.x, s.y, t.values[s.value].0.as_str()),
        (2, 1, "miss_rate")
    );
    h.get_by_label("Columns");
    h.get_by_label("input");
    // The misses column: each cell is the table's value for the first input.
    h.state_mut().sweep.selection.value = t.values.iter().position(|v| v.0 == "misses").unwrap();
    h.run_steps(2);
    let s = h.state().sweep.selection.clone();
    for (wi, ways) in ["1", "4"].iter().enumerate() {
        for (li, line) in ["32", "128"].iter().enumerate() {
            assert_eq!(
                t.cell(&s, li, wi),
                Some(misses("vecadd", ways, line)),
                "ways {ways}, line {line}"
            );
        }
    }
    // The other input, chosen in its selector.
    h.state_mut().sweep.selection.fixed[0] = 1;
    h.run_steps(2);
    let s = h.state().sweep.selection.clone();
    assert_eq!(t.cell(&s, 1, 0), Some(misses("transpose", "1", "128")));
    // Input along the columns instead: ways stays the rows, the line size is now selected.
    h.state_mut().sweep.selection.x = 0;
    h.run_steps(2);
    h.get_by_label("line-size");
    let s = h.state().sweep.selection.clone();
    assert_eq!(t.cell(&s, 1, 1), Some(misses("transpose", "4", "32")));
    // A damaged table: its error in the window, the app still running.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "id,input,ways\n1,x,2\n").unwrap();
    h.state_mut().sweep.open_file(&bad);
    h.run_steps(3);
    let e = h.state().sweep.error.clone().expect("an error");
    assert!(
        e.contains("bad.csv") && e.contains("expected the columns"),
        "{e}"
    );
}

/// The table a plain `sweep -o` writes (no plan: no id or input column), as CSV, JSON or
/// Parquet, opens as a heatmap too, each cell the value the CLI wrote; a table that is no
/// sweep's says so in a short line, not a wall of column names.
#[test]
fn a_plain_sweep_table_opens_in_every_format_it_is_written_in() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // `sweep --kernel transpose width=64 height=64 --set-index modulo --vary ways=1,2,4
    // --vary line-size=32,128 -o plain.EXT`.
    let csv = fixture("plain.csv");
    // The CLI's CSV, read back by hand: misses by (ways, line size).
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let misses_col = header.iter().position(|c| *c == "misses").unwrap();
    let expected: Vec<(String, String, f64)> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let unquote = |s: &str| s.trim_matches('"').to_string();
            (
                unquote(cells[0]),
                unquote(cells[1]),
                cells[misses_col].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(expected.len(), 6);
    assert!(
        expected.windows(2).any(|w| w[0].2 != w[1].2),
        "the grid's points differ in misses"
    );

    let mut h = harness(app("vecadd", "n=256"));
    settle(&mut h);
    for ext in ["csv", "json", "parquet"] {
        let file = fixture(&format!("plain.{ext}"));
        h.state_mut().sweep.open_file(&file);
        h.run_steps(3);
        assert_eq!(h.state().sweep.error, None, "{ext}");
        let t = h.state().sweep.table.clone().expect("the table");
        let mut names: Vec<&str> = t.keys.iter().map(|k| k.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["line-size", "ways"], "{ext}");
        let ways = t.keys.iter().position(|k| k.name == "ways").unwrap();
        let line = t.keys.iter().position(|k| k.name == "line-size").unwrap();
        let mut s = h.state().sweep.selection.clone();
        s.value = t.values.iter().position(|v| v.0 == "misses").unwrap();
        s.x = line;
        s.y = ways;
        h.state_mut().sweep.selection = s.clone();
        h.run_steps(2);
        for (w, l, m) in &expected {
            let xi = t.keys[line].distinct.iter().position(|v| v == l).unwrap();
            let yi = t.keys[ways].distinct.iter().position(|v| v == w).unwrap();
            assert_eq!(t.cell(&s, xi, yi), Some(*m), "{ext}: ways {w}, line {l}");
        }
    }
    // A table that is not a sweep's: a short error naming the file.
    let other = dir.join("other.csv");
    let many: Vec<String> = (0..40).map(|i| format!("column{i}")).collect();
    std::fs::write(&other, format!("{}\n", many.join(","))).unwrap();
    h.state_mut().sweep.open_file(&other);
    h.run_steps(3);
    let e = h.state().sweep.error.clone().expect("an error");
    assert!(
        e.contains("other.csv") && e.contains("not a sweep table"),
        "{e}"
    );
    assert!(e.len() < 400, "{} characters: {e}", e.len());
}

/// A sweep run from the app (Panes > Sweep the active pane…, two axes typed, Run) on a
/// worker: its table is the one `warpscope sweep` writes for the same kernel, configuration
/// and grid, cell for cell, and it opens as the heatmap; an axis that cannot be read keeps
/// the button disabled and says why.
#[test]
fn a_sweep_run_in_the_app_equals_the_clis() {
    // `sweep --kernel matmul n=32 --preset fermi-16k --set-index modulo --vary
    // cache-size=4K,16K --vary ways=1,2,4 -o matmul.csv`.
    let cli = crate::sweep_view::SweepTable::read(&fixture("matmul.csv")).unwrap();

    let mut a = app("matmul", "n=32");
    let mut cfg = a.settings.panes[0].1.clone();
    cfg.cache.set_index = warpscope_core::config::SetIndex::Modulo;
    a.set_config(0, "fermi-16k", cfg, 0.0);
    let mut h = sweep_form(a);
    assert!(h.state().sweep.open);
    // A key no sweep knows: no run, and the reason beside the button.
    h.state_mut().sweep_run.axes = ["nope=1".into(), String::new(), String::new()];
    h.run_steps(2);
    h.get_by_label("nope: unknown parameter `nope`");
    h.state_mut().sweep_run.axes = [
        "cache-size=4K,16K".into(),
        "ways=1,2,4".into(),
        String::new(),
    ];
    run_sweep(&mut h, "Run 6 configurations");
    let app = h.state().sweep.table.clone().unwrap();
    let names = |t: &crate::sweep_view::SweepTable| -> Vec<String> {
        t.keys.iter().map(|k| k.name.clone()).collect()
    };
    assert_eq!(names(&app), ["input", "cache-size", "ways"]);
    assert_eq!(names(&cli), ["cache-size", "ways"]);
    for (k, key) in cli.keys.iter().enumerate() {
        assert_eq!(key.distinct, app.keys[k + 1].distinct, "{}", key.name);
        assert_eq!(key.rows, app.keys[k + 1].rows, "{}", key.name);
    }
    assert_eq!(cli.values, app.values);
    // The page's sweep, a point after the other in pieces between frames: the same table.
    let trace = h.state().pane_trace(0).unwrap();
    let base = h.state().settings.panes[0].1.clone();
    let axes = warpscope_core::config::grid::axes(
        &["cache-size=4K,16K".to_string(), "ways=1,2,4".to_string()],
        &base,
    )
    .unwrap();
    let progress = crate::job::Progress::default();
    let mut job = crate::sweep_run::pieces(trace, &base, axes);
    let mut slices = 0;
    let paged = loop {
        slices += 1;
        if let Some(t) = crate::job::Step::step(
            &mut crate::sliced::Slices(&mut job),
            &progress,
            web_time::Instant::now(),
        ) {
            break t.unwrap();
        }
    };
    assert!(slices > 6, "{slices} slices");
    assert_eq!(progress.fraction(), Some(1.0));
    assert_eq!(paged.values, app.values);
    // Its heatmap is shown: ways along the columns, cache sizes along the rows.
    let s = h.state().sweep.selection.clone();
    assert_eq!((s.x, s.y), (2, 1));
    h.get_by_label("Value");
}

/// A sweep over the L2 (`sweep --kernel matmul n=32 --preset fermi-16k --all-sms --vary
/// l2=on,off -o l2.csv`): the L2's columns are values to draw, and a point without an L2 is
/// an empty cell, not 0. The app's own run of that sweep gives the same table.
#[test]
fn a_sweep_over_the_l2_draws_its_columns_and_leaves_a_point_without_one_empty() {
    let cli = crate::sweep_view::SweepTable::read(&fixture("l2.csv")).unwrap();
    let names: Vec<&str> = cli.values.iter().map(|v| v.0.as_str()).collect();
    for m in warpscope_core::report::sweep::L2_METRICS {
        assert!(names.contains(&m), "{m} in {names:?}");
    }
    let value = names.iter().position(|n| *n == "l2_requests").unwrap();
    let s = crate::sweep_view::Selection {
        value,
        ..Default::default()
    };
    // One key, l2 = on, off: the first has the L2's requests, the second none.
    let on = cli.cell(&s, 0, 0).expect("the point with an L2");
    assert!(on > 0.0);
    assert_eq!(cli.cell(&s, 1, 0), None);

    let mut a = app("matmul", "n=32");
    let mut cfg = warpscope_core::config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = warpscope_core::config::SmSelection::All;
    a.set_config(0, "fermi-16k", cfg, 0.0);
    let mut h = sweep_form(a);
    h.state_mut().sweep_run.axes = ["l2=on,off".into(), String::new(), String::new()];
    run_sweep(&mut h, "Run 2 configurations");
    let app = h.state().sweep.table.clone().unwrap();
    // Cell for cell, an empty one (NaN) the same as the CLI's.
    let same = |a: &[f64], b: &[f64]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    };
    assert_eq!(app.values.len(), cli.values.len());
    for ((an, av), (cn, cv)) in app.values.iter().zip(&cli.values) {
        assert_eq!(an, cn);
        assert!(same(av, cv), "{an}: {av:?} vs {cv:?}");
    }
}

/// The form's own grid runs on the example the app opens with (the Fermi hash of its preset
/// indexes at most 64 sets, which the grid's small associativities exceed without the form's
/// modulo indexing), and its heatmap's axes are the two keys that vary.
#[test]
fn the_forms_default_sweep_runs_on_the_default_example() {
    let a = app("matmul", "n=32");
    let base = a.settings.panes[0].1.clone();
    let form = crate::sweep_run::SweepRun::default();
    let vary: Vec<String> = form
        .axes
        .iter()
        .filter(|a| !a.is_empty())
        .cloned()
        .collect();
    let axes = warpscope_core::config::grid::axes(&vary, &base).unwrap();
    let points = warpscope_core::config::grid::points(&axes);
    let configs = warpscope_core::config::grid::configs(&base, &points).unwrap();
    assert_eq!(configs.len(), 25);
    for c in &configs {
        c.validate().unwrap();
    }
    let mut h = sweep_form(a);
    run_sweep(&mut h, "Run 25 configurations");
    let t = h.state().sweep.table.clone().unwrap();
    let names: Vec<&str> = t.keys.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["input", "cache-size", "ways", "set-index"]);
    let s = &h.state().sweep.selection;
    assert_eq!((s.x, s.y), (2, 1), "ways across, cache sizes down");
}

/// `warpscope --jobs N` sizes the threads a sweep in the app is spread over (the shell's
/// default for the app); the table is the same for any number of them.
#[test]
fn the_apps_jobs_size_a_sweeps_threads_and_not_its_table() {
    use warpscope_shell::lanes::{cores, set_default_jobs};
    let mut h = harness(app("matmul", "n=32"));
    settle(&mut h);
    let trace = h.state().pane_trace(0).unwrap();
    let mut base = h.state().settings.panes[0].1.clone();
    base.cache.set_index = warpscope_core::config::SetIndex::Modulo;
    let axes = warpscope_core::config::grid::axes(
        &["cache-size=4K,16K".to_string(), "ways=1,2,4".to_string()],
        &base,
    )
    .unwrap();
    let progress = std::sync::Arc::new(crate::job::Progress::default());
    let run = |jobs: usize| {
        set_default_jobs(jobs);
        let threads = crate::sweep_run::pool().unwrap().current_num_threads();
        let table = crate::sweep_run::run(&trace, &base, &axes, &progress).unwrap();
        (threads, table.values)
    };
    let (three, on_three) = run(3);
    let (one, on_one) = run(1);
    set_default_jobs(0);
    assert_eq!((three, one), (3, 1));
    assert_eq!(
        cores(0),
        std::thread::available_parallelism().unwrap().get()
    );
    assert_eq!(on_three, on_one);
}
