//! The CSV and Parquet importers on arbitrary bytes: the first byte picks the format, the rest
//! is the file (Parquet is read from a file, so those bytes are written to a temporary one).
//! Polars parses the bytes; the importer maps and checks the columns. Reading may fail, but
//! must not panic, hang or allocate without bound. Needs the `tables` feature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warpscope::trace::{load, read_bytes, Format, ReadOptions, Trace};

fn check(t: &Trace) {
    for k in &t.kernels {
        let threads = k.num_threads();
        assert!(k.columns().thread.iter().all(|&x| (x as u64) < threads));
    }
}

fuzz_target!(|data: &[u8]| {
    // libFuzzer's hook aborts on every panic, even a caught one. The importer catches panics
    // inside polars' Parquet reader (in polars-parquet or polars-arrow) (reported as an unreadable file); any other panic still
    // aborts.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let in_polars = info
                .location()
                .is_some_and(|l| l.file().contains("/polars-"));
            if !in_polars {
                std::process::abort();
            }
        }))
    });
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        if let Ok(t) = read_bytes(Format::Csv, rest) {
            check(&t);
        }
    } else {
        let path = std::env::temp_dir().join(format!("warpscope-fuzz-{}.parquet", std::process::id()));
        if std::fs::write(&path, rest).is_err() {
            return;
        }
        let opts = ReadOptions {
            format: Some(Format::Parquet),
            allow_truncated: false,
        };
        if let Ok(l) = load(&path, opts, &|s| s) {
            check(&l.trace);
        }
    }
});
