//! The analysis on hand-made launches whose communication is worked out by hand, on the
//! multi-launch generators ([`generators`]), and against a per-byte reference on random
//! launches ([`reference`]).

use super::*;
use crate::trace::{Access, AccessKind, AtomicOp, Dim3, Kernel, KernelBuilder, MemSpace, Order};

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
    whole_and_in_pieces(&Trace { kernels })
}

/// The analysis of `t`, which a piece at a time (a few rows each, the most pieces it can
/// take; and the page's size) gives too.
fn whole_and_in_pieces(t: &Trace) -> CommReport {
    let whole = analyze(t, &mut |_, _| true).unwrap();
    for rows in [3, PIECE_ROWS] {
        let mut a = Analyzing::new(rows);
        let mut pieces = 0;
        let cut = loop {
            pieces += 1;
            if let Some(r) = a.step(t, &mut |_, _| true).unwrap() {
                break r;
            }
        };
        assert_eq!(cut, whole, "in pieces of {rows} rows");
        assert!(pieces > 2 * t.kernels.len(), "{pieces} pieces");
        assert_eq!(a.step(t, &mut |_, _| true), Ok(None));
    }
    whole
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

mod generators;
mod reference;
