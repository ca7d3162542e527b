//! NVBit launches handed on in issue order in one read, for a receiver that takes
//! instructions as they are found ([`CtaSink::takes_more_instructions`]): the app, whose first
//! requests then show at once rather than after a scan of a file of tens of GB.
//!
//! A launch begins with the instructions its first access line declared and the others follow
//! ([`CtaSink::more_instructions`]) before the chunk of rows that first names them (chunks
//! stay full: the rows gathered name only instructions given before), numbered
//! as the two reads of `stream.rs` number them, so the receiver ends with the same kernels.
//! Two things only a read in two passes takes stop this one with [`TraceError::ReadAgain`]:
//! launches whose access lines interleave (the receiver holds launches that may not be
//! whole), and a launch of more than 2^20 CTAs, whose per-CTA tables are sized only once its
//! rows are counted (`check_density`). The receiver's shell starts again.

use std::io::BufRead;

use super::{count_row, walk, Fail, Launch, Stopped, Visit, WarpLine};
use crate::trace::model::Kernel;
use crate::trace::sink::IssuedChunks;
use crate::trace::{CtaSink, Location, TraceError};

/// The most CTAs a launch may have to be begun before its rows are counted: up to this many,
/// `check_density` accepts it whatever its rows.
const CTAS_BEFORE_COUNT: u64 = 1 << 20;

/// Why a read in two passes is needed.
enum Again {
    Interleaved,
    Wide { id: usize, ctas: u64 },
}

/// The one read: each launch's header at its first access line (or, for a launch with none,
/// when a later one begins), its rows in chunks, new instructions before them.
struct OnePass<'a> {
    /// Headers of the launches declared and not yet begun, in launch order.
    waiting: std::collections::VecDeque<(usize, Kernel)>,
    /// The launch whose lines are being read, and its instructions handed on so far.
    current: Option<usize>,
    given: usize,
    /// Its rows so far (the whole read refuses its 2^32-th).
    rows: u64,
    chunk: IssuedChunks,
    again: Option<Again>,
    out: &'a mut dyn CtaSink,
}

impl OnePass<'_> {
    /// Ends the current launch, if any.
    fn end_current(&mut self) -> Result<(), TraceError> {
        if self.current.take().is_some() {
            self.chunk.hand_on(self.out)?;
            self.out.end_kernel()?;
        }
        Ok(())
    }

    /// Begins a launch's header, or asks for two passes where its per-CTA tables could not be
    /// sized yet.
    fn begin(&mut self, index: usize, header: &Kernel) -> Result<(), Fail> {
        let ctas = header.grid.count();
        if ctas > CTAS_BEFORE_COUNT {
            self.again = Some(Again::Wide { id: index, ctas });
            return Err(Fail::Interleaved);
        }
        self.out.begin_kernel(header)?;
        Ok(())
    }

    /// Begins and ends at once the launches declared before launch `upto` that had no access
    /// line (empty kernels).
    fn empty_before(&mut self, upto: usize) -> Result<(), Fail> {
        while let Some((i, _)) = self.waiting.front() {
            if *i >= upto {
                break;
            }
            let Some((i, header)) = self.waiting.pop_front() else {
                break;
            };
            self.begin(i, &header)?;
            self.out.end_kernel()?;
        }
        Ok(())
    }
}

impl Visit for OnePass<'_> {
    fn launch(&mut self, l: &Launch) {
        self.waiting.push_back((l.index, l.builder.header()));
    }

    fn warp(&mut self, l: &mut Launch, w: &WarpLine<'_>) -> Result<(), Fail> {
        if self.current != Some(l.index) {
            self.end_current()?;
            self.empty_before(l.index)?;
            // The walker refuses a launch that resumes or comes out of order, so this one is
            // next.
            if self.waiting.front().map(|(i, _)| *i) != Some(l.index) {
                self.again = Some(Again::Interleaved);
                return Err(Fail::Interleaved);
            }
            self.waiting.pop_front();
            self.begin(l.index, &l.builder.header())?;
            self.current = Some(l.index);
            self.given = l.builder.instruction_count();
            self.rows = 0;
        }
        if l.builder.instruction_count() > self.given {
            self.out
                .more_instructions(&l.builder.instructions()[self.given..])?;
            self.given = l.builder.instruction_count();
        }
        let (rows, chunk) = (&mut self.rows, &mut self.chunk);
        w.lanes(l.tpb, |a| {
            count_row(rows)?;
            chunk.push(&a);
            Ok(())
        })?;
        self.chunk.hand_on_full(self.out)?;
        Ok(())
    }
}

/// Reads an NVBit log into `out` in one pass (see the module's header).
pub(super) fn stream_into<R: BufRead>(
    r: R,
    file: &str,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut v = OnePass {
        waiting: Default::default(),
        current: None,
        given: 0,
        rows: 0,
        chunk: IssuedChunks::default(),
        again: None,
        out,
    };
    let read_again = |n: u64, again: Option<Again>| {
        let why = match again {
            Some(Again::Wide { id, ctas }) => format!(
                "launch {} has {ctas} CTAs, more than are sized before its rows are counted",
                id + 1
            ),
            _ => "launches interleave".into(),
        };
        TraceError::read_again(file, Location::Line(n), why)
    };
    let walked = match walk(r, file, true, &mut v) {
        Ok(w) => w,
        Err(Stopped::Line(n, Fail::Interleaved)) => return Err(read_again(n, v.again.take())),
        Err(s) => return Err(s.error(file)),
    };
    v.end_current()?;
    v.empty_before(usize::MAX).map_err(|e| match e {
        Fail::Interleaved => read_again(walked.lines, v.again.take()),
        f => Stopped::Line(walked.lines, f).error(file),
    })
}
