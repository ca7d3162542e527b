//! The built-in kernel `transpose`: naive matrix transpose (Crawford 2014 listing 7.2).

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "transpose",
    description: "naive matrix transpose (Crawford 2014 listing 7.2)",
    params: "width=64 height=64 block=16,16",
    generate: One(transpose),
    source: include_str!("../../../../../kernels/transpose.wsk"),
    compute_per_memory: Some(10.5),
};
