//! The timing model with a shared L2: every SM at once, their turns in the order of their
//! clocks, each new fill asking the L2 for its line and taking the L2's latency where the L2
//! had it and the miss (DRAM) latency where not. Checked against a deliberately simple model
//! of an L2 that never evicts (a set of the lines it was sent) on random kernels over several
//! SMs, and on hand-made cases where one SM's store or load feeds another SM's load.

use proptest::prelude::*;
use std::collections::HashSet;
use warpscope::config::{L2Config, SimConfig, SmSelection, TimingConfig};
use warpscope::explain;
use warpscope::l2::L2Cause;
use warpscope::sim::{self, Observer, RequestEvent};
use warpscope::trace::Kernel;

use crate::random_kernels::{kernel, small_config, Row};

const MISS: u64 = 100;
const L2_HIT: u64 = 40;

/// Every request of the full model, in the order it is told.
#[derive(Default)]
struct Requests(Vec<RequestEvent>);
impl Observer for Requests {
    fn on_request(&mut self, e: &RequestEvent) {
        self.0.push(*e);
    }
}

/// `cfg` on `sms` SMs, every one simulated, behind the default L2 (far larger than the
/// kernels' footprints: it never evicts), with fixed latencies.
fn with_l2(mut cfg: SimConfig, sms: u32, mshrs: u32) -> SimConfig {
    cfg.gpu.sms = sms;
    cfg.gpu.simulate = SmSelection::All;
    cfg.l2 = Some(L2Config::default());
    cfg.timing = Some(TimingConfig {
        hit_latency: 0,
        miss_latency: MISS as u32,
        l2_latency: L2_HIT as u32,
        miss_latency_stddev: 0.0,
        mshrs,
        classify: false,
        ..TimingConfig::default()
    });
    cfg
}

/// A new fill: a miss whose line was not in flight (it takes an MSHR and asks the L2).
fn new_fill(e: &RequestEvent) -> bool {
    !e.hit && !e.in_flight
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn fills_take_the_l2_latency_exactly_where_a_simple_l2_has_their_line(
        rows in prop::collection::vec(
            (0u32..400, 0u32..3, 0u32..4, 0u64..8192, 1u16..40, 0u8..4),
            1..250,
        ),
        ctas in 1u32..9,
        sms in 2u32..4,
        max_ctas in 1u32..3,
        mshrs in 1u32..8,
        warp_order in any::<bool>(),
    ) {
        // Loads only (the timing model's L1 holds loads; stores are checked below).
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|(t, i, d, a, s, k)| (t, i, d, a, s, if k == 1 { 0 } else { k }))
            .collect();
        let k = kernel("k", ctas, 8, warp_order, &rows);
        let cfg = with_l2(small_config(4, 0, sms, max_ctas, false, 7), sms, mshrs);
        let mut seen = Requests::default();
        let report = sim::run_kernels(&cfg, std::slice::from_ref(&k), &mut seen)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let l2 = report.l2.as_ref().ok_or_else(|| TestCaseError::fail("no L2 report"))?;
        // The SMs take their turns in the order of their clocks (the lowest SM first on a
        // tie), so the requests come in that order.
        for w in seen.0.windows(2) {
            let (a, b) = ((w[0].time, w[0].sm), (w[1].time, w[1].sm));
            prop_assert!(a <= b, "request at {a:?} told after one at {b:?}");
        }
        // The simple L2: the lines sent so far.
        let mut held = HashSet::new();
        let (mut fills, mut hits) = (0u64, 0u64);
        for e in seen.0.iter().filter(|e| new_fill(e)) {
            let had = !held.insert(e.line);
            let latency = e.effect_at.unwrap_or(0) - e.time.unwrap_or(0);
            prop_assert_eq!(latency, if had { L2_HIT } else { MISS }, "fill of line {} at {:?}", e.line, e.time);
            fills += 1;
            hits += had as u64;
        }
        prop_assert_eq!(l2.totals.requests, fills);
        prop_assert_eq!(l2.totals.reads, fills);
        prop_assert_eq!(l2.totals.hits, hits);
        prop_assert_eq!(report.timing.as_ref().map(|t| t.fills), Some(fills));
    }
}

/// Two CTAs of one warp on two SMs: CTA 0 (SM 0) stores `stored` bytes of line 0x1000 (4
/// bytes a thread), CTA 1 (SM 1) loads the whole line in the same step.
fn store_then_load(stored: u64) -> (Kernel, SimConfig) {
    let mut rows: Vec<Row> = Vec::new();
    for t in 0..32u32 {
        if (t as u64) * 4 < stored {
            rows.push((t, 0, 0, 0x1000 + 4 * t as u64, 4, 1));
        }
        rows.push((32 + t, 1, 0, 0x1000 + 4 * t as u64, 4, 0));
    }
    let k = kernel("k", 2, 32, false, &rows);
    let mut cfg = with_l2(SimConfig::default(), 2, 8);
    cfg.cache.line_bytes = 128;
    cfg.cache.sector_bytes = 128;
    (k, cfg)
}

/// [`store_then_load`]'s run: the latency of CTA 1's fill, and the L2's requests, reads and
/// writes.
fn store_then_load_run(stored: u64) -> (u64, (u64, u64, u64)) {
    let (k, cfg) = store_then_load(stored);
    let mut seen = Requests::default();
    let report = sim::run_kernels(&cfg, std::slice::from_ref(&k), &mut seen).unwrap();
    let fill: Vec<_> = seen.0.iter().filter(|e| new_fill(e)).collect();
    assert_eq!(fill.len(), 1);
    assert_eq!((fill[0].sm, fill[0].time), (1, Some(0)));
    let l2 = report.l2.unwrap().totals;
    (
        fill[0].effect_at.unwrap() - fill[0].time.unwrap(),
        (l2.requests, l2.reads, l2.writes),
    )
}

#[test]
fn a_store_on_one_sm_feeds_a_load_on_another_through_the_l2() {
    // SM 0 takes its turn first: its store of the whole line reaches the L2 before SM 1's
    // load, which then finds every sector there.
    assert_eq!(store_then_load_run(128), (L2_HIT, (2, 1, 1)));
    // Half the line: the other sectors come from DRAM, and the fill takes the miss latency.
    assert_eq!(store_then_load_run(64), (MISS, (2, 1, 1)));
    // No store: the L2 has never seen the line.
    assert_eq!(store_then_load_run(0), (MISS, (1, 1, 0)));
}

#[test]
fn explain_says_a_store_brought_the_line_into_the_l2_where_the_timing_models_l1_passed_it_on() {
    // The load is the only L1 request (request 0): SM 0's store, no L1 request in the
    // timing model, brought the line into its slice.
    let (k, cfg) = store_then_load(128);
    let e = explain::explain(&cfg, std::slice::from_ref(&k), 0, &mut |_, _| true).unwrap();
    let l2 = e.l2.clone().expect("the L2's part");
    assert!(l2.hit);
    assert_eq!(l2.brought_in_by, None);
    assert_eq!(l2.brought_in_as, Some(L2Cause::Store));
    let story = e.story.join(" ");
    assert!(
        story.contains("where it hit: a store of a warp (no L1 request"),
        "{story}"
    );
    // Two loads of the line on two SMs: the second hits in the L2, brought in by the first
    // (request 0, on SM 0), at the L2's latency.
    let rows: Vec<Row> = (0..64u32)
        .map(|t| (t, 0, 0, 0x1000 + 4 * (t % 32) as u64, 4, 0))
        .collect();
    let k = kernel("k", 2, 32, false, &rows);
    let e = explain::explain(&cfg, std::slice::from_ref(&k), 1, &mut |_, _| true).unwrap();
    let l2 =
        e.l2.clone()
            .unwrap_or_else(|| panic!("the L2's part: {:?}", e.story));
    assert!(l2.hit);
    let by = l2.brought_in_by.expect("a request brought it in");
    assert_eq!((by.request, by.sm, by.cta), (0, 0, 0));
    assert_eq!(l2.brought_in_as, Some(L2Cause::Fetch));
}

#[test]
fn the_l2_takes_every_fill_and_store_of_the_timing_model_and_shortens_its_run() {
    let k = warpscope::gen::generate("matmul-tiled", &[("n".into(), "64".into())])
        .unwrap()
        .kernels;
    let mut cfg = warpscope::config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = SmSelection::All;
    cfg.timing = Some(TimingConfig::default());
    let with = sim::run_kernels(&cfg, &k, &mut sim::NoObserver).unwrap();
    let l2 = with.l2.as_ref().expect("an L2 report");
    let t = with.timing.as_ref().unwrap();
    assert_eq!(l2.totals.reads, t.fills);
    assert_eq!(l2.totals.writes, with.totals.writes);
    assert_eq!(l2.totals.requests, t.fills + with.totals.writes);
    assert!(l2.totals.hits > 0);
    // Without the L2 every fill takes the miss latency: the same requests take longer.
    cfg.l2 = None;
    let without = sim::run_kernels(&cfg, &k, &mut sim::NoObserver).unwrap();
    assert!(without.l2.is_none());
    assert_eq!(without.totals.requests, with.totals.requests);
    let steps = |r: &sim::Report| r.timing.as_ref().unwrap().time_steps;
    assert!(
        steps(&with) < steps(&without),
        "{} vs {}",
        steps(&with),
        steps(&without)
    );
}
