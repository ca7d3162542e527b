//! An NVBit `mem_trace` log written for the benches (`end_to_end.rs`, `gui.rs`): the layout of
//! `tools/make-nvbit-trace`, without its interleaving of CTAs.

use std::path::Path;

/// An NVBit `mem_trace` log of naive `n` x `n` matmul: 32x8 blocks, a warp per block row on
/// its own hardware slot, per iteration a load of A (every lane the same word) and of B
/// (consecutive words), then a store of C; CTA after CTA.
pub fn write(path: &Path, n: u64) {
    use std::io::Write;
    let (a, b, c) = (
        0x7f00_0000_0000u64,
        0x7f10_0000_0000u64,
        0x7f20_0000_0000u64,
    );
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("the log"));
    let (gx, gy) = (n / 32, n / 8);
    writeln!(f, "MEMTRACE: CTX 0x55 - LAUNCH - Kernel pc 0x7f00 - Kernel name matmul - grid launch id 0 - grid size {gx},{gy},1 - block size 32,8,1 - nregs 32 - shmem 0 - cuda stream id 0").expect("written");
    let line = |f: &mut std::io::BufWriter<std::fs::File>,
                bx: u64,
                by: u64,
                w: u64,
                op: &str,
                addr: &dyn Fn(u64) -> u64| {
        let lanes: Vec<String> = (0..32).map(|l| format!("0x{:016x}", addr(l))).collect();
        writeln!(
            f,
            "MEMTRACE: CTX 0x55 - grid_launch_id 0 - CTA {bx},{by},0 - warp {w} - {op} - {}",
            lanes.join(" ")
        )
        .expect("written");
    };
    for by in 0..gy {
        for bx in 0..gx {
            for k in 0..n {
                for w in 0..8 {
                    let (row, col) = (by * 8 + w, bx * 32);
                    line(&mut f, bx, by, w, "LDG.E", &|_| a + 4 * (row * n + k));
                    line(&mut f, bx, by, w, "LDG.E", &|l| b + 4 * (k * n + col + l));
                }
            }
            for w in 0..8 {
                let (row, col) = (by * 8 + w, bx * 32);
                line(&mut f, bx, by, w, "STG.E", &|l| c + 4 * (row * n + col + l));
            }
        }
    }
}
