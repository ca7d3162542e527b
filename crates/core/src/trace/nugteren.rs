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

use super::lex::{self, Lines};
use super::model::{
    Access, AccessKind, BuildError, Columns, Dim3, Kernel, KernelBuilder, MemSpace, Order, Trace,
};
use super::{spill, CtaSink, Location, TraceError};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "nugteren",
    aliases: &[],
    label: "Nugteren et al.",
    description: "Nugteren et al.'s (2014) .trc format (blocksize: X Y Z, then tid dir addr bytes)",
    form: Form::Plain(super::Format::Nugteren),
};

/// One access line: flat thread id, store (else load), address, bytes.
type Line = (u32, bool, u64, u16);

/// Walks a file: checks the header and every line, handing each access to `row` in file
/// order with the block size; returns the block size and the largest thread id.
fn walk<R: BufRead>(
    r: R,
    file: &str,
    mut row: impl FnMut(Dim3, Line) -> Result<(), TraceError>,
) -> Result<(Dim3, u32), TraceError> {
    let err = |line: u64, msg: String| TraceError::parse(file, Location::Line(line), msg);
    let mut lines = Lines::new(r);
    let mut block: Option<Dim3> = None;
    let mut max_tid = 0u32;
    while let Some((n, line)) = lines.next_line().map_err(|e| TraceError::io(file, e))? {
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let Some(b) = block else {
            block = Some(block_size(t).map_err(|m| err(n, m))?);
            continue;
        };
        let access = access_line(t).map_err(|m| err(n, m))?;
        max_tid = max_tid.max(access.0);
        row(b, access)?;
    }
    let block = block.ok_or_else(|| err(0, "empty file: expected `blocksize: X Y Z`".into()))?;
    Ok((block, max_tid))
}

/// The header line `blocksize: X Y Z`, or what is wrong with it.
fn block_size(t: &[u8]) -> Result<Dim3, String> {
    let dims = t
        .strip_prefix(b"blocksize:")
        .ok_or_else(|| format!("expected `blocksize: X Y Z`, found `{}`", lex::show(t)))?;
    let v: Option<Vec<u32>> = lex::fields(dims)
        .map(|x| lex::dec(x).and_then(|v| u32::try_from(v).ok()))
        .collect();
    let v = v.ok_or_else(|| {
        format!(
            "expected three whole numbers after `blocksize:`, found `{}`",
            lex::show(dims)
        )
    })?;
    match v[..] {
        [x, y, z] if x > 0 && y > 0 && z > 0 => Ok(Dim3 { x, y, z }),
        _ => Err(format!(
            "expected three block dimensions of at least 1, found `{}`",
            lex::show(dims)
        )),
    }
}

/// An access line `tid dir addr bytes`, or what is wrong with it.
fn access_line(t: &[u8]) -> Result<Line, String> {
    let mut f = lex::fields(t);
    let (Some(tid), Some(dir), Some(addr), Some(bytes), None) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(format!(
            "expected `tid dir addr bytes` (4 decimal fields), found {} fields",
            lex::fields(t).count()
        ));
    };
    let tid = lex::dec(tid)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            format!(
                "thread id: expected a whole number, found `{}`",
                lex::show(tid)
            )
        })?;
    let store = match dir {
        b"0" => false,
        b"1" => true,
        d => {
            return Err(format!(
                "direction: expected 0 (load) or 1 (store), found `{}`",
                lex::show(d)
            ))
        }
    };
    let addr = lex::dec(addr).ok_or_else(|| {
        format!(
            "address: expected a decimal number, found `{}`",
            lex::show(addr)
        )
    })?;
    let bytes = lex::dec(bytes)
        .and_then(|v| u16::try_from(v).ok())
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            format!(
                "size: expected 1 to 65535 bytes, found `{}`",
                lex::show(bytes)
            )
        })?;
    Ok((tid, store, addr, bytes))
}

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
    let (block, max_tid) = walk(r, file, |_, l| {
        rows.push(l);
        Ok(())
    })?;
    let mut b = header(block, max_tid, rows.len() as u64, file)?;
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

/// Reads the file into `out` a CTA at a time, in the memory of an external sort's buffer
/// (`cap` rows; `trace/spill.rs`): the lines are sorted by thread, keeping each thread's
/// order, and handed on CTA by CTA. The kernel is the one [`read`] gives.
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    file: &str,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let io = |e| TraceError::io(file, e);
    let mut sort = spill::Sort::new(cap);
    let (block, max_tid) = walk(r, file, |block, (tid, store, addr, size)| {
        let tpb = block.count();
        sort.push(spill::Row {
            cta: tid as u64 / tpb,
            local: (tid as u64 % tpb) as u32,
            inst: store as u32,
            addr,
            aux: 0,
            size,
            flags: 0,
        })
        .map_err(io)
    })?;
    let b = header(block, max_tid, sort.len(), file)?;
    if sort.len() > u32::MAX as u64 {
        return Err(TraceError::parse(
            file,
            Location::Line(0),
            BuildError::TooManyRows.to_string(),
        ));
    }
    out.begin_kernel(&b.header())?;
    let tpb = block.count() as u32;
    // The loads and stores of the thread whose rows are being handed on.
    let mut counts = (0u32, 0u32);
    let mut last = None;
    let sorted = sort.sorted().map_err(io)?;
    spill::hand_on_by_cta(
        sorted,
        file,
        tpb,
        out,
        |c| c as u32,
        |r, tid| {
            if last != Some(tid) {
                counts = (0, 0);
                last = Some(tid);
            }
            access(tid, r.inst == 1, r.addr, r.size, &mut counts)
        },
    )?;
    out.end_kernel()
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

/// Nugteren et al.'s format's reader: per-thread streams, handed on CTA by CTA after an
/// external sort (`spill.rs`).
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
        stream_into(r, cx.file, super::spill::DEFAULT_CAP, out)
    }
    fn sorts_to_stream(&self) -> bool {
        true
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

    /// Reads `text` whole and streamed through a sort of `cap` rows a run.
    fn both(text: &str, cap: usize) -> (Result<Trace, String>, Result<Pieces, String>) {
        let whole = read(text.as_bytes(), "n.trc").map_err(|e| e.to_string());
        let mut p = Pieces::default();
        let streamed = stream_into(text.as_bytes(), "n.trc", cap, &mut p)
            .map(|()| p)
            .map_err(|e| e.to_string());
        (whole, streamed)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(150))]
        /// Sorted in runs of any size and handed on CTA by CTA, a file gives the kernel read
        /// whole, and a failing one its error.
        #[test]
        fn streamed_through_an_external_sort_equals_read_whole(
            rows in proptest::collection::vec((0u32..40, proptest::bool::ANY, 0u64..4096, 1u16..9), 0..120),
            block in (1u32..5, 1u32..3),
            cap in 1usize..50,
            bad in proptest::option::weighted(0.1, 0usize..120),
        ) {
            let mut text = format!("blocksize: {} {} 1\n", block.0, block.1);
            for (i, (tid, store, addr, size)) in rows.iter().enumerate() {
                if bad == Some(i) {
                    text.push_str("7 2 0 4\n");
                }
                text.push_str(&format!("{tid} {} {addr} {size}\n", *store as u8));
            }
            match both(&text, cap) {
                (Ok(w), Ok(s)) => {
                    proptest::prop_assert_eq!(&s.trace, &w);
                    proptest::prop_assert_eq!(s.whole, 0);
                    // CTAs come once each, in increasing order.
                    proptest::prop_assert!(s.ctas.windows(2).all(|c| c[0] < c[1]));
                }
                (Err(w), Err(s)) => proptest::prop_assert_eq!(s, w),
                (w, s) => proptest::prop_assert!(false, "whole {:?}, streamed {:?}", w.map(|_| ()), s.map(|_| ())),
            }
        }
    }

    #[test]
    fn errors_at_the_end_are_the_whole_reads() {
        for text in ["", "blocksize: 1 1 1\n4000000000 0 0 4\n"] {
            let (w, s) = both(text, 4);
            assert_eq!(s.map(|_| ()), w.map(|_| ()));
        }
    }
}
