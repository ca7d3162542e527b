//! The built-in kernel `stencil3d`: 3-D 7-point Jacobi stencil (Crawford 2014 listing 7.3).

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "stencil3d",
    description: "3-D 7-point Jacobi stencil (Crawford 2014 listing 7.3)",
    params: "nx=18 ny=18 nz=10 block=16,4,1",
    generate: One(stencil3d),
    source: include_str!("../../../../../kernels/stencil3d.wsk"),
    compute_per_memory: Some(6.8),
};
