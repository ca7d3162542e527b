//! Tables handed on in bounded memory: a kernel's rows CTA by CTA, or in chunks in issue order
//! for a table with an `sm` column, never the kernel whole. Users' own scripts write tables of
//! any length, one thread's access a row.
//!
//! A kernel's header must be complete before its rows, but a table's grid and block are the
//! smallest that hold every index its rows give, and its instructions are numbered as they
//! first appear: all known only at the kernel's end. So the file is read twice. The first
//! pass ([`State::scan`]) makes every check the whole read makes and keeps each kernel's
//! [`Plan`]; the second places each row by the plan. The two go in lock-step
//! ([`lock_step`]): the second read takes a chunk once every kernel in it is planned, so the
//! first kernel starts after its own scan, not the whole file's. Rows in issue order are
//! handed on as they come; the others go through an external sort by CTA and thread
//! (`trace/spill.rs`), which keeps each thread's order, and are handed on CTA by CTA. Memory
//! is the sort's buffer, the plans, and per thread its instance counts. A stream that cannot be read twice (a pipe) is
//! read whole, with the same result.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::Path;

use rustc_hash::FxHashMap;

use super::chunks::{Chunks, CsvChunks, ParquetChunks, CHUNK_BYTES};
use super::decode::{Chunk, Row};
use super::rows::Plan;
use super::*;
use crate::trace::model::{pack_flags, Columns};
use crate::trace::sink::IssuedChunks;
use crate::trace::{source, spill, CtaSink, Ctx};

/// The kernel whose rows are being placed.
struct Current {
    plan: Plan,
    given: u64,
    way: Way,
}

/// How a kernel's rows go on.
enum Way {
    /// In issue order, a chunk at a time; instances counted by thread and instruction.
    Issued {
        rows: IssuedChunks,
        counts: FxHashMap<(u32, u32), u32>,
    },
    /// Already in order of CTA and thread: a CTA at a time.
    Grouped {
        rows: Columns,
        cta: Option<u32>,
        numbering: Numbering,
    },
    /// In each thread's order only: through an external sort by CTA and thread.
    Sorted(spill::Sort),
}

/// Instances of one thread's instructions, counted in the thread's order.
#[derive(Default)]
struct Numbering {
    thread: Option<u32>,
    counts: FxHashMap<u32, u32>,
}

impl Numbering {
    /// The instance of `inst` that is `thread`'s next row (threads come one after another).
    fn next(&mut self, thread: u32, inst: u32) -> u32 {
        if self.thread != Some(thread) {
            self.counts.clear();
            self.thread = Some(thread);
        }
        let n = self.counts.entry(inst).or_insert(0);
        *n += 1;
        *n - 1
    }
}

/// The second pass: places each row by its kernel's plan.
struct Stream<'a> {
    file: &'a str,
    plans: VecDeque<Plan>,
    current: Option<Current>,
    /// Rows the external sort holds in memory.
    cap: usize,
    out: &'a mut dyn CtaSink,
}

/// The second read found what the first did not.
fn changed(file: &str, at: Location) -> TraceError {
    TraceError::parse(
        file,
        at,
        "the file changed while it was read (it differs from its first read)",
    )
}

impl Stream<'_> {
    /// Ends the kernel before and begins the next planned one, which must be the one `key`
    /// names (else the file `changed`); `false` when `may_wait` and none is planned yet.
    fn begin(
        &mut self,
        key: &str,
        may_wait: bool,
        changed: impl Fn() -> TraceError,
    ) -> Result<bool, TraceError> {
        self.end_kernel()?;
        if may_wait && self.plans.is_empty() {
            return Ok(false);
        }
        let plan = self.plans.pop_front().ok_or_else(&changed)?;
        if plan.key != key {
            return Err(changed());
        }
        self.out.begin_kernel(&plan.header)?;
        let way = if plan.header.order == Order::Issued {
            Way::Issued {
                rows: IssuedChunks::default(),
                counts: FxHashMap::default(),
            }
        } else if plan.grouped {
            Way::Grouped {
                rows: Columns::default(),
                cta: None,
                numbering: Numbering::default(),
            }
        } else {
            Way::Sorted(spill::Sort::new(self.cap))
        };
        self.current = Some(Current {
            plan,
            given: 0,
            way,
        });
        Ok(true)
    }

    /// Places the rows of a chunk. With `may_wait`, it stops at the first row of a kernel not
    /// planned yet (the scan has not met its end), ending the kernel before it, and returns
    /// that row; else such a row is an error (the file changed).
    fn ingest(
        &mut self,
        df: &polars::prelude::DataFrame,
        at: &dyn Fn(usize) -> Location,
        may_wait: bool,
    ) -> Result<Option<usize>, TraceError> {
        let file = self.file;
        let chunk = Chunk::new(df, file, at)?;
        let changed = |i: usize| changed(file, at(i));
        // Instruction id of each distinct `inst` value in this chunk, looked up once.
        let mut inst_ids: Vec<Option<u32>> = vec![None; chunk.inst_values()];
        let mut start = 0;
        while start < chunk.len() {
            let (key, end) = chunk.run_at(start);
            if self.current.as_ref().is_none_or(|c| c.plan.key != key) {
                if !self.begin(key, may_wait, || changed(start))? {
                    return Ok(Some(start));
                }
                inst_ids.fill(None);
            }
            let Some(c) = self.current.as_mut() else {
                break;
            };
            let h = &c.plan.header;
            if chunk.order() != h.order || chunk.numbered() != c.plan.numbered {
                return Err(changed(start));
            }
            let (grid, block) = (h.grid, h.block);
            for i in start..end {
                let r = chunk.row(i)?;
                if !grid.contains(r.cta) || !block.contains(r.thread) || c.given >= c.plan.rows {
                    return Err(changed(i));
                }
                let cta = grid.linear(r.cta);
                // A CTA on another SM than at the first read.
                let cta_sm = &c.plan.header.info.cta_sm;
                if r.sm.is_some_and(|s| cta_sm.get(cta as usize) != Some(&s)) {
                    return Err(changed(i));
                }
                c.given += 1;
                let inst = if r.is_barrier() {
                    0
                } else {
                    inst_id(&r, &chunk, &c.plan, &mut inst_ids).ok_or_else(|| changed(i))?
                };
                let local = block.linear(r.thread) as u32;
                let thread = (cta * block.count()) as u32 + local;
                let given_dyn = if r.is_barrier() {
                    0
                } else {
                    r.dyn_inst.unwrap_or(0)
                };
                let numbered = c.plan.numbered && !r.is_barrier();
                let access = |dyn_inst| Access {
                    thread,
                    inst,
                    dyn_inst,
                    addr: r.addr,
                    size: r.size,
                    kind: r.kind,
                    space: r.space,
                };
                match &mut c.way {
                    Way::Sorted(sort) => sort
                        .push(spill::Row {
                            cta,
                            local,
                            inst,
                            addr: r.addr,
                            aux: u64::from(given_dyn),
                            size: r.size,
                            flags: pack_flags(r.kind, r.space),
                        })
                        .map_err(|e| TraceError::io(file, e))?,
                    Way::Grouped {
                        rows,
                        cta: now,
                        numbering,
                    } => {
                        let cta = cta as u32;
                        if *now != Some(cta) {
                            if let Some(done) = now.replace(cta) {
                                self.out.cta(done, rows)?;
                                rows.clear();
                            }
                        }
                        let dyn_inst = if numbered {
                            numbering.next(thread, inst)
                        } else {
                            given_dyn
                        };
                        rows.push(&access(dyn_inst));
                    }
                    Way::Issued { rows, counts } => {
                        let dyn_inst = if numbered {
                            let n = counts.entry((thread, inst)).or_insert(0);
                            *n += 1;
                            *n - 1
                        } else {
                            given_dyn
                        };
                        rows.push(&access(dyn_inst));
                        rows.hand_on_full(self.out)?;
                    }
                }
            }
            start = end;
        }
        Ok(None)
    }

    /// Places the rows of a chunk as [`Stream::ingest`] with `may_wait`; returns the rows
    /// left (from the first of a kernel not planned yet) with where each is in the file.
    fn ingest_or_hold(
        &mut self,
        df: &polars::prelude::DataFrame,
        at: &dyn Fn(usize) -> Location,
    ) -> Result<Option<Held>, TraceError> {
        Ok(self.ingest(df, at, true)?.map(|start| Held {
            rows: df.slice(start as i64, df.height() - start),
            at: HeldAt::of(start..df.height(), at),
        }))
    }

    /// Hands on the rest of the current kernel and ends it.
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        let Some(c) = self.current.take() else {
            return Ok(());
        };
        if c.given != c.plan.rows {
            return Err(changed(self.file, Location::Byte(0)));
        }
        match c.way {
            Way::Sorted(sort) => {
                let sorted = sort.sorted().map_err(|e| TraceError::io(self.file, e))?;
                let numbered = c.plan.numbered;
                let mut numbering = Numbering::default();
                spill::hand_on_by_cta(
                    sorted,
                    self.file,
                    c.plan.header.block.count() as u32,
                    self.out,
                    |cta| cta as u32,
                    |r, thread| {
                        let dyn_inst = if numbered && !r.is_barrier() {
                            numbering.next(thread, r.inst)
                        } else {
                            r.aux as u32
                        };
                        r.access(thread, dyn_inst)
                    },
                )?;
            }
            Way::Grouped {
                rows,
                cta: Some(cta),
                ..
            } => self.out.cta(cta, &rows)?,
            Way::Issued { mut rows, .. } => rows.hand_on(self.out)?,
            Way::Grouped { cta: None, .. } => {}
        }
        self.out.end_kernel()
    }

    fn finish(mut self) -> Result<(), TraceError> {
        self.end_kernel()?;
        if !self.plans.is_empty() {
            return Err(TraceError::parse(
                self.file,
                Location::Byte(0),
                "the file changed while it was read: it has fewer kernels than at its first read",
            ));
        }
        Ok(())
    }
}

/// Reads a CSV table into `out` in bounded memory (read twice; a pipe is read whole).
pub(crate) fn stream_csv<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    stream_csv_sized(r, ctx, CHUNK_BYTES, spill::DEFAULT_CAP, out)
}

/// [`stream_csv`] with chunks of `chunk_bytes` and a sort of `cap` rows (tests use small ones).
fn stream_csv_sized<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    chunk_bytes: usize,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let file = ctx.file;
    if ctx.file_bytes == 0 {
        return read_csv_chunked(r, file, 0, chunk_bytes, out);
    }
    let ahead = CsvChunks::new(r, file, ctx.file_bytes, chunk_bytes)?;
    let again = source::open(ctx.path, ctx.wrap, ctx.watch)?.reader;
    let behind = CsvChunks::new(again, file, ctx.file_bytes, chunk_bytes)?;
    lock_step(file, ahead, behind, cap, out)
}

/// Reads a Parquet table into `out` in bounded memory (read twice; `watch` as for
/// [`ParquetChunks`]).
pub(crate) fn stream_parquet(
    path: &Path,
    file: &str,
    watch: &dyn Fn(source::Stream) -> source::Stream,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let ahead = ParquetChunks::new(path, file, watch)?;
    let behind = ParquetChunks::new(path, file, watch)?;
    lock_step(file, ahead, behind, spill::DEFAULT_CAP, out)
}

/// The rows of a chunk that wait for their kernel's plan, and where each is in the file.
struct Held {
    rows: polars::prelude::DataFrame,
    at: HeldAt,
}

impl Held {
    fn location(&self, row: usize) -> Location {
        match (&self.at, row as u64) {
            (HeldAt::From(Location::Line(l)), i) => Location::Line(l + i),
            (HeldAt::From(Location::Row(r)), i) => Location::Row(r + i),
            (HeldAt::From(other), _) => other.clone(),
            (HeldAt::Each(all), _) => all.get(row).cloned().unwrap_or(Location::Byte(0)),
        }
    }
}

/// Where the held rows are in the file.
enum HeldAt {
    /// On consecutive lines (or rows) from this one: a chunk without blank lines.
    From(Location),
    /// Each row's place.
    Each(Vec<Location>),
}

impl HeldAt {
    /// The places of `rows` by `at`; places only increase, so first and last `n - 1` apart
    /// are consecutive.
    fn of(rows: std::ops::Range<usize>, at: &dyn Fn(usize) -> Location) -> HeldAt {
        let span = rows.len().saturating_sub(1) as u64;
        match (at(rows.start), at(rows.end.saturating_sub(1))) {
            (Location::Line(a), Location::Line(b)) if b.checked_sub(a) == Some(span) => {
                HeldAt::From(Location::Line(a))
            }
            (Location::Row(a), Location::Row(b)) if b.checked_sub(a) == Some(span) => {
                HeldAt::From(Location::Row(a))
            }
            _ => HeldAt::Each(rows.map(at).collect()),
        }
    }
}

/// Reads a table twice at once: `ahead` scans it a chunk at a time, and `behind` places rows
/// up to the first of a kernel not planned yet, holding the rest of that chunk until it is.
/// A kernel's plan is known when the scan meets the next kernel's first row (or the end), so
/// `behind` stays at most one kernel behind, and a kernel ends as soon as its plan is known
/// (its last rows do not wait for the next kernel's scan); memory holds plans and at most
/// one chunk's rows.
fn lock_step(
    file: &str,
    mut ahead: impl Chunks,
    mut behind: impl Chunks,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut scan = State::scan(file);
    let mut stream = Stream {
        file,
        plans: VecDeque::new(),
        current: None,
        cap,
        out,
    };
    // Chunks scanned and read by `behind`, and the rows `behind` holds.
    let (mut scanned, mut placed) = (0usize, 0usize);
    let mut held: Option<Held> = None;
    while ahead.next(&mut |df, after, at| scan.ingest(df, after, at))? {
        let ended = scan.take_plans();
        scanned += 1;
        if ended.is_empty() {
            continue;
        }
        stream.plans.extend(ended);
        if let Some(h) = held.take() {
            held = stream.ingest_or_hold(&h.rows, &|i| h.location(i))?;
        }
        while held.is_none() && placed < scanned {
            let read = behind.next(&mut |df, _, at| {
                held = stream.ingest_or_hold(df, at)?;
                Ok(())
            })?;
            if !read {
                return Err(changed(file, Location::Byte(0)));
            }
            placed += 1;
        }
    }
    stream.plans.extend(scan.plans()?);
    if let Some(h) = held {
        stream.ingest(&h.rows, &|i| h.location(i), false)?;
    }
    behind.each(&mut |df, _, at| stream.ingest(df, at, false).map(|_| ()))?;
    stream.finish()
}

#[cfg(test)]
mod tests;

/// The kernel's id of row `r`'s instruction (`None`: the first read did not see it), each
/// distinct name of the chunk looked up once (`ids`).
#[inline]
fn inst_id(r: &Row, chunk: &Chunk, plan: &Plan, ids: &mut [Option<u32>]) -> Option<u32> {
    let found = match r.inst {
        Some(code) => *ids[code as usize].get_or_insert_with(|| {
            plan.insts
                .get(chunk.inst_name(r.inst))
                .copied()
                .unwrap_or(u32::MAX)
        }),
        None => plan.insts.get("access").copied().unwrap_or(u32::MAX),
    };
    (found != u32::MAX).then_some(found)
}
