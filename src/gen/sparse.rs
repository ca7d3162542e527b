//! Irregular kernels on seeded random data: histogram with atomics, SpMV (CSR) and a BFS
//! frontier expansion.

use super::kernels::build;
use super::params::{GenError, Layout, Params};
use crate::rng::Rng;
use crate::trace::{AtomicOp, Dim3, Kernel};

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

/// A seeded random CSR structure: row lengths uniform in 1..=2*avg-1, sorted column ids.
pub(super) fn random_csr(rows: u64, cols: u64, avg: u64, rng: &mut Rng) -> (Vec<u64>, Vec<u64>) {
    let mut ptr = Vec::with_capacity(rows as usize + 1);
    let mut idx = Vec::new();
    ptr.push(0);
    for _ in 0..rows {
        let len = 1 + rng.below((2 * avg - 1).max(1));
        let start = idx.len();
        for _ in 0..len {
            idx.push(rng.below(cols));
        }
        idx[start..].sort_unstable();
        ptr.push(idx.len() as u64);
    }
    (ptr, idx)
}

pub fn spmv(p: &mut Params) -> Result<Kernel, GenError> {
    let rows = p.count("rows", 1024, 1 << 24)? as u64;
    let cols = p.count("cols", 1024, 1 << 30)? as u64;
    let nnz = p.count("nnz", 8, 1 << 12)? as u64;
    let bx = p.dim3("block", Dim3::x(128))?.count() as u32;
    let seed = p.u64("seed", 1)?;
    let e = p.elem()?;
    let mut rng = Rng::new(seed);
    let (ptr, idx) = random_csr(rows, cols, nnz, &mut rng);
    let total = idx.len() as u64;
    let mut l = Layout::new(p)?;
    let (row_ptr, col_idx, val, x, y) = (
        l.alloc((rows + 1) * 4),
        l.alloc(total * 4),
        l.alloc(total * e),
        l.alloc(cols * e),
        l.alloc(rows * e),
    );
    let insts = [
        "ld_row_ptr",
        "ld_row_end",
        "ld_col_idx",
        "ld_val",
        "ld_x",
        "st_y",
    ];
    build(
        p,
        "spmv",
        Dim3::x((rows as u32).div_ceil(bx)),
        Dim3::x(bx),
        e,
        &insts,
        |cta, tid, t| {
            let r = cta.x as u64 * bx as u64 + tid.x as u64;
            if r < rows {
                t.ld_sized(0, 0, row_ptr + r * 4, 4);
                t.ld_sized(1, 0, row_ptr + (r + 1) * 4, 4);
                for (it, j) in (ptr[r as usize]..ptr[r as usize + 1]).enumerate() {
                    t.ld_sized(2, it as u32, col_idx + j * 4, 4);
                    t.ld(3, it as u32, val + j * e);
                    t.ld(4, it as u32, x + idx[j as usize] * e);
                }
                t.st(5, 0, y + r * e);
            }
        },
    )
}

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
