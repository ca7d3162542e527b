//! The built-in kernel `transpose-tiled`: tiled transpose through a shared-memory tile.

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "transpose-tiled",
    description: "tiled transpose through a shared-memory tile",
    params: "width=64 height=64 tile=16",
    generate: One(transpose_tiled),
    source: include_str!("../../../../../kernels/transpose-tiled.wsk"),
    compute_per_memory: Some(20.5),
};
