//! Where a reader or a generator hands what it has read: whole kernels ([`KernelSink`]), or
//! a kernel's header, then its rows in pieces, then its end ([`CtaSink`]): one CTA at a time
//! where the source is grouped by CTA (our binary format, Accel-Sim, the built-in
//! generators), chunks of rows in issue order for a kernel recorded in issue order
//! (cuda-memtrace, NVBit). A receiver of pieces holds only what it needs (the simulation:
//! the resident CTAs, or one warp instruction), so memory does not follow the size of a
//! kernel; [`Assemble`] turns pieces back into whole kernels for a receiver that wants them.

use super::model::{Columns, Instruction, Kernel, KernelBuilder, Trace};
use super::{Location, TraceError};

/// Receives a trace's kernels one at a time, in launch order, as a reader completes them: a
/// [`Trace`] keeps them; a shell can simulate each and drop it, so that memory is bounded by
/// the largest kernel rather than the whole trace.
pub trait KernelSink {
    /// Takes the next kernel; an error stops the reader (and is what it returns).
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError>;
}

impl KernelSink for Trace {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.kernels.push(k);
        Ok(())
    }
}

/// Receives kernels in pieces where the source has them so, and whole otherwise. In launch
/// order, a streamed kernel is [`CtaSink::begin_kernel`] with its header (name, shape,
/// order, instructions, source facts; no rows), then its rows, then
/// [`CtaSink::end_kernel`]. The rows of a kernel the scheduler orders come by
/// [`CtaSink::cta`], once for each CTA that has rows, in increasing linear id, grouped by
/// thread in increasing order; those of an [`super::Order::Issued`] kernel come by
/// [`CtaSink::issued`], in issue order, cut anywhere. An error stops the source, which
/// returns it.
///
/// Four pieces are all most receivers take. A receiver that takes more ([`SinkHooks`]: a
/// hint of the rows to come, instructions found late, resident CTAs' rows, places to read on
/// from) says so by [`CtaSink::hooks`]; a reader asks through the methods on `dyn CtaSink`
/// of the same names, which do nothing (or refuse) for a receiver without hooks.
pub trait CtaSink: KernelSink {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError>;
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError>;
    /// [`CtaSink::cta`] from a sender done with `rows`: a receiver that keeps them may take
    /// them, leaving other room (empty) in their place, instead of copying them.
    fn cta_taken(&mut self, cta: u32, rows: &mut Columns) -> Result<(), TraceError> {
        self.cta(cta, rows)
    }
    /// The next rows of an issued-order kernel.
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError>;
    fn end_kernel(&mut self) -> Result<(), TraceError>;
    /// What this receiver takes beyond the four pieces; `None`: nothing. A receiver that
    /// passes pieces on to another passes on its hooks.
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        None
    }
}

/// What a [`CtaSink`] may take beyond a kernel's four pieces, for the readers that can give
/// it.
///
/// A receiver that [takes more instructions](SinkHooks::takes_more_instructions) may get a
/// header with only the instructions found so far, and the others by
/// [`SinkHooks::more_instructions`] as they are found, each before the first row that names
/// it. Readers that would read a file twice to learn a kernel's instructions first (NVBit,
/// Accel-Sim) then read it once, so its first requests are simulated at once.
pub trait SinkHooks {
    /// How many rows the kernel just begun has, where the file says so before them (our
    /// binary format): a receiver that gathers them may make room for them at once. A hint
    /// only: the rows that come are checked as ever.
    fn expect_rows(&mut self, _rows: u64) {}
    /// Whether this receiver takes instructions found after its kernel began.
    fn takes_more_instructions(&self) -> bool {
        false
    }
    /// Instructions of the open kernel found since it began or since the last call, numbered
    /// after those given. Sent only to a receiver that takes them.
    fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        Err(late_instructions(added))
    }
    /// The rows of CTA `cta` of the open kernel, given as [`CtaSink::cta`] gives them, to a
    /// receiver that holds the CTA without its rows: a copy of a session read on from a CTA of
    /// a file that has no index to fetch them by (an Accel-Sim kernel file, read again from
    /// its start: [`super::OpenTrace::stream_from`]). They come before any later piece.
    fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        Err(unexpected_resident(cta, rows))
    }
    /// Every how many rows of issued chunks a reader that can (an NVBit log read in one
    /// pass) should say where the file can be read on from ([`SinkHooks::read_on_point`]);
    /// `None`: it need not.
    fn read_on_every(&self) -> Option<u64> {
        None
    }
    /// The file can be read on from `at` ([`super::OpenTrace::stream_from`]), which is where
    /// its reader stands once the chunk of issued rows given next has been given.
    fn read_on_point(&mut self, _at: super::ResumePoint) {}
}

/// The readers' side of [`SinkHooks`]: each asks the receiver's hooks, and without them
/// does what a receiver that takes nothing more would.
impl dyn CtaSink + '_ {
    pub fn expect_rows(&mut self, rows: u64) {
        if let Some(h) = self.hooks() {
            h.expect_rows(rows)
        }
    }
    pub fn takes_more_instructions(&mut self) -> bool {
        self.hooks().is_some_and(|h| h.takes_more_instructions())
    }
    pub fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        match self.hooks() {
            Some(h) => h.more_instructions(added),
            None => Err(late_instructions(added)),
        }
    }
    pub fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        match self.hooks() {
            Some(h) => h.resident(cta, rows),
            None => Err(unexpected_resident(cta, rows)),
        }
    }
    pub fn read_on_every(&mut self) -> Option<u64> {
        self.hooks().and_then(|h| h.read_on_every())
    }
    pub fn read_on_point(&mut self, at: super::ResumePoint) {
        if let Some(h) = self.hooks() {
            h.read_on_point(at)
        }
    }
}

fn late_instructions(added: &[Instruction]) -> TraceError {
    out_of_order(format!(
        "{} instructions came after their kernel began",
        added.len()
    ))
}

fn unexpected_resident(cta: u32, rows: &Columns) -> TraceError {
    out_of_order(format!(
        "the rows of CTA {cta} ({} accesses) came for a kernel that holds none without its rows",
        rows.len()
    ))
}

/// Builds whole kernels from CTAs for a receiver of kernels (loading a trace whole).
pub struct Assemble<'a> {
    inner: &'a mut dyn KernelSink,
    /// The kernel being built and its file name for errors.
    building: Option<KernelBuilder>,
}

impl<'a> Assemble<'a> {
    pub fn new(inner: &'a mut dyn KernelSink) -> Self {
        Assemble {
            inner,
            building: None,
        }
    }
}

/// An error about CTAs given out of the protocol's order (a bug of the source, not of the
/// file: sources check their input).
fn out_of_order(message: String) -> TraceError {
    TraceError::parse("<CTA stream>", Location::Row(0), message)
}

impl KernelSink for Assemble<'_> {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.inner.kernel(k)
    }
}

impl CtaSink for Assemble<'_> {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        self.building = Some(builder_for(header)?);
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        append_cta(self.building.as_mut(), cta, rows)
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        append_issued(self.building.as_mut(), rows)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        let k = finish(self.building.take())?;
        self.inner.kernel(k)
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for Assemble<'_> {
    fn expect_rows(&mut self, rows: u64) {
        // Room made at once is filled without copies as the kernel grows; past the cap (a
        // file may declare more rows than it holds) the columns grow as they come.
        if let Some(b) = self.building.as_mut() {
            b.reserve(rows.min(RESERVE_CAP_ROWS) as usize);
        }
    }
}

/// The most rows [`SinkHooks::expect_rows`] makes room for at once (23 bytes a row: 768 MiB).
const RESERVE_CAP_ROWS: u64 = 1 << 25;

/// A builder of the kernel `header` describes, to append its CTAs to.
/// Hands every kernel of a trace read whole to `out`, in launch order (for readers that
/// build the whole trace first).
pub(super) fn hand_on(trace: Trace, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    trace.kernels.into_iter().try_for_each(|k| out.kernel(k))
}

pub(super) fn builder_for(header: &Kernel) -> Result<KernelBuilder, TraceError> {
    let mut b = KernelBuilder::new(&header.name, header.grid, header.block, header.order)
        .map_err(|e| out_of_order(e.to_string()))?;
    for inst in &header.instructions {
        let id = b.instruction(&inst.name, inst.pc);
        b.set_line(id, inst.line.unwrap_or(0));
    }
    b.set_info(header.info.clone());
    Ok(b)
}

/// Declares instructions found after the kernel being built began, numbered after those it
/// has.
#[cfg(test)]
pub(crate) fn declare_more(
    building: Option<&mut KernelBuilder>,
    insts: &[Instruction],
) -> Result<(), TraceError> {
    let Some(b) = building else {
        return Err(out_of_order(
            "instructions came before their kernel began".into(),
        ));
    };
    for inst in insts {
        let want = b.instruction_count() as u32;
        let id = b.instruction(&inst.name, inst.pc);
        if id != want {
            return Err(out_of_order(format!(
                "instruction `{}` is declared twice",
                inst.name
            )));
        }
        b.set_line(id, inst.line.unwrap_or(0));
    }
    Ok(())
}

/// Appends CTA `cta`'s rows to the kernel being built.
pub(super) fn append_cta(
    building: Option<&mut KernelBuilder>,
    cta: u32,
    rows: &Columns,
) -> Result<(), TraceError> {
    let Some(b) = building else {
        return Err(out_of_order(format!(
            "CTA {cta} came before its kernel began"
        )));
    };
    b.append_rows(|c| c.extend_from(rows, 0..rows.len()))
        .map_err(|(i, e)| out_of_order(format!("CTA {cta}, row {i}: {e}")))
}

/// Appends the next rows of an issued-order kernel to the kernel being built.
pub(super) fn append_issued(
    building: Option<&mut KernelBuilder>,
    rows: &Columns,
) -> Result<(), TraceError> {
    let Some(b) = building else {
        return Err(out_of_order(
            "issued rows came before their kernel began".into(),
        ));
    };
    let before = b.len();
    b.append_rows(|c| c.extend_from(rows, 0..rows.len()))
        .map_err(|(i, e)| out_of_order(format!("row {}: {e}", before + i)))
}

/// The kernel built.
pub(super) fn finish(building: Option<KernelBuilder>) -> Result<Kernel, TraceError> {
    let Some(b) = building else {
        return Err(out_of_order("a kernel ended that had not begun".into()));
    };
    b.finish_checked().map_err(|e| out_of_order(e.to_string()))
}

/// Rows of an issued-order kernel handed on at a time by the readers that stream them.
pub(crate) const ISSUED_CHUNK_ROWS: usize = 1 << 16;

/// An issued-order kernel's rows on their way to a [`CtaSink`]: gathered, and handed on
/// [`ISSUED_CHUNK_ROWS`] at a time, so that a reader holds one chunk, not the kernel.
#[derive(Default)]
pub(crate) struct IssuedChunks {
    rows: Columns,
}

impl IssuedChunks {
    pub fn push(&mut self, a: &super::model::Access) {
        self.rows.push(a);
    }
    /// Adds `rows` after those gathered, handing on each chunk they fill.
    pub fn push_all(&mut self, rows: &Columns, out: &mut dyn CtaSink) -> Result<(), TraceError> {
        let mut at = 0;
        while at < rows.len() {
            let take = (ISSUED_CHUNK_ROWS - self.rows.len()).min(rows.len() - at);
            self.rows.extend_from(rows, at..at + take);
            at += take;
            self.hand_on_full(out)?;
        }
        Ok(())
    }
    /// Whether the rows gathered make a chunk.
    pub fn is_full(&self) -> bool {
        self.rows.len() >= ISSUED_CHUNK_ROWS
    }
    /// Hands on the rows gathered once they make a chunk.
    pub fn hand_on_full(&mut self, out: &mut dyn CtaSink) -> Result<(), TraceError> {
        if self.is_full() {
            self.hand_on(out)?;
        }
        Ok(())
    }
    /// Hands on the rows gathered, if any (the last of a kernel).
    pub fn hand_on(&mut self, out: &mut dyn CtaSink) -> Result<(), TraceError> {
        if !self.rows.is_empty() {
            out.issued(&self.rows)?;
            self.rows.clear();
        }
        Ok(())
    }
}

/// Counts the kernels a sink is given.
pub(super) struct Counting<'a> {
    pub inner: &'a mut dyn CtaSink,
    pub kernels: usize,
}

impl KernelSink for Counting<'_> {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.kernels += 1;
        self.inner.kernel(k)
    }
}

impl CtaSink for Counting<'_> {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        self.kernels += 1;
        self.inner.begin_kernel(header)
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.inner.cta(cta, rows)
    }
    fn cta_taken(&mut self, cta: u32, rows: &mut Columns) -> Result<(), TraceError> {
        self.inner.cta_taken(cta, rows)
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        self.inner.issued(rows)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.inner.end_kernel()
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        self.inner.hooks()
    }
}
