//! A kernel read CTA by CTA (`Session::begin_kernel`, `cta`, `end_kernel`) is simulated
//! exactly as the whole kernel is: same report, same requests in the same order, under every
//! issue policy, warp size, residency limit, SM selection and thread limit, with barriers,
//! empty CTAs that are never given, and several kernels in a row.

use proptest::prelude::*;
use std::sync::Arc;
use warpscope::config::{IssuePolicy, SimConfig, SmSelection};
use warpscope::sim::{Observer, RequestEvent, Session};
use warpscope::trace::{Columns, Dim3, Kernel, KernelBuilder, Order};

use crate::random_kernels;
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

/// Gives `k` to the session CTA by CTA as `shell::lanes` does: rows shared
/// (`Session::cta_shared`), the session keeping the rows of finished CTAs for reuse, and each
/// later CTA's rows written into the memory of one released; returns how many were reused.
fn by_cta_recycled(s: &mut Session, k: &Kernel, obs: &mut dyn Observer) -> usize {
    s.recycle_cta_rows();
    s.begin_kernel(&k.header(), obs).unwrap();
    let (mut spare, mut reused) = (Vec::new(), 0);
    for c in 0..k.num_ctas() {
        let mut rows = match spare.pop() {
            Some(rows) => {
                reused += 1;
                rows
            }
            None => Columns::default(),
        };
        rows.clear();
        rows.extend_from(k.columns(), k.cta_rows(c));
        s.cta_shared(c, Arc::new(rows), obs).unwrap();
        s.release_rows(&mut |rows| spare.extend(Arc::into_inner(rows)));
    }
    s.end_kernel(obs).unwrap();
    reused
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

        // Shared, the rows of finished CTAs written over for later ones.
        let mut got_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        for k in &kernels {
            by_cta_recycled(&mut s, k, &mut got_events);
        }
        prop_assert_eq!(&s.finish(&mut got_events), &want);
        prop_assert_eq!(&got_events.0, &want_events.0);
    }
}

#[test]
fn the_rows_of_finished_ctas_given_shared_come_back_for_reuse() {
    // Eight CTAs of 64 threads on one SM that holds one at a time.
    let mut cfg = small_config(32, 0, 1, 1, false, 1);
    cfg.gpu.simulate = SmSelection::One(0);
    let rows: Vec<_> = (0..8 * 64u32)
        .map(|t| (t, 0u32, 0u32, u64::from(t) * 4, 4u16, 0u8))
        .collect();
    let k = kernel("k", 8, 64, false, &rows);
    let mut s = Session::new(&cfg, 0).unwrap();
    let mut none = Events::default();
    // Each CTA after the first two (one resident, one offered) is written into the memory
    // of one that finished.
    assert_eq!(by_cta_recycled(&mut s, &k, &mut none), 6);
    // Without asking, nothing is kept for the caller.
    let mut s = Session::new(&cfg, 0).unwrap();
    s.begin_kernel(&k.header(), &mut none).unwrap();
    let mut kept = 0;
    for c in 0..8 {
        let mut rows = Columns::default();
        rows.extend_from(k.columns(), k.cta_rows(c));
        s.cta_shared(c, Arc::new(rows), &mut none).unwrap();
        s.release_rows(&mut |_| kept += 1);
    }
    s.end_kernel(&mut none).unwrap();
    assert_eq!(kept, 0);
}

/// Gives CTAs `ctas` of `k` to `s`.
fn give(s: &mut Session, k: &Kernel, ctas: std::ops::Range<u32>, obs: &mut dyn Observer) {
    let mut rows = Columns::default();
    for c in ctas {
        rows.clear();
        rows.extend_from(k.columns(), k.cta_rows(c));
        s.cta(c, &rows, obs).unwrap();
    }
}

/// Gives a copy of a session the rows of `k`'s CTAs it wants.
fn give_back(copy: &mut Session, k: &Kernel) {
    for c in copy.wanted_ctas().to_vec() {
        let mut rows = Columns::default();
        rows.extend_from(k.columns(), k.cta_rows(c));
        copy.give_cta_rows(c, rows).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// A copy of a session taken between two CTAs, given back the rows of its resident CTAs,
    /// goes on exactly as the session it copied: the same later requests, the same report,
    /// across the kernel's end and into another kernel.
    #[test]
    fn a_copy_without_rows_goes_on_as_the_session_it_copied(
        a in rows_strategy(),
        ctas in 1u32..9,
        tpb in 1u32..50,
        warp_order in any::<bool>(),
        warp_size in prop_oneof![Just(1u32), Just(4), Just(8), Just(32)],
        policy in 0usize..5,
        sms in 1u32..4,
        max_ctas in 1u32..4,
        reuse in any::<bool>(),
        cut in 0u32..9,
        l2 in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config(warp_size, policy, sms, max_ctas, reuse, seed);
        cfg.gpu.simulate = SmSelection::All;
        // A shared L2 of 2 KB slices goes on from the copy too.
        cfg.l2 = l2.then(|| warpscope::config::L2Config {
            slice: warpscope::config::slice_cache(4, 4, warpscope::config::SetIndex::Ipoly),
            ..Default::default()
        });
        let k = kernel("a", ctas, tpb, warp_order, &a);
        let k2 = kernel("b", ctas, tpb, !warp_order, &a);
        let cut = cut % ctas;

        let mut want_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        s.begin_kernel(&k.header(), &mut want_events).unwrap();
        give(&mut s, &k, 0..cut + 1, &mut want_events);
        let mut copy = s.snapshot().expect("a copy between CTAs");
        let at = want_events.0.len();
        give(&mut s, &k, cut + 1..ctas, &mut want_events);
        s.end_kernel(&mut want_events).unwrap();
        by_cta(&mut s, &k2, &[false], &mut want_events);
        let want = s.finish(&mut want_events);

        give_back(&mut copy, &k);
        prop_assert!(copy.wanted_ctas().is_empty());
        let mut got_events = Events::default();
        give(&mut copy, &k, cut + 1..ctas, &mut got_events);
        copy.end_kernel(&mut got_events).unwrap();
        by_cta(&mut copy, &k2, &[false], &mut got_events);
        let got = copy.finish(&mut got_events);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&got_events.0[..], &want_events.0[at..]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Kernels given a few warp instructions at a time (`cta_shared_for`, `go_on`) give the
    /// whole kernel's result, and a copy taken between any two steps, given back its CTAs'
    /// rows, goes on as the session it copied.
    #[test]
    fn a_copy_between_steps_within_a_cta_goes_on_as_the_session_it_copied(
        a in rows_strategy(),
        ctas in 1u32..9,
        tpb in 1u32..50,
        warp_size in prop_oneof![Just(1u32), Just(4), Just(32)],
        policy in 0usize..5,
        sms in 1u32..4,
        max_ctas in 1u32..4,
        step in 1u64..5,
        copy_at in 0usize..40,
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config(warp_size, policy, sms, max_ctas, true, seed);
        cfg.gpu.simulate = SmSelection::All;
        let k = kernel("a", ctas, tpb, false, &a);

        let mut want_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        s.kernel(&k, &mut want_events).unwrap();
        let want = s.finish(&mut want_events);

        let mut got_events = Events::default();
        let mut s = Session::new(&cfg, 0).unwrap();
        s.begin_kernel(&k.header(), &mut got_events).unwrap();
        let mut steps = 0usize;
        let mut copy = None;
        for c in 0..ctas {
            let mut rows = Columns::default();
            rows.extend_from(k.columns(), k.cta_rows(c));
            let mut more = s
                .cta_shared_for(c, std::sync::Arc::new(rows), step, &mut got_events)
                .unwrap();
            loop {
                if steps == copy_at {
                    copy = Some((s.snapshot().unwrap(), c + 1, got_events.0.len()));
                }
                steps += 1;
                if !more {
                    break;
                }
                more = s.go_on(step, &mut got_events).unwrap();
            }
        }
        s.end_kernel(&mut got_events).unwrap();
        let got = s.finish(&mut got_events);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&got_events.0, &want_events.0);

        if let Some((mut copy, next, at)) = copy {
            give_back(&mut copy, &k);
            let mut copy_events = Events::default();
            // Whatever the copy had not issued yet comes first, then the CTAs after it.
            prop_assert!(!copy.go_on(u64::MAX, &mut copy_events).unwrap());
            give(&mut copy, &k, next..ctas, &mut copy_events);
            copy.end_kernel(&mut copy_events).unwrap();
            prop_assert_eq!(&copy.finish(&mut copy_events), &want);
            prop_assert_eq!(&copy_events.0[..], &want_events.0[at..]);
        }
    }
}

/// A copy refuses to go on before it has the rows it wants, and refuses rows that are not
/// the ones it had (the trace changed since the copy was taken).
#[test]
fn a_copy_short_of_rows_or_given_other_rows_refuses_to_go_on() {
    let mut cfg = SimConfig::default();
    cfg.gpu.sms = 2;
    cfg.gpu.simulate = SmSelection::All;
    let rows: Vec<_> = (0..8u32)
        .flat_map(|t| (0..3u32).map(move |i| (t, i, 0, (t * 3 + i) as u64 * 128, 4, 0)))
        .collect();
    let k = kernel("k", 4, 2, false, &rows);
    let mut s = Session::new(&cfg, 0).unwrap();
    s.begin_kernel(&k.header(), &mut Events::default()).unwrap();
    let mut cols = Columns::default();
    cols.extend_from(k.columns(), k.cta_rows(0));
    s.cta(0, &cols, &mut Events::default()).unwrap();
    let mut copy = s.snapshot().unwrap();
    assert_eq!(copy.wanted_ctas(), &[0]);
    cols.clear();
    cols.extend_from(k.columns(), k.cta_rows(1));
    let e = copy.cta(1, &cols, &mut Events::default()).unwrap_err();
    assert!(
        e.to_string().contains("still wants the rows of CTA 0"),
        "{e}"
    );
    assert!(copy.end_kernel(&mut Events::default()).is_err());
    // CTA 1's rows are not wanted; CTA 0's cut short are not the rows it had.
    let e = copy.give_cta_rows(1, cols.clone()).unwrap_err();
    assert!(e.to_string().contains("not wanted"), "{e}");
    let mut short = Columns::default();
    let r = k.cta_rows(0);
    short.extend_from(k.columns(), r.start..r.end - 1);
    let e = copy.give_cta_rows(0, short.clone()).unwrap_err();
    let e = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(e.contains("the trace changed"), "{e}");
    short.clear();
    short.extend_from(k.columns(), k.cta_rows(0));
    copy.give_cta_rows(0, short.clone()).unwrap();
    copy.cta(1, &cols, &mut Events::default()).unwrap();
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
        for k in warpscope::gen::BUILTINS {
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
