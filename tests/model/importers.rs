//! Importers on real traces and across formats: detection, compression, truncation, and that
//! what an importer reads survives conversion to the native format.

use std::io::Write;
use std::path::{Path, PathBuf};

use warpscope::trace::{self, source::Compression, Format, ReadOptions, Trace};

fn real(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/real-traces")
        .join(p)
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-importers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn load(p: &Path) -> trace::Loaded {
    trace::load(p, ReadOptions::default(), &|s| s).unwrap()
}

/// `total_insts` of the single kernel in an Accel-Sim `stats.csv`.
fn stats_total_insts(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("stats.csv")).unwrap();
    let row = text.lines().nth(1).unwrap();
    let fields: Vec<&str> = row.split(',').map(str::trim).collect();
    fields[10].parse().unwrap()
}

/// Sum of the `insts = N` lines of a `.traceg`.
fn announced_insts(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("insts = "))
        .map(|n| n.trim().parse::<u64>().unwrap())
        .sum()
}

#[test]
fn both_real_accel_sim_traces_import_with_matching_instruction_counts() {
    for name in [
        "accelsim_microgpusim_vectoradd",
        "accelsim_microgpusim_matrixmul",
    ] {
        let dir = real(name);
        if !dir.is_dir() {
            eprintln!("skipping: {} not present", dir.display());
            return;
        }
        let want = stats_total_insts(&dir);
        assert_eq!(
            announced_insts(&dir.join("kernel-1.traceg")),
            want,
            "{name}"
        );
        // The directory, its kernel list and the kernel file itself all read the same.
        let by_dir = load(&dir);
        assert_eq!(by_dir.format, Format::AccelSim);
        let by_list = load(&dir.join("kernelslist.g"));
        assert!(by_list.detected && by_list.format == Format::AccelSim);
        let by_file = load(&dir.join("kernel-1.traceg"));
        assert!(by_dir.trace == by_list.trace, "{name}: directory vs list");
        assert!(
            by_dir.trace == by_file.trace,
            "{name}: directory vs kernel file"
        );
        let k = &by_dir.trace.kernels[0];
        let executed: u64 = k.info.warp_instructions.iter().map(|w| w.count).sum();
        assert_eq!(executed, want, "{name}: executed warp instructions");
        let mix: u64 = k.info.opcodes.iter().map(|(_, n)| n).sum();
        assert_eq!(mix, want, "{name}: opcode mix");
        assert_eq!(
            k.info.warp_instructions.len(),
            32,
            "{name}: 1024 threads = 32 warps"
        );
        assert_eq!(k.num_threads(), 1024);
    }
}

#[test]
fn vector_add_accesses_are_what_the_kernel_does() {
    let dir = real("accelsim_microgpusim_vectoradd");
    if !dir.is_dir() {
        return;
    }
    let t = load(&dir).trace;
    let k = &t.kernels[0];
    // Two loads and a store per thread for the 100 elements: threads 0..99.
    let loads = k
        .accesses()
        .filter(|a| a.kind == trace::AccessKind::Load)
        .count();
    let stores = k
        .accesses()
        .filter(|a| a.kind == trace::AccessKind::Store)
        .count();
    assert_eq!((loads, stores), (200, 100));
    // Thread 37 loads a[37] and b[37] (4-byte floats) and stores c[37].
    let rows: Vec<_> = k
        .accesses()
        .filter(|a| a.thread == 37)
        .map(|a| a.addr)
        .collect();
    assert_eq!(
        rows,
        vec![
            0x7f2b2d500000 + 37 * 4,
            0x7f2b2d500200 + 37 * 4,
            0x7f2b2d500400 + 37 * 4
        ]
    );
}

#[test]
fn compressed_kernel_files_are_found_and_read_the_same() {
    let src = real("accelsim_microgpusim_vectoradd");
    if !src.is_dir() {
        return;
    }
    let plain = load(&src).trace;
    let kernel = std::fs::read(src.join("kernel-1.traceg")).unwrap();
    for (ext, bytes) in [
        ("xz", {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
            e.write_all(&kernel).unwrap();
            e.finish().unwrap()
        }),
        ("zst", zstd::encode_all(kernel.as_slice(), 3).unwrap()),
        ("gz", {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&kernel).unwrap();
            e.finish().unwrap()
        }),
    ] {
        let dir = temp(ext);
        std::fs::copy(src.join("kernelslist.g"), dir.join("kernelslist.g")).unwrap();
        std::fs::write(dir.join(format!("kernel-1.traceg.{ext}")), &bytes).unwrap();
        assert!(load(&dir).trace == plain, "{ext} directory");
        let single = load(&dir.join(format!("kernel-1.traceg.{ext}")));
        assert!(single.trace == plain, "{ext} file");
        assert_ne!(single.compression, Compression::None);
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn native_conversion_keeps_everything_an_importer_read() {
    let dir = real("accelsim_microgpusim_matrixmul");
    if !dir.is_dir() {
        return;
    }
    let t = load(&dir).trace;
    let out = temp("convert");
    for f in ["m.wsb", "m.wst"] {
        let p = out.join(f);
        trace::write_file(&t, &p).unwrap();
        let back = load(&p);
        assert!(back.trace == t, "{f}: differs after the round trip");
        assert_eq!(
            back.format,
            if f.ends_with("wsb") {
                Format::Binary
            } else {
                Format::Text
            }
        );
    }
    std::fs::remove_dir_all(&out).ok();
}

fn two_kernels() -> Trace {
    let text =
        "kernel a grid=1 block=2\n0 0 i 0 ld 0x0 4\nkernel b grid=1 block=2\n0 1 i 0 st 0x40 4\n";
    trace::text::read(text.as_bytes(), "t").unwrap()
}

#[test]
fn truncated_input_fails_unless_allowed_and_then_keeps_whole_kernels_only() {
    let dir = temp("trunc");
    let mut bytes = Vec::new();
    trace::binary::write(&two_kernels(), &mut bytes).unwrap();
    let p = dir.join("cut.wsb");
    // Cut inside the last kernel's rows (before the index the end record points to).
    let index_at = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap()) as usize;
    std::fs::write(&p, &bytes[..index_at - 12]).unwrap();
    let e = trace::load(&p, ReadOptions::default(), &|s| s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut.wsb: byte offset"), "{e}");
    let opts = ReadOptions {
        allow_truncated: true,
        ..Default::default()
    };
    let l = trace::load(&p, opts, &|s| s).unwrap();
    assert_eq!(l.trace.kernels.len(), 1);
    assert_eq!(l.trace.kernels[0].name, "a");
    assert!(l.truncated.is_some());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_format_is_detected_from_content() {
    let dir = temp("detect");
    let mut wsb = Vec::new();
    trace::binary::write(&two_kernels(), &mut wsb).unwrap();
    let mut cases: Vec<(&str, Vec<u8>, Format)> = vec![
        ("a.wsb", wsb, Format::Binary),
        ("a.wst", b"kernel k grid=1 block=1\n0 0 i 0 ld 0 4\n".to_vec(), Format::Text),
        ("a.din", b"0 1000\n1 2000\n".to_vec(), Format::Din),
        ("a.trc", b"blocksize: 2 1 1\n0 0 16 4\n".to_vec(), Format::Nugteren),
        ("a.cl", b"local size:2 1 1\n0x10F0000319|0x0|0x0\n--\n".to_vec(), Format::Crawford),
        (
            "a.log",
            b"hello\nMEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 1,1,1 - block size 1,1,1 - nregs 1 - shmem 0 - cuda stream id 0\n".to_vec(),
            Format::NvBit,
        ),
    ];
    if cfg!(feature = "tables") {
        let csv = b"cta_x,thread_x,address\n0,1,0x40\n".to_vec();
        cases.push(("a.table", csv, Format::Csv));
    }
    for (name, bytes, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, &bytes).unwrap();
        let l = load(&p);
        assert_eq!(l.format, want, "{name}");
        assert!(!l.trace.kernels.is_empty(), "{name}");
    }
    let memtrace = real("cuda-memtrace_matrixMul_first75bytes.trc");
    if memtrace.is_file() {
        assert_eq!(load(&memtrace).format, Format::MemTrace);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg(feature = "tables")]
fn tables_round_trip_through_csv_and_parquet() {
    let dir = temp("tables");
    let csv = "kernel,cta_x,thread_x,inst,kind,address,size,space\nk1,1,3,ld_a,load,0x1000,4,global\nk1,0,0,st_b,store,4096,8,shared\nk1,1,3,ld_a,load,0x1004,4,\nk2,0,1,x,atom.add,0x40,4,global\n";
    let p = dir.join("t.csv");
    std::fs::write(&p, csv).unwrap();
    let t = load(&p).trace;
    assert_eq!(t.kernels.len(), 2);
    let k = &t.kernels[0];
    assert_eq!((k.grid.x, k.block.x), (2, 4));
    let rows: Vec<_> = k
        .accesses()
        .map(|a| (a.thread, a.dyn_inst, a.addr, a.size))
        .collect();
    // Thread 0 of CTA 0 first, then thread 3 of CTA 1 (linear 7) with instances 0 and 1.
    assert_eq!(
        rows,
        vec![(0, 0, 4096, 8), (7, 0, 0x1000, 4), (7, 1, 0x1004, 4)]
    );
    assert_eq!(k.access(0).space, trace::MemSpace::Shared);
    // A bad value names the line.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "address,size\n0x10,4\n0x20,0\n").unwrap();
    let e = trace::load(&bad, ReadOptions::default(), &|s| s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.csv: line 3") && e.contains("size"), "{e}");
    // Blank lines count: the bad value is now on line 5.
    std::fs::write(&bad, "address,size\n\n0x10,4\n\n0x20,0\n").unwrap();
    let e = trace::load(&bad, ReadOptions::default(), &|s| s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.csv: line 5") && e.contains("size"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn empty_binary_and_kernel_less_files_are_errors_that_show_bytes_escaped() {
    let dir = temp("undetectable");
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty.trc", b"", "the file is empty"),
        (
            "noise.bin",
            b"\x00\x9f\xd3binary\xff\xfe",
            "binary bytes `\\x00\\x9f\\xd3binary",
        ),
        ("comments.wst", b"# only a comment\n", "no kernel found"),
        ("bad.din", b"r 0 zz\xff\n", "found `zz\\xff`"),
    ];
    for (name, bytes, expect) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let format = name.ends_with(".din").then_some(Format::Din);
        let opts = ReadOptions {
            format,
            allow_truncated: false,
        };
        let e = trace::load(&p, opts, &|s| s).unwrap_err().to_string();
        assert!(e.contains(expect), "{name}: {e}");
        assert!(!e.contains('\u{fffd}'), "{name}: raw bytes in {e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
