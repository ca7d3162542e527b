//! Trace files written for tests, shared by the CLI's and the app's flows (included with
//! `#[path]`, so that the CLI-only build, which has no app, compiles it too).

/// A cuda-memtrace file (the later layout) of two kernels whose CTAs ran interleaved on four
/// SMs, with loads and stores of two sizes and partial warps.
pub fn memtrace_file(path: &std::path::Path) {
    memtrace_file_of(path, 600);
}

/// [`memtrace_file`] with `steps` warp instructions a kernel (600 there: about 10,000
/// records).
pub fn memtrace_file_of(path: &std::path::Path, steps: u64) {
    let mut out = vec![0x1a];
    out.extend_from_slice(b"CUDATRACE");
    let mut state = 12345u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    for (name, ctas) in [("first", 12u64), ("second", 7)] {
        out.push(0);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        for step in 0..steps {
            let cta = next() % ctas;
            let (x, y) = (cta % 4, cta / 4);
            let sm = cta % 4;
            let ty = u64::from(next() % 4 == 0);
            let size = [4u64, 8][(next() % 2) as usize];
            let lanes = 1 + next() % 32;
            let base = 0x10_0000 + (next() % 64) * 128 + step % 3 * 4096;
            for lane in 0..lanes {
                out.push(0xFF);
                for w in [
                    sm << 32 | ty << 28 | size,
                    base + lane * size,
                    x << 32 | y << 16,
                ] {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
    }
    std::fs::write(path, out).unwrap();
}
