//! Sampled reuse distances (SHARDS, Waldspurger et al. 2015, with the distances to the most
//! recent lines exact: `reuse::SampledTracker`) against exact ones, on small versions of the
//! benchmark corpus's traces (`tools/make-corpus`): the three `din` mixes and GPU kernels of
//! every kind the corpus has (dense, streaming, irregular, many tiny CTAs).
//!
//! The trackers are the defaults; the traces are made just large enough for their sample to
//! be thinned (more than its 32,768 lines), where the corpus's are tens of times larger
//! (`tools/measure-e2e` checks those through the report).

use warpscope::config::{preset, ReuseMode, SimConfig};
use warpscope::gen::DinMix;
use warpscope::reuse::{Histogram, ReuseTracker, SampledTracker};
use warpscope::sim::{self, Observer, RequestEvent};
use warpscope::trace::Trace;

/// The line and set of every request, in order.
#[derive(Default)]
struct Lines(Vec<(u64, u32)>);

impl Observer for Lines {
    fn on_request(&mut self, e: &RequestEvent) {
        self.0.push((e.line, e.set));
    }
}

fn requests(trace: &Trace, cfg: &SimConfig) -> Vec<(u64, u32)> {
    let mut cfg = cfg.clone();
    cfg.reuse = ReuseMode::Off;
    let mut lines = Lines::default();
    sim::run(&cfg, trace, &mut lines).unwrap();
    lines.0
}

fn din(mix: DinMix, n: u64) -> Trace {
    let mut text = Vec::new();
    mix.write(n, &mut text).unwrap();
    warpscope::trace::din::read(text.as_slice(), "mix.din").unwrap()
}

fn kernel(name: &str, params: &[&str]) -> Trace {
    let pairs =
        warpscope::gen::parse_pairs(&params.iter().map(|p| p.to_string()).collect::<Vec<_>>())
            .unwrap();
    warpscope::gen::generate(name, &pairs).unwrap()
}

/// The miss rates of fully associative LRU caches of 1, 2, 4, ... lines up to the largest
/// distance, and of `lines` (what the report's miss-rate curve holds).
fn curve(h: &Histogram, span: u64, lines: u64) -> Vec<f64> {
    let mut caps: Vec<u64> = std::iter::successors(Some(1u64), |c| Some(c * 2))
        .take_while(|&c| c <= span)
        .collect();
    caps.push(lines);
    caps.iter()
        .map(|&c| h.misses_at(c) as f64 / h.total().max(1) as f64)
        .collect()
}

/// The mean absolute error of the sampled miss-rate curve, and the halves' estimate of it.
fn errors(name: &str, lines: &[(u64, u32)], sets: usize, cache_lines: u64) -> (f64, f64) {
    let mut exact = ReuseTracker::new(sets);
    let mut sampled = SampledTracker::new(sets, cache_lines as usize);
    for &(l, s) in lines {
        exact.access(l, s);
        sampled.access(l, s);
    }
    let (whole, _, halves) = sampled.histograms();
    assert!(
        sampled.scale_bits() >= 1,
        "{name}: the sample should have been thinned (1 line in {})",
        1 << sampled.scale_bits()
    );
    assert_eq!(whole.total(), exact.whole_hist.total(), "{name}");
    let span = exact.whole_hist.span();
    let want = curve(&exact.whole_hist, span, cache_lines);
    let got = curve(&whole, span, cache_lines);
    let mae = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .sum::<f64>()
        / want.len() as f64;
    let (a, b) = (
        curve(&halves[0], span, cache_lines),
        curve(&halves[1], span, cache_lines),
    );
    let expected = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / (2 * a.len()) as f64;
    eprintln!(
        "{name}: {} requests, MAE {mae:.5}, expected {expected:.5}",
        lines.len()
    );
    (mae, expected)
}

#[test]
fn sampled_miss_rate_curves_are_within_a_hundredth_on_every_kind_of_trace() {
    let mut dinero = SimConfig::default();
    dinero.cache.size_bytes = 16 << 10;
    dinero.cache.ways = 4;
    dinero.cache.line_bytes = 128;
    dinero.cache.sector_bytes = 128;
    dinero.cache.write_policy = warpscope::config::WritePolicy::Wbwa;
    // Every CTA on one SM, so that its L1 sees the kernel's whole footprint.
    let mut fermi = preset("fermi-16k").unwrap();
    fermi.gpu.sms = 1;
    let cases: Vec<(String, Trace, &SimConfig)> = vec![
        (
            "din friendly".into(),
            din(DinMix::Friendly, 2_000_000),
            &dinero,
        ),
        (
            "din hostile".into(),
            din(DinMix::Hostile, 1_000_000),
            &dinero,
        ),
        ("din random".into(), din(DinMix::Random, 300_000), &dinero),
        ("vecadd".into(), kernel("vecadd", &["n=2000000"]), &fermi),
        (
            "spmv".into(),
            kernel("spmv", &["rows=65536", "cols=65536", "nnz=16"]),
            &fermi,
        ),
        (
            "bfs".into(),
            kernel("bfs", &["nodes=524288", "degree=8", "frontier=50"]),
            &fermi,
        ),
        (
            "tiny CTAs".into(),
            kernel("vecadd", &["n=2000000", "block=32"]),
            &fermi,
        ),
    ];
    for (name, trace, cfg) in cases {
        let lines = requests(&trace, cfg);
        let (mae, expected) = errors(&name, &lines, cfg.cache.sets() as usize, cfg.cache.lines());
        assert!(mae <= 0.01, "{name}: mean absolute error {mae}");
        // The estimate is of the same order as the error (it is no bound).
        assert!(expected <= 0.02, "{name}: expected error {expected}");
    }
}

/// Through the pipeline: a sampled run gives every count of an exact one (only the reuse
/// histograms differ), and its report says how it measured them.
#[test]
fn a_sampled_run_reports_its_method_and_keeps_every_count_exact() {
    let trace = din(DinMix::Hostile, 400_000);
    let mut cfg = SimConfig::default();
    cfg.cache.write_policy = warpscope::config::WritePolicy::Wbwa;
    cfg.reuse = ReuseMode::Exact;
    let exact = sim::run(&cfg, &trace, &mut sim::NoObserver).unwrap();
    cfg.reuse = ReuseMode::Sampled;
    let sampled = sim::run(&cfg, &trace, &mut sim::NoObserver).unwrap();
    assert_eq!(sampled.totals, exact.totals);
    assert_eq!(sampled.instructions, exact.instructions);
    let (e, s) = (exact.reuse.unwrap(), sampled.reuse.unwrap());
    assert_eq!(e.method, sim::ReuseMethod::Exact);
    assert_eq!(s.method, sim::ReuseMethod::Sampled);
    assert!(s.sampling_rate < 1.0 && s.expected_error > 0.0);
    assert_eq!((e.sampling_rate, e.expected_error), (1.0, 0.0));
    // Below the stack of recent lines (1024 lines), the curve is exact.
    for (a, b) in e.miss_rate_curve.iter().zip(&s.miss_rate_curve) {
        assert_eq!(a.lines, b.lines);
        if a.lines <= 1024 {
            assert!(
                (a.miss_rate - b.miss_rate).abs() < 1e-5,
                "{} lines",
                a.lines
            );
        }
    }
}
