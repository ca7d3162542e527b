//! A cuda-memtrace file written for the benches (`gui.rs`): one kernel of many CTAs of one
//! warp each, every warp a load of A, a load of B and a store of C, each a run record of 32
//! consecutive words, as the tracer writes a warp's coalesced accesses.

use std::path::Path;

/// Writes `ctas` CTAs (x up to 65,536, then y), CTA `c` on SM `c mod 80`.
pub fn write(path: &Path, ctas: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("the trace"));
    let name = b"vecadd";
    f.write_all(b"\x19CUDATRACE").expect("written");
    f.write_all(&[0]).expect("written");
    f.write_all(&(name.len() as u16).to_le_bytes())
        .expect("written");
    f.write_all(name).expect("written");
    for c in 0..ctas {
        let (sm, x, y) = (c % 80, c % 65_536, c / 65_536);
        let cta = x << 32 | y << 16;
        for (ty, base) in [(0u64, 0x1000_0000u64), (0, 0x4000_0000), (1, 0x8000_0000)] {
            let desc = sm << 32 | ty << 28 | 4;
            f.write_all(&[0xFE]).expect("written");
            for w in [desc, base + c * 128, cta] {
                f.write_all(&w.to_le_bytes()).expect("written");
            }
            f.write_all(&32u16.to_le_bytes()).expect("written");
        }
    }
    f.flush().expect("written");
}
