//! Inputs from the fuzz corpus (`fuzz/seeds`: one sample per format; `fuzz/regressions`:
//! inputs that once crashed or hung an importer). The first byte picks the format as in
//! `fuzz/fuzz_targets/import.rs`; every input must read or fail cleanly, never panic. Damaged
//! seeds also check that a streamed read (as `sim` reads files) agrees with the whole read.

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

/// Reads `path` in `format` whole and streamed (in pieces, as `sim` reads it), neither
/// allowed to panic.
fn both_ways(
    path: &std::path::Path,
    format: Format,
) -> (
    Result<warpscope::trace::Trace, String>,
    Result<warpscope::trace::Trace, String>,
) {
    use warpscope::trace::{load, open_trace, Assemble, ReadOptions, Trace};
    let opts = ReadOptions {
        format: Some(format),
        allow_truncated: false,
    };
    let whole = std::panic::catch_unwind(|| {
        load(path, opts, &|s| s)
            .map(|l| l.trace)
            .map_err(|e| e.to_string())
    });
    let streamed = std::panic::catch_unwind(|| {
        let open = open_trace(path, opts, &|s| s, &|s| s).map_err(|e| e.to_string())?;
        let mut t = Trace::default();
        open.stream(&|s| s, &|s| s, &mut Assemble::new(&mut t))
            .map_err(|e| e.to_string())?;
        Ok(t)
    });
    let name = path.display();
    (
        whole.unwrap_or_else(|_| panic!("{name}: the whole read panics")),
        streamed.unwrap_or_else(|_| panic!("{name}: the streamed read panics")),
    )
}

/// Every seed, cut short at 24 places and with 24 bytes changed, read streamed (the way `sim`,
/// `convert` and the app read files) gives exactly what the whole read gives, or fails where
/// it fails.
#[test]
fn streamed_reads_agree_with_whole_reads_on_damaged_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let mut seeds = inputs("fuzz/seeds");
    if cfg!(feature = "tables") {
        // The CSV seed of the `tables` target (an even first byte picks CSV).
        seeds.extend(
            inputs("fuzz/seeds-tables")
                .into_iter()
                .filter(|(_, b)| b.first().is_some_and(|p| p % 2 == 0))
                .map(|(n, mut b)| {
                    b[0] = FORMATS.iter().position(|&f| f == Format::Csv).unwrap() as u8;
                    (n, b)
                }),
        );
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut agreed = 0;
    for (name, bytes) in seeds {
        let format = FORMATS[bytes[0] as usize % FORMATS.len()];
        if format == Format::Csv && !cfg!(feature = "tables") {
            continue;
        }
        let body = &bytes[1..];
        let mut variants = vec![body.to_vec()];
        let step = (body.len() / 24).max(1);
        variants.extend(
            (1..body.len())
                .step_by(step)
                .map(|cut| body[..cut].to_vec()),
        );
        for _ in 0..24 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut v = body.to_vec();
            let at = (x % v.len() as u64) as usize;
            v[at] = if x & (1 << 40) != 0 {
                // A digit, a separator or a line end: damage a text format can mistake.
                b"0\n 9,x|"[(x >> 48) as usize % 7]
            } else {
                v[at] ^ (x >> 32) as u8 | 1
            };
            variants.push(v);
        }
        for (i, v) in variants.iter().enumerate() {
            let path = dir.path().join(format!("{i}-{name}"));
            std::fs::write(&path, v).unwrap();
            match both_ways(&path, format) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{name}, variant {i}");
                    agreed += 1;
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!(
                    "{name}, variant {i}: whole {:?}, streamed {:?}",
                    a.map(|t| t.total_accesses()),
                    b.map(|t| t.total_accesses())
                ),
            }
        }
    }
    assert!(agreed >= 80, "{agreed} variants read");
}
