//! Property tests: the cache, classifier, reuse distances and scheduler agree with
//! deliberately simple reference implementations on random inputs.

use proptest::prelude::*;
use std::collections::{HashSet, VecDeque};
use warpscope::cache::{CacheModel, MissClass, Request};
use warpscope::config::choice::Choice;
use warpscope::config::{CacheConfig, IssuePolicy, Replacement, SetIndex, SimConfig, WritePolicy};
use warpscope::reuse;
use warpscope::rng::Rng;

fn cfg(sets: u32, ways: u32, repl: Replacement, wp: WritePolicy) -> CacheConfig {
    CacheConfig {
        size_bytes: sets as u64 * ways as u64 * 64,
        line_bytes: 64,
        ways,
        sector_bytes: 64,
        set_index: SetIndex::Modulo,
        replacement: repl,
        write_policy: wp,
        bypass: false,
    }
}

fn req(line: u64, write: bool) -> Request {
    Request {
        line,
        sectors: 1,
        write,
        bytes: 64,
    }
}

/// A literal LRU stack: distance = position of the line in the stack.
fn stack_distances(lines: &[u64]) -> Vec<Option<u64>> {
    let mut stack: Vec<u64> = Vec::new();
    lines
        .iter()
        .map(|&l| {
            let d = stack.iter().position(|&x| x == l);
            if let Some(p) = d {
                stack.remove(p);
            }
            stack.insert(0, l);
            d.map(|p| p as u64)
        })
        .collect()
}

/// A list-based set-associative cache, one `Vec` of lines per set (slot order = way order).
struct RefCache {
    sets: Vec<Vec<(u64, u64, u64)>>, // (line, use count, fill time)
    order: Vec<VecDeque<u64>>,       // recency (front = most recent) or fill order
    ways: usize,
    repl: Replacement,
    wbwa: bool,
    clock: u64,
    rng: Rng,
}

impl RefCache {
    fn new(sets: usize, ways: usize, repl: Replacement, wbwa: bool, seed: u64) -> Self {
        RefCache {
            sets: vec![Vec::new(); sets],
            order: vec![VecDeque::new(); sets],
            ways,
            repl,
            wbwa,
            clock: 0,
            rng: Rng::fork(seed, 0x5EED_CAC4E),
        }
    }
    fn access(&mut self, line: u64, write: bool) -> bool {
        let s = (line % self.sets.len() as u64) as usize;
        self.clock += 1;
        if let Some(i) = self.sets[s].iter().position(|e| e.0 == line) {
            self.sets[s][i].1 += 1;
            if self.repl == Replacement::Lru {
                self.order[s].retain(|&l| l != line);
                self.order[s].push_front(line);
            }
            return true;
        }
        if write && !self.wbwa {
            return false;
        }
        let entry = (line, 1, self.clock);
        if self.sets[s].len() < self.ways {
            self.sets[s].push(entry);
        } else {
            let victim_line = match self.repl {
                Replacement::Lru => *self.order[s].back().unwrap(),
                Replacement::Fifo => *self.order[s].front().unwrap(),
                Replacement::Random => self.sets[s][self.rng.below(self.ways as u64) as usize].0,
                Replacement::Lfu | Replacement::Mfu => {
                    let most = self.repl == Replacement::Mfu;
                    let mut best = self.sets[s][0];
                    for &e in &self.sets[s][1..] {
                        let better = if most { e.1 > best.1 } else { e.1 < best.1 };
                        if better || (e.1 == best.1 && e.2 < best.2) {
                            best = e;
                        }
                    }
                    best.0
                }
                Replacement::Plru => unreachable!("not modelled by the list reference"),
            };
            let i = self.sets[s]
                .iter()
                .position(|e| e.0 == victim_line)
                .unwrap();
            self.sets[s][i] = entry;
            self.order[s].retain(|&l| l != victim_line);
        }
        match self.repl {
            Replacement::Lru => self.order[s].push_front(line),
            _ => self.order[s].push_back(line),
        }
        false
    }
}

fn lines_strategy() -> impl Strategy<Value = Vec<(u64, bool)>> {
    prop::collection::vec((0u64..48, prop::bool::weighted(0.25)), 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn reuse_distance_equals_a_literal_lru_stack(lines in prop::collection::vec(0u64..40, 1..300)) {
        prop_assert_eq!(reuse::distances(&lines), stack_distances(&lines));
    }

    #[test]
    fn whole_and_per_set_distances_with_repeated_lines_equal_literal_stacks(
        runs in prop::collection::vec((0u64..12, 1usize..4), 1..200), sets in 1u32..5,
    ) {
        // Lines used several times in a row, and per set: each set's distances are those of
        // its own sequence of lines.
        let lines: Vec<u64> = runs.iter().flat_map(|&(l, n)| std::iter::repeat_n(l, n)).collect();
        let mut t = reuse::ReuseTracker::new(sets as usize);
        let got: Vec<_> = lines.iter().map(|&l| t.access(l, (l % sets as u64) as u32)).collect();
        let whole: Vec<_> = got.iter().map(|d| d.whole).collect();
        prop_assert_eq!(&whole, &stack_distances(&lines));
        for s in 0..sets as u64 {
            let mine: Vec<u64> = lines.iter().copied().filter(|l| l % sets as u64 == s).collect();
            let in_set: Vec<_> = lines.iter().zip(&got).filter(|(l, _)| *l % sets as u64 == s).map(|(_, d)| d.in_set).collect();
            prop_assert_eq!(in_set, stack_distances(&mine));
        }
        let mut want = reuse::Histogram::default();
        whole.iter().for_each(|&d| want.add(d));
        prop_assert_eq!(&t.whole_hist, &want);
        prop_assert_eq!(t.distinct_lines(), lines.iter().collect::<HashSet<_>>().len() as u64);
    }

    #[test]
    fn long_reuse_distances_equal_a_literal_lru_stack(
        lines in prop::collection::vec(0u64..2500, 3000..6000), sweep in 0usize..3000,
    ) {
        // A sweep first so that reuses reach thousands of positions back (the counted levels
        // of the tracker, not only its recent-word path).
        let mut all: Vec<u64> = (0..sweep as u64).map(|l| l * 7 % 2500).collect();
        all.extend(lines);
        prop_assert_eq!(reuse::distances(&all), stack_distances(&all));
    }

    #[test]
    fn fully_associative_lru_misses_exactly_when_distance_reaches_capacity(
        lines in prop::collection::vec(0u64..40, 1..300), n in 1u32..24,
    ) {
        let mut c = CacheModel::new(&cfg(1, n, Replacement::Lru, WritePolicy::Wtna), 1);
        let d = reuse::distances(&lines);
        for (l, d) in lines.iter().zip(d) {
            let hit = c.access(&req(*l, false)).hit;
            prop_assert_eq!(hit, d.is_some_and(|d| d < n as u64));
        }
    }

    #[test]
    fn one_set_equals_fully_associative(accesses in lines_strategy(), n in 1u32..16, r in 0..Replacement::ENTRIES.len(), wb in any::<bool>()) {
        let repl = Replacement::ENTRIES[r].value();
        let n = if repl == Replacement::Plru { 1 << (n % 4) } else { n };
        let wp = if wb { WritePolicy::Wbwa } else { WritePolicy::Wtna };
        let mut one_set = CacheModel::new(&cfg(1, n, repl, wp), 9);
        let mut full = CacheModel::new(&CacheConfig { ways: 0, ..cfg(1, n, repl, wp) }, 9);
        for (l, w) in accesses {
            prop_assert_eq!(one_set.access(&req(l, w)), full.access(&req(l, w)));
        }
    }

    #[test]
    fn classes_from_reuse_distances_equal_the_fully_associative_shadow(
        accesses in lines_strategy(), sets in 1u32..5, ways in 1u32..5, hashed in any::<bool>(),
    ) {
        // LRU, write-allocate, one sector a line: the shadow is an LRU stack, so the pipeline
        // classifies misses from the distances it computes anyway.
        let mut c = cfg(sets, ways, Replacement::Lru, WritePolicy::Wbwa);
        if hashed {
            c.set_index = SetIndex::FermiHash;
        }
        let mut shadow = CacheModel::new(&c, 3);
        let mut stack = CacheModel::new(&c, 3);
        prop_assert!(stack.shadow_is_a_stack());
        let mut tracker = reuse::ReuseTracker::new(c.sets() as usize);
        for (l, w) in accesses {
            let set = stack.set_of(l);
            let d = tracker.access(l, set).whole;
            prop_assert_eq!(stack.access_at_distance(&req(l, w), set, d), shadow.access(&req(l, w)));
        }
        for other in [
            cfg(sets, ways, Replacement::Fifo, WritePolicy::Wbwa),
            cfg(sets, ways, Replacement::Lru, WritePolicy::Wtna),
            CacheConfig { sector_bytes: 32, ..cfg(sets, ways, Replacement::Lru, WritePolicy::Wbwa) },
        ] {
            prop_assert!(!CacheModel::new(&other, 3).shadow_is_a_stack());
        }
    }

    #[test]
    fn classes_sum_to_misses_and_compulsory_counts_distinct_lines(
        accesses in lines_strategy(), sets in 1u32..5, ways in 1u32..5, r in 0usize..5, wb in any::<bool>(),
    ) {
        let repl = [Replacement::Lru, Replacement::Fifo, Replacement::Lfu, Replacement::Mfu, Replacement::Random][r];
        let wp = if wb { WritePolicy::Wbwa } else { WritePolicy::Wtna };
        let mut c = CacheModel::new(&cfg(sets, ways, repl, wp), 3);
        let (mut misses, mut classes, mut compulsory) = (0, 0, 0);
        let mut distinct = HashSet::new();
        for (l, w) in accesses {
            distinct.insert(l);
            let o = c.access(&req(l, w));
            misses += (!o.hit) as u64;
            classes += o.class.is_some() as u64;
            compulsory += (o.class == Some(MissClass::Compulsory)) as u64;
        }
        prop_assert_eq!(misses, classes);
        prop_assert_eq!(compulsory, distinct.len() as u64);
    }

    #[test]
    fn each_replacement_policy_agrees_with_its_reference(
        accesses in lines_strategy(), sets in 1u32..5, ways in 1u32..6, r in 0usize..5, wb in any::<bool>(), seed in any::<u64>(),
    ) {
        let repl = [Replacement::Lru, Replacement::Fifo, Replacement::Lfu, Replacement::Mfu, Replacement::Random][r];
        let wp = if wb { WritePolicy::Wbwa } else { WritePolicy::Wtna };
        let mut c = CacheModel::new(&cfg(sets, ways, repl, wp), seed);
        let mut reference = RefCache::new(sets as usize, ways as usize, repl, wb, seed);
        for (i, (l, w)) in accesses.into_iter().enumerate() {
            prop_assert_eq!(c.access(&req(l, w)).hit, reference.access(l, w), "access {}", i);
        }
    }

    #[test]
    fn plru_with_two_ways_is_lru_and_never_evicts_the_last_used_line(accesses in lines_strategy(), sets in 1u32..4) {
        let mut plru = CacheModel::new(&cfg(sets, 2, Replacement::Plru, WritePolicy::Wbwa), 1);
        let mut lru = CacheModel::new(&cfg(sets, 2, Replacement::Lru, WritePolicy::Wbwa), 1);
        for &(l, w) in &accesses {
            prop_assert_eq!(plru.access(&req(l, w)).hit, lru.access(&req(l, w)).hit);
        }
        let mut p8 = CacheModel::new(&cfg(1, 8, Replacement::Plru, WritePolicy::Wbwa), 1);
        let mut last = None;
        for &(l, _) in &accesses {
            if let Some(prev) = last {
                if prev != l {
                    p8.access(&req(l, false));
                    // The previous line is still there: PLRU never evicts the most recent use.
                    prop_assert!(p8.access(&req(prev, false)).hit);
                    p8.access(&req(l, false));
                }
            }
            p8.access(&req(l, false));
            last = Some(l);
        }
    }

    #[test]
    fn scheduler_issues_every_access_once_and_respects_barriers(
        threads in 1u32..70, warp in 1u32..40, policy in 0usize..5, phases in 1usize..4,
        lens in prop::collection::vec(0usize..4, 1..300), ctas in 1u32..4, sms in 1u32..3, seed in any::<u64>(),
    ) {
        use warpscope::trace::{Access, AccessKind, Dim3, KernelBuilder, MemSpace, Order, Trace};
        let mut b = KernelBuilder::new("p", Dim3::x(ctas), Dim3::x(threads), Order::PerThread).unwrap();
        for i in 0..4 { b.instruction(&format!("i{i}"), None); }
        let mut expected = 0usize;
        for t in 0..ctas * threads {
            for ph in 0..phases {
                let n = lens[(t as usize * phases + ph) % lens.len()];
                for j in 0..n {
                    let addr = ((t as u64) << 20) | ((ph as u64) << 10) | (j as u64 * 4);
                    b.push(Access { thread: t, inst: (j % 4) as u32, dyn_inst: j as u32, addr, size: 4, kind: AccessKind::Load, space: MemSpace::Global }).unwrap();
                    expected += 1;
                }
                if ph + 1 < phases {
                    b.push(Access { thread: t, inst: 0, dyn_inst: 0, addr: 0, size: 0, kind: AccessKind::Barrier, space: MemSpace::Global }).unwrap();
                }
            }
        }
        let trace = Trace { kernels: vec![b.finish()] };
        let mut c = SimConfig::default();
        c.cache.ways = 0;
        c.coalescing = warpscope::config::Coalescing::None;
        c.schedule.warp_size = warp;
        c.schedule.policy = [IssuePolicy::RoundRobin, IssuePolicy::Sequential, IssuePolicy::Random, IssuePolicy::Gto, IssuePolicy::TwoLevel][policy];
        c.schedule.fetch_group = 2;
        c.gpu.sms = sms;
        c.gpu.simulate = warpscope::config::SmSelection::All;
        c.gpu.max_ctas_per_sm = 2;
        c.gpu.max_warps_per_sm = 4096;
        c.gpu.max_threads_per_sm = 4096;
        c.seed = seed;
        struct Seen(Vec<(u64, u32)>);
        impl warpscope::sim::Observer for Seen {
            fn on_request(&mut self, e: &warpscope::sim::RequestEvent) { self.0.push((e.line, e.cta)); }
        }
        let mut seen = Seen(Vec::new());
        let r = warpscope::sim::run(&c, &trace, &mut seen).unwrap();
        prop_assert_eq!(r.totals.accesses as usize, expected);
        // Requests never exceed accesses (coalescing none: one request per access).
        prop_assert_eq!(seen.0.len(), expected);
        // Barriers: within a CTA, no phase-p access is issued after a phase-(p+1) access.
        let phase = |line: u64| ((line << 7) >> 10) & 0x3ff; // 128-byte lines
        for cta in 0..ctas {
            let ph: Vec<u64> = seen.0.iter().filter(|e| e.1 == cta).map(|e| phase(e.0)).collect();
            prop_assert!(ph.windows(2).all(|w| w[0] <= w[1]), "CTA {}: phases {:?}", cta, ph);
        }
    }
}
