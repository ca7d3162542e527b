//! What each trace format's reader offers, behind one trait: [`TraceReader`]. A reader reads
//! a file whole, streams it in pieces, and says what it can do (how often a streamed read
//! goes over the file, whether it sorts rows on disk first, how a run reads on from a copy
//! of its session). [`OpenTrace`] and through it the shells ask these capabilities, never
//! the format's variant.
//!
//! A new format is its module (its reader, `ENTRY` and an implementation of [`TraceReader`])
//! plus one line in [`Format::reader`] and its entry in `Format::ENTRIES` (`format.rs`).

use std::io::BufRead;

use super::*;

/// A trace file's bytes from its start, decompressed.
pub(crate) type Input = Box<dyn BufRead + Send>;

/// How a run of a file reads on from a copy of its session taken part way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadOn {
    /// Never through the file's reader: the format goes on from its own places (a `din`
    /// file, [`OpenTrace::into_reference_stream`]).
    Own,
    /// The file read again from its start, handing on nothing before the place ([`SkipTo`]).
    Skim,
    /// Our binary format: through its index, or, compressed, walked from its start.
    Index,
    /// The reader goes on from the place itself ([`TraceReader::stream_from`]).
    Reader,
}

/// One trace format's reader. Every method but [`TraceReader::read`] has the answer most
/// formats give.
pub(crate) trait TraceReader: Sync {
    /// Reads every kernel whole into `out`, in launch order.
    fn read(&self, r: Input, cx: &Ctx<'_>, out: &mut dyn KernelSink) -> Result<(), TraceError>;

    /// Hands the file on in pieces ([`OpenTrace::stream`]): CTA by CTA, or in chunks of
    /// issued rows. By default it is read whole, a kernel at a time.
    fn stream(&self, r: Input, cx: &Ctx<'_>, out: &mut dyn CtaSink) -> Result<(), TraceError> {
        self.read(r, cx, out)
    }

    /// How many times [`TraceReader::stream`] reads the file: 2 where kernels' headers are
    /// known only at their ends (scanned, then read), unless the receiver takes
    /// instructions `as_found` and the reader can give them so.
    fn streamed_reads(&self, _as_found: bool) -> u64 {
        1
    }

    /// Whether [`TraceReader::stream`] hands the file on CTA by CTA only after an external
    /// sort of its rows (`spill.rs`).
    fn sorts_to_stream(&self) -> bool {
        false
    }

    /// How a run reads on from a copy of its session.
    fn read_on(&self) -> ReadOn {
        ReadOn::Skim
    }

    /// Streams the file on from `at` (readers whose [`TraceReader::read_on`] is
    /// [`ReadOn::Reader`]); `None` where the place is not one of this format's.
    fn stream_from(
        &self,
        _r: Input,
        _cx: &Ctx<'_>,
        _at: &ResumePoint,
        _held: Held<'_>,
        _out: &mut dyn CtaSink,
    ) -> Option<Result<(), TraceError>> {
        None
    }

    /// Whether the reader itself gives the places a run can read on from
    /// ([`SinkHooks::read_on_point`]), rather than every piece being one.
    fn gives_places(&self) -> bool {
        false
    }

    /// The bytes on disk that reading on from kernel `kernel` does not read.
    fn bytes_before_kernel(
        &self,
        _r: Input,
        _cx: &Ctx<'_>,
        _kernel: u32,
    ) -> Result<u64, TraceError> {
        Ok(0)
    }
}

/// The bytes a run of the trace at `path` (`bytes` on disk) reads when it reads on from
/// `at` (for a progress bar): a `din` or binary file from the place on; a file whose reader
/// reads on itself from the place's kernel on, as often as it reads a file (a cuda-memtrace
/// file's second read starts at an offset only its scan finds, so the bar may end short); an
/// NVBit log from the place on; a file of the other formats whole, as often as its run read
/// it. A compressed `din` file, binary file or NVBit log is read whole (its place is in the
/// decompressed bytes).
pub fn bytes_to_read_on(path: &Path, bytes: u64, at: &ResumePoint, as_found: bool) -> u64 {
    let opts = ReadOptions {
        format: None,
        allow_truncated: false,
    };
    let open = open_trace(path, opts, &|s| s, &|s| s);
    let compressed = open
        .as_ref()
        .is_ok_and(|o| o.compression != source::Compression::None);
    match at {
        ResumePoint::Din(_) | ResumePoint::NvBit(_) if compressed => return bytes,
        ResumePoint::Din(at) => return bytes.saturating_sub(at.offset),
        ResumePoint::NvBit(at) => return bytes.saturating_sub(at.offset()),
        _ => {}
    }
    match open {
        Ok(open) if open.format.reader().read_on() == ReadOn::Reader => {
            let (reads, kernel) = match *at {
                ResumePoint::Cta { kernel, .. } | ResumePoint::Issued { kernel, .. } => {
                    (open.streamed_reads(as_found), kernel)
                }
                _ => (1, 0),
            };
            let before = open.bytes_before_kernel(kernel).unwrap_or(0);
            bytes.saturating_sub(before) * reads
        }
        // Read again from its start, as often as the run reads it.
        Ok(open) if open.skims_to_resume() => bytes * open.streamed_reads(as_found),
        _ => {
            let offset = std::fs::File::open(path)
                .ok()
                .and_then(|f| {
                    let index = binary::Index::read(&mut std::io::BufReader::new(f), "").ok()?;
                    let (kernel, chunk) = index.place(at)?;
                    index.resume_offset(kernel, chunk)
                })
                .unwrap_or(0);
            bytes.saturating_sub(offset)
        }
    }
}

impl Format {
    /// Whether a file of this format is one thread's reference stream, read by its own
    /// reader in chunks ([`OpenTrace::into_reference_stream`]): Dinero IV's `din`.
    pub fn is_reference_stream(self) -> bool {
        self.reader().read_on() == ReadOn::Own
    }

    /// This format's reader.
    pub(crate) fn reader(self) -> &'static dyn TraceReader {
        match self {
            Format::Text => &text::TextReader,
            Format::Binary => &binary::BinaryReader,
            Format::Din => &din::DinReader,
            Format::Nugteren => &nugteren::NugterenReader,
            Format::AccelSim => &accelsim::AccelSimReader,
            Format::NvBit => &nvbit::NvBitReader,
            Format::MemTrace => &memtrace::MemTraceReader,
            Format::Crawford => &crawford::CrawfordReader,
            #[cfg(feature = "tables")]
            Format::Csv => &table::CsvReader,
            #[cfg(feature = "tables")]
            Format::Parquet => &table::ParquetReader,
            #[cfg(not(feature = "tables"))]
            Format::Csv | Format::Parquet => &NoTables,
        }
    }
}

/// CSV and Parquet in a build without the `tables` feature: a clear error.
#[cfg(not(feature = "tables"))]
pub(crate) struct NoTables;

#[cfg(not(feature = "tables"))]
impl TraceReader for NoTables {
    fn read(&self, _r: Input, cx: &Ctx<'_>, _out: &mut dyn KernelSink) -> Result<(), TraceError> {
        Err(TraceError::parse(
            cx.file,
            Location::Byte(0),
            "this build has no table support (the `tables` feature is off)",
        ))
    }
}
