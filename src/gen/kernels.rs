//! Dense kernels: vector add, matrix multiplication, transposes, stencils, column copy,
//! strided read and reduction.

use super::params::{GenError, Layout, Params};
use crate::trace::{Access, AccessKind, Dim3, Kernel, KernelBuilder, MemSpace, Order};

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

pub fn vecadd(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 4096, MAX_N)? as u64;
    let block = p.dim3("block", Dim3::x(256))?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (a, b, c) = (l.alloc(n * e), l.alloc(n * e), l.alloc(n * e));
    let grid = Dim3::x((n as u32).div_ceil(block.count() as u32));
    build(
        p,
        "vecadd",
        grid,
        Dim3::x(block.count() as u32),
        e,
        &["ld_a", "ld_b", "st_c"],
        |cta, tid, t| {
            let i = gid(cta, Dim3::x(block.count() as u32), tid).0;
            if i < n {
                t.ld(0, 0, a + i * e);
                t.ld(1, 0, b + i * e);
                t.st(2, 0, c + i * e);
            }
        },
    )
}

pub fn matmul(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 64, 4096)? as u64;
    let block = p.dim3("block", Dim3::new(16, 16, 1))?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (a, b, c) = (l.alloc(n * n * e), l.alloc(n * n * e), l.alloc(n * n * e));
    let grid = grid_for(Dim3::new(n as u32, n as u32, 1), block);
    build(
        p,
        "matmul",
        grid,
        block,
        e,
        &["ld_A", "ld_B", "st_C"],
        |cta, tid, t| {
            let (col, row, _) = gid(cta, block, tid);
            if row < n && col < n {
                for k in 0..n {
                    t.ld(0, k as u32, a + (row * n + k) * e);
                    t.ld(1, k as u32, b + (k * n + col) * e);
                }
                t.st(2, 0, c + (row * n + col) * e);
            }
        },
    )
}

pub fn matmul_tiled(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 64, 4096)? as u64;
    let tile = p.count("tile", 16, 32)? as u64;
    let e = p.elem()?;
    if n % tile != 0 {
        return Err(p.invalid(format!("n ({n}) must be a multiple of tile ({tile})")));
    }
    let mut l = Layout::new(p)?;
    let (a, b, c) = (l.alloc(n * n * e), l.alloc(n * n * e), l.alloc(n * n * e));
    let block = Dim3::new(tile as u32, tile as u32, 1);
    let grid = grid_for(Dim3::new(n as u32, n as u32, 1), block);
    build(
        p,
        "matmul-tiled",
        grid,
        block,
        e,
        &["ld_A_tile", "ld_B_tile", "st_C"],
        |cta, tid, t| {
            let (col, row, _) = gid(cta, block, tid);
            for s in 0..n / tile {
                t.ld(0, s as u32, a + (row * n + s * tile + tid.x as u64) * e);
                t.ld(1, s as u32, b + ((s * tile + tid.y as u64) * n + col) * e);
                t.bar(); // tiles loaded into shared memory
                t.bar(); // partial products done before the next tile overwrites them
            }
            t.st(2, 0, c + (row * n + col) * e);
        },
    )
}

pub fn transpose(p: &mut Params) -> Result<Kernel, GenError> {
    let w = p.count("width", 64, 1 << 16)? as u64;
    let h = p.count("height", 64, 1 << 16)? as u64;
    let block = p.dim3("block", Dim3::new(16, 16, 1))?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (odata, idata) = (l.alloc(w * h * e), l.alloc(w * h * e));
    let grid = grid_for(Dim3::new(w as u32, h as u32, 1), block);
    build(
        p,
        "transpose",
        grid,
        block,
        e,
        &["ld_idata", "st_odata"],
        |cta, tid, t| {
            let (col, row, _) = gid(cta, block, tid);
            if row < h && col < w {
                t.ld(0, 0, idata + (row * w + col) * e);
                t.st(1, 0, odata + (col * h + row) * e);
            }
        },
    )
}

pub fn transpose_tiled(p: &mut Params) -> Result<Kernel, GenError> {
    let w = p.count("width", 64, 1 << 16)? as u64;
    let h = p.count("height", 64, 1 << 16)? as u64;
    let tile = p.count("tile", 16, 32)? as u64;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (odata, idata) = (l.alloc(w * h * e), l.alloc(w * h * e));
    let block = Dim3::new(tile as u32, tile as u32, 1);
    let grid = grid_for(Dim3::new(w as u32, h as u32, 1), block);
    build(
        p,
        "transpose-tiled",
        grid,
        block,
        e,
        &["ld_idata", "st_odata"],
        |cta, tid, t| {
            let (x, y) = (
                cta.x as u64 * tile + tid.x as u64,
                cta.y as u64 * tile + tid.y as u64,
            );
            if x < w && y < h {
                t.ld(0, 0, idata + (y * w + x) * e);
            }
            t.bar();
            let (x2, y2) = (
                cta.y as u64 * tile + tid.x as u64,
                cta.x as u64 * tile + tid.y as u64,
            );
            if x2 < h && y2 < w {
                t.st(1, 0, odata + (y2 * h + x2) * e);
            }
        },
    )
}

pub fn stencil3d(p: &mut Params) -> Result<Kernel, GenError> {
    let nx = p.count("nx", 18, 4096)? as u64;
    let ny = p.count("ny", 18, 4096)? as u64;
    let nz = p.count("nz", 10, 4096)? as u64;
    let block = p.dim3("block", Dim3::new(16, 4, 1))?;
    let e = p.elem()?;
    if nx < 3 || ny < 3 || nz < 3 {
        return Err(p.invalid("nx, ny and nz must be at least 3"));
    }
    let mut l = Layout::new(p)?;
    let (a0, anext) = (l.alloc(nx * ny * nz * e), l.alloc(nx * ny * nz * e));
    let grid = grid_for(
        Dim3::new(nx as u32 - 2, ny as u32 - 2, nz as u32 - 2),
        block,
    );
    let idx = move |i: u64, j: u64, k: u64| i + nx * (j + ny * k);
    let insts = [
        "ld_k+1",
        "ld_k-1",
        "ld_j+1",
        "ld_j-1",
        "ld_i+1",
        "ld_i-1",
        "ld_center",
        "st_Anext",
    ];
    build(p, "stencil3d", grid, block, e, &insts, |cta, tid, t| {
        let (gx, gy, gz) = gid(cta, block, tid);
        let (i, j, k) = (gx + 1, gy + 1, gz + 1);
        if i < nx - 1 && j < ny - 1 && k < nz - 1 {
            let neighbours = [
                idx(i, j, k + 1),
                idx(i, j, k - 1),
                idx(i, j + 1, k),
                idx(i, j - 1, k),
                idx(i + 1, j, k),
                idx(i - 1, j, k),
                idx(i, j, k),
            ];
            for (n, at) in neighbours.into_iter().enumerate() {
                t.ld(n as u32, 0, a0 + at * e);
            }
            t.st(7, 0, anext + idx(i, j, k) * e);
        }
    })
}

pub fn stencil2d(p: &mut Params) -> Result<Kernel, GenError> {
    let nx = p.count("nx", 66, 1 << 16)? as u64;
    let ny = p.count("ny", 66, 1 << 16)? as u64;
    let block = p.dim3("block", Dim3::new(16, 16, 1))?;
    let e = p.elem()?;
    if nx < 3 || ny < 3 {
        return Err(p.invalid("nx and ny must be at least 3"));
    }
    let mut l = Layout::new(p)?;
    let (input, output) = (l.alloc(nx * ny * e), l.alloc(nx * ny * e));
    let grid = grid_for(Dim3::new(nx as u32 - 2, ny as u32 - 2, 1), block);
    build(
        p,
        "stencil2d",
        grid,
        block,
        e,
        &[
            "ld_up",
            "ld_left",
            "ld_center",
            "ld_right",
            "ld_down",
            "st_out",
        ],
        |cta, tid, t| {
            let (gx, gy, _) = gid(cta, block, tid);
            let (i, j) = (gx + 1, gy + 1);
            if i < nx - 1 && j < ny - 1 {
                for (n, at) in [
                    (j - 1) * nx + i,
                    j * nx + i - 1,
                    j * nx + i,
                    j * nx + i + 1,
                    (j + 1) * nx + i,
                ]
                .into_iter()
                .enumerate()
                {
                    t.ld(n as u32, 0, input + at * e);
                }
                t.st(5, 0, output + (j * nx + i) * e);
            }
        },
    )
}

pub fn column_copy(p: &mut Params) -> Result<Kernel, GenError> {
    let threads = p.count("threads", 256, 1024)? as u64;
    let width = p.count("width", 1024, 1 << 20)? as u64;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (src, dst) = (l.alloc(threads * width * e), l.alloc(threads * width * e));
    build(
        p,
        "column-copy",
        Dim3::x(1),
        Dim3::x(threads as u32),
        e,
        &["ld_src", "st_dst"],
        |_, tid, t| {
            let row = tid.x as u64;
            for j in 0..width {
                t.ld(0, j as u32, src + (row * width + j) * e);
                t.st(1, j as u32, dst + (row * width + j) * e);
            }
        },
    )
}

pub fn strided(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 4096, MAX_N)? as u64;
    let stride = p.count("stride", 32, 1 << 20)? as u64;
    let block = p.dim3("block", Dim3::x(256))?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let a = l.alloc(n * stride * e);
    let bx = block.count() as u32;
    build(
        p,
        "strided",
        Dim3::x((n as u32).div_ceil(bx)),
        Dim3::x(bx),
        e,
        &["ld_a"],
        |cta, tid, t| {
            let i = cta.x as u64 * bx as u64 + tid.x as u64;
            if i < n {
                t.ld(0, 0, a + i * stride * e);
            }
        },
    )
}

pub fn reduction(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 8192, MAX_N)? as u64;
    let bx = p.dim3("block", Dim3::x(256))?.count();
    let e = p.elem()?;
    if !bx.is_power_of_two() {
        return Err(p.invalid(format!("block ({bx}) must be a power of two")));
    }
    let mut l = Layout::new(p)?;
    let per_cta = 2 * bx;
    let ctas = n.div_ceil(per_cta);
    let (input, output) = (l.alloc(n * e), l.alloc(ctas * e));
    let steps = bx.trailing_zeros();
    build(
        p,
        "reduction",
        Dim3::x(ctas as u32),
        Dim3::x(bx as u32),
        e,
        &["ld_in_lo", "ld_in_hi", "st_out"],
        |cta, tid, t| {
            let i = cta.x as u64 * per_cta + tid.x as u64;
            if i < n {
                t.ld(0, 0, input + i * e);
            }
            if i + bx < n {
                t.ld(1, 0, input + (i + bx) * e);
            }
            t.bar(); // partial sums stored to shared memory
            for _ in 0..steps {
                t.bar(); // one level of the shared-memory tree
            }
            if tid.x == 0 {
                t.st(2, 0, output + cta.x as u64 * e);
            }
        },
    )
}
