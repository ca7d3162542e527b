//! The writer of version 5 of the binary format (the layout is in `chunked.rs`): kernels
//! whole, or a kernel's header, then its CTAs or issued-order chunks, then its end, each
//! chunk's rows packed (`packed.rs`) and checksummed; the index of kernels and chunks at the
//! end.

use super::chunked::{chunk_entry, CHUNK_ROWS};
use super::packed::Packer;
use super::{
    order_code, put_instructions_and_info, put_str, CHUNK_TAG, END_TAG, INDEX_TAG, ISSUED_CHUNK,
    KERNEL_TAG, MAGIC, VERSION,
};
use crate::trace::{Columns, Kernel, Order};
use std::io::{Seek, SeekFrom, Write};

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

/// Writes a version 5 file: whole kernels ([`Writer::kernel`]), or a kernel in pieces
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
    packer: Packer,
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
            packer: Packer::new()?,
        })
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// A kernel record's bytes after its tag, without the checksum, and where its row count is.
    pub(super) fn record(k: &Kernel, rows: u64) -> (Vec<u8>, usize) {
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
            buf.extend_from_slice(&0u32.to_le_bytes());
            let packed = self.packer.pack(c, start..end, &mut buf);
            let size = (buf.len() - 12) as u32;
            buf[8..12].copy_from_slice(&size.to_le_bytes());
            let at = self.pos;
            let written = packed.and_then(|()| self.put_record(CHUNK_TAG, &buf));
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
