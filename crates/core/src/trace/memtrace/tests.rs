use super::*;
use crate::trace::testing::{file_ctx, pipe, scratch, stream_file, Pieces};
use crate::trace::Trace;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/real-traces/cuda-memtrace_matrixMul_first75bytes.trc"
);

#[test]
fn reads_the_published_header_and_run_record() {
    let Ok(bytes) = std::fs::read(SAMPLE) else {
        return;
    };
    assert!(looks_like(&bytes));
    let mut t = Trace::default();
    read_into(bytes.as_slice(), "m.trc", &mut t).unwrap();
    let k = &t.kernels[0];
    assert_eq!(k.name, "_Z13matrixMulCUDAILi32EEvPfS0_S0_ii");
    assert_eq!(k.len(), 32);
    assert_eq!(k.grid, Dim3::new(3, 1, 1));
    assert_eq!(k.info.cta_sm[2], 2);
    let a: Vec<_> = k.accesses().collect();
    assert_eq!(a[0].addr, 0x7f3996e08c00);
    assert_eq!(a[31].addr, 0x7f3996e08c00 + 31 * 4);
    // CTA (2,0,0), lanes 0..31, one warp instruction.
    assert_eq!((a[0].thread, a[31].thread), (64, 95));
    assert!(a
        .iter()
        .all(|x| x.dyn_inst == 0 && x.size == 4 && x.kind == AccessKind::Load));
}

#[test]
fn thesis_layout_and_grouping() {
    let rec = |sm: u64, ty: u64, size: u64, addr: u64, x: u64, y: u64| {
        let mut v = Vec::new();
        for w in [sm << 32 | ty << 28 | size, addr, x << 32 | y << 16] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v
    };
    let mut f = vec![24, b'\n'];
    f.extend_from_slice(b"k1\n");
    f.extend(rec(1, 0, 4, 0x100, 0, 1));
    f.extend(rec(1, 0, 4, 0x104, 0, 1));
    f.extend(rec(1, 1, 4, 0x200, 0, 1)); // a store: a new warp instruction
    f.extend(rec(3, 2, 8, 0x300, 1, 0));
    f.extend([0u8; 24]);
    f.extend_from_slice(b"k2\n");
    f.extend(rec(0, 0, 4, 0x0, 0, 0));
    f.extend([0u8; 24]);
    let mut t = Trace::default();
    read_into(f.as_slice(), "t.trc", &mut t).unwrap();
    assert_eq!(t.kernels.len(), 2);
    let k = &t.kernels[0];
    assert_eq!(k.grid, Dim3::new(2, 2, 1));
    let d: Vec<_> = k
        .accesses()
        .map(|a| (a.thread, a.dyn_inst, a.kind))
        .collect();
    assert_eq!(d[0], (2 * 32, 0, AccessKind::Load));
    assert_eq!(d[1], (2 * 32 + 1, 0, AccessKind::Load));
    assert_eq!(d[2], (2 * 32, 1, AccessKind::Store));
    assert_eq!(d[3], (32, 2, AccessKind::Atomic(AtomicOp::Add)));
    assert_eq!(k.info.cta_sm, vec![0, 3, 1, 0]);
    // Streamed, kernel by kernel in lock-step, the same kernels.
    let path = scratch("memtrace", "thesis.trc", &f);
    let s = stream_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(s.trace, t);
    // Without the end record the kernel is truncated.
    let cut = &f[..f.len() - 24];
    let e = read_into(cut, "t.trc", &mut Trace::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("byte offset") && e.contains("end-of-kernel"),
        "{e}"
    );
}

#[test]
fn bad_records_are_rejected_with_offsets() {
    let good = encode_later(&[("k", vec![[4, 0x10, 0]])]);
    let mut t = Trace::default();
    read_into(good.as_slice(), "g", &mut t).unwrap();
    assert_eq!(t.kernels[0].len(), 1);
    let bad = encode_later(&[("k", vec![[3 << 28 | 4, 0x10, 0]])]);
    let e = read_into(bad.as_slice(), "b", &mut Trace::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("record type 3"), "{e}");
    let moved = encode_later(&[("k", vec![[4, 0x10, 0], [1 << 32 | 4, 0x10, 0]])]);
    let e = read_into(moved.as_slice(), "m", &mut Trace::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("SM 0 and on SM 1"), "{e}");
    for cut in 1..good.len() {
        if cut == 10 || cut == 14 {
            continue; // record boundaries: a shorter file that is still whole
        }
        assert!(
            read_into(&good[..cut], "c", &mut Trace::default()).is_err(),
            "cut {cut}"
        );
    }
}

/// A record: SM, type, size, address, CTA (x, y).
fn record(sm: u64, ty: u64, size: u64, addr: u64, x: u64, y: u64) -> [u64; 3] {
    [sm << 32 | ty << 28 | size, addr, x << 32 | y << 16]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(60))]
    /// Streamed in chunks, a file gives the kernels the whole read gives, and a failing file
    /// fails with the whole read's error.
    #[test]
    fn a_streamed_file_gives_the_kernels_read_whole(
        kernels in proptest::collection::vec(
            proptest::collection::vec(
                (0u64..3, 0u64..3, 0u64..4, 0u64..12, 1u64..70, proptest::prelude::any::<bool>()),
                1..40),
            1..4),
        seed in 0u64..1000,
        longest in proptest::prop_oneof![proptest::prelude::Just(1u16), 2u16..40],
    ) {
        let mut rng = crate::rng::Rng::new(seed);
        let mut named = Vec::new();
        for (i, runs) in kernels.iter().enumerate() {
            let mut recs = Vec::new();
            for &(x, y, ty, size, n, consecutive) in runs {
                // The SM follows the CTA, so the file is valid unless `ty` is 3.
                let sm = (x + 2 * y) % 3;
                // Up to 36 (type, size) pairs: more than the scan looks up without its map.
                let bytes = 4 * (size + 1);
                let base = rng.below(1 << 14);
                for j in 0..n {
                    // Consecutive addresses make runs where `longest` allows them.
                    let addr = if consecutive { base + j * bytes } else { rng.below(1 << 14) + j * 4 };
                    recs.push(record(sm, ty % 3 + (ty == 3) as u64 * 3, bytes, addr, x, y));
                }
            }
            named.push((format!("k{i}"), recs));
        }
        let named: Vec<(&str, Vec<[u64; 3]>)> = named.iter().map(|(n, r)| (n.as_str(), r.clone())).collect();
        let bytes = encode_later_runs(&named, longest);
        // Runs or not, the file holds the same kernels.
        if longest > 1 {
            let plain = encode_later(&named);
            let (mut a, mut b) = (Trace::default(), Trace::default());
            let (ra, rb) = (
                read_into(plain.as_slice(), "t", &mut a),
                read_into(bytes.as_slice(), "t", &mut b),
            );
            proptest::prop_assert_eq!(ra.is_ok(), rb.is_ok());
            proptest::prop_assert_eq!(a, b);
        }
        let path = scratch("memtrace", &format!("p{seed}.trc"), &bytes);
        let whole = {
            let mut t = Trace::default();
            read_into(bytes.as_slice(), &path.display().to_string(), &mut t).map(|()| t)
        };
        let streamed = stream_file(&path);
        std::fs::remove_file(&path).unwrap();
        match (whole, streamed) {
            (Ok(w), Ok(s)) => {
                proptest::prop_assert_eq!(&s.trace, &w);
                proptest::prop_assert_eq!(s.whole, 0);
                let rows: usize = w.kernels.iter().map(|k| k.len()).sum();
                proptest::prop_assert_eq!(s.issued.iter().sum::<usize>(), rows);
            }
            (Err(w), Err(s)) => proptest::prop_assert_eq!(s.to_string(), w.to_string()),
            (w, s) => proptest::prop_assert!(false, "whole {:?}, streamed {:?}", w.map(|_| ()), s.map(|_| ())),
        }
    }
}

#[test]
fn a_long_kernel_comes_in_chunks_and_a_pipe_whole() {
    let recs: Vec<[u64; 3]> = (0..150_000u64)
        .map(|i| record(i / 1000 % 4, 0, 4, 0x1000 + 4 * i, i / 1000, 0))
        .collect();
    let bytes = encode_later(&[("long", recs), ("short", vec![record(0, 1, 8, 0x40, 0, 0)])]);
    let path = scratch("memtrace", "long.trc", &bytes);
    let s = stream_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(s.issued, [65536, 65536, 18928, 1]);
    let mut whole = Trace::default();
    read_into(bytes.as_slice(), "long.trc", &mut whole).unwrap();
    assert_eq!(s.trace, whole);
    assert_eq!(whole.kernels[0].grid, Dim3::x(150));
    // A stream that cannot be read twice comes a kernel at a time.
    let ctx = pipe();
    let mut p = Pieces::default();
    stream_into(bytes.as_slice(), &ctx, &mut p).unwrap();
    assert_eq!((p.whole, p.trace), (2, whole));
}

#[test]
fn a_file_that_changes_between_the_reads_is_an_error() {
    let first = encode_later(&[("k", vec![record(0, 0, 4, 0x10, 0, 0)])]);
    let path = scratch("memtrace", "changed.trc", &first);
    let ctx = file_ctx("changed.trc", &path, first.len() as u64);
    // The scan reads `first`; the second read finds a CTA outside the grid.
    std::fs::write(
        &path,
        encode_later(&[("k", vec![record(0, 0, 4, 0x10, 5, 0)])]),
    )
    .unwrap();
    let e = stream_into(first.as_slice(), &ctx, &mut Pieces::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed while it was read"), "{e}");
    std::fs::write(
        &path,
        encode_later(&[("j", vec![record(0, 0, 4, 0x10, 0, 0)])]),
    )
    .unwrap();
    let e = stream_into(first.as_slice(), &ctx, &mut Pieces::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed while it was read"), "{e}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_first_kernel_goes_on_after_its_own_scan_not_the_files() {
    // 16 kernels of 40,000 records (1 MB each): the first begins once it is scanned.
    let kernels: Vec<(String, Vec<[u64; 3]>)> = (0..16u64)
        .map(|k| {
            let recs = (0..40_000u64)
                .map(|i| record(i / 500 % 4, i % 2, 4, 0x1000 + 4 * i + k, i / 500, 0))
                .collect();
            (format!("k{k}"), recs)
        })
        .collect();
    let named: Vec<(&str, Vec<[u64; 3]>)> = kernels
        .iter()
        .map(|(n, r)| (n.as_str(), r.clone()))
        .collect();
    let bytes = encode_later(&named);
    let path = scratch("memtrace", "many.trc", &bytes);
    let read = crate::trace::testing::read_before_first_kernel(&path, false);
    let s = stream_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let len = bytes.len() as u64;
    assert!(len > 15 << 20, "{len}");
    // The scan's reader is at most a kernel and its buffers ahead; the rows' reader is at
    // the start.
    assert!(read < len / 4, "{read} of {len}");
    let mut whole = Trace::default();
    read_into(bytes.as_slice(), "many.trc", &mut whole).unwrap();
    assert_eq!(s.trace, whole);
}

#[test]
fn a_file_with_fewer_or_more_kernels_at_its_second_read_is_an_error() {
    let one = encode_later(&[("k", vec![record(0, 0, 4, 0x10, 0, 0)])]);
    let two = encode_later(&[
        ("k", vec![record(0, 0, 4, 0x10, 0, 0)]),
        ("j", vec![record(0, 0, 4, 0x10, 0, 0)]),
    ]);
    for (first, second) in [(&two, &one), (&one, &two)] {
        let path = scratch("memtrace", "kernels.trc", second);
        let ctx = file_ctx("kernels.trc", &path, first.len() as u64);
        let e = stream_into(first.as_slice(), &ctx, &mut Pieces::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("changed while it was read"), "{e}");
        std::fs::remove_file(&path).unwrap();
    }
}

/// What a streamed read hands on, in order.
#[derive(Default)]
struct Log(Vec<Event>);

#[derive(Debug, PartialEq)]
enum Event {
    Begin(String),
    Issued(crate::trace::Columns),
    End,
}

impl crate::trace::KernelSink for Log {
    fn kernel(&mut self, _: crate::trace::Kernel) -> Result<(), TraceError> {
        unreachable!("streamed in chunks")
    }
}

impl crate::trace::CtaSink for Log {
    fn begin_kernel(&mut self, header: &crate::trace::Kernel) -> Result<(), TraceError> {
        self.0.push(Event::Begin(header.name.clone()));
        Ok(())
    }
    fn cta(&mut self, _: u32, _: &crate::trace::Columns) -> Result<(), TraceError> {
        unreachable!("issued rows")
    }
    fn issued(&mut self, rows: &crate::trace::Columns) -> Result<(), TraceError> {
        let mut copy = crate::trace::Columns::default();
        copy.extend_from(rows, 0..rows.len());
        self.0.push(Event::Issued(copy));
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.0.push(Event::End);
        Ok(())
    }
}

/// Read on from any chunk of any kernel, a file of either layout hands on exactly what the
/// read from its start hands on after that chunk.
#[test]
fn read_on_from_a_chunk_gives_what_the_whole_stream_gives_after_it() {
    // Three kernels of 150,000, 70,000 and 140,000 records: 3, 2 and 3 chunks.
    let kernels: Vec<(String, Vec<[u64; 3]>)> = [150_000u64, 70_000, 140_000]
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let recs = (0..n)
                .map(|i| {
                    record(
                        i / 200 % 4,
                        i % 3 / 2,
                        4,
                        0x1000 + 4 * i + k as u64,
                        i / 200 % 40,
                        0,
                    )
                })
                .collect();
            (format!("k{k}"), recs)
        })
        .collect();
    let later = encode_later(
        &kernels
            .iter()
            .map(|(n, r)| (n.as_str(), r.clone()))
            .collect::<Vec<_>>(),
    );
    let mut thesis = vec![24, b'\n'];
    for (name, recs) in &kernels {
        thesis.extend_from_slice(format!("{name}\n").as_bytes());
        for r in recs {
            for w in r {
                thesis.extend_from_slice(&w.to_le_bytes());
            }
        }
        thesis.extend([0u8; 24]);
    }
    for (layout, bytes) in [("later", later), ("thesis", thesis)] {
        let path = scratch("memtrace", &format!("resume-{layout}.trc"), &bytes);
        let ctx = file_ctx("r.trc", &path, bytes.len() as u64);
        let mut all = Log::default();
        stream_into(bytes.as_slice(), &ctx, &mut all).unwrap();
        // The place after each chunk: (kernel, chunks of it so far, events so far).
        let mut places = Vec::new();
        let (mut kernel, mut chunks) = (0u32, 0u32);
        for (i, e) in all.0.iter().enumerate() {
            match e {
                Event::Begin(_) => chunks = 0,
                Event::Issued(_) => {
                    chunks += 1;
                    places.push((kernel, chunks, i + 1));
                }
                Event::End => kernel += 1,
            }
        }
        assert_eq!(places.len(), 8, "{layout}");
        for (kernel, next_chunk, seen) in places {
            let mut rest = Log::default();
            stream_from(bytes.as_slice(), &ctx, kernel, next_chunk, &mut rest).unwrap();
            assert!(
                rest.0 == all.0[seen..],
                "{layout}: from kernel {kernel} chunk {next_chunk}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// Read on from a chunk the kernel no longer has (the file changed since the run), the read
/// is an error, not a shorter kernel.
#[test]
fn read_on_from_a_chunk_past_the_kernels_end_is_an_error() {
    let recs: Vec<[u64; 3]> = (0..70_000u64)
        .map(|i| record(0, 0, 4, 0x1000 + 4 * i, i / 1000, 0))
        .collect();
    let bytes = encode_later(&[("k", recs)]);
    let path = scratch("memtrace", "past.trc", &bytes);
    let ctx = file_ctx("past.trc", &path, bytes.len() as u64);
    // Two chunks: 65,536 rows and 4,464.
    let mut rest = Log::default();
    stream_from(bytes.as_slice(), &ctx, 0, 2, &mut rest).unwrap();
    assert_eq!(rest.0, [Event::End]);
    let e = stream_from(bytes.as_slice(), &ctx, 0, 3, &mut Log::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed while it was read"), "{e}");
    let e = stream_from(bytes.as_slice(), &ctx, 1, 1, &mut Log::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("fewer kernels"), "{e}");
    std::fs::remove_file(&path).unwrap();
}
