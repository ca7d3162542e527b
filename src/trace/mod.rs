//! Traces: the data model and one reader/writer per native format.
//!
//! `model` holds the in-memory columns; `text` and `binary` are Warpscope's own formats
//! (specified in `docs/trace-format.md`); `din` reads Dinero IV traces.

pub mod binary;
pub mod din;
mod model;
pub mod nugteren;
pub mod text;

pub use model::{
    Access, AccessKind, AtomicOp, BuildError, Columns, Dim3, Instruction, Kernel, KernelBuilder,
    MemSpace, Order, Trace,
};

use std::path::Path;

/// Decodes a row's packed kind/space byte (hot-loop helper for other modules).
#[inline]
pub fn model_flags(flags: u8) -> (AccessKind, MemSpace) {
    model::unpack_flags(flags)
}

/// The packed kind code of a barrier row (`flags & 0x1f`).
pub const BARRIER_CODE: u8 = 2;

/// Where in an input something went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Byte(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Byte(b) => write!(f, "byte offset {b}"),
        }
    }
}

/// An error reading or writing a trace, naming the file and position.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{file}: {at}: {message}")]
    Parse {
        file: String,
        at: Location,
        message: String,
    },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl TraceError {
    pub(crate) fn parse(file: &str, at: Location, message: impl Into<String>) -> Self {
        TraceError::Parse {
            file: file.to_string(),
            at,
            message: message.into(),
        }
    }
    pub(crate) fn io(file: &str, source: std::io::Error) -> Self {
        TraceError::Io {
            file: file.to_string(),
            source,
        }
    }
}

/// The trace file formats this build can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Warpscope text format (`.wst`).
    Text,
    /// Warpscope binary format (`.wsb`).
    Binary,
    /// Dinero IV traditional or extended `din` text.
    Din,
    /// Seed 001's `.trc` format (`blocksize: X Y Z`, then `tid dir addr bytes`).
    Nugteren,
}

impl Format {
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "text" | "wst" => Some(Format::Text),
            "binary" | "wsb" | "native" => Some(Format::Binary),
            "din" => Some(Format::Din),
            "nugteren" | "trc" => Some(Format::Nugteren),
            _ => None,
        }
    }
    /// Guesses the format from the first bytes of a file.
    pub fn detect(head: &[u8]) -> Format {
        if head.starts_with(binary::MAGIC) {
            return Format::Binary;
        }
        let text = String::from_utf8_lossy(head);
        for line in text.lines() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if t.starts_with("kernel ") {
                return Format::Text;
            }
            if t.starts_with("blocksize:") {
                return Format::Nugteren;
            }
            return Format::Din;
        }
        Format::Text
    }
}

/// Reads a trace file, detecting the format when `format` is `None`.
pub fn read_file(path: &Path, format: Option<Format>) -> Result<(Trace, Format), TraceError> {
    use std::io::Read;
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let format = match format {
        Some(f) => f,
        None => {
            let mut head = Vec::with_capacity(4096);
            (&mut reader)
                .take(4096)
                .read_to_end(&mut head)
                .map_err(|e| TraceError::io(&name, e))?;
            let f = Format::detect(&head);
            let rest = reader;
            let chained = std::io::Cursor::new(head).chain(rest);
            return read_with(std::io::BufReader::new(chained), &name, f, size).map(|t| (t, f));
        }
    };
    read_with(reader, &name, format, size).map(|t| (t, format))
}

fn read_with<R: std::io::BufRead>(
    r: R,
    name: &str,
    format: Format,
    size: u64,
) -> Result<Trace, TraceError> {
    match format {
        Format::Text => text::read(r, name),
        Format::Binary => binary::read(r, name),
        Format::Din => din::read_sized(r, name, size),
        Format::Nugteren => nugteren::read(r, name),
    }
}

/// Writes a trace in the format implied by the extension (`.wsb` binary, else text).
pub fn write_file(trace: &Trace, path: &Path) -> Result<(), TraceError> {
    let name = path.display().to_string();
    let file = std::fs::File::create(path).map_err(|e| TraceError::io(&name, e))?;
    let mut w = std::io::BufWriter::new(file);
    let result = if is_binary_path(path) {
        binary::write(trace, &mut w)
    } else {
        text::write(trace, &mut w)
    };
    result
        .and_then(|_| std::io::Write::flush(&mut w))
        .map_err(|e| TraceError::io(&name, e))
}

/// `.wsb` files are binary.
pub fn is_binary_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wsb")
}
