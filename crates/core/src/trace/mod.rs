//! Traces: the data model and one reader/writer per native format.
//!
//! `model` holds the in-memory columns; `text` and `binary` are Warpscope's own formats
//! (specified in `docs/trace-format.md`); the other modules import the formats people have:
//! Accel-Sim, NVBit `mem_trace`, cuda-memtrace, Crawford 2014, Nugteren et al. 2014,
//! Dinero IV, and CSV/Parquet tables. `source` undoes gzip/zstd/xz compression while streaming.

pub mod accelsim;
pub mod binary;
#[cfg(test)]
mod bytes_tests;
mod codec;
pub mod crawford;
pub mod din;
mod error;
mod format;
mod lex;
pub(crate) mod memory;
pub mod memtrace;
mod model;
pub mod nugteren;
pub mod nvbit;
#[cfg(feature = "tables")]
pub(crate) mod parquet_check;
mod queue;
mod reader;
mod sink;
mod skip;
pub mod source;
pub(crate) mod spill;
#[cfg(feature = "tables")]
pub mod table;
#[cfg(test)]
pub(crate) mod testing;
pub mod text;
mod writer;

pub use error::{Location, TraceError};
pub use format::Format;
use format::{detect_with_extension, looks_binary};
pub use model::{
    check_density, Access, AccessKind, AtomicOp, BuildError, Columns, Dim3, Instruction, Kernel,
    KernelBuilder, KernelHeader, KernelInfo, KernelParts, LoadGroups, MemSpace, Order, PartsError,
    Trace, WarpInstructions, LOAD_GROUPS_ATTRIBUTE,
};
pub use reader::bytes_to_read_on;
use reader::ReadOn;
pub use sink::{Assemble, CtaSink, KernelSink, SinkHooks};
pub use skip::{Place, SkipTo};
pub use writer::{is_binary_path, write_file, write_file_as, TraceWriter, WriteFormat};

use std::path::Path;

/// Decodes a row's packed kind/space byte (hot-loop helper for other modules).
#[inline]
pub fn model_flags(flags: u8) -> (AccessKind, MemSpace) {
    model::unpack_flags(flags)
}

/// The packed kind code of a barrier row (`flags & 0x1f`).
pub const BARRIER_CODE: u8 = 2;

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
    /// The most bytes the input can hold decompressed (a bound a corrupt header cannot pass).
    pub bound: u64,
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
    read_opened(open, opts, wrap, watch)
}

/// Reads every kernel of an opened file ([`load_watched`]).
fn read_opened(
    open: OpenTrace,
    opts: ReadOptions,
    wrap: &dyn Fn(source::Stream) -> source::Stream,
    watch: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<Loaded, TraceError> {
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
    /// (read twice: `nvbit/stream.rs`), CTA by CTA from Nugteren et al.'s per-thread format
    /// (sorted by thread a CTA at a time where its CTAs come in order, read once by a
    /// receiver that takes instructions `as_found`, else twice: `nugteren/stream.rs`), and from Crawford's after an external sort (`spill.rs`), from CSV and Parquet tables
    /// (read twice, sorted the same way, or in issue order with an `sm` column:
    /// `table/stream.rs`), and from our text format (through the same sort, or in file order
    /// for an issued-order kernel: `text/stream.rs`).
    pub fn stream(
        self,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        self.pass(wrap, watch, out, true)
    }

    /// Whether a run of this file can be read on from where a copy of its session was taken
    /// ([`OpenTrace::stream_from`]), a file and not a pipe: our binary format of version 4
    /// (through its index; a compressed file has none to seek by and is decompressed again up
    /// to the place, its records before it stepped over); cuda-memtrace (walked over to the
    /// place); an Accel-Sim trace (its kernel files before the copy's are not opened; that one
    /// is read again from its start); an NVBit log read in one pass (from the places its
    /// reader gives, [`SinkHooks::read_on_point`]); any other format but `din` (which goes on
    /// from its own places) read again from its start without handing on what comes before
    /// the place ([`OpenTrace::skims_to_resume`]). A compressed file is decompressed again up
    /// to the place.
    pub fn resumable(&self) -> bool {
        match self.format.reader().read_on() {
            ReadOn::Own => false,
            ReadOn::Index if self.compression != source::Compression::None => {
                self.file_bytes > 0 && self.binary_version().is_some_and(|v| v >= 4)
            }
            ReadOn::Index => self.seekable_index().is_some(),
            ReadOn::Skim | ReadOn::Reader => self.file_bytes > 0,
        }
    }

    /// Streams the file on from `at`, where a copy of a session holding `held` was taken, as
    /// [`OpenTrace::stream`] would have gone on from there: the rest of that kernel, without
    /// its beginning, then every later kernel. A cuda-memtrace file goes on from a chunk of
    /// issued rows ([`ResumePoint::Issued`]); an Accel-Sim trace from a CTA
    /// ([`ResumePoint::Cta`]), the rows of the copy's resident CTAs first
    /// ([`SinkHooks::resident`]), as does a compressed binary file, walked from its start, and
    /// a file of the other formats, read again from its start ([`SkipTo`]). (An uncompressed
    /// binary file goes on through its index: `shell::lanes::resumed_source`.)
    pub fn stream_from(
        mut self,
        at: ResumePoint,
        held: Held<'_>,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        if let (true, Some(place)) = (self.walks_to_resume(), Place::of(&at)) {
            let bound = self.expanded_bound();
            let wanted = held.wanted_ctas;
            return binary::stream_from_start(self.reader, &self.name, bound, place, wanted, out);
        }
        if let (true, Some(place)) = (self.skims_to_resume(), Place::of(&at)) {
            // Read again from the start, handing on nothing before the place.
            let name = self.name.clone();
            let mut skip = SkipTo::new(out, place, held.wanted_ctas, &name);
            self.stream(wrap, watch, &mut skip)?;
            return skip.finish();
        }
        let resumable = self.resumable();
        let input = self.take_input();
        let ctx = self.ctx(wrap, watch);
        let read_on = if resumable {
            self.format
                .reader()
                .stream_from(input, &ctx, &at, held, out)
        } else {
            None
        };
        read_on.unwrap_or_else(|| {
            Err(TraceError::parse(
                &self.name,
                Location::Byte(0),
                format!(
                    "a run of this {} file cannot be read on from {at:?}",
                    self.format.name()
                ),
            ))
        })
    }

    /// The bytes on disk that [`OpenTrace::stream_from`] a kernel does not read: for an
    /// Accel-Sim kernel list, those of the files of its first `kernel` kernels; 0 for any
    /// other trace.
    pub fn bytes_before_kernel(mut self, kernel: u32) -> Result<u64, TraceError> {
        let input = self.take_input();
        let ctx = self.ctx(&|s| s, &|s| s);
        self.format
            .reader()
            .bytes_before_kernel(input, &ctx, kernel)
    }

    /// The file's bytes, for its reader (the trace keeps an empty stream in their place).
    fn take_input(&mut self) -> reader::Input {
        std::mem::replace(&mut self.reader, Box::new(std::io::empty()))
    }

    /// What the format's reader is told of this file besides its bytes.
    fn ctx<'a>(
        &'a self,
        wrap: &'a dyn Fn(source::Stream) -> source::Stream,
        watch: &'a dyn Fn(source::Stream) -> source::Stream,
    ) -> Ctx<'a> {
        Ctx {
            file: &self.name,
            path: &self.path,
            file_bytes: self.file_bytes,
            bound: self.expanded_bound(),
            wrap,
            watch,
        }
    }

    /// Reads the trace into `out`, CTA by CTA where the format is grouped so, and with
    /// `by_cta` also where that takes a second pass over the file.
    fn pass(
        mut self,
        wrap: &dyn Fn(source::Stream) -> source::Stream,
        watch: &dyn Fn(source::Stream) -> source::Stream,
        out: &mut dyn CtaSink,
        by_cta: bool,
    ) -> Result<(), TraceError> {
        let mut counting = sink::Counting {
            inner: out,
            kernels: 0,
        };
        let input = self.take_input();
        let ctx = self.ctx(wrap, watch);
        let reader = self.format.reader();
        let result = if by_cta {
            reader.stream(input, &ctx, &mut counting)
        } else {
            reader.read(input, &ctx, &mut counting)
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
    /// format, or for an NVBit log, Accel-Sim trace or Nugteren et al. file given to a
    /// receiver that takes instructions `as_found`
    /// ([`SinkHooks::takes_more_instructions`]). Progress by bytes read is measured against
    /// this many times the file.
    pub fn streamed_reads(&self, as_found: bool) -> u64 {
        if self.file_bytes == 0 {
            return 1;
        }
        self.format.reader().streamed_reads(as_found)
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

    /// Whether [`OpenTrace::stream_from`] reads this file on by reading it again from its
    /// start, handing on nothing before the place but the resident CTAs' rows ([`SkipTo`]):
    /// the formats that have no faster way (our text format, Nugteren et al.'s and Crawford's,
    /// CSV and Parquet tables).
    pub fn skims_to_resume(&self) -> bool {
        self.format.reader().read_on() == ReadOn::Skim && self.resumable()
    }

    /// Whether [`OpenTrace::stream`] hands this file on CTA by CTA only after an external sort
    /// of its rows (`spill.rs`): Crawford's per-thread format, our
    /// text format and CSV and Parquet tables (unless their rows come in issue order). A
    /// receiver that would hold the whole anyway reads such a file faster whole.
    pub fn sorts_to_stream(&self) -> bool {
        self.format.reader().sorts_to_stream()
    }

    /// Whether [`OpenTrace::stream_from`] reads this file on by walking it from its start: a
    /// compressed binary file of version 4 (an uncompressed one goes through its index:
    /// `shell::lanes::resumed_source`).
    pub fn walks_to_resume(&self) -> bool {
        self.format.reader().read_on() == ReadOn::Index
            && self.compression != source::Compression::None
            && self.resumable()
    }

    /// Whether the format's reader gives the places a run can read on from itself (an NVBit
    /// log read in one pass), rather than every piece handed on being one.
    pub fn reader_gives_places(&self) -> bool {
        self.format.reader().gives_places()
    }

    /// Whether a run of this file reads on from a copy through the file's index (a binary file
    /// not compressed: `shell::lanes::resumed_source`) rather than through its reader.
    pub fn reads_on_by_index(&self) -> bool {
        self.format.reader().read_on() == ReadOn::Index && !self.walks_to_resume()
    }

    /// The version of a binary file, read from its (decompressed) header; `None` if it
    /// cannot be read.
    fn binary_version(&self) -> Option<u32> {
        let mut r = source::open(&self.path, &|s| s, &|s| s).ok()?.reader;
        binary::version_of(&mut r, &self.name).ok()
    }

    /// The index of a binary file of version 4 that is not compressed (a file, not a pipe):
    /// then a run of it can be read on from any CTA ([`ResumePoint::Cta`]).
    pub fn seekable_index(&self) -> Option<binary::Index> {
        if self.format.reader().read_on() != ReadOn::Index
            || self.compression != source::Compression::None
            || self.file_bytes == 0
        {
            return None;
        }
        let f = std::fs::File::open(&self.path).ok()?;
        binary::Index::read(&mut std::io::BufReader::new(f), &self.name).ok()
    }

    /// The reference stream this trace is, read in chunks, if its format is one (Dinero IV
    /// `din`); else the trace back, to be read whole.
    pub fn into_reference_stream(self) -> Result<ReferenceStream, Box<OpenTrace>> {
        if !self.format.is_reference_stream() {
            return Err(Box::new(self));
        }
        let header = match din::header(&self.name) {
            Ok(h) => h,
            Err(_) => return Err(Box::new(self)),
        };
        Ok(ReferenceStream {
            header,
            // A compressed file is decompressed again up to a resume point.
            seekable: self.file_bytes > 0,
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
    finish_open(name, path, opened, opts, dir_format)
}

/// [`open_trace`] for a file's bytes handed over whole (the web build's file picker and drag
/// and drop): `name` is the file's name, which gives its extension. A multi-file format
/// (Accel-Sim's `kernelslist.g`) cannot open its other files from here: open one `.traceg`.
pub fn open_trace_bytes<B: AsRef<[u8]> + Send + 'static>(
    name: &str,
    bytes: B,
    opts: ReadOptions,
    wrap: &dyn Fn(source::Stream) -> source::Stream,
    watch: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<OpenTrace, TraceError> {
    let path = std::path::PathBuf::from(name);
    let n = bytes.as_ref().len() as u64;
    let raw = Box::new(std::io::Cursor::new(bytes));
    let opened = source::open_stream(name, &path, raw, n, wrap, watch)?;
    finish_open(name.to_string(), path, opened, opts, None)
}

/// Reads a whole trace from a file's bytes, as [`load_watched`] reads a file
/// ([`open_trace_bytes`] says what `name` is for).
pub fn load_bytes<B: AsRef<[u8]> + Send + 'static>(
    name: &str,
    bytes: B,
    opts: ReadOptions,
    watch: &dyn Fn(source::Stream) -> source::Stream,
) -> Result<Loaded, TraceError> {
    let open = open_trace_bytes(name, bytes, opts, &|s| s, watch)?;
    read_opened(open, opts, &|s| s, watch)
}

/// The format of an opened file (given, or from its head and name), checked to be a trace.
fn finish_open(
    name: String,
    path: std::path::PathBuf,
    opened: source::Opened,
    opts: ReadOptions,
    dir_format: Option<Format>,
) -> Result<OpenTrace, TraceError> {
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

/// Where a reader of a trace file stood, so that a copy of a session taken there
/// ([`crate::sim::Session::snapshot`]) can go on with the rest of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResumePoint {
    /// A `din` file, after a chunk of references ([`din::reader_at`]).
    Din(din::Resume),
    /// A binary file of version 4, not compressed, after a CTA of a kernel read CTA by CTA:
    /// kernel `kernel` of the file from CTA `next_cta` on ([`binary::Index::stream_from`]).
    Cta { kernel: u32, next_cta: u32 },
    /// The same file, after a chunk of an issued-order kernel: kernel `kernel` of the file
    /// from its chunk `next_chunk` on.
    Issued { kernel: u32, next_chunk: u32 },
    /// An NVBit log read in one pass, after a chunk of rows: where its reader stood
    /// ([`nvbit::Resume`], shared by the copies that hold it).
    NvBit(std::sync::Arc<nvbit::Resume>),
}

impl ResumePoint {
    /// About how many bytes the place holds (an NVBit reader's tables; the others are small).
    pub fn approx_bytes(&self) -> u64 {
        match self {
            ResumePoint::NvBit(r) => r.approx_bytes(),
            _ => 0,
        }
    }
}

/// What a copy of a session holds of the kernel it stood in, which a read on from there
/// must know where the file has no index ([`OpenTrace::stream_from`]): the kernel's
/// instructions it was given (the read numbers those it finds after them, and checks these),
/// and the resident CTAs whose rows it wants back ([`crate::sim::Session::wanted_ctas`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Held<'a> {
    pub instructions: &'a [Instruction],
    pub wanted_ctas: &'a [u32],
}

/// A trace that is one thread's references in order, read a chunk at a time
/// ([`OpenTrace::into_reference_stream`]): simulate it with
/// [`crate::sim::Session::begin_stream`] and the chunks of `reader`.
pub struct ReferenceStream {
    /// The kernel without its rows.
    pub header: Kernel,
    pub reader: din::Reader<Box<dyn std::io::BufRead + Send>>,
    /// The input is a file, not a pipe, so that it can be read on from the reader's resume
    /// points ([`din::Reader::resume_point`], [`din::reader_at`]).
    pub seekable: bool,
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
                bound: bytes.len() as u64,
                wrap: &|s| s,
                watch: &|s| s,
            };
            let input: reader::Input = Box::new(std::io::Cursor::new(bytes.to_vec()));
            format.reader().read(input, &ctx, &mut trace)?;
        }
    }
    Ok(trace)
}
