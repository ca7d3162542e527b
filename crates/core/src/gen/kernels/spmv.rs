//! The built-in kernel `spmv`: SpMV in CSR, one thread per row, seeded random matrix.

use super::*;

pub fn spmv(p: &mut Params) -> Result<Kernel, GenError> {
    let rows = p.count("rows", 1024, 1 << 24)? as u64;
    let cols = p.count("cols", 1024, 1 << 30)? as u64;
    let nnz = p.count("nnz", 8, 1 << 12)? as u64;
    let bx = p.dim3("block", Dim3::x(128))?.count() as u32;
    let seed = p.u64("seed", 1)?;
    let e = p.elem()?;
    let mut rng = Rng::new(seed);
    let (ptr, idx) = random_csr(rows, cols, nnz, &mut rng);
    let total = idx.len() as u64;
    let mut l = Layout::new(p)?;
    let (row_ptr, col_idx, val, x, y) = (
        l.alloc((rows + 1) * 4),
        l.alloc(total * 4),
        l.alloc(total * e),
        l.alloc(cols * e),
        l.alloc(rows * e),
    );
    let insts = [
        "ld_row_ptr",
        "ld_row_end",
        "ld_col_idx",
        "ld_val",
        "ld_x",
        "st_y",
    ];
    build(
        p,
        "spmv",
        Dim3::x((rows as u32).div_ceil(bx)),
        Dim3::x(bx),
        e,
        &insts,
        |cta, tid, t| {
            let r = cta.x as u64 * bx as u64 + tid.x as u64;
            if r < rows {
                t.ld_sized(0, 0, row_ptr + r * 4, 4);
                t.ld_sized(1, 0, row_ptr + (r + 1) * 4, 4);
                for (it, j) in (ptr[r as usize]..ptr[r as usize + 1]).enumerate() {
                    t.ld_sized(2, it as u32, col_idx + j * 4, 4);
                    t.ld(3, it as u32, val + j * e);
                    t.ld(4, it as u32, x + idx[j as usize] * e);
                }
                t.st(5, 0, y + r * e);
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "spmv",
    description: "SpMV in CSR, one thread per row, seeded random matrix",
    params: "rows=1024 cols=1024 nnz=8 block=128 seed=1",
    generate: One(spmv),
    source: include_str!("../../../../../kernels/spmv.wsk"),
    compute_per_memory: None,
};
