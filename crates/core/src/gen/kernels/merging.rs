//! The built-in kernel `merging`: Dasgupta 2011's micro-benchmark: chains of dependent loads
//! spawning one transaction size (width 32/64/128 or vector=1), warps apart (merge=0) or sharing
//! segments (merge=1).

use super::*;

/// `merging`: `width` 32, 64 or 128 (the transaction size its scalar requests spawn: two per
/// request), or `vector=1` (float4 loads, two 32-byte transactions per request); `merge=1`
/// for the indexing with merging (32, 64 and vector only, as in the thesis); `loads` per
/// iteration (its CONFIG), `iters` iterations. The thesis ran `blocks=120 iters=100`; the
/// defaults are smaller (one block per SM of the C1060, 25 iterations) to stay quick.
pub fn merging(p: &mut Params) -> Result<Kernel, GenError> {
    let width = p.u64("width", 32)?;
    let merge = p.u64("merge", 0)? != 0;
    let vector = p.u64("vector", 0)? != 0;
    let blocks = p.count("blocks", 30, 1 << 20)? as u64;
    let bs = p.count("block", 256, 1024)? as u64;
    let iters = p.count("iters", 25, 1 << 16)? as u64;
    let config = p.count("loads", 4, 64)? as u64;
    if !vector && ![32, 64, 128].contains(&width) {
        return Err(p.invalid(format!("width must be 32, 64 or 128, found {width}")));
    }
    if merge && !vector && width == 128 {
        return Err(p.invalid(
            "the thesis has no merging variant of the 128-byte case (table 17); use width=32 or 64",
        ));
    }
    if bs % 32 != 0 {
        return Err(p.invalid(format!(
            "block ({bs}) must be a multiple of the warp size 32"
        )));
    }
    let warps = bs / 32;
    let chain = config * iters;
    // Element size, step per load (the value of dm_src) and the start index of a thread.
    let elem: u64 = if vector { 16 } else { 4 };
    let step: u64 = match (vector, width) {
        (true, _) => 2,
        (false, 128) => 64,
        _ => 32,
    };
    let start = move |b: u64, t: u64| -> u64 {
        let (w, lane) = (t / 32, t % 32);
        match (vector, width, merge) {
            // Table 18.
            (true, _, false) => b * warps * iters * config * 2 + w * iters * config * 2,
            (true, _, true) => b * warps * iters * config * 2 + w * 2,
            // Table 17 and table 2.
            (false, 32, false) => {
                b * warps * chain * 32 + w * chain * 32 + (lane / 16) * 8 + lane % 8
            }
            (false, 32, true) => b * bs + (t / 16) * 8 + t % 8,
            // Table 17 and table 3.
            (false, 64, false) => b * warps * chain * 32 + w * chain * 32 + lane,
            (false, 64, true) => b * bs + t,
            // Table 17, figure 33.
            _ => b * warps * chain * 32 * 2 + w * chain * 32 * 2 + lane * 2,
        }
    };
    let span = start(blocks - 1, bs - 1) + chain * step + 1;
    let mut l = Layout::new(p)?;
    let src = l.alloc(span * elem);
    let names: Vec<String> = (0..config).map(|i| format!("ld_{i}")).collect();
    let insts: Vec<&str> = names.iter().map(String::as_str).collect();
    build(
        p,
        "merging",
        Dim3::x(blocks as u32),
        Dim3::x(bs as u32),
        elem,
        &insts,
        |cta, tid, t| {
            let mut index = start(cta.x as u64, tid.x as u64);
            for it in 0..iters {
                for c in 0..config {
                    t.ld(c as u32, it as u32, src + index * elem);
                    index += step;
                }
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "merging",
    description: "Dasgupta 2011's micro-benchmark: chains of dependent loads spawning one transaction size (width 32/64/128 or vector=1), warps apart (merge=0) or sharing segments (merge=1)",
    params: "width=32 merge=0 vector=0 blocks=30 block=256 iters=25 loads=4",
    generate: One(merging),
    source: include_str!("../../../../../kernels/merging.wsk"),
    // Dasgupta 2011 table 6: 4336 instructions per warp for 100 iterations without
    // loads (0.846 ms at 1312 MHz, 32 warps, 2 rounds); each load adds itself and two
    // instructions of index arithmetic (convert, add): (4336 + 400 x 2) / 400 = 12.8.
    compute_per_memory: Some(12.8),
};
