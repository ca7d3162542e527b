//! The worked examples of docs/model.md, "Where we differ from the released model": for each
//! rule, a small kernel on which our default and the released model of Nugteren et al.
//! (2014) give different numbers, and the numbers each gives.

use warpscope::cache::MissClasses;
use warpscope::config::{CacheConfig, Coalescing, SimConfig, TimingConfig, TimingRules};
use warpscope::sim::{self, NoObserver, Report};
use warpscope::timing::{classify, classify_released, trace_requests, RunCounts, Status};
use warpscope::trace::{text, Kernel, Trace};

fn trace(src: &str) -> Trace {
    text::read(src.as_bytes(), "example.wst").unwrap()
}

fn kernel(src: &str) -> Kernel {
    trace(src).kernels.remove(0)
}

/// 16-byte lines, a fully associative cache of `lines` lines, warps of `warp` threads, hit
/// latency 0, miss latency `miss`, unlimited MSHRs, no clipping; `rule` set to `value`.
fn cfg(lines: u64, warp: u32, miss: u32, rule: Option<(&str, &str)>) -> SimConfig {
    let mut rules = TimingRules::default();
    if let Some((k, v)) = rule {
        rules.set(k, v).unwrap();
    }
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
            hit_latency: 0,
            miss_latency: miss,
            miss_latency_stddev: 0.0,
            mshrs: 0,
            clip: false,
            classify: true,
            rules,
            ..TimingConfig::default()
        }),
        ..SimConfig::default()
    };
    c.schedule.warp_size = warp;
    c
}

fn times(c: &SimConfig, k: &Kernel) -> Vec<(u64, u32, u64)> {
    trace_requests(c, k)
        .unwrap()
        .iter()
        .filter(|r| r.status != Status::Cancelled)
        .map(|r| (r.time, r.cta, r.line))
        .collect()
}

fn run(c: &SimConfig, t: &Trace) -> Report {
    sim::run(c, t, &mut NoObserver).unwrap()
}

#[test]
fn cta_launch_a_waiting_cta_starts_when_one_finishes_or_with_the_next_set() {
    // One CTA resident at a time is too few to show it: two, and CTA 0 is short.
    let k = kernel(
        "kernel k grid=3 block=1\n\
         0 0 i 0 ld 0x000 4\n\
         1 0 i 0 ld 0x100 4\n1 0 i 1 ld 0x110 4\n1 0 i 2 ld 0x120 4\n\
         2 0 i 0 ld 0x200 4\n",
    );
    let mut ours = cfg(64, 32, 0, None);
    ours.gpu.max_ctas_per_sm = 2;
    let mut released = cfg(64, 32, 0, Some(("cta-launch", "in-sets")));
    released.gpu.max_ctas_per_sm = 2;
    // Ours: CTA 2 takes CTA 0's place at time 2, beside CTA 1.
    assert_eq!(
        times(&ours, &k),
        vec![(0, 0, 0), (1, 1, 16), (2, 2, 32), (3, 1, 17), (4, 1, 18)]
    );
    // Released: CTA 2 waits until CTA 1, the rest of its set, has finished.
    assert_eq!(
        times(&released, &k),
        vec![(0, 0, 0), (1, 1, 16), (2, 1, 17), (3, 1, 18), (4, 2, 32)]
    );
}

#[test]
fn issue_an_access_across_a_line_boundary_requests_both_lines_or_only_its_first() {
    // One 8-byte load at byte 12 of a 16-byte line.
    let t = trace("kernel k grid=1 block=1\n0 0 i 0 ld 12 8\n");
    let ours = run(&cfg(64, 32, 10, None), &t);
    let released = run(&cfg(64, 32, 10, Some(("issue", "thread-portions"))), &t);
    assert_eq!(ours.totals.requests, 2);
    assert_eq!(released.totals.requests, 1);
}

#[test]
fn issue_threads_of_8_byte_loads_go_in_half_warps_that_see_each_others_hits() {
    // 32 threads, 8-byte loads: lanes 0-15 read line 0 (16 B lines: 2 lanes a line, so
    // lines 0-7), lanes 16-31 lines 8-15; then every lane reads lane 0's line again.
    let mut src = String::from("kernel k grid=1 block=32\n");
    for t in 0..32 {
        src += &format!("0 {t} a 0 ld {} 8\n", t * 8);
    }
    for t in 0..32 {
        src += &format!("0 {t} b 0 ld 0 8\n");
    }
    let t = trace(&src);
    let ours = run(&cfg(64, 32, 0, None), &t);
    let mut r = cfg(64, 32, 0, None);
    r.timing.as_mut().unwrap().rules.issue = warpscope::config::IssueUnit::ThreadPortions;
    let released = run(&r, &t);
    // Ours: one instruction, 16 requests; then 1 request for `b`.
    assert_eq!(ours.totals.requests, 17);
    // Released: `a` in two half-warps of 8 lines each; `b` is coalesced only within each
    // half-warp (8-byte loads), so both halves request line 0.
    assert_eq!(released.totals.requests, 18);
    assert_eq!(released.totals.misses, 16);
}

#[test]
fn merging_a_wider_load_turns_a_lane_merged_before_back_on_in_the_released_coalescer() {
    // One warp, one load per thread (16-byte lines): thread 0 at 0, threads 1-15 each on a
    // line of its own, thread 16 at 4 (line 0, 4 bytes: served by thread 0 across the warp),
    // thread 17 at 8 (line 0, 8 bytes: its half-warp starts at 16, so thread 16 serves it).
    let mut src = String::from("kernel k grid=1 block=32\n0 0 a 0 ld 0 4\n");
    for t in 1..16 {
        src += &format!("0 {t} a 0 ld {} 4\n", 4096 * t);
    }
    src += "0 16 a 0 ld 4 4\n0 17 a 0 ld 8 8\n";
    let t = trace(&src);
    let mut ours = cfg(64, 32, 0, Some(("issue", "thread-portions")));
    let released = {
        let mut c = ours.clone();
        c.timing.as_mut().unwrap().rules.merging = warpscope::config::Merging::WidthBump;
        c
    };
    // Ours: threads 0-15 request their lines; 16 and 17 are served.
    assert_eq!(run(&ours, &t).totals.requests, 16);
    // Released: thread 17 bumps the width of thread 16 (another address on its line), which
    // had been merged into thread 0: thread 16 requests line 0 again.
    assert_eq!(run(&released, &t).totals.requests, 17);
    // Under the warp issue unit the rule changes nothing: the warp's coalescer decides.
    ours.timing.as_mut().unwrap().rules = TimingRules {
        merging: warpscope::config::Merging::WidthBump,
        ..TimingRules::default()
    };
    assert_eq!(run(&ours, &t).totals.requests, 16);
}

#[test]
fn mshr_check_every_new_line_waits_the_released_model_only_stalls_a_warp_s_first_thread() {
    // One MSHR; one warp of two threads loading two lines.
    let k = kernel("kernel k grid=1 block=2\n0 0 i 0 ld 0 4\n0 1 i 0 ld 16 4\n");
    let mut ours = cfg(64, 32, 4, None);
    ours.timing.as_mut().unwrap().mshrs = 1;
    let mut released = cfg(64, 32, 4, Some(("mshr-check", "first-thread")));
    released.timing.as_mut().unwrap().mshrs = 1;
    // Ours: the second line waits for the first one's MSHR (free at time 4).
    assert_eq!(times(&ours, &k), vec![(0, 0, 0), (4, 0, 1)]);
    // Released: at time 0 no line is outstanding, so both go, the second over the limit.
    assert_eq!(times(&released, &k), vec![(0, 0, 0), (0, 0, 1)]);
}

#[test]
fn arrivals_a_line_arriving_now_serves_a_request_now_as_in_table_5_of_the_paper() {
    // Nugteren et al. 2014, table 5's time 2: thread 0's second load finds the line that its
    // first load's miss brings at time 2. The released model applies the arrival after the
    // lookup, so the request misses.
    let k = kernel(
        "kernel t grid=1 block=4\n0 0 i0 0 ld 0 4\n0 0 i1 0 ld 4 4\n\
         0 2 i0 0 ld 16 4\n0 2 i1 0 ld 20 4\n",
    );
    let table5 = |rule| {
        let mut c = cfg(2, 1, 2, rule);
        c.timing.as_mut().unwrap().mshrs = 1;
        c.timing.as_mut().unwrap().warp_delay = false;
        trace_requests(&c, &k).unwrap()
    };
    let ours = table5(None);
    assert_eq!((ours[2].time, ours[2].distance), (2, Some(0)));
    assert_eq!(ours[2].status, Status::Hit);
    let released = table5(Some(("arrivals", "after-group")));
    assert_eq!((released[2].time, released[2].distance), (2, None));
    assert_eq!(released[2].status, Status::Miss);
}

#[test]
fn effect_order_same_time_effects_in_issue_order_or_hits_first() {
    // Two one-thread warps, miss latency 2, no warp delay. At time 3 the miss of X (issued
    // at 1) and the hit of B (issued at 3) take effect together; at time 4, B's distance
    // says which went first.
    let k = kernel(
        "kernel k grid=1 block=2\n\
         0 0 i 0 ld 0x10 4\n0 0 i 1 ld 0x20 4\n0 0 i 2 ld 0x10 4\n\
         0 1 i 0 ld 0x30 4\n0 1 i 1 ld 0x10 4\n0 1 i 2 ld 0x40 4\n",
    );
    let at4 = |rule| {
        let mut c = cfg(8, 1, 2, rule);
        c.timing.as_mut().unwrap().warp_delay = false;
        let rows = trace_requests(&c, &k).unwrap();
        assert_eq!((rows[4].time, rows[4].line), (4, 1));
        rows[4].distance
    };
    assert_eq!(at4(None), Some(0));
    assert_eq!(at4(Some(("effect-order", "hits-first"))), Some(1));
}

#[test]
fn warp_return_a_waiting_warp_issues_when_its_data_arrives_or_a_step_later() {
    let k = kernel("kernel k grid=1 block=1\n0 0 i 0 ld 0 4\n0 0 i 1 ld 16 4\n");
    let ours = cfg(64, 32, 5, None);
    let released = cfg(64, 32, 5, Some(("warp-return", "step-after-by-warp-id")));
    assert_eq!(times(&ours, &k), vec![(0, 0, 0), (5, 0, 1)]);
    assert_eq!(times(&released, &k), vec![(0, 0, 0), (6, 0, 1)]);
}

#[test]
fn warp_return_warps_returning_together_rejoin_in_waiting_order_or_by_warp_number() {
    // Three one-thread warps, miss latency 3, hit latency 1: warp 0's second load hits, so
    // it waits 1 step and returns together with a warp that waited since earlier.
    let k = kernel(
        "kernel k grid=1 block=3\n\
         0 0 i 0 ld 0x00 4\n0 0 i 1 ld 0x00 4\n0 0 i 2 ld 0x40 4\n\
         0 1 i 0 ld 0x10 4\n0 1 i 1 ld 0x50 4\n\
         0 2 i 0 ld 0x20 4\n0 2 i 1 ld 0x60 4\n",
    );
    let order = |rule| {
        let mut c = cfg(64, 1, 3, rule);
        c.timing.as_mut().unwrap().hit_latency = 1;
        trace_requests(&c, &k)
            .unwrap()
            .iter()
            .map(|r| (r.time, r.warp))
            .collect::<Vec<_>>()
    };
    // Ours: at time 4 warps 1 (waiting since time 1) and 0 (since 3) return, in that order.
    assert_eq!(
        order(None),
        vec![(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 0), (6, 2)]
    );
    // Released: a step later; at time 6 warps 2 (waiting since 2) and 0 (since 4) return,
    // warp 0 first.
    assert_eq!(
        order(Some(("warp-return", "step-after-by-warp-id"))),
        vec![(0, 0), (1, 1), (2, 2), (4, 0), (5, 1), (6, 0), (7, 2)]
    );
}

#[test]
fn finished_warps_leave_or_take_one_more_step() {
    // One CTA at a time, miss latency 0: under take-a-step each finished warp costs a step
    // before the next CTA can start.
    let k = kernel("kernel k grid=2 block=1\n0 0 i 0 ld 0 4\n1 0 i 0 ld 16 4\n");
    let mut ours = cfg(64, 32, 0, None);
    ours.gpu.max_ctas_per_sm = 1;
    let mut released = cfg(64, 32, 0, Some(("finished-warps", "take-a-step")));
    released.gpu.max_ctas_per_sm = 1;
    assert_eq!(times(&ours, &k), vec![(0, 0, 0), (1, 1, 1)]);
    assert_eq!(times(&released, &k), vec![(0, 0, 0), (2, 1, 1)]);
}

#[test]
fn stores_bypass_the_l1_and_are_counted_or_are_dropped() {
    let t = trace("kernel k grid=1 block=1\n0 0 i 0 ld 0 4\n0 0 s 0 st 64 4\n");
    let ours = run(&cfg(64, 32, 2, None), &t);
    let released = run(&cfg(64, 32, 2, Some(("stores", "dropped"))), &t);
    assert_eq!((ours.totals.writes, ours.totals.bytes_to_memory), (1, 4));
    assert_eq!(
        (released.totals.writes, released.totals.bytes_to_memory),
        (0, 0)
    );
    assert_eq!(ours.totals.requests, released.totals.requests);
}

#[test]
fn kernels_start_with_what_the_previous_one_left_or_cold() {
    let t = trace(
        "kernel a grid=1 block=1\n0 0 i 0 ld 0 4\n\
         kernel b grid=1 block=1\n0 0 i 0 ld 0 4\n",
    );
    let ours = run(&cfg(64, 32, 2, None), &t);
    let released = run(&cfg(64, 32, 2, Some(("kernels", "cold"))), &t);
    assert_eq!(ours.totals.misses, 1);
    assert_eq!(released.totals.misses, 2);
}

#[test]
fn hit_rule_a_distance_equal_to_the_associativity_is_a_miss_or_counted_as_a_hit() {
    // A 2-line fully associative cache: A, B, C, A gives A distance 2 = the associativity.
    let t = trace(
        "kernel k grid=1 block=1\n\
         0 0 i 0 ld 0x00 4\n0 0 i 1 ld 0x10 4\n0 0 i 2 ld 0x20 4\n0 0 i 3 ld 0x00 4\n",
    );
    let ours = run(&cfg(2, 32, 0, None), &t);
    let released = run(&cfg(2, 32, 0, Some(("hit-rule", "at-most-ways"))), &t);
    assert_eq!(ours.totals.misses, 4);
    assert_eq!(released.totals.misses, 3);
}

#[test]
fn classes_the_released_arithmetic_can_add_a_class_s_excess_instead_of_removing_it() {
    let rc = |misses, infinite| RunCounts {
        requests: 100,
        misses,
        infinite,
        fills: 0,
    };
    // 20 misses: 8 first uses in the zero-latency run, 15 ∞ in the full one, 5 fewer misses
    // fully associative, 10 fewer with unlimited MSHRs. 8 + 7 + 5 + 10 = 30 over-claims by 10.
    let (full, fa, zl, un) = (rc(20, 15), rc(15, 15), rc(10, 8), rc(10, 15));
    let ours = classify(&full, &fa, &zl, &un);
    assert_eq!(ours.total(), 20);
    assert_eq!(
        (ours.compulsory, ours.conflict, ours.latency, ours.mshr),
        (8, 5, 7, 0)
    );
    // Released: MSHR (10) exceeds the excess (10)? No, so latency (7)? No: conflict takes it,
    // *plus* 10: 15; the five sum to 40 for 20 misses.
    let released = classify_released(&full, &fa, &zl, &un);
    assert_eq!(
        released,
        MissClasses {
            compulsory: 8,
            capacity: 0,
            conflict: 15,
            latency: 7,
            mshr: 10
        }
    );
}

/// The numbers the released program prints (built from its public sources, σ = 0) for a
/// kernel of ours written in its trace format: (cache bytes, ways, MSHRs, latency),
/// histogram (distance, count; ∞ last), then compulsory, capacity, associativity, latency,
/// MSHR, tot_associativity, tot_latency, tot_mshr, hits.
type Released = ((u64, u32, u32, u32), &'static [(u64, u64)], u64, [u64; 9]);

fn check_compat(kernel: &str, params: &[&str], want: Released) {
    let pairs =
        warpscope::gen::parse_pairs(&params.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
    let generated = warpscope::gen::generate(kernel, &pairs).unwrap();
    let mut file = Vec::new();
    warpscope::trace::nugteren::write(&generated.kernels[0], &mut file).unwrap();
    let t = warpscope::trace::nugteren::read(&file[..], "k_00.trc").unwrap();
    let ((bytes, ways, mshrs, latency), hist, inf, n) = want;
    let mut c = SimConfig::default();
    c.cache.size_bytes = bytes;
    c.cache.ways = ways;
    warpscope::config::compat(&mut c, "gpu-cache-model").unwrap();
    let tc = c.timing.as_mut().unwrap();
    tc.mshrs = mshrs;
    tc.miss_latency = latency;
    tc.miss_latency_stddev = 0.0;
    let r = run(&c, &t);
    let timing = r.timing.as_ref().unwrap();
    let dc = timing.set_distance_counts.as_ref().unwrap();
    let mut got_hist: Vec<(u64, u64)> = dc.finite.iter().map(|v| (v.value, v.count)).collect();
    got_hist.sort();
    let mut want_hist = hist.to_vec();
    want_hist.sort();
    assert_eq!(got_hist, want_hist, "{kernel}: histogram");
    assert_eq!(dc.infinite, inf, "{kernel}: ∞");
    let m = r.totals.miss_classes;
    let cmp = &timing.comparison;
    let got = [
        m.compulsory,
        m.capacity,
        m.conflict,
        m.latency,
        m.mshr,
        cmp.fully_associative.unwrap().misses,
        cmp.zero_latency.unwrap().misses,
        cmp.unlimited_mshrs.unwrap().misses,
        r.totals.hits,
    ];
    assert_eq!(got, n, "{kernel}: classes, comparison runs, hits");
}

#[test]
fn compat_mode_gives_the_released_program_s_numbers_on_matmul() {
    check_compat(
        "matmul",
        &["n=64"],
        (
            (16384, 4, 64, 100),
            &[
                (0, 12644),
                (1, 3040),
                (2, 274),
                (3, 14),
                (4, 136),
                (5, 2990),
                (6, 1968),
            ],
            3510,
            [256, 4958, 0, 3254, 0, 8602, 508, 8468, 16108],
        ),
    );
    check_compat(
        "matmul",
        &["n=64"],
        (
            (8192, 2, 4, 200),
            &[
                (0, 14225),
                (1, 3142),
                (2, 469),
                (3, 13),
                (4, 214),
                (5, 3023),
                (6, 1690),
            ],
            1800,
            [256, 4940, 0, 1544, 0, 7963, 529, 8460, 17836],
        ),
    );
}

#[test]
fn compat_mode_gives_the_released_program_s_numbers_on_a_2d_stencil() {
    check_compat(
        "stencil2d",
        &["nx=66", "ny=66"],
        (
            (16384, 4, 64, 100),
            &[(0, 1230), (1, 295)],
            363,
            [137, 0, 0, 226, 0, 363, 137, 378, 1525],
        ),
    );
    check_compat(
        "stencil2d",
        &["nx=66", "ny=66"],
        (
            (8192, 2, 4, 200),
            &[(0, 1569), (1, 33)],
            286,
            [137, 0, 0, 149, 0, 286, 137, 377, 1602],
        ),
    );
}

#[test]
fn the_gtx470_presets_are_the_paper_s_setting_one_core_running_the_first_8192_threads() {
    for name in ["gtx470-16k", "gtx470-48k"] {
        let c = warpscope::config::preset(name).unwrap();
        assert_eq!((c.gpu.sms, c.gpu.thread_limit), (1, 8192), "{name}");
        assert!(c.timing.is_some());
        assert_eq!(c.timing.as_ref().unwrap().rules, TimingRules::default());
    }
    // Naive matmul n=128: 64 CTAs of 256 threads; the first 32 are modelled, all on SM 0.
    let t = warpscope::gen::generate("matmul", &[("n".into(), "128".into())]).unwrap();
    let mut c = warpscope::config::preset("gtx470-16k").unwrap();
    c.timing.as_mut().unwrap().classify = false;
    c.reuse = warpscope::config::ReuseMode::Off;
    let r = run(&c, &t);
    let with_requests: Vec<u32> = r
        .ctas
        .iter()
        .filter(|row| row.counters.requests > 0)
        .map(|row| row.cta.x + 8 * row.cta.y)
        .collect();
    assert_eq!(with_requests, (0..32).collect::<Vec<u32>>());
    c.gpu.thread_limit = 0;
    let all = run(&c, &t);
    assert_eq!(all.totals.requests, 2 * r.totals.requests);
}
