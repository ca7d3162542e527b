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
use super::{KernelSink, Location, TraceError};

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
    first_line: u64,
}

impl Exec {
    fn new(block: Dim3, line: u64) -> Result<Self, String> {
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
            first_line: line,
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

/// Reads a Crawford 2014 trace; each `--`-terminated execution becomes a kernel.
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    let mut lines = Lines::new(r);
    let io = |e| TraceError::io(file, e);
    let mut block: Option<Dim3> = None;
    let mut exec: Option<Exec> = None;
    let mut executions = 0usize;
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let Some(blk) = block else {
            let dims = t.strip_prefix(b"local size:").ok_or_else(|| {
                err(format!(
                    "expected `local size:X Y Z`, found `{}`",
                    lex::show(t)
                ))
            })?;
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
            if d.count() == 0
                || v.iter().any(|&x| x > u32::MAX as u64)
                || d.count() > u32::MAX as u64
            {
                return Err(err(format!(
                    "expected one to three local sizes of at least 1, found `{}`",
                    lex::show(dims)
                )));
            }
            block = Some(d);
            continue;
        };
        if t.starts_with(b"--") && t.iter().all(|&c| c == b'-') {
            if let Some(e) = exec.take() {
                out.kernel(e.finish(executions).map_err(err)?)?;
                executions += 1;
            }
            continue;
        }
        let e = match exec.as_mut() {
            Some(e) => e,
            None => exec.insert(Exec::new(blk, n).map_err(err)?),
        };
        let mut f = t.split(|&c| c == b'|');
        let (Some(a), Some(tid), rest) = (f.next(), f.next(), f.next()) else {
            return Err(err(format!(
                "expected `ADDR-TYPE-INST|THREAD|LOOPS` (hex fields split by '|'), found `{}`",
                lex::show(t)
            )));
        };
        if f.next().is_some() {
            return Err(err("expected three '|'-separated fields, found more".into()));
        }
        let field = |s: &[u8], what: &str| {
            lex::hex(s.trim_ascii())
                .ok_or_else(|| err(format!("{what}: expected hex, found `{}`", lex::show(s))))
        };
        let gid = field(tid, "thread id")?;
        if gid >> (3 * DIM_BITS) != 0 {
            return Err(err(format!(
                "thread id {gid:#x} has bits above the three 20-bit dimensions"
            )));
        }
        let thread = e.thread(gid).map_err(&err)?;
        let a_digits = a.trim_ascii().strip_prefix(b"0x").unwrap_or(a.trim_ascii());
        let av = field(a, "address/type/instruction")?;
        if a_digits.len() == 1 && (av == 1 || av == 2) {
            e.b.push(Access::barrier(thread))
                .map_err(|x| err(x.to_string()))?;
            continue;
        }
        let loops = field(
            rest.ok_or_else(|| err("expected the loop snapshot as the third field".into()))?,
            "loop snapshot",
        )?;
        let kind = match (av >> 28) & 0xf {
            0xF => AccessKind::Load,
            0xA => AccessKind::Store,
            k => {
                return Err(err(format!(
                    "access type nibble {k:#x}: expected F (read) or A (write)"
                )))
            }
        };
        let code = av & 0x0fff_ffff;
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
            addr: av >> 32,
            size: 4,
            kind,
            space: MemSpace::Global,
        })
        .map_err(|x| err(x.to_string()))?;
    }
    if block.is_none() {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            "empty file: expected `local size:X Y Z`",
        ));
    }
    if let Some(e) = exec {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            format!(
                "the execution starting at line {} has no `--` end marker: the trace is truncated",
                e.first_line
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// Listing 5.1 of Crawford 2014 plus the end marker.
    const LISTING: &str = "local size:16 16 1\n0x9CAE000F0000319|0x0|0x10000000000\n0x9CAE000F0000319|0x10|0x10000000000\n0x9CBB000F000031A|0x0|0x10000000000\n0x9CBB040F000031A|0x10|0x10000000000\n0x9CAE004F0000319|0x0|0x20000000000\n0x9CAE004F0000319|0x10|0x20000000000\n0x9CBB1C0F000031A|0x0|0x20000000000\n0x9CBB200F000031A|0x10|0x20000000000\n0x1|0x10|0x0\n--\n";

    #[test]
    fn decodes_listing_5_1() {
        let mut t = Trace::default();
        read_into(LISTING.as_bytes(), "l.trace", &mut t).unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.block, Dim3::new(16, 16, 1));
        // Thread ids 0 and 16 (x): work-groups 0 and 1.
        assert_eq!(k.grid, Dim3::new(2, 1, 1));
        let names: Vec<_> = k.instructions.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["M1", "M2"]);
        let a: Vec<_> = k.accesses().collect();
        // Thread 0's rows: M1 iter 1, M2 iter 1, M1 iter 2, M2 iter 2.
        let t0: Vec<_> = a
            .iter()
            .filter(|x| x.thread == 0)
            .map(|x| (x.inst, x.dyn_inst, x.addr))
            .collect();
        assert_eq!(
            t0,
            vec![
                (0, 0, 0x9CAE000),
                (1, 0, 0x9CBB000),
                (0, 1, 0x9CAE004),
                (1, 1, 0x9CBB1C0)
            ]
        );
        // Thread 16 is thread 0 of CTA 1 (linear id 256), ending with the barrier.
        let t16: Vec<_> = a
            .iter()
            .filter(|x| x.thread == 256)
            .map(|x| x.kind)
            .collect();
        assert_eq!(t16.len(), 5);
        assert_eq!(t16[4], AccessKind::Barrier);
        assert!(a.iter().all(|x| x.kind != AccessKind::Store));
    }

    #[test]
    fn missing_end_marker_and_bad_fields_are_errors() {
        let cut = LISTING.trim_end_matches("--\n");
        let e = read_into(cut.as_bytes(), "c", &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `--` end marker"), "{e}");
        for (line, want) in [
            ("0x9CAE0001000031A|0x0|0x1", "type nibble"),
            ("0x9CAE000F000031A|0xZZ|0x1", "thread id: expected hex"),
            ("0x9CAE000F000031A", "expected `ADDR-TYPE-INST"),
            ("0x9CAE000F000031A|0x0", "loop snapshot"),
        ] {
            let text = format!("local size:4\n{line}\n--\n");
            let e = read_into(text.as_bytes(), "f", &mut Trace::default())
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("f: line 2") && e.contains(want),
                "{line}: {e}"
            );
        }
        assert_eq!(base36(0x319), "M1");
        assert_eq!(base36(22 * 1296 + 36), "M10");
    }

    #[test]
    fn executions_become_launches() {
        let text = "local size:2\n0x10F0000319|0x0|0x0\n--\n0x20A0000319|0x3|0x0\n--\n";
        let mut t = Trace::default();
        read_into(text.as_bytes(), "e", &mut t).unwrap();
        assert_eq!(t.kernels.len(), 2);
        assert_eq!(t.kernels[1].grid, Dim3::x(2));
        assert_eq!(t.kernels[1].access(0).kind, AccessKind::Store);
        assert_eq!(t.kernels[1].access(0).addr, 0x20);
    }
}
