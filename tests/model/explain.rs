//! "Why did this request miss?" on hand-computed cases: an eviction chain in a 4-way LRU set,
//! FIFO's and PLRU's reasons, a capacity miss, a sector miss, a store that does not allocate,
//! and the timing model's latency miss (Nugteren et al. 2014, table 3).

use warpscope::config::{
    CacheConfig, Coalescing, Replacement, SimConfig, TimingConfig, WritePolicy,
};
use warpscope::explain::{explain, ExplainError, Explanation, Why};
use warpscope::trace::{text, Kernel};

/// One thread's accesses, in order: (kind, byte address).
fn thread(accesses: &[(&str, u64)]) -> Vec<Kernel> {
    let mut s = String::from("kernel chain grid=1 block=1\n");
    for (i, (kind, addr)) in accesses.iter().enumerate() {
        s += &format!("0 0 i{i} 0 {kind} {addr} 4\n");
    }
    text::read(s.as_bytes(), "chain.wst").unwrap().kernels
}

/// 128-byte lines, `lines` lines of `ways` ways (0: fully associative), one thread per warp.
fn cfg(lines: u64, ways: u32, replacement: Replacement) -> SimConfig {
    let mut c = SimConfig {
        cache: CacheConfig {
            size_bytes: 128 * lines,
            line_bytes: 128,
            ways,
            sector_bytes: 128,
            replacement,
            ..CacheConfig::default()
        },
        coalescing: Coalescing::Line,
        ..SimConfig::default()
    };
    c.schedule.warp_size = 1;
    c
}

fn why(cfg: &SimConfig, k: &[Kernel], n: u64) -> Explanation {
    explain(cfg, k, n, &mut |_, _| true).unwrap()
}

const A: u64 = 0x000; // line 0, set 0
const B: u64 = 0x100; // line 2, set 0
const C: u64 = 0x200; // line 4, set 0
const F: u64 = 0x080; // line 1, set 1
const D: u64 = 0x300; // line 6, set 0
const E: u64 = 0x400; // line 8, set 0

#[test]
fn an_eviction_chain_in_a_four_way_lru_set() {
    // Two sets of 4 ways. A B C F D E A B: E evicts A, then A evicts B.
    let k = thread(&[
        ("ld", A),
        ("ld", B),
        ("ld", C),
        ("ld", F),
        ("ld", D),
        ("ld", E),
        ("ld", A),
        ("ld", B),
    ]);
    let c = cfg(8, 4, Replacement::Lru);
    let a = why(&c, &k, 6);
    assert_eq!(a.why, Why::Conflict);
    assert_eq!(a.request.line, 0);
    assert_eq!(a.previous.as_ref().map(|p| p.request), Some(0));
    let r = a.reuse.unwrap();
    // B C D E in its set; B C F D E in the cache (8 lines): a fully associative cache hits.
    assert_eq!((r.set_lines, r.lines), (4, 5));
    let ev = a.eviction.as_ref().unwrap();
    assert_eq!(ev.by.request, 5);
    assert_eq!(ev.by.line, 8);
    let lines: Vec<u64> = ev.residents.iter().map(|r| r.line).collect();
    let last: Vec<u64> = ev.residents.iter().map(|r| r.last_use).collect();
    assert_eq!((lines, last), (vec![0, 2, 4, 6], vec![0, 1, 2, 4]));
    assert!(
        ev.reason.contains("last used by request 0")
            && ev
                .reason
                .contains("used after it (last by requests 1, 2, 4)"),
        "{}",
        ev.reason
    );
    assert_eq!(a.counterfactuals.len(), 1);
    assert_eq!(a.counterfactuals[0].change, "8 ways (2 KB)");
    assert_eq!(a.counterfactuals[0].hit, Some(true));
    assert_eq!(
        a.asked.set_index,
        "line 0x0 = address >> 7; set = line mod 2 = address bits 7-7 = 0b0 = 0"
    );
    assert!(
        a.story.iter().any(|p| p
            .starts_with("It was evicted by request 5 (load, instruction i5, warp 0 of CTA 0)")),
        "{:#?}",
        a.story
    );

    // The next link: A, brought back by request 6, evicted B.
    let b = why(&c, &k, 7);
    assert_eq!(b.why, Why::Conflict);
    assert_eq!(b.previous.as_ref().map(|p| p.request), Some(1));
    let ev = b.eviction.as_ref().unwrap();
    assert_eq!(ev.by.request, 6);
    let lines: Vec<u64> = ev.residents.iter().map(|r| r.line).collect();
    let last: Vec<u64> = ev.residents.iter().map(|r| r.last_use).collect();
    assert_eq!((lines, last), (vec![2, 4, 6, 8], vec![1, 2, 4, 5]));
    assert_eq!(b.reuse.map(|r| (r.set_lines, r.lines)), Some((4, 5)));

    // E itself is a first touch.
    let e = why(&c, &k, 5);
    assert_eq!(e.why, Why::Compulsory);
    assert!(e.previous.is_none() && e.eviction.is_none() && e.counterfactuals.is_empty());
    assert!(e.story[1].starts_with("First touch"));
    // F hits nothing of set 0.
    let f = why(&c, &k, 3);
    assert_eq!((f.request.set, f.why), (1, Why::Compulsory));
}

#[test]
fn fifo_gives_up_the_line_in_first_even_if_just_used() {
    // A B C D A(hit) E A: FIFO evicts A (in first) although LRU would evict B.
    let k = thread(&[
        ("ld", A),
        ("ld", B),
        ("ld", C),
        ("ld", D),
        ("ld", A),
        ("ld", E),
        ("ld", A),
    ]);
    let c = cfg(8, 4, Replacement::Fifo);
    let hit = why(&c, &k, 4);
    assert_eq!(hit.why, Why::Hit);
    assert_eq!(hit.reuse.map(|r| (r.set_lines, r.lines)), Some((3, 3)));
    let a = why(&c, &k, 6);
    assert_eq!(a.why, Why::Conflict);
    assert_eq!(a.previous.as_ref().map(|p| p.request), Some(4));
    let ev = a.eviction.as_ref().unwrap();
    assert_eq!(ev.by.request, 5);
    assert!(
        ev.reason
            .contains("this line came in with request 0, before the set's other lines (in with requests 1, 2, 3)"),
        "{}",
        ev.reason
    );
    // One other line (E) since its previous use, in the set and in the cache.
    assert_eq!(a.reuse.map(|r| (r.set_lines, r.lines)), Some((1, 1)));

    // Tree-PLRU on the same requests: A's hit (way 0) points the root at the right pair,
    // whose bit D's fill (way 3) pointed at way 2: E takes C's way, where LRU would take B's
    // (least recent: request 1). A hits; C, asked for again, was evicted by E.
    let p = cfg(8, 4, Replacement::Plru);
    assert_eq!(why(&p, &k, 6).why, Why::Hit);
    let k2 = thread(&[
        ("ld", A),
        ("ld", B),
        ("ld", C),
        ("ld", D),
        ("ld", A),
        ("ld", E),
        ("ld", C),
    ]);
    let c = why(&p, &k2, 6);
    let ev = c.eviction.unwrap();
    assert_eq!(ev.by.request, 5);
    assert!(
        ev.reason.ends_with(
            "true LRU would have given up line 0x100 instead (last used by request 1, before this line's request 2)"
        ),
        "{}",
        ev.reason
    );
}

#[test]
fn a_capacity_miss_and_the_counterfactual_that_fixes_it() {
    // A fully associative cache of 4 lines: A B C D E A misses on A for lack of room.
    let k = thread(&[
        ("ld", A),
        ("ld", B),
        ("ld", C),
        ("ld", D),
        ("ld", E),
        ("ld", A),
    ]);
    let c = cfg(4, 0, Replacement::Lru);
    let a = why(&c, &k, 5);
    assert_eq!(a.why, Why::Capacity);
    assert_eq!(a.reuse.map(|r| (r.set_lines, r.lines)), Some((4, 4)));
    assert_eq!(a.eviction.as_ref().map(|e| e.by.request), Some(4));
    assert_eq!(a.counterfactuals[0].change, "8 ways (1 KB)");
    assert_eq!(a.counterfactuals[0].hit, Some(true));
    assert!(a
        .rule
        .starts_with("capacity: a fully associative cache of the same size (4 lines"));
}

#[test]
fn a_sector_miss_and_a_store_that_does_not_allocate() {
    let mut c = cfg(8, 4, Replacement::Lru);
    c.cache.sector_bytes = 32;
    c.coalescing = Coalescing::Sector;
    let k = thread(&[("ld", 0x00), ("ld", 0x20), ("st", 0x100), ("ld", 0x104)]);
    let s = why(&c, &k, 1);
    assert_eq!((s.why, s.sector_miss), (Why::Compulsory, true));
    assert_eq!(s.asked.sectors, vec![1]);
    assert!(s.eviction.is_none());
    assert!(s
        .story
        .iter()
        .any(|p| p.starts_with("The line was still in the cache, but not every sector")));
    // Write-through without write-allocate: the store leaves line 2 out of the cache.
    let l = why(&c, &k, 3);
    assert!(!l.request.hit && l.previous.as_ref().is_some_and(|p| p.write));
    assert!(
        l.story
            .iter()
            .any(|p| p.contains("a store does not bring its line into the cache")),
        "{:#?}",
        l.story
    );
    // More ways cannot help a line that was never brought in; the explanation says so and
    // asks the write policy that allocates instead.
    assert!(l
        .story
        .iter()
        .any(|p| p.contains("under write-through, no allocate")));
    assert!(l
        .story
        .iter()
        .any(|p| p.contains("no size or associativity")));
    assert_eq!(l.counterfactuals.len(), 1, "{:?}", l.counterfactuals);
    assert!(l.counterfactuals[0]
        .change
        .starts_with("write-back, allocate"));
    assert_eq!(l.counterfactuals[0].hit, Some(true));
    // With write-back and write-allocate it hits.
    c.cache.write_policy = WritePolicy::Wbwa;
    assert_eq!(why(&c, &k, 3).why, Why::Hit);
}

#[test]
fn the_accesses_that_coalesced_into_a_request() {
    // A warp of 4 threads loading 4-byte words: threads 0-1 in line 0, 2-3 in line 1.
    let mut s = String::from("kernel w grid=1 block=4\ninst ld_a\n");
    for t in 0..4u64 {
        s += &format!("0 {t} ld_a 0 ld {} 4\n", t * 64);
    }
    let k = text::read(s.as_bytes(), "w.wst").unwrap().kernels;
    let mut c = cfg(8, 4, Replacement::Lru);
    c.schedule.warp_size = 4;
    let e = why(&c, &k, 1);
    assert_eq!(e.request.line, 1);
    let in_line: Vec<(u32, u64)> = e
        .asked
        .accesses
        .iter()
        .filter(|a| a.in_line)
        .map(|a| (a.thread, a.address))
        .collect();
    assert_eq!(in_line, vec![(2, 128), (3, 192)]);
    assert_eq!(e.asked.accesses.len(), 4);
    assert!(e.story[0].contains(" 2 of its warp instruction's 4 accesses coalesced into it (thread 2 at 0x80, thread 3 at 0xc0)."), "{}", e.story[0]);
}

/// Nugteren et al. 2014 table 3: 4 threads, one per warp, round-robin; thread t loads x[2t]
/// then x[2t+1] (16-byte lines: threads 0 and 1 share line 0). Hit and miss latency 2,
/// unlimited MSHRs, no clipping, a fully associative cache of 2 lines.
fn table3() -> (Vec<Kernel>, SimConfig) {
    let mut s = String::from("kernel t grid=1 block=4\ninst i0\ninst i1\n");
    for tid in 0..4u64 {
        s += &format!("0 {tid} i0 0 ld {} 4\n", 2 * tid * 4);
        s += &format!("0 {tid} i1 0 ld {} 4\n", (2 * tid + 1) * 4);
    }
    let k = text::read(s.as_bytes(), "t3.wst").unwrap().kernels;
    let mut c = SimConfig {
        cache: CacheConfig {
            size_bytes: 32,
            line_bytes: 16,
            ways: 0,
            sector_bytes: 16,
            ..CacheConfig::default()
        },
        coalescing: Coalescing::Line,
        timing: Some(TimingConfig {
            hit_latency: 2,
            miss_latency: 2,
            l2_latency: 2,
            miss_latency_stddev: 0.0,
            mshrs: 0,
            mshrs_per_warp: 0,
            clip: false,
            warp_delay: false,
            classify: true,
            rules: Default::default(),
        }),
        ..SimConfig::default()
    };
    c.schedule.warp_size = 1;
    (k, c)
}

#[test]
fn a_latency_miss_in_the_timing_model() {
    let (k, c) = table3();
    // Request 1: thread 1 asks for line 0 at time 1; thread 0's miss at time 0 brings it at 2.
    let e = why(&c, &k, 1);
    assert_eq!(e.why, Why::Latency);
    assert_eq!(
        (e.request.time, e.request.line, e.request.warp),
        (Some(1), 0, 1)
    );
    let f = e.flight.as_ref().unwrap();
    assert_eq!(
        (f.fetched_by.request, f.fetched_by.time, f.arrives_at),
        (0, Some(0), 2)
    );
    assert!(
        e.story
            .iter()
            .any(|p| p.contains("it arrives at cycle 2; this request came 1 cycle early")),
        "{:#?}",
        e.story
    );
    let no_latency = e
        .counterfactuals
        .iter()
        .find(|c| c.change == "no latency")
        .unwrap();
    assert_eq!(no_latency.hit, Some(true));
    // The timing model's accesses come from the same request without it.
    assert_eq!(e.asked.accesses.len(), 1);
    assert_eq!(
        (e.asked.accesses[0].thread, e.asked.accesses[0].address),
        (1, 8)
    );
    // Request 2: thread 2's first line, a compulsory miss even with no latency.
    assert_eq!(why(&c, &k, 2).why, Why::Compulsory);
    // Request 5 (thread 1, line 0 at time 5): distance 1 in a 2-line stack, a hit.
    let h = why(&c, &k, 5);
    assert_eq!(
        (h.why, h.reuse.and_then(|r| r.stack_distance)),
        (Why::Hit, Some(1))
    );
}

#[test]
fn a_request_past_the_end_is_an_error() {
    let k = thread(&[("ld", A), ("ld", B)]);
    let e = explain(&cfg(8, 4, Replacement::Lru), &k, 2, &mut |_, _| true);
    assert_eq!(
        e,
        Err(ExplainError::NoSuchRequest {
            request: 2,
            requests: 2
        })
    );
}

#[test]
fn stepping_shows_the_set_as_each_request_leaves_it() {
    use warpscope::explain::step::snapshot;
    let k = thread(&[
        ("ld", A),
        ("ld", B),
        ("ld", C),
        ("ld", F),
        ("ld", D),
        ("ld", E),
        ("ld", A),
    ]);
    let c = cfg(8, 4, Replacement::Lru);
    let at = |n| snapshot(&c, &k, n, &mut |_, _| true).unwrap();
    // After request 4 (D): set 0 is full, A oldest.
    let s = at(4);
    let lines: Vec<Option<u64>> = s.ways.iter().map(|w| w.line_address).collect();
    assert_eq!(lines, vec![Some(A), Some(B), Some(C), Some(D)]);
    let ages: Vec<u64> = s.ways.iter().map(|w| w.policy).collect();
    assert_eq!(ages, vec![3, 2, 1, 0]);
    assert_eq!(s.policy_meaning, "age (0 = most recently used)");
    assert_eq!(s.evicted, None);
    // Request 5 (E) takes A's way.
    let s = at(5);
    let lines: Vec<Option<u64>> = s.ways.iter().map(|w| w.line_address).collect();
    assert_eq!(lines, vec![Some(E), Some(B), Some(C), Some(D)]);
    assert!(s.ways[0].current && !s.ways[1].current);
    assert_eq!(s.evicted, Some(A));
    let recent: Vec<u64> = s.recent.iter().map(|u| u.request).collect();
    assert_eq!(recent, vec![0, 1, 2, 3, 4]);
    // Request 3 (F) went to set 1, alone there.
    let s = at(3);
    assert_eq!(s.set, 1);
    assert_eq!(s.ways[0].line_address, Some(F));
    assert_eq!(s.ways[1].line_address, None);
    // FIFO keeps the queue's order: after E, B goes out next.
    let s = snapshot(&cfg(8, 4, Replacement::Fifo), &k, 5, &mut |_, _| true).unwrap();
    let places: Vec<u64> = s.ways.iter().map(|w| w.policy).collect();
    assert_eq!(places, vec![3, 0, 1, 2]);
}

#[test]
fn stepping_through_the_timing_model_shows_lines_in_flight_and_the_lru_stack() {
    use warpscope::explain::step::snapshot;
    let (k, c) = table3();
    // Time 1: line 0 is on its way (request 0's miss, arriving at 2); the stack is empty.
    let s1 = snapshot(&c, &k, 1, &mut |_, _| true).unwrap();
    assert_eq!(s1.in_flight, vec![(0, 2)]);
    assert_eq!(s1.mshrs, Some((1, None)));
    assert!(s1.ways.is_empty());
    // Time 4: line 0 has arrived (its latest effect at 3); line 1's effect at 4 comes after
    // the lookups of step 4. Distance 0, as table 3 says.
    let s4 = snapshot(&c, &k, 4, &mut |_, _| true).unwrap();
    let stack: Vec<Option<u64>> = s4.ways.iter().map(|w| w.line_address).collect();
    assert_eq!(stack, vec![Some(0)]);
    // Line 1 arrives in step 4 itself: nothing is in flight any more.
    assert!(s4.in_flight.is_empty());
    // At time 3, line 1 (asked for by request 2 at time 2) was on its way.
    let s3 = snapshot(&c, &k, 3, &mut |_, _| true).unwrap();
    assert_eq!(
        (s3.in_flight.clone(), s3.mshrs),
        (vec![(16, 4)], Some((1, None)))
    );
    // Time 5 (line 0 again): line 1 arrived at 4, line 0's latest effect (3) is older; table 3
    // gives distance 1.
    let s5 = snapshot(&c, &k, 5, &mut |_, _| true).unwrap();
    let stack: Vec<Option<u64>> = s5.ways.iter().map(|w| w.line_address).collect();
    assert_eq!(stack, vec![Some(16), Some(0)]);
    assert_eq!(s5.ways[1].policy, 1);
}

#[test]
fn the_timing_models_stack_rebuilt_for_stepping_agrees_with_the_engines_distances() {
    use warpscope::explain::step::snapshot;
    use warpscope::sim::{Observer, RequestEvent};
    #[derive(Default)]
    struct Events(Vec<RequestEvent>);
    impl Observer for Events {
        fn on_request(&mut self, e: &RequestEvent) {
            self.0.push(*e);
        }
    }
    let k = warpscope::gen::generate("matmul", &[("n".into(), "32".into())])
        .unwrap()
        .kernels;
    let mut c = warpscope::config::preset("gtx470-16k").unwrap();
    c.timing.as_mut().unwrap().classify = false;
    let mut ev = Events::default();
    warpscope::sim::run_kernels(&c, &k, &mut ev).unwrap();
    let ways = c.cache.ways_effective() as usize;
    let mut checked = 0;
    for n in (0..ev.0.len()).step_by(11).take(60) {
        let e = ev.0[n];
        let s = snapshot(&c, &k, n as u64, &mut |_, _| true).unwrap();
        let at = s
            .ways
            .iter()
            .position(|w| w.line_address == Some(e.line * c.cache.line_bytes as u64));
        match e.set_distance {
            Some(d) if (d as usize) < ways => {
                assert_eq!(at, Some(d as usize), "request {n}");
                checked += 1;
            }
            _ => assert_eq!(at, None, "request {n}: not in the cache"),
        }
    }
    assert!(checked > 20, "{checked}");
}
