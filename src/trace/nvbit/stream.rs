//! NVBit launches handed on in issue order, a chunk of rows at a time ([`CtaSink::issued`]),
//! so that a receiver that simulates holds no launch whole: logs of real applications run to
//! tens of GB.
//!
//! A launch's header must be complete before its rows (the simulation sizes its
//! per-instruction tables from it, and our binary format writes it first), but a launch's
//! instructions are its opcodes numbered as they first appear, known only at its end. So the
//! file is read twice: a scan, which checks everything the whole read checks and learns each
//! launch's instructions and row count, then a second read that hands on the rows. This
//! needs each launch's access lines in one run, in launch order, as the stock `mem_trace`
//! tool prints them (it waits for each kernel to end). A log whose launches interleave, or a
//! pipe, which cannot be read twice, is read whole instead, with the same result.

use std::io::BufRead;

use super::{count_row, read_into, sparse, walk, Fail, Launch, Stopped, Visit, WarpLine};
use crate::trace::model::{check_density, Kernel, Order};
use crate::trace::sink::IssuedChunks;
use crate::trace::{source, CtaSink, Ctx, Location, TraceError};

/// What the scan learned of one launch.
struct Plan {
    id: u64,
    /// Name, shape, facts and instructions; no rows.
    header: Kernel,
    lines: u32,
}

/// The first read: counts each launch's rows (in launch order), checking every lane.
#[derive(Default)]
struct Scan {
    rows: Vec<u64>,
}

impl Visit for Scan {
    fn warp(&mut self, l: &mut Launch, w: &WarpLine<'_>) -> Result<(), Fail> {
        if self.rows.len() <= l.index {
            self.rows.resize(l.index + 1, 0);
        }
        let rows = &mut self.rows[l.index];
        Ok(w.lanes(l.tpb, |_| count_row(rows))?)
    }
}

/// The second read: hands on each launch's rows in issue order.
struct Stream<'a> {
    plans: Vec<Plan>,
    /// Launches begun so far.
    next: usize,
    /// The launch whose lines are being read, and its lines so far.
    current: Option<usize>,
    lines: u32,
    rows: IssuedChunks,
    out: &'a mut dyn CtaSink,
}

/// The second read found what the scan did not.
fn changed() -> Fail {
    Fail::Line("the file changed while it was read (it differs from its first read)".into())
}

impl Stream<'_> {
    /// Ends the current launch, if any, checking it had all its lines.
    fn end_current(&mut self) -> Result<(), Fail> {
        if let Some(c) = self.current.take() {
            self.rows.hand_on(self.out)?;
            if self.lines != self.plans[c].lines {
                return Err(changed());
            }
            self.out.end_kernel()?;
        }
        Ok(())
    }

    /// Begins the launches up to `upto` (exclusive), ending each at once (launches with no
    /// access line are empty kernels).
    fn empty_upto(&mut self, upto: usize) -> Result<(), Fail> {
        while self.next < upto {
            let p = &self.plans[self.next];
            if p.lines != 0 {
                return Err(changed());
            }
            self.out.begin_kernel(&p.header)?;
            self.out.end_kernel()?;
            self.next += 1;
        }
        Ok(())
    }
}

impl Visit for Stream<'_> {
    fn warp(&mut self, l: &mut Launch, w: &WarpLine<'_>) -> Result<(), Fail> {
        if self.current != Some(l.index) {
            self.end_current()?;
            if l.index < self.next || l.index >= self.plans.len() {
                return Err(changed());
            }
            self.empty_upto(l.index)?;
            let header = &self.plans[l.index].header;
            if header.grid != l.builder.grid() || header.block != l.builder.block() {
                return Err(changed());
            }
            self.out.begin_kernel(header)?;
            self.next += 1;
            self.current = Some(l.index);
            self.lines = 0;
        }
        if w.inst as usize >= self.plans[l.index].header.instructions.len() {
            return Err(changed());
        }
        self.lines += 1;
        let rows = &mut self.rows;
        w.lanes(l.tpb, |a| {
            rows.push(&a);
            Ok(())
        })?;
        self.rows.hand_on_full(self.out)?;
        Ok(())
    }
}

/// Reads an NVBit log into `out`, each launch's rows in chunks (read twice, or once for a
/// receiver that takes instructions as they are found: `one_pass.rs`; a pipe, or a log whose
/// launches interleave, is read whole).
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let file = ctx.file;
    if ctx.file_bytes == 0 {
        return read_into(r, file, out);
    }
    if out.takes_more_instructions() {
        return super::one_pass::stream_into(r, file, out);
    }
    let again = || Ok::<_, TraceError>(source::open(ctx.path, ctx.wrap, ctx.watch)?.reader);
    let mut scan = Scan::default();
    let walked = match walk(r, file, true, &mut scan) {
        Ok(w) => w,
        Err(Stopped::Line(_, Fail::Interleaved)) => return read_into(again()?, file, out),
        Err(s) => return Err(s.error(file)),
    };
    // The whole read's checks at the end of the log, in the same order.
    let mut plans = Vec::with_capacity(walked.order.len());
    let mut launches = walked.launches;
    for id in walked.order {
        let Some(l) = launches.remove(&id) else {
            continue;
        };
        let rows = scan.rows.get(l.index).copied().unwrap_or(0);
        let (grid, block) = (l.builder.grid(), l.builder.block());
        check_density(grid, block, rows as usize, Order::Issued)
            .map_err(|e| sparse(file, id, e))?;
        plans.push(Plan {
            id,
            header: l.builder.header(),
            lines: l.lines,
        });
    }
    let count = plans.len();
    let mut stream = Stream {
        plans,
        next: 0,
        current: None,
        lines: 0,
        rows: IssuedChunks::default(),
        out,
    };
    let walked = walk(again()?, file, true, &mut stream).map_err(|s| match s {
        Stopped::Line(n, Fail::Interleaved) => Stopped::Line(n, changed()).error(file),
        s => s.error(file),
    })?;
    let at_end = |f: Fail| Stopped::Line(walked.lines, f).error(file);
    stream.end_current().map_err(at_end)?;
    stream.empty_upto(count).map_err(at_end)?;
    if walked.order.len() != count
        || walked
            .order
            .iter()
            .zip(&stream.plans)
            .any(|(id, p)| *id != p.id)
    {
        return Err(TraceError::parse(
            file,
            Location::Line(walked.lines),
            "the file changed while it was read: its launches differ from its first read",
        ));
    }
    Ok(())
}
