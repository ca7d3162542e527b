//! The built-in kernel `reduction`: tree reduction in shared memory, one result per CTA.

use super::*;

pub fn reduction(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 8192, MAX_N)? as u64;
    let bx = p.dim3("block", Dim3::x(256))?.count();
    let e = p.elem()?;
    if !bx.is_power_of_two() {
        return Err(p.invalid(format!("block ({bx}) must be a power of two")));
    }
    let mut l = Layout::new(p)?;
    let per_cta = 2 * bx;
    let ctas = n.div_ceil(per_cta);
    let (input, output) = (l.alloc(n * e), l.alloc(ctas * e));
    let steps = bx.trailing_zeros();
    build(
        p,
        "reduction",
        Dim3::x(ctas as u32),
        Dim3::x(bx as u32),
        e,
        &["ld_in_lo", "ld_in_hi", "st_out"],
        |cta, tid, t| {
            let i = cta.x as u64 * per_cta + tid.x as u64;
            if i < n {
                t.ld(0, 0, input + i * e);
            }
            if i + bx < n {
                t.ld(1, 0, input + (i + bx) * e);
            }
            t.bar(); // partial sums stored to shared memory
            for _ in 0..steps {
                t.bar(); // one level of the shared-memory tree
            }
            if tid.x == 0 {
                t.st(2, 0, output + cta.x as u64 * e);
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "reduction",
    description: "tree reduction in shared memory, one result per CTA",
    params: "n=8192 block=256",
    generate: One(reduction),
    source: include_str!("../../../../../kernels/reduction.wsk"),
    compute_per_memory: Some(18.0),
};
