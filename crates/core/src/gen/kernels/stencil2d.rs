//! The built-in kernel `stencil2d`: 2-D 5-point stencil.

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "stencil2d",
    description: "2-D 5-point stencil",
    params: "nx=66 ny=66 block=16,16",
    generate: One(stencil2d),
    source: include_str!("../../../../../kernels/stencil2d.wsk"),
    compute_per_memory: Some(5.8),
};
