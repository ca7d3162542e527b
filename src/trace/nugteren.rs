//! Nugteren et al.'s (2014) trace format (the `.trc` files of Nugteren et al.'s released GPU cache model):
//!
//! ```text
//! blocksize: 16 16 1
//! 0 0 268435456 4
//! 0 0 268435968 4
//! 1 1 268436000 4
//! ```
//!
//! After the header, one access per line: `tid dir addr bytes` in decimal, `dir` 0 for a load
//! and 1 for a store, `tid` a flat global thread id (`block * threads_per_block + local`).
//! Only the order within a thread is meaningful. The kernel gets a 1-D grid of as many blocks
//! as the largest thread id needs; a thread's k-th load is instance k of instruction `load`
//! and its k-th store instance k of instruction `store`, so a warp's k-th loads issue
//! together, as in the released model.

use std::io::{BufRead, Write};

use super::lex::{self, Lines};
use super::model::{Access, AccessKind, Dim3, Kernel, KernelBuilder, MemSpace, Order, Trace};
use super::{Location, TraceError};

pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    let err = |line: u64, msg: String| TraceError::parse(file, Location::Line(line), msg);
    let mut lines = Lines::new(r);
    let mut block: Option<Dim3> = None;
    let mut rows: Vec<(u32, bool, u64, u16)> = Vec::new();
    let mut max_tid = 0u32;
    while let Some((n, line)) = lines.next_line().map_err(|e| TraceError::io(file, e))? {
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        if block.is_none() {
            let dims = t.strip_prefix(b"blocksize:").ok_or_else(|| {
                err(
                    n,
                    format!("expected `blocksize: X Y Z`, found `{}`", lex::show(t)),
                )
            })?;
            let v: Option<Vec<u32>> = lex::fields(dims)
                .map(|x| lex::dec(x).and_then(|v| u32::try_from(v).ok()))
                .collect();
            let v = v.ok_or_else(|| {
                err(
                    n,
                    format!(
                        "expected three whole numbers after `blocksize:`, found `{}`",
                        lex::show(dims)
                    ),
                )
            })?;
            match v[..] {
                [x, y, z] if x > 0 && y > 0 && z > 0 => {
                    block = Some(Dim3 { x, y, z });
                }
                _ => {
                    return Err(err(
                        n,
                        format!(
                            "expected three block dimensions of at least 1, found `{}`",
                            lex::show(dims)
                        ),
                    ))
                }
            }
            continue;
        }
        let mut f = lex::fields(t);
        let (Some(tid), Some(dir), Some(addr), Some(bytes), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(err(
                n,
                format!(
                    "expected `tid dir addr bytes` (4 decimal fields), found {} fields",
                    lex::fields(t).count()
                ),
            ));
        };
        let tid = lex::dec(tid)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                err(
                    n,
                    format!(
                        "thread id: expected a whole number, found `{}`",
                        lex::show(tid)
                    ),
                )
            })?;
        let store = match dir {
            b"0" => false,
            b"1" => true,
            d => {
                return Err(err(
                    n,
                    format!(
                        "direction: expected 0 (load) or 1 (store), found `{}`",
                        lex::show(d)
                    ),
                ))
            }
        };
        let addr = lex::dec(addr).ok_or_else(|| {
            err(
                n,
                format!(
                    "address: expected a decimal number, found `{}`",
                    lex::show(addr)
                ),
            )
        })?;
        let bytes = lex::dec(bytes)
            .and_then(|v| u16::try_from(v).ok())
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                err(
                    n,
                    format!(
                        "size: expected 1 to 65535 bytes, found `{}`",
                        lex::show(bytes)
                    ),
                )
            })?;
        max_tid = max_tid.max(tid);
        rows.push((tid, store, addr, bytes));
    }
    let block = block.ok_or_else(|| err(0, "empty file: expected `blocksize: X Y Z`".into()))?;
    let tpb = block.count();
    let blocks = (max_tid as u64 / tpb + 1) as u32;
    super::check_density(Dim3::x(blocks), block, rows.len(), Order::PerThread)
        .map_err(|e| err(0, e.to_string()))?;
    let mut b = KernelBuilder::new("kernel", Dim3::x(blocks), block, Order::PerThread)
        .map_err(|e| err(0, e.to_string()))?;
    let load = b.instruction("load", None);
    let store = b.instruction("store", None);
    b.reserve(rows.len());
    // Per-thread occurrence counts of loads and stores.
    let threads = (blocks as u64 * tpb) as usize;
    let mut counts = vec![(0u32, 0u32); threads];
    for (tid, is_store, addr, size) in rows {
        let c = &mut counts[tid as usize];
        let (inst, dyn_inst) = if is_store {
            c.1 += 1;
            (store, c.1 - 1)
        } else {
            c.0 += 1;
            (load, c.0 - 1)
        };
        b.push(Access {
            thread: tid,
            inst,
            dyn_inst,
            addr,
            size,
            kind: if is_store {
                AccessKind::Store
            } else {
                AccessKind::Load
            },
            space: MemSpace::Global,
        })
        .map_err(|e| err(0, e.to_string()))?;
    }
    Ok(Trace {
        kernels: vec![b.finish_checked().map_err(|e| err(0, e.to_string()))?],
    })
}

/// Writes one kernel in this format, so that the released model can read it: global and local
/// loads as direction 0, stores and atomics as 1, in each thread's order; barriers and
/// accesses to other spaces (which bypass the L1) are left out, as the released tracer does.
pub fn write<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    let b = k.block;
    writeln!(w, "blocksize: {} {} {}", b.x, b.y, b.z)?;
    let cols = k.columns();
    for i in 0..k.len() {
        let (kind, space) = super::model_flags(cols.flags[i]);
        if kind == AccessKind::Barrier || !space.reaches_l1() {
            continue;
        }
        writeln!(
            w,
            "{} {} {} {}",
            cols.thread[i],
            kind.is_write() as u8,
            cols.addr[i],
            cols.size[i]
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_threads_in_block_major_order() {
        let text = "blocksize: 2 1 1\n0 0 100 4\n3 0 200 4\n0 1 104 4\n0 0 108 4\n";
        let t = read(text.as_bytes(), "a.trc").unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.num_ctas(), 2);
        assert_eq!(k.threads_per_cta(), 2);
        let a: Vec<_> = k.accesses().collect();
        assert_eq!(a.len(), 4);
        // Thread 0's rows stay in file order: load 0, store 0, load 1.
        assert_eq!(
            a.iter()
                .filter(|x| x.thread == 0)
                .map(|x| (x.addr, x.inst, x.dyn_inst))
                .collect::<Vec<_>>(),
            vec![(100, 0, 0), (104, 1, 0), (108, 0, 1)]
        );
        assert_eq!(a.iter().find(|x| x.thread == 3).map(|x| x.addr), Some(200));
    }

    #[test]
    fn writes_what_it_reads() {
        let text = "blocksize: 2 1 1\n0 0 100 4\n3 0 200 8\n0 1 104 4\n0 0 108 4\n";
        let t = read(text.as_bytes(), "a.trc").unwrap();
        let mut out = Vec::new();
        write(&t.kernels[0], &mut out).unwrap();
        let back = read(out.as_slice(), "b.trc").unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line, what) in [
            ("0 0 1 4\n", 1, "blocksize"),
            ("blocksize: 2 1\n", 1, "three"),
            ("blocksize: 2 1 1\n0 0 1\n", 2, "4 decimal fields"),
            ("blocksize: 2 1 1\n\n0 2 1 4\n", 3, "direction"),
            ("blocksize: 2 1 1\n0 0 0x10 4\n", 2, "address"),
            ("blocksize: 2 1 1\n0 0 16 0\n", 2, "size"),
        ] {
            let e = read(text.as_bytes(), "bad.trc").unwrap_err().to_string();
            assert!(e.contains("bad.trc"), "{e}");
            assert!(e.contains(&format!("line {line}")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
