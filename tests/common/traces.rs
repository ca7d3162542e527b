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

/// An Accel-Sim trace folder of two kernels of `ctas` CTAs of four warps each (the second's
/// file compressed with zstd), and its `kernelslist.g`: warps load rows of a matrix (base and
/// stride), gather from a table (one address a lane) and store, at PCs that change every 16
/// CTAs, so that later CTAs name instructions not seen before; every 16th CTA runs no memory
/// instruction. Returns the list's path. (The app's tests use it; the CLI's include this file
/// too.)
#[allow(dead_code)]
pub fn accelsim_dir_of(dir: &std::path::Path, ctas: u32) -> std::path::PathBuf {
    let mut list = String::from("MemcpyHtoD,0x0000000000010000,65536\n");
    for k in 0..2u32 {
        let mut s = format!(
            "-kernel name = rows{k}\n-grid dim = ({ctas},1,1)\n-block dim = (128,1,1)\n-accelsim tracer version = 4\n\n"
        );
        for c in 0..ctas {
            s += &format!("#BEGIN_TB\nthread block = {c},0,0\n");
            for w in 0..4u32 {
                if c % 16 == 15 {
                    s += &format!("warp = {w}\ninsts = 1\n0008 ffffffff 0 EXIT 0 0\n");
                    continue;
                }
                s += &format!("warp = {w}\ninsts = 12\n");
                for i in 0..4u32 {
                    let pc = 0x100 + 0x30 * ((i + c / 16) % 12);
                    let row = 0x10_0000 + u64::from((c * 7 + w * 3 + i * 5 + k) % 96) * 512;
                    let table: String = (0..32u32)
                        .map(|l| {
                            format!(
                                " {:#x}",
                                0x40_0000 + u64::from((c * 5 + l * 13 + i * 29 + w) % 700) * 32
                            )
                        })
                        .collect();
                    let out = 0x80_0000 + u64::from(c * 4 + w) * 128 + u64::from(i) * 4096;
                    s += &format!("{pc:04x} ffffffff 1 R2 LDG.E 1 R4 4 1 {row:#x} 4\n");
                    s += &format!("{:04x} ffffffff 1 R3 LDG.E 1 R6 4 0{table}\n", pc + 0x10);
                    s += &format!(
                        "{:04x} 0000ffff 0 STG.E 2 R8 R3 4 1 {out:#x} 4\n",
                        pc + 0x20
                    );
                }
            }
            s += "#END_TB\n\n";
        }
        let name = format!("kernel-{}.traceg", k + 1);
        if k == 1 {
            let packed = zstd::encode_all(s.as_bytes(), 3).unwrap();
            std::fs::write(dir.join(format!("{name}.zst")), packed).unwrap();
        } else {
            std::fs::write(dir.join(&name), s).unwrap();
        }
        list += &format!("{name}\n");
    }
    let path = dir.join("kernelslist.g");
    std::fs::write(&path, list).unwrap();
    path
}

/// An NVBit log of two launches whose CTAs' warps interleave on their hardware slots, with
/// the application's own output between; with `launches_interleave`, both launch lines come
/// first and the two launches' access lines alternate (kernels on concurrent streams).
#[allow(dead_code)]
pub fn nvbit_file(path: &std::path::Path, launches_interleave: bool) {
    let mut state = 777u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut out = String::from("app: starting\n");
    let mut access: [Vec<String>; 2] = Default::default();
    for (id, (gx, gy)) in [(4u64, 3u64), (7, 1)].into_iter().enumerate() {
        out.push_str(&format!("MEMTRACE: CTX 0x55 - LAUNCH - Kernel pc 0x7f00 - Kernel name k{id} - grid launch id {id} - grid size {gx},{gy},1 - block size 64,1,1 - nregs 24 - shmem 0 - cuda stream id 0\n"));
        for step in 0..500u64 {
            let cta = next() % (gx * gy);
            let slot = 2 * (cta % 4) + next() % 2;
            let op = ["LDG.E", "LDG.E.64", "STG.E"][(next() % 3) as usize];
            let size = if op == "LDG.E.64" { 8 } else { 4 };
            let active = 1 + next() % 32;
            let base = 0x7f00_0010_0000 + (next() % 64) * 128 + step % 3 * 4096;
            let lanes: Vec<String> = (0..32)
                .map(|l| {
                    if l < active {
                        format!("0x{:016x}", base + l * size)
                    } else {
                        format!("0x{:016x}", 0)
                    }
                })
                .collect();
            access[id].push(format!(
                "MEMTRACE: CTX 0x55 - grid_launch_id {id} - CTA {},{},0 - warp {slot} - {op} - {}\n",
                cta % gx,
                cta / gx,
                lanes.join(" ")
            ));
        }
        if !launches_interleave {
            out.extend(access[id].drain(..));
            out.push_str("app: kernel done\n");
        }
    }
    let [a, b] = access;
    for (x, y) in a.into_iter().zip(b) {
        out.push_str(&x);
        out.push_str(&y);
    }
    std::fs::write(path, out).unwrap();
}
