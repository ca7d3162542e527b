//! Version 4 of the binary format: a kernel record (shape, row count, instructions, info),
//! then its rows in checksummed chunks grouped by CTA, then an index of every kernel and
//! chunk, so that a reader streams a kernel CTA by CTA in the memory of one CTA, and a
//! reader that can seek goes straight to a kernel or CTA (`index.rs`).

use super::{
    decode_rows, encode_rows, order_code, put_instructions_and_info, put_str, read_info,
    read_instructions, read_shape, Reader, Shape, CHUNK_TAG, END_TAG, INDEX_TAG, ISSUED_CHUNK,
    KERNEL_TAG, MAGIC, ROW_BYTES, VERSION,
};
use crate::trace::sink::CtaSink;
use crate::trace::{check_density, BuildError, Columns, Kernel, KernelBuilder, Order, TraceError};
use std::io::{Read, Seek, SeekFrom, Write};

/// Rows per chunk written (about 1.5 MB): a CTA with more takes several chunks.
const CHUNK_ROWS: usize = 1 << 16;
/// The most rows a chunk may declare (a corrupt count must not exhaust memory).
const MAX_CHUNK_ROWS: u32 = 1 << 22;

/// A kernel being read.
pub(super) struct Reading {
    b: KernelBuilder,
    /// Offset of its record, rows it declares and has given so far.
    at: u64,
    rows: u64,
    pub(super) read: u64,
    /// Threads per CTA, for grouped kernels; the CTA being gathered and its last thread.
    grouped: Option<u64>,
    cta: Option<u32>,
    last_thread: u32,
    /// Its chunks' index entries as the writer would store them, digested, to check the
    /// index against what was read without keeping it.
    chunks: u32,
    digest: crc32fast::Hasher,
}

/// What the index must say of a kernel read: its record's offset, its rows, its chunks and a
/// CRC-32 of their index entries.
struct KernelRead {
    at: u64,
    rows: u64,
    chunks: u32,
    digest: u32,
}

/// Reads a version 4 file after its header to `out`.
pub(super) fn read<R: Read>(
    rd: &mut Reader<'_, R>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut kernels: Vec<KernelRead> = Vec::new();
    let mut current: Option<Reading> = None;
    let mut raw = Vec::new();
    let mut cta_rows = Columns::default();
    loop {
        let at = rd.offset;
        let tag = rd.u8("a kernel ('K'), chunk ('C'), index ('X') or end ('E') record")?;
        if tag != CHUNK_TAG {
            if let Some(k) = current.take() {
                kernels.push(end_kernel(rd, k, &mut cta_rows, out)?);
            }
        }
        match tag {
            KERNEL_TAG => current = Some(begin_kernel(rd, at, out)?),
            CHUNK_TAG => {
                let Some(k) = current.as_mut() else {
                    return Err(rd.err(at, "a chunk record before any kernel record"));
                };
                read_chunk(rd, at, k, &mut raw, &mut cta_rows, out)?;
            }
            INDEX_TAG => {
                check_index(rd, &kernels)?;
                let end_at = rd.offset;
                if rd.u8("the end record ('E')")? != END_TAG {
                    return Err(rd.err(end_at, "expected the end record ('E') after the index"));
                }
                let n = rd.u32("the kernel count of the end record")?;
                if n as usize != kernels.len() {
                    return Err(rd.err(
                        end_at,
                        format!(
                            "end record says {n} kernels but {} were read",
                            kernels.len()
                        ),
                    ));
                }
                let index_at = rd.u64("the offset of the index")?;
                if index_at != at {
                    return Err(rd.err(
                        end_at + 5,
                        format!("end record puts the index at byte {index_at}, but it is at {at}"),
                    ));
                }
                return rd.expect_end();
            }
            END_TAG => return Err(rd.err(at, "the end record comes before the index ('X')")),
            other => {
                return Err(rd.err(
                    at,
                    format!(
                        "expected a kernel ('K'), chunk ('C'), index ('X') or end ('E') record, \
                         found byte {other:#04x}"
                    ),
                ))
            }
        }
    }
}

/// Reads a kernel record (its tag read, at `at`) and tells `out` a grouped kernel begins.
pub(super) fn begin_kernel<R: Read>(
    rd: &mut Reader<'_, R>,
    at: u64,
    out: &mut dyn CtaSink,
) -> Result<Reading, TraceError> {
    rd.begin_record();
    let Shape {
        name,
        grid,
        block,
        order,
        at: shape_at,
    } = read_shape(rd, VERSION)?;
    let rows = rd.u64("the row count")?;
    let mut b = KernelBuilder::new(name, grid, block, order)
        .map_err(|e| rd.err(shape_at, e.to_string()))?;
    // The shape must fit the rows, and the rows the file, before anything is sized by them.
    if rows.saturating_mul(ROW_BYTES as u64) > rd.max_bytes.saturating_sub(rd.offset) {
        return Err(rd.err(
            shape_at + 25,
            format!("the kernel record declares {rows} rows, more than the file can hold"),
        ));
    }
    check_density(grid, block, rows.min(usize::MAX as u64) as usize, order)
        .map_err(|e| rd.err(shape_at, e.to_string()))?;
    read_instructions(rd, VERSION, &mut b)?;
    b.set_info(read_info(rd)?);
    rd.check_crc("the kernel record")?;
    let grouped = (order != Order::Issued).then(|| block.count());
    out.begin_kernel(&b.header())?;
    Ok(Reading {
        b,
        at,
        rows,
        read: 0,
        grouped,
        cta: None,
        last_thread: 0,
        chunks: 0,
        digest: crc32fast::Hasher::new(),
    })
}

/// Reads a chunk record (its tag read, at `at`) of kernel `k`; a grouped kernel's CTA goes
/// to `out` once the next one starts.
pub(super) fn read_chunk<R: Read>(
    rd: &mut Reader<'_, R>,
    at: u64,
    k: &mut Reading,
    raw: &mut Vec<u8>,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    rd.begin_record();
    let cta = rd.u32("the chunk's CTA")?;
    let n_at = rd.offset;
    let n = rd.u32("the chunk's row count")?;
    if n == 0 || n > MAX_CHUNK_ROWS {
        return Err(rd.err(
            n_at,
            format!("a chunk holds 1 to {MAX_CHUNK_ROWS} rows, this one says {n}"),
        ));
    }
    let start = rd.offset;
    raw.resize(n as usize * ROW_BYTES, 0);
    if let Some(got) = rd.read_fully(raw)? {
        return Err(super::legacy::truncated_rows(rd, start, k.read, got));
    }
    rd.check_crc("the chunk")?;
    let row_at = |i: usize| start + (i * ROW_BYTES) as u64;
    match k.grouped {
        None if cta != ISSUED_CHUNK => {
            return Err(rd.err(
                at + 1,
                format!(
                    "an issued-order kernel's chunks have CTA {ISSUED_CHUNK:#x}, this one {cta}"
                ),
            ));
        }
        None => {}
        Some(tpb) => {
            if k.cta.is_some_and(|c| cta < c) {
                return Err(rd.err(at + 1, format!("chunk of CTA {cta} after one of CTA {}: CTAs must come in increasing order", k.cta.unwrap_or(0))));
            }
            if k.cta.is_some_and(|c| c != cta) {
                give_cta(k, cta_rows, out)?;
            }
            if k.cta != Some(cta) {
                k.cta = Some(cta);
                k.last_thread = 0;
            }
            for (i, rec) in raw.chunks_exact(ROW_BYTES).enumerate() {
                let t = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
                if t as u64 / tpb.max(1) != cta as u64 {
                    return Err(rd.err(
                        row_at(i),
                        format!(
                            "record {}: thread {t} is not in the chunk's CTA {cta}",
                            k.read + i as u64
                        ),
                    ));
                }
                if t < k.last_thread {
                    return Err(rd.err(row_at(i), format!("record {}: thread {t} after thread {}: a CTA's rows are grouped by thread in increasing order", k.read + i as u64, k.last_thread)));
                }
                k.last_thread = t;
            }
        }
    }
    k.b.append_rows(|cols| decode_rows(raw, cols))
        .map_err(|(i, e)| {
            let off = if matches!(e, BuildError::BadFlags { .. }) {
                22
            } else {
                0
            };
            rd.err(
                row_at(i) + off,
                format!("record {}: {e}", k.read + i as u64),
            )
        })?;
    k.chunks += 1;
    k.digest.update(&chunk_entry(cta, n, at));
    k.read += n as u64;
    if k.read > k.rows {
        return Err(rd.err(
            at,
            format!(
                "the kernel record declares {} rows, its chunks hold more",
                k.rows
            ),
        ));
    }
    if k.grouped.is_none() {
        // Issued rows go on as they are read.
        k.b.take_rows(cta_rows);
        out.issued(cta_rows)?;
    }
    Ok(())
}

/// An index entry of one chunk.
fn chunk_entry(cta: u32, rows: u32, at: u64) -> [u8; 16] {
    let mut e = [0u8; 16];
    e[0..4].copy_from_slice(&cta.to_le_bytes());
    e[4..8].copy_from_slice(&rows.to_le_bytes());
    e[8..16].copy_from_slice(&at.to_le_bytes());
    e
}

/// Hands the gathered CTA's rows to `out`.
fn give_cta(
    k: &mut Reading,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    if let Some(cta) = k.cta {
        k.b.take_rows(cta_rows);
        out.cta(cta, cta_rows)?;
    }
    Ok(())
}

/// Ends kernel `k`: checks its row count, gives its last CTA to `out` and ends it there.
/// Returns its index facts.
fn end_kernel<R: Read>(
    rd: &Reader<'_, R>,
    mut k: Reading,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<KernelRead, TraceError> {
    if k.read != k.rows {
        return Err(rd.err(
            rd.offset.saturating_sub(1),
            format!(
                "the kernel record at byte {} declares {} rows but its chunks hold {}",
                k.at, k.rows, k.read
            ),
        ));
    }
    let facts = KernelRead {
        at: k.at,
        rows: k.rows,
        chunks: k.chunks,
        digest: k.digest.clone().finalize(),
    };
    give_cta(&mut k, cta_rows, out)?;
    out.end_kernel()?;
    Ok(facts)
}

impl Reading {
    /// Ends a kernel of which only some chunks were read (a window through the index): gives
    /// its last CTA to `out` without checking its row count.
    pub(super) fn end_window(
        mut self,
        cta_rows: &mut Columns,
        out: &mut dyn CtaSink,
    ) -> Result<(), TraceError> {
        give_cta(&mut self, cta_rows, out)?;
        out.end_kernel()
    }
}

/// Reads the index (its tag read) and checks it against the kernels and chunks read.
fn check_index<R: Read>(rd: &mut Reader<'_, R>, kernels: &[KernelRead]) -> Result<(), TraceError> {
    rd.begin_record();
    let at = rd.offset;
    let n = rd.u32("the index's kernel count")?;
    if n as usize != kernels.len() {
        return Err(rd.err(
            at,
            format!(
                "the index lists {n} kernels but {} were read",
                kernels.len()
            ),
        ));
    }
    for (i, k) in kernels.iter().enumerate() {
        let at = rd.offset;
        let (off, r, c) = (
            rd.u64("a kernel's offset in the index")?,
            rd.u64("a kernel's row count in the index")?,
            rd.u32("a kernel's chunk count in the index")?,
        );
        if (off, r, c) != (k.at, k.rows, k.chunks) {
            return Err(rd.err(
                at,
                format!("the index entry of kernel {i} does not match the kernel read"),
            ));
        }
        let mut d = crc32fast::Hasher::new();
        for _ in 0..c {
            d.update(&rd.bytes::<16>("a chunk's index entry")?);
        }
        if d.finalize() != k.digest {
            return Err(rd.err(
                at,
                format!("the index entries of kernel {i}'s chunks do not match its chunks"),
            ));
        }
    }
    rd.check_crc("the index")
}

/// Index facts of one kernel written.
struct Written {
    at: u64,
    rows: u64,
    chunks: Vec<[u8; 16]>,
}

/// The kernel being written CTA by CTA.
struct Open {
    /// Its record's bytes after the tag (without the checksum), to rewrite with the row count.
    record: Vec<u8>,
    /// Where the row count is in `record`.
    rows_at: usize,
    last_cta: Option<u32>,
    /// For an issued-order kernel: rows not yet written, written in full chunks so that the
    /// file is the one a whole kernel gives, whatever pieces the rows came in.
    issued: Option<Box<Columns>>,
}

/// Writes a version 4 file: whole kernels ([`Writer::kernel`]), or a kernel in pieces
/// ([`Writer::begin_kernel`], [`Writer::cta`] or [`Writer::issued`], [`Writer::end_kernel`];
/// the file must then be seekable, to fill in the kernel's row count), then
/// [`Writer::finish`] writes the index and end record. Memory holds one chunk and the index
/// (16 bytes a chunk).
pub struct Writer<W: Write> {
    w: W,
    pos: u64,
    kernels: Vec<Written>,
    open: Option<Open>,
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a file: writes the magic, version and flags.
    pub fn new(mut w: W) -> std::io::Result<Self> {
        w.write_all(MAGIC)?;
        w.write_all(&VERSION.to_le_bytes())?;
        w.write_all(&0u32.to_le_bytes())?;
        Ok(Writer {
            w,
            pos: 16,
            kernels: Vec::new(),
            open: None,
            buf: Vec::new(),
        })
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// A kernel record's bytes after its tag, without the checksum, and where its row count is.
    fn record(k: &Kernel, rows: u64) -> (Vec<u8>, usize) {
        let mut r = Vec::new();
        put_str(&mut r, &k.name);
        for d in [k.grid, k.block] {
            for v in [d.x, d.y, d.z] {
                r.extend_from_slice(&v.to_le_bytes());
            }
        }
        r.push(order_code(k.order));
        let rows_at = r.len();
        r.extend_from_slice(&rows.to_le_bytes());
        put_instructions_and_info(&mut r, k);
        (r, rows_at)
    }

    fn put_record(&mut self, tag: u8, record: &[u8]) -> std::io::Result<()> {
        self.put(&[tag])?;
        self.put(record)?;
        self.put(&crc32fast::hash(record).to_le_bytes())
    }

    /// Writes chunks of rows `range` of `c`, all of CTA `cta`.
    fn chunks(
        &mut self,
        cta: u32,
        c: &Columns,
        range: std::ops::Range<usize>,
    ) -> std::io::Result<()> {
        let mut start = range.start;
        while start < range.end {
            let end = range.end.min(start + CHUNK_ROWS);
            let n = (end - start) as u32;
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            buf.extend_from_slice(&cta.to_le_bytes());
            buf.extend_from_slice(&n.to_le_bytes());
            encode_rows(c, start..end, &mut buf);
            let at = self.pos;
            let written = self.put_record(CHUNK_TAG, &buf);
            self.buf = buf;
            written?;
            if let Some(k) = self.kernels.last_mut() {
                k.chunks.push(chunk_entry(cta, n, at));
                k.rows += n as u64;
            }
            start = end;
        }
        Ok(())
    }

    /// Writes a whole kernel.
    pub fn kernel(&mut self, k: &Kernel) -> std::io::Result<()> {
        self.close_check()?;
        let (record, _) = Self::record(k, k.len() as u64);
        self.kernels.push(Written {
            at: self.pos,
            rows: 0,
            chunks: Vec::new(),
        });
        self.put_record(KERNEL_TAG, &record)?;
        if k.order == Order::Issued {
            self.chunks(ISSUED_CHUNK, k.columns(), 0..k.len())
        } else {
            for cta in 0..k.num_ctas() {
                let rows = k.cta_rows(cta);
                self.chunks(cta, k.columns(), rows)?;
            }
            Ok(())
        }
    }

    fn close_check(&self) -> std::io::Result<()> {
        if self.open.is_some() {
            return Err(std::io::Error::other(
                "a kernel begun CTA by CTA was not ended",
            ));
        }
        Ok(())
    }

    /// Writes the index and the end record; returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.close_check()?;
        let at = self.pos;
        let mut index = Vec::new();
        index.extend_from_slice(&(self.kernels.len() as u32).to_le_bytes());
        for k in &self.kernels {
            index.extend_from_slice(&k.at.to_le_bytes());
            index.extend_from_slice(&k.rows.to_le_bytes());
            index.extend_from_slice(&(k.chunks.len() as u32).to_le_bytes());
            for c in &k.chunks {
                index.extend_from_slice(c);
            }
        }
        self.put_record(INDEX_TAG, &index)?;
        let n = self.kernels.len() as u32;
        self.put(&[END_TAG])?;
        self.put(&n.to_le_bytes())?;
        self.put(&at.to_le_bytes())?;
        self.w.flush()?;
        Ok(self.w)
    }

    /// Kernels written or begun so far.
    pub fn kernels(&self) -> usize {
        self.kernels.len()
    }
}

impl<W: Write + Seek> Writer<W> {
    /// Begins a kernel given in pieces (`header`'s rows, if any, are not written): CTA by
    /// CTA, or for an issued-order kernel its rows in issue order.
    pub fn begin_kernel(&mut self, header: &Kernel) -> std::io::Result<()> {
        self.close_check()?;
        let (record, rows_at) = Self::record(header, 0);
        self.kernels.push(Written {
            at: self.pos,
            rows: 0,
            chunks: Vec::new(),
        });
        self.put_record(KERNEL_TAG, &record)?;
        self.open = Some(Open {
            record,
            rows_at,
            last_cta: None,
            issued: (header.order == Order::Issued).then(Box::default),
        });
        Ok(())
    }

    /// Writes the next rows of the issued-order kernel begun by [`Writer::begin_kernel`].
    pub fn issued(&mut self, rows: &Columns) -> std::io::Result<()> {
        let Some(pending) = self.open.as_mut().and_then(|o| o.issued.as_mut()) else {
            return Err(std::io::Error::other(
                "issued rows came before an issued-order kernel began",
            ));
        };
        pending.extend_from(rows, 0..rows.len());
        if pending.len() < CHUNK_ROWS {
            return Ok(());
        }
        let full = pending.len() / CHUNK_ROWS * CHUNK_ROWS;
        let mut pending = self
            .open
            .as_mut()
            .and_then(|o| o.issued.take())
            .unwrap_or_default();
        let written = self.chunks(ISSUED_CHUNK, &pending, 0..full);
        pending.drain_front(full);
        if let Some(o) = self.open.as_mut() {
            o.issued = Some(pending);
        }
        written
    }

    /// Writes CTA `cta`'s rows (CTAs in increasing linear id, rows grouped by thread).
    pub fn cta(&mut self, cta: u32, rows: &Columns) -> std::io::Result<()> {
        let Some(open) = self.open.as_mut().filter(|o| o.issued.is_none()) else {
            return Err(std::io::Error::other(
                "a CTA came before its kernel began, or in an issued-order kernel",
            ));
        };
        if open.last_cta.is_some_and(|c| cta <= c) {
            return Err(std::io::Error::other(format!(
                "CTA {cta} came after CTA {}: CTAs must come in increasing order",
                open.last_cta.unwrap_or(0)
            )));
        }
        open.last_cta = Some(cta);
        self.chunks(cta, rows, 0..rows.len())
    }

    /// Drops the kernel begun by [`Writer::begin_kernel`] and not ended, if any: what follows
    /// is written over it (the caller truncates the file after [`Writer::finish`]).
    pub fn abandon_kernel(&mut self) -> std::io::Result<()> {
        if self.open.take().is_none() {
            return Ok(());
        }
        if let Some(k) = self.kernels.pop() {
            self.w.seek(SeekFrom::Start(k.at))?;
            self.pos = k.at;
        }
        Ok(())
    }

    /// Ends the kernel begun by [`Writer::begin_kernel`]: its record gets its row count.
    pub fn end_kernel(&mut self) -> std::io::Result<()> {
        let Some(mut open) = self.open.take() else {
            return Err(std::io::Error::other("a kernel ended that had not begun"));
        };
        if let Some(rest) = open.issued.take() {
            self.chunks(ISSUED_CHUNK, &rest, 0..rest.len())?;
        }
        let Some(k) = self.kernels.last() else {
            return Err(std::io::Error::other("a kernel ended that had not begun"));
        };
        let (at, rows) = (k.at, k.rows);
        open.record[open.rows_at..open.rows_at + 8].copy_from_slice(&rows.to_le_bytes());
        self.w.seek(SeekFrom::Start(at + 1))?;
        self.w.write_all(&open.record)?;
        self.w
            .write_all(&crc32fast::hash(&open.record).to_le_bytes())?;
        self.w.seek(SeekFrom::Start(self.pos))?;
        Ok(())
    }
}
