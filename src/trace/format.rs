//! The trace formats we read, and how a file's format is found from its first bytes and name.

use super::*;

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

impl Format {
    /// Every format; the first nine are the ones [`read_bytes`] reads, in the order a fuzz
    /// input's first byte picks them (`fuzz/fuzz_targets/import.rs`).
    pub const ALL: [Format; 10] = [
        Format::AccelSim,
        Format::NvBit,
        Format::MemTrace,
        Format::Crawford,
        Format::Nugteren,
        Format::Din,
        Format::Csv,
        Format::Binary,
        Format::Text,
        Format::Parquet,
    ];
    /// The formats [`read_bytes`] reads (all but Parquet), in fuzz-input order.
    pub const FROM_BYTES: &'static [Format] = Format::ALL.split_at(9).0;
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Binary => "native",
            Format::Din => "din",
            Format::Nugteren => "nugteren",
            Format::AccelSim => "accelsim",
            Format::NvBit => "nvbit",
            Format::MemTrace => "memtrace",
            Format::Crawford => "crawford",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }
    /// A line-oriented text format (detection falls back to these).
    pub fn is_text(self) -> bool {
        !matches!(self, Format::Binary | Format::MemTrace | Format::Parquet)
    }
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "text" | "wst" => Some(Format::Text),
            "binary" | "wsb" | "native" => Some(Format::Binary),
            "din" => Some(Format::Din),
            "nugteren" => Some(Format::Nugteren),
            "accelsim" | "accel-sim" | "traceg" => Some(Format::AccelSim),
            "nvbit" | "mem_trace" => Some(Format::NvBit),
            "memtrace" | "cuda-memtrace" => Some(Format::MemTrace),
            "crawford" => Some(Format::Crawford),
            "csv" => Some(Format::Csv),
            "parquet" => Some(Format::Parquet),
            _ => None,
        }
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
