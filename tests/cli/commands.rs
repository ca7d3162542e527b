//! The command line: golden JSON snapshots (insta) of `sim` for every built-in kernel on the
//! Fermi 16 KB preset, the Dinero sample trace, conversions and error messages.

use std::process::Command;

use crate::traces;
use traces::{memtrace_file, nvbit_file};

fn warpscope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(args)
        .output()
        .expect("run warpscope")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = warpscope(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

#[test]
fn sim_json_of_every_builtin_kernel_on_fermi_16k() {
    for k in warpscope::gen::BUILTINS {
        let v = json(&["sim", "--kernel", k.name, "--preset", "fermi-16k", "--json"]);
        for key in [
            "reads",
            "writes",
            "hits",
            "misses",
            "read_misses",
            "write_misses",
            "writebacks",
            "bytes_from_memory",
            "bytes_to_memory",
            "requests",
            "transactions",
        ] {
            assert!(v[key].is_u64(), "{}: key {key}", k.name);
        }
        let m = &v["miss_classes"];
        let sum = m["compulsory"].as_u64().unwrap()
            + m["capacity"].as_u64().unwrap()
            + m["conflict"].as_u64().unwrap();
        assert_eq!(sum, v["misses"].as_u64().unwrap(), "{}", k.name);
        insta::assert_json_snapshot!(format!("sim_fermi16k_{}", k.name), v);
    }
}

/// The Fermi preset's shared L2 behind all 14 SMs: its counters, slices, instructions and
/// reuse distances as the JSON gives them. The traffic between the levels is the L1s'; with
/// one SM simulated there is no `l2`.
#[test]
fn sim_json_with_the_l2_behind_every_sm() {
    let args = |all: bool| {
        let mut a = vec!["sim", "--kernel", "transpose", "width=128", "height=128"];
        a.extend(["--preset", "fermi-16k", "--json"]);
        if all {
            a.push("--all-sms");
        }
        json(&a)
    };
    let v = args(true);
    let l2 = &v["l2"];
    assert_eq!(l2["bytes_l2_to_l1"], v["bytes_from_memory"]);
    assert_eq!(l2["bytes_l1_to_l2"], v["bytes_to_memory"]);
    assert_eq!(l2["per_slice"].as_array().map(Vec::len), Some(12));
    insta::assert_json_snapshot!("sim_fermi16k_transpose_l2", l2);
    assert!(args(false).get("l2").is_none());
}

/// Reports go to standard output through a buffer: a failed write must still fail the
/// command (a buffer dropped without a flush would swallow the error and exit 0).
#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_fails_the_command() {
    for args in [
        &["sim", "--kernel", "vecadd", "--json"][..],
        &["sim", "--kernel", "vecadd"],
        &["comm", "--kernel", "transpose", "--json"],
        &["analyze", "--kernel", "vecadd", "--json"],
        &["explain", "--kernel", "vecadd", "--request", "3", "--json"],
        &["lesson"],
        &["lesson", "coalescing", "--json"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_warpscope"))
            .args(args)
            .stdout(full)
            .output()
            .expect("run warpscope");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} exited 0");
        assert!(err.contains("No space left"), "{args:?}: {err}");
    }
}

/// The din sample on a 128-byte direct-mapped cache of 64-byte lines.
const DIN_SMALL: &[&str] = &[
    "sim",
    "--trace",
    "sample-traces/dinero-small.din",
    "--cache-size",
    "128",
    "--line-size",
    "64",
    "--ways",
    "1",
    "--json",
];

#[test]
fn sim_json_of_the_dinero_sample() {
    let v = json(&[DIN_SMALL, &["--format", "din", "--write-policy", "wbwa"]].concat());
    insta::assert_json_snapshot!("sim_dinero_small", v);
}

#[test]
fn dinero_sample_counts_by_hand() {
    // 128 B of 64-byte lines, direct mapped (2 sets). Lines in order:
    // 0x40 0x40(hit) 0x80(w) 0x41 0x42 0x81(w) 0xc0 0x40(capacity) 0x100 0x41(hit) 0x140 0x40(capacity).
    let v = json(DIN_SMALL);
    assert_eq!(v["requests"], 12);
    assert_eq!(v["writes"], 2);
    assert_eq!(v["reads"], 10);
    // Write-through, no allocate: both writes miss and send their bytes to memory.
    assert_eq!(v["write_misses"], 2);
    assert_eq!(v["bytes_to_memory"], 4 + 8);
    assert_eq!(v["hits"], 2);
    assert_eq!(v["misses"], 10);
    assert_eq!(v["miss_classes"]["compulsory"], 8);
    assert_eq!(v["miss_classes"]["capacity"], 2);
    assert_eq!(v["miss_classes"]["conflict"], 0);
    assert_eq!(v["bytes_from_memory"], 8 * 64);
}

#[test]
fn dirty_lines_left_at_the_end_are_written_back_as_dinero_does() {
    // 128 B direct mapped, 64-byte lines, write-back with write-allocate. `w 40` dirties set 1,
    // `w 80` set 0, `r c0` evicts the dirty line 0x40 (one writeback); line 0x80 is still
    // dirty at the end and is written back then. Dinero IV r7 prints 128 bytes to memory.
    let dir = std::env::temp_dir().join(format!("warpscope-flush-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let din = dir.join("flush.din");
    std::fs::write(&din, "w 40 8\nw 80 4\nr c0 4\n").unwrap();
    let v = json(&[
        "sim",
        "--trace",
        din.to_str().unwrap(),
        "--cache-size",
        "128",
        "--line-size",
        "64",
        "--ways",
        "1",
        "--write-policy",
        "wbwa",
        "--json",
    ]);
    assert_eq!(v["writebacks"], 1);
    assert_eq!(v["flush_writebacks"], 1);
    assert_eq!(v["flush_bytes_to_memory"], 64);
    assert_eq!(v["bytes_to_memory"], 128);
    assert_eq!(v["bytes_from_memory"], 192);
    assert_eq!(v["sms"][0]["flush_bytes_to_memory"], 64);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn convert_round_trips_text_and_binary() {
    let dir = std::env::temp_dir().join(format!("warpscope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wst = dir.join("m.wst");
    let wsb = dir.join("m.wsb");
    let back = dir.join("back.wst");
    let p = |p: &std::path::Path| p.to_str().unwrap().to_string();
    assert!(warpscope(&["gen", "matmul-tiled", "n=32", "-o", &p(&wst)])
        .status
        .success());
    assert!(warpscope(&["convert", &p(&wst), &p(&wsb)]).status.success());
    assert!(warpscope(&["convert", &p(&wsb), &p(&back)])
        .status
        .success());
    assert_eq!(
        std::fs::read_to_string(&wst).unwrap(),
        std::fs::read_to_string(&back).unwrap()
    );
    let a = json(&["sim", "--trace", &p(&wst), "--json"]);
    let b = json(&["sim", "--trace", &p(&wsb), "--json"]);
    assert_eq!(a["misses"], b["misses"]);
    let from_kernel = json(&["sim", "--kernel", "matmul-tiled", "n=32", "--json"]);
    assert_eq!(a["misses"], from_kernel["misses"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_name_the_file_line_and_expectation() {
    let dir = std::env::temp_dir().join(format!("warpscope-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.din");
    std::fs::write(&bad, "0 1000\n0 10zz\n").unwrap();
    let out = warpscope(&["sim", "--trace", bad.to_str().unwrap(), "--format", "din"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Said once, the file first (not "simulating F: F: line 2").
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}: line 2: expected a hex address, found `10zz`",
            bad.display()
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // With --allow-truncated and no complete kernel: one error, no warning before it.
    let out = warpscope(&["sim", "--trace", bad.to_str().unwrap(), "--allow-truncated"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("expected a hex address").count(), 1, "{err}");
    assert!(!err.contains("warning"), "{err}");
    // A missing file, a folder that is not a trace, a missing configuration and a trace
    // that cannot be written: each reason once (an io error's text was also its source, so
    // the chain printed it twice).
    let missing = dir.join("missing.din");
    let folder = dir.join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    // `gen` makes the output's folder; under a file it cannot.
    let a_file = dir.join("a-file");
    std::fs::write(&a_file, "").unwrap();
    let nowhere = a_file.join("t.wst");
    for (args, want) in [
        (
            vec!["sim", "--trace", missing.to_str().unwrap()],
            format!("{}: No such file or directory", missing.display()),
        ),
        (
            vec!["sim", "--trace", folder.to_str().unwrap()],
            format!(
                "{}: a directory trace must hold an Accel-Sim kernelslist.g",
                folder.display()
            ),
        ),
        (
            vec![
                "sim",
                "--kernel",
                "vecadd",
                "--config",
                missing.to_str().unwrap(),
            ],
            format!("{}: No such file or directory", missing.display()),
        ),
        (
            vec!["gen", "vecadd", "-o", nowhere.to_str().unwrap()],
            format!("{}: File exists", a_file.display()),
        ),
    ] {
        let out = warpscope(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or("");
        assert!(
            line.starts_with(&format!("error: {want}")),
            "{args:?}: {err}"
        );
        let reason = want.split(": ").last().unwrap();
        assert_eq!(line.matches(reason).count(), 1, "{args:?}: {err}");
    }
    let out = warpscope(&["sim", "--kernel", "matmul", "--ways", "3"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("associativity"));
    let out = warpscope(&[
        "sim",
        "--kernel",
        "vecadd",
        "block=1024",
        "--max-threads",
        "512",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("does not fit on an SM").count(), 1, "{err}");
    let out = warpscope(&["sim", "--kernel", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown kernel `nope`"));
    // A configuration file: its syntax errors name the line and column; what it sets is
    // checked only once the flags have been applied on top of it.
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, "seed = 3\n[cache]\nways = \"four\"\n").unwrap();
    let out = warpscope(&[
        "sim",
        "--kernel",
        "vecadd",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("c.toml: TOML configuration, line 3, column 8: "),
        "{err}"
    );
    std::fs::write(&cfg, "[cache]\nways = 3\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            "--kernel",
            "vecadd",
            "--config",
            cfg.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        warpscope(&args)
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "invalid configuration ({} with the flags given): associativity 3 must divide",
            cfg.display()
        )),
        "{err}"
    );
    let out = run(&["--ways", "8", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A key the configuration does not have (a typo, or a flag's name) is an error naming
    // it and its line, not a setting silently left at its default.
    for (text, line) in [
        ("[cache]\nways = 8\nline_byts = 64\n", 3),
        ("seed = 2\nline_size = 64\n", 2),
        ("[schedule]\nwarps = 4\n", 2),
        ("[gpu]\nsm = 3\n", 2),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let out = run(&[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            err.contains(&format!(
                "c.toml: TOML configuration, line {line}, column 1: unknown field `"
            )),
            "{text}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sweep_writes_one_row_per_configuration() {
    let out = warpscope(&[
        "sweep",
        "--kernel",
        "matmul",
        "n=32",
        "--vary",
        "ways=1,2,4",
        "--vary",
        "replacement=lru,fifo",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 6);
    assert!(lines[0].starts_with("ways,replacement,requests,"));
}

/// A sweep reads the trace once and gives it to every configuration as it is read; each
/// row is what `sim` gives for its configuration, and what the sweep of the trace loaded
/// whole gives.
#[test]
fn a_streamed_sweep_gives_each_configurations_sim_result() {
    let dir = std::env::temp_dir().join(format!("warpscope-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("h.wsb").to_str().unwrap().to_string();
    let gen = warpscope(&[
        "gen",
        "hotspot",
        "-o",
        &trace,
        "nx=48",
        "ny=48",
        "steps=2",
        "block=8,8",
    ]);
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let out = dir.join("rows.json").to_str().unwrap().to_string();
    let sweep = |extra: &[&str]| {
        let args = [
            &[
                "sweep",
                "--trace",
                &trace,
                "--sms",
                "3",
                "--all-sms",
                "-o",
                &out,
            ][..],
            &[
                "--vary",
                "ways=1,4",
                "--vary",
                "schedule=gto,round-robin",
                "--vary",
                "max-ctas=1,3",
            ],
            extra,
        ]
        .concat();
        let o = warpscope(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        v.as_array().unwrap().clone()
    };
    let rows = sweep(&[]);
    assert_eq!(rows.len(), 8);
    assert_eq!(sweep(&["--jobs", "1"]), rows);
    assert_eq!(sweep(&["--jobs", "3", "--allow-truncated"]), rows);
    for r in &rows {
        let (ways, schedule, max_ctas) = (
            r["ways"].as_str().unwrap(),
            r["schedule"].as_str().unwrap(),
            r["max-ctas"].as_str().unwrap(),
        );
        let sim = json(&[
            "sim",
            "--json",
            "--no-reuse",
            "--trace",
            &trace,
            "--sms",
            "3",
            "--all-sms",
            "--ways",
            ways,
            "--schedule",
            schedule,
            "--max-ctas",
            max_ctas,
        ]);
        for key in [
            "requests",
            "hits",
            "misses",
            "compulsory",
            "capacity",
            "conflict",
            "writebacks",
        ] {
            let got = &r[key];
            let want = if ["compulsory", "capacity", "conflict"].contains(&key) {
                &sim["miss_classes"][key]
            } else {
                &sim[key]
            };
            assert_eq!(
                got, want,
                "{key} with ways={ways} schedule={schedule} max-ctas={max_ctas}"
            );
        }
    }
    // A configuration the trace cannot run under names itself.
    let o = warpscope(&["sweep", "--trace", &trace, "--vary", "max-threads=1024,16"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("with max-threads=16"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Every built-in kernel on fifteen SMs, all simulated: the SMs split over three threads
/// give the result of one thread.
#[test]
fn sms_split_over_threads_give_the_one_thread_result() {
    for k in warpscope::gen::BUILTINS {
        let run = |jobs: &str| {
            json(&[
                "sim",
                "--json",
                "--kernel",
                k.name,
                "--sms",
                "15",
                "--all-sms",
                "--schedule",
                "gto",
                "--jobs",
                jobs,
            ])
        };
        let one = run("1");
        assert_eq!(run("3"), one, "{}", k.name);
        assert_eq!(one["sms"].as_array().unwrap().len(), 15, "{}", k.name);
    }
}

#[test]
fn per_thread_scheduling_fits_fermi_residency() {
    // Warp size 1 (Crawford's (2014) per-thread policies): residency still counts hardware warps.
    let v = json(&[
        "sim",
        "--kernel",
        "column-copy",
        "threads=256",
        "width=64",
        "--preset",
        "fermi-16k",
        "--warp-size",
        "1",
        "--json",
    ]);
    assert_eq!(v["accesses"], 256 * 64 * 2);
    assert_eq!(v["requests"], 256 * 64 * 2);
}

#[test]
#[cfg(not(feature = "gui"))]
fn no_arguments_simulates_the_builtin_example() {
    let out = warpscope(&[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("kernel matmul") && text.contains("miss rate"),
        "{text}"
    );
    // `--jobs` (the app's threads) is the simulation's here: the same report on one thread.
    let one = warpscope(&["--jobs", "1"]);
    assert!(one.status.success());
    assert_eq!(String::from_utf8_lossy(&one.stdout), text);
}

/// With the app built in, no arguments open the window; where no display exists the
/// command fails at once with a message pointing at the CLI (it must not hang).
#[test]
#[cfg(feature = "gui")]
fn no_arguments_without_a_display_fail_with_a_pointer_to_the_cli() {
    let out = Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("run warpscope");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the desktop app could not start") && err.contains("warpscope sim"),
        "{err}"
    );
}

#[test]
fn timing_mode_on_seed001_trace_format() {
    // Table 4 of Nugteren et al. 2014 through the CLI: 4 misses (2 compulsory, 2 latency), 4 hits.
    let v = json(&[
        "sim",
        "--trace",
        "sample-traces/table2.trc",
        "--line-size",
        "16",
        "--cache-size",
        "32",
        "--ways",
        "full",
        "--warp-size",
        "1",
        "--timing",
        "--miss-latency",
        "2",
        "--miss-latency-stddev",
        "0",
        "--warp-delay",
        "off",
        "--clip",
        "off",
        "--json",
    ]);
    assert_eq!(v["requests"], 8);
    assert_eq!(v["misses"], 4);
    assert_eq!(v["hits"], 4);
    let c = &v["miss_classes"];
    assert_eq!(
        (c["compulsory"].as_u64(), c["latency"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        (
            c["capacity"].as_u64(),
            c["conflict"].as_u64(),
            c["mshr"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(v["timing"]["comparison"]["zero_latency"]["misses"], 2);
    // The gtx470 preset: timing on, 64 MSHRs, σ 5; the classes add up to the misses.
    let v = json(&[
        "sim",
        "--kernel",
        "matmul",
        "n=32",
        "--preset",
        "gtx470-16k",
        "--json",
    ]);
    assert_eq!(v["config"]["timing"]["mshrs"], 64);
    let c = &v["miss_classes"];
    let sum: u64 = ["compulsory", "capacity", "conflict", "latency", "mshr"]
        .iter()
        .map(|k| c[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, v["misses"].as_u64().unwrap());
    assert!(v["timing"]["time_steps"].as_u64().unwrap() > 0);
    // Timing needs LRU.
    let out = warpscope(&[
        "sim",
        "--kernel",
        "vecadd",
        "--timing",
        "--replacement",
        "fifo",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("lru"));
}

/// The real Accel-Sim matrix multiplication, copied into the repository's sample traces.
const ACCELSIM_MM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/sample-traces/accelsim-matrixmul"
);

#[test]
fn sim_json_of_the_real_accel_sim_matrixmul() {
    let v = json(&[
        "sim",
        "--trace",
        ACCELSIM_MM,
        "--preset",
        "fermi-16k",
        "--json",
    ]);
    // 32 warps x (2 LDG + 1 STG) global warp instructions reach the L1; shared ones do not.
    insta::assert_json_snapshot!("sim_accelsim_matrixmul", v);
    assert_eq!(v["kernels"][0]["warp_instructions"], 96);
}

#[test]
#[cfg(feature = "tables")]
fn export_writes_the_request_table_and_summaries() {
    let dir = std::env::temp_dir().join(format!("ws-cli-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let req = dir.join("req.csv");
    let sum = dir.join("sum.parquet");
    let v = json(&[
        "sim",
        "--kernel",
        "matmul",
        "n=32",
        "--preset",
        "fermi-16k",
        "--json",
        "--export",
        req.to_str().unwrap(),
        "--export-summary",
        sum.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&req).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().trim_start_matches('\u{feff}');
    assert_eq!(header, warpscope::sim::REQUEST_COLUMNS.join(","));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len() as u64, v["requests"].as_u64().unwrap());
    let misses = rows
        .iter()
        .filter(|r| r.split(',').nth(10) == Some("false"))
        .count();
    assert_eq!(misses as u64, v["misses"].as_u64().unwrap());
    for f in ["sum.instructions.parquet", "sum.ctas.parquet"] {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        assert!(bytes.starts_with(b"PAR1"), "{f}");
    }
    let out = warpscope(&[
        "sim",
        "--kernel",
        "matmul",
        "--export",
        dir.join("x.txt").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("expected a file name ending in .csv or .parquet"));
    // The report itself: a .json export is what --json prints, a .txt export what sim prints.
    let sim = |extra: &[&str]| {
        let mut args = vec!["sim", "--kernel", "matmul", "n=32"];
        args.extend_from_slice(extra);
        warpscope(&args)
    };
    let (as_json, as_text) = (dir.join("r.json"), dir.join("r.txt"));
    let printed = sim(&["--json", "--export-summary", as_json.to_str().unwrap()]);
    assert!(printed.status.success());
    assert_eq!(std::fs::read(&as_json).unwrap(), printed.stdout);
    let printed = sim(&["--export-summary", as_text.to_str().unwrap()]);
    assert_eq!(std::fs::read(&as_text).unwrap(), printed.stdout);
    assert!(String::from_utf8_lossy(&printed.stdout).starts_with("Warpscope: kernel matmul n=32"));
    let out = sim(&["--export-summary", dir.join("r.png").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("r.png: expected a file name ending in .txt, .json, .csv, .parquet"),
        "{err}"
    );
    assert!(!dir.join("r.png").exists() && !dir.join("r.png.part").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// The multi-launch generators, small, with the parameters the snapshots were taken with.
const COMM_KERNELS: [(&str, &[&str]); 4] = [
    ("hotspot", &["nx=32", "ny=32", "steps=3", "block=8,8"]),
    ("histogram2", &["n=4096", "bins=16", "ctas=8", "block=64"]),
    ("nbody", &["n=128", "steps=2", "block=32"]),
    ("bfs-levels", &["nodes=256", "degree=3", "block=32"]),
];

#[test]
fn comm_json_of_the_multi_launch_kernels() {
    for (name, params) in COMM_KERNELS {
        let mut args = vec!["comm", "--json", "--kernel", name];
        args.extend_from_slice(params);
        let v = json(&args);
        for key in ["write_bytes", "read_bytes", "communicated_bytes"] {
            assert!(v[key].is_u64(), "{name}: {key}");
        }
        // pairs are [writer, reader, bytes] and sum to the communicated bytes.
        let sum: u64 = v["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[2].as_u64().unwrap())
            .sum();
        assert_eq!(sum, v["communicated_bytes"].as_u64().unwrap(), "{name}");
        let ctas = v["ctas"].as_u64().unwrap() as usize;
        assert_eq!(v["in_degree"].as_array().unwrap().len(), ctas, "{name}");
        assert_eq!(v["out_degree"].as_array().unwrap().len(), ctas, "{name}");
        for d in ["x", "y", "z"] {
            assert!(v["bisection"][d]["bytes"].is_u64(), "{name}: bisection {d}");
        }
        assert!(!v["per_launch"].as_array().unwrap().is_empty(), "{name}");
        insta::assert_json_snapshot!(format!("comm_{name}"), v);
    }
}

#[test]
fn comm_reads_trace_files_like_the_generator() {
    let dir = std::env::temp_dir().join(format!("warpscope-comm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hotspot.wsb");
    let (name, params) = COMM_KERNELS[0];
    let mut args = vec!["gen", name, "-o", file.to_str().unwrap()];
    args.extend_from_slice(params);
    assert!(warpscope(&args).status.success());
    let mut from_file = json(&["comm", "--json", file.to_str().unwrap()]);
    let mut args = vec!["comm", "--json", "--kernel", name];
    args.extend_from_slice(params);
    let mut generated = json(&args);
    from_file["source"] = serde_json::Value::Null;
    generated["source"] = serde_json::Value::Null;
    assert_eq!(from_file, generated);
    // The text report names the kernel and the bisection.
    let out = warpscope(&["comm", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("hotspot") && text.contains("bisection"),
        "{text}"
    );
    // Errors: no input, two inputs, a missing file.
    let e = warpscope(&["comm"]);
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("give a trace file"));
    let e = warpscope(&["comm", "a.wst", "b.wst"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("one trace at a time"));
    let e = warpscope(&["comm", "no/such/file.wst"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("no/such/file.wst"));
    std::fs::remove_dir_all(&dir).ok();
}

const LINEINFO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/sample-traces/accelsim-lineinfo"
);

#[test]
fn sim_json_of_an_accel_sim_trace_with_line_info() {
    let v = json(&[
        "sim",
        "--trace",
        LINEINFO,
        "--preset",
        "fermi-16k",
        "--json",
    ]);
    insta::assert_json_snapshot!("sim_accelsim_lineinfo", v);
    // blur_rows.cu: lines 6-8 load `in` (one instruction each), line 9 stores `out`.
    let lines: Vec<(u64, u64)> = v["source_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["line"].as_u64().unwrap(), l["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [6, 7, 8, 9]);
    // Each line's row is exactly its instruction's row.
    for l in v["source_lines"].as_array().unwrap() {
        let name = &l["instructions"][0];
        let inst = v["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| &i["name"] == name)
            .unwrap();
        assert_eq!(inst["line"], l["line"]);
        assert_eq!(inst["misses"], l["misses"]);
    }
    // The transposed store of line 9 strides by `height` floats (64 bytes): with Fermi's
    // 128-byte lines a warp's 32 threads write 16 lines, where line 7's load reads one.
    let store = lines.iter().find(|l| l.0 == 9).unwrap();
    assert_eq!(store.1, 16 * lines.iter().find(|l| l.0 == 7).unwrap().1);
}

#[test]
fn source_lines_sum_instructions_of_a_line_over_launches_and_survive_conversion() {
    let dir = std::env::temp_dir().join(format!("warpscope-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |p: &std::path::Path| p.to_str().unwrap().to_string();
    // Two launches of one kernel; line 5 has two loads of distinct lines, line 9 one load
    // that hits what line 5 fetched, and `c` has no line.
    let launch = "kernel k grid=1 block=1\ninst a pc=0x10 line=5\ninst b pc=0x20 line=5\ninst c pc=0x30 line=9\ninst d pc=0x40\n\
0 0 a 0 ld 0x000 4\n0 0 b 0 ld 0x100 4\n0 0 c 0 ld 0x104 4\n0 0 d 0 ld 0x200 4\n";
    let wst = dir.join("lines.wst");
    std::fs::write(&wst, format!("{launch}{launch}")).unwrap();
    let wsb = dir.join("lines.wsb");
    let back = dir.join("back.wst");
    assert!(warpscope(&["convert", &p(&wst), &p(&wsb)]).status.success());
    assert!(warpscope(&["convert", &p(&wsb), &p(&back)])
        .status
        .success());
    assert!(std::fs::read_to_string(&back)
        .unwrap()
        .contains("inst b pc=0x20 line=5"));
    for f in [&wst, &wsb, &back] {
        let v = json(&[
            "sim",
            "--trace",
            &p(f),
            "--line-size",
            "64",
            "--cache-size",
            "4096",
            "--ways",
            "4",
            "--json",
        ]);
        let rows = v["source_lines"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{f:?}: {rows:?}");
        // Line 5: 2 instructions x 2 launches = 4 requests; only the first launch misses (the
        // L1 keeps its lines across launches).
        assert_eq!(rows[0]["line"], 5);
        assert_eq!(rows[0]["instructions"], serde_json::json!(["a", "b"]));
        assert_eq!(rows[0]["requests"], 4);
        assert_eq!(rows[0]["misses"], 2);
        assert_eq!(rows[1]["line"], 9);
        assert_eq!(rows[1]["requests"], 2);
        assert_eq!(rows[1]["misses"], 0);
        let d = v["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "d")
            .unwrap();
        assert!(d.get("line").is_none());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `sim` streams a din file (two threads, chunks of 65 536 rows): the report is the one the
/// library gives for the whole trace read into memory, compressed or not, and a bad line
/// deep in the file fails the run with its line number and prints no report.
#[test]
fn a_streamed_din_trace_gives_the_whole_trace_result() {
    let dir = std::env::temp_dir().join(format!("warpscope-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    let mut x = 1u64;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match i % 4 {
            0 => text.push_str(&format!("0 {:x}\n", 0x1000 + i * 4 % 65536)),
            1 => text.push_str(&format!("1 {:x}\n", x % 32768)),
            2 => text.push_str(&format!("r {:x} {:x}\n", x % 100_000, 1 + x % 200)),
            _ => text.push_str(&format!("w {:x} 8\n", 0x8000 + x % 4096)),
        }
    }
    let plain = dir.join("big.din");
    std::fs::write(&plain, &text).unwrap();
    let zst = dir.join("big.din.zst");
    std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
    // Sectored, then unsectored LRU (the classes come from the reuse distances, measured on a
    // thread of their own: `lanes::run_apart`), then FIFO; with and without reuse distances.
    let trace = warpscope::trace::din::read(text.as_bytes(), "big.din").unwrap();
    let mut want = serde_json::Value::Null;
    use warpscope::config::Replacement::{Fifo, Lru};
    for (sector, repl, reuse) in [
        (32, Lru, true),
        (64, Lru, true),
        (64, Fifo, true),
        (64, Lru, false),
    ] {
        let (sector_arg, repl_arg) = (sector.to_string(), repl.name().to_string());
        let mut cache = vec![
            "--cache-size",
            "4K",
            "--ways",
            "2",
            "--line-size",
            "64",
            "--sector-size",
            &sector_arg,
            "--replacement",
            &repl_arg,
            "--write-policy",
            "wbwa",
            "--json",
        ];
        if !reuse {
            cache.push("--no-reuse");
        }
        let mut cfg = warpscope::config::SimConfig::default();
        cfg.cache.size_bytes = 4096;
        cfg.cache.ways = 2;
        cfg.cache.line_bytes = 64;
        cfg.cache.sector_bytes = sector;
        cfg.cache.replacement = repl;
        cfg.cache.write_policy = warpscope::config::WritePolicy::Wbwa;
        cfg.reuse = if reuse {
            warpscope::config::ReuseMode::Auto
        } else {
            warpscope::config::ReuseMode::Off
        };
        let whole = warpscope::sim::run(&cfg, &trace, &mut warpscope::sim::NoObserver).unwrap();
        assert!(whole.totals.misses > 1000);
        let whole = serde_json::to_value(&whole).unwrap();
        for file in [&plain, &zst] {
            let got = json(&[&["sim", "--trace", file.to_str().unwrap()][..], &cache].concat());
            assert_eq!(got, whole, "{} {sector} {repl:?} {reuse}", file.display());
        }
        if sector == 32 {
            want = whole;
        }
    }
    assert_eq!(want["kernels"][0]["rows"], 200_000);
    text.push_str("0 12\n0 oops\n");
    std::fs::write(&plain, &text).unwrap();
    let out = warpscope(&["sim", "--trace", plain.to_str().unwrap(), "--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("big.din: line 200002: expected a hex address"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

/// `sim` reads other formats a kernel at a time on a second thread and simulates each as it
/// comes: a multi-launch trace in our binary and text formats (zstd-compressed too) gives
/// the result of the built-in generator's whole trace, and a broken last kernel fails the
/// run, after the earlier ones were simulated, without printing a report.
#[test]
fn a_multi_launch_trace_is_simulated_a_kernel_at_a_time() {
    let dir = std::env::temp_dir().join(format!("warpscope-kstream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = ["nx=32", "ny=32", "steps=3", "block=8,8"];
    let want = json(&[&["sim", "--json", "--kernel", "hotspot"][..], &params].concat());
    assert_eq!(want["kernels"].as_array().unwrap().len(), 3);
    let wsb = dir.join("hotspot.wsb");
    let wst = dir.join("hotspot.wst");
    for out in [&wsb, &wst] {
        let gen = warpscope(
            &[
                &["gen", "hotspot", "-o", out.to_str().unwrap()][..],
                &params,
            ]
            .concat(),
        );
        assert!(
            gen.status.success(),
            "{}",
            String::from_utf8_lossy(&gen.stderr)
        );
    }
    let text = std::fs::read(&wst).unwrap();
    let zst = dir.join("hotspot.wst.zst");
    std::fs::write(&zst, zstd::encode_all(&text[..], 1).unwrap()).unwrap();
    for file in [&wsb, &wst, &zst] {
        let got = json(&["sim", "--json", "--trace", file.to_str().unwrap()]);
        assert_eq!(got, want, "{}", file.display());
    }
    // A fourth kernel with a bad address: the first three are simulated, then the run fails.
    let cut =
        String::from_utf8(text).unwrap() + "\nkernel broken grid=1 block=1\n0 0 ld_x 0 ld 0xZZ 4\n";
    std::fs::write(&wst, cut).unwrap();
    let out = warpscope(&["sim", "--json", "--trace", wst.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hotspot.wst: line") && err.contains("expected an address"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `--export` writes the per-request table while the trace streams: a multi-launch binary
/// trace (a kernel at a time), the same kernels as they are generated (CTA by CTA) and a din
/// file (in chunks) each give the table of the library's whole-trace run, instruction names
/// included; a run that fails leaves no table (nor its `.part`) behind.
#[test]
#[cfg(feature = "tables")]
fn a_streamed_export_is_the_whole_trace_export() {
    use warpscope::sim::RequestExporter;
    let dir = std::env::temp_dir().join(format!("warpscope-sexport-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let read = |n: &str| std::fs::read_to_string(p(n)).unwrap();
    let params = ["nx=32", "ny=32", "steps=3", "block=8,8"];
    let gen = warpscope(&[&["gen", "hotspot", "-o", &p("h.wsb")][..], &params].concat());
    assert!(gen.status.success());
    // The library's whole-trace run writes the reference table.
    let lib_table = |trace: &warpscope::trace::Trace, table: &str| {
        let cfg = warpscope::config::SimConfig::default();
        let mut ex =
            RequestExporter::create(std::path::Path::new(&p(table)), warpscope::sim::NoObserver)
                .unwrap();
        let report = warpscope::sim::run(&cfg, trace, &mut ex).unwrap();
        let (rows, _) = ex.finish().unwrap();
        assert_eq!(rows, report.totals.requests);
        (report, rows)
    };
    let pairs: Vec<(String, String)> = params
        .iter()
        .map(|kv| kv.split_once('=').unwrap())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (report, _) = lib_table(
        &warpscope::gen::generate("hotspot", &pairs).unwrap(),
        "want.csv",
    );
    let from_file = json(&[
        "sim",
        "--json",
        "--trace",
        &p("h.wsb"),
        "--export",
        &p("got.csv"),
    ]);
    let generated = json(
        &[
            &[
                "sim",
                "--json",
                "--kernel",
                "hotspot",
                "--export",
                &p("gen.csv"),
            ][..],
            &params,
        ]
        .concat(),
    );
    assert_eq!(from_file, serde_json::to_value(&report).unwrap());
    assert_eq!(generated, from_file);
    let (want, got) = (read("want.csv"), read("got.csv"));
    assert_eq!(got, want);
    assert_eq!(read("gen.csv"), want);
    assert_eq!(got.lines().count() as u64, 1 + report.totals.requests);
    // Rows of the third kernel carry its instruction names.
    assert!(
        got.lines().any(|l| l.contains(",2,") && l.contains(",ld_")),
        "{}",
        &got[..300]
    );

    let mut text = String::new();
    for i in 0..30_000u64 {
        let op = ["0", "1", "2"][(i % 3) as usize];
        text.push_str(&format!("{op} {:x}\n", (i * 52) % 20_000));
    }
    std::fs::write(p("t.din"), &text).unwrap();
    let trace = warpscope::trace::din::read(text.as_bytes(), "t.din").unwrap();
    let (_, rows) = lib_table(&trace, "lib.csv");
    let out = warpscope(&[
        "sim",
        "--json",
        "--trace",
        &p("t.din"),
        "--export",
        &p("din.csv"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("({rows} requests)")));
    let got = read("din.csv");
    assert_eq!(got, read("lib.csv"));
    let names: std::collections::BTreeSet<&str> = got
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(6))
        .collect();
    assert!(names.len() >= 2 && !names.contains(""), "{names:?}");

    // A kernel after the first three is broken: the run fails and no table is left.
    let wst = p("h.wst");
    assert!(warpscope(&["convert", &p("h.wsb"), &wst]).status.success());
    let broken = read("h.wst") + "\nkernel broken grid=1 block=1\n0 0 ld_x 0 ld 0xZZ 4\n";
    std::fs::write(&wst, broken).unwrap();
    for table in ["bad.csv", "bad.parquet"] {
        let out = warpscope(&["sim", "--trace", &wst, "--export", &p(table)]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("expected an address"));
        assert!(!dir.join(table).exists() && !dir.join(format!("{table}.part")).exists());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `convert` writes each kernel as it is read: a multi-launch trace round-trips through the
/// binary and text formats and Nugteren et al.'s one file per kernel; a trace whose last
/// kernel is broken fails and leaves no output file, and with `--allow-truncated` keeps the
/// complete kernels and says so.
#[test]
fn convert_writes_a_kernel_at_a_time() {
    let dir = std::env::temp_dir().join(format!("warpscope-kconv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let params = ["nx=32", "ny=32", "steps=3", "block=8,8"];
    let gen = warpscope(&[&["gen", "hotspot", "-o", &p("a.wst")][..], &params].concat());
    assert!(gen.status.success());
    for (from, to) in [("a.wst", "b.wsb"), ("b.wsb", "c.wst")] {
        let out = warpscope(&["convert", &p(from), &p(to)]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read_to_string(p("a.wst")).unwrap(),
        std::fs::read_to_string(p("c.wst")).unwrap()
    );
    let out = warpscope(&["convert", &p("b.wsb"), &p("n.trc"), "--to", "nugteren"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("n_00.trc") && err.contains("n_02.trc"),
        "{err}"
    );
    assert!(!dir.join("n.trc").exists() && !dir.join("n_00.trc.part").exists());
    // A broken fourth kernel.
    let text = std::fs::read_to_string(p("a.wst")).unwrap()
        + "kernel broken grid=1 block=1\n0 0 ld_x 0 ld 0xZZ 4\n";
    std::fs::write(p("cut.wst"), text).unwrap();
    let out = warpscope(&["convert", &p("cut.wst"), &p("cut.wsb")]);
    assert!(!out.status.success());
    assert!(!dir.join("cut.wsb").exists() && !dir.join("cut.wsb.part").exists());
    let out = warpscope(&["convert", &p("cut.wst"), &p("cut.wsb"), "--allow-truncated"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("converted the 3 complete kernel(s)"), "{err}");
    let whole = json(&["sim", "--json", "--trace", &p("b.wsb")]);
    let kept = json(&["sim", "--json", "--trace", &p("cut.wsb")]);
    assert_eq!(kept, whole);
    std::fs::remove_dir_all(&dir).ok();
}

/// Our binary format goes CTA by CTA: `gen` writes each CTA as it is built, `sim` simulates
/// each as it is read (the scheduler holds the resident ones), and `convert` from `.wsb` to
/// `.wsb` copies CTA by CTA. Under several configurations the result is the one of the trace
/// read whole first (`--allow-truncated` reads it whole); a file cut inside a kernel's CTAs
/// converts, when allowed, to a complete file of the kernels before it.
/// `sim` on `trace`, streamed, gives the report of the trace read whole (`--allow-truncated`
/// reads it whole first) under several schedules, SM counts and selections.
fn assert_streamed_run_equals_whole(trace: &str) {
    for flags in [
        &["--preset", "fermi-16k"][..],
        &[
            "--sms",
            "4",
            "--all-sms",
            "--schedule",
            "gto",
            "--max-ctas",
            "2",
        ][..],
        &[
            "--schedule",
            "two-level",
            "--warp-size",
            "8",
            "--sms",
            "3",
            "--sm",
            "1",
        ][..],
    ] {
        let whole = json(
            &[
                &[
                    "sim",
                    "--json",
                    "--allow-truncated",
                    "--jobs",
                    "1",
                    "--trace",
                    trace,
                ][..],
                flags,
            ]
            .concat(),
        );
        // On one thread, and with the SMs split over three.
        for jobs in ["1", "3"] {
            let streamed = json(
                &[
                    &["sim", "--json", "--jobs", jobs, "--trace", trace][..],
                    flags,
                ]
                .concat(),
            );
            assert_eq!(streamed, whole, "{trace} {flags:?} --jobs {jobs}");
        }
        assert!(whole["requests"].as_u64().unwrap() > 0, "{flags:?}");
    }
}

/// A Nugteren et al. file streams CTA by CTA: read once (the grid from its last line) where
/// its CTAs come in order, threads interleaved within each, as the released model's tracer
/// writes them; read again in two walks, with a note, where they do not; compressed, through
/// the external sort. Each gives the result of the file read whole, with and without the
/// timing model.
#[test]
fn a_nugteren_file_streams_once_or_again_in_two_walks() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let out = warpscope(&[
        "gen",
        "matmul",
        "n=32",
        "block=8,8",
        "--to",
        "nugteren",
        "-o",
        &p("m.trc"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(p("m.trc")).unwrap();
    let (head, body) = text.split_once('\n').unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let cta = |l: &&str| l.split(' ').next().unwrap().parse::<u32>().unwrap() / 64;
    // Threads interleaved within each CTA (a warp instruction at a time, as Ocelot emulates).
    let mut interleaved = lines.clone();
    interleaved.sort_by_key(|l| {
        (
            cta(l),
            l.split(' ').next().unwrap().parse::<u32>().unwrap() % 7,
        )
    });
    // The first CTA moved to the end.
    let (first, rest): (Vec<&str>, Vec<&str>) = lines.iter().partition(|l| cta(l) == 0);
    let write = |name: &str, rows: &[&str]| {
        std::fs::write(p(name), format!("{head}\n{}\n", rows.join("\n"))).unwrap();
    };
    write("inter.trc", &interleaved);
    write("late.trc", &[rest, first].concat());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    std::fs::write(p("m.trc.gz"), gz.finish().unwrap()).unwrap();
    let note = |t: &str, extra: &[&str]| {
        let out = warpscope(&[&["sim", "--json", "--trace", t][..], extra].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (String::from_utf8_lossy(&out.stderr).into_owned(), report)
    };
    let timed = ["--compat", "gpu-cache-model"];
    let (_, want) = note(&p("m.trc"), &timed);
    for t in ["m.trc", "inter.trc", "late.trc", "m.trc.gz"] {
        assert_streamed_run_equals_whole(&p(t));
        let (stderr, got) = note(&p(t), &timed);
        assert_eq!(got["kernels"], want["kernels"], "{t}");
        assert_eq!(got["totals"], want["totals"], "{t}");
        let again = stderr.contains("CTAs are not in order; it is read again, in two passes");
        assert_eq!(again, t == "late.trc", "{t}: {stderr}");
    }
}

/// A cuda-memtrace file streams in issue order, a chunk at a time: `sim` gives the result of
/// the file read whole, and `convert` writes a `.wsb` that simulates the same.
#[test]
fn a_memtrace_file_streams_in_issue_order() {
    let dir = std::env::temp_dir().join(format!("warpscope-memtrace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    memtrace_file(std::path::Path::new(&p("m.trc")));
    assert_streamed_run_equals_whole(&p("m.trc"));
    let conv = warpscope(&["convert", &p("m.trc"), &p("m.wsb")]);
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let sim = |t: &str| json(&["sim", "--json", "--sms", "4", "--all-sms", "--trace", t]);
    let mut from_trc = sim(&p("m.trc"));
    let mut from_wsb = sim(&p("m.wsb"));
    for r in [&mut from_trc, &mut from_wsb] {
        r.as_object_mut().unwrap().remove("trace");
    }
    assert_eq!(from_wsb, from_trc);
    assert_eq!(from_trc["kernels"].as_array().unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An NVBit log streams in issue order, a launch at a time: `sim` gives the result of the log
/// read whole, and `convert` writes a `.wsb` that simulates the same. `sim` reads it once,
/// taking instructions as they come; a log whose launches interleave is read again, in two
/// passes (which read it whole), with a note, and gives the same result too.
#[test]
fn an_nvbit_log_streams_in_issue_order() {
    let dir = std::env::temp_dir().join(format!("warpscope-nvbit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    nvbit_file(std::path::Path::new(&p("m.log")), false);
    assert_streamed_run_equals_whole(&p("m.log"));
    nvbit_file(std::path::Path::new(&p("mixed.log")), true);
    assert_streamed_run_equals_whole(&p("mixed.log"));
    let notes = |t: &str| {
        let out = warpscope(&["sim", "--json", "--trace", t]);
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(!notes(&p("m.log")).contains("read again"));
    let note = notes(&p("mixed.log"));
    assert!(
        note.contains("launches interleave; it is read again, in two passes"),
        "{note}"
    );
    // `sweep` reads them once (or again) too: the rows of the logs read whole.
    for log in ["m.log", "mixed.log"] {
        let (trace, out) = (p(log), p("rows.json"));
        let rows = |whole: bool| {
            let mut args = vec![
                "sweep",
                "--trace",
                &trace,
                "-o",
                &out,
                "--vary",
                "ways=1,4",
                "--sms",
                "3",
                "--all-sms",
            ];
            if whole {
                args.push("--allow-truncated");
            }
            let o = warpscope(&args);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::read_to_string(&out).unwrap()
        };
        assert_eq!(rows(false), rows(true), "{log}");
    }
    // The request table too: read once, or read again after the first read stopped (the
    // table it had begun is dropped), it is the table of the log read whole.
    #[cfg(feature = "tables")]
    for log in ["m.log", "mixed.log"] {
        let trace = p(log);
        let export = |table: &str, whole: bool| {
            let mut args = vec!["sim", "--trace", &trace, "--export", table];
            if whole {
                args.push("--allow-truncated");
            }
            let out = warpscope(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::read_to_string(table).unwrap()
        };
        let (streamed, whole) = (p("streamed.csv"), p("whole.csv"));
        let got = export(&streamed, false);
        assert!(got.lines().count() > 100, "{log}");
        assert_eq!(got, export(&whole, true), "{log}");
        assert!(!dir.join("streamed.csv.part").exists());
    }
    let conv = warpscope(&["convert", &p("m.log"), &p("m.wsb")]);
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    let sim = |t: &str| json(&["sim", "--json", "--sms", "4", "--all-sms", "--trace", t]);
    let mut from_log = sim(&p("m.log"));
    let mut from_wsb = sim(&p("m.wsb"));
    for r in [&mut from_log, &mut from_wsb] {
        r.as_object_mut().unwrap().remove("trace");
    }
    assert_eq!(from_wsb, from_log);
    assert_eq!(from_log["kernels"].as_array().unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh temporary folder named for `what`, and `gen hotspot` 32x32 in 8x8 blocks for
/// `steps` launches written in it as `file`.
fn hotspot_in(what: &str, steps: u32, file: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("warpscope-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let steps = format!("steps={steps}");
    let out = dir.join(file);
    let gen = warpscope(&[
        "gen",
        "hotspot",
        "nx=32",
        "ny=32",
        &steps,
        "block=8,8",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(gen.status.success());
    dir
}

/// Per-thread formats (Nugteren et al., Crawford) stream through an external sort: `sim`
/// gives the result of the trace read whole, whatever order the threads' lines are in.
#[test]
fn per_thread_traces_stream_through_a_sort() {
    let dir = hotspot_in("pthread", 1, "h.wsb");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let out = warpscope(&["convert", &p("h.wsb"), &p("n.trc"), "--to", "nugteren"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same kernel with its threads' lines interleaved, the last thread first.
    // One kernel: written as `n.trc` itself.
    let text = std::fs::read_to_string(p("n.trc")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let mut by_thread: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
    for l in lines {
        let tid: u64 = l.split(' ').next().unwrap().parse().unwrap();
        by_thread.entry(tid).or_default().push(l);
    }
    let mut queues: Vec<std::collections::VecDeque<&str>> =
        by_thread.into_values().rev().map(Into::into).collect();
    let mut mixed = header + "\n";
    while queues.iter().any(|q| !q.is_empty()) {
        for q in queues.iter_mut() {
            if let Some(l) = q.pop_front() {
                mixed.push_str(l);
                mixed.push('\n');
            }
        }
    }
    std::fs::write(p("mixed.trc"), &mixed).unwrap();
    assert_streamed_run_equals_whole(&p("mixed.trc"));
    let sim = |t: &str| {
        let mut r = json(&["sim", "--json", "--trace", t]);
        r.as_object_mut().unwrap().remove("trace");
        r
    };
    assert_eq!(sim(&p("mixed.trc")), sim(&p("n.trc")));
    // Crawford: two executions of 16x4 work-groups, records in reverse thread order.
    let mut crawford = String::from("local size:16 4\n");
    for exec in 0..2u64 {
        for i in (0..64 * 24u64).rev() {
            let (x, y, iter) = (i % 64, i / 64 % 8, i / 512);
            let gid = x | y << 20;
            let addr = 0x1000 + 4 * (x + 64 * (y + 8 * iter)) + exec * 0x10_0000;
            let (ty, code) = if iter == 2 {
                (0xAu64, 0x31Au64)
            } else {
                (0xF, 0x319)
            };
            crawford.push_str(&format!(
                "{:#x}|{gid:#x}|{:#x}\n",
                addr << 32 | ty << 28 | code,
                (iter + 1) << 40
            ));
        }
        crawford.push_str("--\n");
    }
    std::fs::write(p("c.trace"), crawford).unwrap();
    assert_streamed_run_equals_whole(&p("c.trace"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CSV tables are read twice and hand their rows on CTA by CTA: rows in CTA and thread
/// order as they come, rows in any other order through the external sort. Both give the
/// result of the table read whole, and of the trace the table was made from.
#[test]
#[cfg(feature = "tables")]
fn csv_tables_stream_cta_by_cta() {
    let dir = hotspot_in("table", 2, "h.wst");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    // Each launch's rows as CSV lines, by thread (as `gen` writes them), launches numbered.
    let text = std::fs::read_to_string(p("h.wst")).unwrap();
    let mut launches: Vec<Vec<(String, String)>> = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.first() {
            Some(&"kernel") => launches.push(Vec::new()),
            Some(first) if first.as_bytes()[0].is_ascii_digit() => {
                let (c, t): (Vec<&str>, Vec<&str>) =
                    (f[0].split(',').collect(), f[1].split(',').collect());
                let row = format!(
                    "{},{},{},{},{},{},{}",
                    c[0], c[1], t[0], t[1], f[2], f[4], f[5]
                );
                let k = launches.len() - 1;
                launches[k].push((f[1].to_string() + " " + f[0], format!("{k},{row},{}", f[6])));
            }
            _ => {}
        }
    }
    let head = "kernel,cta_x,cta_y,thread_x,thread_y,inst,kind,address,size\n";
    let grouped: String = launches
        .iter()
        .flatten()
        .map(|(_, r)| r.clone() + "\n")
        .collect();
    std::fs::write(p("g.csv"), format!("{head}{grouped}")).unwrap();
    // The same rows, each launch's threads round-robin, the last thread first.
    let mut mixed = String::from(head);
    for rows in &launches {
        let mut by_thread: std::collections::BTreeMap<&str, std::collections::VecDeque<&str>> =
            Default::default();
        for (t, r) in rows {
            by_thread.entry(t).or_default().push_back(r);
        }
        let mut queues: Vec<_> = by_thread.into_values().rev().collect();
        while queues.iter().any(|q| !q.is_empty()) {
            for q in queues.iter_mut() {
                if let Some(r) = q.pop_front() {
                    mixed.push_str(r);
                    mixed.push('\n');
                }
            }
        }
    }
    assert_ne!(mixed, format!("{head}{grouped}"));
    std::fs::write(p("m.csv"), &mixed).unwrap();
    assert_streamed_run_equals_whole(&p("g.csv"));
    assert_streamed_run_equals_whole(&p("m.csv"));
    let sim = |t: &str| {
        let mut r = json(&["sim", "--json", "--trace", t]);
        r.as_object_mut().unwrap().remove("trace");
        r
    };
    let from_table = sim(&p("m.csv"));
    assert_eq!(from_table, sim(&p("g.csv")));
    let from_text = sim(&p("h.wst"));
    for key in [
        "accesses",
        "hits",
        "misses",
        "miss_classes",
        "requests",
        "ctas",
        "reuse",
    ] {
        assert!(from_table.get(key).is_some(), "{key}");
        assert_eq!(from_table[key], from_text[key], "{key}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_binary_trace_streams_cta_by_cta() {
    let dir = std::env::temp_dir().join(format!("warpscope-ctastream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let params = ["nx=48", "ny=48", "steps=3", "block=8,8"];
    let gen = warpscope(&[&["gen", "hotspot", "-o", &p("h.wsb")][..], &params].concat());
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let copy = warpscope(&["convert", &p("h.wsb"), &p("copy.wsb")]);
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    assert_eq!(
        std::fs::read(p("h.wsb")).unwrap(),
        std::fs::read(p("copy.wsb")).unwrap()
    );
    assert_streamed_run_equals_whole(&p("h.wsb"));
    // Cut in the middle of the second kernel's chunks.
    let bytes = std::fs::read(p("h.wsb")).unwrap();
    let index_at = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap()) as usize;
    let kernel_starts: Vec<usize> = {
        let index =
            warpscope::trace::binary::Index::read(&mut std::io::Cursor::new(&bytes), "h.wsb")
                .unwrap();
        index.kernels.iter().map(|k| k.offset as usize).collect()
    };
    assert_eq!(kernel_starts.len(), 3);
    let cut = (kernel_starts[1] + kernel_starts[2]) / 2;
    assert!(cut < index_at);
    std::fs::write(p("cut.wsb"), &bytes[..cut]).unwrap();
    let out = warpscope(&["convert", &p("cut.wsb"), &p("kept.wsb")]);
    assert!(!out.status.success());
    assert!(!dir.join("kept.wsb").exists() && !dir.join("kept.wsb.part").exists());
    for kept in ["kept.wsb", "kept.wst"] {
        let out = warpscope(&["convert", &p("cut.wsb"), &p(kept), "--allow-truncated"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("converted the 1 complete kernel(s)"), "{err}");
        let t = warpscope::trace::load(std::path::Path::new(&p(kept)), Default::default(), &|s| s)
            .unwrap();
        assert_eq!(t.trace.kernels.len(), 1, "{kept}");
    }
    let first = warpscope::trace::binary::read(&bytes[..], "h.wsb")
        .unwrap()
        .kernels[0]
        .clone();
    let kept =
        warpscope::trace::binary::read(&std::fs::read(p("kept.wsb")).unwrap()[..], "k").unwrap();
    assert_eq!(kept.kernels, vec![first]);
    std::fs::remove_dir_all(&dir).ok();
}

/// An Accel-Sim trace directory of two kernels: a row-times-column product over a 4x4 grid
/// of 8x8 CTAs (two warps each), loads of A along a row (mode 1) and of B down a column
/// (mode 0), one store, and a kernel with a single CTA of 40 threads (a partial warp).
fn write_accel_sim_dir(dir: &std::path::Path) {
    let n: u64 = 32;
    let mut k1 = String::from(
        "-kernel name = product\n-grid dim = (4,4,1)\n-block dim = (8,8,1)\n-accelsim tracer version = 4\n\n",
    );
    for by in 0..4u64 {
        for bx in 0..4u64 {
            k1 += &format!("#BEGIN_TB\nthread block = {bx},{by},0\n");
            for w in 0..2u64 {
                k1 += &format!("warp = {w}\ninsts = 18\n");
                for k in 0..8u64 {
                    // Lane l is thread (x, y) = (l % 8, w * 4 + l / 8) of the block.
                    let a: String = (0..32u64)
                        .map(|l| {
                            let row = by * 8 + w * 4 + l / 8;
                            format!(" {:#x}", 0x10000 + 4 * (row * n + k))
                        })
                        .collect();
                    k1 += &format!("0100 ffffffff 1 R2 LDG.E 1 R4 4 0{a}\n");
                    let col = bx * 8;
                    k1 += &format!(
                        "0110 ffffffff 1 R3 LDG.E 1 R6 4 1 {:#x} 4\n",
                        0x20000 + 4 * (k * n + col)
                    );
                }
                k1 += &format!(
                    "0200 ffffffff 0 STG.E 2 R8 R3 4 1 {:#x} 4\n0210 ffffffff 0 EXIT 0 0\n",
                    0x30000 + 4 * ((by * 8 + w * 4) * n + bx * 8)
                );
            }
            k1 += "#END_TB\n\n";
        }
    }
    let k2 = "-kernel name = tail\n-grid dim = (1,1,1)\n-block dim = (40,1,1)\n-accelsim tracer version = 4\n\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\ninsts = 1\n0010 000000ff 1 R1 LDG.E 1 R2 4 1 0x10000 4\n#END_TB\n";
    std::fs::write(dir.join("kernel-1.traceg"), k1).unwrap();
    std::fs::write(dir.join("kernel-2.traceg"), k2).unwrap();
    std::fs::write(
        dir.join("kernelslist.g"),
        "MemcpyHtoD,0x0000000000010000,4096\nkernel-1.traceg\nkernel-2.traceg\n",
    )
    .unwrap();
}

#[test]
fn an_accel_sim_trace_streams_cta_by_cta_with_the_result_of_reading_it_whole() {
    let dir = std::env::temp_dir().join(format!("warpscope-accelstream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_accel_sim_dir(&dir);
    let d = dir.to_str().unwrap();
    assert_streamed_run_equals_whole(d);
    // Converted CTA by CTA to our binary format, it is the trace read whole.
    let wsb = dir.join("t.wsb");
    let out = warpscope(&["convert", d, wsb.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let load = |p: &std::path::Path| {
        warpscope::trace::load(p, Default::default(), &|s| s)
            .unwrap()
            .trace
    };
    assert!(load(&wsb) == load(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_whose_ctas_all_went_to_other_sms_says_so() {
    let din = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-traces/dinero-small.din"
    );
    let out = warpscope(&["sim", "--json", "--trace", din, "--sms", "4", "--sm", "2"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("none of the trace's 12 accesses ran on the simulated SM(s) [2]"),
        "{err}"
    );
    let out = warpscope(&["sim", "--json", "--trace", din, "--sms", "4"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
#[cfg(feature = "tables")]
fn hwcheck_agrees_with_the_committed_h100_counters_and_fails_on_a_difference() {
    let out = warpscope(&["hwcheck", "hw/h100/counters.csv"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("28 of 28 cases have equal requests and sectors"),
        "{text}"
    );
    let v = json(&["hwcheck", "hw/h100/counters.csv", "--json"]);
    assert_eq!(v["agree"], true);
    assert_eq!(v["cases"][0]["measured"]["load"]["sectors"], 65536);
    // One sector more in the first row: exit status 1, and the table shows where.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("counters.csv");
    let csv = std::fs::read_to_string("hw/h100/counters.csv").unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let col = lines[0]
        .split(',')
        .position(|c| c == "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
        .unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
    assert_eq!(cells[col], "65536");
    cells[col] = "65537".into();
    lines[1] = cells.join(",");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let out = warpscope(&["hwcheck", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("65537 ≠ 65536"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 28 cases differ"));
    // A row without counters is named by its line.
    lines[3] = "matmul n=64 block=16,16".into();
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let err =
        String::from_utf8_lossy(&warpscope(&["hwcheck", bad.to_str().unwrap()]).stderr).to_string();
    assert!(
        err.contains("line 4") && err.contains("counters.csv"),
        "{err}"
    );
}

/// A user's own kernel against Nsight Compute's raw CSV of it (the worked example of
/// docs/hardware.md): equal requests and sectors, equal load hits and L2 reads; a report
/// whose launches do not match the trace's kernels is an error naming why.
#[test]
#[cfg(feature = "tables")]
fn hwcheck_of_your_own_kernel_against_ncus_raw_csv() {
    let dir = "sample-traces/h100-matmul";
    let (report, trace) = (format!("{dir}/ncu.csv"), format!("{dir}/matmul.wsb"));
    let args = ["hwcheck", "--ncu", &report, "--trace", &trace];
    let v = json(&[&args[..], &["--json"]].concat());
    assert_eq!(v["agree"], true);
    let l = &v["launches"][0];
    for op in ["load", "store"] {
        for count in ["requests", "sectors"] {
            assert_eq!(
                l["measured"][op][count], l["simulated"][op][count],
                "{op} {count}"
            );
        }
    }
    assert_eq!(l["measured"]["load"]["sector_hits"], 28672);
    assert_eq!(l["simulated"]["load"]["sector_hits"], 28672);
    assert_eq!(l["l1_fill_sectors"]["measured"], 4096);
    assert_eq!(l["l1_fill_sectors"]["simulated"], 4096);
    assert!(l["l2"]["measured"].is_null() && l["l2"]["simulated"]["sectors"].is_u64());
    // Two launches in the report, one kernel in the trace.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&report).unwrap();
    let last = text.lines().last().unwrap().to_string();
    let two = tmp.path().join("two.csv");
    std::fs::write(
        &two,
        format!("{text}{}\n", last.replacen("\"2\"", "\"3\"", 1)),
    )
    .unwrap();
    let out = warpscope(&["hwcheck", "--ncu", two.to_str().unwrap(), "--trace", &trace]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("the report has 2 launches and the trace 1 kernels"),
        "{err}"
    );
    // Another block size than the trace's kernel: named with the report's line.
    let other = tmp.path().join("other.csv");
    std::fs::write(&other, text.replacen("\"(16, 16, 1)\"", "\"(8, 8, 1)\"", 1)).unwrap();
    let out = warpscope(&[
        "hwcheck",
        "--ncu",
        other.to_str().unwrap(),
        "--trace",
        &trace,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("launch 0 (line 3 of the report): its block is (8,8,1) there and (16,16,1)"),
        "{err}"
    );
}

#[test]
fn analyze_json_of_a_sample_accel_sim_trace_and_the_merging_micro_benchmark() {
    // Instructions, the opcode mix and independent loads from the Accel-Sim trace's
    // instructions and registers; requests and transactions through the gt200 coalescer.
    let v = json(&[
        "analyze",
        "--trace",
        "sample-traces/accelsim-matrixmul",
        "--json",
    ]);
    let k = &v["kernels"][0];
    assert_eq!(k["sources"]["instructions"], "trace");
    assert_eq!(k["sources"]["independent_loads"], "trace");
    assert!(k["inputs"]["independent_loads"].as_f64().unwrap() > 1.0);
    assert_eq!(k["what_ifs"].as_array().unwrap().len(), 4);
    insta::assert_json_snapshot!("analyze_accelsim_matrixmul", v);
    // The thesis's 32-byte tuning run, smaller: every warp on its own memory (no duplicate),
    // two 32-byte transactions per request, memory-bound with MWP set by the latency.
    let v = json(&[
        "analyze", "--kernel", "merging", "width=32", "iters=10", "--json",
    ]);
    let k = &v["kernels"][0];
    assert_eq!(
        k["inputs"]["transactions"],
        serde_json::json!([80.0, 0.0, 0.0])
    );
    assert_eq!(k["inputs"]["duplicate_loads"], 1.0);
    assert_eq!(k["verdict"], "memory-bound");
    assert_eq!(k["analysis"]["mwp_limit"], "latency");
    insta::assert_json_snapshot!("analyze_merging_32", v);
    // Errors: an unknown GPU, a bad departure delay.
    let out = warpscope(&["analyze", "--kernel", "vecadd", "--gpu", "gtx9000"]);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("unknown GPU `gtx9000` (expected one of: gt200)"));
    let out = warpscope(&["analyze", "--kernel", "vecadd", "--departure-delay", "37,x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--departure-delay"));
}

#[test]
fn explain_tells_why_a_dinero_reference_missed() {
    // A direct-mapped 64-byte cache of 32-byte lines: every line of the sample maps to set 0.
    let args = [
        "explain",
        "--trace",
        "sample-traces/dinero-small.din",
        "--cache-size",
        "64",
        "--ways",
        "1",
        "--line-size",
        "32",
        "--sector-size",
        "32",
        "--request",
        "7",
    ];
    let v = json(&[&args[..], &["--json"]].concat());
    assert_eq!(v["why"], "capacity");
    assert_eq!(v["previous"]["request"], 1);
    assert_eq!(v["eviction"]["by"]["request"], 3);
    assert_eq!(v["counterfactuals"][1]["change"], "4 ways (256 B)");
    assert_eq!(v["counterfactuals"][1]["hit"], true);
    insta::assert_json_snapshot!("explain_dinero_small", v);
    // The text: the story, then the evidence.
    let out = warpscope(&args);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("Request 7: capacity miss (SM 0, order 7)"),
        "{text}"
    );
    assert!(
        text.replace('\n', " ")
            .contains("a direct-mapped set holds one line"),
        "{text}"
    );
    // A request past the end says how many there are.
    let out = warpscope(&[
        "explain",
        "--trace",
        "sample-traces/dinero-small.din",
        "--request",
        "12",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("there is no request 12: this run has 12 (numbered from 0)"),
        "{err}"
    );
}

#[test]
fn explain_follows_a_missed_line_into_its_l2_slice() {
    // Fermi's 14 SMs and its L2: request 200 (SM 2's first use of a line of A) misses in its
    // L1 and hits in the L2, where SM 0's request 196 brought the line in.
    let args = [
        "explain",
        "--kernel",
        "matmul",
        "n=64",
        "--preset",
        "fermi-16k",
        "--all-sms",
        "--request",
        "200",
    ];
    let v = json(&[&args[..], &["--json"]].concat());
    assert_eq!(v["why"], "compulsory");
    let l2 = &v["l2"];
    assert_eq!(
        (l2["slice"].as_u64(), l2["hit"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(l2["brought_in_by"]["request"], 196);
    assert_eq!(l2["brought_in_by"]["sm"], 0);
    assert_eq!(l2["brought_in_as"], "fetch");
    let out = warpscope(&args);
    let text = String::from_utf8(out.stdout).unwrap().replace('\n', " ");
    assert!(
        text.contains("It went on to L2 slice 1, set 44, where it hit: request 196"),
        "{text}"
    );
    // With one SM simulated the L2 is not, and explain says nothing of it.
    let one = json(&[
        "explain",
        "--kernel",
        "matmul",
        "n=64",
        "--preset",
        "fermi-16k",
        "--request",
        "3",
        "--json",
    ]);
    assert!(one.get("l2").is_none());
}

#[test]
fn a_bypassed_l1_misses_every_request_and_sends_it_to_the_l2() {
    // --l1-bypass on: the L1 holds nothing; with an L2 of one slice every reference reaches
    // it as it was asked (tests/model/l2.rs and tools/compare-oracles check what it does).
    let trace = ["--trace", "sample-traces/dinero-small.din"];
    let l2 = [
        "--all-sms",
        "--l2",
        "channels=1",
        "--l2",
        "slices-per-channel=1",
        "--line-size",
        "32",
        "--sector-size",
        "32",
    ];
    let bypassed = json(&[&["sim"], &trace[..], &l2, &["--l1-bypass", "on", "--json"]].concat());
    let t = &bypassed;
    assert_eq!(t["hits"], 0);
    assert_eq!(t["misses"], t["requests"]);
    assert_eq!(
        t["miss_classes"]["conflict"], 0,
        "nothing can conflict in no lines"
    );
    assert_eq!(bypassed["l2"]["requests"], t["requests"]);
    assert_eq!(bypassed["config"]["cache"]["bypass"], true);
    // The text says so, and explain calls each miss bypassed, with what caching would do.
    let out = warpscope(&[&["sim"], &trace[..], &["--l1-bypass", "on"]].concat());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("L1 bypassed (l1-bypass on)"), "{text}");
    let v = json(
        &[
            &["explain"],
            &trace[..],
            &["--l1-bypass", "on", "--request", "3", "--json"],
        ]
        .concat(),
    );
    assert_eq!(v["why"], "bypassed");
    assert_eq!(
        v["counterfactuals"][0]["change"],
        "the L1 caching global data (l1-bypass off)"
    );
    // The timing model times the L1: it refuses a bypassed one.
    let out = warpscope(&[&["sim"], &trace[..], &["--l1-bypass", "on", "--timing"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("l1-bypass off"));
}

#[test]
fn a_kernel_source_simulates_and_generates_as_its_built_in_twin() {
    // sim --source gives the built-in kernel's report; gen --source writes the same file.
    let ours = json(&["sim", "--source", "kernels/matmul.wsk", "n=32", "--json"]);
    let theirs = json(&["sim", "--kernel", "matmul", "n=32", "--json"]);
    assert_eq!(ours["totals"], theirs["totals"]);
    assert_eq!(ours["instructions"], theirs["instructions"]);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.wst"), dir.path().join("b.wst"));
    for (args, out) in [
        (
            vec![
                "gen",
                "--source",
                "kernels/stencil2d.wsk",
                "nx=20",
                "ny=12",
                "-o",
            ],
            &a,
        ),
        (vec!["gen", "stencil2d", "nx=20", "ny=12", "-o"], &b),
    ] {
        let mut args = args.clone();
        args.push(out.to_str().unwrap());
        assert!(warpscope(&args).status.success(), "{args:?}");
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // A mistake names the file, line and column; nothing is written.
    let bad = dir.path().join("bad.wsk");
    std::fs::write(
        &bad,
        "param n = 4;\ngrid(1);\nblock(n)\nfloat a[n];\nkernel k { }\n",
    )
    .unwrap();
    let out = warpscope(&["sim", "--source", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.wsk:3:9: expected `;`"), "{err}");
    let c = dir.path().join("c.wst");
    let out = warpscope(&[
        "gen",
        "--source",
        bad.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ]);
    assert!(!out.status.success() && !c.exists());
    // Explain and the other commands read it too.
    let v = json(&[
        "explain",
        "--source",
        "kernels/vecadd.wsk",
        "n=64",
        "--request",
        "1",
        "--json",
    ]);
    assert_eq!(v["request"]["request"], 1);
    assert_eq!(v["asked"]["kernel_name"], "vecadd");
}

#[test]
fn lessons_list_and_run_their_comparisons() {
    let out = warpscope(&["lesson"]);
    assert!(out.status.success());
    let list = String::from_utf8(out.stdout).unwrap();
    assert_eq!(list.lines().count(), 5, "{list}");
    assert!(list.starts_with("coalescing"), "{list}");
    let v = json(&["lesson", "set-conflicts", "--json"]);
    let conflicts = |i: usize| {
        v["panes"][i]["totals"]["miss_classes"]["conflict"]
            .as_u64()
            .unwrap()
    };
    assert!(conflicts(0) > 10_000 && conflicts(1) == 0);
    assert_eq!(v["panes"][0]["label"], "modulo index");
    let v = json(&["lesson", "coalescing", "--json"]);
    assert_eq!(v["panes"][0]["totals"]["requests"], 16);
    assert_eq!(v["panes"][1]["totals"]["requests"], 512);
    // What the lessons' texts say of their panes' numbers.
    let totals = |v: &serde_json::Value, i: usize, what: &str| {
        let t = &v["panes"][i]["totals"];
        t[what]
            .as_u64()
            .or(t["miss_classes"][what].as_u64())
            .unwrap() as f64
    };
    let v = json(&["lesson", "set-conflicts", "--json"]);
    // "Every write misses" with the modulo index.
    assert_eq!(totals(&v, 0, "misses"), totals(&v, 0, "requests"));
    let v = json(&["lesson", "tiling", "--json"]);
    // "Far fewer L1 requests", a higher miss rate but fewer misses.
    assert!(totals(&v, 1, "requests") * 5.0 < totals(&v, 0, "requests"));
    assert!(totals(&v, 1, "misses") < totals(&v, 0, "misses"));
    assert!(
        totals(&v, 1, "misses") / totals(&v, 1, "requests")
            > totals(&v, 0, "misses") / totals(&v, 0, "requests")
    );
    let v = json(&["lesson", "latency-and-mshrs", "--json"]);
    // Pane 1: "over a third of the misses" are latency misses; pane 3 "misses about half as
    // often" as pane 2.
    assert!(totals(&v, 0, "latency") * 3.0 > totals(&v, 0, "misses"));
    let half = totals(&v, 2, "misses") / totals(&v, 1, "misses");
    assert!((0.4..0.6).contains(&half), "{half}");
    assert!(totals(&v, 1, "mshr") > 0.0);
    let out = warpscope(&["lesson", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("the lessons: coalescing"));
}

/// The timing model on a trace file builds its warps' streams from the CTAs as they are read
/// (our binary format, compressed or not; an Accel-Sim trace) or reads it whole first (a
/// small file of a format sorted on the way: our text format): the report is the one of the
/// trace read whole (`--allow-truncated` reads it whole first), and of the built-in kernel.
#[test]
fn the_timing_model_on_a_streamed_trace_gives_the_whole_reads_result() {
    let dir = std::env::temp_dir().join(format!("warpscope-timed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let kernel = ["matmul-tiled", "n=64"];
    let gen = warpscope(&[&["gen"][..], &kernel, &["-o", &p("t.wst")]].concat());
    assert!(gen.status.success());
    let out = warpscope(&["convert", &p("t.wst"), &p("t.wsb")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(p("t.wsb")).unwrap();
    std::fs::write(p("t.wsb.zst"), zstd::encode_all(&bytes[..], 1).unwrap()).unwrap();
    let without_source = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("source");
        v
    };
    for flags in [
        &["--preset", "gtx470-16k", "--sms", "3", "--all-sms"][..],
        &["--compat", "gpu-cache-model", "--miss-latency-stddev", "3"][..],
    ] {
        let sim = |input: &[&str], more: &[&str]| {
            without_source(json(&[&["sim", "--json"][..], input, flags, more].concat()))
        };
        let generated = sim(&[&["--kernel"][..], &kernel].concat(), &[]);
        assert!(generated["timing"]["time_steps"].as_u64().unwrap() > 0);
        for file in ["t.wst", "t.wsb", "t.wsb.zst", ACCELSIM_MM] {
            let path = if file == ACCELSIM_MM {
                file.to_string()
            } else {
                p(file)
            };
            let whole = sim(&["--trace", &path], &["--allow-truncated"]);
            for jobs in ["1", "2"] {
                let streamed = sim(&["--trace", &path], &["--jobs", jobs]);
                assert_eq!(streamed, whole, "{file} {flags:?} --jobs {jobs}");
            }
            if file != ACCELSIM_MM {
                assert_eq!(whole, generated, "{file} {flags:?}");
            }
        }
    }
    // The per-request table of a streamed run is the whole read's.
    #[cfg(feature = "tables")]
    {
        for (table, more) in [
            ("streamed.csv", &[][..]),
            ("whole.csv", &["--allow-truncated"][..]),
        ] {
            let (wsb, table) = (p("t.wsb"), p(table));
            let args = [
                &["sim", "--trace", &wsb, "--export", &table][..],
                flags_of_released(),
                more,
            ];
            let out = warpscope(&args.concat());
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let read = |n: &str| std::fs::read_to_string(p(n)).unwrap();
        assert!(read("whole.csv").lines().count() > 1000);
        assert_eq!(read("streamed.csv"), read("whole.csv"));
    }
    // A file cut short fails the run, naming where, and prints no report.
    std::fs::write(p("cut.wsb"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = warpscope(
        &[
            &["sim", "--json", "--trace", &p("cut.wsb")][..],
            flags_of_released(),
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && out.stdout.is_empty(), "{err}");
    assert!(err.contains("cut.wsb") && err.contains("byte"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

fn flags_of_released() -> &'static [&'static str] {
    &["--compat", "gpu-cache-model", "--miss-latency-stddev", "3"]
}

/// A `din` file is streamed, so reuse distances `auto` are sampled once the trace touches
/// more lines than the sample holds: the report says so, and every count is the exact run's;
/// `--reuse off` reports none and `--no-reuse` is the same.
#[test]
fn a_streamed_file_samples_its_reuse_distances_by_default_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.din");
    let mut text = Vec::new();
    warpscope::gen::DinMix::Hostile
        .write(200_000, &mut text)
        .unwrap();
    std::fs::write(&path, text).unwrap();
    let run = |mode: &[&str]| {
        let mut args = vec!["sim", "--json", "--trace", path.to_str().unwrap()];
        args.extend_from_slice(mode);
        json(&args)
    };
    let auto = run(&[]);
    let exact = run(&["--reuse", "exact"]);
    let off = run(&["--reuse", "off"]);
    assert_eq!(auto["reuse"]["method"], "sampled");
    assert!(auto["reuse"]["sampling_rate"].as_f64().unwrap() < 1.0);
    assert!(auto["reuse"]["expected_error"].as_f64().unwrap() > 0.0);
    assert_eq!(auto["config"]["reuse"], "auto");
    assert_eq!(exact["reuse"]["method"], "exact");
    assert_eq!(exact["reuse"]["sampling_rate"], 1.0);
    assert!(off["reuse"].is_null());
    assert_eq!(off, run(&["--no-reuse"]));
    for key in [
        "requests",
        "hits",
        "misses",
        "miss_classes",
        "instructions",
        "bytes_from_memory",
    ] {
        assert_eq!(auto[key], exact[key], "{key}");
        assert_eq!(off[key], exact[key], "{key}");
    }
    // The text report says it too.
    let out = warpscope(&["sim", "--trace", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sampled (SHARDS)"), "{text}");
}
