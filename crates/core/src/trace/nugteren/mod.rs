//! Nugteren et al.'s (2014) trace format (the `.trc` files of Nugteren et al.'s released GPU cache model):
//!
//! ```text
//! blocksize: 16 16 1
//! 0 0 268435456 4
//! 0 0 268435968 4
//! 1 1 268436000 4
//! ```
//!
//! After the header, one access per line: `tid dir addr bytes` in decimal, `dir` 0 for a load
//! and 1 for a store, `tid` a flat global thread id (`block * threads_per_block + local`).
//! Only the order within a thread is meaningful. The kernel gets a 1-D grid of as many blocks
//! as the largest thread id needs; a thread's k-th load is instance k of instruction `load`
//! and its k-th store instance k of instruction `store`, so a warp's k-th loads issue
//! together, as in the released model.

use std::io::{BufRead, Write};

use super::model::{
    Access, AccessKind, Columns, Dim3, Kernel, KernelBuilder, MemSpace, Order, Trace,
};
use super::{Location, TraceError};

mod stream;
mod walk;

use walk::{walk, Line};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "nugteren",
    aliases: &[],
    label: "Nugteren et al.",
    description: "Nugteren et al.'s (2014) .trc format (blocksize: X Y Z, then tid dir addr bytes)",
    form: Form::Plain(super::Format::Nugteren),
};

/// The kernel's header (no rows): a 1-D grid of as many blocks as thread `max_tid` needs,
/// and the instructions `load` (0) and `store` (1). `rows` must not be too many for it.
fn header(block: Dim3, max_tid: u32, rows: u64, file: &str) -> Result<KernelBuilder, TraceError> {
    let err = |msg: String| TraceError::parse(file, Location::Line(0), msg);
    let blocks = (max_tid as u64 / block.count() + 1) as u32;
    super::check_density(Dim3::x(blocks), block, rows as usize, Order::PerThread)
        .map_err(|e| err(e.to_string()))?;
    let mut b = KernelBuilder::new("kernel", Dim3::x(blocks), block, Order::PerThread)
        .map_err(|e| err(e.to_string()))?;
    b.instruction("load", None);
    b.instruction("store", None);
    Ok(b)
}

/// The access of a load or store: a thread's k-th load is instance k of `load`, its k-th
/// store instance k of `store`; `counts` are the thread's loads and stores before it.
fn access(thread: u32, store: bool, addr: u64, size: u16, counts: &mut (u32, u32)) -> Access {
    let (inst, dyn_inst) = if store {
        counts.1 += 1;
        (1, counts.1 - 1)
    } else {
        counts.0 += 1;
        (0, counts.0 - 1)
    };
    Access {
        thread,
        inst,
        dyn_inst,
        addr,
        size,
        kind: if store {
            AccessKind::Store
        } else {
            AccessKind::Load
        },
        space: MemSpace::Global,
    }
}

/// Reads the file whole: one kernel.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    let err = |msg: String| TraceError::parse(file, Location::Line(0), msg);
    let mut rows: Vec<Line> = Vec::new();
    let walked = walk(r, file, |_, l| {
        rows.push(l);
        Ok(())
    })?;
    let mut b = header(walked.block, walked.max_tid, rows.len() as u64, file)?;
    b.reserve(rows.len());
    // Per-thread counts of loads and stores.
    let mut counts = vec![(0u32, 0u32); b.threads() as usize];
    for (tid, store, addr, size) in rows {
        b.push(access(tid, store, addr, size, &mut counts[tid as usize]))
            .map_err(|e| err(e.to_string()))?;
    }
    Ok(Trace {
        kernels: vec![b.finish_checked().map_err(|e| err(e.to_string()))?],
    })
}

/// Writes one kernel in this format, so that the released model can read it: global and local
/// loads as direction 0, stores and atomics as 1, in each thread's order; barriers and
/// accesses to other spaces (which bypass the L1) are left out, as the released tracer does.
pub fn write<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    write_header(k, w)?;
    write_rows(k.columns(), w)
}

/// Writes the line that starts a kernel's file: its block size.
pub fn write_header<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    let b = k.block;
    writeln!(w, "blocksize: {} {} {}", b.x, b.y, b.z)
}

/// Writes rows of a kernel after [`write_header`], as [`write()`] writes them.
pub fn write_rows<W: Write>(cols: &Columns, w: &mut W) -> std::io::Result<()> {
    for i in 0..cols.len() {
        let (kind, space) = super::model_flags(cols.flags[i]);
        if kind == AccessKind::Barrier || !space.reaches_l1() {
            continue;
        }
        writeln!(
            w,
            "{} {} {} {}",
            cols.thread[i],
            kind.is_write() as u8,
            cols.addr[i],
            cols.size[i]
        )?;
    }
    Ok(())
}

/// Nugteren et al.'s format's reader: per-thread streams, handed on CTA by CTA as the file is
/// read (once, the grid from its last line, for a receiver that can have it read again;
/// else a second time), or after an external sort where its CTAs are out of order
/// (`stream.rs`).
pub(crate) struct NugterenReader;

impl super::reader::TraceReader for NugterenReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::KernelSink,
    ) -> Result<(), TraceError> {
        super::sink::hand_on(read(r, cx.file)?, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        let cap = super::spill::DEFAULT_CAP;
        if out.takes_more_instructions() {
            // A receiver that can have the file read again: one walk, the grid from the
            // last line; a compressed file (no last line without reading it all) is sorted.
            return match stream::last_thread(cx.path) {
                Some(last) => stream::once(r, cx.file, last, cx.file_bytes / 8, out),
                None => stream::sorted(r, cx.file, cap, out),
            };
        }
        let again = || Ok(super::source::open(cx.path, cx.wrap, cx.watch)?.reader);
        let again: Option<&dyn Fn() -> Result<super::reader::Input, TraceError>> =
            (cx.file_bytes > 0).then_some(&again);
        stream::stream(r, cx.file, cap, again, out)
    }
    fn streamed_reads(&self, as_found: bool) -> u64 {
        if as_found {
            1
        } else {
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::Pieces;

    #[test]
    fn reads_threads_in_block_major_order() {
        let text = "blocksize: 2 1 1\n0 0 100 4\n3 0 200 4\n0 1 104 4\n0 0 108 4\n";
        let t = read(text.as_bytes(), "a.trc").unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.num_ctas(), 2);
        assert_eq!(k.threads_per_cta(), 2);
        let a: Vec<_> = k.accesses().collect();
        assert_eq!(a.len(), 4);
        // Thread 0's rows stay in file order: load 0, store 0, load 1.
        assert_eq!(
            a.iter()
                .filter(|x| x.thread == 0)
                .map(|x| (x.addr, x.inst, x.dyn_inst))
                .collect::<Vec<_>>(),
            vec![(100, 0, 0), (104, 1, 0), (108, 0, 1)]
        );
        assert_eq!(a.iter().find(|x| x.thread == 3).map(|x| x.addr), Some(200));
    }

    #[test]
    fn writes_what_it_reads() {
        let text = "blocksize: 2 1 1\n0 0 100 4\n3 0 200 8\n0 1 104 4\n0 0 108 4\n";
        let t = read(text.as_bytes(), "a.trc").unwrap();
        let mut out = Vec::new();
        write(&t.kernels[0], &mut out).unwrap();
        let back = read(out.as_slice(), "b.trc").unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line, what) in [
            ("0 0 1 4\n", 1, "blocksize"),
            ("blocksize: 2 1\n", 1, "three"),
            ("blocksize: 2 1 1\n0 0 1\n", 2, "4 decimal fields"),
            ("blocksize: 2 1 1\n\n0 2 1 4\n", 3, "direction"),
            ("blocksize: 2 1 1\n0 0 0x10 4\n", 2, "address"),
            ("blocksize: 2 1 1\n0 0 16 0\n", 2, "size"),
        ] {
            let e = read(text.as_bytes(), "bad.trc").unwrap_err().to_string();
            assert!(e.contains("bad.trc"), "{e}");
            assert!(e.contains(&format!("line {line}")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }

    /// Reads `text` whole, streamed through a sort of `cap` rows a run (a pipe, read once),
    /// streamed reading it twice (a file), and streamed in one walk with the grid of its last
    /// line, read again in two walks where that walk says so (as the shells do).
    fn both<'t>(text: &'t str, cap: usize) -> (Result<Trace, String>, [Result<Pieces, String>; 3]) {
        let whole = read(text.as_bytes(), "n.trc").map_err(|e| e.to_string());
        let streamed = |twice: bool| {
            let mut p = Pieces::default();
            let again = || Ok(text.as_bytes());
            let again: Option<&dyn Fn() -> Result<&'t [u8], TraceError>> = twice.then_some(&again);
            stream::stream(text.as_bytes(), "n.trc", cap, again, &mut p)
                .map(|()| p)
                .map_err(|e| e.to_string())
        };
        let once = match stream::last_line_thread(text.as_bytes(), true) {
            Some(last) => {
                let mut p = Pieces::default();
                let max_rows = text.len() as u64 / 8;
                match stream::once(text.as_bytes(), "n.trc", last, max_rows, &mut p) {
                    Ok(()) => Ok(p),
                    Err(e) if e.must_read_again() => streamed(true),
                    Err(e) => Err(e.to_string()),
                }
            }
            None => streamed(false),
        };
        (whole, [streamed(false), streamed(true), once])
    }

    /// Streams `first`, then `second` as the file read again.
    fn changed(first: &str, second: &str) -> Result<Pieces, String> {
        let mut p = Pieces::default();
        let again = || Ok(second.as_bytes());
        stream::stream(first.as_bytes(), "n.trc", 8, Some(&again), &mut p)
            .map(|()| p)
            .map_err(|e| e.to_string())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(150))]
        /// Sorted in runs of any size and handed on CTA by CTA, or read twice and handed on
        /// as its CTAs come, a file gives the kernel read whole, and a failing one its error.
        #[test]
        fn streamed_equals_read_whole(
            mut rows in proptest::collection::vec((0u32..40, proptest::bool::ANY, 0u64..4096, 1u16..9), 0..120),
            block in (1u32..5, 1u32..3),
            cap in 1usize..50,
            bad in proptest::option::weighted(0.1, 0usize..120),
            cta_order in proptest::bool::ANY,
        ) {
            if cta_order {
                // As the released model's tracer writes: CTA by CTA, threads interleaved.
                let tpb = block.0 * block.1;
                rows.sort_by_key(|r| r.0 / tpb);
            }
            let mut text = format!("blocksize: {} {} 1\n", block.0, block.1);
            for (i, (tid, store, addr, size)) in rows.iter().enumerate() {
                if bad == Some(i) {
                    text.push_str("7 2 0 4\n");
                }
                text.push_str(&format!("{tid} {} {addr} {size}\n", *store as u8));
            }
            let (whole, streamed) = both(&text, cap);
            for s in streamed {
                match (&whole, s) {
                    (Ok(w), Ok(s)) => {
                        proptest::prop_assert_eq!(&s.trace, w);
                        proptest::prop_assert_eq!(s.whole, 0);
                        // CTAs come once each, in increasing order.
                        proptest::prop_assert!(s.ctas.windows(2).all(|c| c[0] < c[1]));
                    }
                    (Err(w), Err(s)) => proptest::prop_assert_eq!(&s, w),
                    (w, s) => proptest::prop_assert!(false, "whole {:?}, streamed {:?}", w.as_ref().map(|_| ()), s.map(|_| ())),
                }
            }
        }
    }

    #[test]
    fn errors_at_the_end_are_the_whole_reads() {
        for text in ["", "blocksize: 1 1 1\n4000000000 0 0 4\n"] {
            let (w, streamed) = both(text, 4);
            for s in streamed {
                assert_eq!(s.map(|_| ()), w.clone().map(|_| ()));
            }
        }
    }

    #[test]
    fn one_walk_takes_the_grid_from_the_last_line_and_asks_for_two_where_ctas_are_out_of_order() {
        let once = |text: &str| {
            let last = stream::last_line_thread(text.as_bytes(), true).expect("a last line");
            let mut p = Pieces::default();
            stream::once(text.as_bytes(), "n.trc", last, 100, &mut p).map(|()| p)
        };
        // In CTA order, threads interleaved within a CTA: one walk gives the whole read.
        let ordered = "blocksize: 2 1 1\n1 0 8 4\n0 0 0 4\n2 0 16 4\n3 1 24 4\n";
        let p = once(ordered).unwrap();
        assert_eq!(p.trace, read(ordered.as_bytes(), "n.trc").unwrap());
        // A CTA after a later one, or past the last line's, asks for the read in two walks.
        for (text, why) in [
            (
                "blocksize: 2 1 1\n2 0 16 4\n0 0 0 4\n3 0 24 4\n",
                "comes again after CTA 1",
            ),
            (
                "blocksize: 2 1 1\n4 0 16 4\n0 0 0 4\n",
                "is past the last line's CTA 0",
            ),
        ] {
            let e = once(text).map(|_| ()).unwrap_err();
            assert!(e.must_read_again(), "{e}");
            assert!(e.to_string().contains(why), "{e}");
        }
        // The last line: trailing blank lines and a missing line end are fine; a file of
        // only its header, or a tail that does not reach a line's start, has none.
        assert_eq!(
            stream::last_line_thread(b"blocksize: 1 1 1\n7 0 0 4\n\n \n", true),
            Some(7)
        );
        assert_eq!(
            stream::last_line_thread(b"blocksize: 1 1 1\n7 0 0 4", true),
            Some(7)
        );
        assert_eq!(stream::last_line_thread(b"blocksize: 1 1 1\n", true), None);
        assert_eq!(stream::last_line_thread(b"7 0 0 4", false), None);
        // From a file: its end; a compressed one gives none.
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.trc");
        let mut text = String::from("blocksize: 4 1 1\n");
        for t in 0..2000 {
            text.push_str(&format!("{t} 0 {} 4\n", 4 * t));
        }
        std::fs::write(&plain, &text).unwrap();
        assert_eq!(stream::last_thread(&plain), Some(1999));
        let packed = dir.path().join("a.trc.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        std::fs::write(&packed, gz.finish().unwrap()).unwrap();
        assert_eq!(stream::last_thread(&packed), None);
    }

    /// Progress reading on from a copy counts the file as often as the run reads it: once
    /// for a receiver that can have it read again, twice otherwise.
    #[test]
    fn reading_on_counts_the_walks_the_run_makes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.trc");
        std::fs::write(&path, "blocksize: 2 1 1\n0 0 0 4\n1 0 4 4\n2 0 8 4\n").unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        let at = crate::trace::ResumePoint::Cta {
            kernel: 0,
            next_cta: 1,
        };
        assert_eq!(
            crate::trace::bytes_to_read_on(&path, bytes, &at, true),
            bytes
        );
        assert_eq!(
            crate::trace::bytes_to_read_on(&path, bytes, &at, false),
            2 * bytes
        );
    }

    #[test]
    fn a_file_that_changes_between_its_reads_is_an_error() {
        let first = "blocksize: 2 1 1\n0 0 100 4\n1 0 200 4\n2 0 300 4\n";
        for second in [
            // A line fewer, a line more, CTAs out of order, a thread past the grid.
            "blocksize: 2 1 1\n0 0 100 4\n1 0 200 4\n",
            "blocksize: 2 1 1\n0 0 100 4\n1 0 200 4\n2 0 300 4\n3 0 300 4\n",
            "blocksize: 2 1 1\n2 0 300 4\n0 0 100 4\n1 0 200 4\n",
            "blocksize: 2 1 1\n0 0 100 4\n1 0 200 4\n9 0 300 4\n",
        ] {
            let e = changed(first, second).map(|_| ()).unwrap_err();
            assert!(e.contains("changed while it was read"), "{e}");
        }
        assert!(changed(first, first).is_ok());
    }
}
