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
