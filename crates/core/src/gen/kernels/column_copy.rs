//! The built-in kernel `column-copy`: each thread copies one row: column-wise warp accesses
//! (Nugteren et al. 2014 fig. 3).

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "column-copy",
    description:
        "each thread copies one row: column-wise warp accesses (Nugteren et al. 2014 fig. 3)",
    params: "threads=256 width=1024",
    generate: One(column_copy),
    source: include_str!("../../../../../kernels/column-copy.wsk"),
    compute_per_memory: Some(1.7),
};
