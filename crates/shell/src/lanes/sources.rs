//! A trace file as a source of the lanes: opened from its start, or read on from the place
//! a copy of a session was taken at (the app's zoom into a window).

use anyhow::{Context, Result};

use super::{Fanout, Piece, Source};
use warpscope_core::sim::Session;
use warpscope_core::trace::{self, din};

/// Rows per chunk of a reference stream: about 1.5 MB of columns, small enough to stay in
/// the caches' reach and large enough that handing a chunk over costs nothing measurable.
pub const CHUNK_ROWS: usize = 1 << 16;
/// Chunks of a reference stream parsed ahead of the simulation.
const AHEAD: usize = 4;

/// How an opened trace file is sent: its source, the depth of the lanes' queues for its
/// pieces, and whether its CTAs can run on several SMs (a reference stream's one thread runs
/// on one).
pub struct FileSource {
    pub source: Source,
    pub depth: usize,
    pub splits: bool,
}

/// The pieces of an opened trace file: a `din` reference stream in chunks of rows, any other
/// format CTA by CTA where it is grouped so (else a kernel at a time). `wrap` and `watch` are
/// [`trace::OpenTrace::stream`]'s (decompression ahead, counting the bytes read). With
/// `as_found`, a file whose kernels' instructions are known only at their ends (NVBit) is
/// read once, its instructions sent as they are found ([`Fanout::take_instructions_as_found`]);
/// the run may then fail with [`trace::TraceError::must_read_again`], to be started again without.
pub fn file_source(
    open: trace::OpenTrace,
    wrap: fn(trace::source::Stream) -> trace::source::Stream,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
) -> FileSource {
    file_source_marked(open, wrap, watch, None, as_found)
}

/// [`file_source`] for a run that keeps copies of its session, one about every `every`
/// accesses: the CTAs and chunks of issued rows of a file that can be read on from them
/// ([`trace::OpenTrace::resumable`]: a binary file of version 4, and any other format but
/// `din`) go with their place in the file ([`Fanout::number_pieces`]), so
/// that the lane offers copies between and within them ([`trace::ResumePoint::Cta`],
/// [`trace::ResumePoint::Issued`]); an NVBit log's reader gives places itself, after a
/// chunk every `every` rows or so ([`Fanout::take_read_on_points`]). With `as_found`, a file
/// whose kernels' instructions are known only at their ends is read once, its instructions
/// sent as they are found ([`Fanout::take_instructions_as_found`]).
pub fn resumable_file_source(
    open: trace::OpenTrace,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
    every: u64,
) -> FileSource {
    file_source_marked(open, |s| s, watch, Some(every), as_found)
}

fn file_source_marked(
    open: trace::OpenTrace,
    wrap: fn(trace::source::Stream) -> trace::source::Stream,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    copies_every: Option<u64>,
    as_found: bool,
) -> FileSource {
    match open.into_reference_stream() {
        Ok(stream) => FileSource {
            source: Box::new(move |to| send_reference_stream(stream, CHUNK_ROWS, to)),
            depth: AHEAD,
            splits: false,
        },
        Err(open) => {
            // A copy of a session can go on from any CTA or chunk of issued rows (of a
            // binary file of version 4, an Accel-Sim trace, a cuda-memtrace file, a file of
            // the formats read again from the start), or from a place an NVBit log's reader
            // gave.
            let resumable = copies_every.is_some() && open.resumable();
            FileSource {
                // One kernel or CTA waits while one is simulated and the next is read.
                source: Box::new(move |to| {
                    // An NVBit log's reader says itself where it can be read on from.
                    if let (true, true, Some(every)) =
                        (resumable, open.reader_gives_places(), copies_every)
                    {
                        to.take_read_on_points(every);
                    } else if resumable {
                        to.number_pieces(0, 0);
                    }
                    if as_found {
                        to.take_instructions_as_found();
                    }
                    Ok(open.stream(&wrap, &watch, to)?)
                }),
                depth: 1,
                splits: true,
            }
        }
    }
}

/// Sends a reference stream, its header and then its rows in chunks of `rows_per_chunk`.
pub fn send_reference_stream(
    stream: trace::ReferenceStream,
    rows_per_chunk: usize,
    to: &mut Fanout,
) -> Result<()> {
    let trace::ReferenceStream {
        header,
        reader,
        seekable,
    } = stream;
    to.send(Piece::Stream(header))?;
    send_rows(reader, seekable, rows_per_chunk, to)
}

/// Sends the rows of a reference stream whose header was sent, in chunks of
/// `rows_per_chunk`, with their resume points if `seekable`.
fn send_rows<R: std::io::BufRead>(
    mut reader: din::Reader<R>,
    seekable: bool,
    rows_per_chunk: usize,
    to: &mut Fanout,
) -> Result<()> {
    loop {
        let mut chunk = to.buffer();
        if !reader.next_chunk(&mut chunk, rows_per_chunk)? {
            return Ok(());
        }
        let at = seekable.then(|| reader.resume_point());
        to.send(Piece::Rows(chunk, at))?;
    }
}

/// The rest of the file at `path` (named `file`) from `at`, for `session`, a copy of a
/// session that stood there ([`Session::snapshot`]), sent as [`file_source`] sends it: a
/// reference stream's rows, or a kernel from the CTA or chunk after the copy on and the
/// kernels after it. A copy within a binary file's kernel gets back the rows of its resident
/// CTAs here, read through the file's index; one within an Accel-Sim kernel, a compressed
/// binary file's or another format's gets them from the source, which reads the kernel's
/// file again, walks the binary file from its start or reads the file again from its start
/// (`trace::SinkHooks::resident`, `trace::SkipTo`). `watch`
/// sees the file's bytes from there; `as_found` is [`file_source`]'s.
pub fn resumed_source(
    path: std::path::PathBuf,
    file: String,
    at: trace::ResumePoint,
    session: &mut Session,
    watch: impl Fn(trace::source::Stream) -> trace::source::Stream + Send + 'static,
    as_found: bool,
) -> Result<FileSource> {
    let (kernel, next_chunk) = match at {
        trace::ResumePoint::NvBit(_) => (0, 0),
        trace::ResumePoint::Din(at) => {
            return Ok(FileSource {
                source: Box::new(move |to| {
                    let reader = din::reader_at(&path, &file, at, &watch)?;
                    send_rows(reader, true, CHUNK_ROWS, to)
                }),
                depth: AHEAD,
                splits: false,
            })
        }
        trace::ResumePoint::Cta { kernel, .. } => (kernel, 0),
        trace::ResumePoint::Issued { kernel, next_chunk } => (kernel, next_chunk),
    };
    let opts = trace::ReadOptions {
        format: None,
        allow_truncated: false,
    };
    let opened = trace::open_trace(&path, opts, &|s| s, &|s| s)?;
    if !opened.reads_on_by_index() {
        // The reader goes on from `at` itself: issued rows only (cuda-memtrace: the copy
        // wants no CTA's rows back), or the resident CTAs' rows first, from the kernel file
        // read again (Accel-Sim), from the compressed binary file walked from its start, or
        // from a file of another format read again from its start.
        let instructions = session.kernel_instructions().to_vec();
        let wanted = session.wanted_ctas().to_vec();
        return Ok(FileSource {
            source: Box::new(move |to| {
                let open = trace::open_trace(&path, opts, &|s| s, &watch)?;
                // An NVBit log's places come from its reader (none is wanted here: a run
                // read on from a copy keeps no copies).
                if !matches!(at, trace::ResumePoint::NvBit(_)) {
                    to.number_pieces(kernel + 1, next_chunk);
                }
                if as_found {
                    to.take_instructions_as_found();
                }
                let held = trace::Held {
                    instructions: &instructions,
                    wanted_ctas: &wanted,
                };
                Ok(open.stream_from(at, held, &|s| s, &watch, to)?)
            }),
            depth: 1,
            splits: true,
        });
    }
    let open = || std::fs::File::open(&path).with_context(|| format!("opening {file}"));
    let refill = |session: &mut Session| -> Result<trace::binary::Index> {
        let mut r = std::io::BufReader::new(open()?);
        let index = trace::binary::Index::read(&mut r, &file)?;
        for cta in session.wanted_ctas().to_vec() {
            let rows = index.cta(&mut r, kernel as usize, cta)?;
            session.give_cta_rows(cta, rows)?;
        }
        Ok(index)
    };
    let index = refill(session).with_context(|| {
        format!(
            "{file}: reading on from kernel {kernel}, where the run stood (did the file \
             change since?)"
        )
    })?;
    // `at` is a binary file's place: `place` always finds it.
    let (k, chunk) = index.place(&at).unwrap_or((kernel as usize, 0));
    let f = open()?;
    Ok(FileSource {
        source: Box::new(move |to| {
            // A CTA's copy numbers no chunk.
            to.number_pieces(kernel + 1, next_chunk);
            Ok(index.stream_from(f, k, chunk, &watch, to)?)
        }),
        depth: 1,
        splits: true,
    })
}
