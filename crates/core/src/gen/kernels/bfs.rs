//! The built-in kernel `bfs`: one BFS frontier expansion on a seeded random graph (frontier:
//! percent of the nodes).

use super::*;

pub fn bfs(p: &mut Params) -> Result<Kernel, GenError> {
    let nodes = p.count("nodes", 2048, 1 << 24)? as u64;
    let degree = p.count("degree", 8, 1 << 12)? as u64;
    let frontier_pct = p.u64("frontier", 25)?;
    let bx = p.dim3("block", Dim3::x(128))?.count() as u32;
    let seed = p.u64("seed", 1)?;
    if frontier_pct > 100 {
        return Err(p.invalid(format!(
            "frontier is a percentage (0-100), found {frontier_pct}"
        )));
    }
    let mut rng = Rng::new(seed);
    let (ptr, adj) = random_csr(nodes, nodes, degree, &mut rng);
    let in_frontier: Vec<bool> = (0..nodes).map(|_| rng.below(100) < frontier_pct).collect();
    // Nodes already visited: the frontier itself plus a quarter of the rest.
    let visited: Vec<bool> = (0..nodes as usize)
        .map(|v| in_frontier[v] || rng.below(4) == 0)
        .collect();
    let mut l = Layout::new(p)?;
    let (frontier, row_ptr, col, vis, cost, next) = (
        l.alloc(nodes),
        l.alloc((nodes + 1) * 4),
        l.alloc(adj.len() as u64 * 4),
        l.alloc(nodes),
        l.alloc(nodes * 4),
        l.alloc(nodes),
    );
    let insts = [
        "ld_frontier",
        "ld_row_ptr",
        "ld_row_end",
        "ld_neighbour",
        "ld_visited",
        "st_cost",
        "st_next",
    ];
    build(
        p,
        "bfs",
        Dim3::x((nodes as u32).div_ceil(bx)),
        Dim3::x(bx),
        4,
        &insts,
        |cta, tid, t| {
            let v = cta.x as u64 * bx as u64 + tid.x as u64;
            if v >= nodes {
                return;
            }
            t.ld_sized(0, 0, frontier + v, 1);
            if !in_frontier[v as usize] {
                return;
            }
            t.ld_sized(1, 0, row_ptr + v * 4, 4);
            t.ld_sized(2, 0, row_ptr + (v + 1) * 4, 4);
            for (it, ei) in (ptr[v as usize]..ptr[v as usize + 1]).enumerate() {
                let u = adj[ei as usize];
                t.ld_sized(3, it as u32, col + ei * 4, 4);
                t.ld_sized(4, it as u32, vis + u, 1);
                if !visited[u as usize] {
                    t.st_sized(5, it as u32, cost + u * 4, 4);
                    t.st_sized(6, it as u32, next + u, 1);
                }
            }
        },
    )
}

pub const BUILTIN: Builtin = Builtin {
    name: "bfs",
    description:
        "one BFS frontier expansion on a seeded random graph (frontier: percent of the nodes)",
    params: "nodes=2048 degree=8 frontier=25 block=128 seed=1",
    generate: One(bfs),
    source: include_str!("../../../../../kernels/bfs.wsk"),
    compute_per_memory: None,
};
