use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;

use super::*;
use crate::trace::{Access, AtomicOp, Kernel, KernelBuilder, Order};

/// One access of a hand-made launch: CTA, kind, address, size (thread 0 of the CTA).
type Row = (u32, AccessKind, u64, u16);

fn launch(grid: Dim3, rows: &[Row]) -> Kernel {
    launch_in(grid, rows, MemSpace::Global)
}

fn launch_in(grid: Dim3, rows: &[Row], space: MemSpace) -> Kernel {
    kernel(
        grid,
        rows.iter()
            .map(|&(cta, kind, addr, size)| (cta * 2, kind, space, addr, size)),
    )
}

/// A launch of 2-thread CTAs from rows of (thread, kind, space, address, size), in that order.
fn kernel(
    grid: Dim3,
    rows: impl IntoIterator<Item = (u32, AccessKind, MemSpace, u64, u16)>,
) -> Kernel {
    let mut b = KernelBuilder::new("k", grid, Dim3::x(2), Order::Issued).unwrap();
    b.instruction("i", None);
    for (thread, kind, space, addr, size) in rows {
        b.push(Access {
            thread,
            inst: 0,
            dyn_inst: 0,
            addr,
            size,
            kind,
            space,
        })
        .unwrap();
    }
    b.finish()
}

fn run(kernels: Vec<Kernel>) -> CommReport {
    analyze(&Trace { kernels }, &mut |_, _| true).unwrap()
}

const LD: AccessKind = AccessKind::Load;
const ST: AccessKind = AccessKind::Store;
const ATOM: AccessKind = AccessKind::Atomic(AtomicOp::Add);

/// CTA `c` touches its 4 elements of 4 bytes at `base + 16 * c`.
fn block_of(c: u32, kind: AccessKind, base: u64) -> Vec<Row> {
    (0..4)
        .map(|i| (c, kind, base + 16 * u64::from(c) + 4 * i, 4))
        .collect()
}

#[test]
fn ring_shift() {
    // Launch 0: CTA c writes its block; launch 1: CTA c reads block (c + 1) % 4.
    let w: Vec<Row> = (0..4).flat_map(|c| block_of(c, ST, 0)).collect();
    let r: Vec<Row> = (0..4)
        .flat_map(|c| {
            block_of((c + 1) % 4, LD, 0)
                .into_iter()
                .map(move |(_, k, a, s)| (c, k, a, s))
        })
        .collect();
    let rep = run(vec![launch(Dim3::x(4), &w), launch(Dim3::x(4), &r)]);
    assert_eq!(
        rep.pairs,
        vec![
            Pair(0, 3, 16),
            Pair(1, 0, 16),
            Pair(2, 1, 16),
            Pair(3, 2, 16)
        ]
    );
    assert_eq!(rep.transfers.len(), 4);
    assert!(rep
        .transfers
        .iter()
        .all(|t| (t.writer_launch, t.reader_launch, t.bytes) == (0, 1, 16)));
    assert_eq!((rep.write_bytes, rep.read_bytes), (64, 64));
    assert_eq!(
        (rep.communicated_bytes, rep.communicated_write_bytes),
        (64, 64)
    );
    assert_eq!(rep.communication_fraction, 1.0);
    assert_eq!(rep.shared_bytes, 0);
    assert_eq!(rep.in_degree, vec![1; 4]);
    assert_eq!(rep.out_degree, vec![1; 4]);
    // Halves {0, 1} and {2, 3}: 2 -> 1 and 0 -> 3 cross.
    assert_eq!(
        rep.bisection[0],
        Bisection {
            cuttable: true,
            bytes: 32,
            relative: 0.5
        }
    );
    assert!(!rep.bisection[1].cuttable && !rep.bisection[2].cuttable);
    assert_eq!(rep.distance, vec![64]);
    assert_eq!(rep.load_strides, vec![(4, 12)]);
    assert_eq!(rep.store_strides, vec![(4, 12)]);
    let l = &rep.per_launch;
    assert_eq!(
        (l[0].communicated_write_bytes, l[0].communicated_read_bytes),
        (64, 0)
    );
    assert_eq!(
        (l[1].communicated_write_bytes, l[1].communicated_read_bytes),
        (0, 64)
    );
    assert_eq!((l[0].out_degree_mean, l[0].out_degree_std), (1.0, 0.0));
    assert_eq!(l[1].in_degree, vec![1; 4]);
    assert_eq!(l[1].out_degree, vec![0; 4]);
    assert_eq!(rep.transfer_cdf(None), vec![(16, 1.0)]);
}

#[test]
fn gather_into_one_cta() {
    // Four CTAs write 8 bytes each; one CTA of the next launch reads all 32, twice.
    let w: Vec<Row> = (0..4).map(|c| (c, ST, 8 * u64::from(c), 8)).collect();
    let r: Vec<Row> = (0..2)
        .flat_map(|_| (0..8).map(|i| (0, LD, 4 * i, 4)))
        .collect();
    let rep = run(vec![launch(Dim3::x(4), &w), launch(Dim3::x(1), &r)]);
    // Reading twice does not double the transfer: it is the overlap of write and read sets.
    assert_eq!(
        rep.pairs,
        vec![Pair(0, 0, 8), Pair(1, 0, 8), Pair(2, 0, 8), Pair(3, 0, 8)]
    );
    assert_eq!(rep.read_bytes, 64);
    assert_eq!(rep.communicated_bytes, 32);
    assert_eq!(rep.in_degree, vec![4, 0, 0, 0]);
    assert_eq!(rep.out_degree, vec![1; 4]);
    // The reader launch has one CTA, on the low side: writers 2 and 3 cross.
    assert_eq!(rep.bisection[0].bytes, 16);
    assert_eq!(rep.per_launch[1].in_degree, vec![4]);
    assert_eq!(
        (
            rep.per_launch[0].out_degree_mean,
            rep.per_launch[0].out_degree_std
        ),
        (1.0, 0.0)
    );
    assert_eq!(rep.density(None, Measure::Transfers).len(), 4);
    // The second pass reads 0, 4, ..., 28 again: stride 4 throughout, and -28 once.
    assert_eq!(rep.load_strides, vec![(4, 14), (-28, 1)]);
}

/// An 8x8 array of 4-byte elements, row-major; CTA (x, y) of a 2x2 grid owns the 4x4 tile
/// at (4x, 4y).
fn at(col: u64, row: u64) -> u64 {
    (row * 8 + col) * 4
}

#[test]
fn halo_exchange() {
    let grid = Dim3::new(2, 2, 1);
    let mut w = Vec::new();
    let mut r = Vec::new();
    for cy in 0..2u64 {
        for cx in 0..2u64 {
            let cta = (cy * 2 + cx) as u32;
            for j in 0..4 {
                for i in 0..4 {
                    w.push((cta, ST, at(4 * cx + i, 4 * cy + j), 4));
                }
            }
            // The tile and a halo of one element on each side (no corners), clipped.
            for j in -1i64..5 {
                for i in -1i64..5 {
                    let (col, row) = (4 * cx as i64 + i, 4 * cy as i64 + j);
                    let corner = (i == -1 || i == 4) && (j == -1 || j == 4);
                    if !corner && (0..8).contains(&col) && (0..8).contains(&row) {
                        r.push((cta, LD, at(col as u64, row as u64), 4));
                    }
                }
            }
        }
    }
    let rep = run(vec![launch(grid, &w), launch(grid, &r)]);
    let mut expect = Vec::new();
    for (a, b) in [(0, 1), (0, 2), (1, 3), (2, 3)] {
        expect.push(Pair(a, b, 16));
        expect.push(Pair(b, a, 16));
    }
    for c in 0..4 {
        expect.push(Pair(c, c, 64));
    }
    expect.sort();
    assert_eq!(rep.pairs, expect);
    assert_eq!(rep.communicated_bytes, 4 * 64 + 8 * 16);
    assert_eq!(rep.in_degree, vec![3; 4]);
    assert_eq!(rep.out_degree, vec![3; 4]);
    for d in 0..2 {
        assert_eq!(rep.bisection[d].bytes, 64, "dimension {d}");
        assert_eq!(rep.bisection[d].relative, 64.0 / 384.0);
    }
    assert!(!rep.bisection[2].cuttable);
    // Every written byte is read by its owner again, so all writes are communicated.
    assert_eq!(rep.communication_fraction, 1.0);
    let cells = rep.density(Some((0, 1)), Measure::Bytes);
    assert_eq!(cells, rep.pairs);
    assert!(rep.density(Some((1, 0)), Measure::Bytes).is_empty());
}

#[test]
fn atomics_sharing_distance_and_other_spaces() {
    let x = 0x1000;
    let y = 0x2000;
    let rep = run(vec![
        // CTA 0 adds to x and writes y.
        launch(Dim3::x(2), &[(0, ATOM, x, 4), (0, ST, y, 8)]),
        // CTA 1 adds to x (reads CTA 0's value); CTA 0 then reads x in the same launch:
        // sharing, not communication. CTA 1 writes z and reads it back: its own write.
        launch(
            Dim3::x(2),
            &[
                (1, ATOM, x, 4),
                (0, LD, x, 4),
                (1, ST, 0x3000, 4),
                (1, LD, 0x3000, 4),
            ],
        ),
        launch(Dim3::x(2), &[(0, LD, x, 4)]),
        // Read three launches after the write: distance 2.
        launch(Dim3::x(2), &[(1, LD, y, 8)]),
    ]);
    let t: Vec<_> = rep
        .transfers
        .iter()
        .map(|t| {
            (
                t.writer_launch,
                t.reader_launch,
                t.writer_cta,
                t.reader_cta,
                t.bytes,
            )
        })
        .collect();
    assert_eq!(t, vec![(0, 1, 0, 1, 4), (0, 3, 0, 1, 8), (1, 2, 1, 0, 4)]);
    assert_eq!(rep.distance, vec![8, 0, 8]);
    assert_eq!(rep.per_launch[1].shared_bytes, 4);
    assert_eq!(rep.shared_bytes, 4);
    assert_eq!(
        (rep.read_bytes, rep.write_bytes),
        (4 + 4 + 4 + 4 + 4 + 8, 4 + 8 + 4 + 4)
    );
    assert_eq!(rep.communicated_write_bytes, 4 + 8 + 4);

    // Shared and local memory never communicate; texture loads read global memory.
    let w = launch(Dim3::x(1), &[(0, ST, 0, 4)]);
    for (space, bytes) in [
        (MemSpace::Shared, 0),
        (MemSpace::Local, 0),
        (MemSpace::Texture, 4),
    ] {
        let r = launch_in(Dim3::x(1), &[(0, LD, 0, 4)], space);
        assert_eq!(
            run(vec![w.clone(), r]).communicated_bytes,
            bytes,
            "{space:?}"
        );
    }
}

#[test]
fn cancelling_stops_the_analysis() {
    let rows: Vec<Row> = (0..100_000).map(|i| (0, ST, 4 * i, 4)).collect();
    let t = Trace {
        kernels: vec![launch(Dim3::x(1), &rows)],
    };
    let mut calls = 0;
    let r = analyze(&t, &mut |_, _| {
        calls += 1;
        calls < 2
    });
    assert_eq!(r, Err(CommError::Cancelled));
}

#[test]
fn memory_follows_written_ranges_not_accesses() {
    // A million 4-byte stores by one CTA over the same 64 KiB: one segment per 256-byte page.
    let mut w = writers::Writers::default();
    for i in 0..1_000_000u64 {
        w.write(0, (i % 16384) * 4, 4, |_| {});
    }
    assert_eq!(w.segments(), 256);
}

// ---- the per-byte reference -----------------------------------------------------------

/// What the reference computes, in the shape the fast analysis reports it.
#[derive(Debug, PartialEq)]
struct Reference {
    transfers: Vec<Transfer>,
    launches: Vec<(u64, u64, u64, u64, u64)>,
    load_strides: Strides,
    store_strides: Strides,
}

/// A plain per-byte model of the definitions: one map entry per byte.
fn reference(trace: &Trace) -> Reference {
    // byte -> (launch, cta, read by a later launch)
    let mut last: HashMap<u64, (u32, u32, bool)> = HashMap::new();
    let mut comm_set: BTreeSet<(u32, u32, u64)> = BTreeSet::new();
    let mut transfers: BTreeMap<(u32, u32, u32, u32), BTreeSet<u64>> = BTreeMap::new();
    let mut launches = Vec::new();
    let mut load_h: FxHashMap<i64, u64> = FxHashMap::default();
    for (l, k) in trace.kernels.iter().enumerate() {
        let l = l as u32;
        let (mut rd, mut wr) = (0, 0);
        let mut shared: BTreeSet<(u32, u32, u64)> = BTreeSet::new();
        let mut last_load: HashMap<u32, u64> = HashMap::new();
        let tpc = k.threads_per_cta();
        for a in k.accesses() {
            let reads = matches!(
                (a.kind, a.space),
                (AccessKind::Load, MemSpace::Global | MemSpace::Texture)
                    | (AccessKind::Atomic(_), MemSpace::Global)
            );
            let writes = matches!(
                (a.kind, a.space),
                (AccessKind::Store | AccessKind::Atomic(_), MemSpace::Global)
            );
            let cta = a.thread / tpc;
            let bytes = a.addr..a.addr + u64::from(a.size);
            if reads {
                rd += u64::from(a.size);
                let mut any = false;
                for b in bytes.clone() {
                    if let Some(w) = last.get_mut(&b) {
                        if w.0 < l {
                            w.2 = true;
                            any = true;
                            transfers.entry((w.0, l, w.1, cta)).or_default().insert(b);
                        } else if w.1 != cta {
                            shared.insert((cta, w.1, b));
                        }
                    }
                }
                if any {
                    if let Some(p) = last_load.insert(cta, a.addr) {
                        *load_h.entry(a.addr.wrapping_sub(p) as i64).or_default() += 1;
                    }
                }
            }
            if writes {
                wr += u64::from(a.size);
                for b in bytes {
                    if let Some((wl, wc, true)) = last.insert(b, (l, cta, false)) {
                        comm_set.insert((wl, wc, b));
                    }
                }
            }
        }
        launches.push((rd, wr, 0, 0, shared.len() as u64));
    }
    for (b, (wl, wc, c)) in &last {
        if *c {
            comm_set.insert((*wl, *wc, *b));
        }
    }
    for &(wl, _, _) in &comm_set {
        launches[wl as usize].3 += 1;
    }
    let transfers: Vec<Transfer> = transfers
        .into_iter()
        .map(|((wl, rl, wc, rc), s)| Transfer {
            writer_launch: wl,
            reader_launch: rl,
            writer_cta: wc,
            reader_cta: rc,
            bytes: s.len() as u64,
        })
        .collect();
    for t in &transfers {
        launches[t.reader_launch as usize].2 += t.bytes;
    }
    // Store strides: a store is communicated when any of its bytes is in its writer's set.
    let mut store_h: FxHashMap<i64, u64> = FxHashMap::default();
    for (l, k) in trace.kernels.iter().enumerate() {
        let mut last_store: HashMap<u32, u64> = HashMap::new();
        for a in k.accesses() {
            let cta = a.thread / k.threads_per_cta();
            let writes = matches!(
                (a.kind, a.space),
                (AccessKind::Store | AccessKind::Atomic(_), MemSpace::Global)
            );
            if writes
                && (a.addr..a.addr + u64::from(a.size))
                    .any(|b| comm_set.contains(&(l as u32, cta, b)))
            {
                if let Some(p) = last_store.insert(cta, a.addr) {
                    *store_h.entry(a.addr.wrapping_sub(p) as i64).or_default() += 1;
                }
            }
        }
    }
    Reference {
        transfers,
        launches,
        load_strides: top_strides(load_h),
        store_strides: top_strides(store_h),
    }
}

fn observed(r: &CommReport) -> Reference {
    Reference {
        transfers: r.transfers.clone(),
        launches: r
            .per_launch
            .iter()
            .map(|l| {
                (
                    l.read_bytes,
                    l.write_bytes,
                    l.communicated_read_bytes,
                    l.communicated_write_bytes,
                    l.shared_bytes,
                )
            })
            .collect(),
        load_strides: r.load_strides.clone(),
        store_strides: r.store_strides.clone(),
    }
}

fn arb_kind() -> impl Strategy<Value = (AccessKind, MemSpace)> {
    prop_oneof![
        4 => Just((LD, MemSpace::Global)),
        3 => Just((ST, MemSpace::Global)),
        1 => Just((ATOM, MemSpace::Global)),
        1 => Just((LD, MemSpace::Texture)),
        1 => Just((ST, MemSpace::Shared)),
        1 => Just((AccessKind::Barrier, MemSpace::Global)),
    ]
}

/// A launch: CTAs (1-4), then rows of (thread, kind, address, size) over 3 KiB, so writes
/// and reads cross 256-byte pages, or over 256 bytes, so CTAs often write the same bytes.
fn arb_launch() -> impl Strategy<Value = Kernel> {
    (1u32..5, prop_oneof![Just(3072u64), Just(256u64)]).prop_flat_map(|(ctas, span)| {
        proptest::collection::vec((0..ctas * 2, arb_kind(), 0..span, 1u16..24), 0..60).prop_map(
            move |rows| {
                kernel(
                    Dim3::x(ctas),
                    rows.into_iter().map(|(thread, (kind, space), addr, size)| {
                        let size = if kind == AccessKind::Barrier { 0 } else { size };
                        (thread, kind, space, addr, size)
                    }),
                )
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn agrees_with_the_per_byte_reference(kernels in proptest::collection::vec(arb_launch(), 1..6)) {
        let trace = Trace { kernels };
        let fast = analyze(&trace, &mut |_, _| true).unwrap();
        prop_assert_eq!(observed(&fast), reference(&trace));
        // The summary is consistent with the transfers.
        let sum: u64 = fast.pairs.iter().map(|p| p.2).sum();
        prop_assert_eq!(sum, fast.communicated_bytes);
        prop_assert_eq!(fast.distance.iter().sum::<u64>(), fast.communicated_bytes);
    }
}

// ---- the multi-launch generators ------------------------------------------------------

fn generated(name: &str, params: &[(&str, &str)]) -> CommReport {
    let pairs: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let t = crate::gen::generate(name, &pairs).unwrap();
    analyze(&t, &mut |_, _| true).unwrap()
}

#[test]
fn hotspot_talks_to_itself_and_its_four_neighbours() {
    // 64x64 cells, 16x16 CTAs: a 4x4 grid; 3 steps.
    let r = generated("hotspot", &[("steps", "3")]);
    assert_eq!(r.per_launch.len(), 3);
    assert_eq!(r.ctas, 16);
    // CTA (1,1) = id 5: itself, 4 and 6 (x), 1 and 9 (y).
    let partners: Vec<u32> = r.pairs.iter().filter(|p| p.1 == 5).map(|p| p.0).collect();
    assert_eq!(partners, vec![1, 4, 5, 6, 9]);
    assert_eq!(r.in_degree[5], 5);
    // Corner CTA 0: itself and two neighbours.
    assert_eq!(r.in_degree[0], 3);
    // From a neighbour a CTA reads one 16-cell edge of 4 bytes per launch pair; from itself
    // its whole 16x16 tile.
    let t = |w, rd| {
        r.transfers
            .iter()
            .find(|t| (t.writer_launch, t.writer_cta, t.reader_cta) == (0, w, rd))
            .map(|t| t.bytes)
    };
    assert_eq!(t(4, 5), Some(64));
    assert_eq!(t(5, 5), Some(1024));
    // Launch 0 reads only the initial input; the last launch's writes are never read.
    assert_eq!(r.per_launch[0].communicated_read_bytes, 0);
    assert_eq!(r.per_launch[2].communicated_write_bytes, 0);
    assert_eq!(r.distance.len(), 1);
    // Cuts between CTA columns 1|2 and rows 1|2 cross 4 edges each way per launch pair.
    assert_eq!(r.bisection[0].bytes, 2 * 4 * 2 * 64);
    assert_eq!(r.bisection[0].bytes, r.bisection[1].bytes);
}

#[test]
fn histogram2_merges_every_partial_in_every_bin() {
    let r = generated("histogram2", &[]);
    assert_eq!(r.per_launch.len(), 2);
    // 16 partial CTAs, 64 merge CTAs: each merge CTA reads 4 bytes from each partial.
    assert_eq!(r.pairs.len(), 16 * 64);
    assert!(r.pairs.iter().all(|p| p.2 == 4));
    assert!(r.per_launch[1].in_degree.iter().all(|&d| d == 16));
    assert!(r.per_launch[0].out_degree.iter().all(|&d| d == 64));
    // Every partial is read; the final histogram (64 bins of 4 bytes) is not.
    let l = &r.per_launch;
    assert_eq!(l[0].communicated_write_bytes, l[0].write_bytes);
    assert_eq!(r.communication_fraction, 4096.0 / (4096.0 + 256.0));
}

#[test]
fn nbody_alternates_all_to_all_and_own_bodies() {
    let r = generated("nbody", &[("steps", "2")]);
    // forces, update, forces, update; 512 bodies in 8 CTAs of 64.
    assert_eq!(r.per_launch.len(), 4);
    let l = &r.per_launch;
    // The second force launch reads every body the first update wrote: all 8 partners.
    assert!(l[2].in_degree.iter().all(|&d| d == 8));
    // The update launch reads only its own bodies' accelerations (and positions/velocities
    // written in earlier launches by the same CTA).
    assert!(l[1].in_degree.iter().all(|&d| d == 1));
    assert_eq!(l[1].out_degree_mean, 8.0);
    assert_eq!(l[2].out_degree_mean, 1.0);
}

#[test]
fn bfs_levels_keeps_the_diagonal() {
    let r = generated("bfs-levels", &[("nodes", "2048")]);
    assert!(r.per_launch.len() >= 4 && r.per_launch.len() % 2 == 0);
    // Kernel 2 of a level reads the updating mask kernel 1 wrote, by the same CTA and others.
    let diagonal: u64 = r.pairs.iter().filter(|p| p.0 == p.1).map(|p| p.2).sum();
    assert!(diagonal > 0 && diagonal < r.communicated_bytes);
    // Masks and costs are read several launches after they were written.
    assert!(r.distance.len() > 1);
}

#[test]
fn stride_counts_are_exact_up_to_the_slots_and_bounded_beyond() {
    // Exact: STRIDE_SLOTS distinct strides.
    let mut h = StrideCounts::default();
    for s in 0..STRIDE_SLOTS as i64 {
        for _ in 0..(s % 5 + 1) {
            h.add(s);
        }
    }
    let (counts, floor) = h.settle();
    assert_eq!(floor, 0);
    assert_eq!(counts.len(), STRIDE_SLOTS);
    assert!(counts.iter().all(|(&s, &c)| c == (s % 5 + 1) as u64));

    // Beyond: 10^5 random strides with 128 every third time and -4 every seventh.
    let mut h = StrideCounts::default();
    let mut rng = crate::rng::Rng::new(11);
    let mut truth: FxHashMap<i64, u64> = FxHashMap::default();
    for i in 0..100_000u64 {
        let s = if i % 3 == 0 {
            128
        } else if i % 7 == 0 {
            -4
        } else {
            rng.below(1 << 40) as i64
        };
        *truth.entry(s).or_default() += 1;
        h.add(s);
    }
    let (counts, floor) = h.settle();
    assert!(floor > 0 && counts.len() <= STRIDE_SLOTS + PROBATION);
    for (s, &c) in &counts {
        assert!(c >= truth[s] && c <= truth[s] + floor, "stride {s}");
    }
    let top = top_strides(counts);
    assert_eq!(top[0].0, 128);
    assert_eq!(top[1].0, -4);
    assert_eq!(top[0].1, truth[&128]);
}

#[test]
fn stride_runs_leave_the_table_as_single_adds_would() {
    // Runs of repeated strides among many distinct ones, so the table evicts meanwhile.
    let mut rng = crate::rng::Rng::new(5);
    let mut runs = StrideCounts::default();
    let mut single = StrideCounts::default();
    for _ in 0..20_000 {
        let s = if rng.below(4) == 0 {
            rng.below(8) as i64
        } else {
            rng.below(1 << 30) as i64
        };
        for _ in 0..1 + rng.below(5) {
            runs.add(s);
            single.add_n(s, 1);
        }
    }
    let (a, fa) = runs.settle();
    let (b, fb) = single.settle();
    assert!(fb > 0, "the table must have evicted");
    assert_eq!((fa, a), (fb, b));
}

#[test]
fn counting_sort_is_stable_and_declines_sparse_keys() {
    let v: Vec<(u32, usize)> = [5u32, 1, 5, 3, 1, 0, 5]
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i))
        .collect();
    let sorted = counting_sort(&v, |x| x.0).unwrap();
    let mut want = v.clone();
    want.sort_by_key(|x| x.0);
    assert_eq!(sorted, want);
    assert!(counting_sort(&[(0u32, 0), (1 << 20, 1)], |x| x.0).is_none());
    assert!(counting_sort(&[] as &[(u32, u32)], |x| x.0).is_none());
}

#[test]
fn huge_sparse_grids_take_the_comparison_sorts_and_agree_with_the_reference() {
    // 200 000 CTAs a launch, a few of them active: writer numbers and CTA ids span far more
    // than the transfers, so every ordering falls back from counting sorts.
    let far = 199_999u32;
    let grid = Dim3::x(far + 1);
    let l0 = launch(
        grid,
        &[
            (0, ST, 0, 8),
            (far, ST, 8, 8),
            (7, ST, 64, 4),
            (far, ST, 68, 4),
        ],
    );
    let l1 = launch(
        grid,
        &[
            (far, LD, 0, 16),
            (3, LD, 4, 8),
            (0, LD, 64, 8),
            (far, ST, 0, 2),
        ],
    );
    let l2 = launch(grid, &[(5, LD, 0, 16), (far, LD, 66, 4)]);
    let trace = Trace {
        kernels: vec![l0, l1, l2],
    };
    let r = analyze(&trace, &mut |_, _| true).unwrap();
    assert_eq!(observed(&r), reference(&trace));
    assert!(r.transfers.len() >= 6);
    assert_eq!(
        r.pairs.iter().map(|p| p.2).sum::<u64>(),
        r.communicated_bytes
    );
    assert_eq!(r.out_degree[far as usize], 4);
}

#[test]
fn a_piece_joins_the_latest_piece_of_its_writer_across_other_writers() {
    let mut p = Pieces::default();
    let piece = Piece::new;
    // Writer 7 reads forward while writers 1 to RECENT - 1 come between (so its piece stays
    // among the latest RECENT); writer 7's pieces join.
    let between = RECENT as u32 - 1;
    p.push(3, piece(7, 0, 4));
    for w in 1..=between {
        p.push(3, piece(w, 100 * u64::from(w), 100 * u64::from(w) + 1));
        p.push(3, piece(7, 4 * u64::from(w), 4 * u64::from(w) + 4));
    }
    assert_eq!(p.held(3), RECENT);
    // Beyond the latest RECENT pieces it is a new piece, merged when the list is drained.
    for w in 10..10 + RECENT as u32 {
        p.push(3, piece(w, 1000 * u64::from(w), 1000 * u64::from(w) + 2));
    }
    let next = 4 * u64::from(between + 1);
    p.push(3, piece(7, next, next + 4));
    assert_eq!(p.held(3), 2 * RECENT + 1);
    let mut got = Vec::new();
    p.drain(|r, w, bytes| got.push((r, w, bytes)));
    // Readers come in order, each reader's writers in any order.
    got.sort_unstable();
    let mut want: Vec<_> = (1..=between).map(|w| (3, w, 1)).collect();
    want.push((3, 7, next + 4));
    assert_eq!(got[..RECENT], want[..]);
    assert_eq!(got.len(), 2 * RECENT);
    assert!(got[RECENT..].iter().all(|&(_, w, b)| w >= 10 && b == 2));
}

#[test]
fn pieces_stay_within_their_block_and_count_each_byte_once() {
    let mut p = Pieces::default();
    let b = 1u64 << BLOCK_BITS;
    // Touching pieces across a block boundary stay apart; overlapping ones within a block
    // join.
    p.push(1, Piece::new(9, b - 4, b));
    p.push(1, Piece::new(9, b, b + 4));
    p.push(1, Piece::new(9, b - 6, b - 2));
    assert_eq!(p.held(1), 2);
    // Bytes already read and 2 more, beyond the recent pieces: merged at the drain, 12 bytes.
    for w in 10..10 + RECENT as u32 {
        p.push(1, Piece::new(w, 0, 1));
    }
    p.push(1, Piece::new(9, b - 8, b));
    let mut got = Vec::new();
    p.drain(|r, w, bytes| got.push((r, w, bytes)));
    // Readers come in order, each reader's writers in any order.
    got.sort_unstable();
    assert_eq!(got[0], (1, 9, 12));
    assert_eq!(got.len(), 1 + RECENT);
}

#[test]
fn a_reader_ring_left_from_an_earlier_launch_joins_nothing() {
    let mut p = Pieces::default();
    for w in 0..RECENT as u32 {
        p.push(2, Piece::new(w, 10 * u64::from(w), 10 * u64::from(w) + 1));
    }
    p.drain(|_, _, _| {});
    // The ring still names writers 0 to 7; the new list has two pieces, neither of them
    // touching what writer 5 reads next (which the ring's stale slot 5 would point past).
    p.push(2, Piece::new(9, 0, 1));
    p.push(2, Piece::new(6, 40, 41));
    p.push(2, Piece::new(5, 50, 51));
    p.push(2, Piece::new(5, 51, 52));
    assert_eq!(p.held(2), 3);
    // The oldest of the recent pieces is still found.
    for w in 20..20 + RECENT as u32 - 3 {
        p.push(
            2,
            Piece::new(w, 1000 * u64::from(w), 1000 * u64::from(w) + 1),
        );
    }
    p.push(2, Piece::new(9, 1, 2));
    assert_eq!(p.held(2), 3 + RECENT - 3);
    let mut got = Vec::new();
    p.drain(|r, w, bytes| got.push((r, w, bytes)));
    // Readers come in order, each reader's writers in any order.
    got.sort_unstable();
    assert_eq!(got[..3], [(2, 5, 2), (2, 6, 1), (2, 9, 2)]);
}

#[test]
fn a_reader_that_comes_back_counts_each_byte_once() {
    let mut p = Pieces::default();
    p.push(1, Piece::new(9, 0, 4));
    p.push(2, Piece::new(9, 0, 4));
    p.push(1, Piece::new(9, 2, 6));
    p.push(0, Piece::new(4, 8, 9));
    p.push(1, Piece::new(3, 0, 1));
    let mut got = Vec::new();
    p.drain(|r, w, bytes| got.push((r, w, bytes)));
    // Readers come in order, each reader's writers in any order.
    got.sort_unstable();
    assert_eq!(got, [(0, 4, 1), (1, 3, 1), (1, 9, 6), (2, 9, 4)]);
}

#[test]
fn readers_interleaved_access_by_access_keep_memory_bounded() {
    // Three readers take turns, each re-reading the same 16 bytes of 4 writers: every push
    // finishes a run, and the runs are merged as they double.
    let mut p = Pieces::default();
    for i in 0..300_000u64 {
        let (reader, writer, at) = ((i % 3) as u32, (i / 3 % 4) as u32, i / 12 % 16);
        p.push(reader, Piece::new(writer, at, at + 1));
        assert!(p.done.len() <= 2 * 3 * 4 * 16 + RUN_SLACK);
    }
    let mut got = Vec::new();
    p.drain(|r, w, bytes| got.push((r, w, bytes)));
    // Readers come in order, each reader's writers in any order.
    got.sort_unstable();
    let want: Vec<_> = (0..3)
        .flat_map(|r| (0..4).map(move |w| (r, w, 16)))
        .collect();
    assert_eq!(got, want);
    assert!(p.done.is_empty() && p.runs.is_empty());
}

#[test]
fn the_launch_of_a_writer_number_agrees_with_a_search() {
    // Launch sizes with empty launches, one-CTA launches and uneven ones.
    for sizes in [
        vec![4u32, 4, 4],
        vec![1, 1000, 0, 7, 1],
        vec![0, 3, 0, 0, 5],
        vec![100_000, 1, 200_000, 3],
        vec![65_537, 65_535],
    ] {
        let mut first = vec![0u32];
        for n in &sizes {
            first.push(first.last().unwrap() + n);
        }
        let of = LaunchOf::new(&first);
        let total = *first.last().unwrap();
        let edges = first.iter().flat_map(|&f| [f.saturating_sub(1), f, f + 1]);
        for w in (0..total)
            .step_by(1 + total as usize / 5000)
            .chain(edges.filter(|&w| w < total))
        {
            let want = first.partition_point(|&f| f <= w) - 1;
            assert_eq!(of.of(w), want, "writer {w} of {sizes:?}");
            assert!(first[want] <= w && w < first[want + 1]);
        }
    }
}
