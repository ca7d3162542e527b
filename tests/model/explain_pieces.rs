//! An explanation and a step-through's state worked out a piece of a run at a time (as the
//! web build does between frames) are the ones the whole runs give, on every kind of
//! request: hits, the three Cs, stores that do not allocate, bypassed requests, the timing
//! model's latency and MSHR misses, and requests that went on to a simulated L2.

use warpscope::config::{preset, L2Config, SimConfig, SmSelection, WritePolicy};
use warpscope::explain::step::{snapshot, Stepping};
use warpscope::explain::{explain, Explaining, Why};
use warpscope::trace::Kernel;

fn generated(name: &str, pairs: &[(&str, &str)]) -> Vec<Kernel> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    warpscope::gen::generate(name, &pairs).unwrap().kernels
}

fn configs() -> Vec<(&'static str, SimConfig)> {
    let fermi = preset("fermi-16k").unwrap();
    let mut small = fermi.clone();
    small.cache.size_bytes = 2048;
    small.cache.ways = 2;
    let mut no_allocate = small.clone();
    no_allocate.cache.write_policy = WritePolicy::Wtna;
    let mut bypass = fermi.clone();
    bypass.cache.bypass = true;
    let mut l2 = small.clone();
    l2.gpu.sms = 4;
    l2.gpu.simulate = SmSelection::All;
    l2.l2 = Some(L2Config::default());
    let mut timed = preset("gtx470-16k").unwrap();
    timed.cache.size_bytes = 2048;
    timed.cache.ways = 2;
    if let Some(t) = &mut timed.timing {
        t.mshrs = 4;
    }
    vec![
        ("fermi", fermi),
        ("small", small),
        ("no-allocate", no_allocate),
        ("bypass", bypass),
        ("l2", l2),
        ("timed", timed),
    ]
}

/// Runs `step` to its result, counting the pieces.
fn pieces<T, E: std::fmt::Debug>(mut step: impl FnMut() -> Result<Option<T>, E>) -> (T, u32) {
    let mut n = 0;
    loop {
        n += 1;
        if let Some(t) = step().unwrap() {
            return (t, n);
        }
    }
}

#[test]
fn an_explanation_in_pieces_is_the_whole_runs_on_every_kind_of_request() {
    let traces = [
        ("matmul", generated("matmul", &[("n", "32")])),
        ("spmv", generated("spmv", &[])),
    ];
    let mut whys = std::collections::BTreeSet::new();
    for (name, kernels) in &traces {
        for (c, cfg) in configs() {
            let requests =
                warpscope::sim::run_kernels(&cfg, kernels, &mut warpscope::sim::NoObserver)
                    .unwrap()
                    .totals
                    .requests;
            // Twenty requests spread over the run, and the last.
            let mut asked: Vec<u64> = (0..20).map(|i| i * requests / 20).collect();
            asked.push(requests - 1);
            for n in asked {
                let what = format!("{name}, {c}, request {n}");
                let whole = explain(&cfg, kernels, n, &mut |_, _| true).unwrap();
                let mut e = Explaining::new(&cfg, n, true).unwrap();
                let (cut, count) = pieces(|| e.step(kernels, &mut |_, _| true));
                assert_eq!(whole, cut, "{what}");
                assert!(count > 3, "{what}: {count} pieces");
                assert_eq!(e.step(kernels, &mut |_, _| true), Ok(None), "{what}");
                whys.insert(format!("{:?}", whole.why));

                let whole = snapshot(&cfg, kernels, n, &mut |_, _| true).unwrap();
                let mut s = Stepping::new(&cfg, n, true).unwrap();
                let (cut, _) = pieces(|| s.step(kernels, &mut |_, _| true));
                assert_eq!(whole, cut, "{what}: the step-through's state");
            }
        }
    }
    // The runs above met every kind of answer the pieces must agree on.
    for w in [
        Why::Hit,
        Why::Compulsory,
        Why::Capacity,
        Why::Conflict,
        Why::Bypassed,
    ] {
        assert!(whys.contains(&format!("{w:?}")), "no {w:?} among {whys:?}");
    }
    assert!(
        whys.contains("Latency") || whys.contains("Mshr"),
        "no timing-model miss among {whys:?}"
    );
}

#[test]
fn an_explanation_in_pieces_stops_when_cancelled_and_names_a_request_past_the_end() {
    let kernels = generated("matmul", &[("n", "64")]);
    let cfg = preset("fermi-16k").unwrap();
    let last = warpscope::sim::run_kernels(&cfg, &kernels, &mut warpscope::sim::NoObserver)
        .unwrap()
        .totals
        .requests
        - 1;
    let mut e = Explaining::new(&cfg, last, true).unwrap();
    let mut asked = 0;
    let end = loop {
        match e.step(&kernels, &mut |_, _| {
            asked += 1;
            asked < 3
        }) {
            Ok(None) => {}
            other => break other,
        }
    };
    assert_eq!(end, Err(warpscope::explain::ExplainError::Cancelled));
    let mut e = Explaining::new(&cfg, u64::MAX, true).unwrap();
    let end = loop {
        match e.step(&kernels, &mut |_, _| true) {
            Ok(None) => {}
            other => break other,
        }
    };
    assert!(
        matches!(
            end,
            Err(warpscope::explain::ExplainError::NoSuchRequest { .. })
        ),
        "{end:?}"
    );
}
