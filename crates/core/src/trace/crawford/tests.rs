//! The Crawford reader: the paper's listing, errors, and the streamed read against the whole one.

use super::*;
use crate::trace::testing::Pieces;
use crate::trace::Trace;

/// Listing 5.1 of Crawford 2014 plus the end marker.
const LISTING: &str = "local size:16 16 1\n0x9CAE000F0000319|0x0|0x10000000000\n0x9CAE000F0000319|0x10|0x10000000000\n0x9CBB000F000031A|0x0|0x10000000000\n0x9CBB040F000031A|0x10|0x10000000000\n0x9CAE004F0000319|0x0|0x20000000000\n0x9CAE004F0000319|0x10|0x20000000000\n0x9CBB1C0F000031A|0x0|0x20000000000\n0x9CBB200F000031A|0x10|0x20000000000\n0x1|0x10|0x0\n--\n";

#[test]
fn decodes_listing_5_1() {
    let mut t = Trace::default();
    read_into(LISTING.as_bytes(), "l.trace", &mut t).unwrap();
    let k = &t.kernels[0];
    assert_eq!(k.block, Dim3::new(16, 16, 1));
    // Thread ids 0 and 16 (x): work-groups 0 and 1.
    assert_eq!(k.grid, Dim3::new(2, 1, 1));
    let names: Vec<_> = k.instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["M1", "M2"]);
    let a: Vec<_> = k.accesses().collect();
    // Thread 0's rows: M1 iter 1, M2 iter 1, M1 iter 2, M2 iter 2.
    let t0: Vec<_> = a
        .iter()
        .filter(|x| x.thread == 0)
        .map(|x| (x.inst, x.dyn_inst, x.addr))
        .collect();
    assert_eq!(
        t0,
        vec![
            (0, 0, 0x9CAE000),
            (1, 0, 0x9CBB000),
            (0, 1, 0x9CAE004),
            (1, 1, 0x9CBB1C0)
        ]
    );
    // Thread 16 is thread 0 of CTA 1 (linear id 256), ending with the barrier.
    let t16: Vec<_> = a
        .iter()
        .filter(|x| x.thread == 256)
        .map(|x| x.kind)
        .collect();
    assert_eq!(t16.len(), 5);
    assert_eq!(t16[4], AccessKind::Barrier);
    assert!(a.iter().all(|x| x.kind != AccessKind::Store));
}

#[test]
fn missing_end_marker_and_bad_fields_are_errors() {
    let cut = LISTING.trim_end_matches("--\n");
    let e = read_into(cut.as_bytes(), "c", &mut Trace::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `--` end marker"), "{e}");
    for (line, want) in [
        ("0x9CAE0001000031A|0x0|0x1", "type nibble"),
        ("0x9CAE000F000031A|0xZZ|0x1", "thread id: expected hex"),
        ("0x9CAE000F000031A", "expected `ADDR-TYPE-INST"),
        ("0x9CAE000F000031A|0x0", "loop snapshot"),
    ] {
        let text = format!("local size:4\n{line}\n--\n");
        let e = read_into(text.as_bytes(), "f", &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f: line 2") && e.contains(want),
            "{line}: {e}"
        );
    }
    assert_eq!(base36(0x319), "M1");
    assert_eq!(base36(22 * 1296 + 36), "M10");
}

#[test]
fn executions_become_launches() {
    let text = "local size:2\n0x10F0000319|0x0|0x0\n--\n0x20A0000319|0x3|0x0\n--\n";
    let mut t = Trace::default();
    read_into(text.as_bytes(), "e", &mut t).unwrap();
    assert_eq!(t.kernels.len(), 2);
    assert_eq!(t.kernels[1].grid, Dim3::x(2));
    assert_eq!(t.kernels[1].access(0).kind, AccessKind::Store);
    assert_eq!(t.kernels[1].access(0).addr, 0x20);
}

/// Reads `text` whole and streamed through a sort of `cap` rows a run.
fn both(text: &str, cap: usize) -> (Result<Trace, String>, Result<Pieces, String>) {
    let mut whole = Trace::default();
    let whole = read_into(text.as_bytes(), "c.trace", &mut whole)
        .map(|()| whole)
        .map_err(|e| e.to_string());
    let mut p = Pieces::default();
    let streamed = stream_into(text.as_bytes(), "c.trace", cap, &mut p)
        .map(|()| p)
        .map_err(|e| e.to_string());
    (whole, streamed)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(150))]
    /// Sorted in runs of any size and handed on CTA by CTA, a trace gives the kernels read
    /// whole, and a failing one its error.
    #[test]
    fn streamed_through_an_external_sort_equals_read_whole(
        execs in proptest::collection::vec(
            proptest::collection::vec(
                ((0u64..20, 0u64..3, 0u64..2), 0x319u64..0x31e, 0u64..5, proptest::bool::ANY, proptest::bool::weighted(0.1)),
                0..60),
            1..4),
        block in (1u32..5, 1u32..3, 1u32..3),
        cap in 1usize..50,
        bad in proptest::option::weighted(0.1, 0usize..100),
        truncated in proptest::bool::weighted(0.1),
    ) {
        let mut text = format!("local size:{} {} {}\n", block.0, block.1, block.2);
        let mut line = 0;
        for recs in &execs {
            for &((x, y, z), code, loops, store, barrier) in recs {
                line += 1;
                if bad == Some(line) {
                    text.push_str("0x9CAE0001000031A|0x0|0x1\n");
                }
                let gid = x | y << 20 | z << 40;
                if barrier {
                    text.push_str(&format!("0x2|{gid:#x}|0x0\n"));
                } else {
                    let a = 0x1000u64 + 4 * code + (loops << 4);
                    let ty = if store { 0xA } else { 0xF };
                    // Outer loop sections first: the snapshot's top bits.
                    text.push_str(&format!("{:#x}|{gid:#x}|{:#x}\n", a << 32 | ty << 28 | code, (loops + 1) << 40 | (loops % 2) << 20));
                }
            }
            text.push_str("--\n");
        }
        if truncated {
            text.push_str("0x10F0000319|0x0|0x0\n");
        }
        match both(&text, cap) {
            (Ok(w), Ok(s)) => {
                proptest::prop_assert_eq!(&s.trace, &w);
                proptest::prop_assert_eq!(s.whole, 0);
            }
            (Err(w), Err(s)) => proptest::prop_assert_eq!(s, w),
            (w, s) => proptest::prop_assert!(false, "whole {:?}, streamed {:?}", w.map(|_| ()), s.map(|_| ())),
        }
    }
}
