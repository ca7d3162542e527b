//! A plain per-byte model of the definitions, and the analysis checked against it on
//! random launches and on grids so sparse that every counting sort falls back to its
//! comparison twin.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;
use rustc_hash::FxHashMap;

use super::*;
use crate::comm::strides::top_strides;

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
        // Whole, and in pieces of a few rows (the same report, or it panics).
        let fast = super::whole_and_in_pieces(&trace);
        prop_assert_eq!(observed(&fast), reference(&trace));
        // The summary is consistent with the transfers.
        let sum: u64 = fast.pairs.iter().map(|p| p.2).sum();
        prop_assert_eq!(sum, fast.communicated_bytes);
        prop_assert_eq!(fast.distance.iter().sum::<u64>(), fast.communicated_bytes);
    }
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
