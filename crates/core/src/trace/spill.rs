//! An external sort of a kernel's rows by CTA and thread, for the formats whose rows come
//! in no useful order (Crawford's per-thread streams, interleaved as the tracer met them, and
//! Nugteren et al.'s when their CTAs are out of order), so that they too can be handed on a
//! CTA at a time in bounded memory.
//!
//! Rows are gathered in a buffer of at most `cap` rows. A full buffer is sorted (stably, so
//! each thread keeps its rows' order) and written to a temporary file as a run; at the end
//! the runs are merged, ties going to the earlier run, which gives the rows of a stable sort
//! of the whole kernel. A kernel that fits in one buffer is sorted in memory and touches no
//! file. Memory is the buffer plus a small read buffer per run; the temporary file (35 bytes
//! a row) is deleted when the sort is dropped.

use std::cmp::Reverse;

use super::model::{unpack_flags, Access, AccessKind, Columns};
use super::{CtaSink, TraceError};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

/// Rows a buffer holds by default before it is written out as a run (56 MiB with their
/// sort keys). 2^22 held 224 MiB, more than a mid-size kernel read whole, for no time
/// measured on kernels of 4 M and 34 M rows (`README.md`, "Speed").
pub(crate) const DEFAULT_CAP: usize = 1 << 20;

/// One row, as the format decoded it: the sort key (`cta`, then `local`, the thread's
/// index in it) and what the format makes of the row once sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    /// The CTA, in any numbering whose order is the final grid's linear order.
    pub cta: u64,
    /// The thread's linear index in its CTA.
    pub local: u32,
    pub inst: u32,
    pub addr: u64,
    /// The format's own: a loop snapshot, or nothing.
    pub aux: u64,
    pub size: u16,
    /// Kind and space, packed as the columns pack them.
    pub flags: u8,
}

/// The head of a run that has none (never read).
const EMPTY: Row = Row {
    cta: 0,
    local: 0,
    inst: 0,
    addr: 0,
    aux: 0,
    size: 0,
    flags: 0,
};

/// Bytes of a row in a run.
const RECORD: usize = 35;

impl Row {
    /// The access this row stands for, as `thread`'s with instance `dyn_inst`.
    pub fn access(&self, thread: u32, dyn_inst: u32) -> Access {
        let (kind, space) = unpack_flags(self.flags);
        Access {
            thread,
            inst: self.inst,
            dyn_inst,
            addr: self.addr,
            size: self.size,
            kind,
            space,
        }
    }

    /// Whether the row is a barrier's.
    pub fn is_barrier(&self) -> bool {
        unpack_flags(self.flags).0 == AccessKind::Barrier
    }

    fn encode(&self, out: &mut [u8; RECORD]) {
        out[0..8].copy_from_slice(&self.cta.to_le_bytes());
        out[8..12].copy_from_slice(&self.local.to_le_bytes());
        out[12..16].copy_from_slice(&self.inst.to_le_bytes());
        out[16..24].copy_from_slice(&self.addr.to_le_bytes());
        out[24..32].copy_from_slice(&self.aux.to_le_bytes());
        out[32..34].copy_from_slice(&self.size.to_le_bytes());
        out[34] = self.flags;
    }
    fn decode(b: &[u8; RECORD]) -> Row {
        let u64_at = |i: usize| {
            u64::from_le_bytes([
                b[i],
                b[i + 1],
                b[i + 2],
                b[i + 3],
                b[i + 4],
                b[i + 5],
                b[i + 6],
                b[i + 7],
            ])
        };
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Row {
            cta: u64_at(0),
            local: u32_at(8),
            inst: u32_at(12),
            addr: u64_at(16),
            aux: u64_at(24),
            size: u16::from_le_bytes([b[32], b[33]]),
            flags: b[34],
        }
    }
}

/// Rows gathered for sorting.
pub(crate) struct Sort {
    buf: Vec<Row>,
    /// The buffer's order while it is written ([`Sort::sort_keys`]).
    keys: Vec<(u64, u32, u32)>,
    cap: usize,
    /// The temporary file and each run's first row and row count in it.
    file: Option<BufWriter<File>>,
    runs: Vec<(u64, u64)>,
    written: u64,
    rows: u64,
}

impl Sort {
    /// A sort that writes a run every `cap` rows (at least 1).
    pub fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            keys: Vec::new(),
            // Positions in the buffer are u32.
            cap: cap.clamp(1, u32::MAX as usize),
            file: None,
            runs: Vec::new(),
            written: 0,
            rows: 0,
        }
    }

    /// Rows pushed so far.
    pub fn len(&self) -> u64 {
        self.rows
    }

    pub fn push(&mut self, r: Row) -> io::Result<()> {
        self.buf.push(r);
        self.rows += 1;
        if self.buf.len() >= self.cap {
            self.write_run()?;
        }
        Ok(())
    }

    /// Fills `keys` with the buffer's keys and positions, in order: sorting these 16-byte
    /// entries (the position breaks ties, so the order is stable) is far cheaper than moving
    /// whole rows.
    fn sort_keys(&mut self) {
        self.keys.clear();
        self.keys.extend(
            self.buf
                .iter()
                .enumerate()
                .map(|(i, r)| (r.cta, r.local, i as u32)),
        );
        self.keys.sort_unstable();
    }

    /// Sorts the buffer and writes it to the file as a run.
    fn write_run(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.sort_keys();
        let w = match self.file.as_mut() {
            Some(w) => w,
            None => self
                .file
                .insert(BufWriter::with_capacity(1 << 20, tempfile::tempfile()?)),
        };
        let mut rec = [0u8; RECORD];
        for &(_, _, i) in &self.keys {
            self.buf[i as usize].encode(&mut rec);
            w.write_all(&rec)?;
        }
        self.runs.push((self.written, self.buf.len() as u64));
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// The rows in sorted order.
    pub fn sorted(mut self) -> io::Result<Sorted> {
        if self.file.is_none() {
            self.sort_keys();
            return Ok(Sorted(Source::Memory {
                rows: self.buf,
                order: self.keys,
                at: 0,
            }));
        }
        self.write_run()?;
        let file = match self.file.take() {
            Some(w) => w.into_inner().map_err(|e| e.into_error())?,
            None => {
                return Ok(Sorted(Source::Memory {
                    rows: Vec::new(),
                    order: Vec::new(),
                    at: 0,
                }))
            }
        };
        let file = std::sync::Arc::new(file);
        // Each run reads its part of the one file at its own offset, through its own buffer
        // (256 KiB at most: 32 runs of 34 M rows hold 8 MiB).
        let per_run = ((64 << 20) / self.runs.len().max(1)).clamp(1 << 12, 1 << 18) / RECORD;
        let mut runs = Vec::with_capacity(self.runs.len());
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        let mut heads = Vec::with_capacity(self.runs.len());
        for (i, &(first, count)) in self.runs.iter().enumerate() {
            let mut run = Run {
                file: file.clone(),
                buf: Vec::new(),
                used: 0,
                next_row: first,
                left: count,
                batch: per_run.max(1),
            };
            // Runs are never empty; one would simply stay out of the heap.
            let first = run.next()?;
            if let Some(row) = first {
                heap.push(Reverse((row.cta, row.local, i)));
            }
            heads.push(first.unwrap_or(EMPTY));
            runs.push(run);
        }
        Ok(Sorted(Source::Merge {
            runs,
            heads,
            heap,
            current: None,
        }))
    }
}

/// A run being merged: a buffer of its rows read ahead, and where the rest are.
struct Run {
    file: std::sync::Arc<File>,
    buf: Vec<u8>,
    /// Bytes of `buf` already decoded.
    used: usize,
    /// The file's row after those in `buf`, and how many of the run's rows are after it.
    next_row: u64,
    left: u64,
    /// Rows read at a time.
    batch: usize,
}

impl Run {
    fn next(&mut self) -> io::Result<Option<Row>> {
        if self.used == self.buf.len() {
            if self.left == 0 {
                return Ok(None);
            }
            let n = (self.left as usize).min(self.batch);
            self.buf.resize(n * RECORD, 0);
            read_at(&self.file, &mut self.buf, self.next_row * RECORD as u64)?;
            self.next_row += n as u64;
            self.left -= n as u64;
            self.used = 0;
        }
        let mut rec = [0u8; RECORD];
        rec.copy_from_slice(&self.buf[self.used..self.used + RECORD]);
        self.used += RECORD;
        Ok(Some(Row::decode(&rec)))
    }
}

/// Fills `buf` from `file` at byte `offset`, leaving the file's position alone.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Fills `buf` from `file` at byte `offset` (the position moves; no run relies on it).
#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// No file on this target has any place to read (a browser gives none): the sort never
/// spills there, since creating its temporary file fails first.
#[cfg(not(any(unix, windows)))]
fn read_at(_file: &File, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The sorted rows ([`Sorted::next`]).
pub(crate) struct Sorted(Source);

/// Where sorted rows come from: memory, or a merge of the runs.
enum Source {
    /// The rows and their order.
    Memory {
        rows: Vec<Row>,
        order: Vec<(u64, u32, u32)>,
        at: usize,
    },
    Merge {
        runs: Vec<Run>,
        /// Each run's next row, and the runs that have one by its key (ties: the earlier run),
        /// but for `current`, the run the last row came from, kept out of the heap while it
        /// stays first (so rows already in order cost no heap operation).
        heads: Vec<Row>,
        heap: BinaryHeap<Reverse<(u64, u32, usize)>>,
        current: Option<usize>,
    },
}

impl Sorted {
    /// The next row in key order (rows of equal keys in the order pushed).
    pub fn next(&mut self) -> io::Result<Option<Row>> {
        match &mut self.0 {
            Source::Memory { rows, order, at } => {
                let row = order.get(*at).map(|&(_, _, i)| rows[i as usize]);
                *at += 1;
                Ok(row)
            }
            Source::Merge {
                runs,
                heads,
                heap,
                current,
            } => {
                let i = match current.take() {
                    Some(i) => {
                        let mine = (heads[i].cta, heads[i].local, i);
                        match heap.peek_mut() {
                            // Another run comes first: it leaves the heap, this one goes in.
                            Some(mut top) if top.0 < mine => {
                                let j = top.0 .2;
                                *top = Reverse(mine);
                                j
                            }
                            _ => i,
                        }
                    }
                    None => match heap.pop() {
                        Some(Reverse((_, _, i))) => i,
                        None => return Ok(None),
                    },
                };
                let row = heads[i];
                if let Some(next) = runs[i].next()? {
                    heads[i] = next;
                    *current = Some(i);
                }
                Ok(Some(row))
            }
        }
    }
}

/// Hands `sorted` on to `out` a CTA at a time (the kernel has begun): `cta_of` gives a
/// row's CTA its linear id in the kernel's grid, `access` makes the row the kernel's access of
/// `thread` (its linear id). `file` names the trace in an error reading the spilled runs.
pub(crate) fn hand_on_by_cta(
    mut sorted: Sorted,
    file: &str,
    threads_per_cta: u32,
    out: &mut dyn CtaSink,
    cta_of: impl Fn(u64) -> u32,
    mut access: impl FnMut(&Row, u32) -> Access,
) -> Result<(), TraceError> {
    let mut rows = Columns::default();
    let mut current: Option<u64> = None;
    while let Some(r) = sorted.next().map_err(|e| TraceError::io(file, e))? {
        if current != Some(r.cta) {
            if let Some(c) = current {
                out.cta_taken(cta_of(c), &mut rows)?;
                rows.clear();
            }
            current = Some(r.cta);
        }
        let thread = cta_of(r.cta) * threads_per_cta + r.local;
        rows.push(&access(&r, thread));
    }
    if let Some(c) = current {
        out.cta_taken(cta_of(c), &mut rows)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(mut s: Sorted) -> Vec<Row> {
        let mut out = Vec::new();
        while let Some(r) = s.next().unwrap() {
            out.push(r);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// With any buffer size, the rows come out as a stable sort of all of them does.
        #[test]
        fn runs_merge_to_a_stable_sort(
            keys in proptest::collection::vec((0u64..5, 0u32..4), 0..300),
            cap in 1usize..40,
        ) {
            let rows: Vec<Row> = keys
                .iter()
                .enumerate()
                .map(|(i, &(cta, local))| Row {
                    cta: cta << 40,
                    local,
                    inst: i as u32,
                    addr: (i as u64) << 20 | 0xabc,
                    aux: u64::MAX - i as u64,
                    size: i as u16,
                    flags: (i % 7) as u8,
                })
                .collect();
            let mut s = Sort::new(cap);
            for r in &rows {
                s.push(*r).unwrap();
            }
            prop_assert_eq!(s.len(), rows.len() as u64);
            let spilled = rows.len() >= cap;
            prop_assert_eq!(s.file.is_some(), spilled);
            let mut want = rows.clone();
            want.sort_by_key(|r| (r.cta, r.local));
            prop_assert_eq!(drain(s.sorted().unwrap()), want);
        }
    }
}
