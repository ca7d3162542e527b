//! The columns of a kernel's accesses: appending, cutting and reading rows.

use super::builder::{rows_by_thread, thread_starts};
use super::*;

impl Columns {
    /// Row `i` as an [`Access`].
    pub fn access(&self, i: usize) -> Access {
        let (kind, space) = super::unpack_flags(self.flags[i]);
        Access {
            thread: self.thread[i],
            inst: self.inst[i],
            dyn_inst: self.dyn_inst[i],
            addr: self.addr[i],
            size: self.size[i],
            kind,
            space,
        }
    }
    pub fn len(&self) -> usize {
        self.addr.len()
    }
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty()
    }
    pub(super) fn reserve_exact(&mut self, n: usize) {
        self.addr.reserve_exact(n);
        self.thread.reserve_exact(n);
        self.inst.reserve_exact(n);
        self.dyn_inst.reserve_exact(n);
        self.size.reserve_exact(n);
        self.flags.reserve_exact(n);
        memory::prefer_huge_pages(&self.addr);
        memory::prefer_huge_pages(&self.thread);
        memory::prefer_huge_pages(&self.inst);
        memory::prefer_huge_pages(&self.dyn_inst);
        memory::prefer_huge_pages(&self.size);
        memory::prefer_huge_pages(&self.flags);
    }
    pub(crate) fn truncate(&mut self, n: usize) {
        self.addr.truncate(n);
        self.thread.truncate(n);
        self.inst.truncate(n);
        self.dyn_inst.truncate(n);
        self.size.truncate(n);
        self.flags.truncate(n);
    }
    /// Appends one row (a streamed chunk is built this way; a kernel goes through
    /// [`KernelBuilder::push`], which checks the row first).
    #[inline]
    pub fn push(&mut self, a: &Access) {
        self.addr.push(a.addr);
        self.thread.push(a.thread);
        self.inst.push(a.inst);
        self.dyn_inst.push(a.dyn_inst);
        self.size.push(a.size);
        self.flags.push(pack_flags(a.kind, a.space));
    }
    /// Writes `a` into row `i`, which is there.
    #[inline]
    pub fn set(&mut self, i: usize, a: &Access) {
        self.addr[i] = a.addr;
        self.thread[i] = a.thread;
        self.inst[i] = a.inst;
        self.dyn_inst[i] = a.dyn_inst;
        self.size[i] = a.size;
        self.flags[i] = pack_flags(a.kind, a.space);
    }
    /// Appends rows `range` of `from`.
    pub fn extend_from(&mut self, from: &Columns, range: std::ops::Range<usize>) {
        self.addr.extend_from_slice(&from.addr[range.clone()]);
        self.thread.extend_from_slice(&from.thread[range.clone()]);
        self.inst.extend_from_slice(&from.inst[range.clone()]);
        self.dyn_inst
            .extend_from_slice(&from.dyn_inst[range.clone()]);
        self.size.extend_from_slice(&from.size[range.clone()]);
        self.flags.extend_from_slice(&from.flags[range]);
    }
    /// Removes every row, keeping the capacity (a chunk buffer is reused).
    pub fn clear(&mut self) {
        self.truncate(0);
    }
    /// Removes the first `n` rows (at most all), moving the rest to the front.
    pub fn drain_front(&mut self, n: usize) {
        let n = n.min(self.len());
        self.addr.drain(..n);
        self.thread.drain(..n);
        self.inst.drain(..n);
        self.dyn_inst.drain(..n);
        self.size.drain(..n);
        self.flags.drain(..n);
    }
    pub(super) fn shrink_to_fit(&mut self) {
        self.addr.shrink_to_fit();
        self.thread.shrink_to_fit();
        self.inst.shrink_to_fit();
        self.dyn_inst.shrink_to_fit();
        self.size.shrink_to_fit();
        self.flags.shrink_to_fit();
    }
    /// Heap bytes held by the columns (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.addr.capacity() * 8
            + self.thread.capacity() * 4
            + self.inst.capacity() * 4
            + self.dyn_inst.capacity() * 4
            + self.size.capacity() * 2
            + self.flags.capacity()
    }
    /// Groups the rows by thread, stably (a counting sort), where every row's thread lies in
    /// `first .. first + count` (one CTA's rows: a reader that streams CTAs hands them so).
    /// Rows outside the range are not expected; they are kept, last.
    pub(crate) fn group_by_thread(&mut self, first: u32, count: u32) {
        if self.thread.windows(2).all(|w| w[0] <= w[1]) {
            return;
        }
        // Threads relative to the first; any outside the range count as one past the last.
        let local: Vec<u32> = self
            .thread
            .iter()
            .map(|&t| t.wrapping_sub(first).min(count))
            .collect();
        let perm = rows_by_thread(&local, &thread_starts(&local, count as usize + 1));
        self.permute(&perm);
    }
    /// Reorders every column by `perm` (new position -> old row), one column at a time so
    /// that the peak extra memory is one column.
    pub(super) fn permute(&mut self, perm: &[u32]) {
        fn apply<T: Copy>(v: &mut Vec<T>, perm: &[u32]) {
            let out: Vec<T> = perm.iter().map(|&i| v[i as usize]).collect();
            *v = out;
        }
        apply(&mut self.addr, perm);
        apply(&mut self.thread, perm);
        apply(&mut self.inst, perm);
        apply(&mut self.dyn_inst, perm);
        apply(&mut self.size, perm);
        apply(&mut self.flags, perm);
    }
}
