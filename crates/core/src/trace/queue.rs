//! Rows held back in order, on disk past a chunk: an NVBit log whose launches interleave is
//! handed on a launch at a time, and the rows of the launches after the one being handed on
//! wait here until their turn, so that memory does not grow with the log.
//!
//! Rows are gathered a chunk ([`ISSUED_CHUNK_ROWS`]) at a time; a full chunk is written to a
//! temporary file (23 bytes a row, as our binary format stores them), deleted when the queue
//! is dropped. Draining gives the rows back in the order they came, in the same chunks.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use super::model::{Access, Columns};
use super::sink::ISSUED_CHUNK_ROWS;

/// Bytes of a row on disk.
const ROW_BYTES: usize = 23;

/// Rows in order: the latest chunk in memory, the earlier ones in a temporary file.
#[derive(Default)]
pub(crate) struct RowQueue {
    held: Columns,
    file: Option<File>,
    /// Encoded rows, reused.
    buf: Vec<u8>,
}

impl RowQueue {
    /// Adds a row; a full chunk goes to the file.
    pub fn push(&mut self, a: &Access) -> io::Result<()> {
        self.held.push(a);
        if self.held.len() >= ISSUED_CHUNK_ROWS {
            let file = match &mut self.file {
                Some(f) => f,
                None => self.file.insert(tempfile::tempfile()?),
            };
            self.buf.clear();
            super::binary::encode_rows(&self.held, 0..self.held.len(), &mut self.buf);
            file.write_all(&self.buf)?;
            self.held.clear();
        }
        Ok(())
    }

    /// Gives every row to `each`, in order, a chunk at a time (the last one may be short).
    pub fn drain<E: From<io::Error>>(
        mut self,
        each: &mut dyn FnMut(&Columns) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(mut file) = self.file.take() {
            file.seek(SeekFrom::Start(0))?;
            let mut chunk = Columns::default();
            let mut r = io::BufReader::new(file);
            self.buf.resize(ISSUED_CHUNK_ROWS * ROW_BYTES, 0);
            loop {
                // Every chunk on disk is full.
                match r.read_exact(&mut self.buf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e.into()),
                }
                chunk.clear();
                super::binary::decode_rows(&self.buf, &mut chunk);
                each(&chunk)?;
            }
        }
        if !self.held.is_empty() {
            each(&self.held)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{AccessKind, MemSpace};

    fn row(i: u64) -> Access {
        Access {
            thread: (i % 1000) as u32,
            inst: (i % 7) as u32,
            dyn_inst: (i / 1000) as u32,
            addr: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            size: 1 << (i % 4),
            kind: if i % 3 == 0 {
                AccessKind::Store
            } else {
                AccessKind::Load
            },
            space: if i % 5 == 0 {
                MemSpace::Local
            } else {
                MemSpace::Global
            },
        }
    }

    /// Rows come back in the order they went in, over the chunks that went to disk and the
    /// one still held, for counts around a chunk's edge.
    #[test]
    fn rows_come_back_in_order_in_chunks() {
        for n in [
            0,
            1,
            ISSUED_CHUNK_ROWS - 1,
            ISSUED_CHUNK_ROWS,
            2 * ISSUED_CHUNK_ROWS + 5,
        ] {
            let mut q = RowQueue::default();
            let mut want = Columns::default();
            for i in 0..n as u64 {
                q.push(&row(i)).unwrap();
                want.push(&row(i));
            }
            assert_eq!(q.file.is_some(), n >= ISSUED_CHUNK_ROWS, "{n}");
            let mut got = Columns::default();
            let mut sizes = Vec::new();
            q.drain::<io::Error>(&mut |c| {
                sizes.push(c.len());
                got.extend_from(c, 0..c.len());
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "{n}");
            assert!(
                sizes.iter().all(|&s| s > 0 && s <= ISSUED_CHUNK_ROWS),
                "{sizes:?}"
            );
        }
    }
}
