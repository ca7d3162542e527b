//! The built-in kernels, one file each (its generator and its `BUILTIN` entry, listed once in
//! `gen::BUILTINS`), and what their generators share: [`Emit`] (one thread's accesses),
//! [`build`] (a kernel CTA by CTA), grid and index helpers, the seeded random CSR structure of
//! the sparse kernels, and the bounds on sizes.
//!
//! Dense kernels: vector add, matrix multiplication, transposes, stencils, column copy, strided
//! read and reduction. Irregular kernels on seeded random data: histogram with atomics, SpMV
//! (CSR) and a BFS frontier expansion. Multi-launch kernels, for the communication analysis
//! (Rieber 2017 table 6.1): an iterative 2-D stencil (hotspot-like), a two-step histogram, a
//! tiled n-body and BFS by levels, each a series of launches that pass data through global
//! memory. And the micro-benchmark of Dasgupta 2011 (`merging`).

use super::params::{GenError, Layout, Params};
use super::{
    Builtin,
    Generate::{Launches, One},
};
use crate::rng::Rng;
use crate::trace::{Access, AccessKind, AtomicOp, Dim3, Kernel, KernelBuilder, MemSpace, Order};

pub(super) mod bfs;
pub(super) mod bfs_levels;
pub(super) mod column_copy;
pub(super) mod histogram;
pub(super) mod histogram2;
pub(super) mod hotspot;
pub(super) mod matmul;
pub(super) mod matmul_tiled;
pub(super) mod merging;
pub(super) mod nbody;
pub(super) mod reduction;
pub(super) mod spmv;
pub(super) mod stencil2d;
pub(super) mod stencil3d;
pub(super) mod strided;
pub(super) mod transpose;
pub(super) mod transpose_tiled;
pub(super) mod vecadd;

/// Emits one thread's stream into the builder.
pub(super) struct Emit<'a> {
    b: &'a mut KernelBuilder,
    thread: u32,
    size: u16,
    err: Option<crate::trace::BuildError>,
    /// Accesses pushed for this thread.
    pushed: u64,
}

impl Emit<'_> {
    fn push(&mut self, inst: u32, dyn_inst: u32, kind: AccessKind, addr: u64, size: u16) {
        let a = Access {
            thread: self.thread,
            inst,
            dyn_inst,
            addr,
            size,
            kind,
            space: MemSpace::Global,
        };
        self.pushed += 1;
        if let Err(e) = self.b.push(a) {
            self.err.get_or_insert(e);
        }
    }
    pub fn ld(&mut self, inst: u32, dyn_inst: u32, addr: u64) {
        self.push(inst, dyn_inst, AccessKind::Load, addr, self.size);
    }
    pub fn ld_sized(&mut self, inst: u32, dyn_inst: u32, addr: u64, size: u16) {
        self.push(inst, dyn_inst, AccessKind::Load, addr, size);
    }
    pub fn st(&mut self, inst: u32, dyn_inst: u32, addr: u64) {
        self.push(inst, dyn_inst, AccessKind::Store, addr, self.size);
    }
    pub fn st_sized(&mut self, inst: u32, dyn_inst: u32, addr: u64, size: u16) {
        self.push(inst, dyn_inst, AccessKind::Store, addr, size);
    }
    pub fn atomic(&mut self, inst: u32, op: crate::trace::AtomicOp, addr: u64, size: u16) {
        self.push(inst, 0, AccessKind::Atomic(op), addr, size);
    }
    /// An atomic of instance `dyn_inst` (inside a loop).
    pub fn atomic_at(
        &mut self,
        inst: u32,
        dyn_inst: u32,
        op: crate::trace::AtomicOp,
        addr: u64,
        size: u16,
    ) {
        self.push(inst, dyn_inst, AccessKind::Atomic(op), addr, size);
    }
    pub fn bar(&mut self) {
        self.push(0, 0, AccessKind::Barrier, 0, 0);
    }
}

/// Runs `body` for every thread of the grid in linear order (CTA-major).
pub(super) fn build(
    p: &Params,
    name: &str,
    grid: Dim3,
    block: Dim3,
    elem: u64,
    insts: &[&str],
    mut body: impl FnMut(Dim3, Dim3, &mut Emit),
) -> Result<Kernel, GenError> {
    if grid.count().saturating_mul(block.count()) > 1 << 28 {
        return Err(p.invalid(format!(
            "{} threads is more than the generators support (2^28)",
            grid.count().saturating_mul(block.count())
        )));
    }
    let mut b = KernelBuilder::new(name, grid, block, Order::PerThread)
        .map_err(|e| p.invalid(e.to_string()))?;
    for i in insts {
        b.instruction(i, None);
    }
    let tpb = block.count();
    let ctas = grid.count();
    let mut accesses = 0u64;
    // With a sink, each CTA's rows go to it once built and the kernel keeps none.
    let header = b.header();
    let streamed = p.sink(|s| s.begin_kernel(&header))?;
    let mut rows = crate::trace::Columns::default();
    for c in 0..ctas {
        let cta = grid.from_linear(c);
        for t in 0..tpb {
            let mut e = Emit {
                b: &mut b,
                thread: (c * tpb + t) as u32,
                size: elem as u16,
                err: None,
                pushed: 0,
            };
            body(cta, block.from_linear(t), &mut e);
            if let Some(err) = e.err {
                return Err(p.invalid(err.to_string()));
            }
            accesses += e.pushed;
        }
        if streamed {
            b.take_rows(&mut rows);
            p.sink(|s| s.cta(c as u32, &rows))?;
        }
        p.keep_going(c + 1, ctas, accesses)?;
    }
    p.launch_done(accesses);
    if streamed {
        p.sink(|s| s.end_kernel())?;
        // Its rows went to the sink: finishing would count rows for every thread (4 bytes a
        // thread) to give a kernel nobody reads.
        return Ok(b.header());
    }
    Ok(b.finish())
}

pub(super) fn grid_for(n: Dim3, block: Dim3) -> Dim3 {
    Dim3::new(
        n.x.div_ceil(block.x),
        n.y.div_ceil(block.y),
        n.z.div_ceil(block.z),
    )
}

pub(super) fn gid(cta: Dim3, block: Dim3, tid: Dim3) -> (u64, u64, u64) {
    (
        cta.x as u64 * block.x as u64 + tid.x as u64,
        cta.y as u64 * block.y as u64 + tid.y as u64,
        cta.z as u64 * block.z as u64 + tid.z as u64,
    )
}

/// The most threads (elements) of the one-dimensional kernels: 2^30, so that thread ids fit in
/// 32 bits with room to spare. A kernel is generated CTA by CTA where it is streamed
/// (`sim`, `gen`), so its size is bounded by time, not memory (the app's generator guards its
/// memory itself).
const MAX_N: u64 = 1 << 30;

/// Launches at most, so a generator cannot be asked for an unbounded series.
const MAX_STEPS: u64 = 1024;

/// A seeded random CSR structure: row lengths uniform in 1..=2*avg-1, sorted column ids.
pub(super) fn random_csr(rows: u64, cols: u64, avg: u64, rng: &mut Rng) -> (Vec<u64>, Vec<u64>) {
    let mut ptr = Vec::with_capacity(rows as usize + 1);
    let mut idx = Vec::new();
    ptr.push(0);
    for _ in 0..rows {
        let len = 1 + rng.below((2 * avg - 1).max(1));
        let start = idx.len();
        for _ in 0..len {
            idx.push(rng.below(cols));
        }
        idx[start..].sort_unstable();
        ptr.push(idx.len() as u64);
    }
    (ptr, idx)
}
