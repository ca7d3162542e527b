//! What the two shells (the CLI and the app) share to run the core on several threads. Not
//! part of the core: it is built only with the `cli` or `gui` feature, and the core's
//! modules never use it.
//!
//! - [`lanes`]: a reader thread that decodes a trace file or runs a generator, feeding
//!   sessions side by side on other threads;
//! - [`trace_bytes`]: how much there is to read, for progress and for the app's choice of
//!   streaming a file.

pub mod lanes;

use std::path::Path;

/// The bytes on disk of the trace at `path`: a file's size, or for an Accel-Sim trace (its
/// folder, or the `kernelslist.g` in it) the sizes of every file in its folder together.
pub fn trace_bytes(path: &Path) -> u64 {
    let listed = path
        .file_name()
        .and_then(|f| f.to_str())
        .is_some_and(|f| f.starts_with("kernelslist"));
    let dir = if path.is_dir() {
        path
    } else if listed {
        path.parent().unwrap_or(Path::new("."))
    } else {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    };
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    })
}
