//! The built-in kernel `matmul`: naive matrix multiplication (Crawford 2014 listing 7.1).

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "matmul",
    description: "naive matrix multiplication (Crawford 2014 listing 7.1)",
    params: "n=64 block=16,16",
    generate: One(matmul),
    source: include_str!("../../../../../kernels/matmul.wsk"),
    compute_per_memory: Some(2.4),
};
