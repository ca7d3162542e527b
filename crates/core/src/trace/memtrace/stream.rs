//! cuda-memtrace kernels handed on in issue order, a chunk of rows at a time
//! ([`CtaSink::issued`]), so that a receiver that simulates holds no kernel whole: the
//! tracer's files of real applications run to many GB.
//!
//! A kernel's header must be complete before its rows (the simulation sizes its
//! per-instruction and per-CTA tables from it, and our binary format writes it first), but a
//! cuda-memtrace kernel's grid is the smallest that holds every CTA it records and its
//! instructions are numbered as they first appear, both known only at its end. So the file
//! is read twice, by two readers in lock-step: a scan of each kernel, which checks everything
//! the whole read checks and learns the kernel's grid, CTA-to-SM table, instructions and row
//! count; then a second read of the same kernel hands on its rows. So the first kernel starts
//! after its own scan, not the whole file's, and the scan holds one kernel's plan. A stream
//! that cannot be read twice (a pipe) is read a kernel at a time instead, with the same
//! result.

use std::collections::VecDeque;
use std::io::BufRead;

use rustc_hash::FxHashMap;

use super::cta_sms::CtaSms;
use super::walk::Walker;
use super::{instruction_name, read_into, Fail, Record, Records, Warps, LANES};
use crate::trace::model::{Dim3, Kernel, KernelBuilder, Order};
use crate::trace::sink::{IssuedChunks, ISSUED_CHUNK_ROWS};
use crate::trace::{source, BuildError, CtaSink, Ctx, TraceError};

/// What the scan learned of one kernel.
struct Plan {
    /// Name, grid, instructions and CTA-to-SM table; no rows.
    header: Kernel,
    /// Instruction id of each (type code, size).
    insts: FxHashMap<(u8, u16), u32>,
    rows: u64,
}

/// The kernel being scanned.
struct Scanning {
    name: String,
    ctas: CtaSms,
    insts: FxHashMap<(u8, u16), u32>,
    /// The instructions' keys while they are at most [`FEW_INSTS`]: a kernel has a few
    /// (type, size) pairs, which a look along a short list finds faster than a hash.
    few: Vec<(u8, u16)>,
    names: Vec<String>,
    rows: u64,
}

/// Instructions looked up along [`Scanning::few`] (past them, in the map).
const FEW_INSTS: usize = 8;

/// The first read: each kernel's [`Plan`], taken by the second read as it begins the kernel.
#[derive(Default)]
struct Scan {
    plans: VecDeque<Plan>,
    current: Option<Scanning>,
}

impl Records for Scan {
    fn begin(&mut self, name: String) -> Result<(), Fail> {
        self.current = Some(Scanning {
            name,
            ctas: CtaSms::default(),
            insts: FxHashMap::default(),
            few: Vec::new(),
            names: Vec::new(),
            rows: 0,
        });
        Ok(())
    }
    fn record(&mut self, r: Record) -> Result<(), Fail> {
        let Some(k) = self.current.as_mut() else {
            return Err(Fail::File("a record before any kernel".into()));
        };
        k.ctas.note(&r)?;
        let key = (r.kind.code(), r.size);
        let known = match k.names.len() <= FEW_INSTS {
            true => k.few.contains(&key),
            false => k.insts.contains_key(&key),
        };
        if !known {
            k.insts.insert(key, k.names.len() as u32);
            k.names.push(instruction_name(r.kind, r.size));
            if k.few.len() < FEW_INSTS {
                k.few.push(key);
            }
        }
        k.rows += 1;
        if k.rows >= u32::MAX as u64 {
            return Err(Fail::File(BuildError::TooManyRows.to_string()));
        }
        Ok(())
    }
    /// A run's records share their CTA, SM, type and size: the first is noted as any
    /// record, the others only counted (a cuda-memtrace file is mostly runs of 32, so the scan
    /// does a thirty-second of the work per access).
    fn run(&mut self, r: Record, count: u64) -> Result<(), Fail> {
        if count == 0 {
            return Ok(());
        }
        self.record(r)?;
        if let Some(k) = self.current.as_mut() {
            k.rows += count - 1;
            if k.rows >= u32::MAX as u64 {
                return Err(Fail::File(BuildError::TooManyRows.to_string()));
            }
        }
        Ok(())
    }
    fn end(&mut self) -> Result<(), Fail> {
        let Some(k) = self.current.take() else {
            return Ok(());
        };
        let (grid, cta_sm) = k.ctas.grid(&k.name, k.rows as usize)?;
        let mut b = KernelBuilder::new(k.name, grid, Dim3::x(LANES), Order::Issued)
            .map_err(|e| Fail::File(e.to_string()))?;
        for name in &k.names {
            b.instruction(name, None);
        }
        b.info_mut().cta_sm = cta_sm;
        self.plans.push_back(Plan {
            header: b.header(),
            insts: k.insts,
            rows: k.rows,
        });
        Ok(())
    }
}

/// The second read: hands on each kernel's rows in issue order.
struct Stream<'a> {
    plans: VecDeque<Plan>,
    current: Option<Plan>,
    warps: Warps,
    rows: IssuedChunks,
    given: u64,
    /// Resuming: the rows of the next kernel already given to the copy (placed, so that
    /// warp instructions group as before, but not handed on), and its beginning not sent.
    skip: Option<u64>,
    out: &'a mut dyn CtaSink,
}

/// The second read found what the scan did not.
fn changed() -> Fail {
    Fail::File("the file changed while it was read (it differs from its first read)".into())
}

impl Records for Stream<'_> {
    fn begin(&mut self, name: String) -> Result<(), Fail> {
        let plan = self.plans.pop_front().ok_or_else(changed)?;
        if plan.header.name != name {
            return Err(changed());
        }
        if self.skip.is_none() {
            self.out.begin_kernel(&plan.header)?;
        }
        self.current = Some(plan);
        self.warps = Warps::default();
        self.given = 0;
        Ok(())
    }
    fn record(&mut self, r: Record) -> Result<(), Fail> {
        let Some(p) = self.current.as_ref() else {
            return Err(changed());
        };
        let grid = p.header.grid;
        if !grid.contains(r.cta) {
            return Err(changed());
        }
        let inst = *p.insts.get(&(r.kind.code(), r.size)).ok_or_else(changed)?;
        let cta = grid.linear(r.cta) as u32;
        let (lane, dyn_inst) = self.warps.place(cta, &r);
        self.given += 1;
        if let Some(skip) = self.skip {
            if self.given <= skip {
                return Ok(());
            }
            self.skip = None;
        }
        self.rows
            .push(&r.access(cta * LANES + lane, inst, dyn_inst));
        self.rows.hand_on_full(self.out)?;
        Ok(())
    }
    fn end(&mut self) -> Result<(), Fail> {
        let Some(p) = self.current.take() else {
            return Ok(());
        };
        // A copy taken after a kernel's last chunk (which may be short) reads on from its end;
        // one given more chunks than the kernel has now was taken of another file.
        if self
            .skip
            .take()
            .is_some_and(|skip| skip >= self.given + ISSUED_CHUNK_ROWS as u64)
        {
            return Err(changed());
        }
        self.rows.hand_on(self.out)?;
        if self.given != p.rows {
            return Err(changed());
        }
        Ok(self.out.end_kernel()?)
    }
}

/// Reads a cuda-memtrace file into `out`, each kernel's rows in chunks (read twice, a kernel
/// of each read in turn; a pipe is read a kernel at a time).
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    if ctx.file_bytes == 0 {
        return read_into(r, ctx.file, out);
    }
    read_twice(r, ctx, None, out)
}

/// Reads a cuda-memtrace file on from kernel `kernel`'s chunk `next_chunk` of issued rows
/// (each of [`ISSUED_CHUNK_ROWS`] rows), for a copy of a session taken there: the scan walks
/// over the kernels before, and the second read starts at that kernel (a compressed file is
/// decompressed again up to it); its first rows are placed but not handed on (nor is its
/// beginning: the copy has begun it). Then as [`stream_into`].
pub(crate) fn stream_from<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    kernel: u32,
    next_chunk: u32,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    read_twice(r, ctx, Some((kernel, next_chunk)), out)
}

/// Walks over a kernel, stepping over its records (the kernels before a resume point).
struct Over;

impl Records for Over {
    fn begin(&mut self, _: String) -> Result<(), Fail> {
        Ok(())
    }
    fn record(&mut self, _: Record) -> Result<(), Fail> {
        Ok(())
    }
    fn run(&mut self, _: Record, _: u64) -> Result<(), Fail> {
        Ok(())
    }
    fn end(&mut self) -> Result<(), Fail> {
        Ok(())
    }
    fn wants_records(&self) -> bool {
        false
    }
}

/// The two reads in lock-step, from the file's start or on `from` a kernel's chunk.
fn read_twice<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    from: Option<(u32, u32)>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let fewer = || {
        TraceError::parse(
            ctx.file,
            crate::trace::Location::Byte(0),
            "the file changed while it was read: it has fewer kernels than at its first read",
        )
    };
    let mut scan = Scan::default();
    let mut ahead = Walker::new(r, ctx.file)?;
    let mut behind = match from {
        None => Walker::new(
            source::open(ctx.path, ctx.wrap, ctx.watch)?.reader,
            ctx.file,
        )?,
        Some((kernel, _)) => {
            // The second read starts where the scan finds the kernel.
            for _ in 0..kernel {
                if !ahead.kernel(&mut Over)? {
                    return Err(fewer());
                }
            }
            let start = ahead.next_kernel_at();
            // A compressed file is decompressed again up to there.
            let again = source::reopen_at(ctx.path, ctx.file, start.offset, ctx.watch)?;
            Walker::starting_at(again, ctx.file, start)
        }
    };
    let mut stream = Stream {
        plans: VecDeque::new(),
        current: None,
        warps: Warps::default(),
        rows: IssuedChunks::default(),
        given: 0,
        skip: None,
        out,
    };
    if let Some((_, next_chunk)) = from {
        stream.skip = Some(next_chunk as u64 * ISSUED_CHUNK_ROWS as u64);
    }
    let mut scanned = 0;
    while ahead.kernel(&mut scan)? {
        scanned += 1;
        stream.plans.append(&mut scan.plans);
        if !behind.kernel(&mut stream)? {
            return Err(fewer());
        }
    }
    // Read on from a kernel the file no longer has.
    if from.is_some() && scanned == 0 {
        return Err(fewer());
    }
    // A kernel more than the scan found begins with no plan: the file changed.
    behind.kernel(&mut stream)?;
    Ok(())
}
