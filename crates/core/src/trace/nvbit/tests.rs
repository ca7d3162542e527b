//! The NVBit reader: lines, errors, and the streamed read against the whole one.

use super::*;
use crate::trace::testing::{
    pipe, read_before_first_kernel, scratch, stream_file, stream_file_once, Pieces,
};
use crate::trace::Trace;

fn addrs(base: u64, step: u64, active: u32) -> String {
    (0..32u64)
        .map(|l| {
            if l < active as u64 {
                format!("0x{:016x}", base + l * step)
            } else {
                "0x0000000000000000".into()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn reads_launches_and_accesses_skipping_application_output() {
    let text = format!(
        "app says hi\nMEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 2,1,1 - block size 40,1,1 - nregs 20 - shmem 0 - cuda stream id 9\nresult = 5\nMEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 1,0,0 - warp 26 - LDG.E.64 - {}\nMEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 1,0,0 - warp 7 - STG.E - {}\n",
        addrs(0x1000, 8, 32),
        addrs(0x2000, 4, 8),
    );
    let mut t = Trace::default();
    read_into(text.as_bytes(), "m.log", &mut t).unwrap();
    let k = &t.kernels[0];
    assert_eq!(k.order, Order::Issued);
    assert_eq!(k.len(), 40);
    let a: Vec<_> = k.accesses().collect();
    // Slot 26 is the CTA's first warp (threads 40..72), slot 7 its second (72..80).
    assert_eq!((a[0].thread, a[0].addr, a[0].size), (40, 0x1000, 8));
    assert_eq!((a[32].thread, a[32].addr, a[32].size), (72, 0x2000, 4));
    assert!(a[32].kind.is_write());
    assert_eq!(k.info.attribute("nregs"), Some("20"));
}

#[test]
fn the_real_excerpt_is_rejected_with_the_line_because_its_launch_is_missing() {
    // Two lines from two different runs: the access's launch id 0 was never launched.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/real-traces/nvbit_mem_trace_excerpts.txt"
    );
    let Ok(text) = std::fs::read(file) else {
        return;
    };
    let mut t = Trace::default();
    let e = read_into(text.as_slice(), "x.txt", &mut t)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("grid launch id 0"),
        "{e}"
    );
}

#[test]
fn malformed_lines_are_errors() {
    let launch = "MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 1,1,1 - block size 32,1,1 - nregs 20 - shmem 0 - cuda stream id 9\n";
    for (line, want) in [
        (
            "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 5,0,0 - warp 1 - LDG.E - 0x1",
            "inside the grid",
        ),
        (
            "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp 1 - LDG.E - 0x1 0x2",
            "expected 32 addresses",
        ),
        (
            "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp x - LDG.E - 0x1",
            "warp",
        ),
        (
            "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp 1 - LDG.E - 0xzz",
            "hex address",
        ),
    ] {
        let mut t = Trace::default();
        let e = read_into(format!("{launch}{line}\n").as_bytes(), "f", &mut t)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f: line 2") && e.contains(want),
            "{line}: {e}"
        );
    }
    assert_eq!(size_of(b"LDG.E.128"), 16);
    assert_eq!(size_of(b"LDG.E.U8"), 1);
    assert_eq!(size_of(b"LDG.E"), 4);
}

const OPCODES: [&str; 4] = ["LDG.E", "STG.E.64", "LDG.E.U8", "ATOMG.E.ADD"];

/// A test launch: (grid x, grid y, threads per block) and its access lines (CTA x, CTA y,
/// warp slot, opcode, active lanes), as the proptest draws them.
type TestLaunch = ((u64, u64, u64), Vec<(u64, u64, u64, usize, u64)>);

/// How a test log orders its launches' access lines.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Runs {
    InOrder,
    Shuffled,
    Reversed,
}

/// A log of `launches` (grid x, grid y, threads per block) and their access lines (CTA x, CTA
/// y, warp slot, opcode, active lanes), the access lines of each
/// launch in one run after its LAUNCH line, or in `Lines::Shuffled` interleaved at random, or
/// in `Lines::Reversed` one run each but the last launch's first. `bad` spoils the address of
/// one line.
fn log(launches: &[TestLaunch], order: Runs, bad: Option<usize>, seed: u64) -> String {
    let mut out = String::from("application output\n");
    let mut lines: Vec<String> = Vec::new();
    let mut runs: Vec<Vec<String>> = Vec::new();
    for (id, ((gx, gy, tpb), warps)) in launches.iter().enumerate() {
        out.push_str(&format!("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x{id:x} - Kernel name k{id} - grid launch id {id} - grid size {gx},{gy},1 - block size {tpb},1,1 - nregs 20 - shmem 0 - cuda stream id 0\n"));
        for (j, &(x, y, slot, op, active)) in warps.iter().enumerate() {
            let wpc = tpb.div_ceil(32);
            // Slots beyond the CTA's warps and lanes beyond its threads are refused; let a
            // few through.
            let slot = if slot == 63 { 7 } else { (slot % wpc) * 3 + 1 };
            let active = match active {
                0..=5 => 0,
                19 => 32,
                _ if tpb % 32 == 0 && active % 2 == 0 => 32,
                _ => 8,
            };
            let base = 0x1000 * (1 + (seed + j as u64) % 9);
            lines.push(format!(
                "MEMTRACE: CTX 0x1 - grid_launch_id {id} - CTA {},{},0 - warp {slot} - {} - {}\n",
                x % gx,
                y % gy,
                OPCODES[op],
                addrs(base, 4, active),
            ));
        }
        match order {
            Runs::InOrder => out.extend(lines.drain(..)),
            Runs::Reversed => runs.insert(0, std::mem::take(&mut lines)),
            Runs::Shuffled => {}
        }
    }
    if order == Runs::Shuffled {
        let mut rng = crate::rng::Rng::new(seed);
        for i in (1..lines.len()).rev() {
            lines.swap(i, rng.below(i as u64 + 1) as usize);
        }
        out.extend(lines.drain(..));
    }
    out.extend(runs.into_iter().flatten());
    if let Some(b) = bad {
        let n = out.lines().count();
        let target = b % n;
        out = out
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == target && l.contains(" - warp ") {
                    format!("{}\n", l.replacen("0x0000", "0xzz00", 1))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(120))]
    /// Streamed in chunks, a log gives the kernels the whole read gives (launches that
    /// interleave too), and a failing log fails with the whole read's error.
    #[test]
    fn a_streamed_log_gives_the_kernels_read_whole(
        launches in proptest::collection::vec(
            (
                (1u64..4, 1u64..3, proptest::sample::select(vec![8u64, 32, 40, 64, 96])),
                proptest::collection::vec((0u64..4, 0u64..3, 0u64..64, 0usize..4, 0u64..20), 0..30),
            ),
            1..4),
        order in proptest::sample::select(vec![Runs::InOrder, Runs::InOrder, Runs::Shuffled, Runs::Reversed]),
        bad in proptest::option::weighted(0.15, 0usize..200),
        seed in 0u64..1000,
    ) {
        let text = log(&launches, order, bad, seed);
        let path = scratch("nvbit", &format!("p{seed}.log"), text.as_bytes());
        let name = path.display().to_string();
        let whole = {
            let mut t = Trace::default();
            read_into(text.as_bytes(), &name, &mut t).map(|()| t)
        };
        let streamed = stream_file(&path);
        let once = stream_file_once(&path);
        std::fs::remove_file(&path).unwrap();
        // Read once for a receiver that takes instructions as they are found: the same
        // kernels, or the same error, or a request to read again where launches interleave.
        match (&whole, once) {
            (_, Err(e)) if e.must_read_again() => {
                proptest::prop_assert!(order != Runs::InOrder && launches.len() > 1, "{}", e);
                proptest::prop_assert!(streamed.as_ref().is_ok_and(|s| s.whole == 0) || whole.is_err());
            }
            (Ok(w), Ok(o)) => {
                proptest::prop_assert_eq!(&o.trace, w);
                proptest::prop_assert_eq!(o.whole, 0);
                let insts: usize = w.kernels.iter().map(|k| k.instructions.len()).sum();
                // The first instruction of each launch with rows comes in its header.
                let with_rows = w.kernels.iter().filter(|k| !k.instructions.is_empty()).count();
                proptest::prop_assert_eq!(o.more, insts - with_rows);
            }
            (Err(w), Err(o)) => proptest::prop_assert_eq!(o.to_string(), w.to_string()),
            (w, o) => proptest::prop_assert!(false, "whole {:?}, once {:?}", w.as_ref().map(|_| ()), o.map(|_| ())),
        }
        match (whole, streamed) {
            (Ok(w), Ok(s)) => {
                proptest::prop_assert_eq!(&s.trace, &w);
                // Launches that interleave too are handed on in chunks, never whole.
                let rows: usize = w.kernels.iter().map(|k| k.len()).sum();
                proptest::prop_assert_eq!(s.whole, 0);
                proptest::prop_assert_eq!(s.issued.iter().sum::<usize>(), rows);
            }
            (Err(w), Err(s)) => proptest::prop_assert_eq!(s.to_string(), w.to_string()),
            (w, s) => proptest::prop_assert!(false, "whole {:?}, streamed {:?}", w.map(|_| ()), s.map(|_| ())),
        }
    }
}

/// A launch line and `n` access lines of `ctas` CTAs of 256 threads, every lane active.
fn long_launch(id: u64, ctas: u64, n: u64) -> String {
    let mut s = format!("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name long - grid launch id {id} - grid size {ctas},1,1 - block size 256,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n");
    for i in 0..n {
        s.push_str(&format!(
            "MEMTRACE: CTX 0x1 - grid_launch_id {id} - CTA {},0,0 - warp {} - {} - {}\n",
            i / 8 % ctas,
            i % 8,
            OPCODES[(i % 2) as usize],
            addrs(0x1000 + 128 * i, 4, 32)
        ));
    }
    s
}

#[test]
fn a_long_launch_comes_in_chunks_empty_launches_too_and_a_pipe_whole() {
    // Launch 1 has no access line: an empty kernel between the two.
    let empty = "MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x9 - Kernel name none - grid launch id 1 - grid size 1,1,1 - block size 32,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n";
    let text = format!(
        "{}{empty}{}",
        long_launch(0, 64, 5000),
        long_launch(2, 4, 3)
    );
    let path = scratch("nvbit", "long.log", text.as_bytes());
    let s = stream_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    // 160,000 rows of launch 0, cut after the line that fills a chunk.
    assert_eq!(s.issued, [65536, 65536, 28928, 96]);
    let mut whole = Trace::default();
    read_into(text.as_bytes(), "long.log", &mut whole).unwrap();
    assert_eq!(s.trace, whole);
    assert_eq!(whole.kernels.len(), 3);
    assert!(whole.kernels[1].is_empty());
    // Read once, the same pieces: each launch's second opcode comes as a new instruction,
    // and the chunks stay whole.
    let path = scratch("nvbit", "long1.log", text.as_bytes());
    let once = stream_file_once(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        (&once.trace, &once.issued, once.more),
        (&whole, &s.issued, 2)
    );
    // Read once, the first launch begins after its first lines; read twice, after the scan
    // of the whole log.
    let path = scratch("nvbit", "long2.log", text.as_bytes());
    let (once, twice) = (
        read_before_first_kernel(&path, true),
        read_before_first_kernel(&path, false),
    );
    std::fs::remove_file(&path).unwrap();
    assert!(once < text.len() as u64 / 10, "{once} of {}", text.len());
    assert!(twice >= text.len() as u64, "{twice} of {}", text.len());
    // A stream that cannot be read twice is read whole.
    let ctx = pipe();
    let mut p = Pieces::default();
    stream_into(text.as_bytes(), &ctx, &mut p).unwrap();
    assert_eq!((p.whole, p.trace), (3, whole));
}

/// Launches whose lines interleave (kernels on concurrent streams) are handed on a launch at
/// a time in launch order, in the same chunks as launches that do not: the rows of the later
/// launch wait on disk past a chunk until the first ends.
#[test]
fn launches_that_interleave_come_in_chunks_in_launch_order() {
    let a = long_launch(0, 64, 5000);
    let b = long_launch(1, 16, 4000);
    let (mut a, mut b) = (a.lines(), b.lines());
    let mut text = String::new();
    for l in [a.next(), b.next()].into_iter().flatten() {
        text.push_str(l);
        text.push('\n');
    }
    // Launch 1's lines come between launch 0's, then launch 0's last ones alone.
    loop {
        let (x, y) = (a.next(), b.next());
        if x.is_none() && y.is_none() {
            break;
        }
        for l in [x, y].into_iter().flatten() {
            text.push_str(l);
            text.push('\n');
        }
    }
    text.push_str(&long_launch(2, 4, 3));
    let path = scratch("nvbit", "interleaved.log", text.as_bytes());
    let s = stream_file(&path).unwrap();
    let mut whole = Trace::default();
    read_into(text.as_bytes(), "interleaved.log", &mut whole).unwrap();
    assert_eq!(s.trace, whole);
    assert_eq!(s.whole, 0);
    // 160,000 rows of launch 0, 128,000 of launch 1 (kept on disk while launch 0 went on),
    // 96 of launch 2.
    assert_eq!(s.issued, [65536, 65536, 28928, 65536, 62464, 96]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_too_sparse_launch_fails_as_read_whole_after_every_line_error() {
    let sparse = "MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x9 - Kernel name wide - grid launch id 9 - grid size 2000000,1,1 - block size 32,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n";
    let good = long_launch(0, 2, 4);
    for text in [
        format!("{good}{sparse}"),
        // A bad address after the sparse launch is the error: lines are checked first.
        format!("{sparse}{good}").replacen("0x0000", "0xzz00", 1),
    ] {
        let path = scratch("nvbit", "sparse.log", text.as_bytes());
        let name = path.display().to_string();
        let s = stream_file(&path).map(|_| ()).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        let w = read_into(text.as_bytes(), &name, &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert_eq!(s, w);
        assert!(w.contains("too sparse") || w.contains("hex address"), "{w}");
        // Read once, a launch of 2,000,000 CTAs cannot be begun before its rows are counted.
        let path = scratch("nvbit", "sparse.log", text.as_bytes());
        let once = stream_file_once(&path).map(|_| ()).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(once.must_read_again(), "{once}");
        assert!(once.to_string().contains("2000000 CTAs"), "{once}");
    }
}

#[test]
fn a_file_that_changes_between_the_reads_is_an_error() {
    let first = long_launch(0, 2, 4);
    let path = scratch("nvbit", "changed.log", first.as_bytes());
    let ctx = crate::trace::testing::file_ctx("changed.log", &path, first.len() as u64);
    // The scan reads `first`; the second read finds one line more, then another launch.
    for later in [long_launch(0, 2, 5), long_launch(3, 2, 4)] {
        std::fs::write(&path, &later).unwrap();
        let e = stream_into(first.as_bytes(), &ctx, &mut Pieces::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("changed while it was read"), "{e}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn fields_split_on_each_dash_separator_once() {
    let parts = split_dash(b"CTX 0x1 - LAUNCH - a - - b -  - c - ");
    assert_eq!(
        parts,
        [&b"CTX 0x1"[..], b"LAUNCH", b"a", b"- b", b"", b"c", b""]
    );
    assert_eq!(split_dash(b"no separator"), [&b"no separator"[..]]);
}
