//! Building a kernel row by row, checked, then grouped by thread and numbered.

use super::*;

/// Where each of `n` threads' rows start when the rows are grouped by thread (`n + 1`
/// entries, the last one the number of rows).
pub(super) fn thread_starts(thread: &[u32], n: usize) -> Vec<u32> {
    let mut starts = vec![0u32; n + 1];
    for &t in thread {
        starts[t as usize + 1] += 1;
    }
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    starts
}

/// The row indices grouped by thread, in row order within a thread (a counting sort).
pub(super) fn rows_by_thread(thread: &[u32], starts: &[u32]) -> Vec<u32> {
    let mut next = starts.to_vec();
    let mut perm = vec![0u32; thread.len()];
    for (row, &t) in thread.iter().enumerate() {
        let slot = &mut next[t as usize];
        perm[*slot as usize] = row as u32;
        *slot += 1;
    }
    perm
}

impl KernelBuilder {
    pub fn new(
        name: impl Into<String>,
        grid: Dim3,
        block: Dim3,
        order: Order,
    ) -> Result<Self, BuildError> {
        let threads = grid.count().saturating_mul(block.count());
        if threads == 0 || threads > u32::MAX as u64 {
            return Err(BuildError::BadShape);
        }
        Ok(Self {
            name: name.into(),
            grid,
            block,
            order,
            instructions: Vec::new(),
            inst_index: Default::default(),
            info: KernelInfo::default(),
            cols: Columns::default(),
            threads,
            sorted: true,
            last_thread: 0,
            number_dyn: false,
        })
    }
    /// For formats without instance numbers: when the kernel is finished, each access's
    /// dynamic instance becomes the number of earlier rows of its thread with the same
    /// instruction (the pushed values are replaced; barriers keep theirs). This is one pass
    /// over rows grouped by thread, instead of a per-row map lookup while reading.
    pub fn number_instances(&mut self) {
        self.number_dyn = true;
    }
    /// Whether [`Self::number_instances`] was asked for.
    pub fn numbers_instances(&self) -> bool {
        self.number_dyn
    }
    /// Reserves room for exactly `n` more rows (keeps memory at 23 bytes a row).
    pub fn reserve(&mut self, n: usize) {
        self.cols.reserve_exact(n);
    }
    pub fn threads(&self) -> u64 {
        self.threads
    }
    /// Rows that fit before the columns must grow.
    pub fn spare_capacity(&self) -> usize {
        self.cols.addr.capacity() - self.cols.len()
    }
    pub fn grid(&self) -> Dim3 {
        self.grid
    }
    pub fn block(&self) -> Dim3 {
        self.block
    }
    pub fn len(&self) -> usize {
        self.cols.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }
    /// Declares (or finds) an instruction by name; ids are handed out in declaration order,
    /// which must be program order.
    pub fn instruction(&mut self, name: &str, pc: Option<u64>) -> u32 {
        if let Some(&id) = self.inst_index.get(name) {
            return id;
        }
        let id = self.instructions.len() as u32;
        self.instructions.push(Instruction {
            name: name.to_string(),
            pc,
            line: None,
        });
        self.inst_index.insert(name.to_string(), id);
        id
    }
    /// Records the source line instruction `inst` was compiled from (0 or an unknown
    /// instruction is ignored: the tracer writes 0 where the binary has no line table).
    pub fn set_line(&mut self, inst: u32, line: u32) {
        if line == 0 {
            return;
        }
        if let Some(i) = self.instructions.get_mut(inst as usize) {
            i.line = Some(line);
        }
    }
    pub fn instruction_count(&self) -> usize {
        self.instructions.len()
    }
    /// The instructions declared so far, in id order.
    pub fn instructions(&self) -> &[Instruction] {
        &self.instructions
    }
    pub fn info_mut(&mut self) -> &mut KernelInfo {
        &mut self.info
    }
    /// Attaches what the importer learned beyond the accesses.
    pub fn set_info(&mut self, info: KernelInfo) {
        self.info = info;
    }
    /// Renumbers instructions in increasing PC order (instructions without a PC last, in their
    /// order), for formats whose first-seen order is not program order.
    pub fn sort_instructions_by_pc(&mut self) {
        let mut order: Vec<u32> = (0..self.instructions.len() as u32).collect();
        order.sort_by_key(|&i| (self.instructions[i as usize].pc.unwrap_or(u64::MAX), i));
        let mut new_id = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        let old = std::mem::take(&mut self.instructions);
        self.instructions = order.iter().map(|&i| old[i as usize].clone()).collect();
        for (i, inst) in self.instructions.iter().enumerate() {
            self.inst_index.insert(inst.name.clone(), i as u32);
        }
        let barrier = AccessKind::Barrier.code();
        for (inst, &f) in self.cols.inst.iter_mut().zip(&self.cols.flags) {
            if f & 0x1f != barrier {
                *inst = new_id[*inst as usize];
            }
        }
    }
    /// Rewrites every row's dynamic instance (`map[old]`), for formats that rank instances
    /// only once all are read.
    pub fn remap_dyn(&mut self, map: &[u32]) -> Result<(), BuildError> {
        let barrier = AccessKind::Barrier.code();
        for (d, &f) in self.cols.dyn_inst.iter_mut().zip(&self.cols.flags) {
            if f & 0x1f != barrier {
                *d = *map.get(*d as usize).ok_or(BuildError::BadShape)?;
            }
        }
        Ok(())
    }
    pub fn order(&self) -> Order {
        self.order
    }
    /// Gives the kernel its real grid and block once the importer knows them (formats that only
    /// say which CTAs or threads exist once all are read). `thread` maps each provisional
    /// thread id (as pushed) to its final linear id; every pushed id must have an entry.
    pub fn reshape(&mut self, grid: Dim3, block: Dim3, thread: &[u32]) -> Result<(), BuildError> {
        let threads = grid.count().saturating_mul(block.count());
        if threads == 0 || threads > u32::MAX as u64 {
            return Err(BuildError::BadShape);
        }
        for t in self.cols.thread.iter_mut() {
            let new = *thread
                .get(*t as usize)
                .ok_or(BuildError::ThreadOutOfRange {
                    thread: *t as u64,
                    threads: thread.len() as u64,
                })?;
            if new as u64 >= threads {
                return Err(BuildError::ThreadOutOfRange {
                    thread: new as u64,
                    threads,
                });
            }
            *t = new;
        }
        self.grid = grid;
        self.block = block;
        self.threads = threads;
        self.sorted = self.cols.thread.windows(2).all(|w| w[0] <= w[1]);
        self.last_thread = self.cols.thread.last().copied().unwrap_or(0);
        Ok(())
    }
    /// Appends one access (or barrier).
    #[inline]
    pub fn push(&mut self, a: Access) -> Result<(), BuildError> {
        self.check_row(a.thread, a.inst, a.size, a.kind == AccessKind::Barrier)?;
        if self.cols.len() >= u32::MAX as usize {
            return Err(BuildError::TooManyRows);
        }
        if a.thread < self.last_thread {
            self.sorted = false;
        }
        self.last_thread = a.thread;
        self.cols.push(&a);
        Ok(())
    }
    /// The checks [`Self::push`] makes of a row, for a reader that hands rows on rather than
    /// keeping them (it counts them itself).
    pub fn check(&self, a: &Access) -> Result<(), BuildError> {
        self.check_row(a.thread, a.inst, a.size, a.kind == AccessKind::Barrier)
    }
    /// The checks every row passes: its thread is in the grid and, unless it is a barrier,
    /// its instruction is declared and its size is not zero.
    #[inline]
    fn check_row(
        &self,
        thread: u32,
        inst: u32,
        size: u16,
        barrier: bool,
    ) -> Result<(), BuildError> {
        if thread as u64 >= self.threads {
            return Err(BuildError::ThreadOutOfRange {
                thread: thread as u64,
                threads: self.threads,
            });
        }
        if !barrier {
            if inst as usize >= self.instructions.len() {
                return Err(BuildError::UnknownInstruction {
                    inst,
                    count: self.instructions.len(),
                });
            }
            if size == 0 {
                return Err(BuildError::ZeroSize);
            }
        }
        Ok(())
    }
    /// Like [`KernelBuilder::finish`], for untrusted input: refuses kernels whose declared
    /// shape would need far more per-thread or per-CTA memory than their accesses (a corrupt
    /// or hostile header must not exhaust memory).
    pub fn finish_checked(self) -> Result<Kernel, BuildError> {
        let rows = self.cols.len() as u64;
        let ctas = self.grid.count();
        let per_thread = self.order != Order::Issued;
        if ctas > (4 * rows).max(1 << 20) || (per_thread && self.threads > (4 * rows).max(1 << 24))
        {
            return Err(BuildError::TooSparse {
                grid: self.grid,
                block: self.block,
                threads: self.threads,
                ctas,
                rows: self.cols.len(),
            });
        }
        Ok(self.finish())
    }
    /// Appends rows written by `fill` straight into the kernel's columns (bulk decoders use
    /// this to skip a copy), then checks them as [`Self::push`] would. `fill` must extend
    /// every column by the same number of rows. On an error the new rows are removed again and
    /// the index of the bad row among them is returned.
    pub fn append_rows(
        &mut self,
        fill: impl FnOnce(&mut Columns),
    ) -> Result<(), (usize, BuildError)> {
        let start = self.cols.len();
        fill(&mut self.cols);
        let c = &self.cols;
        let n = c.addr.len() - start;
        let uneven = [
            c.thread.len(),
            c.inst.len(),
            c.dyn_inst.len(),
            c.size.len(),
            c.flags.len(),
        ]
        .iter()
        .any(|&l| l != start + n);
        let result = if uneven || start + n >= u32::MAX as usize {
            Err((0, BuildError::TooManyRows))
        } else {
            self.check_appended(start)
        };
        if result.is_err() {
            self.cols.truncate(start);
        }
        result
    }
    fn check_appended(&mut self, start: usize) -> Result<(), (usize, BuildError)> {
        // A branch-free pass over all new rows; the row-by-row loop below runs only to name
        // the first bad row.
        let c = &self.cols;
        let (threads, ninst) = (self.threads, self.instructions.len() as u64);
        let barrier = AccessKind::Barrier.code();
        let spaces = MemSpace::ALL.len() as u8;
        let (mut bad, mut unsorted, mut prev) = (false, false, self.last_thread);
        for (((&t, &f), &inst), &size) in c.thread[start..]
            .iter()
            .zip(&c.flags[start..])
            .zip(&c.inst[start..])
            .zip(&c.size[start..])
        {
            let kind = f & 0x1f;
            let data = kind != barrier;
            bad |= (t as u64 >= threads)
                | ((VALID_KINDS >> kind) & 1 == 0)
                | (f >> 5 >= spaces)
                | (data & ((inst as u64 >= ninst) | (size == 0)));
            unsorted |= t < prev;
            prev = t;
        }
        if !bad {
            self.sorted &= !unsorted;
            self.last_thread = prev;
            return Ok(());
        }
        let mut last = self.last_thread;
        let mut sorted = self.sorted;
        let c = &self.cols;
        for i in start..c.len() {
            let t = c.thread[i];
            let flags = c.flags[i];
            if AccessKind::from_code(flags & 0x1f).is_none()
                || (flags >> 5) as usize >= MemSpace::ALL.len()
            {
                return Err((i - start, BuildError::BadFlags { flags }));
            }
            self.check_row(t, c.inst[i], c.size[i], flags & 0x1f == barrier)
                .map_err(|e| (i - start, e))?;
            sorted &= t >= last;
            last = t;
        }
        self.sorted = sorted;
        self.last_thread = last;
        Ok(())
    }
    /// Numbers each access's dynamic instance within its thread and instruction, visiting the
    /// rows grouped by thread in row order (per-thread kernels are grouped already).
    fn number_dyn_instances(&mut self) {
        let c = &mut self.cols;
        let grouped: Option<Vec<u32>> = (self.order == Order::Issued).then(|| {
            if self.threads > 2 * c.len() as u64 + 1024 {
                // Few rows in a large grid: a stable sort of the row indices by thread.
                let mut perm: Vec<u32> = (0..c.len() as u32).collect();
                perm.sort_by_key(|&r| c.thread[r as usize]);
                return perm;
            }
            rows_by_thread(&c.thread, &thread_starts(&c.thread, self.threads as usize))
        });
        let barrier = AccessKind::Barrier.code();
        // Counts per instruction of the current thread, and the instructions counted.
        let mut count = vec![0u32; self.instructions.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut thread = None;
        for k in 0..c.len() {
            let row = grouped.as_ref().map_or(k, |p| p[k] as usize);
            if thread != Some(c.thread[row]) {
                for &i in &touched {
                    count[i as usize] = 0;
                }
                touched.clear();
                thread = Some(c.thread[row]);
            }
            if c.flags[row] & 0x1f == barrier {
                continue;
            }
            let inst = c.inst[row];
            let Some(n) = count.get_mut(inst as usize) else {
                continue; // not reached: pushed rows name declared instructions
            };
            if *n == 0 {
                touched.push(inst);
            }
            c.dyn_inst[row] = *n;
            *n += 1;
        }
    }
    /// The kernel so far without its rows (name, shape, order, instructions, source facts).
    pub fn header(&self) -> Kernel {
        Kernel::without_rows(
            &self.name,
            self.grid,
            self.block,
            self.order,
            &self.instructions,
            &self.info,
        )
    }
    /// Moves the rows pushed so far into `into` (replacing what it held), for a producer that
    /// hands a kernel over a CTA at a time and keeps none of it. The rows are as pushed:
    /// nothing is sorted or numbered (see [`Self::finish`]).
    pub fn take_rows(&mut self, into: &mut Columns) {
        into.clear();
        std::mem::swap(&mut self.cols, into);
    }
    /// Finishes the kernel: per-thread kernels are stably grouped by thread.
    pub fn finish(mut self) -> Kernel {
        let mut cta_starts = Vec::new();
        if self.order != Order::Issued {
            let tpb = self.block.count().max(1);
            if self.sorted {
                // Rows in thread order already: each CTA's first row by a binary search.
                let t = &self.cols.thread;
                cta_starts = (0..=self.grid.count())
                    .map(|c| t.partition_point(|&t| (t as u64) < c * tpb) as u32)
                    .collect();
            } else {
                let counts = thread_starts(&self.cols.thread, self.threads as usize);
                let perm = rows_by_thread(&self.cols.thread, &counts);
                self.cols.permute(&perm);
                cta_starts = counts.iter().step_by(tpb as usize).copied().collect();
            }
        }
        if self.number_dyn {
            self.number_dyn_instances();
        }
        self.cols.shrink_to_fit();
        Kernel {
            name: self.name,
            grid: self.grid,
            block: self.block,
            order: self.order,
            instructions: self.instructions,
            info: self.info,
            cols: self.cols,
            cta_starts,
        }
    }
}
