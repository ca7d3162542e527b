//! A sweep split into shards and merged gives the table of the sweep run at once: a plan of
//! two inputs times a grid, its shards run one by one (one of them killed half way and run
//! again), merged; and `merge` finds missing, repeated and damaged shards.
#![cfg(feature = "tables")]

use std::path::Path;
use std::process::Command;

use crate::run;

fn warpscope(args: &[&str]) -> String {
    run::ok(args).0
}

fn failure(args: &[&str]) -> String {
    run::fails(args)
}

const GRID: [&str; 4] = ["--vary", "ways=1,4", "--vary", "line-size=32,64,128"];

#[test]
fn shards_merged_equal_the_sweep_and_a_restarted_shard_runs_only_what_it_had_not() {
    let dir = std::env::temp_dir().join(format!("warpscope-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    // The sweep at once, for each input.
    let local = |input: &[&str]| {
        let mut args = vec!["sweep"];
        args.extend(input);
        args.extend(GRID);
        warpscope(&args)
    };
    let matmul = local(&["--kernel", "matmul", "n=32"]);
    let vecadd = local(&["--kernel", "vecadd", "n=2048"]);
    // The plan: both inputs times the grid, 12 points.
    let mut args = vec![
        "sweep",
        "--kernel",
        "matmul",
        "n=32",
        "--input",
        "--kernel vecadd n=2048",
    ];
    args.extend(GRID);
    args.extend(["--plan", d]);
    warpscope(&args);
    let plan = std::fs::read_to_string(dir.join("plan.csv")).unwrap();
    assert_eq!(plan.lines().count(), 1 + 12);
    for k in 0..4 {
        warpscope(&["sweep", "--plan", d, "--shard", &format!("{k}/4")]);
    }
    let merged = dir.join("merged.parquet");
    let m = merged.to_str().unwrap();
    let printed = warpscope(&["sweep", "merge", d, "-o", m, "--print"]);
    // The inputs' tables one after the other (plan order), one header.
    let expected = format!("{matmul}{}", vecadd.split_once('\n').unwrap().1);
    assert_eq!(printed, expected);
    // A shard killed half way: its table and one of its points' rows lost. Run again, it
    // runs that point only, and the merged table is the same.
    let rows: Vec<_> = std::fs::read_dir(dir.join("rows")).unwrap().collect();
    assert_eq!(rows.len(), 12);
    std::fs::remove_file(dir.join("shards/shard-1-of-4.parquet")).unwrap();
    let plan_ids: Vec<&str> = plan.lines().skip(1).map(|l| &l[..16]).collect();
    std::fs::remove_file(dir.join(format!("rows/{}.csv", plan_ids[5]))).unwrap();
    assert!(failure(&["sweep", "merge", d, "-o", m]).contains("(shard 1 of 4)"));
    let again = Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(["sweep", "--plan", d, "--shard", "1/4"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        said.contains("3 points (1 run now, 2 done before)"),
        "{said}"
    );
    assert_eq!(
        warpscope(&["sweep", "merge", d, "-o", m, "--print"]),
        expected
    );
    // Shards of another count repeat points; a table cut short is named.
    warpscope(&[
        "sweep",
        "--plan",
        d,
        "--shard",
        "0/2",
        "--shard-format",
        "csv",
    ]);
    assert!(failure(&["sweep", "merge", d, "-o", m]).contains("in more than one shard table"));
    std::fs::remove_file(dir.join("shards/shard-0-of-2.csv")).unwrap();
    truncate(&dir.join("shards/shard-2-of-4.parquet"));
    let e = failure(&["sweep", "merge", d, "-o", m]);
    assert!(
        e.contains("shard-2-of-4.parquet") && e.contains("not a readable Parquet file"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn truncate(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}
