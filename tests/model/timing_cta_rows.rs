//! The timing model's per-CTA rows, checked against what an observer of the full run sees:
//! each CTA's row holds the requests issued for it and their hits, the SM it ran on, and miss
//! classes that add up to its misses; a CTA has a row when it issued a request, and the CTAs
//! of a kernel wrote what its instructions did. Random kernels of loads, stores and barriers, two launches in a row, on one to three
//! simulated SMs, one to three resident CTAs each, under both CTA launch rules and both issue
//! units. The runs keep each CTA's counts only while it is in flight and write them once it
//! and the CTAs launched before it have finished (`timing::CtaResults`), and the report reads
//! them back in CTA order: these tests catch counts given to the wrong CTA, lost or
//! misordered.

use std::collections::BTreeMap;

use proptest::prelude::*;
use warpscope::config::{SmSelection, TimingConfig};
use warpscope::sim::{Observer, RequestEvent};
use warpscope::trace::Trace;

use crate::random_kernels;
use random_kernels::{kernel, rows_strategy, small_config};

/// Per (kernel, CTA): requests and hits seen, and the SMs they came from.
#[derive(Default)]
struct Seen(BTreeMap<(u32, u32), (u64, u64, Vec<u32>)>);

impl Observer for Seen {
    fn on_request(&mut self, e: &RequestEvent) {
        let s = self.0.entry((e.kernel, e.cta)).or_default();
        s.0 += 1;
        s.1 += e.hit as u64;
        if !s.2.contains(&e.sm) {
            s.2.push(e.sm);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn each_ctas_row_holds_the_requests_the_full_run_issued_for_it(
        rows in rows_strategy(),
        rows2 in rows_strategy(),
        ctas in 1u32..12,
        tpb in 1u32..48,
        warp in prop::sample::select(vec![4u32, 8, 32]),
        sms in 1u32..4,
        max_ctas in 1u32..4,
        in_sets in any::<bool>(),
        portions in any::<bool>(),
        mshrs in 0u32..4,
    ) {
        let mut c = small_config(warp, 0, sms, max_ctas, false, 7);
        c.gpu.simulate = SmSelection::All;
        c.gpu.max_threads_per_sm = 4096;
        c.gpu.max_warps_per_sm = 4096;
        let mut t = TimingConfig {
            hit_latency: 0,
            miss_latency: 6,
            l2_latency: 6,
            miss_latency_stddev: 0.0,
            mshrs,
            mshrs_per_warp: 0,
            clip: false,
            warp_delay: true,
            classify: true,
            rules: Default::default(),
        };
        if in_sets {
            t.rules.set("cta-launch", "in-sets").unwrap();
        }
        if portions {
            t.rules.set("issue", "thread-portions").unwrap();
        }
        c.timing = Some(t);
        let trace = Trace {
            kernels: vec![
                kernel("a", ctas, tpb, false, &rows),
                kernel("b", ctas + 1, tpb, true, &rows2),
            ],
        };
        let mut seen = Seen::default();
        let r = warpscope::sim::run(&c, &trace, &mut seen).unwrap();
        let mut with_row = Vec::new();
        let mut writes: BTreeMap<u32, u64> = BTreeMap::new();
        for row in r.ctas.iter() {
            let k = &trace.kernels[row.kernel as usize];
            let id = k.grid.linear(row.cta) as u32;
            with_row.push((row.kernel, id));
            let (requests, hits, on) = seen.0.get(&(row.kernel, id)).cloned().unwrap_or_default();
            let n = &row.counters;
            prop_assert_eq!(n.requests, requests, "kernel {} CTA {}", row.kernel, id);
            prop_assert_eq!(n.hits, hits, "kernel {} CTA {}", row.kernel, id);
            prop_assert_eq!(n.hits + n.misses, n.requests);
            prop_assert_eq!(n.miss_classes.total(), n.misses, "kernel {} CTA {}", row.kernel, id);
            prop_assert_eq!(row.sm, Some(id % sms));
            prop_assert!(on.iter().all(|&s| s == id % sms), "CTA {} on SMs {:?}", id, on);
            *writes.entry(row.kernel).or_insert(0) += n.writes;
        }
        // Every CTA that issued a request has a row.
        for (&(kernel, cta), &(requests, _, _)) in &seen.0 {
            prop_assert!(requests == 0 || with_row.contains(&(kernel, cta)), "no row for CTA {} of kernel {}", cta, kernel);
        }
        // Stores bypass the L1: each kernel's CTAs wrote what its instructions did.
        for (ki, _) in trace.kernels.iter().enumerate() {
            let by_inst: u64 = r.instructions.iter().filter(|i| i.kernel == ki as u32).map(|i| i.counters.writes).sum();
            prop_assert_eq!(writes.get(&(ki as u32)).copied().unwrap_or(0), by_inst);
        }
        // Rows come in kernel and CTA order, once each.
        prop_assert!(with_row.windows(2).all(|w| w[0] < w[1]));
    }
}
