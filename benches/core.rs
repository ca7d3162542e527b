//! Benchmarks for the speed targets of the core (run with `cargo bench`):
//! - set-associative LRU with 3C classification, requests per second;
//! - exact reuse-distance histogram at 10^7 distinct lines;
//! - each stage of `sim` on a `din` trace alone, on the lines of the corpus's mixes (issue 71);
//! - Dinero text trace parsing, bytes per second;
//! - the importers (Accel-Sim, NVBit, Crawford 2014 and Nugteren et al. 2014 text, cuda-memtrace, CSV with the
//!   `tables` feature), bytes per second, and the native format (`.wsb`), accesses per second, read whole and
//!   streamed;
//! - the whole pipeline on naive 128x128 matrix multiplication, also in timing mode with
//!   its comparison runs;
//! - the communication analysis on multi-launch kernels, accesses per second;
//! - memory per access of a 10^8-access trace (printed, not timed).

use criterion::{criterion_group, Criterion, Throughput};
use std::hint::black_box;
use warpscope::cache::{CacheModel, Classifier, Request, Tag};
use warpscope::config::{preset, CacheConfig};
use warpscope::gen::DinMix;
use warpscope::reuse::{ReuseTracker, SampledTracker};
use warpscope::rng::Rng;

/// A mix of streaming, reuse within a working set larger than the cache, and random lines.
fn request_stream(n: usize) -> Vec<Request> {
    let mut rng = Rng::new(42);
    (0..n)
        .map(|i| {
            let line = match i % 4 {
                0 => i as u64 / 4,
                1 | 2 => rng.below(512),
                _ => rng.below(1 << 20),
            };
            Request {
                line,
                sectors: 1,
                write: i % 16 == 0,
                bytes: 128,
            }
        })
        .collect()
}

/// The cache requests of a real kernel (3-D stencil, 130^3 grid, uncoalesced: one request
/// per thread access) in the order the scheduler issues them.
fn kernel_requests() -> Vec<Request> {
    struct Collect(Vec<Request>);
    impl warpscope::sim::Observer for Collect {
        fn on_request(&mut self, e: &warpscope::sim::RequestEvent) {
            self.0.push(Request {
                line: e.line,
                sectors: 1,
                write: e.write,
                bytes: 4,
            });
        }
    }
    let pairs: Vec<(String, String)> = [("nx", "130"), ("ny", "130"), ("nz", "34")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let trace = warpscope::gen::generate("stencil3d", &pairs).expect("generate");
    let mut cfg = warpscope::config::SimConfig {
        coalescing: warpscope::config::Coalescing::None,
        reuse: warpscope::config::ReuseMode::Off,
        ..Default::default()
    };
    cfg.gpu.sms = 1;
    let mut out = Collect(Vec::new());
    warpscope::sim::run(&cfg, &trace, &mut out).expect("simulate");
    out.0
}

fn cache(c: &mut Criterion) {
    let reqs = request_stream(2_000_000);
    // 16 KB, 4-way, 128-byte lines, modulo, LRU, write-through no-allocate.
    let cfg = CacheConfig::default();
    let kernel = kernel_requests();
    let mut g = c.benchmark_group("cache");
    g.sample_size(20);
    for (name, stream) in [
        ("lru_4way_16k_3c_mixed", &reqs),
        ("lru_4way_16k_3c_stencil3d", &kernel),
    ] {
        g.throughput(Throughput::Elements(stream.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut m = CacheModel::new(&cfg, 1);
                let mut misses = 0u64;
                for r in stream.iter() {
                    misses += (!m.access(r).hit) as u64;
                }
                black_box(misses)
            })
        });
    }
    g.finish();
}

fn reuse(c: &mut Criterion) {
    // 10^7 distinct lines. "sweeps": two passes over all lines interleaved with a hot
    // working set (GPU-like streaming with reuse); "random": a sweep, then uniformly random
    // reuses (no locality at all: the worst case).
    let distinct = 10_000_000u64;
    let mut rng = Rng::new(7);
    let mut sweeps: Vec<u64> = Vec::with_capacity(3 * distinct as usize);
    for pass in 0..2 {
        for l in 0..distinct {
            sweeps.push(l);
            if pass == 1 && l % 2 == 0 {
                sweeps.push(distinct + rng.below(4096));
            }
        }
    }
    let mut random: Vec<u64> = (0..distinct).collect();
    random.extend((0..distinct).map(|_| rng.below(distinct)));
    let mut g = c.benchmark_group("reuse");
    g.sample_size(10);
    for (name, lines) in [
        ("histogram_1e7_distinct_sweeps", &sweeps),
        ("histogram_1e7_distinct_random", &random),
    ] {
        g.throughput(Throughput::Elements(lines.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut t = ReuseTracker::new(1);
                for &l in lines.iter() {
                    t.access(l, 0);
                }
                black_box(t.whole_hist.infinite)
            })
        });
    }
    g.finish();
}

/// The lines (64-byte) and writes of the trace `tools/measure-e2e` measures, made the same way
/// (its own random numbers): a third each of a stream over 8 MiB, reads of a 256 KiB working
/// set at random and writes to it.
/// The lines (of 128 bytes) and writes of the first `n` references of a corpus mix.
fn mix_lines(mix: DinMix, n: u64) -> Vec<(u64, bool)> {
    mix.references(n).map(|(a, w)| (a >> 7, w)).collect()
}

/// One `din` reference's request: a whole 128-byte line of one sector, 4 bytes touched.
fn din_request(line: u64, write: bool) -> Request {
    Request {
        line,
        sectors: 1,
        write,
        bytes: 4,
    }
}

/// Each stage of `sim` on a `din` trace alone, on the lines of every `din` mix of the
/// benchmark corpus held in memory (`tools/make-corpus`; the hostile mix is the worst case):
/// the cache with its classifier, the cache taking its classes as tags and the classifier
/// alone (what the two threads of a streamed run do), and the reuse meters (exact, sampled).
/// The parse is the `din` group's. Per reference, what the end-to-end run could reach at best.
fn din_parts(c: &mut Criterion) {
    let cfg = CacheConfig {
        size_bytes: 16 << 10,
        line_bytes: 128,
        ways: 4,
        sector_bytes: 128,
        replacement: warpscope::config::Replacement::Lru,
        write_policy: warpscope::config::WritePolicy::Wbwa,
        ..CacheConfig::default()
    };
    for mix in DinMix::ALL {
        let refs = mix_lines(mix, 4_000_000);
        let mut g = c.benchmark_group(format!("din_parts_{}", mix.name()));
        g.sample_size(10);
        g.throughput(Throughput::Elements(refs.len() as u64));
        g.bench_function("cache_with_its_classifier", |b| {
            b.iter(|| {
                let mut m = CacheModel::new(&cfg, 1);
                let mut misses = 0u64;
                for &(line, write) in &refs {
                    misses += (!m.access(&din_request(line, write)).hit) as u64;
                }
                black_box(misses)
            })
        });
        let mut classes = Classifier::new(&cfg, 1);
        let tags: Vec<Tag> = refs
            .iter()
            .map(|&(l, w)| classes.tag(&din_request(l, w)))
            .collect();
        g.bench_function("cache_by_tags", |b| {
            b.iter(|| {
                let mut m = CacheModel::new(&cfg, 1);
                let mut misses = 0u64;
                for (&(line, write), &t) in refs.iter().zip(&tags) {
                    misses += (!m.access_tagged(&din_request(line, write), t).hit) as u64;
                }
                black_box(misses)
            })
        });
        g.bench_function("classifier", |b| {
            b.iter(|| {
                let mut c = Classifier::new(&cfg, 1);
                let mut hits = 0u64;
                for &(line, write) in &refs {
                    hits += (c.tag(&din_request(line, write)) == Tag::Hit) as u64;
                }
                black_box(hits)
            })
        });
        let sets = cfg.sets();
        g.bench_function("reuse_exact", |b| {
            b.iter(|| {
                let mut t = ReuseTracker::new(sets as usize);
                for &(line, _) in &refs {
                    t.access(line, (line % sets as u64) as u32);
                }
                black_box(t.whole_hist.infinite)
            })
        });
        g.bench_function("reuse_sampled", |b| {
            b.iter(|| {
                let mut t = SampledTracker::new(sets as usize, cfg.lines() as usize);
                for &(line, _) in &refs {
                    t.access(line, (line % sets as u64) as u32);
                }
                black_box(t.scale_bits())
            })
        });
        g.finish();
    }
}

fn din(c: &mut Criterion) {
    let mut text = String::new();
    let mut rng = Rng::new(3);
    while text.len() < 64 << 20 {
        let addr = rng.below(1 << 40);
        match rng.below(3) {
            0 => text.push_str(&format!("0 {addr:x}\n")),
            1 => text.push_str(&format!("1 {addr:x}\n")),
            _ => text.push_str(&format!("r {addr:x} 8\n")),
        }
    }
    let bytes = text.into_bytes();
    let mut g = c.benchmark_group("din");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(10);
    g.bench_function("parse_64MiB", |b| {
        b.iter(|| {
            black_box(
                warpscope::trace::din::read_sized(
                    bytes.as_slice(),
                    "bench.din",
                    bytes.len() as u64,
                )
                .map(|t| t.total_accesses()),
            )
        })
    });
    g.finish();
}

/// Synthetic inputs of the text importers and the native format, in memory (decompression and
/// disk are not what is measured).
fn import(c: &mut Criterion) {
    use warpscope::trace::{read_bytes, Format};
    let mut rng = Rng::new(5);
    // Accel-Sim: 32-thread warps, a memory instruction in list mode every other line.
    let mut accel = String::from(
        "-kernel name = k\n-grid dim = (4096,1,1)\n-block dim = (256,1,1)\n-accelsim tracer version = 4\n\n",
    );
    let mut cta = 0;
    while accel.len() < 48 << 20 {
        accel.push_str(&format!("#BEGIN_TB\nthread block = {cta},0,0\n"));
        for w in 0..8 {
            accel.push_str(&format!("warp = {w}\ninsts = 40\n"));
            for i in 0..20 {
                accel.push_str(&format!("{:04x} ffffffff 1 R2 IADD 2 R3 R4 0 \n", 16 * i));
                let base = rng.below(1 << 40) & !127;
                accel.push_str(&format!("{:04x} ffffffff 1 R4 LDG.E 1 R2 4 0", 16 * i + 8));
                for l in 0..32u64 {
                    accel.push_str(&format!(" 0x{:x}", base + 4 * l));
                }
                accel.push_str(" \n");
            }
        }
        accel.push_str("#END_TB\n");
        cta += 1;
    }
    // NVBit: one warp instruction a line.
    let mut nvbit = String::from("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 65535,1,1 - block size 256,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n");
    let mut line = 0u64;
    while nvbit.len() < 48 << 20 {
        let base = rng.below(1 << 40) & !127;
        nvbit.push_str(&format!(
            "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA {},0,0 - warp {} - LDG.E - ",
            line / 64 % 65535,
            line % 8
        ));
        for l in 0..32u64 {
            nvbit.push_str(&format!("0x{:016x} ", base + 4 * l));
        }
        nvbit.push('\n');
        line += 1;
    }
    // Crawford 2014: work-groups of 256 threads, each thread 8 loop iterations of a read
    // and a write of consecutive words.
    let mut crawford = String::from("local size:256 1 1\n");
    let mut tid = 0u64;
    while crawford.len() < 48 << 20 {
        for iter in 0..8u64 {
            let snap = (1u64 << 56) | (iter << 40);
            for (dir, inst, base) in [(0xFu64, 793u64, 0x1000_0000u64), (0xA, 794, 0x4000_0000)] {
                let addr = base + 4 * (tid * 8 + iter);
                crawford.push_str(&format!(
                    "0x{:X}|0x{:x}|0x{:x}\n",
                    addr << 32 | dir << 28 | inst,
                    tid,
                    snap
                ));
            }
        }
        tid += 1;
    }
    crawford.push_str("--\n");
    // Nugteren et al. 2014: each thread loads 16 words of a row and stores one.
    let mut nugteren = String::from("blocksize: 256 1 1\n");
    let mut tid = 0u64;
    while nugteren.len() < 48 << 20 {
        for k in 0..16u64 {
            nugteren.push_str(&format!(
                "{tid} 0 {} 4\n",
                268435456 + 4 * (tid / 32 * 512 + k * 32 + tid % 32)
            ));
        }
        nugteren.push_str(&format!("{tid} 1 {} 4\n", 536870912 + 4 * tid));
        tid += 1;
    }
    // cuda-memtrace, later layout: warps of 32 single records, every fourth a run record.
    let mut memtrace = vec![0x1a];
    memtrace.extend_from_slice(b"CUDATRACE");
    memtrace.push(0x00);
    memtrace.extend_from_slice(&1u16.to_le_bytes());
    memtrace.push(b'k');
    let mut n = 0u64;
    while memtrace.len() < 48 << 20 {
        let cta = n / 64 % 65535;
        let desc = (cta % 16) << 32 | (n % 2) << 28 | 4;
        let base = rng.below(1 << 40) & !127;
        let words = |out: &mut Vec<u8>, addr: u64| {
            for w in [desc, addr, cta << 32] {
                out.extend_from_slice(&w.to_le_bytes());
            }
        };
        if n % 4 == 3 {
            memtrace.push(0xFE);
            words(&mut memtrace, base);
            memtrace.extend_from_slice(&32u16.to_le_bytes());
        } else {
            for l in 0..32u64 {
                memtrace.push(0xFF);
                words(&mut memtrace, base + 4 * l);
            }
        }
        n += 1;
    }
    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    #[cfg_attr(not(feature = "tables"), allow(unused_mut))]
    let mut inputs = vec![
        ("accelsim_48MiB", Format::AccelSim, accel.into_bytes()),
        ("nvbit_48MiB", Format::NvBit, nvbit.into_bytes()),
        ("crawford_48MiB", Format::Crawford, crawford.into_bytes()),
        ("nugteren_48MiB", Format::Nugteren, nugteren.into_bytes()),
        ("memtrace_48MiB", Format::MemTrace, memtrace),
    ];
    #[cfg(feature = "tables")]
    {
        // CSV with the documented columns, one thread's access a row.
        let mut csv = String::from("kernel,cta_x,thread_x,inst,kind,address,size,space\n");
        let mut i = 0u64;
        while csv.len() < 48 << 20 {
            let kind = if i % 4 == 3 { "store" } else { "load" };
            csv.push_str(&format!(
                "k,{},{},ld{},{kind},0x{:x},4,global\n",
                i / 256 % 65535,
                i % 256,
                i / 256 % 8,
                0x1000_0000 + 4 * i
            ));
            i += 1;
        }
        inputs.push(("csv_48MiB", Format::Csv, csv.into_bytes()));
    }
    for (name, format, bytes) in inputs {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| black_box(read_bytes(format, &bytes).map(|t| t.total_accesses())))
        });
    }
    // The native format: a 16 M-access trace (just under the first reservation of 2^24 rows).
    let pairs = vec![("n".to_string(), "5592405".to_string())];
    let t = warpscope::gen::generate("vecadd", &pairs).expect("generate");
    let mut native = Vec::new();
    warpscope::trace::binary::write(&t, &mut native).unwrap();
    g.throughput(Throughput::Elements(t.total_accesses() as u64));
    g.bench_function("native_16M_accesses", |b| {
        b.iter(|| black_box(read_bytes(Format::Binary, &native).map(|t| t.total_accesses())))
    });
    // Matmul n=128 (4.2 M accesses, 27 KB packed): read whole into a trace, and streamed CTA
    // by CTA to a sink that counts them (what `sim` reads; no trace is built).
    let pairs = vec![("n".to_string(), "128".to_string())];
    let t = warpscope::gen::generate("matmul", &pairs).expect("generate");
    let mut native = Vec::new();
    warpscope::trace::binary::write(&t, &mut native).unwrap();
    g.throughput(Throughput::Elements(t.total_accesses() as u64));
    g.bench_function("native_matmul_128_whole", |b| {
        b.iter(|| black_box(read_bytes(Format::Binary, &native).map(|t| t.total_accesses())))
    });
    g.bench_function("native_matmul_128_streamed", |b| {
        b.iter(|| {
            let mut rows = RowCount(0);
            let read = warpscope::trace::binary::stream(native.as_slice(), "m.wsb", &mut rows);
            black_box(read.map(|()| rows.0))
        })
    });
    g.finish();
}

/// Counts the rows a streamed read hands on.
struct RowCount(usize);

impl warpscope::trace::KernelSink for RowCount {
    fn kernel(&mut self, k: warpscope::trace::Kernel) -> Result<(), warpscope::trace::TraceError> {
        self.0 += k.len();
        Ok(())
    }
}

impl warpscope::trace::CtaSink for RowCount {
    fn begin_kernel(
        &mut self,
        _: &warpscope::trace::Kernel,
    ) -> Result<(), warpscope::trace::TraceError> {
        Ok(())
    }
    fn cta(
        &mut self,
        _: u32,
        rows: &warpscope::trace::Columns,
    ) -> Result<(), warpscope::trace::TraceError> {
        self.0 += rows.len();
        Ok(())
    }
    fn issued(
        &mut self,
        rows: &warpscope::trace::Columns,
    ) -> Result<(), warpscope::trace::TraceError> {
        self.0 += rows.len();
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), warpscope::trace::TraceError> {
        Ok(())
    }
}

fn pipeline(c: &mut Criterion) {
    let pairs = vec![
        ("n".to_string(), "128".to_string()),
        ("block".to_string(), "16,16".to_string()),
    ];
    let trace = warpscope::gen::generate("matmul", &pairs).expect("generate");
    let mut cfg = preset("fermi-16k").expect("preset");
    cfg.gpu.sms = 1;
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(trace.total_accesses() as u64));
    g.sample_size(10);
    g.bench_function("matmul_128_fermi16k_one_sm", |b| {
        b.iter(|| {
            black_box(
                warpscope::sim::run(&cfg, &trace, &mut warpscope::sim::NoObserver)
                    .map(|r| r.totals.misses),
            )
        })
    });
    cfg.reuse = warpscope::config::ReuseMode::Off;
    g.bench_function("matmul_128_fermi16k_one_sm_no_reuse", |b| {
        b.iter(|| {
            black_box(
                warpscope::sim::run(&cfg, &trace, &mut warpscope::sim::NoObserver)
                    .map(|r| r.totals.misses),
            )
        })
    });
    // The timing model (Nugteren et al. 2014) with its three comparison runs, every CTA on the one
    // simulated SM so that all 4.2 M thread loads go through all four runs.
    let mut timed = preset("gtx470-16k").expect("preset");
    timed.gpu.sms = 1;
    g.bench_function("matmul_128_gtx470_16k_timing_4_runs", |b| {
        b.iter(|| {
            black_box(
                warpscope::sim::run(&timed, &trace, &mut warpscope::sim::NoObserver)
                    .map(|r| r.totals.misses),
            )
        })
    });
    g.finish();
}

/// The communication analysis (issue target: >= 20 M accesses per second): a hotspot
/// stencil (regular, each launch reads its neighbours' edges) and BFS levels (irregular).
fn comm(c: &mut Criterion) {
    let mut g = c.benchmark_group("comm");
    g.sample_size(10);
    for (name, params) in [
        (
            "hotspot",
            &[("nx", "512"), ("ny", "512"), ("steps", "8")][..],
        ),
        ("bfs-levels", &[("nodes", "262144"), ("degree", "8")][..]),
    ] {
        let pairs: Vec<(String, String)> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let trace = warpscope::gen::generate(name, &pairs).expect("generate");
        g.throughput(Throughput::Elements(trace.total_accesses() as u64));
        g.bench_function(
            format!("{name}_{}M_accesses", trace.total_accesses() / 1_000_000),
            |b| {
                b.iter(|| {
                    black_box(
                        warpscope::comm::analyze(&trace, &mut |_, _| true)
                            .map(|r| r.communicated_bytes),
                    )
                })
            },
        );
    }
    g.finish();
}

/// Memory of a 10^8-access trace (vector add over 33.3 M elements: 3 accesses a thread).
fn memory() {
    if std::env::var_os("WARPSCOPE_BENCH_MEMORY").is_none() {
        println!("memory: set WARPSCOPE_BENCH_MEMORY=1 to build a 10^8-access trace and report bytes per access");
        return;
    }
    let pairs = vec![
        ("n".to_string(), "33333334".to_string()),
        ("block".to_string(), "256".to_string()),
    ];
    let t = warpscope::gen::generate("vecadd", &pairs).expect("generate");
    let n = t.total_accesses();
    println!(
        "memory: {} accesses, {:.2} bytes per access (columns and thread index)",
        n,
        t.heap_bytes() as f64 / n as f64
    );
}

criterion_group!(benches, cache, reuse, din_parts, din, import, pipeline, comm);

fn main() {
    benches();
    memory();
    Criterion::default().configure_from_args().final_summary();
}
