//! The built-in kernel `nbody`: tiled n-body, alternating force and update launches (multi-launch).

use super::*;

/// N-body in alternating launches: the force kernel reads every body's position through
/// shared-memory tiles (one load per thread per tile) and writes its bodies' accelerations;
/// the update kernel reads its bodies' position, velocity and acceleration and writes
/// position and velocity. Positions and velocities are float4 (16 bytes).
pub fn nbody(p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let n = p.count("n", 512, 1 << 16)? as u64;
    let steps = p.count("steps", 3, MAX_STEPS)?;
    let bx = p.dim3("block", Dim3::x(64))?.count();
    const E: u64 = 16;
    let mut l = Layout::new(p)?;
    let (pos, vel, acc) = (l.alloc(n * E), l.alloc(n * E), l.alloc(n * E));
    let grid = Dim3::x(n.div_ceil(bx) as u32);
    let block = Dim3::x(bx as u32);
    let tiles = n.div_ceil(bx);
    let mut out = Vec::with_capacity(2 * steps as usize);
    for _ in 0..steps {
        out.push(build(
            p,
            "nbody_forces",
            grid,
            block,
            E,
            &["ld_tile", "st_acc"],
            |cta, tid, t| {
                let i = cta.x as u64 * bx + tid.x as u64;
                for tile in 0..tiles {
                    let j = tile * bx + tid.x as u64;
                    if j < n {
                        t.ld(0, tile as u32, pos + j * E);
                    }
                    t.bar();
                }
                if i < n {
                    t.st(1, 0, acc + i * E);
                }
            },
        )?);
        out.push(build(
            p,
            "nbody_update",
            grid,
            block,
            E,
            &["ld_pos", "ld_vel", "ld_acc", "st_vel", "st_pos"],
            |cta, tid, t| {
                let i = cta.x as u64 * bx + tid.x as u64;
                if i < n {
                    t.ld(0, 0, pos + i * E);
                    t.ld(1, 0, vel + i * E);
                    t.ld(2, 0, acc + i * E);
                    t.st(3, 0, vel + i * E);
                    t.st(4, 0, pos + i * E);
                }
            },
        )?);
    }
    Ok(out)
}

pub const BUILTIN: Builtin = Builtin {
    name: "nbody",
    description: "tiled n-body, alternating force and update launches (multi-launch)",
    params: "n=512 steps=3 block=64",
    generate: Launches(nbody),
    source: include_str!("../../../../../kernels/nbody.wsk"),
    compute_per_memory: None,
};
