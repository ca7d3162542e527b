//! Crawford's (2014) OpenCL traces (Crawford 2014, listing 5.1):
//!
//! ```text
//! local size:16 16 1
//! 0x9CAE000F0000319|0x0|0x10000000000
//! 0x1|0x10|0x0
//! --
//! ```
//!
//! - The header gives the work-group (CTA) size.
//! - An access is three hex fields `A|T|L`. `A` holds the 32-bit address in its top half, then
//!   4 bits `F` (read) or `A` (write), then 28 bits of instruction name `Mx` written as a base-36
//!   number (0x319 = "M1"). `T` is the global thread id, 20 bits a dimension, x in the low bits.
//!   `L` is the loop snapshot (§4.4): up to three 20-bit sections of 4-bit loop id and 16-bit
//!   iteration, the outermost loop in the top section, so comparing snapshots as numbers
//!   compares (outer loop, its iteration, next loop, ...) as the scheduler of §5.3.2 does.
//! - A record whose first field is the single digit 1 (local) or 2 (global) is a barrier of
//!   thread `T`.
//! - `--` ends one execution of the kernel; each becomes a kernel launch. A file whose last
//!   records have no `--` after them is truncated.
//!
//! The grid is the smallest that holds every thread id. An access's dynamic instance is the
//! rank of its loop snapshot among the kernel's snapshots (equal snapshots, equal instances),
//! and instruction ids follow the `Mx` numbering (program order).

use std::io::BufRead;

use rustc_hash::FxHashMap;

use super::lex::{self, Lines};
use super::model::{Access, AccessKind, Dim3, KernelBuilder, MemSpace, Order};
use super::{Fail, KernelSink, Location, TraceError};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "crawford",
    aliases: &[],
    label: "Crawford (OpenCL)",
    description:
        "Crawford's (2014) OpenCL traces (local size: header, addr-type-inst|tid|loop records)",
    form: Form::Plain(super::Format::Crawford),
};

mod stream;
pub(crate) use stream::stream_into;

const DIM_BITS: u32 = 20;
const DIM_MASK: u64 = (1 << DIM_BITS) - 1;

/// Decodes a base-36 instruction name (`0x319` -> `M1`).
pub fn base36(mut v: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if v == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while v > 0 {
        out.push(DIGITS[(v % 36) as usize]);
        v /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

struct Exec {
    b: KernelBuilder,
    /// Global thread id (x | y << 20 | z << 40) -> provisional dense thread id.
    threads: FxHashMap<u64, u32>,
    thread_ids: Vec<u64>,
    /// Loop snapshot -> provisional instance; ranked at the end.
    loops: FxHashMap<u64, u32>,
    loop_values: Vec<u64>,
    insts: FxHashMap<u64, u32>,
}

impl Exec {
    fn new(block: Dim3) -> Result<Self, String> {
        let tpb = block.count();
        let b = KernelBuilder::new(
            "kernel",
            Dim3::x((u32::MAX as u64 / tpb) as u32),
            block,
            Order::PerThread,
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            b,
            threads: FxHashMap::default(),
            thread_ids: Vec::new(),
            loops: FxHashMap::default(),
            loop_values: Vec::new(),
            insts: FxHashMap::default(),
        })
    }

    fn thread(&mut self, gid: u64) -> Result<u32, String> {
        if let Some(&t) = self.threads.get(&gid) {
            return Ok(t);
        }
        let t = self.thread_ids.len() as u32;
        if t as u64 >= self.b.threads() {
            return Err("too many threads".into());
        }
        self.threads.insert(gid, t);
        self.thread_ids.push(gid);
        Ok(t)
    }

    fn finish(mut self, index: usize) -> Result<super::Kernel, String> {
        let block = self.b.block();
        let mut max = [0u64; 3];
        for &g in &self.thread_ids {
            for (d, m) in max.iter_mut().enumerate() {
                *m = (*m).max((g >> (DIM_BITS * d as u32)) & DIM_MASK);
            }
        }
        let grid = Dim3::new(
            ((max[0] + 1).div_ceil(block.x as u64)) as u32,
            ((max[1] + 1).div_ceil(block.y as u64)) as u32,
            ((max[2] + 1).div_ceil(block.z as u64)) as u32,
        );
        let map: Vec<u32> = self
            .thread_ids
            .iter()
            .map(|&g| {
                let at = |d: u32| ((g >> (DIM_BITS * d)) & DIM_MASK) as u32;
                let (x, y, z) = (at(0), at(1), at(2));
                let cta = Dim3::new(x / block.x, y / block.y, z / block.z);
                let tid = Dim3::new(x % block.x, y % block.y, z % block.z);
                (grid.linear(cta) * block.count() + block.linear(tid)) as u32
            })
            .collect();
        self.b
            .reshape(grid, block, &map)
            .map_err(|e| format!("global size {grid} x local size {block}: {e}"))?;
        // Rank the loop snapshots.
        let mut order: Vec<u32> = (0..self.loop_values.len() as u32).collect();
        order.sort_by_key(|&i| self.loop_values[i as usize]);
        let mut rank = vec![0u32; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        self.b.remap_dyn(&rank).map_err(|e| e.to_string())?;
        self.b.sort_instructions_by_pc();
        self.b
            .info_mut()
            .attributes
            .push(("execution".into(), index.to_string()));
        self.b.finish_checked().map_err(|e| e.to_string())
    }
}

/// One record of an execution, decoded.
#[derive(Clone, Copy)]
enum Record {
    /// A barrier of thread `gid` (x | y << 20 | z << 40).
    Barrier { gid: u64 },
    Access {
        gid: u64,
        addr: u64,
        kind: AccessKind,
        /// The instruction's `Mx` name as a number.
        code: u64,
        /// The loop snapshot.
        loops: u64,
    },
}

impl Record {
    fn gid(&self) -> u64 {
        match *self {
            Record::Barrier { gid } | Record::Access { gid, .. } => gid,
        }
    }
}

/// What a read does with an execution's records (`record`, with the work-group size) and
/// with its end (`end`, at its `--` line, with its index among the executions).
trait Executions {
    fn record(&mut self, block: Dim3, r: Record) -> Result<(), Fail>;
    fn end(&mut self, index: usize) -> Result<(), Fail>;
}

/// Walks a trace, checking every line and handing each record to `v`; an execution without
/// its `--` is an error.
fn walk<R: BufRead>(r: R, file: &str, v: &mut dyn Executions) -> Result<(), TraceError> {
    let mut lines = Lines::new(r);
    let io = |e| TraceError::io(file, e);
    let mut block: Option<Dim3> = None;
    // The line of the current execution's first record.
    let mut open: Option<u64> = None;
    let mut executions = 0usize;
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let fail = |f: Fail| match f {
            Fail::File(m) => err(m),
            Fail::Out(e) => e,
        };
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let Some(blk) = block else {
            block = Some(local_size(t).map_err(err)?);
            continue;
        };
        if t.starts_with(b"--") && t.iter().all(|&c| c == b'-') {
            if open.take().is_some() {
                v.end(executions).map_err(fail)?;
                executions += 1;
            }
            continue;
        }
        open.get_or_insert(n);
        v.record(blk, record(t).map_err(err)?).map_err(fail)?;
    }
    if block.is_none() {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            "empty file: expected `local size:X Y Z`",
        ));
    }
    if let Some(first) = open {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            format!(
                "the execution starting at line {first} has no `--` end marker: the trace is truncated"
            ),
        ));
    }
    Ok(())
}

/// The header line's work-group size.
fn local_size(t: &[u8]) -> Result<Dim3, String> {
    let dims = t
        .strip_prefix(b"local size:")
        .ok_or_else(|| format!("expected `local size:X Y Z`, found `{}`", lex::show(t)))?;
    let v: Vec<u64> = lex::fields(dims)
        .map(lex::dec)
        .collect::<Option<_>>()
        .unwrap_or_default();
    let d = match v[..] {
        [x] => Dim3::new(x as u32, 1, 1),
        [x, y] => Dim3::new(x as u32, y as u32, 1),
        [x, y, z] => Dim3::new(x as u32, y as u32, z as u32),
        _ => Dim3::new(0, 0, 0),
    };
    if d.count() == 0 || v.iter().any(|&x| x > u32::MAX as u64) || d.count() > u32::MAX as u64 {
        return Err(format!(
            "expected one to three local sizes of at least 1, found `{}`",
            lex::show(dims)
        ));
    }
    Ok(d)
}

/// Decodes one `A|T|L` record line.
fn record(t: &[u8]) -> Result<Record, String> {
    let mut f = t.split(|&c| c == b'|');
    let (Some(a), Some(tid), rest) = (f.next(), f.next(), f.next()) else {
        return Err(format!(
            "expected `ADDR-TYPE-INST|THREAD|LOOPS` (hex fields split by '|'), found `{}`",
            lex::show(t)
        ));
    };
    if f.next().is_some() {
        return Err("expected three '|'-separated fields, found more".into());
    }
    let field = |s: &[u8], what: &str| {
        lex::hex(s.trim_ascii())
            .ok_or_else(|| format!("{what}: expected hex, found `{}`", lex::show(s)))
    };
    let gid = field(tid, "thread id")?;
    if gid >> (3 * DIM_BITS) != 0 {
        return Err(format!(
            "thread id {gid:#x} has bits above the three 20-bit dimensions"
        ));
    }
    let a_digits = a.trim_ascii().strip_prefix(b"0x").unwrap_or(a.trim_ascii());
    let av = field(a, "address/type/instruction")?;
    if a_digits.len() == 1 && (av == 1 || av == 2) {
        return Ok(Record::Barrier { gid });
    }
    let loops = field(
        rest.ok_or("expected the loop snapshot as the third field")?,
        "loop snapshot",
    )?;
    let kind = match (av >> 28) & 0xf {
        0xF => AccessKind::Load,
        0xA => AccessKind::Store,
        k => {
            return Err(format!(
                "access type nibble {k:#x}: expected F (read) or A (write)"
            ))
        }
    };
    Ok(Record::Access {
        gid,
        addr: av >> 32,
        kind,
        code: av & 0x0fff_ffff,
        loops,
    })
}

/// The whole read: each execution is built in memory and handed on at its end.
struct Whole<'a> {
    exec: Option<Exec>,
    out: &'a mut dyn KernelSink,
}

impl Executions for Whole<'_> {
    fn record(&mut self, block: Dim3, r: Record) -> Result<(), Fail> {
        let e = match self.exec.as_mut() {
            Some(e) => e,
            None => self.exec.insert(Exec::new(block)?),
        };
        let thread = e.thread(r.gid())?;
        let Record::Access {
            addr,
            kind,
            code,
            loops,
            ..
        } = r
        else {
            return Ok(e
                .b
                .push(Access::barrier(thread))
                .map_err(|x| x.to_string())?);
        };
        let inst = match e.insts.get(&code) {
            Some(&i) => i,
            None => {
                let i = e.b.instruction(&base36(code), Some(code));
                e.insts.insert(code, i);
                i
            }
        };
        let next = e.loop_values.len() as u32;
        let dyn_inst = *e.loops.entry(loops).or_insert(next);
        if dyn_inst == next {
            e.loop_values.push(loops);
        }
        e.b.push(Access {
            thread,
            inst,
            dyn_inst,
            addr,
            size: 4,
            kind,
            space: MemSpace::Global,
        })
        .map_err(|x| x.to_string())?;
        Ok(())
    }
    fn end(&mut self, index: usize) -> Result<(), Fail> {
        if let Some(e) = self.exec.take() {
            self.out.kernel(e.finish(index)?)?;
        }
        Ok(())
    }
}

/// Reads a Crawford 2014 trace; each `--`-terminated execution becomes a kernel.
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    walk(r, file, &mut Whole { exec: None, out })
}

/// Crawford's format's reader: per-thread streams, handed on CTA by CTA after an external
/// sort (`spill.rs`).
pub(crate) struct CrawfordReader;

impl super::reader::TraceReader for CrawfordReader {
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
        stream_into(r, cx.file, super::spill::DEFAULT_CAP, out)
    }
    fn sorts_to_stream(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
