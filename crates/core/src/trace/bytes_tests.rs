//! A file's bytes handed over whole (the web build's file picker) read as the file itself
//! is read, in every format and compression the web build opens.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{load, load_bytes, ReadOptions};

fn opts() -> ReadOptions {
    ReadOptions {
        format: None,
        allow_truncated: false,
    }
}

/// The trace of `path` read from the file and from its bytes, which must be equal.
fn same_both_ways(path: &Path) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let from_file = load(path, opts(), &|s| s).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let from_bytes = load_bytes(name, bytes, opts(), &|s| s).unwrap();
    assert_eq!(from_bytes.format, from_file.format, "{name}");
    assert_eq!(from_bytes.compression, from_file.compression, "{name}");
    assert!(!from_file.trace.kernels.is_empty(), "{name}");
    assert!(
        from_bytes.trace == from_file.trace,
        "{name}: the traces differ"
    );
}

#[test]
fn the_sample_traces_read_from_bytes_as_from_their_files() {
    let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sample-traces");
    for f in [
        "dinero-small.din",
        "table2.trc",
        "table2.wst",
        "h100-matmul/matmul.wsb",
        "accelsim-matrixmul/kernel-1.traceg.xz",
    ] {
        same_both_ways(&samples.join(f));
    }
}

#[test]
fn written_and_compressed_traces_read_from_bytes_as_from_their_files() {
    let params = [("n".to_string(), "32".to_string())];
    let trace = crate::gen::generate("matmul", &params).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in ["m.wsb", "m.wst", "m.trc"] {
        let path = dir.path().join(name);
        super::write_file(&trace, &path).unwrap();
        same_both_ways(&path);
        let text = std::fs::read(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&text).unwrap();
        for (ext, packed) in [
            ("gz", gz.finish().unwrap()),
            ("zst", zstd::encode_all(&text[..], 3).unwrap()),
            ("xz", xz.finish().unwrap()),
        ] {
            let path = dir.path().join(format!("{name}.{ext}"));
            std::fs::write(&path, packed).unwrap();
            same_both_ways(&path);
        }
    }
}

#[test]
fn bad_bytes_are_errors_that_name_the_file() {
    let e = load_bytes("k.traceg.zst", b"not zstd".to_vec(), opts(), &|s| s).unwrap_err();
    assert!(e.to_string().contains("k.traceg.zst"), "{e}");
    assert!(e.to_string().contains("zstd magic bytes"), "{e}");
    let e = load_bytes("empty.wst", Vec::new(), opts(), &|s| s).unwrap_err();
    assert!(e.to_string().contains("empty.wst"), "{e}");
    let e = load_bytes("cut.wst.gz", vec![0x1f, 0x8b, 8, 0], opts(), &|s| s).unwrap_err();
    assert!(e.to_string().contains("cut.wst.gz"), "{e}");
}

/// The web build has no polars: a table opened there says so (by name, at byte 0).
#[cfg(not(feature = "tables"))]
#[test]
fn a_table_in_a_build_without_tables_is_an_error_that_says_so() {
    let e = load_bytes("t.csv", b"kernel,cta,thread\n".to_vec(), opts(), &|s| s).unwrap_err();
    assert!(
        e.to_string().contains("t.csv") && e.to_string().contains("no table support"),
        "{e}"
    );
}
