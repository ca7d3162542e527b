//! The built-in kernel `histogram2`: two-step histogram: per-CTA partial histograms, then one merge
//! CTA per bin (multi-launch).

use super::*;

/// CUDA SDK histogram64's two steps: each CTA counts its slice of the data (in shared
/// memory, not traced) and writes its partial histogram; then each CTA of the merge kernel
/// sums one bin over all partial histograms.
pub fn histogram2(p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let n = p.count("n", 65536, 1 << 26)? as u64;
    let bins = p.count("bins", 64, 1 << 16)? as u64;
    let parts = p.count("ctas", 16, 1 << 16)? as u64;
    let bx = p.dim3("block", Dim3::x(256))?.count();
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let (data, partial, hist) = (l.alloc(n * e), l.alloc(parts * bins * 4), l.alloc(bins * 4));
    let per = n.div_ceil(parts);
    let count = build(
        p,
        "histogram_partial",
        Dim3::x(parts as u32),
        Dim3::x(bx as u32),
        e,
        &["ld_data", "st_partial"],
        |cta, tid, t| {
            let (c, i0) = (cta.x as u64, tid.x as u64);
            for (it, i) in (i0..per).step_by(bx as usize).enumerate() {
                if c * per + i < n {
                    t.ld(0, it as u32, data + (c * per + i) * e);
                }
            }
            t.bar();
            for b in (i0..bins).step_by(bx as usize) {
                t.st_sized(1, 0, partial + (c * bins + b) * 4, 4);
            }
        },
    )?;
    // One CTA per bin (histogram64's merge): its threads sum strided subsets of the partial
    // histograms, reduce in shared memory, and thread 0 stores the bin.
    let merge = build(
        p,
        "histogram_merge",
        Dim3::x(bins as u32),
        Dim3::x(bx as u32),
        e,
        &["ld_partial", "st_hist"],
        |cta, tid, t| {
            let b = cta.x as u64;
            for (it, c) in (tid.x as u64..parts).step_by(bx as usize).enumerate() {
                t.ld_sized(0, it as u32, partial + (c * bins + b) * 4, 4);
            }
            t.bar();
            if tid.x == 0 {
                t.st_sized(1, 0, hist + b * 4, 4);
            }
        },
    )?;
    Ok(vec![count, merge])
}

pub const BUILTIN: Builtin = Builtin {
    name: "histogram2",
    description:
        "two-step histogram: per-CTA partial histograms, then one merge CTA per bin (multi-launch)",
    params: "n=65536 bins=64 ctas=16 block=256",
    generate: Launches(histogram2),
    source: include_str!("../../../../../kernels/histogram2.wsk"),
    compute_per_memory: None,
};
