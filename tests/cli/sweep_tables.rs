//! The sweep tables the CLI writes are the ones in `tests/fixtures/sweep`, byte for byte: a
//! plan run in one shard and merged, a plain grid as CSV, JSON and Parquet, a grid over a
//! preset. The app's tests (`crates/app/src/tests/sweep.rs`) open those same files, so the
//! app's heatmap and its own sweep run are checked against what the CLI writes.
//! After a deliberate change to the tables, write them again with the commands below.
#![cfg(feature = "tables")]

use std::path::{Path, PathBuf};

use crate::{run, sweeps};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sweep")
        .join(name)
}

fn same_as_fixture(written: &Path, name: &str) {
    let (got, want) = (
        std::fs::read(written).unwrap(),
        std::fs::read(fixture(name)).unwrap(),
    );
    assert!(
        got == want,
        "{} differs from tests/fixtures/sweep/{name}",
        written.display()
    );
}

#[test]
fn the_cli_writes_the_sweep_tables_the_app_tests_open() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let merged = sweeps::merged_two_inputs(dir.path());
    same_as_fixture(&merged, "merged.csv");
    for ext in ["csv", "json", "parquet"] {
        let name = format!("plain.{ext}");
        run::ok(&[
            "sweep",
            "--kernel",
            "transpose",
            "width=64",
            "height=64",
            "--set-index",
            "modulo",
            "--vary",
            "ways=1,2,4",
            "--vary",
            "line-size=32,128",
            "-o",
            &d(&name),
        ]);
        same_as_fixture(&dir.path().join(&name), &name);
    }
    run::ok(&[
        "sweep",
        "--kernel",
        "matmul",
        "n=32",
        "--preset",
        "fermi-16k",
        "--set-index",
        "modulo",
        "--vary",
        "cache-size=4K,16K",
        "--vary",
        "ways=1,2,4",
        "-o",
        &d("matmul.csv"),
    ]);
    same_as_fixture(&dir.path().join("matmul.csv"), "matmul.csv");
}

/// A sweep whose points simulate an L2 has the L2's columns after the L1's, equal to what
/// `sim` reports for the point, and empty where a point has none; planned, run in a shard
/// and merged, its table is the plain sweep's.
#[test]
fn a_sweep_with_an_l2_has_its_columns_empty_where_a_point_has_none() {
    use warpscope::report::sweep::{read_any, L2_METRICS};
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let grid = [
        "sweep",
        "--kernel",
        "matmul",
        "n=32",
        "--preset",
        "fermi-16k",
        "--all-sms",
        "--vary",
        "l2=on,off",
    ];
    let out = d("l2.csv");
    run::ok(&[&grid[..], &["-o", &out]].concat());
    same_as_fixture(Path::new(&out), "l2.csv");
    let (json, _) = run::ok(&[
        "sim",
        "--kernel",
        "matmul",
        "n=32",
        "--preset",
        "fermi-16k",
        "--all-sms",
        "--json",
    ]);
    let sim: serde_json::Value = serde_json::from_str(&json).unwrap();
    let l2 = &sim["l2"];
    let table = read_any(Path::new(&out)).unwrap();
    let column = |name: &str| table.column(name).unwrap().as_materialized_series().clone();
    for (name, key) in [
        ("l2_requests", "requests"),
        ("l2_hits", "hits"),
        ("l2_misses", "misses"),
        ("bytes_from_dram", "bytes_from_dram"),
        ("bytes_to_dram", "bytes_to_dram"),
    ] {
        let cells: Vec<Option<u64>> = column(name).u64().unwrap().iter().collect();
        assert_eq!(cells, [l2[key].as_u64(), None], "{name}");
    }
    let rate: Vec<Option<f64>> = column("l2_miss_rate").f64().unwrap().iter().collect();
    assert_eq!(rate, [l2["miss_rate"].as_f64(), None]);
    // The same points planned, run in one shard and merged.
    let plan = d("plan");
    run::ok(&[&grid[..], &["--plan", &plan]].concat());
    run::ok(&["sweep", "--plan", &plan, "--shard", "0/1"]);
    let merged = d("merged.csv");
    let (stdout, stderr) = run::ok(&["sweep", "merge", &plan, "-o", &merged, "--print"]);
    let summary = stdout + &stderr;
    let merged = read_any(Path::new(&merged)).unwrap();
    for name in L2_METRICS {
        let got = merged
            .column(name)
            .unwrap()
            .as_materialized_series()
            .clone();
        assert!(got.equals_missing(&column(name)), "{name}: {got:?}");
    }
    assert!(summary.contains("l2_requests"), "{summary}");
}
