//! The built-in kernel `strided`: strided read `a[i * stride]`.

use super::*;

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

pub const BUILTIN: Builtin = Builtin {
    name: "strided",
    description: "strided read a[i * stride]",
    params: "n=4096 stride=32 block=256",
    generate: One(strided),
    source: include_str!("../../../../../kernels/strided.wsk"),
    compute_per_memory: Some(24.0),
};
