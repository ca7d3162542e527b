//! The built-in kernel `hotspot`: iterative 2-D 5-point stencil, one launch per step, ping-pong
//! buffers (multi-launch).

use super::*;

/// Rodinia's hotspot without its pyramid: every step reads the 5-point neighbourhood of each
/// cell (clamped at the border) from one buffer and a power map, and writes the other buffer.
pub fn hotspot(p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let nx = p.count("nx", 64, 1 << 14)? as u64;
    let ny = p.count("ny", 64, 1 << 14)? as u64;
    let steps = p.count("steps", 4, MAX_STEPS)?;
    let block = p.dim3("block", Dim3::new(16, 16, 1))?;
    let e = p.elem()?;
    let mut l = Layout::new(p)?;
    let bufs = [l.alloc(nx * ny * e), l.alloc(nx * ny * e)];
    let power = l.alloc(nx * ny * e);
    let grid = grid_for(Dim3::new(nx as u32, ny as u32, 1), block);
    let insts = [
        "ld_center",
        "ld_north",
        "ld_south",
        "ld_west",
        "ld_east",
        "ld_power",
        "st_temp",
    ];
    (0..steps)
        .map(|s| {
            let (src, dst) = (bufs[s as usize % 2], bufs[(s as usize + 1) % 2]);
            build(p, "hotspot", grid, block, e, &insts, |cta, tid, t| {
                let (x, y, _) = gid(cta, block, tid);
                if x >= nx || y >= ny {
                    return;
                }
                let at = |x: u64, y: u64| (y * nx + x) * e;
                for (i, (cx, cy)) in [
                    (x, y),
                    (x, y.saturating_sub(1)),
                    (x, (y + 1).min(ny - 1)),
                    (x.saturating_sub(1), y),
                    ((x + 1).min(nx - 1), y),
                ]
                .into_iter()
                .enumerate()
                {
                    t.ld(i as u32, 0, src + at(cx, cy));
                }
                t.ld(5, 0, power + at(x, y));
                t.st(6, 0, dst + at(x, y));
            })
        })
        .collect()
}

pub const BUILTIN: Builtin = Builtin {
    name: "hotspot",
    description:
        "iterative 2-D 5-point stencil, one launch per step, ping-pong buffers (multi-launch)",
    params: "nx=64 ny=64 steps=4 block=16,16",
    generate: Launches(hotspot),
    source: include_str!("../../../../../kernels/hotspot.wsk"),
    compute_per_memory: Some(5.8),
};
