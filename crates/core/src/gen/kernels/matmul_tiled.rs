//! The built-in kernel `matmul-tiled`: tiled matrix multiplication with shared-memory tiles (global
//! accesses only).

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "matmul-tiled",
    description: "tiled matrix multiplication with shared-memory tiles (global accesses only)",
    params: "n=64 tile=16",
    generate: One(matmul_tiled),
    source: include_str!("../../../../../kernels/matmul-tiled.wsk"),
    compute_per_memory: Some(80.7),
};
