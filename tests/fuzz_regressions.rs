//! Inputs from the fuzz corpus (`fuzz/seeds`: one sample per format; `fuzz/regressions`:
//! inputs that once crashed or hung an importer). The first byte picks the format as in
//! `fuzz/fuzz_targets/import.rs`; every input must read or fail cleanly, never panic.

use warpscope::trace::{read_bytes, Format};

const FORMATS: &[Format] = Format::FROM_BYTES;

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let Ok(entries) = std::fs::read_dir(&path) else {
        return Vec::new();
    };
    let mut v: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_none_or(|x| x != "md"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_seed_reads_in_its_format() {
    let seeds = inputs("fuzz/seeds");
    assert!(seeds.len() >= 8, "one seed per format");
    for (name, bytes) in seeds {
        let format = FORMATS[bytes[0] as usize % FORMATS.len()];
        if format == Format::Csv && !cfg!(feature = "tables") {
            // CSV is read through polars; without it the reader says so, as it should.
            continue;
        }
        let t = read_bytes(format, &bytes[1..]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(t.total_accesses() > 0, "{name}");
    }
}

#[test]
fn regressions_fail_cleanly() {
    for (name, bytes) in inputs("fuzz/regressions") {
        let Some((&pick, rest)) = bytes.split_first() else {
            continue;
        };
        let format = FORMATS[pick as usize % FORMATS.len()];
        let r = std::panic::catch_unwind(|| read_bytes(format, rest).map(|t| t.total_accesses()));
        assert!(r.is_ok(), "{name} panics");
    }
}

/// Reads a `tables` fuzz input: an even first byte reads the rest as CSV, an odd one as a
/// Parquet file.
#[cfg(feature = "tables")]
fn read_table(name: &str, bytes: &[u8]) -> Result<warpscope::trace::Trace, String> {
    use warpscope::trace::{load, ReadOptions};
    let Some((pick, rest)) = bytes.split_first() else {
        return Err("empty".into());
    };
    if pick % 2 == 0 {
        return read_bytes(Format::Csv, rest).map_err(|e| e.to_string());
    }
    let path = std::env::temp_dir().join(format!("warpscope-seed-{}-{name}", std::process::id()));
    std::fs::write(&path, rest).unwrap();
    let opts = ReadOptions {
        format: Some(Format::Parquet),
        allow_truncated: false,
    };
    let r = load(&path, opts, &|s| s)
        .map(|l| l.trace)
        .map_err(|e| e.to_string());
    std::fs::remove_file(&path).ok();
    r
}

/// `fuzz/seeds-tables`: the seeds of the `tables` target.
#[cfg(feature = "tables")]
#[test]
fn every_table_seed_reads() {
    let seeds = inputs("fuzz/seeds-tables");
    assert!(seeds.len() >= 2, "a CSV and a Parquet seed");
    for (name, bytes) in seeds {
        let t = read_table(&name, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(t.total_accesses() > 0, "{name}");
    }
}

/// `fuzz/regressions-tables`: inputs that once crashed a table reader fail with an error.
#[cfg(feature = "tables")]
#[test]
fn table_regressions_fail_cleanly() {
    let inputs = inputs("fuzz/regressions-tables");
    assert!(!inputs.is_empty());
    for (name, bytes) in inputs {
        let e = read_table(&name, &bytes)
            .err()
            .unwrap_or_else(|| panic!("{name} read"));
        assert!(e.contains("not a readable Parquet file"), "{name}: {e}");
    }
}
