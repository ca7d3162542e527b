//! What the two shells (the CLI and the app) share to run the core on several threads. Not
//! part of the core: a crate of its own above `warpscope-core`, which cannot use it.
//!
//! - [`lanes`]: a reader thread that decodes a trace file or runs a generator, feeding
//!   sessions side by side on other threads;
//! - [`timed`]: the timing model's runs and SMs side by side;
//! - [`policy`]: how a trace file is read (whole or streamed, once or twice, its bytes
//!   counted), the same for both front ends;
//! - [`trace_bytes`]: how much there is to read, for progress; [`whole_bytes`]: what a file
//!   would take read whole, for the app's choice of streaming it; [`trace_stamp`]: whether a
//!   trace's files changed since a run.
#![allow(rustdoc::private_intra_doc_links)]

pub mod lanes;
pub mod policy;
pub mod timed;

use std::path::Path;

/// The bytes on disk of the trace at `path`: a file's size, or for an Accel-Sim trace (its
/// folder, or the `kernelslist.g` in it) the sizes of every file in its folder together.
pub fn trace_bytes(path: &Path) -> u64 {
    trace_stamp(path).bytes
}

/// The trace at `path` on disk at one time (its files as [`trace_bytes`] counts them): their
/// bytes together, and the latest time one of them was changed. The app reads a run on from
/// its copies only while the stamp taken when the run began still holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStamp {
    pub bytes: u64,
    pub modified: Option<std::time::SystemTime>,
}

/// The bytes the trace at `path` would take read whole, as far as can be told without reading
/// it: for a binary file with an index, its rows at 23 bytes each (its packed rows take far
/// less on disk: matmul `n=128`, 4.2 M rows, is 27 KB); for any other trace, its bytes on
/// disk.
pub fn whole_bytes(path: &Path) -> u64 {
    let disk = trace_bytes(path);
    let rows = || -> Option<u64> {
        let mut r = std::io::BufReader::new(std::fs::File::open(path).ok()?);
        let index = warpscope_core::trace::binary::Index::read(&mut r, "").ok()?;
        Some(index.kernels.iter().map(|k| k.rows).sum())
    };
    match rows() {
        Some(rows) => disk.max(rows.saturating_mul(23)),
        None => disk,
    }
}

/// The [`TraceStamp`] of the trace at `path` now.
pub fn trace_stamp(path: &Path) -> TraceStamp {
    let stamp = |files: &mut dyn Iterator<Item = std::fs::Metadata>| {
        files.fold(TraceStamp::default(), |s, m| TraceStamp {
            bytes: s.bytes + m.len(),
            modified: s.modified.max(m.modified().ok()),
        })
    };
    let listed = path
        .file_name()
        .and_then(|f| f.to_str())
        .is_some_and(|f| f.starts_with("kernelslist"));
    let dir = if path.is_dir() {
        path
    } else if listed {
        path.parent().unwrap_or(Path::new("."))
    } else {
        return stamp(&mut std::fs::metadata(path).into_iter());
    };
    std::fs::read_dir(dir).map_or(TraceStamp::default(), |entries| {
        stamp(
            &mut entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_binary_file_counts_as_its_rows_and_any_other_as_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let params = [("n".to_string(), "64".to_string())];
        let t = warpscope_core::gen::generate("matmul", &params).unwrap();
        let (wsb, wst) = (dir.path().join("m.wsb"), dir.path().join("m.wst"));
        warpscope_core::trace::write_file(&t, &wsb).unwrap();
        warpscope_core::trace::write_file(&t, &wst).unwrap();
        let rows = t.total_accesses() as u64;
        assert!(trace_bytes(&wsb) * 100 < rows * 23, "the rows are packed");
        assert_eq!(whole_bytes(&wsb), rows * 23);
        assert_eq!(whole_bytes(&wst), trace_bytes(&wst));
    }
}
