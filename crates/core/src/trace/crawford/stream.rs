//! Crawford traces handed on a CTA at a time, in bounded memory. The tracer writes each
//! work-item's records as it runs, interleaved in no useful order, and an execution's grid
//! (the smallest that holds every thread id), instruction order and instance numbers (the
//! ranks of the loop snapshots) are known only at its `--`. So each execution's records go
//! through an external sort by CTA and thread (`trace/spill.rs`), keeping each thread's
//! order; at its end the header is made and the sorted records are handed on CTA by CTA.
//! What is kept besides the sort's buffer is one entry per distinct instruction and loop
//! snapshot.

use std::io::BufRead;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{base36, walk, Executions, Record, DIM_BITS, DIM_MASK};
use crate::trace::model::{
    check_density, pack_flags, Access, AccessKind, BuildError, Dim3, KernelBuilder, MemSpace, Order,
};
use crate::trace::{spill, CtaSink, Fail, TraceError};

/// The execution being read.
struct Sorting {
    sort: spill::Sort,
    block: Dim3,
    /// The largest x, y and z thread index.
    max: [u64; 3],
    /// Instruction code -> provisional id (order of first appearance), and the codes.
    insts: FxHashMap<u64, u32>,
    codes: Vec<u64>,
    loops: FxHashSet<u64>,
}

/// Reads each execution through an external sort and hands it on a CTA at a time.
struct Stream<'a> {
    file: &'a str,
    cap: usize,
    current: Option<Sorting>,
    out: &'a mut dyn CtaSink,
}

/// A thread index's x, y and z.
fn dims(gid: u64) -> [u64; 3] {
    [0, 1, 2].map(|d| (gid >> (DIM_BITS * d)) & DIM_MASK)
}

impl Executions for Stream<'_> {
    fn record(&mut self, block: Dim3, r: Record) -> Result<(), Fail> {
        let s = self.current.get_or_insert_with(|| Sorting {
            sort: spill::Sort::new(self.cap),
            block,
            max: [0; 3],
            insts: FxHashMap::default(),
            codes: Vec::new(),
            loops: FxHashSet::default(),
        });
        // As the whole read's builder refuses its 2^32-th row.
        if s.sort.len() >= u32::MAX as u64 {
            return Err(Fail::File(BuildError::TooManyRows.to_string()));
        }
        let [x, y, z] = dims(r.gid());
        for (m, v) in s.max.iter_mut().zip([x, y, z]) {
            *m = (*m).max(v);
        }
        let b = [block.x, block.y, block.z].map(u64::from);
        // The CTA as (z, y, x) in 20-bit sections, which orders CTAs as any grid numbers them.
        let cta = (z / b[2]) << (2 * DIM_BITS) | (y / b[1]) << DIM_BITS | (x / b[0]);
        let local = block.linear(Dim3::new(
            (x % b[0]) as u32,
            (y % b[1]) as u32,
            (z % b[2]) as u32,
        )) as u32;
        let mut row = spill::Row {
            cta,
            local,
            inst: 0,
            addr: 0,
            aux: 0,
            size: 0,
            flags: pack_flags(AccessKind::Barrier, MemSpace::Global),
        };
        if let Record::Access {
            addr,
            kind,
            code,
            loops,
            ..
        } = r
        {
            let next = s.codes.len() as u32;
            row.inst = *s.insts.entry(code).or_insert_with(|| {
                s.codes.push(code);
                next
            });
            s.loops.insert(loops);
            row.addr = addr;
            row.aux = loops;
            row.size = 4;
            row.flags = pack_flags(kind, MemSpace::Global);
        }
        s.sort
            .push(row)
            .map_err(|e| Fail::Out(TraceError::io(self.file, e)))
    }

    fn end(&mut self, index: usize) -> Result<(), Fail> {
        let Some(s) = self.current.take() else {
            return Ok(());
        };
        let block = s.block;
        let grid = Dim3::new(
            ((s.max[0] + 1).div_ceil(block.x as u64)) as u32,
            ((s.max[1] + 1).div_ceil(block.y as u64)) as u32,
            ((s.max[2] + 1).div_ceil(block.z as u64)) as u32,
        );
        let threads = grid.count().saturating_mul(block.count());
        if threads == 0 || threads > u32::MAX as u64 {
            return Err(Fail::File(format!(
                "global size {grid} x local size {block}: {}",
                BuildError::BadShape
            )));
        }
        // Instructions in `Mx` order, as the whole read sorts them.
        let mut order: Vec<u32> = (0..s.codes.len() as u32).collect();
        order.sort_by_key(|&i| (s.codes[i as usize], i));
        let mut new_id = vec![0u32; order.len()];
        let mut b = KernelBuilder::new("kernel", grid, block, Order::PerThread)
            .map_err(|e| Fail::File(e.to_string()))?;
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
            let code = s.codes[old as usize];
            b.instruction(&base36(code), Some(code));
        }
        b.info_mut()
            .attributes
            .push(("execution".into(), index.to_string()));
        check_density(grid, block, s.sort.len() as usize, Order::PerThread)
            .map_err(|e| Fail::File(e.to_string()))?;
        // A snapshot's rank among the execution's snapshots is its instance.
        let mut loops: Vec<u64> = s.loops.into_iter().collect();
        loops.sort_unstable();
        self.out.begin_kernel(&b.header())?;
        let sorted = s
            .sort
            .sorted()
            .map_err(|e| Fail::Out(TraceError::io(self.file, e)))?;
        let cta_of = |c: u64| {
            let at = |d: u32| ((c >> (DIM_BITS * d)) & DIM_MASK) as u32;
            grid.linear(Dim3::new(at(0), at(1), at(2))) as u32
        };
        spill::hand_on_by_cta(
            sorted,
            self.file,
            block.count() as u32,
            self.out,
            cta_of,
            |r, thread| {
                if r.is_barrier() {
                    return Access::barrier(thread);
                }
                Access {
                    inst: new_id[r.inst as usize],
                    ..r.access(thread, loops.partition_point(|&l| l < r.aux) as u32)
                }
            },
        )?;
        Ok(self.out.end_kernel()?)
    }
}

/// Reads a Crawford trace into `out`, each execution a CTA at a time through an external
/// sort of `cap` rows a run; the kernels are those [`super::read_into`] gives.
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    file: &str,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    walk(
        r,
        file,
        &mut Stream {
            file,
            cap,
            current: None,
            out,
        },
    )
}
