//! Traces: the data model and one reader/writer per native format.
//!
//! `model` holds the in-memory columns; `text` and `binary` are Warpscope's own formats
//! (specified in `docs/trace-format.md`); the other modules import the formats people have:
//! Accel-Sim, NVBit `mem_trace`, cuda-memtrace, Crawford 2014, Nugteren et al. 2014,
//! Dinero IV, and CSV/Parquet tables. `source` undoes gzip/zstd/xz compression while streaming.

pub mod accelsim;
pub mod binary;
pub mod crawford;
pub mod din;
mod lex;
pub(crate) mod memory;
pub mod memtrace;
mod model;
pub mod nugteren;
pub mod nvbit;
#[cfg(feature = "tables")]
mod parquet_check;
mod sink;
pub mod source;
pub(crate) mod spill;
#[cfg(feature = "tables")]
pub mod table;
#[cfg(test)]
pub(crate) mod testing;
pub mod text;
mod writer;

pub use model::{
    check_density, Access, AccessKind, AtomicOp, BuildError, Columns, Dim3, Instruction, Kernel,
    KernelBuilder, KernelInfo, MemSpace, Order, Trace, WarpInstructions,
};
pub use sink::{Assemble, CtaSink, KernelSink};
pub use writer::{is_binary_path, write_file, write_file_as, TraceWriter, WriteFormat};

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
    /// A row of a table (from 0).
    Row(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Byte(b) => write!(f, "byte offset {b}"),
            Location::Row(r) => write!(f, "row {r}"),
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
    /// What the trace was read for stopped taking it (a simulation failed or was cancelled),
    /// and why.
    #[error("{0}")]
    Stopped(String),
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
    /// The file held no kernel at all (not a truncation: there is nothing to keep).
    pub fn is_empty_trace(&self) -> bool {
        matches!(self, TraceError::Parse { message, .. } if message.starts_with(NO_KERNEL))
    }
}

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

/// How to read a trace file.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// The format; detected from the content when `None`.
    pub format: Option<Format>,
    /// Keep the kernels read completely before an error instead of failing.
    pub allow_truncated: bool,
}

/// A trace read from a file, and how.
#[derive(Debug)]
pub struct Loaded {
    pub trace: Trace,
    pub format: Format,
    /// True when the format was detected rather than given.
    pub detected: bool,
    pub compression: source::Compression,
    /// With `allow_truncated`: the error that ended reading early (only complete kernels are
    /// in `trace`).
    pub truncated: Option<TraceError>,
}

/// Why a reader's record, a kernel's start or its end was refused: a message about the file
/// (the reader's walker adds the line or offset), or an error of the receiver, passed on as it
/// is.
pub(crate) enum Fail {
    File(String),
    Out(TraceError),
}

impl From<String> for Fail {
    fn from(m: String) -> Self {
        Fail::File(m)
    }
}

impl From<TraceError> for Fail {
    fn from(e: TraceError) -> Self {
        Fail::Out(e)
    }
}

/// What a reader needs besides the stream: the name for errors and a way to open the other
/// files of multi-file formats (Accel-Sim's `kernelslist.g`).
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    pub path: &'a Path,
    pub file_bytes: u64,
    pub wrap: &'a dyn Fn(source::Stream) -> source::Stream,
    pub watch: &'a dyn Fn(source::Stream) -> source::Stream,
}

/// Reads a trace file, detecting the format when `format` is `None`.
pub fn read_file(path: &Path, format: Option<Format>) -> Result<(Trace, Format), TraceError> {
    let opts = ReadOptions {
        format,
        allow_truncated: false,
    };
    load(path, opts, &|s| s).map(|l| (l.trace, l.format))
}

/// Reads a trace file (or an Accel-Sim trace directory), undoing compression. `wrap` may move
/// decompression onto another thread (see [`source::open`]).
pub fn load(
    path: &Path,
    opts: ReadOptions,
    wrap: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<Loaded, TraceError> {
    load_watched(path, opts, wrap, &|s| s)
}

/// [`load`], with `watch` wrapped around each file's own (still compressed) bytes: the app
/// counts them for its progress bar and cancels a load by failing the next read.
pub fn load_watched(
    path: &Path,
    opts: ReadOptions,
    wrap: &dyn Fn(source::Stream) -> source::Stream,
    watch: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<Loaded, TraceError> {
    let open = open_trace(path, opts, wrap, watch)?;
    let (format, detected, compression) = (open.format, open.detected, open.compression);
    let mut trace = Trace::default();
    let truncated = match open.read(wrap, watch, &mut trace) {
        Ok(()) => None,
        // Only complete kernels were handed over.
        Err(e) if opts.allow_truncated && !e.is_empty_trace() => Some(e),
        Err(e) => return Err(e),
    };
    Ok(Loaded {
        trace,
        format,
        detected,
        compression,
        truncated,
    })
}

/// A trace file opened, decompressed and its format known, nothing read past its head
/// ([`open_trace`]); [`OpenTrace::read`] reads its kernels. It can move to another thread.
pub struct OpenTrace {
    name: String,
    path: std::path::PathBuf,
    reader: Box<dyn std::io::BufRead + Send>,
    pub format: Format,
    /// True when the format was detected rather than given.
    pub detected: bool,
    pub compression: source::Compression,
    /// Size of the file on disk (compressed bytes; for Accel-Sim, of `kernelslist.g`).
    pub file_bytes: u64,
}

impl OpenTrace {
    /// The file's name as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads every kernel into `out`, in launch order (`wrap` and `watch` as for
    /// [`load_watched`], for the other files of multi-file formats). A trace with no kernel
    /// is an error ([`TraceError::is_empty_trace`]).
    pub fn read(
        self,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        self.pass(wrap, watch, &mut Assemble::new(out), false)
    }

    /// Reads every kernel into `out` as [`OpenTrace::read`] does, but in pieces where the
    /// file allows, in the memory of one piece: CTA by CTA from our binary format and
    /// Accel-Sim traces (each kernel file is read twice, a scan and the read: see
    /// `accelsim/stream.rs`), chunks in issue order from our binary format, cuda-memtrace
    /// (read twice: `memtrace/stream.rs`) and NVBit logs whose launches do not interleave
    /// (read twice: `nvbit/stream.rs`), CTA by CTA from Nugteren et al.'s and Crawford's
    /// per-thread formats after an external sort (`spill.rs`). Other formats' kernels come
    /// whole.
    pub fn stream(
        self,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        self.pass(wrap, watch, out, true)
    }

    /// Reads the trace into `out`, CTA by CTA where the format is grouped so, and with
    /// `by_cta` also where that takes a second pass over the file.
    fn pass(
        self,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn CtaSink,
        by_cta: bool,
    ) -> Result<(), TraceError> {
        let bound = self.expanded_bound();
        let ctx = Ctx {
            file: &self.name,
            path: &self.path,
            file_bytes: self.file_bytes,
            wrap,
            watch,
        };
        let mut counting = sink::Counting {
            inner: out,
            kernels: 0,
        };
        let result = match self.format {
            Format::Binary => binary::stream_sized(self.reader, &self.name, bound, &mut counting),
            Format::AccelSim if by_cta => accelsim::stream_into(self.reader, &ctx, &mut counting),
            Format::MemTrace if by_cta => memtrace::stream_into(self.reader, &ctx, &mut counting),
            Format::NvBit if by_cta => nvbit::stream_into(self.reader, &ctx, &mut counting),
            Format::Crawford if by_cta => {
                crawford::stream_into(self.reader, &self.name, spill::DEFAULT_CAP, &mut counting)
            }
            Format::Nugteren if by_cta => {
                nugteren::stream_into(self.reader, &self.name, spill::DEFAULT_CAP, &mut counting)
            }
            _ => read_into(self.format, self.reader, &ctx, &mut counting),
        };
        if result.is_ok() && counting.kernels == 0 {
            return Err(TraceError::parse(
                &self.name,
                Location::Byte(0),
                format!(
                    "{NO_KERNEL}: expected a trace ({} format)",
                    self.format.name()
                ),
            ));
        }
        result
    }

    /// How many times [`OpenTrace::stream`] reads the file: twice for formats whose kernels'
    /// headers are known only at their ends (scanned, then read), once for a pipe or any other
    /// format. Progress by bytes read is measured against this many times the file.
    pub fn streamed_reads(&self) -> u64 {
        match self.format {
            _ if self.file_bytes == 0 => 1,
            Format::AccelSim | Format::MemTrace | Format::NvBit => 2,
            _ => 1,
        }
    }

    /// The most bytes the file can hold once decompressed: its size, or for compressed input
    /// 4096 times it (real traces compress far less; a header claiming more is corrupt).
    fn expanded_bound(&self) -> u64 {
        match self.compression {
            // A pipe's size is not known.
            _ if self.file_bytes == 0 => u64::MAX,
            source::Compression::None => self.file_bytes,
            _ => self.file_bytes.saturating_mul(4096),
        }
    }

    /// The reference stream this trace is, read in chunks, if its format is one (Dinero IV
    /// `din`); else the trace back, to be read whole.
    pub fn into_reference_stream(self) -> Result<ReferenceStream, Box<OpenTrace>> {
        if self.format != Format::Din {
            return Err(Box::new(self));
        }
        let header = match din::header(&self.name) {
            Ok(h) => h,
            Err(_) => return Err(Box::new(self)),
        };
        Ok(ReferenceStream {
            header,
            reader: din::Reader::new(self.reader, &self.name),
        })
    }
}

/// How the error of a file without any kernel starts.
const NO_KERNEL: &str = "no kernel found";

/// Opens `path` (an Accel-Sim directory opens its `kernelslist.g`) and finds its format:
/// the given one, else from the first bytes and the extension.
pub fn open_trace(
    path: &Path,
    opts: ReadOptions,
    wrap: &dyn Fn(source::Stream) -> source::Stream,
    watch: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<OpenTrace, TraceError> {
    let name = path.display().to_string();
    let (path, dir_format) = if path.is_dir() {
        (accelsim::list_in_dir(path, &name)?, Some(Format::AccelSim))
    } else {
        (path.to_path_buf(), None)
    };
    let name = path.display().to_string();
    let opened = source::open(&path, wrap, watch)?;
    let compression = opened.compression;
    let (head, reader) = source::peek(opened.reader, 8192).map_err(|e| TraceError::io(&name, e))?;
    let detected = opts.format.is_none();
    if head.is_empty() && dir_format.is_none() {
        return Err(TraceError::parse(
            &name,
            Location::Byte(0),
            "the file is empty: expected a trace",
        ));
    }
    let format = opts
        .format
        .or(dir_format)
        .unwrap_or_else(|| detect_with_extension(&head, &path));
    if detected && dir_format.is_none() && format.is_text() && looks_binary(&head) {
        let shown: String = head[..head.len().min(16)].escape_ascii().to_string();
        return Err(TraceError::parse(
            &name,
            Location::Byte(0),
            format!(
                "not a trace format Warpscope recognises: the file starts with binary bytes \
                 `{shown}` (give --format if it is one)"
            ),
        ));
    }
    Ok(OpenTrace {
        name,
        path,
        reader,
        format,
        detected,
        compression,
        file_bytes: opened.file_bytes,
    })
}

/// A trace that is one thread's references in order, read a chunk at a time
/// ([`OpenTrace::into_reference_stream`]): simulate it with
/// [`crate::sim::Session::begin_stream`] and the chunks of `reader`.
pub struct ReferenceStream {
    /// The kernel without its rows.
    pub header: Kernel,
    pub reader: din::Reader<Box<dyn std::io::BufRead + Send>>,
}

/// Reads a whole trace from bytes in memory (tests and fuzzing). Accel-Sim input is one
/// `.traceg`; Parquet needs a file and is refused.
pub fn read_bytes(format: Format, bytes: &[u8]) -> Result<Trace, TraceError> {
    let name = "<bytes>";
    let mut trace = Trace::default();
    match format {
        Format::AccelSim => trace.kernels.push(accelsim::read_kernel(bytes, name)?),
        Format::Parquet => {
            return Err(TraceError::parse(
                name,
                Location::Byte(0),
                "Parquet is read from files",
            ))
        }
        _ => {
            let ctx = Ctx {
                file: name,
                path: Path::new(name),
                file_bytes: bytes.len() as u64,
                wrap: &|s| s,
                watch: &|s| s,
            };
            read_into(format, bytes, &ctx, &mut trace)?;
        }
    }
    Ok(trace)
}

/// Content first; the extension only settles what content cannot (tables).
fn detect_with_extension(head: &[u8], path: &Path) -> Format {
    let plain = source::strip_compression(path);
    match plain.extension().and_then(|e| e.to_str()) {
        Some("parquet") => return Format::Parquet,
        Some("csv") => return Format::Csv,
        _ => {}
    }
    Format::detect(head)
}

fn read_into<R: std::io::BufRead>(
    format: Format,
    r: R,
    ctx: &Ctx<'_>,
    trace: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let name = ctx.file;
    let one = |t: Result<Trace, TraceError>, out: &mut dyn KernelSink| {
        for k in t?.kernels {
            out.kernel(k)?;
        }
        Ok(())
    };
    match format {
        Format::Text => text::read_into(r, name, trace),
        Format::Binary => {
            let mut whole = Assemble::new(trace);
            binary::stream_sized(r, name, ctx.file_bytes, &mut whole)
        }
        Format::Din => one(din::read_sized(r, name, ctx.file_bytes), trace),
        Format::Nugteren => one(nugteren::read(r, name), trace),
        Format::AccelSim => accelsim::read_into(r, ctx, trace),
        Format::NvBit => nvbit::read_into(r, name, trace),
        Format::MemTrace => memtrace::read_into(r, name, trace),
        Format::Crawford => crawford::read_into(r, name, trace),
        #[cfg(feature = "tables")]
        Format::Csv => table::read_csv(r, name, ctx.file_bytes, trace),
        #[cfg(feature = "tables")]
        Format::Parquet => table::read_parquet(ctx.path, name, trace),
        #[cfg(not(feature = "tables"))]
        Format::Csv | Format::Parquet => {
            let _ = r;
            Err(TraceError::parse(
                name,
                Location::Byte(0),
                "this build has no table support (the `tables` feature is off)",
            ))
        }
    }
}

/// Whether the first bytes look like binary data rather than text: a NUL byte, or more than
/// one in twenty bytes that is a control character or not UTF-8.
fn looks_binary(head: &[u8]) -> bool {
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
