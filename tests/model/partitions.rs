//! A run split over parts of the SMs (`sim::partition_sms`, `Session::for_sms`), each part
//! simulated on its own and the reports combined (`Report::merge`), gives exactly the report
//! of one session that simulates every selected SM: the shells rely on this to spread SMs
//! over cores.

use proptest::prelude::*;
use warpscope::config::{IssuePolicy, SimConfig, SmSelection, WritePolicy};
use warpscope::sim::{self, NoObserver, Report, Session};
use warpscope::trace::Kernel;

use crate::random_kernels;
use random_kernels::{kernel, rows_strategy, small_config};

/// Simulates `kernels` in session `s` and reports.
fn simulate(mut s: Session, kernels: &[Kernel]) -> Report {
    for k in kernels {
        s.kernel(k, &mut NoObserver).unwrap();
    }
    s.finish(&mut NoObserver)
}

fn whole(cfg: &SimConfig, kernels: &[Kernel]) -> Report {
    simulate(Session::new(cfg, 0).unwrap(), kernels)
}

/// The report of SMs `sms` only.
fn part(cfg: &SimConfig, sms: &[u32], kernels: &[Kernel]) -> Report {
    simulate(Session::for_sms(cfg, sms, 0).unwrap(), kernels)
}

fn in_parts(cfg: &SimConfig, kernels: &[Kernel], parts: usize) -> Report {
    let reports = sim::partition_sms(cfg, parts)
        .iter()
        .map(|sms| part(cfg, sms, kernels))
        .collect();
    Report::merge(reports).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn a_run_split_over_parts_of_the_sms_gives_the_whole_runs_report(
        a in rows_strategy(),
        b in rows_strategy(),
        ctas in 1u32..12,
        tpb in 1u32..50,
        warp_order in any::<bool>(),
        warp_size in prop_oneof![Just(1u32), Just(4), Just(32)],
        policy in 0usize..5,
        sms in 1u32..7,
        max_ctas in 1u32..4,
        sample in any::<bool>(),
        reuse in any::<bool>(),
        write_back in any::<bool>(),
        parts in 1usize..6,
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config(warp_size, policy, sms, max_ctas, reuse, seed);
        cfg.gpu.simulate = if sample { SmSelection::Sample(sms.div_ceil(2)) } else { SmSelection::All };
        cfg.cache.write_policy = if write_back { WritePolicy::Wbwa } else { WritePolicy::default() };
        let kernels = [
            kernel("a", ctas, tpb, warp_order, &a),
            kernel("b", ctas.div_ceil(2), tpb, !warp_order, &b),
            kernel("a", ctas, tpb, !warp_order, &b),
        ];
        let want = whole(&cfg, &kernels);
        let got = in_parts(&cfg, &kernels, parts);
        prop_assert_eq!(&got, &want);
        // The JSON a user sees, too.
        prop_assert_eq!(serde_json::to_string(&got).unwrap(), serde_json::to_string(&want).unwrap());
    }
}

/// Every built-in kernel on fifteen SMs, split in two and in four.
#[test]
fn every_builtin_kernel_split_over_sms_gives_the_whole_result() {
    let mut cfg = SimConfig::default();
    cfg.gpu.sms = 15;
    cfg.gpu.simulate = SmSelection::All;
    cfg.schedule.policy = IssuePolicy::Gto;
    for k in warpscope::gen::BUILTINS {
        let trace = warpscope::gen::generate(k.name, &[]).unwrap();
        let want = sim::run(&cfg, &trace, &mut NoObserver).unwrap();
        for parts in [2, 4] {
            let got = in_parts(&cfg, &trace.kernels, parts);
            assert_eq!(got, want, "{} in {parts} parts", k.name);
        }
    }
}

/// Parts that overlap, of another configuration or of another trace do not combine; nor
/// can a session simulate an SM its configuration does not select.
#[test]
fn parts_that_do_not_belong_together_are_refused() {
    let mut cfg = SimConfig::default();
    cfg.gpu.sms = 4;
    cfg.gpu.simulate = SmSelection::All;
    let trace = warpscope::gen::generate("matmul", &[("n".into(), "16".into())]).unwrap();
    let k = &trace.kernels;
    let e = Report::merge(vec![part(&cfg, &[0, 1], k), part(&cfg, &[1, 2], k)]).unwrap_err();
    assert_eq!(e, "SM 1 was simulated in two parts");
    let mut other = cfg.clone();
    other.cache.ways = 8;
    let e = Report::merge(vec![part(&cfg, &[0], k), part(&other, &[1], k)]).unwrap_err();
    assert!(e.contains("different configurations"), "{e}");
    let e = Report::merge(vec![part(&cfg, &[0], k), part(&cfg, &[1], &[])]).unwrap_err();
    assert!(e.contains("different traces"), "{e}");
    assert!(Report::merge(vec![]).is_err());
    cfg.gpu.simulate = SmSelection::One(2);
    assert!(Session::for_sms(&cfg, &[1], 0).is_err());
    assert_eq!(sim::partition_sms(&cfg, 4), vec![vec![2]]);
}
