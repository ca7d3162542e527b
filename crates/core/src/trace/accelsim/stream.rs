//! Accel-Sim kernels handed on CTA by CTA ([`CtaSink`]), so that a receiver that simulates
//! holds only the resident CTAs, never a whole kernel: the largest Accel-Sim traces are tens
//! of GB.
//!
//! A kernel's header must be complete before its first CTA (the simulation sizes its
//! per-instruction tables from it, and our binary format writes it first), but a `.traceg`
//! names its instructions only as they execute and counts each warp's instructions only at
//! its end. So each kernel file is read twice: a scan that decodes no address finds the
//! instructions (numbered as [`super::read_kernel`] numbers them), the counts and which CTA
//! each thread block holds; then a second read hands on each block's accesses, grouped by
//! thread. The scan also checks that the blocks come in increasing CTA order, each CTA in one
//! block, as Accel-Sim's post-processing writes them; a file that does not (or a tracer
//! version below 3 whose lines mix CTAs, or a stream that cannot be read twice, such as a
//! pipe) is read whole instead, with the same result and the memory of the kernel.
//!
//! A receiver that takes instructions as they are found ([`SinkHooks::takes_more_instructions`](crate::trace::SinkHooks::takes_more_instructions):
//! the app, `sim`) gets each kernel file read once instead ([`stream_once`]): its first CTAs
//! are simulated at once. The counts found at the end (each warp's instructions, the
//! opcodes, the load groups: what the analytical model reads, which needs a trace whole) are
//! then left out of the header. Blocks out of CTA order, or a kernel too large to size before
//! its rows are counted, stop that read with [`TraceError::ReadAgain`].

use std::io::BufRead;
use std::path::Path;

use super::super::model::{
    check_density, Columns, Instruction, Kernel, KernelBuilder, KernelInfo, Order,
};
use super::super::{CtaSink, Ctx, Location, TraceError};
use super::parse::{Block, Mode, Parser};
use super::{each_kernel_file, read_kernel, source, KernelFile};

/// Reads a kernel list or a single `.traceg` into `out`, CTA by CTA where the file allows.
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    each_kernel_file(r, ctx, &mut |file| stream_file(file, ctx, out))
}

/// Hands on the kernel of one kernel file, CTA by CTA where the file allows.
pub(super) fn stream_file<R: BufRead>(
    file: KernelFile<R>,
    ctx: &Ctx<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    match file {
        // A pipe cannot be read twice.
        KernelFile::Given(r) if ctx.file_bytes == 0 => out.kernel(read_kernel(r, ctx.file)?),
        KernelFile::Given(r) if out.takes_more_instructions() => stream_once(r, ctx.file, out),
        KernelFile::Given(r) => stream_kernel(r, ctx.path, ctx, ctx.file, out),
        KernelFile::Listed(path) => {
            let opened = source::open(&path, ctx.wrap, ctx.watch)?;
            let name = path.display().to_string();
            if out.takes_more_instructions() {
                return stream_once(opened.reader, &name, out);
            }
            stream_kernel(opened.reader, &path, ctx, &name, out)
        }
    }
}

/// What the scan learned of the blocks' order.
#[derive(Default)]
struct BlockOrder {
    /// The last CTA seen in a block.
    last: Option<u32>,
    /// Every block with accesses holds one CTA, later than the previous block's.
    increasing: bool,
    rows: u64,
}

impl BlockOrder {
    fn see(&mut self, b: Block) {
        self.rows += b.rows;
        if b.mixed {
            self.increasing = false;
        }
        if let Some(c) = b.cta {
            if self.last.is_some_and(|l| c <= l) {
                self.increasing = false;
            }
            self.last = Some(c);
        }
    }
}

/// Scans the kernel file `first`, then reads it again from `path` and hands it on.
fn stream_kernel<R: BufRead>(
    first: R,
    path: &Path,
    ctx: &Ctx<'_>,
    file: &str,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut scan = Parser::new(first, file, Mode::Scan)?;
    let mut none = Columns::default();
    let mut order = BlockOrder {
        increasing: true,
        ..BlockOrder::default()
    };
    while let Some(b) = scan.next_block(&mut none)? {
        order.see(b);
    }
    let h = scan.header();
    let (name, grid, block, end_line) = (h.name.clone(), h.grid, h.block, h.end_line);
    let found = scan.finish()?;
    let herr = |m: String| TraceError::parse(file, Location::Line(end_line), m);
    check_density(grid, block, order.rows as usize, Order::PerWarp)
        .map_err(|e| herr(e.to_string()))?;
    let again = source::open(path, ctx.wrap, ctx.watch)?.reader;
    if !order.increasing {
        return out.kernel(read_kernel(again, file)?);
    }
    let header = Kernel::without_rows(
        &name,
        grid,
        block,
        Order::PerWarp,
        &found.instructions,
        &found.info,
    );
    out.begin_kernel(&header)?;
    let mut read = Parser::new(again, file, Mode::Reread)?;
    read.known_instructions(&found.instructions);
    let tpb = read.threads_per_cta();
    let mut rows = Columns::default();
    while let Some(b) = read.next_block(&mut rows)? {
        match b.cta {
            Some(c) => {
                rows.group_by_thread(c * tpb, tpb);
                out.cta_taken(c, &mut rows)?;
            }
            None if b.mixed => {
                return Err(TraceError::parse(
                    file,
                    Location::Line(b.line),
                    "this thread block holds accesses of several CTAs, which it did not when \
                     the file was first read: the file changed while it was read",
                ))
            }
            None => {}
        }
        rows.clear();
    }
    read.finish()?;
    out.end_kernel()
}

/// Reads the kernel file `r` once, handing on each block's CTA with the instructions first
/// seen in it (see the module's header).
fn stream_once<R: BufRead>(r: R, file: &str, out: &mut dyn CtaSink) -> Result<(), TraceError> {
    let read = Parser::new(r, file, Mode::Read)?;
    let h = read.header();
    let (grid, block, line) = (h.grid, h.block, h.end_line);
    let again = |at: u64, why: &str| TraceError::read_again(file, Location::Line(at), why);
    // Up to these, `check_density` accepts the shape whatever its rows; a shape the whole
    // read refuses is refused by the read in two passes, with its error.
    let (ctas, threads) = (grid.count(), grid.count().saturating_mul(block.count()));
    let refused = KernelBuilder::new(&h.name, grid, block, Order::PerWarp).is_err();
    if refused {
        return Err(again(
            line,
            "its shape is checked by the read in two passes",
        ));
    }
    if ctas > 1 << 20 || threads > 1 << 24 {
        return Err(again(
            line,
            &format!("grid {grid} x block {block} is sized only once its accesses are counted"),
        ));
    }
    let info = KernelInfo {
        attributes: h.attributes.clone(),
        ..KernelInfo::default()
    };
    out.begin_kernel(&Kernel::without_rows(
        &h.name,
        grid,
        block,
        Order::PerWarp,
        &[],
        &info,
    ))?;
    read_on(read, file, Given::new(&[]), None, out, &again)
}

/// The instructions of the open kernel a receiver has, when read once: those found so far,
/// or, on a read on from a copy of a session, those the copy held, which the read must find
/// again in the same order.
pub(super) struct Given<'a> {
    held: &'a [Instruction],
    given: usize,
    checked: usize,
}

impl<'a> Given<'a> {
    pub fn new(held: &'a [Instruction]) -> Self {
        Given {
            held,
            given: held.len(),
            checked: 0,
        }
    }

    /// Sends `out` the instructions found that it lacks (line `line` of `file` is read);
    /// those it held must be among those found, in the same order.
    pub fn catch_up(
        &mut self,
        found: &[Instruction],
        file: &str,
        line: u64,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        let upto = found.len().min(self.held.len());
        if let Some(i) = (self.checked..upto).find(|&i| found[i] != self.held[i]) {
            return Err(TraceError::parse(
                file,
                Location::Line(line),
                format!(
                    "the kernel's instruction {i} is `{}` here but was `{}` when the run read \
                     this file: the file changed since",
                    found[i].name, self.held[i].name
                ),
            ));
        }
        self.checked = upto;
        if found.len() > self.given {
            out.more_instructions(&found[self.given..])?;
            self.given = found.len();
        }
        Ok(())
    }
}

/// Hands on the rest of the thread blocks of `read`, a kernel file read once, CTA by CTA
/// after `last` (the last CTA handed on), each with the instructions first seen up to it,
/// then the kernel's end. Blocks out of CTA order, or holding several CTAs, stop it with
/// `stop(line, why)`.
pub(super) fn read_on<R: BufRead>(
    mut read: Parser<'_, R>,
    file: &str,
    mut given: Given<'_>,
    mut last: Option<u32>,
    out: &mut dyn CtaSink,
    stop: &dyn Fn(u64, &str) -> TraceError,
) -> Result<(), TraceError> {
    let tpb = read.threads_per_cta();
    let mut rows = Columns::default();
    while let Some(b) = read.next_block(&mut rows)? {
        match b.cta {
            Some(c) if last.is_some_and(|l| c <= l) => {
                return Err(stop(
                    b.line,
                    "thread blocks are not in increasing CTA order",
                ))
            }
            Some(c) => {
                last = Some(c);
                given.catch_up(read.instructions(), file, b.line, out)?;
                rows.group_by_thread(c * tpb, tpb);
                out.cta_taken(c, &mut rows)?;
            }
            None if b.mixed => {
                return Err(stop(
                    b.line,
                    "a thread block holds accesses of several CTAs",
                ))
            }
            None => {}
        }
        rows.clear();
    }
    let end = read.line();
    let found = read.finish()?;
    given.catch_up(&found.instructions, file, end, out)?;
    out.end_kernel()
}
