//! cuda-memtrace binary traces (the tracer of Rieber 2017), in both layouts:
//!
//! - **thesis** (Rieber 2017 §5.1.2): a first byte giving the record size (24) and a LF, a kernel
//!   name line, then 24-byte records; an all-zero record ends the kernel and the next kernel's
//!   name line (or the end of the file) follows.
//! - **later**: 10 magic bytes, `0x19` or `0x1a` then `CUDATRACE`; `0x00` + u16 length + name
//!   starts a kernel; `0xFF` + record is one access; `0xFE` + record + u16 count is a run of
//!   `count` accesses at consecutive addresses of that size.
//!
//! A record is three little-endian u64: `desc = smid << 32 | type << 28 | size` (type 0 load,
//! 1 store, 2 atomic), `addr`, `cta = x << 32 | y << 16 | z`.
//!
//! The tracer records no thread ids, so each CTA is modelled as one warp of 32 threads: a warp
//! instruction is a maximal sequence of consecutive records of the same CTA, SM, type and size,
//! at most 32 accesses, spread over lanes 0 to 31 (the tracer writes one warp's records
//! together). The grid is the smallest that holds every recorded CTA. Kernels are
//! [`Order::Issued`] and keep each CTA's SM, so each SM's L1 sees the CTAs that ran on it.

use std::io::BufRead;

use rustc_hash::FxHashMap;

mod cta_sms;
mod stream;
mod walk;

pub(crate) use stream::{stream_from, stream_into};
use walk::walk;

use super::model::{Access, AccessKind, AtomicOp, Dim3, KernelBuilder, MemSpace, Order};
use super::{Fail, KernelSink, TraceError};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "memtrace",
    aliases: &["cuda-memtrace"],
    label: "cuda-memtrace",
    description: "cuda-memtrace binary .trc (Rieber 2017), thesis or later layout",
    form: Form::Plain(super::Format::MemTrace),
};

const LANES: u32 = 32;
const RECORD: usize = 24;

/// True when `head` starts like a cuda-memtrace file of either layout.
pub fn looks_like(head: &[u8]) -> bool {
    (head.len() >= 10 && matches!(head[0], 0x19 | 0x1a) && &head[1..10] == b"CUDATRACE")
        || (head.len() >= 2 && head[0] == RECORD as u8 && head[1] == b'\n')
}

/// One decoded record.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Record {
    sm: u32,
    kind: AccessKind,
    size: u16,
    addr: u64,
    cta: Dim3,
}

impl Record {
    /// The record as thread `thread`'s access, of instruction `inst` and instance `dyn_inst`.
    fn access(&self, thread: u32, inst: u32, dyn_inst: u32) -> Access {
        Access {
            thread,
            inst,
            dyn_inst,
            addr: self.addr,
            size: self.size,
            kind: self.kind,
            space: MemSpace::Global,
        }
    }
}

fn decode(rec: &[u8; RECORD]) -> Result<Record, String> {
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[i * 8..i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    let (desc, addr, cta) = (word(0), word(1), word(2));
    let kind = match (desc >> 28) & 0xf {
        0 => AccessKind::Load,
        1 => AccessKind::Store,
        2 => AccessKind::Atomic(AtomicOp::Add),
        t => {
            return Err(format!(
                "record type {t}: expected 0 (load), 1 (store) or 2 (atomic)"
            ))
        }
    };
    let size = desc & 0x0fff_ffff;
    if size == 0 || size > u16::MAX as u64 {
        return Err(format!("record size {size}: expected 1 to 65535 bytes"));
    }
    Ok(Record {
        sm: (desc >> 32) as u32,
        kind,
        size: size as u16,
        addr,
        cta: Dim3::new(
            (cta >> 32) as u32,
            ((cta >> 16) & 0xffff) as u32,
            (cta & 0xffff) as u32,
        ),
    })
}

/// What the walker over a file's records tells: a kernel begins (the previous one, if any,
/// has ended), one record of it, it ends.
trait Records {
    fn begin(&mut self, name: String) -> Result<(), Fail>;
    fn record(&mut self, r: Record) -> Result<(), Fail>;
    /// A run record: `count` records from `r` on, each `r.size` bytes after the one before
    /// (the tracer's encoding of a warp's accesses to consecutive addresses). Told one by
    /// one unless the visitor takes a run at once (the scan, which only counts them).
    fn run(&mut self, r: Record, count: u64) -> Result<(), Fail> {
        for i in 0..count {
            let addr = r.addr.wrapping_add(i * r.size as u64);
            self.record(Record { addr, ..r })?;
        }
        Ok(())
    }
    fn end(&mut self) -> Result<(), Fail>;
    /// False where the records are not looked at: the walk may then step over access and run
    /// records without decoding them or telling of them.
    fn wants_records(&self) -> bool {
        true
    }
}

/// A kernel's CTAs as they appear: dense ids in order of appearance, and each one's SM.
#[derive(Default)]
struct Ctas {
    ids: FxHashMap<Dim3, u32>,
    list: Vec<Dim3>,
    sm: Vec<u32>,
    /// The last record's CTA, SM and id: a warp's records come together.
    last: Option<(Dim3, u32, u32)>,
}

impl Ctas {
    /// The dense id of `r`'s CTA; a CTA seen on two SMs is an error.
    fn id(&mut self, r: &Record) -> Result<u32, String> {
        if let Some((cta, sm, id)) = self.last {
            if cta == r.cta && sm == r.sm {
                return Ok(id);
            }
        }
        let id = self.lookup(r)?;
        self.last = Some((r.cta, r.sm, id));
        Ok(id)
    }

    fn lookup(&mut self, r: &Record) -> Result<u32, String> {
        let cta = match self.ids.get(&r.cta) {
            Some(&c) => c,
            None => {
                let c = self.list.len() as u32;
                if c >= u32::MAX / LANES - 1 {
                    return Err("too many CTAs".into());
                }
                self.ids.insert(r.cta, c);
                self.list.push(r.cta);
                self.sm.push(r.sm);
                c
            }
        };
        if self.sm[cta as usize] != r.sm {
            return Err(format!(
                "CTA {} was recorded on SM {} and on SM {}",
                r.cta, self.sm[cta as usize], r.sm
            ));
        }
        Ok(cta)
    }

    /// The smallest grid that holds every CTA, checked against `rows` as every reader checks
    /// a kernel's shape, and the SM of each CTA of it by linear id (SM 0 for CTAs that never
    /// appear, so that the table is total).
    fn grid(&self, name: &str, rows: usize) -> Result<(Dim3, Vec<u32>), String> {
        let mut max = Dim3::new(0, 0, 0);
        for c in &self.list {
            max = Dim3::new(max.x.max(c.x), max.y.max(c.y), max.z.max(c.z));
        }
        let grid = grid_holding(name, max, rows)?;
        let mut cta_sm = vec![0; grid.count() as usize];
        for (c, &idx) in self.list.iter().enumerate() {
            cta_sm[grid.linear(idx) as usize] = self.sm[c];
        }
        Ok((grid, cta_sm))
    }
}

/// The smallest grid that holds the CTA indices up to `max`, checked as every reader checks a
/// kernel's shape (`rows` of it) and small enough to number its threads.
fn grid_holding(name: &str, max: Dim3, rows: usize) -> Result<Dim3, String> {
    let grid = Dim3::holding(max).unwrap_or(Dim3::new(u32::MAX, u32::MAX, u32::MAX));
    if grid.count().saturating_mul(LANES as u64) > u32::MAX as u64 {
        return Err(format!(
            "kernel {name}: the CTA indices span a grid {grid} too large to model"
        ));
    }
    super::check_density(grid, Dim3::x(LANES), rows, Order::Issued).map_err(|e| e.to_string())?;
    Ok(grid)
}

/// The name of the instruction of records of `kind` and `size`: the tracer records no PC.
fn instruction_name(kind: AccessKind, size: u16) -> String {
    format!("{}.{}", kind.token(), size)
}

/// Groups records into warp instructions: a maximal run of records of one CTA, type and
/// size, at most 32, on lanes 0 to 31.
#[derive(Default)]
struct Warps {
    /// The current warp instruction: its CTA, dynamic instance, type and size.
    group: Option<(u32, u32, AccessKind, u16)>,
    lane: u32,
    next_dyn: u32,
}

impl Warps {
    /// The lane and dynamic instance of the next record, of CTA `cta` (any id that tells
    /// CTAs apart).
    fn place(&mut self, cta: u32, r: &Record) -> (u32, u32) {
        let same =
            matches!(self.group, Some((c, _, k, s)) if c == cta && k == r.kind && s == r.size);
        if !same || self.lane == LANES {
            self.group = Some((cta, self.next_dyn, r.kind, r.size));
            self.next_dyn = self.next_dyn.wrapping_add(1);
            self.lane = 0;
        }
        let lane = self.lane;
        self.lane += 1;
        (lane, self.group.map_or(0, |g| g.1))
    }
}

/// Builds one kernel from records, grouping them into warp instructions.
struct KernelState {
    name: String,
    b: KernelBuilder,
    ctas: Ctas,
    insts: FxHashMap<(u8, u16), u32>,
    warps: Warps,
}

impl KernelState {
    fn new(name: String) -> Result<Self, String> {
        // Provisional grid: CTAs get dense ids as they appear; `finish` sets the real grid.
        let b = KernelBuilder::new(
            name.clone(),
            Dim3::x(u32::MAX / LANES - 1),
            Dim3::x(LANES),
            Order::Issued,
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            name,
            b,
            ctas: Ctas::default(),
            insts: FxHashMap::default(),
            warps: Warps::default(),
        })
    }

    fn push(&mut self, r: Record) -> Result<(), String> {
        let cta = self.ctas.id(&r)?;
        let code = r.kind.code();
        let inst = match self.insts.get(&(code, r.size)) {
            Some(&i) => i,
            None => {
                let i = self.b.instruction(&instruction_name(r.kind, r.size), None);
                self.insts.insert((code, r.size), i);
                i
            }
        };
        let (lane, dyn_inst) = self.warps.place(cta, &r);
        self.b
            .push(r.access(cta * LANES + lane, inst, dyn_inst))
            .map_err(|e| e.to_string())
    }

    fn finish(mut self) -> Result<super::Kernel, String> {
        let (grid, cta_sm) = self.ctas.grid(&self.name, self.b.len())?;
        let mut map = Vec::with_capacity(self.ctas.list.len() * LANES as usize);
        for &idx in &self.ctas.list {
            let lin = grid.linear(idx) as u32;
            map.extend((0..LANES).map(|l| lin * LANES + l));
        }
        self.b
            .reshape(grid, Dim3::x(LANES), &map)
            .map_err(|e| e.to_string())?;
        self.b.info_mut().cta_sm = cta_sm;
        self.b.finish_checked().map_err(|e| e.to_string())
    }
}

/// Builds whole kernels and hands each on.
struct Whole<'a> {
    current: Option<KernelState>,
    out: &'a mut dyn KernelSink,
}

impl Records for Whole<'_> {
    fn begin(&mut self, name: String) -> Result<(), Fail> {
        self.current = Some(KernelState::new(name)?);
        Ok(())
    }
    fn record(&mut self, r: Record) -> Result<(), Fail> {
        match self.current.as_mut() {
            Some(k) => Ok(k.push(r)?),
            None => Err(Fail::File("a record before any kernel".into())),
        }
    }
    fn end(&mut self) -> Result<(), Fail> {
        if let Some(k) = self.current.take() {
            self.out.kernel(k.finish()?)?;
        }
        Ok(())
    }
}

/// Reads a cuda-memtrace file of either layout, a whole kernel at a time (see
/// [`stream_into`] for one that holds no kernel whole).
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    walk(r, file, &mut Whole { current: None, out })
}

/// Writes the later layout (for tests and fuzz seeds): one `0xFF` record per access.
#[cfg(test)]
pub(crate) fn encode_later(kernels: &[(&str, Vec<[u64; 3]>)]) -> Vec<u8> {
    encode_later_runs(kernels, 1)
}

/// Writes the later layout as the tracer does: records that continue the one before (the
/// same SM, type, size and CTA, the address `size` bytes on) joined into `0xFE` runs of at
/// most `longest` (1: one `0xFF` record per access).
#[cfg(test)]
pub(crate) fn encode_later_runs(kernels: &[(&str, Vec<[u64; 3]>)], longest: u16) -> Vec<u8> {
    let mut out = vec![0x1a];
    out.extend_from_slice(b"CUDATRACE");
    let record = |out: &mut Vec<u8>, r: &[u64; 3], count: u16| {
        out.push(if count == 1 { 0xFF } else { 0xFE });
        for w in r {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if count > 1 {
            out.extend_from_slice(&count.to_le_bytes());
        }
    };
    for (name, recs) in kernels {
        out.push(0);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        let mut run: Option<([u64; 3], u16)> = None;
        for r in recs {
            let size = r[0] & 0x0fff_ffff;
            match &mut run {
                Some((first, n))
                    if *n < longest
                        && first[0] == r[0]
                        && first[2] == r[2]
                        && first[1].wrapping_add(*n as u64 * size) == r[1] =>
                {
                    *n += 1
                }
                _ => {
                    if let Some((first, n)) = run.take() {
                        record(&mut out, &first, n);
                    }
                    run = Some((*r, 1));
                }
            }
        }
        if let Some((first, n)) = run {
            record(&mut out, &first, n);
        }
    }
    out
}

/// The cuda-memtrace reader: scanned, then handed on in issue order a kernel apart (read
/// twice); read on from a chunk of issued rows by walking over the kernels before.
pub(crate) struct MemTraceReader;

impl super::reader::TraceReader for MemTraceReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_into(r, cx.file, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_into(r, cx, out)
    }
    fn streamed_reads(&self, _as_found: bool) -> u64 {
        2
    }
    fn read_on(&self) -> super::reader::ReadOn {
        super::reader::ReadOn::Reader
    }
    fn stream_from(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        at: &super::ResumePoint,
        _held: super::Held<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Option<Result<(), TraceError>> {
        match *at {
            super::ResumePoint::Issued { kernel, next_chunk } => {
                Some(stream_from(r, cx, kernel, next_chunk, out))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
