//! A kernel read CTA by CTA (`Session::begin_kernel`, `cta`, `end_kernel`) is simulated
//! exactly as the whole kernel is: same report, same requests in the same order, under every
//! issue policy, warp size, residency limit, SM selection and thread limit, with barriers,
//! empty CTAs that are never given, and several kernels in a row.

use proptest::prelude::*;
use warpscope::config::{IssuePolicy, SimConfig, SmSelection};
use warpscope::sim::{Observer, RequestEvent, Session};
use warpscope::trace::{Columns, Dim3, Kernel, KernelBuilder, Order};

mod random_kernels;
use random_kernels::{kernel, rows_strategy, small_config};

#[derive(Default)]
struct Events(Vec<RequestEvent>, Vec<(u32, String)>);
impl Observer for Events {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.1.push((kernel, header.name.clone()));
    }
    fn on_request(&mut self, e: &RequestEvent) {
        self.0.push(*e);
    }
}

/// Gives `k` to the session CTA by CTA, leaving out empty CTAs where `skip` says.
fn by_cta(s: &mut Session, k: &Kernel, skip: &[bool], obs: &mut dyn Observer) {
    s.begin_kernel(&k.header(), obs).unwrap();
    let mut rows = Columns::default();
    for c in 0..k.num_ctas() {
        let r = k.cta_rows(c);
        if r.is_empty() && skip[c as usize % skip.len()] {
            continue;
        }
        rows.clear();
        rows.extend_from(k.columns(), r);
        s.cta(c, &rows, obs).unwrap();
    }
    s.end_kernel(obs).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn a_kernel_read_cta_by_cta_is_simulated_as_the_whole_kernel(
        a in rows_strategy(),
        b in rows_strategy(),
        ctas in 1u32..9,
        tpb in 1u32..50,
        warp_order in any::<bool>(),
        warp_size in prop_oneof![Just(1u32), Just(4), Just(8), Just(32)],
        policy in 0usize..5,
        sms in 1u32..4,
        max_ctas in 1u32..4,
        all in any::<bool>(),
        limit in prop_oneof![3 => Just(0u32), 1 => 1u32..200],
        reuse in any::<bool>(),
        skip in prop::collection::vec(any::<bool>(), 1..4),
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config(warp_size, policy, sms, max_ctas, reuse, seed);
        cfg.gpu.simulate = if all { SmSelection::All } else { SmSelection::One(sms - 1) };
        cfg.gpu.thread_limit = limit;
        let kernels = [
            kernel("a", ctas, tpb, warp_order, &a),
            kernel("b", ctas.div_ceil(2), tpb, !warp_order, &b),
        ];

        let mut want_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        for k in &kernels {
            s.kernel(k, &mut want_events).unwrap();
        }
        let want = s.finish(&mut want_events);

        let mut got_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        for k in &kernels {
            by_cta(&mut s, k, &skip, &mut got_events);
        }
        let got = s.finish(&mut got_events);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&got_events.1, &want_events.1);
        prop_assert_eq!(got_events.0.len(), want_events.0.len());
        prop_assert_eq!(&got_events.0, &want_events.0);
    }
}

/// CTAs out of order, or rows of another CTA's threads, are errors that name the CTA; an
/// issued-order kernel cannot be given CTA by CTA.
#[test]
fn rows_that_do_not_belong_are_refused() {
    let cfg = SimConfig::default();
    let k = kernel(
        "k",
        4,
        8,
        false,
        &[
            (0, 0, 0, 0, 4, 0),
            (9, 0, 0, 64, 4, 0),
            (17, 0, 0, 128, 4, 0),
        ],
    );
    let mut s = Session::new(&cfg, 0).unwrap();
    s.begin_kernel(&k.header(), &mut Events::default()).unwrap();
    let mut rows = Columns::default();
    rows.extend_from(k.columns(), k.cta_rows(1));
    let e = s.cta(0, &rows, &mut Events::default()).unwrap_err();
    let e = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(
        e.contains("CTA 0: thread 9 is not one of its threads (0 to 7)"),
        "{e}"
    );
    s.cta(1, &rows, &mut Events::default()).unwrap();
    let e = s.cta(1, &rows, &mut Events::default()).unwrap_err();
    let e = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(
        e.contains("CTA 1: expected a CTA from 2 to 3 in order"),
        "{e}"
    );
    let issued = KernelBuilder::new("i", Dim3::x(2), Dim3::x(2), Order::Issued)
        .unwrap()
        .finish();
    // An issued-order kernel takes its rows in issue order, not CTA by CTA.
    s.begin_kernel(&issued, &mut Events::default()).unwrap();
    let e = s.cta(0, &rows, &mut Events::default()).unwrap_err();
    assert!(e.to_string().contains("before its kernel began"), "{e}");
}

/// Every built-in kernel simulated while it is generated, CTA by CTA, gives the result and
/// the requests of the whole generated trace, on one SM and on fifteen under GTO.
#[test]
fn every_builtin_kernel_simulated_as_it_is_generated_gives_the_whole_trace_result() {
    let mut many = SimConfig::default();
    many.gpu.sms = 15;
    many.gpu.simulate = SmSelection::All;
    many.schedule.policy = IssuePolicy::Gto;
    many.cache.write_policy = warpscope::config::WritePolicy::Wbwa;
    for cfg in [SimConfig::default(), many] {
        for k in warpscope::gen::KERNELS {
            let trace = warpscope::gen::generate(k.name, &[]).unwrap();
            let mut want_events = Events::default();
            let want = warpscope::sim::run(&cfg, &trace, &mut want_events).unwrap();
            let mut got_events = Events::default();
            let got =
                warpscope::sim::run_generated(&cfg, k.name, &[], None, &mut got_events).unwrap();
            assert_eq!(got, want, "{}", k.name);
            assert_eq!(got_events.1, want_events.1, "{}", k.name);
            assert!(got_events.0 == want_events.0, "{}: requests differ", k.name);
        }
    }
    // An error of the simulation stops the generator and is the one a whole run gives.
    let mut small = SimConfig::default();
    small.gpu.max_threads_per_sm = 64;
    let trace = warpscope::gen::generate("matmul", &[]).unwrap();
    let want = warpscope::sim::run(&small, &trace, &mut Events::default()).unwrap_err();
    let got = warpscope::sim::run_generated(&small, "matmul", &[], None, &mut Events::default())
        .unwrap_err();
    assert_eq!(
        format!("{got}: {}", std::error::Error::source(&got).unwrap()),
        format!("{want}: {}", std::error::Error::source(&want).unwrap())
    );
}
