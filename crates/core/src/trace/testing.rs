//! Test helpers shared by the readers' tests: a receiver that records the pieces a streamed
//! read hands on, and scratch files to stream from.

use super::{KernelSink, Trace, TraceError};

/// Records what a streaming read hands on, and assembles it.
#[derive(Default)]
pub(crate) struct Pieces {
    pub trace: Trace,
    /// Kernels handed on whole.
    pub whole: usize,
    /// Rows of each `issued` piece.
    pub issued: Vec<usize>,
    /// The CTA of each `cta` piece.
    pub ctas: Vec<u32>,
    /// Takes instructions found after a kernel began ([`SinkHooks::more_instructions`](crate::trace::SinkHooks::more_instructions)),
    /// and how many came so.
    pub takes_more: bool,
    pub more: usize,
    building: Option<crate::trace::model::KernelBuilder>,
}

impl KernelSink for Pieces {
    fn kernel(&mut self, k: crate::trace::Kernel) -> Result<(), TraceError> {
        self.whole += 1;
        self.trace.kernels.push(k);
        Ok(())
    }
}

impl crate::trace::CtaSink for Pieces {
    fn begin_kernel(&mut self, header: &crate::trace::Kernel) -> Result<(), TraceError> {
        assert!(header.is_empty(), "a header carries no rows");
        self.building = Some(crate::trace::sink::builder_for(header)?);
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &crate::trace::Columns) -> Result<(), TraceError> {
        self.ctas.push(cta);
        crate::trace::sink::append_cta(self.building.as_mut(), cta, rows)
    }
    fn issued(&mut self, rows: &crate::trace::Columns) -> Result<(), TraceError> {
        self.issued.push(rows.len());
        crate::trace::sink::append_issued(self.building.as_mut(), rows)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        let k = crate::trace::sink::finish(self.building.take())?;
        self.trace.kernels.push(k);
        Ok(())
    }
    fn hooks(&mut self) -> Option<&mut dyn crate::trace::SinkHooks> {
        Some(self)
    }
}

impl crate::trace::SinkHooks for Pieces {
    fn takes_more_instructions(&self) -> bool {
        self.takes_more
    }
    fn more_instructions(&mut self, added: &[crate::trace::Instruction]) -> Result<(), TraceError> {
        assert!(
            self.takes_more,
            "instructions sent to a receiver that takes none"
        );
        self.more += added.len();
        crate::trace::sink::declare_more(self.building.as_mut(), added)
    }
}

/// Streams file `path` through the reader the shells use.
pub(crate) fn stream_file(path: &std::path::Path) -> Result<Pieces, TraceError> {
    stream_file_to(path, Pieces::default())
}

/// Streams file `path` into a receiver that takes instructions as they are found (the app).
pub(crate) fn stream_file_once(path: &std::path::Path) -> Result<Pieces, TraceError> {
    stream_file_to(
        path,
        Pieces {
            takes_more: true,
            ..Pieces::default()
        },
    )
}

fn stream_file_to(path: &std::path::Path, mut p: Pieces) -> Result<Pieces, TraceError> {
    let opts = crate::trace::ReadOptions {
        format: None,
        allow_truncated: false,
    };
    let open = crate::trace::open_trace(path, opts, &|s| s, &|s| s)?;
    open.stream(&|s| s, &|s| s, &mut p)?;
    Ok(p)
}

/// A file in a folder of its own in the temporary folder; the folder goes when this does.
#[derive(Debug)]
pub(crate) struct Scratch {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

/// Writes `bytes` to file `name` in a scratch folder named after `reader`.
pub(crate) fn scratch(reader: &str, name: &str, bytes: &[u8]) -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix(&format!("ws-{reader}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    Scratch { path, _dir: dir }
}

fn unchanged(s: super::source::Stream) -> super::source::Stream {
    s
}

/// A file's size as the bound of what it holds, or no bound for a pipe.
fn file_bytes_or_max(file_bytes: u64) -> u64 {
    if file_bytes == 0 {
        u64::MAX
    } else {
        file_bytes
    }
}

/// What a reader is told of the file `path` of `file_bytes` bytes, named `file` in errors,
/// read as it is.
pub(crate) fn file_ctx<'a>(
    file: &'a str,
    path: &'a std::path::Path,
    file_bytes: u64,
) -> super::Ctx<'a> {
    super::Ctx {
        file,
        path,
        file_bytes,
        bound: file_bytes_or_max(file_bytes),
        wrap: &unchanged,
        watch: &unchanged,
    }
}

/// What a reader is told of a stream that cannot be read twice (a pipe).
pub(crate) fn pipe() -> super::Ctx<'static> {
    super::Ctx {
        file: "pipe",
        path: std::path::Path::new("/nonexistent"),
        file_bytes: 0,
        bound: file_bytes_or_max(0),
        wrap: &unchanged,
        watch: &unchanged,
    }
}

/// Records the bytes read (as counted into `read`) when the first kernel begins, and passes
/// everything on.
pub(crate) struct FirstBegin {
    pub pieces: Pieces,
    pub read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub at_first: Option<u64>,
}

/// A reader that counts the bytes read through it into `read`.
pub(crate) struct CountedReader<R> {
    pub inner: R,
    pub read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for CountedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

impl KernelSink for FirstBegin {
    fn kernel(&mut self, k: crate::trace::Kernel) -> Result<(), TraceError> {
        self.pieces.kernel(k)
    }
}

impl crate::trace::CtaSink for FirstBegin {
    fn begin_kernel(&mut self, header: &crate::trace::Kernel) -> Result<(), TraceError> {
        let read = self.read.load(std::sync::atomic::Ordering::Relaxed);
        self.at_first.get_or_insert(read);
        self.pieces.begin_kernel(header)
    }
    fn cta(&mut self, cta: u32, rows: &crate::trace::Columns) -> Result<(), TraceError> {
        self.pieces.cta(cta, rows)
    }
    fn issued(&mut self, rows: &crate::trace::Columns) -> Result<(), TraceError> {
        self.pieces.issued(rows)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.pieces.end_kernel()
    }
    fn hooks(&mut self) -> Option<&mut dyn crate::trace::SinkHooks> {
        Some(self)
    }
}

impl crate::trace::SinkHooks for FirstBegin {
    fn takes_more_instructions(&self) -> bool {
        self.pieces.takes_more
    }
    fn more_instructions(&mut self, added: &[crate::trace::Instruction]) -> Result<(), TraceError> {
        self.pieces.more_instructions(added)
    }
}

/// Streams file `path` (into a receiver that takes instructions as they are found where
/// `once`) and gives the bytes of it read when its first kernel began: how soon a
/// simulation fed from it can start.
pub(crate) fn read_before_first_kernel(path: &std::path::Path, once: bool) -> u64 {
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = read.clone();
    let watch = move |s: super::source::Stream| -> super::source::Stream {
        Box::new(CountedReader {
            inner: s,
            read: counted.clone(),
        })
    };
    let opts = crate::trace::ReadOptions {
        format: None,
        allow_truncated: false,
    };
    let open = crate::trace::open_trace(path, opts, &|s| s, &watch).unwrap();
    let mut sink = FirstBegin {
        pieces: Pieces {
            takes_more: once,
            ..Pieces::default()
        },
        read,
        at_first: None,
    };
    open.stream(&|s| s, &watch, &mut sink).unwrap();
    sink.at_first.unwrap()
}
