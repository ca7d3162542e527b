//! The sweep that both the CLI's tests (its merged table is a fixture the app's tests open)
//! and the app's end-to-end tests (the app opens it) run with the binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use crate::run;

/// `vecadd` and `transpose` over ways 1 and 4 and lines of 32 and 128 bytes: planned in
/// `dir/plan`, run in one shard and merged into `dir/merged.csv`, which is returned.
pub fn merged_two_inputs(dir: &Path) -> PathBuf {
    let plan = dir.join("plan");
    let plan = plan.to_str().expect("a UTF-8 path");
    run::ok(&[
        "sweep",
        "--kernel",
        "vecadd",
        "n=1024",
        "--input",
        "--kernel transpose width=64 height=64",
        "--vary",
        "ways=1,4",
        "--vary",
        "line-size=32,128",
        "--plan",
        plan,
    ]);
    run::ok(&["sweep", "--plan", plan, "--shard", "0/1"]);
    let merged = dir.join("merged.csv");
    run::ok(&[
        "sweep",
        "merge",
        plan,
        "-o",
        merged.to_str().expect("a UTF-8 path"),
    ]);
    merged
}
