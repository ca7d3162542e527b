//! NVBit launches handed on in issue order in one read, for a receiver that takes
//! instructions as they are found ([`SinkHooks::takes_more_instructions`](crate::trace::SinkHooks::takes_more_instructions)): the app, whose first
//! requests then show at once rather than after a scan of a file of tens of GB.
//!
//! A launch begins with the instructions its first access line declared and the others follow
//! ([`SinkHooks::more_instructions`](crate::trace::SinkHooks::more_instructions)) before the chunk of rows that first names them (chunks
//! stay full: the rows gathered name only instructions given before), numbered
//! as the two reads of `stream.rs` number them, so the receiver ends with the same kernels.
//! Two things only a read in two passes takes stop this one with [`TraceError::ReadAgain`]:
//! launches whose access lines interleave (the receiver holds launches that may not be
//! whole), and a launch of more than 2^20 CTAs, whose per-CTA tables are sized only once its
//! rows are counted (`check_density`). The receiver's shell starts again.
//!
//! For a receiver that asks ([`SinkHooks::read_on_every`](crate::trace::SinkHooks::read_on_every)), the read says after some chunks
//! where it stands ([`Resume`]: the walk's state, the line that ended the chunk and its
//! place in the file), and [`stream_from`] goes on from there as this read went on: the app
//! reads a window of a log of tens of GB from the nearest copy of its session before it.

use std::collections::VecDeque;
use std::io::BufRead;
use std::ops::Range;
use std::sync::Arc;

use super::{count_row, walk, walk_on, Fail, Launch, Stopped, Visit, Walked, WarpLine};
use crate::trace::lex::Lines;
use crate::trace::model::{Instruction, Kernel};
use crate::trace::sink::IssuedChunks;
use crate::trace::{source, CtaSink, Ctx, Location, ResumePoint, TraceError};

/// Where a read in one pass stood after a chunk of rows: enough to go on from there
/// ([`stream_from`]).
#[derive(Clone)]
pub struct Resume {
    /// The bytes of the (decompressed) log of the access line that ended the chunk, and its
    /// number; a hash of it, so that a read on finds a log that changed there.
    bytes: Range<u64>,
    line: u64,
    hash: u64,
    walked: Walked,
    waiting: VecDeque<(usize, Kernel)>,
    current: Option<usize>,
    given: usize,
    rows: u64,
}

impl Resume {
    /// Bytes of the (decompressed) log before the place.
    pub fn offset(&self) -> u64 {
        self.bytes.end
    }
    /// About how many bytes the copy holds (the running launch's tables dominate).
    pub fn approx_bytes(&self) -> u64 {
        let running = self
            .walked
            .running
            .and_then(|id| self.walked.launches.get(&id))
            .map_or(0, |l| {
                (l.slots.len() * 16 + l.warps_in_cta.len() * 12) as u64
            });
        running + self.walked.launches.len() as u64 * 256
    }
}

impl std::fmt::Debug for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} (byte {})", self.line, self.bytes.end)
    }
}

impl PartialEq for Resume {
    fn eq(&self, other: &Self) -> bool {
        (&self.bytes, self.line, self.hash, self.rows)
            == (&other.bytes, other.line, other.hash, other.rows)
    }
}

impl Eq for Resume {}

fn hash(line: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(line)
}

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
    /// Rows between two places to read on from ([`SinkHooks::read_on_every`](crate::trace::SinkHooks::read_on_every)), and rows handed
    /// on since the last.
    every: Option<u64>,
    since: u64,
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
        Ok(())
    }

    fn line_done(&mut self, walked: &Walked, line: &[u8], bytes: Range<u64>) -> Result<(), Fail> {
        if !self.chunk.is_full() {
            return Ok(());
        }
        if let Some(every) = self.every {
            self.since += crate::trace::sink::ISSUED_CHUNK_ROWS as u64;
            if self.since >= every {
                self.since = 0;
                self.out.read_on_point(ResumePoint::NvBit(Arc::new(Resume {
                    bytes,
                    line: walked.lines,
                    hash: hash(line),
                    walked: walked.clone(),
                    waiting: self.waiting.clone(),
                    current: self.current,
                    given: self.given,
                    rows: self.rows,
                })));
            }
        }
        self.chunk.hand_on(self.out)?;
        Ok(())
    }
}

/// Reads an NVBit log into `out` in one pass (see the module's header).
pub(super) fn stream_into<R: BufRead>(
    r: R,
    file: &str,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let every = out.read_on_every();
    let v = OnePass {
        waiting: Default::default(),
        current: None,
        given: 0,
        rows: 0,
        chunk: IssuedChunks::default(),
        again: None,
        every,
        since: 0,
        out,
    };
    finish(v, file, |v| walk(r, file, true, v))
}

/// Reads the log of `ctx` on from `at` into `out`, which holds the instructions `held` of the
/// launch it stood in: what [`stream_into`] gave after the place, the rest of that launch and
/// every later one, without their beginnings.
pub(crate) fn stream_from(
    ctx: &Ctx,
    at: &Resume,
    held: &[Instruction],
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let changed = |what: &str| {
        TraceError::parse(
            ctx.file,
            Location::Line(at.line),
            format!("{what} where the run stood: the log changed since"),
        )
    };
    let r = source::reopen_at(ctx.path, ctx.file, at.bytes.start, ctx.watch)?;
    let mut lines = Lines::resumed(r, at.line.saturating_sub(1), at.bytes.start);
    match lines
        .next_line_ending()
        .map_err(|e| TraceError::io(ctx.file, e))?
    {
        Some((_, end, line)) if end == at.bytes.end && hash(line) == at.hash => {}
        _ => return Err(changed("another line is")),
    }
    let current = at
        .current
        .and_then(|i| at.walked.launches.values().find(|l| l.index == i));
    if current.is_none_or(|l| l.builder.instructions().get(..at.given) != Some(held)) {
        return Err(changed("other instructions are"));
    }
    let every = out.read_on_every();
    let v = OnePass {
        waiting: at.waiting.clone(),
        current: at.current,
        given: at.given,
        rows: at.rows,
        chunk: IssuedChunks::default(),
        again: None,
        every,
        since: 0,
        out,
    };
    finish(v, ctx.file, |v| {
        walk_on(lines, ctx.file, true, v, at.walked.clone())
    })
}

/// Runs `walk` for `v`, then ends the last launch and those declared after it with no line.
fn finish(
    mut v: OnePass,
    file: &str,
    walk: impl FnOnce(&mut OnePass) -> Result<Walked, Stopped>,
) -> Result<(), TraceError> {
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
    let walked = match walk(&mut v) {
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
