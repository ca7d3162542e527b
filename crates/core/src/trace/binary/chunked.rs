//! Versions 4 and 5 of the binary format: a kernel record (shape, row count, instructions,
//! info), then its rows in checksummed chunks grouped by CTA, then an index of every kernel
//! and chunk, so that a reader streams a kernel CTA by CTA in the memory of one CTA, and a
//! reader that can seek goes straight to a kernel or CTA (`index.rs`). A version 4 chunk
//! holds plain 23-byte rows; a version 5 chunk its packed size and its rows packed
//! (`packed.rs`). This file reads both; `write.rs` writes version 5.

use super::{
    decode_rows, packed, read_info, read_instructions, read_shape, Reader, Shape, CHUNKED,
    CHUNK_TAG, END_TAG, INDEX_TAG, ISSUED_CHUNK, KERNEL_TAG, ROW_BYTES,
};
use crate::trace::sink::{CtaSink, KernelSink};
use crate::trace::{check_density, BuildError, Columns, KernelBuilder, Order, TraceError};
use std::io::Read;

/// Rows per chunk written (about 1.5 MB): a CTA with more takes several chunks.
pub(super) const CHUNK_ROWS: usize = 1 << 16;
/// The most rows a chunk may declare (a corrupt count must not exhaust memory).
const MAX_CHUNK_ROWS: u32 = 1 << 22;
/// The fewest bytes a version 5 chunk record of rows can take (tag, CTA, row count, packed
/// size, the smallest zstd frame, checksum): what bounds the rows a file can hold.
const MIN_PACKED_CHUNK: u64 = 1 + 4 + 4 + 4 + 9 + 4;

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
    /// Unpacks version 5 chunks.
    unpacker: packed::Unpacker,
    /// Whether the kernel is kept whole, its rows gathered in `b` and handed on as a kernel
    /// at its end ([`Reading::keep_whole`]).
    whole: bool,
}

/// What the index must say of a kernel read: its record's offset, its rows, its chunks and a
/// CRC-32 of their index entries.
pub(super) struct KernelRead {
    at: u64,
    rows: u64,
    chunks: u32,
    digest: u32,
}

/// The most rows [`Reading::keep_whole`] makes room for at once (as the CTA sinks that
/// assemble kernels).
const RESERVE_CAP_ROWS: u64 = 1 << 25;

/// Reads a version 4 or 5 file after its header to `out`, each kernel whole to its
/// [`KernelSink::kernel`] where `whole`.
pub(super) fn read<R: Read>(
    rd: &mut Reader<'_, R>,
    out: &mut dyn CtaSink,
    whole: bool,
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
            KERNEL_TAG => {
                let mut k = begin_kernel(rd, at, out)?;
                if whole {
                    k.keep_whole();
                }
                current = Some(k);
            }
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
    } = read_shape(rd, rd.version)?;
    let rows = rd.u64("the row count")?;
    let mut b = KernelBuilder::new(name, grid, block, order)
        .map_err(|e| rd.err(shape_at, e.to_string()))?;
    // The shape must fit the rows, and the rows the file, before anything is sized by them.
    let room = rd.max_bytes.saturating_sub(rd.offset);
    let most_rows = if rd.version == CHUNKED {
        room / ROW_BYTES as u64
    } else {
        (room / MIN_PACKED_CHUNK).saturating_mul(MAX_CHUNK_ROWS as u64)
    };
    if rows > most_rows {
        return Err(rd.err(
            shape_at + 25,
            format!("the kernel record declares {rows} rows, more than the file can hold"),
        ));
    }
    check_density(grid, block, rows.min(usize::MAX as u64) as usize, order)
        .map_err(|e| rd.err(shape_at, e.to_string()))?;
    read_instructions(rd, rd.version, &mut b)?;
    b.set_info(read_info(rd)?);
    rd.check_crc("the kernel record")?;
    let grouped = (order != Order::Issued).then(|| block.count());
    out.begin_kernel(&b.header())?;
    out.expect_rows(rows);
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
        unpacker: packed::Unpacker::default(),
        whole: false,
    })
}

/// The head of a chunk record: where it is, its CTA, its row count and the bytes of its rows.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChunkHead {
    pub(super) at: u64,
    pub(super) cta: u32,
    pub(super) rows: u32,
    /// Plain rows (version 4), or the packed size of its rows (version 5).
    body: Body,
}

#[derive(Clone, Copy, Debug)]
enum Body {
    Plain,
    Packed(u32),
}

impl ChunkHead {
    /// Bytes of the rows.
    fn row_bytes(&self) -> u64 {
        match self.body {
            Body::Plain => self.rows as u64 * ROW_BYTES as u64,
            Body::Packed(n) => n as u64,
        }
    }
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
    let head = read_chunk_head(rd, at)?;
    read_chunk_body(rd, head, k, raw, cta_rows, out)
}

/// Reads the head of a chunk record (its tag read, at `at`): its CTA and row count.
pub(super) fn read_chunk_head<R: Read>(
    rd: &mut Reader<'_, R>,
    at: u64,
) -> Result<ChunkHead, TraceError> {
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
    let body = if rd.version == CHUNKED {
        Body::Plain
    } else {
        let size_at = rd.offset;
        let size = rd.u32("the packed size of the chunk's rows")?;
        let most = max_packed(n);
        if size as u64 > most {
            return Err(rd.err(
                size_at,
                format!("{n} rows pack into at most {most} bytes, this chunk says {size}"),
            ));
        }
        Body::Packed(size)
    };
    Ok(ChunkHead {
        at,
        cta,
        rows: n,
        body,
    })
}

/// The most bytes `n` rows can pack into (zstd's bound on what it compresses them to).
fn max_packed(n: u32) -> u64 {
    crate::trace::codec::zstd_bound(packed::max_unpacked(n as usize)) as u64
}

/// Steps over the rows and checksum of a chunk whose head was read (not checked: a read
/// on from a place in the file), counting them as read of kernel `k` when it is given.
pub(super) fn skip_chunk_body<R: Read>(
    rd: &mut Reader<'_, R>,
    head: ChunkHead,
    k: Option<&mut Reading>,
) -> Result<(), TraceError> {
    rd.skip(head.row_bytes() + 4, "the chunk's rows")?;
    if let Some(k) = k {
        k.chunks += 1;
        k.read += head.rows as u64;
    }
    Ok(())
}

/// Reads the rows and checksum of a chunk whose head was read; as [`read_chunk`].
pub(super) fn read_chunk_body<R: Read>(
    rd: &mut Reader<'_, R>,
    head: ChunkHead,
    k: &mut Reading,
    raw: &mut Vec<u8>,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let ChunkHead {
        at, cta, rows: n, ..
    } = head;
    let start = rd.offset;
    raw.resize(head.row_bytes() as usize, 0);
    if let Some(got) = rd.read_fully(raw)? {
        return Err(match head.body {
            Body::Plain => super::legacy::truncated_rows(rd, start, k.read, got),
            Body::Packed(_) => rd.err(
                start + got as u64,
                "file ends early: expected the chunk's packed rows",
            ),
        });
    }
    rd.check_crc("the chunk")?;
    let tpb = enter_chunk(rd, head, k, cta_rows, out)?;
    append_chunk(rd, head, start, raw, tpb, k)?;
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
    if k.grouped.is_none() && !k.whole {
        // Issued rows go on as they are read.
        k.b.take_rows(cta_rows);
        out.issued(cta_rows)?;
    }
    Ok(())
}

/// Checks that a chunk of kernel `k` may come where it does and, for a grouped kernel, hands
/// the CTA gathered before to `out` when this chunk starts another. Returns the kernel's
/// threads per CTA (`None` for an issued-order kernel).
fn enter_chunk<R: Read>(
    rd: &Reader<'_, R>,
    ChunkHead { at, cta, .. }: ChunkHead,
    k: &mut Reading,
    cta_rows: &mut Columns,
    out: &mut dyn CtaSink,
) -> Result<Option<u64>, TraceError> {
    let Some(tpb) = k.grouped else {
        if cta != ISSUED_CHUNK {
            return Err(rd.err(
                at + 1,
                format!(
                    "an issued-order kernel's chunks have CTA {ISSUED_CHUNK:#x}, this one {cta}"
                ),
            ));
        }
        return Ok(None);
    };
    if let Some(before) = k.cta.filter(|&c| c != cta) {
        if cta < before {
            return Err(rd.err(
                at + 1,
                format!(
                    "chunk of CTA {cta} after one of CTA {before}: CTAs must come in \
                     increasing order"
                ),
            ));
        }
        give_cta(k, cta_rows, out)?;
    }
    if k.cta != Some(cta) {
        k.cta = Some(cta);
        k.last_thread = 0;
    }
    Ok(Some(tpb))
}

/// Appends the rows of a chunk (its head, the offset of its rows and their bytes `raw`) to
/// kernel `k`'s builder, checked: threads in the chunk's CTA and in order (`tpb`: threads
/// per CTA of a grouped kernel), then as any row. A row's error names its record and its
/// byte offset (a packed chunk's rows: the chunk's).
fn append_chunk<R: Read>(
    rd: &Reader<'_, R>,
    head: ChunkHead,
    start: u64,
    raw: &[u8],
    tpb: Option<u64>,
    k: &mut Reading,
) -> Result<(), TraceError> {
    let ChunkHead {
        at, cta, rows: n, ..
    } = head;
    let row_at = |i: usize| match head.body {
        Body::Plain => start + (i * ROW_BYTES) as u64,
        Body::Packed(_) => at,
    };
    let read = k.read;
    let row_err =
        |(i, e): (usize, String)| rd.err(row_at(i), format!("record {}: {e}", read + i as u64));
    let mut order = ThreadOrder {
        tpb,
        cta,
        last: &mut k.last_thread,
    };
    // A packed chunk's rows are checked once unpacked, into the kernel's columns.
    let mut bad = None;
    let appended = match head.body {
        Body::Plain => {
            let threads = raw.chunks_exact(ROW_BYTES);
            order
                .check(threads.map(|r| u32::from_le_bytes([r[0], r[1], r[2], r[3]])))
                .map_err(row_err)?;
            k.b.append_rows(|cols| decode_rows(raw, cols))
        }
        Body::Packed(_) => k.b.append_rows(|cols| {
            let from = cols.len();
            let unpacked = k
                .unpacker
                .unpack(raw, n as usize, cols)
                .map_err(|e| rd.err(at, format!("the chunk's packed rows: {e}")))
                .and_then(|threads| match order.fine(threads) {
                    true => Ok(()),
                    false => order
                        .check(cols.thread[from..].iter().copied())
                        .map_err(row_err),
                });
            if let Err(e) = unpacked {
                cols.truncate(from);
                bad = Some(e);
            }
        }),
    };
    if let Some(e) = bad {
        return Err(e);
    }
    appended.map_err(|(i, e)| {
        let off = match (&e, head.body) {
            (BuildError::BadFlags { .. }, Body::Plain) => 22,
            _ => 0,
        };
        rd.err(row_at(i) + off, format!("record {}: {e}", read + i as u64))
    })
}

/// Checks that a grouped kernel's chunk's threads are in its CTA and in increasing order.
struct ThreadOrder<'a> {
    /// Threads per CTA (`None`: an issued-order kernel, not checked).
    tpb: Option<u64>,
    cta: u32,
    /// The last thread of the CTA before these rows.
    last: &'a mut u32,
}

impl ThreadOrder<'_> {
    /// Whether threads that unpacking saw as `t` are in place (then taken as the last
    /// thread); if not, [`ThreadOrder::check`] names the row.
    fn fine(&mut self, t: packed::Threads) -> bool {
        let Some(tpb) = self.tpb else {
            return true;
        };
        let lo = self.cta as u64 * tpb.max(1);
        let fine = t.rising
            && t.first >= *self.last
            && t.first as u64 >= lo
            && (t.last as u64) < lo + tpb.max(1);
        if fine {
            *self.last = t.last;
        }
        fine
    }

    /// The first row out of place and what is wrong with it.
    fn check(&mut self, threads: impl Iterator<Item = u32> + Clone) -> Result<(), (usize, String)> {
        let (Some(tpb), cta) = (self.tpb, self.cta) else {
            return Ok(());
        };
        let lo = cta as u64 * tpb.max(1);
        let hi = lo + tpb.max(1);
        // A branch-free pass; the loop below runs only to name the first row out of place.
        let (mut fine, mut prev) = (true, *self.last);
        for t in threads.clone() {
            fine &= (t as u64 >= lo) & ((t as u64) < hi) & (t >= prev);
            prev = t;
        }
        if fine {
            *self.last = prev;
            return Ok(());
        }
        for (i, t) in threads.enumerate() {
            if !(lo..hi).contains(&(t as u64)) {
                return Err((i, format!("thread {t} is not in the chunk's CTA {cta}")));
            }
            if t < *self.last {
                return Err((
                    i,
                    format!(
                        "thread {t} after thread {}: a CTA's rows are grouped by thread in \
                         increasing order",
                        self.last
                    ),
                ));
            }
            *self.last = t;
        }
        Ok(())
    }
}

/// An index entry of one chunk.
pub(super) fn chunk_entry(cta: u32, rows: u32, at: u64) -> [u8; 16] {
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
    match k.cta {
        Some(cta) if !k.whole => {
            k.b.take_rows(cta_rows);
            out.cta(cta, cta_rows)
        }
        _ => Ok(()),
    }
}

/// Ends kernel `k`: checks its row count, gives its last CTA to `out` and ends it there.
/// Returns its index facts.
pub(super) fn end_kernel<R: Read>(
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
    if k.whole {
        let kernel =
            k.b.finish_checked()
                .map_err(|e| rd.err(k.at, e.to_string()))?;
        out.kernel(kernel)?;
    } else {
        give_cta(&mut k, cta_rows, out)?;
        out.end_kernel()?;
    }
    Ok(facts)
}

impl Reading {
    /// Keeps the kernel whole: its rows are gathered as they are read (room made for the
    /// rows it declares, up to a cap) and the kernel goes to the sink's
    /// [`KernelSink::kernel`] at its end, without a copy of each CTA on the way.
    fn keep_whole(&mut self) {
        self.whole = true;
        self.b.reserve(self.rows.min(RESERVE_CAP_ROWS) as usize);
    }

    /// Gives the CTA gathered so far to `out` as the rows of a resident CTA
    /// ([`SinkHooks::resident`](crate::trace::SinkHooks::resident)), and forgets it: the chunks read next go on as any other.
    pub(super) fn give_resident(
        &mut self,
        cta_rows: &mut Columns,
        out: &mut dyn CtaSink,
    ) -> Result<Option<u32>, TraceError> {
        let Some(cta) = self.cta.take() else {
            return Ok(None);
        };
        self.b.take_rows(cta_rows);
        out.resident(cta, cta_rows)?;
        Ok(Some(cta))
    }

    /// The CTA being gathered, if any.
    pub(super) fn current_cta(&self) -> Option<u32> {
        self.cta
    }

    /// The chunks read or stepped over so far.
    pub(super) fn chunks(&self) -> u32 {
        self.chunks
    }

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

/// A CTA sink that takes whole kernels only, for [`read`] with `whole`: the kernels go to
/// the sink it wraps.
pub(super) struct Whole<'a>(pub(super) &'a mut dyn KernelSink);

impl KernelSink for Whole<'_> {
    fn kernel(&mut self, k: crate::trace::Kernel) -> Result<(), TraceError> {
        self.0.kernel(k)
    }
}

impl CtaSink for Whole<'_> {
    fn begin_kernel(&mut self, _: &crate::trace::Kernel) -> Result<(), TraceError> {
        Ok(())
    }
    fn cta(&mut self, cta: u32, _: &Columns) -> Result<(), TraceError> {
        Err(TraceError::parse(
            "<binary reader>",
            crate::trace::Location::Byte(0),
            format!("CTA {cta} was handed on from a kernel kept whole"),
        ))
    }
    fn issued(&mut self, _: &Columns) -> Result<(), TraceError> {
        Err(TraceError::parse(
            "<binary reader>",
            crate::trace::Location::Byte(0),
            "issued rows were handed on from a kernel kept whole",
        ))
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
}
