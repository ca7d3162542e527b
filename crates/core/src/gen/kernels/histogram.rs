//! The built-in kernel `histogram`: histogram with global atomic adds on seeded random data.

use super::*;

pub fn histogram(p: &mut Params) -> Result<Kernel, GenError> {
    let n = p.count("n", 4096, 1 << 26)? as u64;
    let bins = p.count("bins", 256, 1 << 24)? as u64;
    let bx = p.dim3("block", Dim3::x(256))?.count() as u32;
    let seed = p.u64("seed", 1)?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (data, hist) = (l.alloc(n * e), l.alloc(bins * 4));
    let mut rng = Rng::new(seed);
    let values: Vec<u64> = (0..n).map(|_| rng.below(bins)).collect();
    build(
        p,
        "histogram",
        Dim3::x((n as u32).div_ceil(bx)),
        Dim3::x(bx),
        e,
        &["ld_data", "atom_hist"],
        |cta, tid, t| {
            let i = cta.x as u64 * bx as u64 + tid.x as u64;
            if i < n {
                t.ld(0, 0, data + i * e);
                t.atomic(1, AtomicOp::Add, hist + values[i as usize] * 4, 4);
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "histogram",
    description: "histogram with global atomic adds on seeded random data",
    params: "n=4096 bins=256 block=256 seed=1",
    generate: One(histogram),
    source: include_str!("../../../../../kernels/histogram.wsk"),
    compute_per_memory: None,
};
