//! A kernel's accesses read back: by row, by CTA, by thread; its header without rows.

use super::*;

impl Kernel {
    pub fn len(&self) -> usize {
        self.cols.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }
    pub fn columns(&self) -> &Columns {
        &self.cols
    }
    pub fn threads_per_cta(&self) -> u32 {
        self.block.count() as u32
    }
    pub fn num_ctas(&self) -> u32 {
        self.grid.count() as u32
    }
    pub fn num_threads(&self) -> u64 {
        self.grid.count().saturating_mul(self.block.count())
    }
    /// One thread's references in the order it made them (a Dinero IV trace, a CPU trace):
    /// there is nothing to coalesce, so each reference is one request per line it touches.
    pub fn is_reference_stream(&self) -> bool {
        self.order == Order::Issued && self.num_threads() == 1
    }
    /// The kernel without its rows: name, shape, order, instructions and source facts.
    pub fn header(&self) -> Kernel {
        self.header_with(&self.info)
    }
    /// The kernel without its rows, with `info` for its source facts.
    fn header_with(&self, info: &KernelInfo) -> Kernel {
        Kernel::without_rows(
            &self.name,
            self.grid,
            self.block,
            self.order,
            &self.instructions,
            info,
        )
    }
    /// The header without the facts that hold an entry per CTA or warp (the CTA-to-SM table,
    /// the executed instructions per warp): what a view of a run's result needs, at a few
    /// bytes where a kernel of 10^7 CTAs has a 40 MB CTA-to-SM table.
    pub fn shape_only(&self) -> Kernel {
        let info = KernelInfo {
            attributes: self.info.attributes.clone(),
            opcodes: self.info.opcodes.clone(),
            load_groups: self.info.load_groups,
            ..KernelInfo::default()
        };
        self.header_with(&info)
    }
    /// A kernel of this shape and these instructions and facts, with no rows.
    pub(crate) fn without_rows(
        name: &str,
        grid: Dim3,
        block: Dim3,
        order: Order,
        instructions: &[Instruction],
        info: &KernelInfo,
    ) -> Kernel {
        Kernel {
            name: name.to_string(),
            grid,
            block,
            order,
            instructions: instructions.to_vec(),
            info: info.clone(),
            cols: Columns::default(),
            cta_starts: Vec::new(),
        }
    }
    /// Row `i` as an [`Access`].
    pub fn access(&self, i: usize) -> Access {
        self.cols.access(i)
    }
    pub fn accesses(&self) -> impl Iterator<Item = Access> + '_ {
        (0..self.len()).map(|i| self.access(i))
    }
    /// Row range of one CTA (per-thread kernels only; empty otherwise).
    pub fn cta_rows(&self, cta: u32) -> std::ops::Range<usize> {
        let c = cta as usize;
        if c + 1 < self.cta_starts.len() {
            self.cta_starts[c] as usize..self.cta_starts[c + 1] as usize
        } else {
            0..0
        }
    }
    /// Row range of one thread (per-thread kernels only; empty otherwise). A binary search in
    /// its CTA's rows: hot loops should use [`Kernel::thread_starts`] once instead.
    pub fn thread_rows(&self, thread: u32) -> std::ops::Range<usize> {
        let r = self.cta_rows(thread / self.threads_per_cta().max(1));
        let rows = &self.cols.thread[r.clone()];
        let lo = rows.partition_point(|&t| t < thread);
        let hi = rows.partition_point(|&t| t <= thread);
        r.start + lo..r.start + hi
    }
    /// First row of every thread plus the end (length threads + 1), for per-thread kernels.
    pub fn thread_starts(&self) -> Vec<u32> {
        let n = self.num_threads() as usize;
        let mut starts = vec![0u32; n + 1];
        if self.order != Order::Issued {
            for &t in &self.cols.thread {
                starts[t as usize + 1] += 1;
            }
            for i in 0..n {
                starts[i + 1] += starts[i];
            }
        }
        starts
    }
    /// CTA index and thread index within the CTA of a linear thread id.
    pub fn split_thread(&self, thread: u32) -> (Dim3, Dim3) {
        let tpb = self.threads_per_cta().max(1) as u64;
        let cta = thread as u64 / tpb;
        (
            self.grid.from_linear(cta),
            self.block.from_linear(thread as u64 % tpb),
        )
    }
    /// Linear thread id of thread `tid` of CTA `cta`.
    pub fn thread_id(&self, cta: Dim3, tid: Dim3) -> u64 {
        self.grid.linear(cta) * self.block.count() + self.block.linear(tid)
    }
    /// Heap bytes held by this kernel's access storage.
    pub fn heap_bytes(&self) -> usize {
        self.cols.heap_bytes() + self.cta_starts.capacity() * 4
    }
    /// Number of non-barrier accesses.
    pub fn memory_accesses(&self) -> usize {
        self.cols
            .flags
            .iter()
            .filter(|&&f| f & 0x1f != AccessKind::Barrier.code())
            .count()
    }
}
