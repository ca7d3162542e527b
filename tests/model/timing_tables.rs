//! Nugteren et al. 2014 tables 3, 4 and 5: the timing extensions of reuse
//! distance theory, row by row, plus the clipping example of §4.2 and fig. 3's experiment.

use warpscope::config::{CacheConfig, Coalescing, SimConfig, TimingConfig};
use warpscope::timing::{trace_requests, Status, TimedRequest};
use warpscope::trace::text;

/// Threads `tids` of a 4-thread CTA, each loading x[2*tid] then x[2*tid+1] (4-byte elements).
fn example(tids: &[u64]) -> warpscope::trace::Kernel {
    let mut s = String::from("kernel t grid=1 block=4\ninst i0\ninst i1\n");
    for &tid in tids {
        s += &format!("0 {tid} i0 0 ld {} 4\n", 2 * tid * 4);
        s += &format!("0 {tid} i1 0 ld {} 4\n", (2 * tid + 1) * 4);
    }
    let mut t = text::read(s.as_bytes(), "example.wst").unwrap();
    t.kernels.remove(0)
}

/// 16-byte lines (4 elements), a fully associative cache of `lines` lines, one thread per warp,
/// plain round-robin (no warp delays), no clipping: the setting of tables 3-5.
fn cfg(lines: u64, hit: u32, miss: u32, mshrs: u32) -> SimConfig {
    let mut c = SimConfig {
        cache: CacheConfig {
            size_bytes: 16 * lines,
            line_bytes: 16,
            ways: 0,
            sector_bytes: 16,
            ..CacheConfig::default()
        },
        coalescing: Coalescing::Line,
        timing: Some(TimingConfig {
            hit_latency: hit,
            miss_latency: miss,
            l2_latency: miss,
            miss_latency_stddev: 0.0,
            mshrs,
            mshrs_per_warp: 0,
            clip: false,
            warp_delay: false,
            classify: true,
            rules: Default::default(),
        }),
        ..SimConfig::default()
    };
    c.schedule.warp_size = 1;
    c
}

fn col<T>(rows: &[TimedRequest], f: impl Fn(&TimedRequest) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

const INF: Option<u64> = None;

#[test]
fn table3_fixed_latencies() {
    let rows = trace_requests(&cfg(2, 2, 2, 0), &example(&[0, 1, 2, 3])).unwrap();
    assert_eq!(col(&rows, |r| r.time), (0..8).collect::<Vec<u64>>());
    assert_eq!(col(&rows, |r| r.inst), vec![0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(col(&rows, |r| r.line), vec![0, 0, 1, 1, 0, 0, 1, 1]);
    assert_eq!(
        col(&rows, |r| r.distance),
        vec![INF, INF, INF, INF, Some(0), Some(1), Some(0), Some(1)]
    );
    use Status::*;
    assert_eq!(
        col(&rows, |r| r.status),
        vec![Miss, Miss, Miss, Miss, Hit, Hit, Hit, Hit]
    );
    assert_eq!(col(&rows, |r| r.latency), vec![2; 8]);
    assert_eq!(col(&rows, |r| r.effect_at), (2..10).collect::<Vec<u64>>());
}

#[test]
fn table4_conditional_latencies() {
    let rows = trace_requests(&cfg(2, 0, 2, 0), &example(&[0, 1, 2, 3])).unwrap();
    assert_eq!(
        col(&rows, |r| r.distance),
        vec![INF, INF, INF, INF, Some(0), Some(0), Some(1), Some(0)]
    );
    use Status::*;
    assert_eq!(
        col(&rows, |r| r.status),
        vec![Miss, Miss, Miss, Miss, Hit, Hit, Hit, Hit]
    );
    assert_eq!(col(&rows, |r| r.latency), vec![2, 2, 2, 2, 0, 0, 0, 0]);
    assert_eq!(col(&rows, |r| r.effect_at), vec![2, 3, 4, 5, 4, 5, 6, 7]);
    // The requests at times 1 and 3 missed only because their line was in flight.
    assert_eq!(
        col(&rows, |r| r.in_flight),
        vec![false, true, false, true, false, false, false, false]
    );
}

#[test]
fn section_4_2_clipping_moves_the_effect_of_time_1_from_3_to_2() {
    let mut c = cfg(2, 0, 2, 0);
    c.timing.as_mut().unwrap().clip = true;
    let rows = trace_requests(&c, &example(&[0, 1, 2, 3])).unwrap();
    assert_eq!(col(&rows, |r| r.effect_at), vec![2, 2, 4, 4, 4, 5, 6, 7]);
    // Distances and hits are the same as in table 4.
    assert_eq!(
        col(&rows, |r| r.distance),
        vec![INF, INF, INF, INF, Some(0), Some(0), Some(1), Some(0)]
    );
}

#[test]
fn table5_one_mshr() {
    // Only threads 0 and 2 run; one MSHR.
    let rows = trace_requests(&cfg(2, 0, 2, 1), &example(&[0, 2])).unwrap();
    assert_eq!(col(&rows, |r| r.time), vec![0, 1, 2, 3, 4]);
    assert_eq!(col(&rows, |r| r.inst), vec![0, 0, 1, 0, 1]);
    // Thread ids: one thread per warp, so the warp index is the thread id.
    assert_eq!(col(&rows, |r| r.warp), vec![0, 2, 0, 2, 2]);
    assert_eq!(col(&rows, |r| r.line), vec![0, 1, 0, 1, 1]);
    assert_eq!(
        col(&rows, |r| r.distance),
        vec![INF, INF, Some(0), INF, INF]
    );
    use Status::*;
    assert_eq!(
        col(&rows, |r| r.status),
        vec![Miss, Cancelled, Hit, Miss, Miss]
    );
    assert_eq!(col(&rows, |r| r.mshrs_before), vec![0, 1, 0, 0, 1]);
    let issued: Vec<&TimedRequest> = rows.iter().filter(|r| r.status != Cancelled).collect();
    assert_eq!(
        issued.iter().map(|r| r.mshrs_after).collect::<Vec<_>>(),
        vec![1, 0, 1, 1]
    );
    assert_eq!(
        issued.iter().map(|r| r.latency).collect::<Vec<_>>(),
        vec![2, 0, 2, 2]
    );
    assert_eq!(
        issued.iter().map(|r| r.effect_at).collect::<Vec<_>>(),
        vec![2, 2, 5, 6]
    );
}

fn column_copy(threads: u32) -> warpscope::trace::Trace {
    warpscope::gen::generate(
        "column-copy",
        &warpscope::gen::parse_pairs(&[format!("threads={threads}")]).unwrap(),
    )
    .unwrap()
}

/// Load miss rate: the timing model of `preset`, or the same cache with plain round-robin
/// order and no latencies (the core model; stores never allocate, so reads alone count).
fn load_miss_rate(threads: u32, timing: bool, fully_associative: bool) -> f64 {
    let mut c = warpscope::config::preset("gtx470-16k").unwrap();
    c.gpu.sms = 1;
    c.reuse = warpscope::config::ReuseMode::Off;
    if fully_associative {
        c.cache.ways = 0;
        c.cache.set_index = warpscope::config::SetIndex::Modulo;
    }
    if !timing {
        c.timing = None;
    }
    let r =
        warpscope::sim::run(&c, &column_copy(threads), &mut warpscope::sim::NoObserver).unwrap();
    r.totals.read_misses as f64 / r.totals.reads as f64
}

#[test]
fn fig3_mshrs_and_latencies_move_the_miss_rate_the_way_the_paper_reports() {
    // 256-1024 threads: threads that run ahead reuse their own line before others evict it,
    // so the timing model misses less than the fair round-robin order.
    for threads in [256, 512, 1024] {
        let (rr, timed) = (
            load_miss_rate(threads, false, false),
            load_miss_rate(threads, true, false),
        );
        assert!(timed < rr, "{threads} threads: {timed} vs {rr}");
    }
    // 128 threads in 128 lines: round-robin keeps exactly one line per thread; threads that
    // run ahead evict lines others still use (the paper's explanation), so it misses more.
    let (rr, timed) = (
        load_miss_rate(128, false, true),
        load_miss_rate(128, true, true),
    );
    assert!(timed > rr, "{timed} vs {rr}");
}

#[test]
fn same_seed_same_result_and_no_randomness_without_variance() {
    let trace = warpscope::gen::generate(
        "matmul",
        &warpscope::gen::parse_pairs(&["n=64".to_string()]).unwrap(),
    )
    .unwrap();
    let run = |seed: u64, stddev: f64| {
        let mut c = warpscope::config::preset("gtx470-16k").unwrap();
        c.seed = seed;
        c.timing.as_mut().unwrap().miss_latency_stddev = stddev;
        let r = warpscope::sim::run(&c, &trace, &mut warpscope::sim::NoObserver).unwrap();
        (r.totals, r.timing.unwrap().latency_histogram)
    };
    assert_eq!(run(7, 5.0), run(7, 5.0));
    assert_ne!(
        run(7, 5.0).1,
        run(8, 5.0).1,
        "σ = 5 draws latencies from the seed"
    );
    assert_eq!(run(7, 0.0), run(8, 0.0));
    // The five classes add up to the misses.
    let (t, _) = run(7, 5.0);
    assert_eq!(t.miss_classes.total(), t.misses);
    assert!(t.miss_classes.latency > 0);
}
