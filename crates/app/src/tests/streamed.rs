//! The app on a trace file too large to hold: each simulation reads the file as it runs, and
//! the views draw what it gathered. Checked against the same file read whole: the same
//! report, requests, per-instruction and per-CTA splits, set counts and address axis; the
//! views that need the trace in memory say so; a cancel stops the read.
use super::support;
use super::traces;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::data::{Per, SimData, TraceData, XAxis};
use crate::job::Progress;
use crate::views::{AddressView, View};
use crate::worker::{self, Loaded, Source};
use crate::{Settings, Startup, WarpscopeApp};
use egui_kittest::kittest::Queryable;
use warpscope_core::config::{self, SimConfig};
use warpscope_core::trace::ResumePoint;

fn sample(name: &str) -> PathBuf {
    support::sample(name)
}

fn open(path: &Path, whole_up_to: u64) -> Arc<TraceData> {
    let source = Source::File {
        path: path.to_path_buf(),
        format: None,
        allow_truncated: false,
        whole_up_to,
    };
    match worker::load_source(source, &Arc::new(Progress::default())) {
        Ok(Loaded::Trace(t)) => t,
        Ok(Loaded::TooLarge { .. }) => panic!("a file is never too large"),
        Ok(Loaded::Truncated { error }) => panic!("{}: {error}", path.display()),
        Err(e) => panic!("{}: {e:?}", path.display()),
    }
}

/// The app opening `file` streamed (`warpscope --stream FILE`).
fn streaming_app(file: PathBuf) -> WarpscopeApp {
    WarpscopeApp::new(
        Settings::default(),
        Startup {
            file: Some(file),
            fresh: true,
            generator: None,
            window: None,
            sweep: None,
            stream: true,
            shot_streamed: None,
            jobs: 0,
        },
        Arc::new(|| {}),
    )
}

fn run(cfg: &SimConfig, t: &TraceData) -> Arc<SimData> {
    match worker::simulate(cfg.clone(), t, &Arc::new(Progress::default())) {
        Ok(d) => d,
        Err(e) => panic!("{e:?}"),
    }
}

/// Row sums of the set grid: requests and misses per set.
fn per_set(d: &SimData) -> Vec<(u64, u64)> {
    let g = &d.sets;
    (0..g.sets)
        .map(|s| {
            let row = s * g.bins..(s + 1) * g.bins;
            (
                g.accesses[row.clone()].iter().map(|&v| v as u64).sum(),
                g.misses[row].iter().map(|&v| v as u64).sum(),
            )
        })
        .collect()
}

/// Streamed and read whole give the same result in every part the views draw.
fn same(path: &Path, cfg: &SimConfig, same_axis: bool) {
    let whole = open(path, u64::MAX);
    let streamed = open(path, 0);
    assert!(whole.streamed.is_none() && !whole.trace.kernels.is_empty());
    assert!(streamed.streamed.is_some() && streamed.trace.kernels.is_empty());
    let (w, s) = (run(cfg, &whole), run(cfg, &streamed));
    let name = path.display();
    assert!(w.report.totals.requests > 0, "{name}");
    assert_eq!(w.report, s.report, "{name}");
    assert_eq!(
        s.x,
        XAxis::Sampled {
            start: 0,
            stride: 1
        },
        "{name}"
    );
    let (a, b) = (&w.points, &s.points);
    assert_eq!(a.line, b.line, "{name}");
    assert_eq!(a.cta, b.cta, "{name}");
    assert_eq!(a.warp, b.warp, "{name}");
    assert_eq!(a.inst, b.inst, "{name}");
    assert_eq!(a.kernel, b.kernel, "{name}");
    assert_eq!(a.set, b.set, "{name}");
    assert_eq!(a.outcome, b.outcome, "{name}");
    assert_eq!(a.reuse, b.reuse, "{name}");
    assert_eq!(a.thread, b.thread, "{name}");
    assert_eq!(w.per_inst, s.per_inst, "{name}");
    assert_eq!(
        w.miss_tables.rows(Per::Cta),
        s.miss_tables.rows(Per::Cta),
        "{name}"
    );
    assert!(w.per_inst.iter().any(|c| c.misses() > 0), "{name}");
    assert_eq!(per_set(&w), per_set(&s), "{name}");
    assert_eq!(
        w.miss_tables.instruction, s.miss_tables.instruction,
        "{name}"
    );
    let names = |d: &SimData| -> Vec<String> { d.kernels.iter().map(|k| k.name.clone()).collect() };
    assert_eq!(names(&w), names(&s), "{name}");
    let insts = |d: &SimData| -> Vec<Vec<String>> {
        d.kernels
            .iter()
            .map(|k| k.instructions.iter().map(|i| i.name.clone()).collect())
            .collect()
    };
    assert_eq!(insts(&w), insts(&s), "{name}");
    if same_axis {
        assert_eq!(w.segments.ranges, s.segments.ranges, "{name}");
        assert_eq!(w.y, s.y, "{name}");
        // A streamed run labels the arrays too, from the lines its instructions asked for
        // (the whole trace's labels start at the first byte accessed).
        let lb = cfg.cache.line_bytes as u64;
        let labels = |d: &SimData| -> Vec<(u64, String)> {
            d.segments
                .labels
                .iter()
                .map(|(a, t)| (a / lb, t.clone()))
                .collect()
        };
        assert!(!s.segments.labels.is_empty(), "{name}");
        assert_eq!(labels(&w), labels(&s), "{name}");
    }
    for i in [0, a.len() / 2, a.len() - 1] {
        assert_eq!(w.x(i), s.x(i));
        assert_eq!(s.request_number(i), i as u64);
    }
}

/// [`same`] with SM 0 simulated (the axis may differ: one SM's requests are a sample of the
/// run's), then every SM (every request drawn: the same axis).
fn same_on_one_and_every_sm(path: &Path, cfg: &SimConfig) {
    let mut cfg = cfg.clone();
    cfg.gpu.simulate = config::SmSelection::One(0);
    same(path, &cfg, false);
    cfg.gpu.simulate = config::SmSelection::All;
    same(path, &cfg, true);
}

#[test]
fn a_streamed_din_file_gives_the_whole_reads_result() {
    let cfg = SimConfig {
        cache: config::CacheConfig {
            size_bytes: 1024,
            ways: 2,
            line_bytes: 32,
            sector_bytes: 32,
            ..Default::default()
        },
        ..SimConfig::default()
    };
    same(&sample("dinero-small.din"), &cfg, true);
}

#[test]
fn a_streamed_accelsim_trace_gives_the_whole_reads_result() {
    let mut cfg = config::preset("fermi-16k").unwrap();
    same(&sample("accelsim-matrixmul"), &cfg, false);
    // Every SM simulated, GTO: every access makes a request, so the axis is the same too.
    cfg.gpu.simulate = config::SmSelection::All;
    cfg.schedule.policy = config::IssuePolicy::Gto;
    same(&sample("accelsim-matrixmul"), &cfg, true);
}

/// An NVBit `mem_trace` log of three launches (the second has no access line): warps of
/// CTAs going over rows of a matrix with four opcodes, met one by one as the log goes on.
/// With `interleave`, the first and last launches' access lines alternate.
fn nvbit_log(interleave: bool) -> String {
    let launch = |id: u32, grid: u32, block: u32| {
        format!("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x{id:x} - Kernel name k{id} - grid launch id {id} - grid size {grid},1,1 - block size {block},1,1 - nregs 20 - shmem 0 - cuda stream id 0\n")
    };
    let ops = ["LDG.E", "LDG.E.64", "STG.E", "LDG.E.U8"];
    let lines = |id: u32, grid: u32, block: u32, n: u32| -> Vec<String> {
        (0..n)
            .map(|i| {
                let (cta, warp) = (i % grid, i / grid % block.div_ceil(32));
                // A new opcode every quarter of the launch; lanes past the block inactive.
                let op = ops[(i * 4 / n) as usize];
                let addrs: Vec<String> = (0..32)
                    .map(|lane| match warp * 32 + lane < block {
                        true => format!("0x{:016x}", 0x10000 + (i % 97) * 512 + lane * 4 * (1 + i % 3)),
                        false => "0x0000000000000000".into(),
                    })
                    .collect();
                format!(
                    "MEMTRACE: CTX 0x1 - grid_launch_id {id} - CTA {cta},0,0 - warp {} - {op} - {}\n",
                    warp * 2 + 1,
                    addrs.join(" ")
                )
            })
            .collect()
    };
    let (a, c) = (lines(0, 4, 64, 600), lines(2, 2, 48, 300));
    let mut log = format!(
        "app output\n{}{}{}",
        launch(0, 4, 64),
        launch(1, 1, 32),
        launch(2, 2, 48)
    );
    if interleave {
        let (mut a, mut c) = (a.into_iter(), c.into_iter());
        loop {
            match (a.next(), c.next()) {
                (None, None) => break,
                (x, y) => log.extend(x.into_iter().chain(y)),
            }
        }
    } else {
        log.extend(a.into_iter().chain(c));
    }
    log
}

#[test]
fn a_streamed_nvbit_log_read_once_gives_the_whole_reads_result() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config::preset("fermi-16k").unwrap();
    // In launch order the log is read once; interleaved, it is read again in two passes
    // (the second read holds the launches whole).
    for (name, interleave) in [("in-order.log", false), ("interleaved.log", true)] {
        let path = dir.path().join(name);
        std::fs::write(&path, nvbit_log(interleave)).unwrap();
        same_on_one_and_every_sm(&path, &cfg);
    }
}

/// A cuda-memtrace file of two kernels, read twice in lock-step (each kernel scanned, then
/// handed on in issue order): the app's streamed run equals the file read whole, on one SM
/// and on every SM.
#[test]
fn a_streamed_memtrace_file_gives_the_whole_reads_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.trc");
    traces::memtrace_file(&path);
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.gpu.sms = 4;
    same_on_one_and_every_sm(&path, &cfg);
}

/// The window of a run's last 20 requests.
fn last_requests(run: &SimData) -> std::ops::Range<u64> {
    let total = run.report.totals.requests;
    total - 20..total
}

/// Windows over a run of `total` requests: its start, a third, the middle, 90% and its end
/// (the last past it).
fn issued_windows(total: u64) -> Vec<std::ops::Range<u64>> {
    vec![
        0..10,
        total / 3..total / 3 + 500,
        total / 2 - 20..total / 2 + 20,
        total * 9 / 10..total * 9 / 10 + 50,
        total - 50..total + 10,
    ]
}

/// A cuda-memtrace file is read on from copies taken between two of its chunks of issued
/// rows: the reader walks over the kernels before and the rows the copy was given, so details
/// from copies equal details from the start, on one SM and on all, within a kernel and
/// across the two, the file plain or compressed (decompressed again up to the copy's
/// kernel).
#[test]
fn the_detail_of_a_memtrace_files_window_read_on_from_a_copy_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.trc");
    // About 300,000 records a kernel: several chunks of 65,536 rows each.
    traces::memtrace_file_of(&path, 18_000);
    let packed = dir.path().join("long.trc.zst");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&packed, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
    let mut runs = copies_on_one_and_every_sm(&path, 60_000, &issued_windows);
    runs.extend(copies_on_one_and_every_sm(&packed, 60_000, &issued_windows));
    for at in runs {
        assert!(
            at.iter().all(|a| matches!(a, ResumePoint::Issued { .. })),
            "{at:?}"
        );
        // Copies within the second kernel, which the reader reaches by walking the first.
        assert!(
            at.iter().any(|a| matches!(
                a,
                ResumePoint::Issued { kernel: 1, next_chunk } if *next_chunk > 1
            )),
            "{at:?}"
        );
    }
    // Rewritten in place since the run, every kernel's name and length kept (which the
    // reader cannot tell): the detail is refused, not made of the other addresses.
    let cfg = config::preset("fermi-16k").unwrap();
    let change = || {
        let mut bytes = std::fs::read(&path).unwrap();
        // The last record's address (its second word) moved by a line.
        let n = bytes.len();
        bytes[n - 16] ^= 0x80;
        std::fs::write(&path, bytes).unwrap();
    };
    let e = detail_after_change(&path, &cfg, 60_000, &change, &last_requests);
    assert!(
        e.contains("long.trc") && e.contains("changed since its run"),
        "{e}"
    );
}

/// An NVBit log of two launches of `lines` access lines each (CTAs of 256 threads, their
/// warps in hardware slots that differ from their indices, a new opcode every quarter).
fn long_nvbit_log(lines: u32) -> String {
    let ops = ["LDG.E", "LDG.E.64", "STG.E", "LDG.E.U8"];
    let mut log = String::from("app output\n");
    for id in 0..2u32 {
        let ctas = 12 + 4 * id;
        log += &format!("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x{id:x} - Kernel name k{id} - grid launch id {id} - grid size {ctas},1,1 - block size 256,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n");
        for i in 0..lines {
            // Four CTAs at a time, each warp's lines together in turn.
            let cta = (i / 64 % (ctas / 4)) * 4 + i % 4;
            let warp = i / 4 % 8;
            let addrs: Vec<String> = (0..32)
                .map(|lane| {
                    let row = (cta * 8 + warp) * 32 + lane;
                    format!(
                        "0x{:016x}",
                        0x100000 + (row * 4 + i / 512 * 4096) as u64 % (1 << 22)
                    )
                })
                .collect();
            log += &format!(
                "MEMTRACE: CTX 0x1 - grid_launch_id {id} - CTA {cta},0,0 - warp {} - {} - {}\n",
                (warp + cta) % 8 + 8 * (cta % 4),
                ops[(i * 4 / lines) as usize],
                addrs.join(" ")
            );
        }
    }
    log
}

/// An NVBit log read in one pass is read on from the places its reader gave after chunks of
/// rows (its tables copied there): details from copies equal details from the start, on
/// one SM and on all, within each launch; a log changed since the run is refused.
#[test]
fn the_detail_of_an_nvbit_logs_window_read_on_from_a_copy_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.log");
    // 192,000 rows a launch: three chunks of 65,536 rows each.
    std::fs::write(&path, long_nvbit_log(6000)).unwrap();
    let runs = copies_on_one_and_every_sm(&path, 12_000, &issued_windows);
    for at in runs {
        assert!(
            at.iter().all(|a| matches!(a, ResumePoint::NvBit(_))),
            "{at:?}"
        );
        // Copies in the second launch, read on past the first.
        let half = std::fs::metadata(&path).unwrap().len() / 2;
        assert!(
            at.iter()
                .any(|a| matches!(a, ResumePoint::NvBit(r) if r.offset() > half)),
            "{at:?}"
        );
    }
    let cfg = config::preset("fermi-16k").unwrap();
    let change = || {
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("LDG.E.U8", "LDG.E.16", 1)).unwrap();
    };
    let e = detail_after_change(&path, &cfg, 12_000, &change, &last_requests);
    assert!(
        e.contains("long.log") && e.contains("changed since its run"),
        "{e}"
    );
}

/// An Accel-Sim trace is read on from copies taken after its CTAs: the kernel files before
/// the copy's are not opened, the copy's is read again from its start (the blocks of the
/// CTAs done skimmed, those of the resident CTAs decoded and given back), and its
/// instructions are numbered as the run numbered them. Details from copies equal details
/// from the start, on one SM and on all, in both kernels (the second's file compressed).
#[test]
fn the_detail_of_an_accelsim_traces_window_read_on_from_a_copy_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let list = traces::accelsim_dir_of(dir.path(), 96);
    let runs = copies_on_one_and_every_sm(&list, 40_000, &|total| {
        vec![
            0..10,
            total / 4..total / 4 + 300,
            total / 2 - 20..total / 2 + 20,
            total * 9 / 10..total * 9 / 10 + 200,
            total - 50..total + 10,
        ]
    });
    for at in runs {
        assert!(
            at.iter().all(|a| matches!(a, ResumePoint::Cta { .. })),
            "{at:?}"
        );
        // Copies within each kernel, after CTAs that name instructions the first did not.
        for kernel in [0, 1] {
            assert!(
                at.iter().any(|a| matches!(
                    a,
                    ResumePoint::Cta { kernel: k, next_cta } if *k == kernel && *next_cta > 16
                )),
                "{at:?}"
            );
        }
    }
}

/// [`details_from_copies_equal_details_from_the_start_with`] on four SMs of the Fermi 16 KB
/// preset, simulating SM 1 and then every SM: where each run kept its copies.
fn copies_on_one_and_every_sm(
    path: &std::path::Path,
    every: u64,
    windows: &dyn Fn(u64) -> Vec<std::ops::Range<u64>>,
) -> Vec<Vec<ResumePoint>> {
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.gpu.sms = 4;
    [config::SmSelection::One(1), config::SmSelection::All]
        .into_iter()
        .map(|simulate| {
            cfg.gpu.simulate = simulate;
            let copied =
                details_from_copies_equal_details_from_the_start_with(path, &cfg, every, windows);
            copied
                .checkpoints
                .kept
                .iter()
                .map(|c| c.at.clone())
                .collect()
        })
        .collect()
}

/// The error of the detail of a window (`window` of the run) of the streamed run of `path`
/// under `cfg` (copies every `every` accesses), asked for after `change` changed the file.
fn detail_after_change(
    path: &Path,
    cfg: &SimConfig,
    every: u64,
    change: &dyn Fn(),
    window: &dyn Fn(&SimData) -> std::ops::Range<u64>,
) -> String {
    let streamed = open(path, 0);
    let progress = Arc::new(Progress::default());
    let copied = crate::streamed::simulate_keeping(
        cfg.clone(),
        &streamed,
        &progress,
        None,
        crate::data::checkpoints::Checkpoints::every(every),
    )
    .unwrap();
    change();
    let window = window(&copied);
    match worker::simulate_window(&streamed, &progress, copied, window) {
        Err(crate::job::JobError::Failed(e)) => e,
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("the file changed, but a detail was made"),
    }
}

/// The launches of built-in kernels, each with its parameters, as one trace.
fn generated(kernels: &[(&str, &[(&str, &str)])]) -> warpscope_core::trace::Trace {
    let mut t = warpscope_core::trace::Trace::default();
    for (name, params) in kernels {
        let params: Vec<(String, String)> = params
            .iter()
            .map(|(k, x)| (k.to_string(), x.to_string()))
            .collect();
        t.kernels.extend(
            warpscope_core::gen::generate(name, &params)
                .unwrap()
                .kernels,
        );
    }
    t
}

/// Two small launches (matmul and transpose), written to `two.wsb` in `dir`.
fn two_launches(dir: &Path) -> (PathBuf, warpscope_core::trace::Trace) {
    let path = dir.join("two.wsb");
    let t = generated(&[
        ("matmul", &[("n", "48")]),
        ("transpose", &[("width", "64"), ("height", "32")]),
    ]);
    warpscope_core::trace::write_file(&t, &path).unwrap();
    (path, t)
}

#[test]
fn a_streamed_binary_trace_of_two_launches_gives_the_whole_reads_result() {
    let dir = tempfile::tempdir().unwrap();
    let (path, t) = two_launches(dir.path());
    let cfg = config::preset("fermi-16k").unwrap();
    same_on_one_and_every_sm(&path, &cfg);
    // The same launches in our text format (each kernel through the external sort) and as a
    // CSV table with its threads' rows interleaved (read twice, then sorted).
    let text = dir.path().join("two.wst");
    warpscope_core::trace::write_file(&t, &text).unwrap();
    let table = dir.path().join("two.csv");
    std::fs::write(&table, csv_table(&t, false)).unwrap();
    for path in [text, table] {
        same_on_one_and_every_sm(&path, &cfg);
    }
}

/// The timing model on a streamed file: the model needs each kernel whole, so the file is
/// loaded whole for it, and the result is the one of the file read whole, with the default
/// timing settings, on every SM of four (the later SMs' requests kept in temporary files
/// until the first's are drawn) and the released model's; a window's detail runs the model
/// again up to the window's end and holds the requests the whole read has there.
#[test]
fn the_timing_model_on_a_streamed_file_gives_the_whole_reads_result() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = two_launches(dir.path());
    let mut timed = config::preset("fermi-16k").unwrap();
    timed.timing = Some(config::TimingConfig::default());
    let mut every = timed.clone();
    every.gpu.sms = 4;
    every.gpu.simulate = config::SmSelection::All;
    let mut released = config::preset("fermi-16k").unwrap();
    config::compat(&mut released, "gpu-cache-model").unwrap();
    for cfg in [&timed, &every, &released] {
        assert!(cfg.timing.is_some());
        let (whole, streamed) = (open(&path, u64::MAX), open(&path, 0));
        let (w, s) = (run(cfg, &whole), run(cfg, &streamed));
        let total = w.report.totals.requests;
        assert!(total > 0 && w.report.timing.is_some());
        assert_eq!(w.report, s.report);
        // Every request, in the same order, each at its issue cycle.
        let (a, b) = (&w.points, &s.points);
        assert_eq!(a.line, b.line);
        assert_eq!(a.outcome, b.outcome);
        assert_eq!(a.inst, b.inst);
        assert_eq!(a.cta, b.cta);
        assert_eq!(a.kernel, b.kernel);
        assert_eq!(a.set, b.set);
        assert!(s.x.is_time());
        assert_eq!(s.x, w.x);
        assert_eq!(w.per_inst, s.per_inst);
        assert_eq!(w.miss_tables.rows(Per::Cta), s.miss_tables.rows(Per::Cta));
        assert_eq!(per_set(&w), per_set(&s));
        let window = total / 2..total / 2 + 300;
        let detail = worker::simulate_window(
            &streamed,
            &Arc::new(Progress::default()),
            s.clone(),
            window.clone(),
        )
        .unwrap();
        let range = window.start as usize..window.end as usize;
        assert_eq!(detail.points.line, w.points.line[range.clone()]);
        assert_eq!(detail.points.outcome, w.points.outcome[range]);
        assert_eq!(detail.report, w.report);
    }
}

/// `t` as a CSV table: each kernel's threads' rows interleaved (each thread's in order), or
/// with an `sm` column, in an order warps could issue them (every thread's first access,
/// then every thread's second, ...), each CTA on SM `cta % 14`.
fn csv_table(t: &warpscope_core::trace::Trace, with_sm: bool) -> String {
    let mut csv = String::from("kernel,cta_x,cta_y,thread_x,thread_y,inst,dyn,kind,address,size");
    csv.push_str(if with_sm { ",sm\n" } else { "\n" });
    for (ki, k) in t.kernels.iter().enumerate() {
        let mut rows: Vec<((u32, u32, u32), String)> = k
            .accesses()
            .map(|a| {
                let (c, th) = k.split_thread(a.thread);
                let kind = if a.kind.is_write() { "st" } else { "ld" };
                let name = &k.instructions[a.inst as usize].name;
                let mut row = format!(
                    "{ki},{},{},{},{},{name},{},{kind},{},{}",
                    c.x, c.y, th.x, th.y, a.dyn_inst, a.addr, a.size
                );
                if with_sm {
                    let cta = k.grid.linear(c) as u32;
                    row.push_str(&format!(",{}", cta % 14));
                }
                row.push('\n');
                ((a.dyn_inst, a.inst, a.thread), row)
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        csv.extend(rows.into_iter().map(|r| r.1));
    }
    csv
}

/// A file of a format with no way to seek to a CTA or chunk (our text format, CSV tables in
/// CTA order and in issue order, Parquet, Nugteren et al.'s per-thread format) is read on from a copy
/// of its run by reading it again from its start without simulating what comes before the
/// copy's place: details from copies equal details from the start, on every SM.
#[test]
fn the_detail_of_a_window_of_a_file_read_again_to_a_copys_place_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let t = generated(&[
        ("matmul", &[("n", "64")]),
        ("transpose", &[("width", "256"), ("height", "128")]),
    ]);
    let text = dir.path().join("two.wst");
    warpscope_core::trace::write_file(&t, &text).unwrap();
    let table = dir.path().join("two.csv");
    std::fs::write(&table, csv_table(&t, false)).unwrap();
    let issued = dir.path().join("issued.csv");
    std::fs::write(&issued, csv_table(&t, true)).unwrap();
    // The same rows as Parquet, in row groups of 2^16 rows.
    let parquet = dir.path().join("two.parquet");
    {
        use polars::prelude::*;
        let mut df = CsvReadOptions::default()
            .with_has_header(true)
            .try_into_reader_with_file_path(Some(table.clone()))
            .unwrap()
            .finish()
            .unwrap();
        ParquetWriter::new(std::fs::File::create(&parquet).unwrap())
            .with_row_group_size(Some(1 << 16))
            .finish(&mut df)
            .unwrap();
    }
    let one = generated(&[("matmul", &[("n", "64")])]);
    let nugteren = dir.path().join("one.trc");
    let written = warpscope_core::trace::write_file_as(
        &one,
        &nugteren,
        warpscope_core::trace::WriteFormat::Nugteren,
    )
    .unwrap();
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = config::SmSelection::All;
    for (file, issued_order) in [
        (&text, false),
        (&table, false),
        (&parquet, false),
        (&issued, true),
        (&written[0], false),
    ] {
        let copied = details_from_copies_equal_details_from_the_start_with(
            file,
            &cfg,
            40_000,
            &issued_windows,
        );
        for c in &copied.checkpoints.kept {
            match c.at {
                ResumePoint::Issued { .. } if issued_order => {}
                ResumePoint::Cta { .. } if !issued_order => {}
                ref other => panic!("{}: {other:?}", file.display()),
            }
        }
    }
}

#[test]
fn a_streamed_trace_in_the_app_shows_its_views_and_says_which_need_it_whole() {
    let mut h = support::harness(streaming_app(sample("accelsim-matrixmul")));
    support::settle(&mut h);
    let t = h.state().trace.clone().expect("a trace");
    assert!(t.streamed.is_some(), "--stream streams a small file too");
    assert!(t.label.contains("(streamed)"), "{}", t.label);
    let d = h.state().panes[0].result.clone().expect("a result");
    assert_eq!(
        d.report,
        run(&d.config, &open(&sample("accelsim-matrixmul"), u64::MAX)).report
    );
    // The address view says what it draws; the communication view that it needs the trace.
    h.get_by_label_contains("requests drawn");
    h.state_mut().settings.view = View::Communication;
    h.run_steps(3);
    h.get_by_label_contains("streamed from disk");
    h.state_mut().settings.view = View::Sets;
    h.run_steps(3);
    assert!(h.query_by_label_contains("streamed from disk").is_none());
}

/// Switching a streamed trace's pane to a preset with the timing model runs the model on the
/// file loaded whole: the pane shows its result, the one of the file read whole.
#[test]
fn a_streamed_trace_runs_the_timing_model_in_a_pane() {
    let mut h = support::harness(streaming_app(sample("accelsim-matrixmul")));
    support::settle(&mut h);
    let now = h.ctx.input(|i| i.time);
    let gtx = config::preset("gtx470-16k").unwrap();
    h.state_mut().set_config(0, "gtx470-16k", gtx.clone(), now);
    support::settle(&mut h);
    assert!(h.state().trace.as_ref().unwrap().streamed.is_some());
    let d = h.state().panes[0].result.clone().expect("a result");
    assert!(d.config.timing.is_some() && d.report.timing.is_some());
    let whole = run(&gtx, &open(&sample("accelsim-matrixmul"), u64::MAX));
    assert_eq!(d.report, whole.report);
    // Every request drawn at its issue cycle, as the whole read draws them.
    assert!(d.x.is_time());
    assert_eq!(d.x, whole.x);
    h.get_by_label_contains("every request of the streamed run, at its issue cycle");
}

#[test]
fn a_streamed_run_shows_previews_while_it_reads_and_stops_when_cancelled() {
    use crate::data::{Preview, PreviewSlot, SAMPLE_POINTS};
    use crate::job::{Job, JobError};
    use std::io::Write;
    use std::time::{Duration, Instant};
    // 3 M references: the sample thins (more than 2^21 requests) and the run outlasts the
    // first preview.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let n = 3_000_000u64;
    for i in 0..n {
        let addr = 0x1000_0000 + (i % 50_000) * 64 + (i / 50_000) % 3 * 8;
        writeln!(f, "{} {addr:x}", (i % 4 == 3) as u8).unwrap();
    }
    drop(f);
    let trace = open(&path, 0);
    let cfg = SimConfig::default();
    let slot = PreviewSlot::default();
    let preview = Preview::new(slot.clone(), Arc::new(|| {}));
    let (t, c) = (trace.clone(), cfg.clone());
    let wake: crate::job::Wake = Arc::new(|| {});
    let mut job = Job::spawn("sim", &wake, move |p| {
        worker::simulate_streamed(c, &t, p, Some(preview))
    });
    let start = Instant::now();
    let mut previews = Vec::new();
    let done = loop {
        if let Some(d) = slot.lock().unwrap().take() {
            previews.push(d);
        }
        if let Some(r) = job.poll() {
            break r.expect("the run finishes");
        }
        assert!(start.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(!previews.is_empty(), "no preview before the run ended");
    assert!(!done.preview);
    assert_eq!(done.report.totals.requests, n);
    assert!(done.points.len() <= SAMPLE_POINTS && done.points.len() as u64 * 2 >= n / 2);
    let XAxis::Sampled { start: 0, stride } = done.x else {
        panic!("a streamed run's axis is sampled")
    };
    assert!(stride >= 2);
    // The sample is every stride-th request of the whole run read whole.
    let whole = run(&cfg, &open(&path, u64::MAX));
    let every: Vec<u64> = whole
        .points
        .line
        .iter()
        .step_by(stride as usize)
        .copied()
        .collect();
    assert_eq!(done.points.line, every);
    assert_eq!(whole.report, done.report);
    let mut last = 0;
    for p in &previews {
        assert!(p.preview);
        let r = p.report.totals.requests;
        assert!(r >= last && r <= n, "previews count up: {r} after {last}");
        last = r;
        assert!(p.points.len() <= 1 << 18);
        assert_eq!(p.sets.sets, done.sets.sets);
    }
    // Cancelled, the run stops reading and gives no result.
    let (t, c) = (trace.clone(), cfg.clone());
    let job = Job::spawn("sim", &wake, move |p| {
        worker::simulate_streamed(c, &t, p, None)
    });
    job.cancel();
    let mut job = job;
    match job.wait(Duration::from_secs(60)) {
        Some(Err(JobError::Cancelled)) => {}
        other => panic!(
            "expected a cancelled run, got {:?}",
            other.map(|r| r.map(|_| ()))
        ),
    }
}

/// Steps the UI until pane 0 shows a raster of its newest result; returns that generation.
fn raster_of_newest(h: &mut egui_kittest::Harness<'static, WarpscopeApp>) -> u64 {
    let start = std::time::Instant::now();
    loop {
        h.step();
        let p = &h.state().panes[0];
        if p.result.is_some()
            && p.view::<AddressView>().unwrap().shown_raster() == Some(p.generation)
        {
            return p.generation;
        }
        assert!(
            start.elapsed().as_secs() < 60,
            "no raster of the newest result"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A new preview of a streamed run is drawn from its first frame: the raster of the result
/// before it, of the same run, stands in until its own is drawn. A result of another run (a
/// changed configuration) never shows the raster of an earlier run, whose outcomes differ.
#[test]
fn the_address_view_draws_a_streamed_run_from_each_previews_first_frame() {
    use crate::data::PreviewSlot;
    use crate::views::MARKER_LIMIT;
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    // More requests than the view draws as markers: it draws a raster.
    let n = 3 * MARKER_LIMIT as u64;
    for i in 0..n {
        writeln!(f, "0 {:x}", 0x1000_0000 + (i * 7919 % 20_000) * 64).unwrap();
    }
    drop(f);
    let mut h = support::harness(streaming_app(path));
    support::settle(&mut h);
    let first = raster_of_newest(&mut h);
    // The run's next result, as the run leaves previews (here the same one again).
    let again = h.state().panes[0].result.clone().unwrap();
    let slot = PreviewSlot::default();
    *slot.lock().unwrap() = Some(again);
    h.state_mut().panes[0].preview = Some(slot);
    h.step();
    let p = &h.state().panes[0];
    assert!(p.generation > first && p.stale);
    assert_eq!(
        p.view::<AddressView>().unwrap().shown_raster(),
        Some(first),
        "the earlier raster stands in"
    );
    let second = raster_of_newest(&mut h);
    assert!(second > first);
    // Another run: its result shows no raster until its own is drawn.
    let mut cfg = h.state().settings.panes[0].1.clone();
    cfg.cache.size_bytes /= 4;
    let smaller = cfg.cache.size_bytes;
    let now = h.ctx.input(|i| i.time);
    h.state_mut().set_config(0, "smaller", cfg, now);
    let start = std::time::Instant::now();
    loop {
        h.step();
        let p = &h.state().panes[0];
        if p.generation != second {
            assert_eq!(p.result.as_ref().unwrap().config.cache.size_bytes, smaller);
            assert_eq!(
                p.view::<AddressView>().unwrap().shown_raster(),
                None,
                "an earlier run's raster shown"
            );
            break;
        }
        // Until then the earlier result stays, with its own raster.
        assert_eq!(
            p.view::<AddressView>().unwrap().shown_raster(),
            Some(second)
        );
        assert!(start.elapsed().as_secs() < 60, "the new run gave no result");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    raster_of_newest(&mut h);
}

#[test]
fn the_detail_of_a_window_holds_every_request_of_it_and_the_whole_runs_counts() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..40_000u64 {
        let addr = 0x1000_0000 + (i * 7919 % 3000) * 32;
        writeln!(f, "{} {addr:x}", (i % 5 == 4) as u8).unwrap();
    }
    drop(f);
    let cfg = SimConfig::default();
    let streamed = open(&path, 0);
    let whole_read = run(&cfg, &open(&path, u64::MAX));
    let whole = run(&cfg, &streamed);
    let progress = Arc::new(Progress::default());
    for window in [1000..1700u64, 0..5, 39_990..40_000, 39_990..50_000] {
        let d = worker::simulate_window(&streamed, &progress, whole.clone(), window.clone())
            .expect("the detail");
        let end = window.end.min(40_000) as usize;
        let want = &whole_read.points.line[window.start as usize..end];
        assert_eq!(d.points.line, want, "{window:?}");
        assert_eq!(
            d.points.outcome,
            &whole_read.points.outcome[window.start as usize..end]
        );
        assert_eq!(
            d.x,
            XAxis::Sampled {
                start: window.start,
                stride: 1
            }
        );
        assert_eq!(d.window, Some(window.clone()));
        assert_eq!(d.request_number(0), window.start);
        assert_eq!(d.x(1), (window.start + 1) as f64);
        let shown: Vec<usize> =
            match d.visible(window.start as f64 + 1.0, window.start as f64 + 3.0) {
                crate::data::Visible::Range(r) => r.collect(),
                _ => panic!("a range"),
            };
        assert_eq!(
            shown,
            (1..4).filter(|&i| i < d.points.len()).collect::<Vec<_>>()
        );
        // What the whole run counted stays.
        assert_eq!(d.report, whole.report);
        assert_eq!(d.per_inst, whole.per_inst);
    }
}

/// Zoomed from the copies of the session taken as the whole run went, a window's detail is the
/// one read from the file's start: every request, outcome, reuse distance and instruction,
/// and the report of a window that runs to the trace's end.
#[test]
fn the_detail_of_a_window_read_on_from_a_copy_of_the_run_equals_the_one_read_from_the_start() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    // 300 000 references (5 chunks), some crossing a line (two requests), a third stores.
    let n = 300_000u64;
    for i in 0..n {
        let addr = 0x1000_0000 + (i * 7919 % 50_000) * 24;
        match i % 3 {
            0 => writeln!(f, "1 {addr:x}").unwrap(),
            1 => writeln!(f, "r {addr:x} 10").unwrap(),
            _ => writeln!(f, "0 {addr:x}").unwrap(),
        }
    }
    drop(f);
    details_from_copies_equal_details_from_the_start(&path);
    // Compressed: decompressed again up to the copy's place, not simulated.
    let text = std::fs::read(&path).unwrap();
    let zst = dir.path().join("long.din.zst");
    std::fs::write(&zst, zstd::encode_all(&text[..], 1).unwrap()).unwrap();
    details_from_copies_equal_details_from_the_start(&zst);
    // A file cut short since the run, compressed or not: an error naming it, not a wrong
    // detail.
    for (file, cut) in [
        (&path, text[..text.len() / 2].to_vec()),
        (&zst, zstd::encode_all(&text[..text.len() / 2], 1).unwrap()),
    ] {
        let change = || std::fs::write(file, &cut).unwrap();
        let e = detail_after_change(file, &SimConfig::default(), 50_000, &change, &|_| {
            250_000..250_010
        });
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            e.contains(name) && e.contains("changed since its run"),
            "{e}"
        );
    }
}

/// The detail of several windows of the `din` file at `path`, read on from copies of the
/// session, against the same read from the file's start.
fn details_from_copies_equal_details_from_the_start(path: &std::path::Path) {
    let copied = details_from_copies_equal_details_from_the_start_with(
        path,
        &SimConfig::default(),
        50_000,
        &|total| {
            vec![
                0..10,
                70_000..70_400,
                200_000..230_000,
                total - 50..total + 10,
            ]
        },
    );
    // The copy used is the latest at or before the window.
    let c = copied.checkpoints.before(200_000).unwrap();
    assert!(
        c.requests <= 200_000 && c.requests > 100_000,
        "{}",
        c.requests
    );
    match &c.at {
        ResumePoint::Din(at) => assert!(at.offset > 0 && at.line_no > 0),
        other => panic!("{other:?}"),
    }
}

/// The detail of the windows `windows(total requests)` of the file at `path` under `cfg`,
/// read on from copies of the session taken every `every` requests, against the same read
/// from the file's start; returns the run that kept the copies.
fn details_from_copies_equal_details_from_the_start_with(
    path: &std::path::Path,
    cfg: &SimConfig,
    every: u64,
    windows: &dyn Fn(u64) -> Vec<std::ops::Range<u64>>,
) -> Arc<SimData> {
    use crate::data::checkpoints::Checkpoints;
    let streamed = open(path, 0);
    let progress = Arc::new(Progress::default());
    let plain = crate::streamed::simulate_keeping(
        cfg.clone(),
        &streamed,
        &progress,
        None,
        Checkpoints::every(u64::MAX),
    )
    .unwrap();
    assert_eq!(plain.checkpoints.kept.len(), 0);
    // A copy every `every` accesses simulated, kept at most 16 (then thinned).
    let copied = crate::streamed::simulate_keeping(
        cfg.clone(),
        &streamed,
        &progress,
        None,
        Checkpoints::every(every),
    )
    .unwrap();
    assert_eq!(copied.report, plain.report);
    let kept: Vec<u64> = copied.checkpoints.kept.iter().map(|c| c.requests).collect();
    let total = plain.report.totals.requests;
    assert!(kept.len() >= 4, "{kept:?} of {total}");
    for window in windows(total) {
        let from_start =
            worker::simulate_window(&streamed, &progress, plain.clone(), window.clone()).unwrap();
        let from_copy =
            worker::simulate_window(&streamed, &progress, copied.clone(), window.clone()).unwrap();
        let (a, b) = (&from_start.points, &from_copy.points);
        assert!(!a.line.is_empty(), "{window:?}");
        assert_eq!(a.line, b.line, "{window:?}");
        assert_eq!(a.outcome, b.outcome, "{window:?}");
        assert_eq!(a.reuse, b.reuse, "{window:?}");
        assert_eq!(a.inst, b.inst, "{window:?}");
        assert_eq!(from_start.x, from_copy.x, "{window:?}");
    }
    copied
}

/// A copy of the file at `path`, compressed with zstd, next to it (`.zst` added).
fn zstd_copy(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".zst");
    let packed = PathBuf::from(name);
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(&packed, zstd::encode_all(&bytes[..], 1).unwrap()).unwrap();
    packed
}

/// A binary file (version 4) is read on from a copy taken between two CTAs: the copy holds
/// no rows, and gets those of its resident CTAs back through the file's index (compressed,
/// by walking the file from its start). Details from copies equal details from the start,
/// within a kernel and across the two launches, on one SM and on all; a file that changed
/// since is an error naming it, not a wrong detail.
#[test]
fn the_detail_of_a_binary_files_window_read_on_from_a_copy_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.wsb");
    let t = generated(&[
        ("matmul", &[("n", "96")]),
        ("transpose", &[("width", "512"), ("height", "256")]),
    ]);
    warpscope_core::trace::write_file(&t, &path).unwrap();
    // Compressed, it has no index to seek by: it is walked from its start to the place.
    let packed = zstd_copy(&path);
    let mut cfg = config::preset("fermi-16k").unwrap();
    // Without the preset's L2, whose copies (a few MiB of its own, not rows) go on as the
    // session they copied in tests/model/by_cta.rs: the bound below is on the rows.
    cfg.l2 = None;
    for (all, file) in [(false, &path), (true, &path), (true, &packed)] {
        if all {
            cfg.gpu.simulate = config::SmSelection::All;
        }
        let copied =
            details_from_copies_equal_details_from_the_start_with(file, &cfg, 50_000, &|total| {
                vec![
                    0..10,
                    total / 5..total / 5 + 300,
                    total / 2 - 1000..total / 2 + 1000,
                    total * 9 / 10..total * 9 / 10 + 50,
                    total - 50..total + 10,
                ]
            });
        let kernels: std::collections::BTreeSet<u32> = copied
            .checkpoints
            .kept
            .iter()
            .map(|c| match &c.at {
                &ResumePoint::Cta { kernel, .. } => kernel,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(kernels.len(), 2, "copies in both launches");
        // Copies hold no rows: far below the CTAs they stand among.
        for c in &copied.checkpoints.kept {
            assert!(
                c.session.approx_bytes() < 4 << 20,
                "{}",
                c.session.approx_bytes()
            );
        }
    }
    // The file replaced since the run by another trace: an error naming it.
    let change = || {
        let other = generated(&[("matmul", &[("n", "48")])]);
        warpscope_core::trace::write_file(&other, &path).unwrap();
    };
    // A window after the latest copy, so that the detail reads on from it.
    let e = detail_after_change(&path, &cfg, 50_000, &change, &|run| {
        let last = run.checkpoints.kept.last().expect("copies").requests;
        last + 5..last + 15
    });
    assert!(
        e.contains("two.wsb") && e.contains("changed since its run"),
        "{e}"
    );
}

/// A binary file of issued-order kernels (as cuda-memtrace and NVBit traces convert to) is
/// read on from copies taken between two of its chunks: details from copies equal details
/// from the start.
#[test]
fn the_detail_of_an_issued_order_binary_file_read_on_from_a_copy_equals_the_one_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("issued.wsb");
    let grouped = generated(&[
        ("matmul", &[("n", "96")]),
        ("transpose", &[("width", "512"), ("height", "256")]),
    ]);
    // Each kernel's accesses in an order warps could issue them: every thread's first
    // access, then every thread's second, ...
    let mut t = warpscope_core::trace::Trace::default();
    for k in &grouped.kernels {
        let mut b = warpscope_core::trace::KernelBuilder::new(
            &k.name,
            k.grid,
            k.block,
            warpscope_core::trace::Order::Issued,
        )
        .unwrap();
        for i in &k.instructions {
            b.instruction(&i.name, i.pc);
        }
        let mut accesses: Vec<_> = k.accesses().collect();
        accesses.sort_by_key(|a| (a.dyn_inst, a.inst, a.thread));
        for a in accesses {
            b.push(a).unwrap();
        }
        t.kernels.push(b.finish());
    }
    warpscope_core::trace::write_file(&t, &path).unwrap();
    let mut cfg = config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = config::SmSelection::All;
    for file in [path.clone(), zstd_copy(&path)] {
        let copied =
            details_from_copies_equal_details_from_the_start_with(&file, &cfg, 100_000, &|total| {
                vec![
                    0..10,
                    total / 3..total / 3 + 500,
                    total * 9 / 10..total * 9 / 10 + 50,
                    total - 50..total + 10,
                ]
            });
        assert!(copied
            .checkpoints
            .kept
            .iter()
            .all(|c| matches!(c.at, ResumePoint::Issued { .. })));
    }
}

#[test]
fn a_pane_shows_a_windows_detail_and_goes_back_to_the_whole_run() {
    let mut h = support::harness(streaming_app(sample("dinero-small.din")));
    support::settle(&mut h);
    let whole = h.state().panes[0].result.clone().expect("a result");
    assert!(whole.window.is_none());
    assert!(whole.points.len() >= 9);
    h.state_mut().detail(0, Some(3..9));
    support::settle(&mut h);
    let d = h.state().panes[0].result.clone().expect("the detail");
    assert_eq!(d.window, Some(3..9));
    assert_eq!(d.points.len(), 6);
    assert_eq!(d.points.line[..], whole.points.line[3..9]);
    h.get_by_label_contains("every one of requests 3 to 9");
    support::click(&mut h, "Back to the whole run");
    let back = h.state().panes[0].result.clone().expect("the whole run");
    assert!(
        Arc::ptr_eq(&back, &whole),
        "the whole run's result comes back as it was"
    );
    assert!(h.state().panes[0].whole.is_none());
}

/// Steps until no job runs and no pane waits.
fn until_idle(h: &mut egui_kittest::Harness<'static, WarpscopeApp>) {
    let start = std::time::Instant::now();
    while !h.state().idle() {
        h.step();
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    h.run_steps(2);
}

#[test]
fn a_cancelled_run_or_detail_says_so_and_nothing_stays_updating() {
    // A file long enough for a run to be cancelled while it reads.
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..2_000_000u64 {
        writeln!(f, "0 {:x}", 0x1000_0000 + (i % 70_000) * 64).unwrap();
    }
    drop(f);
    let mut h = support::harness(streaming_app(path));
    support::settle(&mut h);
    let whole = h.state().panes[0].result.clone().expect("a result");
    // A window's detail cancelled: the whole run comes back as it was. (A detail that ends
    // before the cancel lands is shown; then back, and again.)
    let total = whole.report.totals.requests;
    let mut cancelled = false;
    for _ in 0..20 {
        h.state_mut().detail(0, Some(total - 10..total));
        h.step();
        if let Some(sim) = h.state().panes[0].sim.as_ref() {
            sim.progress().cancel();
        }
        until_idle(&mut h);
        if h.state().panes[0].whole.is_some() {
            h.state_mut().detail(0, None);
            continue;
        }
        cancelled = true;
        break;
    }
    assert!(cancelled, "every detail ended before its cancel");
    let p = &h.state().panes[0];
    assert!(p.sim.is_none() && !p.stale);
    assert!(Arc::ptr_eq(p.result.as_ref().unwrap(), &whole));
    assert!(h.query_by_label_contains("updating").is_none());
    h.get_by_label_contains("Cancelled: pane 1 keeps what it showed");
    // A whole run cancelled: the last result stays, saying it is stale and why.
    let mut cancelled = false;
    for k in 0..20 {
        let mut cfg = h.state().settings.panes[0].1.clone();
        cfg.cache.ways = if k % 2 == 0 { 8 } else { 2 };
        h.state_mut().set_config(0, "edited", cfg, 0.0);
        let start = std::time::Instant::now();
        while h.state().panes[0].sim.is_none() {
            h.step();
            assert!(start.elapsed() < std::time::Duration::from_secs(60));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        h.state().panes[0].sim.as_ref().unwrap().progress().cancel();
        until_idle(&mut h);
        if h.state().panes[0].stale {
            cancelled = true;
            break;
        }
    }
    assert!(cancelled, "every run ended before its cancel");
    assert!(h.query_by_label_contains("updating").is_none());
    h.get_by_label_contains("its run was cancelled");
}

#[test]
fn a_streamed_file_that_goes_bad_says_where_and_shows_no_half_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.din");
    let mut text = String::new();
    for i in 0..2000u64 {
        text.push_str(&format!("0 {:x}\n", 0x1000 + i * 64));
    }
    text.push_str("0 not-an-address\n");
    std::fs::write(&path, text).unwrap();
    let mut h = support::harness(streaming_app(path.clone()));
    let start = std::time::Instant::now();
    while h.state().panes[0].error.is_none() {
        h.step();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no error"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
    let e = h.state().panes[0].error.clone().unwrap();
    assert!(
        e.starts_with("The run failed:") && e.contains("bad.din") && e.contains("2001"),
        "{e}"
    );
    assert!(h.state().panes[0]
        .result
        .as_ref()
        .is_none_or(|r| !r.preview));
    h.get_by_label_contains("The run failed:");
}
