//! Versions 1 to 3 of the binary format, still read: one record per kernel with its rows
//! inline and no checksums or index.
//! ```text
//! per kernel:  u8 'K'  str name  3 x u32 grid  3 x u32 block  u8 order
//!              u32 n_inst, per inst: str name, u8 has_pc, u64 pc,
//!              (version 3) u32 source line (0 = unknown)
//!              u64 n_rows, then n_rows records of 23 bytes
//!              (version 2) kernel info
//! end:         u8 'E'  u32 n_kernels
//! ```

use super::{
    decode_rows, read_info, read_instructions, read_shape, row_field, Reader, Shape, END_TAG,
    KERNEL_TAG, ROW_BYTES,
};
use crate::trace::sink::CtaSink;
use crate::trace::{BuildError, Kernel, KernelBuilder, TraceError};
use std::io::BufRead;

/// Rows decoded per read call (about 1.5 MB).
const CHUNK_ROWS: usize = 1 << 16;

/// Reads the kernel records after the file header, each to `out` whole.
pub(super) fn read<R: BufRead>(
    rd: &mut Reader<'_, R>,
    version: u32,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut kernels = 0usize;
    loop {
        let at = rd.offset;
        match rd.u8("a kernel record ('K') or the end record ('E')")? {
            KERNEL_TAG => {
                out.kernel(read_kernel(rd, version)?)?;
                kernels += 1;
            }
            END_TAG => {
                let n = rd.u32("the kernel count of the end record")?;
                if n as usize != kernels {
                    return Err(rd.err(at, format!("end record says {n} kernels but {kernels} were read")));
                }
                return rd.expect_end();
            }
            other => return Err(rd.err(at, format!("expected a kernel record ('K') or the end record ('E'), found byte {other:#04x}"))),
        }
    }
}

fn read_kernel<R: BufRead>(rd: &mut Reader<'_, R>, version: u32) -> Result<Kernel, TraceError> {
    let Shape {
        name,
        grid,
        block,
        order,
        at,
    } = read_shape(rd, version)?;
    let mut b =
        KernelBuilder::new(name, grid, block, order).map_err(|e| rd.err(at, e.to_string()))?;
    read_instructions(rd, version, &mut b)?;
    let rows = rd.u64("the row count")?;
    // Reserve only what a well-formed file could hold so a corrupt count cannot exhaust memory.
    b.reserve(rows.min(1 << 24) as usize);
    // Only needed when the reader's buffer cannot hold a whole chunk.
    let mut buf = Vec::new();
    let mut row = 0u64;
    while row < rows {
        let n = CHUNK_ROWS.min((rows - row) as usize);
        let start = rd.offset;
        if b.spare_capacity() < n {
            // Grow geometrically, never past the declared count (exact when it is honest).
            b.reserve(((rows - row) as usize).min(b.len().max(1 << 24)));
        }
        // Decode straight from the reader's buffer when it holds the whole chunk (input in
        // memory); otherwise copy the chunk out first.
        let buffered = rd.r.fill_buf().map_err(|e| TraceError::io(rd.file, e))?;
        let direct = buffered.len() >= n * ROW_BYTES;
        let chunk = if direct {
            &buffered[..n * ROW_BYTES]
        } else {
            if buf.len() < n * ROW_BYTES {
                buf.resize(n * ROW_BYTES, 0);
            }
            let chunk = &mut buf[..n * ROW_BYTES];
            if let Some(got) = rd.read_fully(chunk)? {
                return Err(truncated_rows(rd, start, row, got));
            }
            &*chunk
        };
        let appended = b.append_rows(|cols| decode_rows(chunk, cols));
        if direct {
            rd.r.consume(n * ROW_BYTES);
            rd.offset += (n * ROW_BYTES) as u64;
        }
        appended.map_err(|(i, e)| {
            let at = start + (i * ROW_BYTES) as u64;
            let at = if matches!(e, BuildError::BadFlags { .. }) {
                at + 22
            } else {
                at
            };
            rd.err(at, format!("record {}: {e}", row + i as u64))
        })?;
        row += n as u64;
    }
    if version >= 2 {
        b.set_info(read_info(rd)?);
    }
    b.finish_checked().map_err(|e| rd.err(at, e.to_string()))
}

/// The error of rows from `start` cut short after `got` bytes: which field of which record
/// the file ended in.
pub(super) fn truncated_rows<R: std::io::Read>(
    rd: &Reader<'_, R>,
    start: u64,
    first_row: u64,
    got: usize,
) -> TraceError {
    let within = got % ROW_BYTES;
    let (field_at, field) = row_field(within);
    let row = first_row + (got / ROW_BYTES) as u64;
    let at = start + (got - within + field_at) as u64;
    rd.err(
        at,
        format!("file ends early: expected record {row}'s {field}"),
    )
}
