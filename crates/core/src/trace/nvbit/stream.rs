//! NVBit launches handed on in issue order, a chunk of rows at a time ([`CtaSink::issued`]),
//! so that a receiver that simulates holds no launch whole: logs of real applications run to
//! tens of GB.
//!
//! A launch's header must be complete before its rows (the simulation sizes its
//! per-instruction tables from it, and our binary format writes it first), but a launch's
//! instructions are its opcodes numbered as they first appear, known only at its end. So the
//! file is read twice: a scan, which checks everything the whole read checks and learns each
//! launch's instructions and row count, then a second read that hands on the rows, a launch
//! at a time in launch order. The stock `mem_trace` tool prints each launch's access lines in
//! one run (it waits for each kernel to end). Where launches interleave (kernels on
//! concurrent streams, with a modified tool), the second read hands on the launch whose turn
//! it is and keeps the rows of later ones it meets in a queue each, on disk past a chunk
//! ([`RowQueue`]), until their turn: memory holds a chunk per launch running, never a launch.
//! A pipe, which cannot be read twice, is read whole instead, with the same result.

use std::io::BufRead;

use super::{count_row, read_into, sparse, walk, Fail, Launch, Stopped, Visit, WarpLine};
use crate::trace::model::{check_density, Kernel, Order};
use crate::trace::queue::RowQueue;
use crate::trace::sink::IssuedChunks;
use crate::trace::{source, CtaSink, Ctx, Location, TraceError};
use rustc_hash::FxHashMap;

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

/// The second read: hands on each launch's rows in issue order, a launch at a time in launch
/// order; the rows of later launches met before their turn (launches that interleave) wait
/// in a [`RowQueue`] each.
struct Stream<'a> {
    plans: Vec<Plan>,
    /// The launch being handed on (launches before it have ended), and whether it has begun.
    next: usize,
    begun: bool,
    /// Access lines met of each launch.
    seen: Vec<u32>,
    /// Rows of launches after `next`, waiting for their turn.
    waiting: FxHashMap<usize, RowQueue>,
    rows: IssuedChunks,
    out: &'a mut dyn CtaSink,
}

/// The second read found what the scan did not.
fn changed() -> Fail {
    Fail::Line("the file changed while it was read (it differs from its first read)".into())
}

impl Stream<'_> {
    /// Begins the launch whose turn it is (its rows that waited first) and ends it once all
    /// its lines have been met, then the next, ... up to one that has lines to come.
    fn settle(&mut self) -> Result<(), Fail> {
        while let Some(lines) = self.plans.get(self.next).map(|p| p.lines) {
            self.begin()?;
            if self.seen[self.next] < lines {
                return Ok(());
            }
            self.rows.hand_on(self.out)?;
            self.out.end_kernel()?;
            self.next += 1;
            self.begun = false;
        }
        Ok(())
    }

    /// Begins the launch whose turn it is, if it has not begun, handing on first its rows
    /// that waited.
    fn begin(&mut self) -> Result<(), Fail> {
        let Some(plan) = self.plans.get(self.next).filter(|_| !self.begun) else {
            return Ok(());
        };
        self.out.begin_kernel(&plan.header)?;
        self.begun = true;
        if let Some(q) = self.waiting.remove(&self.next) {
            let (rows, out) = (&mut self.rows, &mut *self.out);
            q.drain::<Fail>(&mut |c| Ok(rows.push_all(c, out)?))?;
        }
        Ok(())
    }
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        Fail::Line(format!("reading a later launch's rows back from disk: {e}"))
    }
}

impl Visit for Stream<'_> {
    fn warp(&mut self, l: &mut Launch, w: &WarpLine<'_>) -> Result<(), Fail> {
        let i = l.index;
        let Some(plan) = self.plans.get(i).filter(|_| i >= self.next) else {
            return Err(changed());
        };
        let first = self.seen[i] == 0;
        if first && (plan.header.grid != l.builder.grid() || plan.header.block != l.builder.block())
        {
            return Err(changed());
        }
        if w.inst as usize >= plan.header.instructions.len() || self.seen[i] >= plan.lines {
            return Err(changed());
        }
        self.seen[i] += 1;
        if i == self.next {
            self.begin()?;
            let rows = &mut self.rows;
            w.lanes(l.tpb, |a| {
                rows.push(&a);
                Ok(())
            })?;
            self.rows.hand_on_full(self.out)?;
        } else {
            let q = self.waiting.entry(i).or_default();
            w.lanes(l.tpb, |a| {
                q.push(&a)
                    .map_err(|e| format!("keeping a later launch's rows on disk: {e}"))
            })?;
        }
        self.settle()
    }
}

/// Reads an NVBit log into `out`, each launch's rows in chunks (read twice, or once for a
/// receiver that takes instructions as they are found: `one_pass.rs`; a log whose launches
/// interleave is scanned twice, the second time without retiring launches; a pipe is read
/// whole).
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
    // A log whose launches interleave is scanned again without retiring any launch (each
    // keeps its warp slots to its end), and read so.
    let mut retire = true;
    let mut scan = Scan::default();
    let walked = match walk(r, file, true, &mut scan) {
        Ok(w) => w,
        Err(Stopped::Line(_, Fail::Interleaved)) => {
            retire = false;
            scan = Scan::default();
            walk(again()?, file, false, &mut scan).map_err(|s| s.error(file))?
        }
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
        begun: false,
        seen: vec![0; count],
        waiting: FxHashMap::default(),
        rows: IssuedChunks::default(),
        out,
    };
    let walked = walk(again()?, file, retire, &mut stream).map_err(|s| match s {
        Stopped::Line(n, Fail::Interleaved) => Stopped::Line(n, changed()).error(file),
        s => s.error(file),
    })?;
    let at_end = |f: Fail| Stopped::Line(walked.lines, f).error(file);
    // Launches with no lines after the last line met, and a launch whose lines are missing.
    stream.settle().map_err(at_end)?;
    if stream.next != count {
        return Err(at_end(changed()));
    }
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
