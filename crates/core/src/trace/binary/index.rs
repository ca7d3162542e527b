//! The index at the end of a version 4 or 5 file, and reads that seek through it: one kernel, one
//! CTA, or a window of a kernel's rows (a stretch of time in the trace), reading only the
//! chunks that hold them. A viewer zooming into a huge trace re-reads just what it shows.

use super::chunked::{begin_kernel, end_kernel, read_chunk, Reading};
use super::{read_file_header, Reader, CHUNK_TAG, END_TAG, INDEX_TAG, ISSUED_CHUNK, KERNEL_TAG};
use crate::trace::sink::{Assemble, CtaSink, KernelSink};
use crate::trace::source::Stream;
use crate::trace::{Columns, Kernel, TraceError};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

/// Where one chunk of a kernel's rows is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexedChunk {
    /// Its CTA (linear id; `u32::MAX` for an issued-order kernel's rows).
    pub cta: u32,
    pub rows: u32,
    /// Its first row's position in the kernel.
    pub first_row: u64,
    /// Byte offset of its record.
    pub offset: u64,
}

/// Where one kernel and its chunks are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedKernel {
    /// Byte offset of its record.
    pub offset: u64,
    pub rows: u64,
    pub chunks: Vec<IndexedChunk>,
}

/// A version 4 or 5 file's index ([`Index::read`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    pub kernels: Vec<IndexedKernel>,
    file: String,
    /// The file's format version (4 or 5: how its chunks hold their rows).
    version: u32,
}

/// Bytes of the end record: tag, kernel count, index offset.
const END_BYTES: u64 = 13;

impl Index {
    /// Reads the index of the binary trace `r` (named `file` in errors): the end record, then
    /// the index it points to, checked against its checksum. Files before version 4 have none.
    pub fn read<R: BufRead + Seek>(r: &mut R, file: &str) -> Result<Index, TraceError> {
        let io = |e| TraceError::io(file, e);
        let len = r.seek(SeekFrom::End(0)).map_err(io)?;
        r.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut rd = Reader::new(&mut *r, file, len);
        let version = read_file_header(&mut rd)?;
        if version < super::CHUNKED {
            return Err(rd.err(
                8,
                format!(
                    "a version {version} file has no index: `warpscope convert` it to a \
                     version {} file",
                    super::VERSION
                ),
            ));
        }
        let end_at = len.saturating_sub(END_BYTES).max(16);
        r.seek(SeekFrom::Start(end_at)).map_err(io)?;
        let mut rd = Reader::new(&mut *r, file, len).at_version(version);
        rd.offset = end_at;
        if rd.u8("the end record ('E')")? != END_TAG {
            return Err(rd.err(
                end_at,
                "expected the end record ('E') in the file's last 13 bytes",
            ));
        }
        let n = rd.u32("the kernel count of the end record")?;
        let at = rd.u64("the offset of the index")?;
        if at < 16 || at >= end_at {
            return Err(rd.err(
                end_at + 5,
                format!("the index offset {at} is not within the file"),
            ));
        }
        r.seek(SeekFrom::Start(at)).map_err(io)?;
        let mut rd = Reader::new(&mut *r, file, end_at).at_version(version);
        rd.offset = at;
        if rd.u8("the index record ('X')")? != INDEX_TAG {
            return Err(rd.err(
                at,
                "expected the index record ('X') where the end record puts it",
            ));
        }
        rd.begin_record();
        let count_at = rd.offset;
        if rd.u32("the index's kernel count")? != n {
            return Err(rd.err(
                count_at,
                "the index and the end record give different kernel counts",
            ));
        }
        let mut kernels = Vec::new();
        for _ in 0..n {
            let offset = rd.u64("a kernel's offset in the index")?;
            let rows = rd.u64("a kernel's row count in the index")?;
            let n_chunks = rd.u32("a kernel's chunk count in the index")?;
            let mut chunks = Vec::new();
            let mut first_row = 0u64;
            for _ in 0..n_chunks {
                let e = rd.bytes::<16>("a chunk's index entry")?;
                let cta = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                let n = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
                let mut o = [0u8; 8];
                o.copy_from_slice(&e[8..16]);
                chunks.push(IndexedChunk {
                    cta,
                    rows: n,
                    first_row,
                    offset: u64::from_le_bytes(o),
                });
                first_row += n as u64;
            }
            if first_row != rows {
                return Err(rd.err(
                    rd.offset,
                    format!("the index gives a kernel {rows} rows but its chunks {first_row}"),
                ));
            }
            kernels.push(IndexedKernel {
                offset,
                rows,
                chunks,
            });
        }
        rd.check_crc("the index")?;
        Ok(Index {
            kernels,
            file: file.to_string(),
            version,
        })
    }

    /// Rows of CTA `cta` of kernel `k` as positions in the kernel (empty when it has none).
    pub fn cta_rows(&self, k: usize, cta: u32) -> std::ops::Range<u64> {
        let Some(kernel) = self.kernels.get(k) else {
            return 0..0;
        };
        let mut of = kernel.chunks.iter().filter(|c| c.cta == cta);
        match of.next() {
            Some(first) => {
                let end = of.next_back().unwrap_or(first);
                first.first_row..end.first_row + end.rows as u64
            }
            None => 0..0,
        }
    }

    /// Kernel `k`, whole.
    pub fn kernel<R: BufRead + Seek>(&self, r: &mut R, k: usize) -> Result<Kernel, TraceError> {
        self.window(r, k, 0..u64::MAX)
    }

    /// Kernel `k` with only its rows at positions `rows` (a CTA's, or a stretch of time):
    /// reads its record and the chunks that hold those rows, nothing else.
    pub fn window<R: BufRead + Seek>(
        &self,
        r: &mut R,
        k: usize,
        rows: std::ops::Range<u64>,
    ) -> Result<Kernel, TraceError> {
        let mut trace = crate::trace::Trace::default();
        self.window_into(r, k, rows, &mut Assemble::new(&mut trace))?;
        trace.kernels.pop().ok_or_else(|| {
            TraceError::parse(
                &self.file,
                crate::trace::Location::Byte(0),
                "no kernel was read",
            )
        })
    }

    /// The rows of CTA `cta` of kernel `k` (none if it has none), grouped by thread as a
    /// reader gives them: its kernel's record and its own chunks are read, nothing else.
    pub fn cta<R: BufRead + Seek>(
        &self,
        r: &mut R,
        k: usize,
        cta: u32,
    ) -> Result<Columns, TraceError> {
        let mut take = TakeCta(Columns::default());
        self.window_into(r, k, self.cta_rows(k, cta), &mut take)?;
        Ok(take.0)
    }

    /// [`Index::window`], handing the kernel to `out`.
    fn window_into<R: BufRead + Seek>(
        &self,
        r: &mut R,
        k: usize,
        rows: std::ops::Range<u64>,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        let file = self.file.as_str();
        let kernel = self.kernel_entry(k)?;
        let io = |e| TraceError::io(file, e);
        let end = r.seek(SeekFrom::End(0)).map_err(io)?;
        let mut window = Window {
            inner: out,
            rows: rows.clone(),
            at: 0,
            cut: Columns::default(),
        };
        r.seek(SeekFrom::Start(kernel.offset)).map_err(io)?;
        let mut rd = Reader::new(&mut *r, file, end).at_version(self.version);
        let mut reading = kernel_record(&mut rd, kernel, &mut window)?;
        let wanted = kernel
            .chunks
            .iter()
            .filter(|c| c.first_row < rows.end && c.first_row + c.rows as u64 > rows.start);
        let (mut raw, mut cta_rows) = (Vec::new(), Columns::default());
        let mut next_at = None;
        for c in wanted {
            if next_at != Some(c.offset) {
                r.seek(SeekFrom::Start(c.offset)).map_err(io)?;
                rd = Reader::new(&mut *r, file, end).at_version(self.version);
                rd.offset = c.offset;
                window.at = c.first_row;
                // Rows are counted from the window's first chunk.
                reading.read = c.first_row;
            }
            if rd.u8("a chunk record ('C')")? != CHUNK_TAG {
                return Err(rd.err(
                    c.offset,
                    "expected a chunk record ('C') where the index puts one",
                ));
            }
            read_chunk(
                &mut rd,
                c.offset,
                &mut reading,
                &mut raw,
                &mut cta_rows,
                &mut window,
            )?;
            next_at = Some(rd.offset);
        }
        reading.end_window(&mut cta_rows, &mut window)
    }

    /// Kernel `k`, or an error naming the file.
    fn kernel_entry(&self, k: usize) -> Result<&IndexedKernel, TraceError> {
        self.kernels.get(k).ok_or_else(|| {
            TraceError::parse(
                &self.file,
                crate::trace::Location::Byte(0),
                format!(
                    "the file has {} kernels, there is no kernel {k}",
                    self.kernels.len()
                ),
            )
        })
    }

    /// The first chunk of kernel `k` that holds a CTA from `next_cta` on (the kernel's chunk
    /// count when none does): where [`Index::stream_from`] goes on after CTA `next_cta - 1`.
    pub fn first_chunk_of(&self, k: usize, next_cta: u32) -> usize {
        self.kernels.get(k).map_or(0, |kernel| {
            kernel
                .chunks
                .iter()
                .position(|c| c.cta >= next_cta)
                .unwrap_or(kernel.chunks.len())
        })
    }

    /// The kernel and chunk a run read on from `at` starts with (`None` for a place in a
    /// `din` file or an NVBit log).
    pub fn place(&self, at: &crate::trace::ResumePoint) -> Option<(usize, usize)> {
        let (kernel, place) = crate::trace::Place::of(at)?;
        let k = kernel as usize;
        Some(match place {
            crate::trace::Place::FromCta(next_cta) => (k, self.first_chunk_of(k, next_cta)),
            crate::trace::Place::FromChunk(chunk) => (k, chunk as usize),
        })
    }

    /// Where [`Index::stream_from`] starts reading: chunk `chunk` of kernel `k`, else (past
    /// its last) the next kernel's record; `None` when nothing follows.
    pub fn resume_offset(&self, k: usize, chunk: usize) -> Option<u64> {
        let kernel = self.kernels.get(k)?;
        match kernel.chunks.get(chunk) {
            Some(c) => Some(c.offset),
            None => self.kernels.get(k + 1).map(|n| n.offset),
        }
    }

    /// Streams the file on to `out` from chunk `chunk` of kernel `k`, for a sink that has had
    /// that kernel's beginning and its chunks before that one already (a copy of a session
    /// taken there): the kernel's later CTAs or issued rows and its end, then every later
    /// kernel as [`super::stream`] gives them. A kernel read CTA by CTA goes on from a CTA's
    /// first chunk ([`Index::first_chunk_of`]). Only the chunks from there on are read; their
    /// checksums are checked, and the index was when it was read. `watch` sees the bytes
    /// read from there on (as for [`crate::trace::source::open`]).
    pub fn stream_from<R: Read + Seek + Send + 'static>(
        &self,
        mut file_r: R,
        k: usize,
        chunk: usize,
        watch: &dyn Fn(Stream) -> Stream,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        let file = self.file.as_str();
        let kernel = self.kernel_entry(k)?;
        if let (Some(c), Some(before)) = (kernel.chunks.get(chunk), chunk.checked_sub(1)) {
            if c.cta != ISSUED_CHUNK && kernel.chunks[before].cta == c.cta {
                return Err(TraceError::parse(
                    file,
                    crate::trace::Location::Byte(c.offset),
                    format!(
                        "chunk {chunk} of kernel {k} is not the first of its CTA {}",
                        c.cta
                    ),
                ));
            }
        }
        let io = |e| TraceError::io(file, e);
        let end = file_r.seek(SeekFrom::End(0)).map_err(io)?;
        file_r.seek(SeekFrom::Start(kernel.offset)).map_err(io)?;
        // The sink had the kernel's beginning when it was first read.
        let mut reading = kernel_record(
            &mut Reader::new(BufReader::new(&mut file_r), file, end).at_version(self.version),
            kernel,
            &mut TakeCta(Columns::default()),
        )?;
        let start = self.resume_offset(k, chunk);
        // Rows are counted from the first chunk read.
        reading.read = kernel
            .chunks
            .get(chunk)
            .map_or(kernel.rows, |c| c.first_row);
        let mut current = Some(reading);
        let (mut raw, mut cta_rows) = (Vec::new(), Columns::default());
        let Some(start) = start else {
            if let Some(reading) = current.take() {
                let rd = Reader::new(std::io::empty(), file, end);
                end_kernel(&rd, reading, &mut cta_rows, out)?;
            }
            return Ok(());
        };
        file_r.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut r = BufReader::with_capacity(1 << 20, watch(Box::new(file_r)));
        let mut rd = Reader::new(&mut r, file, end).at_version(self.version);
        rd.offset = start;
        read_on(&mut rd, current, None, &mut raw, &mut cta_rows, out)
    }
}

/// Reads the records from where `rd` stands to the index, handing them to `out`, for a read
/// on from a place in the file: `current` is the kernel being read there (its beginning
/// given before), `pending` a record whose tag was read already (its offset and tag).
pub(super) fn read_on<R: Read>(
    rd: &mut Reader<'_, R>,
    mut current: Option<Reading>,
    mut pending: Option<(u64, u8)>,
    raw: &mut Vec<u8>,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    loop {
        let (at, tag) = match pending.take() {
            Some(p) => p,
            None => (
                rd.offset,
                rd.u8("a kernel ('K'), chunk ('C') or index ('X') record")?,
            ),
        };
        if tag != CHUNK_TAG {
            if let Some(reading) = current.take() {
                end_kernel(rd, reading, cta_rows, out)?;
            }
        }
        match tag {
            KERNEL_TAG => current = Some(begin_kernel(rd, at, out)?),
            CHUNK_TAG => {
                let Some(reading) = current.as_mut() else {
                    return Err(rd.err(at, "a chunk record before any kernel record"));
                };
                read_chunk(rd, at, reading, raw, cta_rows, out)?;
            }
            INDEX_TAG => return Ok(()),
            other => {
                return Err(rd.err(
                    at,
                    format!(
                        "expected a kernel ('K'), chunk ('C') or index ('X') record, \
                         found byte {other:#04x}"
                    ),
                ))
            }
        }
    }
}

/// Reads the record of `kernel` where the index puts it (`rd` stands there) and gives its
/// beginning to `out`.
fn kernel_record<R: std::io::Read>(
    rd: &mut Reader<'_, R>,
    kernel: &IndexedKernel,
    out: &mut dyn CtaSink,
) -> Result<super::chunked::Reading, TraceError> {
    rd.offset = kernel.offset;
    if rd.u8("a kernel record ('K')")? != KERNEL_TAG {
        return Err(rd.err(
            kernel.offset,
            "expected a kernel record ('K') where the index puts one",
        ));
    }
    begin_kernel(rd, kernel.offset, out)
}

/// Keeps the rows of the CTAs given and nothing else: [`Index::cta`] reads one CTA into it,
/// and [`Index::stream_from`] the record of a kernel whose beginning was given before.
pub(super) struct TakeCta(pub(super) Columns);

impl KernelSink for TakeCta {
    fn kernel(&mut self, _: Kernel) -> Result<(), TraceError> {
        Ok(())
    }
}

impl CtaSink for TakeCta {
    fn begin_kernel(&mut self, _: &Kernel) -> Result<(), TraceError> {
        Ok(())
    }
    fn cta(&mut self, _: u32, rows: &Columns) -> Result<(), TraceError> {
        self.0.extend_from(rows, 0..rows.len());
        Ok(())
    }
    fn issued(&mut self, _: &Columns) -> Result<(), TraceError> {
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
}

/// Passes on the rows at positions `rows` of a kernel (CTAs cut at the window's edges; an
/// issued-order kernel as one group of rows).
struct Window<'a> {
    inner: &'a mut dyn CtaSink,
    rows: std::ops::Range<u64>,
    /// Position of the next row given.
    at: u64,
    cut: Columns,
}

impl Window<'_> {
    /// The part of `rows` (starting at position `self.at`) inside the window.
    fn part(&mut self, n: usize) -> std::ops::Range<usize> {
        let start = self.rows.start.saturating_sub(self.at).min(n as u64) as usize;
        let end = self.rows.end.saturating_sub(self.at).min(n as u64) as usize;
        self.at += n as u64;
        start..end.max(start)
    }
}

impl KernelSink for Window<'_> {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        let part = self.part(k.len());
        self.cut.clear();
        self.cut.extend_from(k.columns(), part);
        self.inner.begin_kernel(&k.header())?;
        if !self.cut.is_empty() {
            self.inner.issued(&self.cut)?;
        }
        self.inner.end_kernel()
    }
}

impl CtaSink for Window<'_> {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        self.inner.begin_kernel(header)
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let part = self.part(rows.len());
        if part.is_empty() {
            return Ok(());
        }
        self.cut.clear();
        self.cut.extend_from(rows, part);
        self.inner.cta(cta, &self.cut)
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        let part = self.part(rows.len());
        if part.is_empty() {
            return Ok(());
        }
        self.cut.clear();
        self.cut.extend_from(rows, part);
        self.inner.issued(&self.cut)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.inner.end_kernel()
    }
}
