//! The built-in kernel `vecadd`: vector add `c[i] = a[i] + b[i]`.

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "vecadd",
    description: "vector add c[i] = a[i] + b[i]",
    params: "n=4096 block=256",
    generate: One(vecadd),
    source: include_str!("../../../../../kernels/vecadd.wsk"),
    compute_per_memory: Some(8.0),
};
