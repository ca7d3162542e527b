//! Multi-launch kernels, for the communication analysis (Rieber 2017 table 6.1): an iterative
//! 2-D stencil (hotspot-like), a two-step histogram, a tiled n-body and BFS by levels. Each
//! is a series of launches that pass data through global memory.

use super::kernels::{build, gid, grid_for};
use super::params::{GenError, Layout, Params};
use super::sparse::random_csr;
use crate::rng::Rng;
use crate::trace::{Dim3, Kernel};

/// Launches at most, so a generator cannot be asked for an unbounded series.
const MAX_STEPS: u64 = 1024;

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

/// Rodinia's BFS on a seeded random graph, run to the end from node 0: per level, kernel 1
/// expands the frontier (mask) into the updating mask and costs of unvisited neighbours;
/// kernel 2 turns the updating mask into the next frontier and marks it visited. The same
/// CTA id owns the same nodes in both kernels.
pub fn bfs_levels(p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let nodes = p.count("nodes", 4096, 1 << 22)? as u64;
    let degree = p.count("degree", 4, 1 << 10)? as u64;
    let bx = p.dim3("block", Dim3::x(128))?.count();
    let seed = p.u64("seed", 1)?;
    let max_levels = p.count("levels", 64, MAX_STEPS / 2)?;
    let mut rng = Rng::new(seed);
    let (ptr, adj) = random_csr(nodes, nodes, degree, &mut rng);
    let mut l = Layout::new(p)?;
    let (row_ptr, col, mask, updating, visited, cost, over) = (
        l.alloc((nodes + 1) * 4),
        l.alloc(adj.len() as u64 * 4),
        l.alloc(nodes),
        l.alloc(nodes),
        l.alloc(nodes),
        l.alloc(nodes * 4),
        l.alloc(4),
    );
    let grid = Dim3::x(nodes.div_ceil(bx) as u32);
    let block = Dim3::x(bx as u32);
    let n = nodes as usize;
    let mut in_mask = vec![false; n];
    let mut is_visited = vec![false; n];
    in_mask[0] = true;
    is_visited[0] = true;
    let mut out = Vec::new();
    for _ in 0..max_levels {
        // Kernel 1 against the state before the level.
        let mut upd = vec![false; n];
        let k1 = build(
            p,
            "bfs_kernel1",
            grid,
            block,
            4,
            &[
                "ld_mask",
                "st_mask",
                "ld_row_ptr",
                "ld_row_end",
                "ld_col",
                "ld_visited",
                "ld_cost",
                "st_cost",
                "st_updating",
            ],
            |cta, tid, t| {
                let v = (cta.x as u64 * bx + tid.x as u64) as usize;
                if v >= n {
                    return;
                }
                t.ld_sized(0, 0, mask + v as u64, 1);
                if !in_mask[v] {
                    return;
                }
                t.st_sized(1, 0, mask + v as u64, 1);
                t.ld_sized(2, 0, row_ptr + v as u64 * 4, 4);
                t.ld_sized(3, 0, row_ptr + (v as u64 + 1) * 4, 4);
                for (it, ei) in (ptr[v]..ptr[v + 1]).enumerate() {
                    let u = adj[ei as usize] as usize;
                    t.ld_sized(4, it as u32, col + ei * 4, 4);
                    t.ld_sized(5, it as u32, visited + u as u64, 1);
                    if !is_visited[u] {
                        t.ld_sized(6, it as u32, cost + v as u64 * 4, 4);
                        t.st_sized(7, it as u32, cost + u as u64 * 4, 4);
                        t.st_sized(8, it as u32, updating + u as u64, 1);
                        upd[u] = true;
                    }
                }
            },
        )?;
        out.push(k1);
        let k2 = build(
            p,
            "bfs_kernel2",
            grid,
            block,
            4,
            &[
                "ld_updating",
                "st_mask",
                "st_visited",
                "st_over",
                "st_updating",
            ],
            |cta, tid, t| {
                let v = (cta.x as u64 * bx + tid.x as u64) as usize;
                if v >= n {
                    return;
                }
                t.ld_sized(0, 0, updating + v as u64, 1);
                if upd[v] {
                    t.st_sized(1, 0, mask + v as u64, 1);
                    t.st_sized(2, 0, visited + v as u64, 1);
                    t.st_sized(3, 0, over, 4);
                    t.st_sized(4, 0, updating + v as u64, 1);
                }
            },
        )?;
        out.push(k2);
        for (visited, &u) in is_visited.iter_mut().zip(&upd) {
            *visited |= u;
        }
        in_mask.copy_from_slice(&upd);
        if !upd.contains(&true) {
            break;
        }
    }
    Ok(out)
}
