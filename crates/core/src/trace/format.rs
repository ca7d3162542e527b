//! The trace formats we read, and how a file's format is found from its first bytes and name.

use super::*;
use crate::config::choice::{self, Choice, Entry, Form};

/// The trace file formats this build can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Warpscope text format (`.wst`).
    Text,
    /// Warpscope binary format (`.wsb`), the native format.
    Binary,
    /// Dinero IV traditional or extended `din` text.
    Din,
    /// Nugteren et al.'s (2014) `.trc` format (`blocksize: X Y Z`, then `tid dir addr bytes`).
    Nugteren,
    /// Accel-Sim tracer output: `kernelslist.g` plus `kernel-N.traceg`, or one `.traceg`.
    AccelSim,
    /// NVBit's `mem_trace` tool output (`MEMTRACE: ` lines).
    NvBit,
    /// cuda-memtrace binary `.trc` (Rieber 2017), thesis or later layout.
    MemTrace,
    /// Crawford's (2014) OpenCL traces (`local size:` header, `addr-type-inst|tid|loop` records).
    Crawford,
    /// A table with documented columns, read through polars.
    Csv,
    Parquet,
}

/// The table formats, declared here rather than in `table/` because that reader is behind
/// the `tables` feature and their names must parse either way (to say the build lacks it).
const CSV: Entry<Format> = Entry {
    name: "csv",
    aliases: &[],
    label: "CSV table",
    description: "a table with the documented columns, read through polars",
    form: Form::Plain(Format::Csv),
};
const PARQUET: Entry<Format> = Entry {
    name: "parquet",
    aliases: &[],
    label: "Parquet table",
    description: "a Parquet table with the documented columns, read through polars",
    form: Form::Plain(Format::Parquet),
};

impl Choice for Format {
    const WHAT: &'static str = "trace format";
    /// Each reader declares its own entry (name, aliases, label, description).
    const ENTRIES: &'static [Entry<Format>] = &[
        accelsim::ENTRY,
        nvbit::ENTRY,
        memtrace::ENTRY,
        crawford::ENTRY,
        nugteren::ENTRY,
        din::ENTRY,
        CSV,
        PARQUET,
        binary::ENTRY,
        text::ENTRY,
    ];
}

impl Format {
    /// The formats [`read_bytes`] reads (all but Parquet), in the order a fuzz input's first
    /// byte picks them (`fuzz/fuzz_targets/import.rs`; kept as it is so saved inputs still
    /// pick the same reader).
    pub const FROM_BYTES: &'static [Format] = &[
        Format::AccelSim,
        Format::NvBit,
        Format::MemTrace,
        Format::Crawford,
        Format::Nugteren,
        Format::Din,
        Format::Csv,
        Format::Binary,
        Format::Text,
    ];
    /// Its name in the registry.
    pub fn name(self) -> &'static str {
        choice::entry_of(&self).map_or("?", |e| e.name)
    }
    /// A line-oriented text format (detection falls back to these).
    pub fn is_text(self) -> bool {
        !matches!(self, Format::Binary | Format::MemTrace | Format::Parquet)
    }
    /// The format named `s` (a name or an alias).
    pub fn from_name(s: &str) -> Option<Self> {
        choice::parse(s).ok()
    }
    /// Guesses the format from the first (decompressed) bytes of a file.
    pub fn detect(head: &[u8]) -> Format {
        if head.starts_with(binary::MAGIC) {
            return Format::Binary;
        }
        if head.starts_with(b"PAR1") {
            return Format::Parquet;
        }
        if memtrace::looks_like(head) {
            return Format::MemTrace;
        }
        let text = String::from_utf8_lossy(head);
        // NVBit output may follow the application's own output.
        if text.lines().any(|l| l.starts_with("MEMTRACE: ")) {
            return Format::NvBit;
        }
        for line in text.lines() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') && !t.starts_with("#BEGIN_TB") {
                continue;
            }
            if t.starts_with("kernel ") {
                return Format::Text;
            }
            if t.starts_with("blocksize:") {
                return Format::Nugteren;
            }
            if t.starts_with("local size:") {
                return Format::Crawford;
            }
            if accelsim::looks_like(t) {
                return Format::AccelSim;
            }
            if looks_like_csv(t) {
                return Format::Csv;
            }
            return Format::Din;
        }
        Format::Text
    }
}

#[cfg(test)]
#[test]
fn the_fuzz_order_holds_every_format_read_from_bytes() {
    let mut fuzzed: Vec<&str> = Format::FROM_BYTES.iter().map(|f| f.name()).collect();
    fuzzed.push(Format::Parquet.name());
    fuzzed.sort_unstable();
    let mut all: Vec<&str> = Format::ENTRIES.iter().map(|e| e.name).collect();
    all.sort_unstable();
    assert_eq!(fuzzed, all);
}

/// Content first; the extension only settles what content cannot (tables).
pub(super) fn detect_with_extension(head: &[u8], path: &Path) -> Format {
    let plain = source::strip_compression(path);
    match plain.extension().and_then(|e| e.to_str()) {
        Some("parquet") => return Format::Parquet,
        Some("csv") => return Format::Csv,
        _ => {}
    }
    Format::detect(head)
}

/// Whether the first bytes look like binary data rather than text: a NUL byte, or more than
/// one in twenty bytes that is a control character or not UTF-8.
pub(super) fn looks_binary(head: &[u8]) -> bool {
    let head = &head[..head.len().min(4096)];
    if head.contains(&0) {
        return true;
    }
    let text = String::from_utf8_lossy(head);
    let odd = text
        .chars()
        .filter(|&c| c == char::REPLACEMENT_CHARACTER || (c.is_control() && !c.is_whitespace()))
        .count();
    odd * 20 > text.chars().count()
}

/// A CSV header line naming an `address` column.
fn looks_like_csv(line: &str) -> bool {
    line.contains(',')
        && line
            .split(',')
            .any(|c| c.trim().trim_matches('"').eq_ignore_ascii_case("address"))
}
