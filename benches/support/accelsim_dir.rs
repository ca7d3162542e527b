//! An Accel-Sim trace written for the benches (`gui.rs`): naive matmul in CTAs of 8x8 threads,
//! the shape of the built-in generator's `matmul n=N block=8,8`, in the layout of
//! `tools/make-accelsim-trace` (which writes blocks of 32x8).

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `kernelslist.g` and `kernel-1.traceg` of naive `n` x `n` matmul into `dir`: CTAs of
/// 8x8 threads (two warps, a warp is four rows of eight), per iteration a load of A and of B,
/// then a store of C, every address listed (mode 0). Returns the list's path.
pub fn write(dir: &Path, n: u64) -> PathBuf {
    let (a, b, c) = (
        0x7f00_0000_0000u64,
        0x7f10_0000_0000u64,
        0x7f20_0000_0000u64,
    );
    let file = dir.join("kernel-1.traceg");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("the kernel file"));
    let g = n / 8;
    write!(
        f,
        "-kernel name = matmul\n-grid dim = ({g},{g},1)\n-block dim = (8,8,1)\n-accelsim tracer version = 4\n\n"
    )
    .expect("written");
    let lanes = |addr: &dyn Fn(u64, u64) -> u64| -> String {
        (0..32u64)
            .map(|l| format!(" {:#x}", addr(l % 8, l / 8)))
            .collect()
    };
    for by in 0..g {
        for bx in 0..g {
            writeln!(f, "#BEGIN_TB\nthread block = {bx},{by},0").expect("written");
            for w in 0..2u64 {
                writeln!(f, "warp = {w}\ninsts = {}", 2 * n + 1).expect("written");
                let row = |y: u64| by * 8 + w * 4 + y;
                for k in 0..n {
                    let la = lanes(&|_, y| a + 4 * (row(y) * n + k));
                    let lb = lanes(&|x, _| b + 4 * (k * n + bx * 8 + x));
                    writeln!(f, "0100 ffffffff 1 R2 LDG.E 1 R4 4 0{la}").expect("written");
                    writeln!(f, "0110 ffffffff 1 R3 LDG.E 1 R6 4 0{lb}").expect("written");
                }
                let lc = lanes(&|x, y| c + 4 * (row(y) * n + bx * 8 + x));
                writeln!(f, "0200 ffffffff 0 STG.E 2 R8 R3 4 0{lc}").expect("written");
            }
            writeln!(f, "#END_TB\n").expect("written");
        }
    }
    drop(f);
    let list = dir.join("kernelslist.g");
    std::fs::write(&list, "kernel-1.traceg\n").expect("the kernel list");
    list
}
