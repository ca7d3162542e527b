//! The app's benchmarks (feature `bench`), run by `benches/gui.rs`: they drive the app and its
//! jobs from inside the crate, as its own tests do, so the crate need not make its parts
//! public for them. What each measures, and the targets, are in `benches/gui.rs`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;

#[path = "../../../benches/support/accelsim_dir.rs"]
mod accelsim_dir;
#[path = "../../../benches/support/memtrace_file.rs"]
mod memtrace_file;
#[path = "../../../benches/support/nvbit_log.rs"]
mod nvbit_log;
use crate::views::AddressView;
use crate::{Settings, Startup, WarpscopeApp};
use egui_kittest::Harness;
use warpscope_core::config;

/// An app showing `accesses` requests: vecadd (3 accesses a thread), every access its own
/// request, every SM simulated.
fn app(accesses: u64) -> Harness<'static, WarpscopeApp> {
    let params = format!("n={} block=256", accesses / 3);
    let mut a = WarpscopeApp::new(
        Settings::default(),
        Startup {
            file: None,
            fresh: true,
            generator: Some(("vecadd".into(), params.clone())),
            window: None,
            sweep: None,
            stream: false,
            shot_streamed: None,
            jobs: 0,
        },
        Arc::new(|| {}),
    );
    // The size is the point here: generate it whatever memory the machine has free (the
    // first generation, limited by it, is replaced).
    a.max_generated_accesses = None;
    a.generate("vecadd".into(), params);
    let mut cfg = config::preset("fermi-16k").expect("preset");
    cfg.coalescing = config::Coalescing::None;
    cfg.gpu.simulate = config::SmSelection::All;
    cfg.cache.set_index = config::SetIndex::Modulo;
    a.set_config(0, "bench", cfg, 0.0);
    let mut h = Harness::builder()
        .with_size([1500.0, 940.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), a);
    settle(&mut h, 0);
    h
}

/// Steps until the pane shows a result newer than `generation` with its raster drawn.
fn settle(h: &mut Harness<'static, WarpscopeApp>, generation: u64) {
    let start = Instant::now();
    loop {
        h.step();
        let s = h.state();
        let p = &s.panes[0];
        let drawn = p
            .view::<AddressView>()
            .and_then(|a| a.texture.as_ref())
            .is_some_and(|t| t.generation == p.generation);
        if s.idle() && p.result.is_some() && p.generation > generation && !p.stale && drawn {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the app did not settle"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn frame(h: &mut Harness<'static, WarpscopeApp>) {
    h.step();
    let shapes = h.output().shapes.clone();
    let ppp = h.ctx.pixels_per_point();
    black_box(h.ctx.tessellate(shapes, ppp));
}

/// The frame and change-to-screen benchmarks (`benches/gui.rs` says what each measures).
pub fn frames(c: &mut Criterion) {
    let mut g = c.benchmark_group("gui");
    g.sample_size(20);
    for (name, n) in [
        ("frame_1e6_requests", 1_000_000u64),
        ("frame_1e7_requests", 10_000_000),
    ] {
        let mut h = app(n);
        assert!(h.state().panes[0].result.as_ref().unwrap().points.len() as u64 >= n * 99 / 100);
        g.bench_function(name, |b| b.iter(|| frame(&mut h)));
    }
    let mut h = app(1_000_000);
    let mut ways = 4;
    g.sample_size(10);
    g.bench_function("change_to_screen_1e6_accesses", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                ways = if ways == 4 { 2 } else { 4 };
                let generation = h.state().panes[0].generation;
                let now = h.ctx.input(|i| i.time);
                let mut cfg = h.state().settings.panes[0].1.clone();
                cfg.cache.ways = ways;
                let start = Instant::now();
                h.state_mut().set_config(0, "bench", cfg, now);
                settle(&mut h, generation);
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

/// The streamed-file benchmarks (`benches/gui.rs` says what each measures).
pub fn streamed(c: &mut Criterion) {
    use crate::job::Wake;
    use std::io::Write;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("10M.din");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("the trace"));
    for i in 0..10_000_000u64 {
        let addr = 0x1000_0000 + (i * 2_654_435_761 % (64 << 20)) / 8 * 8;
        writeln!(f, "{} {addr:x}", (i % 3 == 2) as u8).expect("written");
    }
    drop(f);
    let wake: Wake = Arc::new(|| {});
    let mut g = c.benchmark_group("gui");
    g.sample_size(10);
    let to_first_preview =
        |file: &std::path::Path, iters: u64| to_first_preview(file, iters, &wake);
    g.bench_function("streamed_open_to_first_preview_10M_din", |b| {
        b.iter_custom(|iters| to_first_preview(&path, iters))
    });
    // An NVBit log, read once as it is simulated (its instructions taken as they are found).
    let nvbit = dir.path().join("matmul128.log");
    nvbit_log::write(&nvbit, 128);
    g.bench_function("streamed_open_to_first_preview_matmul128_nvbit", |b| {
        b.iter_custom(|iters| to_first_preview(&nvbit, iters))
    });
    // A cuda-memtrace file of one kernel (4x10^5 CTAs, 3.8x10^7 accesses in runs of 32, 32
    // MB): its rows go on only after the kernel's first read (the scan), so the first
    // picture waits for a scan of the whole file.
    let memtrace = dir.path().join("one-kernel.trc");
    memtrace_file::write(&memtrace, 400_000);
    g.bench_function("streamed_open_to_first_preview_memtrace_one_kernel", |b| {
        b.iter_custom(|iters| to_first_preview(&memtrace, iters))
    });
    // The same file compressed: the detail decompresses it again up to the copy's place.
    let zst = dir.path().join("10M.din.zst");
    let text = std::fs::read(&path).expect("the trace");
    std::fs::write(&zst, zstd::encode_all(&text[..], 3).expect("compressed")).expect("written");
    drop(text);
    // A binary file (version 4) of matmul n=128 in CTAs of 8x8 threads (4.2 M accesses, 256
    // CTAs, 112 resident at a time): copies between CTAs, the rows of their resident CTAs
    // read again through the index.
    let wsb = dir.path().join("matmul128.wsb");
    let params = vec![
        ("n".to_string(), "128".to_string()),
        ("block".to_string(), "8,8".to_string()),
    ];
    let matmul = warpscope_core::gen::generate("matmul", &params).expect("matmul");
    warpscope_core::trace::write_file(&matmul, &wsb).expect("written");
    drop(matmul);
    // The same compressed: no index to seek by, so the detail walks it from its start.
    let wsb_zst = dir.path().join("matmul128.wsb.zst");
    let bytes = std::fs::read(&wsb).expect("the trace");
    std::fs::write(
        &wsb_zst,
        zstd::encode_all(&bytes[..], 3).expect("compressed"),
    )
    .expect("written");
    drop(bytes);
    let accelsim = accelsim_dir::write(dir.path(), 128);
    for (file, label) in [
        (&path, "10M_din"),
        (&zst, "10M_din_zst"),
        (&wsb, "matmul128_wsb"),
        (&wsb_zst, "matmul128_wsb_zst"),
        (&accelsim, "matmul128_accelsim"),
        (&nvbit, "matmul128_nvbit"),
    ] {
        window_at_90pc(&mut g, file, label);
    }
    g.finish();
}

/// `file` opened as the app opens a file it streams (read by each run as it goes).
fn open_streamed(file: &std::path::Path) -> Arc<crate::data::TraceData> {
    use crate::job::Progress;
    use crate::worker::{self, Loaded, Source};
    let source = Source::File {
        path: file.to_path_buf(),
        format: None,
        allow_truncated: false,
        whole_up_to: 0,
    };
    let Ok(Loaded::Trace(trace)) = worker::load_source(source, &Arc::new(Progress::default()))
    else {
        panic!("the trace opens");
    };
    trace
}

/// Opens `file` streamed, starts its pane's run and waits for its first picture, `iters`
/// times: the first preview, or the result of a run done before one was due. The run is
/// cancelled then.
fn to_first_preview(file: &std::path::Path, iters: u64, wake: &crate::job::Wake) -> Duration {
    use crate::data::{Preview, PreviewSlot};
    use crate::job::Job;
    use crate::worker;

    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let trace = open_streamed(file);
        let slot = PreviewSlot::default();
        let preview = Preview::new(slot.clone(), wake.clone());
        let cfg = config::preset("fermi-16k").expect("preset");
        let mut job = Job::spawn("sim", wake, move |p| {
            worker::simulate_streamed(cfg, &trace, p, Some(preview))
        });
        let mut done = None;
        while done.is_none() && slot.lock().map(|s| s.is_none()).unwrap_or(true) {
            done = job.poll();
            std::thread::sleep(Duration::from_millis(1));
        }
        total += start.elapsed();
        if done.is_none() {
            job.cancel();
            let _ = job.wait(Duration::from_secs(60));
        }
    }
    total
}

/// The detail of 1000 requests at 90% of a streamed run of `file`, read from the file's start
/// and read on from the latest copy the whole run kept.
fn window_at_90pc(
    g: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
    file: &std::path::Path,
    label: &str,
) {
    use crate::job::Progress;
    use crate::worker;
    let trace = open_streamed(file);
    let cfg = config::preset("fermi-16k").expect("preset");
    let progress = Arc::new(Progress::default());
    let with_copies =
        worker::simulate_streamed(cfg.clone(), &trace, &progress, None).expect("the run");
    let mut without = crate::streamed::simulate_keeping(
        cfg,
        &trace,
        &progress,
        None,
        crate::data::checkpoints::Checkpoints::every(u64::MAX),
    )
    .expect("the run");
    assert!(Arc::get_mut(&mut without).is_some() && without.checkpoints.kept.is_empty());
    assert!(!with_copies.checkpoints.kept.is_empty());
    let start = with_copies.report.totals.requests / 10 * 9;
    for (name, whole) in [("from_start", &without), ("from_copy", &with_copies)] {
        g.bench_function(format!("streamed_window_at_90pc_{label}_{name}"), |b| {
            b.iter(|| {
                black_box(
                    worker::simulate_window(&trace, &progress, whole.clone(), start..start + 1000)
                        .expect("the detail"),
                )
            })
        });
    }
}
