//! A reference stream's rows as warp instructions: consecutive rows of one instruction
//! instance (its instruction and occurrence) form one warp instruction, barriers are skipped,
//! and the last one of a chunk waits, as it may go on in the next. The session simulates
//! them in this order, and a stage measuring them apart (`apart.rs`) sees the same ones.

use super::reference::push_row;
use crate::trace::{Columns, BARRIER_CODE};
use std::ops::Range;

#[derive(Clone, Debug, Default)]
pub(super) struct Grouping {
    /// The rows of a warp instruction that may go on in the next chunk.
    pending: Columns,
}

#[inline]
fn key(c: &Columns, i: usize) -> (u32, u32) {
    (c.inst[i], c.dyn_inst[i])
}

#[inline]
fn barrier(c: &Columns, i: usize) -> bool {
    c.flags[i] & 0x1f == BARRIER_CODE
}

impl Grouping {
    /// Calls `f` with every warp instruction of `cols[range]` that is complete, the one begun
    /// in an earlier chunk first; keeps the last one, which may go on.
    #[inline]
    pub(super) fn feed(
        &mut self,
        cols: &Columns,
        range: Range<usize>,
        mut f: impl FnMut(&Columns, Range<usize>),
    ) {
        let mut i = range.start;
        let end = range.end;
        if !self.pending.is_empty() {
            let k0 = key(&self.pending, 0);
            while i < end && !barrier(cols, i) && key(cols, i) == k0 {
                push_row(&mut self.pending, cols, i);
                i += 1;
            }
            if i == end {
                return;
            }
            f(&self.pending, 0..self.pending.len());
            self.pending.clear();
        }
        while i < end {
            if barrier(cols, i) {
                i += 1;
                continue;
            }
            let k0 = key(cols, i);
            let mut j = i + 1;
            while j < end && !barrier(cols, j) && key(cols, j) == k0 {
                j += 1;
            }
            if j == end {
                // It may go on in the next chunk.
                for r in i..j {
                    push_row(&mut self.pending, cols, r);
                }
                return;
            }
            f(cols, i..j);
            i = j;
        }
    }

    /// Calls `f` with the warp instruction left waiting, as the stream ends.
    pub(super) fn end(&mut self, mut f: impl FnMut(&Columns, Range<usize>)) {
        if !self.pending.is_empty() {
            f(&self.pending, 0..self.pending.len());
            self.pending.clear();
        }
    }
}

/// What warp instruction `cols[range]` of a reference stream asks of the L1, as the coalescer
/// says: its accesses that reach it (accesses to spaces that bypass it make no request) and
/// whether it writes (its last access that reaches the L1 does).
#[inline]
pub(super) fn reaching(cols: &Columns, range: Range<usize>) -> (u64, bool) {
    let mut used = 0;
    let mut write = false;
    for r in range {
        let (kind, space) = crate::trace::model_flags(cols.flags[r]);
        if space.reaches_l1() {
            used += 1;
            write = kind.is_write();
        }
    }
    (used, write)
}
