//! What the user runs, end to end: a trace file on disk to a report serialised as the CLI's
//! JSON (`warpscope sim --trace FILE --json` without the process start), beside the component
//! benchmarks of `core.rs`, which hide the pipeline's own cost.
//! - a Dinero IV `din` file (2 M references), 16 KB 4-way LRU write-back, 3C classes, with and
//!   without reuse distances, streamed in chunks on one thread, and as `sim` runs it (`_threads`:
//!   parsed on one thread, the reuse distances or the cache's shadow measured on a second,
//!   simulated on a third), and read whole for comparison;
//! - our binary format (`.wsb`) of naive 128x128 matmul (4.2 M accesses), Fermi 16 KB, one SM,
//!   read whole and streamed CTA by CTA as `sim` does (on one thread here);
//! - the real Accel-Sim sample (`sample-traces/accelsim-matrixmul`, xz-compressed), and an
//!   Accel-Sim trace of naive 128x128 matmul (4.2 M accesses, 64 CTAs; the layout of
//!   `tools/make-accelsim-trace`) read whole and streamed CTA by CTA (scanned, then read, on
//!   one thread; `_once`: read once as `sim` does, parsed on one thread and simulated on
//!   another);
//! - an NVBit `mem_trace` log of naive 128x128 matmul (4.2 M accesses, 82 MB; the layout of
//!   `tools/make-nvbit-trace` without its interleaving), read whole, and streamed as `sim`
//!   runs it (parsed on one thread, simulated on another): read once, instructions taken as
//!   they are found (`_once`), and read twice, a scan first (`_twice`, what `convert`
//!   does);
//! - the timing model (Nugteren et al. 2014, all four runs) on the `.wsb` matmul, in the
//!   `gtx470-16k` preset with one SM, and in the released model's setting (`--compat
//!   gpu-cache-model`) on one thread and as `sim` runs it (`_threads`: its runs side by side);
//! - the same matmul in our text format and as a CSV table with each CTA's threads
//!   interleaved, read whole and streamed as `sim` does (text: each kernel through the external
//!   sort; CSV: read twice, then sorted).
//!
//! Inputs are written once into a temporary folder. `tools/measure-e2e` times the CLI itself
//! with `/usr/bin/time` on a 20 M-reference file (peak RSS too).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, Criterion, Throughput};
use warpscope::config::{preset, SimConfig};
use warpscope::rng::Rng;

#[cfg(feature = "cli")]
#[path = "support/nvbit_log.rs"]
mod nvbit_log;

/// Streams a din file as `sim` does: parsed on one thread, the reuse distances (or the cache's
/// shadow) measured on another, simulated on this one (`lanes::run_apart`); serialises the
/// report.
#[cfg(feature = "cli")]
fn din_threaded_to_json(path: &Path, cfg: &SimConfig) -> usize {
    use warpscope::shell::lanes;
    let opts = warpscope::trace::ReadOptions::default();
    let open = warpscope::trace::open_trace(path, opts, &|s| s, &|s| s).expect("open");
    let f = lanes::file_source(open, |s| s, |s| s, false);
    let session = warpscope::sim::Session::new(cfg, 0).expect("session");
    let mut none = warpscope::sim::NoObserver;
    let Ok(session) = lanes::run_apart(session, f.depth, &mut none, f.source) else {
        panic!("the run failed")
    };
    let report = session.finish(&mut none);
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Streams a file as `sim` does, read on one thread and simulated on this one (`lanes::run`),
/// taking instructions as they are found where `as_found`; serialises the report.
#[cfg(feature = "cli")]
fn lanes_to_json(path: &Path, cfg: &SimConfig, as_found: bool) -> usize {
    use warpscope::shell::lanes;
    let opts = warpscope::trace::ReadOptions::default();
    let open = warpscope::trace::open_trace(path, opts, &|s| s, &|s| s).expect("open");
    let f = lanes::file_source(open, |s| s, |s| s, as_found);
    let session = warpscope::sim::Session::new(cfg, 0).expect("session");
    let mut none = warpscope::sim::NoObserver;
    let Ok(mut sessions) = lanes::run(vec![session], 1, f.depth, &mut none, f.source) else {
        panic!("the run failed")
    };
    let report = sessions.pop().expect("the session").finish(&mut none);
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Reads `path` and runs the timing model's jobs on every core, as `sim --json` does;
/// serialises the report.
#[cfg(feature = "cli")]
fn timed_to_json(path: &Path, cfg: &SimConfig) -> usize {
    let (trace, _) = warpscope::trace::read_file(path, None).expect("read");
    let mut none = warpscope::sim::NoObserver;
    let report = warpscope::shell::timed::run(cfg, &trace.kernels, &mut none, 0).expect("run");
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Runs the timing model on `path` as `sim --json` does: the warps' streams built from the
/// CTAs as one thread reads the file, then the model's jobs on every core; serialises the
/// report.
#[cfg(feature = "cli")]
fn timed_streamed_to_json(path: &Path, cfg: &SimConfig) -> usize {
    use warpscope::shell::lanes;
    let opts = warpscope::trace::ReadOptions::default();
    let open = warpscope::trace::open_trace(path, opts, &|s| s, &|s| s).expect("open");
    let f = lanes::file_source(open, |s| s, |s| s, true);
    let (mut reading, mut none) = (warpscope::sim::NoObserver, warpscope::sim::NoObserver);
    let Ok(report) = warpscope::shell::timed::run_streamed(
        cfg,
        f.source,
        f.depth,
        &mut reading,
        &mut none,
        0,
        None,
    ) else {
        panic!("the run failed")
    };
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Reads `path`, simulates it and serialises the report (on one thread).
fn file_to_json(path: &Path, cfg: &SimConfig) -> usize {
    let (trace, _) = warpscope::trace::read_file(path, None).expect("read");
    let report = warpscope::sim::run(cfg, &trace, &mut warpscope::sim::NoObserver).expect("run");
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Streams a din file through [`warpscope::sim::Session`] in chunks, as `sim` does (on one
/// thread here; the CLI parses on a second one), and serialises the report.
fn din_streamed_to_json(path: &Path, cfg: &SimConfig) -> usize {
    let opts = warpscope::trace::ReadOptions::default();
    let Ok(s) = warpscope::trace::open_trace(path, opts, &|s| s, &|s| s)
        .expect("open")
        .into_reference_stream()
    else {
        panic!("a din file streams")
    };
    let mut reader = s.reader;
    let mut session = warpscope::sim::Session::new(cfg, 0).expect("session");
    let mut none = warpscope::sim::NoObserver;
    session.begin_stream(&s.header, &mut none).expect("stream");
    let mut chunk = warpscope::trace::Columns::default();
    while reader.next_chunk(&mut chunk, 1 << 16).expect("parse") {
        session.feed(&chunk, &mut none);
    }
    session.end_stream(&mut none);
    let report = session.finish(&mut none);
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Streams a file through [`warpscope::sim::Session`] as `sim` does (on one thread here): our
/// binary format and Accel-Sim traces CTA by CTA, the scheduler holding the resident CTAs.
fn streamed_to_json(path: &Path, cfg: &SimConfig) -> usize {
    let opts = warpscope::trace::ReadOptions::default();
    let open = warpscope::trace::open_trace(path, opts, &|s| s, &|s| s).expect("open");
    let mut session = warpscope::sim::Session::new(cfg, 0).expect("session");
    let mut none = warpscope::sim::NoObserver;
    let mut to = warpscope::sim::ToSession::new(&mut session, &mut none);
    open.stream(&|s| s, &|s| s, &mut to)
        .expect("read and simulate");
    let report = session.finish(&mut none);
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).expect("json");
    out.len()
}

/// Built-in kernel `name` with `params`.
fn generate(name: &str, params: &[(&str, &str)]) -> warpscope::trace::Trace {
    let pairs: Vec<(String, String)> = params
        .iter()
        .map(|&(k, v)| (k.to_string(), v.to_string()))
        .collect();
    warpscope::gen::generate(name, &pairs).expect("generate")
}

/// Writes `t` as a CSV table, each CTA's threads interleaved (a thread's k-th rows together),
/// so that a streamed read sorts it.
#[cfg(feature = "tables")]
fn write_csv(t: &warpscope::trace::Trace, path: &Path) {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("create csv"));
    writeln!(
        w,
        "kernel,cta_x,cta_y,thread_x,thread_y,inst,dyn,kind,address,size"
    )
    .expect("csv");
    for (ki, k) in t.kernels.iter().enumerate() {
        for cta in 0..k.num_ctas() {
            let mut rows: Vec<usize> = k.cta_rows(cta).collect();
            rows.sort_by_key(|&i| k.columns().dyn_inst[i]);
            for i in rows {
                let a = k.access(i);
                let (c, th) = k.split_thread(a.thread);
                let kind = if a.kind.is_write() { "st" } else { "ld" };
                let name = &k.instructions[a.inst as usize].name;
                writeln!(
                    w,
                    "{ki},{},{},{},{},{name},{},{kind},{:#x},{}",
                    c.x, c.y, th.x, th.y, a.dyn_inst, a.addr, a.size
                )
                .expect("csv");
            }
        }
    }
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("warpscope-bench-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A third each: a sequential stream over 8 MiB, reads and writes of a 256 KiB working set at
/// random (as `tools/measure-e2e` writes it).
fn write_din(path: &Path, n: usize) {
    let mut rng = Rng::new(26);
    let mut text = String::with_capacity(n * 12);
    let mut seq = 0u64;
    for i in 0..n {
        match i % 3 {
            0 => {
                text.push_str(&format!("0 {:x}\n", 0x1000_0000 + seq % (8 << 20)));
                seq += 8;
            }
            1 => text.push_str(&format!(
                "0 {:x}\n",
                0x2000_0000 + rng.below(256 << 10) / 8 * 8
            )),
            _ => text.push_str(&format!(
                "1 {:x}\n",
                0x2000_0000 + rng.below(256 << 10) / 8 * 8
            )),
        }
    }
    std::fs::write(path, text).expect("write din");
}

/// An Accel-Sim trace directory of naive `n` x `n` matmul as `tools/make-accelsim-trace`
/// writes it: 32x8 blocks, a warp per block row, per iteration a load of A (base+stride mode,
/// stride 0) and of B (stride 4), then a store of C.
fn write_accel_sim(dir: &Path, n: u64) {
    use std::fmt::Write;
    let (a, b, c) = (
        0x7f00_0000_0000u64,
        0x7f10_0000_0000u64,
        0x7f20_0000_0000u64,
    );
    let (gx, gy) = (n / 32, n / 8);
    let mut t = format!(
        "-kernel name = matmul\n-grid dim = ({gx},{gy},1)\n-block dim = (32,8,1)\n-accelsim tracer version = 4\n\n"
    );
    for by in 0..gy {
        for bx in 0..gx {
            let _ = write!(t, "#BEGIN_TB\nthread block = {bx},{by},0\n");
            for w in 0..8 {
                let (row, col) = (by * 8 + w, bx * 32);
                let _ = write!(t, "warp = {w}\ninsts = {}\n", 2 * n + 2);
                for k in 0..n {
                    let _ = write!(
                        t,
                        "0100 ffffffff 1 R2 LDG.E 1 R4 4 1 {:#x} 0\n0110 ffffffff 1 R3 LDG.E 1 R6 4 1 {:#x} 4\n",
                        a + 4 * (row * n + k),
                        b + 4 * (k * n + col)
                    );
                }
                let _ = write!(
                    t,
                    "0200 ffffffff 0 STG.E 2 R8 R3 4 1 {:#x} 4\n0210 ffffffff 0 EXIT 0 0\n",
                    c + 4 * (row * n + col)
                );
            }
            t.push_str("#END_TB\n");
        }
    }
    std::fs::create_dir_all(dir).expect("accel-sim dir");
    std::fs::write(dir.join("kernel-1.traceg"), t).expect("write traceg");
    std::fs::write(dir.join("kernelslist.g"), "kernel-1.traceg\n").expect("write list");
}

fn end_to_end(c: &mut Criterion) {
    let d = dir();
    let mut g = c.benchmark_group("end_to_end");
    g.sample_size(10);

    let din = d.join("mix.din");
    let refs = 2_000_000;
    write_din(&din, refs);
    let mut dinero = SimConfig::default();
    dinero.cache.size_bytes = 16 << 10;
    dinero.cache.ways = 4;
    dinero.cache.line_bytes = 64;
    dinero.cache.sector_bytes = 64;
    dinero.cache.write_policy = warpscope::config::WritePolicy::Wbwa;
    g.throughput(Throughput::Elements(refs as u64));
    g.bench_function("din_2M_16k_4way_wbwa_3c_reuse", |b| {
        b.iter(|| black_box(din_streamed_to_json(&din, &dinero)))
    });
    #[cfg(feature = "cli")]
    g.bench_function("din_2M_16k_4way_wbwa_3c_reuse_threads", |b| {
        b.iter(|| black_box(din_threaded_to_json(&din, &dinero)))
    });
    // Read whole, then simulated (what `sim --export` still does).
    g.bench_function("din_2M_16k_4way_wbwa_3c_reuse_loaded_whole", |b| {
        b.iter(|| black_box(file_to_json(&din, &dinero)))
    });
    dinero.reuse = warpscope::config::ReuseMode::Off;
    g.bench_function("din_2M_16k_4way_wbwa_3c_no_reuse", |b| {
        b.iter(|| black_box(din_streamed_to_json(&din, &dinero)))
    });
    #[cfg(feature = "cli")]
    g.bench_function("din_2M_16k_4way_wbwa_3c_no_reuse_threads", |b| {
        b.iter(|| black_box(din_threaded_to_json(&din, &dinero)))
    });

    let trace = generate("matmul", &[("n", "128"), ("block", "16,16")]);
    let wsb = d.join("matmul128.wsb");
    warpscope::trace::write_file(&trace, &wsb).expect("write wsb");
    g.throughput(Throughput::Elements(trace.total_accesses() as u64));
    let mut fermi = preset("fermi-16k").expect("preset");
    fermi.gpu.sms = 1;
    g.bench_function("wsb_matmul_128_fermi16k_one_sm", |b| {
        b.iter(|| black_box(file_to_json(&wsb, &fermi)))
    });
    g.bench_function("wsb_matmul_128_fermi16k_one_sm_streamed", |b| {
        b.iter(|| black_box(streamed_to_json(&wsb, &fermi)))
    });
    let wst = d.join("matmul128.wst");
    warpscope::trace::write_file(&trace, &wst).expect("write wst");
    g.bench_function("wst_matmul_128_fermi16k_one_sm_loaded_whole", |b| {
        b.iter(|| black_box(file_to_json(&wst, &fermi)))
    });
    g.bench_function("wst_matmul_128_fermi16k_one_sm_streamed", |b| {
        b.iter(|| black_box(streamed_to_json(&wst, &fermi)))
    });
    #[cfg(feature = "tables")]
    {
        let csv = d.join("matmul128.csv");
        write_csv(&trace, &csv);
        g.bench_function("csv_matmul_128_fermi16k_one_sm_loaded_whole", |b| {
            b.iter(|| black_box(file_to_json(&csv, &fermi)))
        });
        g.bench_function("csv_matmul_128_fermi16k_one_sm_streamed", |b| {
            b.iter(|| black_box(streamed_to_json(&csv, &fermi)))
        });
    }
    #[cfg(feature = "cli")]
    {
        let nvbit = d.join("matmul128.log");
        nvbit_log::write(&nvbit, 128);
        g.bench_function("nvbit_matmul_128_fermi16k_one_sm_loaded_whole", |b| {
            b.iter(|| black_box(file_to_json(&nvbit, &fermi)))
        });
        g.bench_function("nvbit_matmul_128_fermi16k_one_sm_streamed_once", |b| {
            b.iter(|| black_box(lanes_to_json(&nvbit, &fermi, true)))
        });
        g.bench_function("nvbit_matmul_128_fermi16k_one_sm_streamed_twice", |b| {
            b.iter(|| black_box(lanes_to_json(&nvbit, &fermi, false)))
        });
    }
    let mut timed = preset("gtx470-16k").expect("preset");
    timed.gpu.sms = 1;
    g.bench_function("wsb_matmul_128_gtx470_16k_timing_4_runs", |b| {
        b.iter(|| black_box(file_to_json(&wsb, &timed)))
    });
    // The released model's setting (`--compat gpu-cache-model`), on one thread and as `sim`
    // runs it, its four runs side by side.
    let mut released = preset("gtx470-16k").expect("preset");
    warpscope::config::compat(&mut released, "gpu-cache-model").expect("compat");
    g.bench_function("wsb_matmul_128_gpu_cache_model_4_runs", |b| {
        b.iter(|| black_box(file_to_json(&wsb, &released)))
    });
    #[cfg(feature = "cli")]
    g.bench_function("wsb_matmul_128_gpu_cache_model_4_runs_threads", |b| {
        b.iter(|| black_box(timed_to_json(&wsb, &released)))
    });
    #[cfg(feature = "cli")]
    g.bench_function("wsb_matmul_128_gpu_cache_model_4_runs_streamed", |b| {
        b.iter(|| black_box(timed_streamed_to_json(&wsb, &released)))
    });

    let accelsim = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces/accelsim-matrixmul/kernelslist.g");
    let (t, _) = warpscope::trace::read_file(&accelsim, None).expect("accel-sim sample");
    g.throughput(Throughput::Elements(t.total_accesses() as u64));
    g.bench_function("accelsim_matrixmul_sample_fermi16k", |b| {
        b.iter(|| black_box(file_to_json(&accelsim, &fermi)))
    });
    let matmul = d.join("accelsim-matmul-128");
    write_accel_sim(&matmul, 128);
    let (t, _) = warpscope::trace::read_file(&matmul, None).expect("accel-sim matmul");
    g.throughput(Throughput::Elements(t.total_accesses() as u64));
    drop(t);
    g.bench_function("accelsim_matmul_128_fermi16k_one_sm_loaded_whole", |b| {
        b.iter(|| black_box(file_to_json(&matmul, &fermi)))
    });
    g.bench_function("accelsim_matmul_128_fermi16k_one_sm_streamed", |b| {
        b.iter(|| black_box(streamed_to_json(&matmul, &fermi)))
    });
    // As `sim` reads it: once, instructions taken as they are found, on two threads.
    #[cfg(feature = "cli")]
    g.bench_function("accelsim_matmul_128_fermi16k_one_sm_streamed_once", |b| {
        b.iter(|| black_box(lanes_to_json(&matmul, &fermi, true)))
    });

    // Many small CTAs (65,536 CTAs of 32 threads, three accesses each): what handing pieces
    // over costs, in batches (`shell::lanes::Batch`) as `sim` does, against one thread.
    let trace = generate("vecadd", &[("n", "2097152"), ("block", "32")]);
    let small = d.join("vecadd-block32.wsb");
    warpscope::trace::write_file(&trace, &small).expect("write wsb");
    g.throughput(Throughput::Elements(trace.total_accesses() as u64));
    drop(trace);
    g.bench_function("wsb_vecadd_2M_block32_fermi16k_one_sm_streamed", |b| {
        b.iter(|| black_box(streamed_to_json(&small, &fermi)))
    });
    #[cfg(feature = "cli")]
    g.bench_function("wsb_vecadd_2M_block32_fermi16k_one_sm_threads", |b| {
        b.iter(|| black_box(lanes_to_json(&small, &fermi, false)))
    });
    g.finish();
    std::fs::remove_dir_all(&d).ok();
}

criterion_group!(benches, end_to_end);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
