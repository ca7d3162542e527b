//! Version 4 of the binary format: a kernel record (shape, row count, instructions, info),
//! then its rows in checksummed chunks grouped by CTA, then an index of every kernel and
//! chunk, so that a reader streams a kernel CTA by CTA in the memory of one CTA, and a
//! reader that can seek goes straight to a kernel or CTA (`index.rs`). This file reads it;
//! `write.rs` writes it.

use super::{
    decode_rows, read_info, read_instructions, read_shape, Reader, Shape, CHUNK_TAG, END_TAG,
    INDEX_TAG, ISSUED_CHUNK, KERNEL_TAG, ROW_BYTES, VERSION,
};
use crate::trace::sink::CtaSink;
use crate::trace::{check_density, BuildError, Columns, KernelBuilder, Order, TraceError};
use std::io::Read;

/// Rows per chunk written (about 1.5 MB): a CTA with more takes several chunks.
pub(super) const CHUNK_ROWS: usize = 1 << 16;
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
pub(super) struct KernelRead {
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
    })
}

/// The head of a chunk record: where it is, its CTA and its row count.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChunkHead {
    pub(super) at: u64,
    pub(super) cta: u32,
    pub(super) rows: u32,
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
    Ok(ChunkHead { at, cta, rows: n })
}

/// Steps over the rows and checksum of a chunk whose head was read (not checked: a read
/// on from a place in the file), counting them as read of kernel `k` when it is given.
pub(super) fn skip_chunk_body<R: Read>(
    rd: &mut Reader<'_, R>,
    head: ChunkHead,
    k: Option<&mut Reading>,
) -> Result<(), TraceError> {
    rd.skip(head.rows as u64 * ROW_BYTES as u64 + 4, "the chunk's rows")?;
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
    let ChunkHead { at, cta, rows: n } = head;
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
    if let Some(cta) = k.cta {
        k.b.take_rows(cta_rows);
        out.cta(cta, cta_rows)?;
    }
    Ok(())
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
    give_cta(&mut k, cta_rows, out)?;
    out.end_kernel()?;
    Ok(facts)
}

impl Reading {
    /// Gives the CTA gathered so far to `out` as the rows of a resident CTA
    /// ([`CtaSink::resident`]), and forgets it: the chunks read next go on as any other.
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
