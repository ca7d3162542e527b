//! The shared L2 against a deliberately simple model of it: every SM's L1 and the L2's slices
//! as lists of lines with sector bits and use stamps, fed the requests the pipeline reports
//! in issue order. The counts per slice, the traffic on each side and what is left dirty
//! must be equal on random kernels over several SMs, with both L1 write policies, a bypassed
//! L1 and the three slice hashes (the address map itself is tested against hand-worked addresses in
//! `l2/address_map.rs`).

use proptest::prelude::*;
use std::collections::BTreeMap;
use warpscope::config::{
    slice_cache, Coalescing, L2Config, SetIndex, SimConfig, SliceHash, SmSelection, WritePolicy,
};
use warpscope::explain;
use warpscope::l2::{AddressMap, L2Counters};
use warpscope::sim::{self, Observer, RequestEvent};
use warpscope::trace::Kernel;

use crate::random_kernels::{kernel, small_config, Row};

/// Every request, in issue order.
#[derive(Default)]
struct Requests(Vec<RequestEvent>);
impl Observer for Requests {
    fn on_request(&mut self, e: &RequestEvent) {
        self.0.push(*e);
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    line: u64,
    valid: u32,
    dirty: u32,
    used: u64,
}

/// A set-associative LRU cache of slots, the way anyone would write one.
struct Simple {
    sets: Vec<Vec<Slot>>,
    ways: usize,
    clock: u64,
}

/// What one access did.
#[derive(Clone, Copy)]
struct Done {
    hit: bool,
    /// The line was there (a `wtwa` store's hit).
    line_hit: bool,
    missing: u32,
    /// The evicted line and its dirty sectors.
    written_back: Option<(u64, u32)>,
    /// The line given up to make room.
    evicted: Option<u64>,
}

impl Simple {
    fn new(sets: usize, ways: usize) -> Simple {
        Simple {
            sets: vec![Vec::new(); sets],
            ways,
            clock: 0,
        }
    }

    /// An access to `line` in `set`: `allocate` brings it in when absent, `dirty` marks the
    /// sectors dirty.
    fn access(&mut self, set: usize, line: u64, sectors: u32, allocate: bool, dirty: bool) -> Done {
        self.clock += 1;
        let ways = self.ways;
        let slots = &mut self.sets[set];
        if let Some(s) = slots.iter_mut().find(|s| s.line == line) {
            let missing = sectors & !s.valid;
            s.valid |= sectors;
            if dirty {
                s.dirty |= sectors;
            }
            s.used = self.clock;
            return Done {
                hit: missing == 0,
                line_hit: true,
                missing,
                written_back: None,
                evicted: None,
            };
        }
        let mut done = Done {
            hit: false,
            line_hit: false,
            missing: sectors,
            written_back: None,
            evicted: None,
        };
        if allocate {
            let new = Slot {
                line,
                valid: sectors,
                dirty: if dirty { sectors } else { 0 },
                used: self.clock,
            };
            if slots.len() < ways {
                slots.push(new);
            } else {
                let victim = (0..slots.len()).min_by_key(|&i| slots[i].used).unwrap();
                let old = slots[victim];
                done.evicted = Some(old.line);
                if old.dirty != 0 {
                    done.written_back = Some((old.line, old.dirty));
                }
                slots[victim] = new;
            }
        }
        done
    }
}

/// The L2 of the simple model: slices by the address map, counts per slice.
struct SimpleL2 {
    map: AddressMap,
    slices: Vec<Simple>,
    sets: u64,
    counts: Vec<L2Counters>,
    to_l1: u64,
    from_l1: u64,
    /// Every L2 request: the L1 request's number, the line, its slice and set, whether it
    /// was the request's own line (a fetch or a write-through; not a write-back), what it did.
    log: Vec<(usize, u64, u32, u64, bool, Done)>,
}

impl SimpleL2 {
    /// One request of L1 line `line` (128 B lines, 32 B sectors on both levels): its slice
    /// and what it did there.
    fn request(&mut self, line: u64, sectors: u32, write: bool) -> (u32, Done) {
        let (slice, local) = self.map.slice_of(line * 128);
        let set = ((local / 128) % self.sets) as usize;
        let d = self.slices[slice as usize].access(set, line, sectors, true, write);
        let c = &mut self.counts[slice as usize];
        c.requests += 1;
        c.reads += !write as u64;
        c.writes += write as u64;
        c.hits += d.hit as u64;
        c.misses += !d.hit as u64;
        c.sectors += sectors.count_ones() as u64;
        c.sector_misses += d.missing.count_ones() as u64;
        if !write {
            c.bytes_from_dram += d.missing.count_ones() as u64 * 32;
        }
        if let Some((_, dirty)) = d.written_back {
            c.writebacks += 1;
            c.bytes_to_dram += dirty.count_ones() as u64 * 32;
        }
        (slice, d)
    }
}

prop_compose! {
    /// A random kernel over 1-4 SMs and its configuration: `l1_mode` 0 write-through, 1
    /// write-back, 2 and 3 bypassed (l1-bypass: it holds nothing and writes through, whichever
    /// its write policy), 4 write-through with allocation (`wtwa`: a store allocates without a
    /// fetch and hits on the line's tag); 1-4 channels (3: the gap mode), the three slice
    /// hashes, 2-8 sets of 1-2 ways a slice.
    fn l2_case()(
        rows in sector_rows(),
        ctas in 1u32..12,
        tpb in 1u32..70,
        sms in 1u32..5,
        l1_mode in 0u8..5,
        channels in prop_oneof![Just(1u32), Just(2), Just(3), Just(4)],
        hash in 0usize..3,
        ways in 1u32..3,
        l2_sets in prop_oneof![Just(2u64), Just(4), Just(8)],
        seed in any::<u64>(),
    ) -> (Kernel, SimConfig, L2Config) {
        let mut cfg = small_config(32, 0, sms, 2, false, seed);
        cfg.gpu.simulate = SmSelection::All;
        cfg.cache.sector_bytes = 32;
        cfg.cache.size_bytes = 1024;
        cfg.coalescing = Coalescing::Sector;
        cfg.cache.write_policy = match l1_mode {
            4 => WritePolicy::Wtwa,
            m if m % 2 == 1 => WritePolicy::Wbwa,
            _ => WritePolicy::Wtna,
        };
        cfg.cache.bypass = (2..4).contains(&l1_mode);
        let hash = [SliceHash::Linear, SliceHash::Xor, SliceHash::Ipoly][hash];
        let hash = if hash == SliceHash::Xor && channels == 3 {
            SliceHash::Linear
        } else {
            hash
        };
        let l2 = L2Config {
            channels,
            slices_per_channel: 2,
            slice_hash: hash,
            slice: slice_cache(l2_sets, ways, SetIndex::Modulo),
            ..L2Config::default()
        };
        cfg.l2 = Some(l2.clone());
        (kernel("k", ctas, tpb, false, &rows), cfg, l2)
    }
}

/// The simple model fed the requests the pipeline reported (`seen`, in issue order), then the
/// L1s' final write-back; an error names the first request its L1 disagrees on.
fn feed_simple(cfg: &SimConfig, l2: &L2Config, seen: &[RequestEvent]) -> Result<SimpleL2, String> {
    let write_back = cfg.cache.write_policy == WritePolicy::Wbwa && !cfg.cache.bypass;
    let wtwa = cfg.cache.write_policy == WritePolicy::Wtwa && !cfg.cache.bypass;
    let l1_sets = cfg.cache.sets() as usize;
    let mut l1s: BTreeMap<u32, Simple> = (0..cfg.gpu.sms)
        .map(|s| (s, Simple::new(l1_sets, cfg.cache.ways as usize)))
        .collect();
    let (l2_sets, ways) = (l2.slice.sets() as u64, l2.slice.ways as usize);
    let mut want = SimpleL2 {
        map: AddressMap::new(l2).unwrap(),
        slices: (0..l2.slices())
            .map(|_| Simple::new(l2_sets as usize, ways))
            .collect(),
        sets: l2_sets,
        counts: vec![L2Counters::default(); l2.slices() as usize],
        to_l1: 0,
        from_l1: 0,
        log: Vec::new(),
    };
    let send = |want: &mut SimpleL2, i: usize, line: u64, sectors: u32, write: bool, own: bool| {
        let (slice, d) = want.request(line, sectors, write);
        let (_, local) = want.map.slice_of(line * 128);
        want.log
            .push((i, line, slice, (local / 128) % want.sets, own, d));
    };
    for (i, e) in seen.iter().enumerate() {
        let l1 = l1s.get_mut(&e.sm).unwrap();
        let set = (e.line % l1_sets as u64) as usize;
        let allocate = !e.write || write_back || wtwa;
        let d = if cfg.cache.bypass {
            Done {
                hit: false,
                line_hit: false,
                missing: e.sectors,
                written_back: None,
                evicted: None,
            }
        } else {
            l1.access(set, e.line, e.sectors, allocate, e.write && write_back)
        };
        let hit = if e.write && wtwa { d.line_hit } else { d.hit };
        if hit != e.hit {
            return Err(format!("the simple L1 disagrees at request {i}: {e:?}"));
        }
        if !e.write && d.missing != 0 {
            want.to_l1 += d.missing.count_ones() as u64 * 32;
            send(&mut want, i, e.line, d.missing, false, true);
        }
        if e.write && !write_back {
            want.from_l1 += e.sectors.count_ones() as u64 * 32;
            send(&mut want, i, e.line, e.sectors, true, true);
        }
        if let Some((line, dirty)) = d.written_back {
            want.from_l1 += dirty.count_ones() as u64 * 32;
            send(&mut want, i, line, dirty, true, false);
        }
    }
    // The L1s' final write-back, SM by SM, set by set, way by way.
    for l1 in l1s.values() {
        for set in &l1.sets {
            for s in set.iter().filter(|s| s.dirty != 0) {
                want.from_l1 += s.dirty.count_ones() as u64 * 32;
                send(&mut want, seen.len(), s.line, s.dirty, true, false);
            }
        }
    }
    Ok(want)
}

/// Rows whose accesses are whole 32-byte sectors (so no write is partial).
fn sector_rows() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec((0u32..400, 0u32..3, 0u32..4, 0u64..160, 0u8..2), 0..300).prop_map(
        |rows| {
            rows.into_iter()
                .map(|(t, i, d, sector, kind)| (t, i, d, sector * 32, 32, kind))
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn the_l2_counts_what_a_simple_model_of_it_counts((k, cfg, l2) in l2_case()) {
        let mut seen = Requests::default();
        let report = sim::run_kernels(&cfg, std::slice::from_ref(&k), &mut seen).unwrap();
        let got = report.l2.clone().unwrap();
        // The simple model, fed the same requests.
        let want = feed_simple(&cfg, &l2, &seen.0).map_err(TestCaseError::fail)?;
        for (slice, (g, w)) in got.per_slice.iter().zip(&want.counts).enumerate() {
            let mut g = g.counters;
            g.read_misses = 0;
            g.write_misses = 0;
            g.miss_classes = Default::default();
            prop_assert_eq!(g, *w, "slice {}", slice);
        }
        prop_assert_eq!(got.bytes_l2_to_l1, want.to_l1);
        prop_assert_eq!(got.bytes_l1_to_l2, want.from_l1);
        let dirty: u64 = want.slices.iter()
            .flat_map(|s| s.sets.iter().flatten())
            .map(|s| s.dirty.count_ones() as u64 * 32)
            .sum();
        prop_assert_eq!(got.dirty_bytes_at_end, dirty);
        // What the L1s sent down is what they counted as traffic to and from memory.
        prop_assert_eq!(got.bytes_l1_to_l2, report.totals.bytes_to_memory);
        prop_assert_eq!(got.bytes_l2_to_l1, report.totals.bytes_from_memory);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Explain's L2 paragraph: the slice and set the request went to, whether it hit there,
    /// the last request (on any SM) that brought the line into the slice, the L2 requests
    /// since, and the eviction after it, as the simple model has them.
    #[test]
    fn explain_names_the_request_that_brought_the_line_into_its_slice(
        (k, cfg, l2) in l2_case(),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut seen = Requests::default();
        sim::run_kernels(&cfg, std::slice::from_ref(&k), &mut seen).unwrap();
        let want = feed_simple(&cfg, &l2, &seen.0).map_err(TestCaseError::fail)?;
        let own: Vec<usize> = want.log.iter().filter(|x| x.4).map(|x| x.0).collect();
        prop_assume!(!own.is_empty());
        let n = own[pick.index(own.len())];
        let e = explain::explain(&cfg, std::slice::from_ref(&k), n as u64, &mut |_, _| true).unwrap();
        let got = e.l2.clone().unwrap();
        let line = seen.0[n].line;
        let (_, _, slice, set, _, d) = *want.log.iter().find(|x| x.0 == n && x.4).unwrap();
        prop_assert_eq!((got.slice, got.set as u64, got.hit), (slice, set, d.hit));
        let (mut brought, mut uses, mut evicted) = (None, 0, None);
        for x in want.log.iter().filter(|x| x.0 < n) {
            if x.5.evicted == Some(line) {
                evicted = Some(x.0);
            }
            if x.1 == line {
                if x.5.missing != 0 {
                    (brought, uses, evicted) = (Some(x.0), 0, None);
                } else {
                    uses += 1;
                }
            }
        }
        prop_assert_eq!(got.brought_in_by.map(|u| u.request as usize), brought);
        prop_assert_eq!(got.uses_since, uses);
        prop_assert_eq!(got.evicted_by.map(|u| u.request as usize), evicted);
        let story = e.story.join(" ");
        prop_assert!(story.contains(&format!("L2 slice {slice}, set {set}")), "{}", story);
    }
}

/// A store of 4 bytes allocates its sector without a DRAM read; the read after it fetches
/// the sector (lazy fetch-on-read); a whole-sector store makes it readable at once.
#[test]
fn a_partial_store_is_fetched_when_it_is_read() {
    use warpscope::trace::{Access, AccessKind, Dim3, KernelBuilder, MemSpace, Order};
    let mut cfg = SimConfig::default();
    cfg.gpu.simulate = SmSelection::All;
    cfg.cache.sector_bytes = 32;
    cfg.coalescing = Coalescing::Sector;
    cfg.l2 = Some(L2Config::default());
    let run = |cfg: &SimConfig, accesses: &[(u64, u16, AccessKind)]| {
        let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(1), Order::Issued).unwrap();
        b.instruction("i", None);
        for (n, &(addr, size, kind)) in accesses.iter().enumerate() {
            b.push(Access {
                thread: 0,
                inst: 0,
                dyn_inst: n as u32,
                addr,
                size,
                kind,
                space: MemSpace::Global,
            })
            .unwrap();
        }
        let k = b.finish();
        sim::run_kernels(cfg, std::slice::from_ref(&k), &mut sim::NoObserver)
            .unwrap()
            .l2
            .unwrap()
    };
    use AccessKind::{Load, Store};
    let partial = run(&cfg, &[(0x1000, 4, Store), (0x1000, 4, Load)]);
    // The store misses without a read from DRAM; the load misses in the L1 (write-through,
    // no allocation) and in the L2, which now fetches the sector.
    assert_eq!((partial.totals.requests, partial.totals.misses), (2, 2));
    assert_eq!(partial.totals.bytes_from_dram, 32);
    let whole = run(&cfg, &[(0x1000, 32, Store), (0x1000, 4, Load)]);
    assert_eq!(
        (
            whole.totals.requests,
            whole.totals.misses,
            whole.totals.hits
        ),
        (2, 1, 1)
    );
    assert_eq!(whole.totals.bytes_from_dram, 0);
    assert_eq!(whole.dirty_bytes_at_end, 32);
    // Two 16-byte stores make the sector whole between them (the bytes written since the line
    // came in, GPGPU-Sim's byte mask): the load after them hits without reading DRAM.
    let halves = run(
        &cfg,
        &[(0x1000, 16, Store), (0x1010, 16, Store), (0x1000, 4, Load)],
    );
    assert_eq!((halves.totals.misses, halves.totals.hits), (1, 2));
    assert_eq!(halves.totals.bytes_from_dram, 0);
    // One 16-byte store leaves it in part: the load fetches it.
    let half = run(&cfg, &[(0x1000, 16, Store), (0x1000, 4, Load)]);
    assert_eq!((half.totals.misses, half.totals.bytes_from_dram), (2, 32));
    // An unsectored L1 (Fermi's): a 4-byte store writes one L2 sector, in part; a 64-byte
    // store at 32 writes two whole sectors and dirties 64 bytes.
    cfg.cache.sector_bytes = 128;
    cfg.coalescing = Coalescing::Line;
    let fermi = run(&cfg, &[(0x1004, 4, Store)]);
    assert_eq!((fermi.totals.sectors, fermi.dirty_bytes_at_end), (1, 32));
    let two = run(&cfg, &[(0x1020, 64, Store), (0x1020, 64, Load)]);
    assert_eq!((two.totals.sectors, two.totals.hits), (2 + 4, 0));
    assert_eq!(
        two.totals.sector_misses,
        2 + 2,
        "the load misses the two sectors not written"
    );
    assert_eq!(two.totals.bytes_from_dram, 64);
}
