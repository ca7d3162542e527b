use super::*;
use crate::trace::sink::{Assemble, Counting};
use crate::trace::Trace;

/// A trace of four kernels: rows of CTAs and threads interleaved, barriers, instructions
/// declared before, named first by rows, and declared after their first row, `attr` and
/// `cta-sm` lines among the rows; per-thread, per-warp and issued order; and an empty kernel.
fn sample(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut s = String::from("# warpscope text trace v1\n");
    for (k, order) in ["thread", "warp", "issued"].iter().enumerate() {
        s.push_str(&format!(
            "kernel k{k} grid=3,2 block=8,4 order={order}\ninst a pc=0x10\n"
        ));
        for i in 0..400 {
            let r = next();
            let (cta, t) = (
                format!("{},{}", r % 3, (r >> 2) % 2),
                format!("{},{}", (r >> 4) % 8, (r >> 7) % 4),
            );
            match (r >> 9) % 9 {
                0 => s.push_str(&format!("{cta} {t} bar\n")),
                1 if i % 50 == 0 => s.push_str(&format!("inst late{i} pc=0x{i:x} line=7\n")),
                2 if i % 60 == 0 => s.push_str(&format!("attr note {i}\n")),
                3 if i % 40 == 0 => s.push_str(&format!("cta-sm {cta} {}\n", i % 5)),
                v => {
                    let inst = ["a", "b", "c", "late50", "d"][v as usize % 5];
                    let kind = ["ld", "st", "atom.add"][(r >> 14) as usize % 3];
                    let space = ["", " shared", " global"][(r >> 16) as usize % 3];
                    s.push_str(&format!(
                        "{cta} {t} {inst} {} {kind} 0x{:x} {}{space}\n",
                        (r >> 20) % 6,
                        (r >> 24) % 100_000,
                        [4, 8][(r >> 40) as usize % 2]
                    ));
                }
            }
        }
    }
    s.push_str("kernel empty grid=1 block=1\n");
    s
}

/// Streams `text` through a sort of `cap` rows: the trace built from the pieces, or the
/// error and how many kernels were begun or handed on before it.
fn streamed(text: &str, cap: usize) -> Result<Trace, (TraceError, usize)> {
    let mut t = Trace::default();
    let mut assemble = Assemble::new(&mut t);
    let mut counting = Counting {
        inner: &mut assemble,
        kernels: 0,
    };
    let result = stream_into(text.as_bytes(), "t.wst", cap, &mut counting);
    let handed = counting.kernels;
    match result {
        Ok(()) => Ok(t),
        Err(e) => Err((e, handed)),
    }
}

#[test]
fn streamed_text_equals_the_whole_read() {
    for seed in 1..5 {
        let text = sample(seed);
        let want = super::super::read(text.as_bytes(), "t.wst").unwrap();
        assert_eq!(want.kernels.len(), 4);
        assert_eq!(want.kernels[2].order, Order::Issued);
        // A buffer of 1 row spills every row; 50 makes several runs; 2^20 sorts in memory.
        for cap in [1, 50, 1 << 20] {
            let got = streamed(&text, cap).map_err(|e| e.0).unwrap();
            assert_eq!(got, want, "sort of {cap} rows:\n{text}");
        }
    }
}

#[test]
fn an_error_names_its_line_after_the_kernels_before_it() {
    let text = sample(3);
    let lines = text.lines().count();
    let bad = format!("{text}kernel k9 grid=1 block=2\n0 1 a 0 ld 0x40 0\n");
    for cap in [1, 1 << 20] {
        let (e, handed) = streamed(&bad, cap).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains(&format!("t.wst: line {}", lines + 2)) && e.contains("size"),
            "{e}"
        );
        // The four kernels before it, none of the bad one.
        assert_eq!(handed, 4);
    }
    // A thread outside the block is refused as the whole read refuses it.
    let (e, _) = streamed("kernel k grid=1 block=2\n0 2 a 0 ld 0x40 4\n", 4).unwrap_err();
    assert!(
        e.to_string().contains("line 2") && e.to_string().contains("outside the block"),
        "{e}"
    );
}
