//! The built-in kernel `bfs-levels`: BFS from node 0 by levels on a seeded random graph, two
//! launches per level, at most `levels` levels (multi-launch).

use super::*;

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
    let g = Graph {
        row_ptr: l.alloc((nodes + 1) * 4),
        col: l.alloc(adj.len() as u64 * 4),
        mask: l.alloc(nodes),
        updating: l.alloc(nodes),
        visited: l.alloc(nodes),
        cost: l.alloc(nodes * 4),
        over: l.alloc(4),
        ptr,
        adj,
        bx,
        n: nodes as usize,
        grid: Dim3::x(nodes.div_ceil(bx) as u32),
        block: Dim3::x(bx as u32),
    };
    let mut in_mask = vec![false; g.n];
    let mut is_visited = vec![false; g.n];
    in_mask[0] = true;
    is_visited[0] = true;
    let mut out = Vec::new();
    for _ in 0..max_levels {
        // Kernel 1 against the state before the level.
        let (k1, upd) = expand(p, &g, &in_mask, &is_visited)?;
        out.push(k1);
        out.push(advance(p, &g, &upd)?);
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

/// The graph (CSR) and where its arrays lie, with the launch shape.
struct Graph {
    row_ptr: u64,
    col: u64,
    mask: u64,
    updating: u64,
    visited: u64,
    cost: u64,
    over: u64,
    ptr: Vec<u64>,
    adj: Vec<u64>,
    /// Threads per CTA.
    bx: u64,
    n: usize,
    grid: Dim3,
    block: Dim3,
}

/// Kernel 1: the frontier (`in_mask`) expanded into the costs and updating mask of the
/// unvisited neighbours; gives the kernel and the nodes it marked for the next level.
fn expand(
    p: &Params,
    g: &Graph,
    in_mask: &[bool],
    is_visited: &[bool],
) -> Result<(Kernel, Vec<bool>), GenError> {
    let mut upd = vec![false; g.n];
    let k1 = build(
        p,
        "bfs_kernel1",
        g.grid,
        g.block,
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
            let v = (cta.x as u64 * g.bx + tid.x as u64) as usize;
            if v >= g.n {
                return;
            }
            t.ld_sized(0, 0, g.mask + v as u64, 1);
            if !in_mask[v] {
                return;
            }
            t.st_sized(1, 0, g.mask + v as u64, 1);
            t.ld_sized(2, 0, g.row_ptr + v as u64 * 4, 4);
            t.ld_sized(3, 0, g.row_ptr + (v as u64 + 1) * 4, 4);
            for (it, ei) in (g.ptr[v]..g.ptr[v + 1]).enumerate() {
                let u = g.adj[ei as usize] as usize;
                t.ld_sized(4, it as u32, g.col + ei * 4, 4);
                t.ld_sized(5, it as u32, g.visited + u as u64, 1);
                if !is_visited[u] {
                    t.ld_sized(6, it as u32, g.cost + v as u64 * 4, 4);
                    t.st_sized(7, it as u32, g.cost + u as u64 * 4, 4);
                    t.st_sized(8, it as u32, g.updating + u as u64, 1);
                    upd[u] = true;
                }
            }
        },
    )?;
    Ok((k1, upd))
}

/// Kernel 2: the updating mask `upd` turned into the next frontier, marked visited.
fn advance(p: &Params, g: &Graph, upd: &[bool]) -> Result<Kernel, GenError> {
    build(
        p,
        "bfs_kernel2",
        g.grid,
        g.block,
        4,
        &[
            "ld_updating",
            "st_mask",
            "st_visited",
            "st_over",
            "st_updating",
        ],
        |cta, tid, t| {
            let v = (cta.x as u64 * g.bx + tid.x as u64) as usize;
            if v >= g.n {
                return;
            }
            t.ld_sized(0, 0, g.updating + v as u64, 1);
            if upd[v] {
                t.st_sized(1, 0, g.mask + v as u64, 1);
                t.st_sized(2, 0, g.visited + v as u64, 1);
                t.st_sized(3, 0, g.over, 4);
                t.st_sized(4, 0, g.updating + v as u64, 1);
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "bfs-levels",
    description: "BFS from node 0 by levels on a seeded random graph, two launches per level, at most `levels` levels (multi-launch)",
    params: "nodes=4096 degree=4 levels=64 block=128 seed=1",
    generate: Launches(bfs_levels),
    source: include_str!("../../../../../kernels/bfs-levels.wsk"),
    compute_per_memory: None,
};
