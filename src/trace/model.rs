//! The trace data model: kernels of accesses held in compact columns.
//!
//! A [`Trace`] is a sequence of kernel launches. Each [`Kernel`] stores its accesses as a
//! struct of arrays (23 bytes per access, no per-access heap objects) so that traces of
//! 10^8 accesses fit in memory and the scheduler's hot loops walk contiguous data.
//!
//! Two orderings exist: per-thread program order with no global order ([`Order::PerThread`],
//! Crawford 2014 and Nugteren et al. 2014, our generators) and an order already fixed by the source
//! ([`Order::Issued`], e.g. Dinero traces, which are replayed in file order).

use super::memory;
use serde::{Deserialize, Serialize};

/// A 3-D extent or index (grid, block, CTA id, thread index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }
    /// A 1-D extent.
    pub const fn x(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
    /// Number of elements in this extent (saturating: `u64::MAX` means "too many").
    pub fn count(&self) -> u64 {
        (self.x as u64)
            .saturating_mul(self.y as u64)
            .saturating_mul(self.z as u64)
    }
    /// Linear index of `idx` inside this extent, x fastest (CUDA order).
    pub fn linear(&self, idx: Dim3) -> u64 {
        idx.x as u64 + self.x as u64 * (idx.y as u64 + self.y as u64 * idx.z as u64)
    }
    /// Inverse of [`Dim3::linear`].
    pub fn from_linear(&self, linear: u64) -> Dim3 {
        let x = self.x.max(1) as u64;
        let y = self.y.max(1) as u64;
        Dim3 {
            x: (linear % x) as u32,
            y: ((linear / x) % y) as u32,
            z: (linear / (x * y)) as u32,
        }
    }
    /// The smallest extent holding index `max` (`None` when a side would exceed `u32`).
    pub fn holding(max: Dim3) -> Option<Dim3> {
        Some(Dim3::new(
            max.x.checked_add(1)?,
            max.y.checked_add(1)?,
            max.z.checked_add(1)?,
        ))
    }
    /// True when `idx` lies inside this extent.
    pub fn contains(&self, idx: Dim3) -> bool {
        idx.x < self.x && idx.y < self.y && idx.z < self.z
    }
}

impl std::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{},{}", self.x, self.y, self.z)
    }
}

/// The read-modify-write operation of an atomic access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    Inc,
    Dec,
    Exch,
    Cas,
    And,
    Or,
    Xor,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 11] = [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::Inc,
        AtomicOp::Dec,
        AtomicOp::Exch,
        AtomicOp::Cas,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::Inc => "inc",
            AtomicOp::Dec => "dec",
            AtomicOp::Exch => "exch",
            AtomicOp::Cas => "cas",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == s)
    }
}

/// What an entry of a thread's stream does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Load,
    Store,
    Atomic(AtomicOp),
    /// A CTA-wide barrier (`__syncthreads`): not a memory access, an event in the stream.
    Barrier,
}

impl AccessKind {
    /// Stores and atomics write memory.
    pub fn is_write(self) -> bool {
        matches!(self, AccessKind::Store | AccessKind::Atomic(_))
    }
    pub(crate) fn code(self) -> u8 {
        match self {
            AccessKind::Load => 0,
            AccessKind::Store => 1,
            AccessKind::Barrier => 2,
            AccessKind::Atomic(op) => 16 + op as u8,
        }
    }
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::Barrier),
            16..=26 => Some(AccessKind::Atomic(AtomicOp::ALL[(code - 16) as usize])),
            _ => None,
        }
    }
    /// Short token used by the text format and reports: `ld`, `st`, `atom.add`, `bar`.
    pub fn token(self) -> String {
        match self {
            AccessKind::Load => "ld".into(),
            AccessKind::Store => "st".into(),
            AccessKind::Barrier => "bar".into(),
            AccessKind::Atomic(op) => format!("atom.{}", op.name()),
        }
    }
    pub fn from_token(s: &str) -> Option<Self> {
        match s {
            "ld" | "load" => Some(AccessKind::Load),
            "st" | "store" => Some(AccessKind::Store),
            "bar" | "barrier" => Some(AccessKind::Barrier),
            _ => s
                .strip_prefix("atom.")
                .and_then(AtomicOp::from_name)
                .map(AccessKind::Atomic),
        }
    }
}

/// The memory space an access goes to. Only global and local accesses reach the L1 model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemSpace {
    #[default]
    Global,
    Local,
    Shared,
    Constant,
    Texture,
}

impl MemSpace {
    pub const ALL: [MemSpace; 5] = [
        MemSpace::Global,
        MemSpace::Local,
        MemSpace::Shared,
        MemSpace::Constant,
        MemSpace::Texture,
    ];
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Global => "global",
            MemSpace::Local => "local",
            MemSpace::Shared => "shared",
            MemSpace::Constant => "const",
            MemSpace::Texture => "tex",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
    /// Whether accesses to this space go through the L1 data cache.
    pub fn reaches_l1(self) -> bool {
        matches!(self, MemSpace::Global | MemSpace::Local)
    }
}

/// One access (or barrier) of one thread, as seen by users of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Linear thread id in the grid: `cta_linear * threads_per_cta + thread_linear`.
    pub thread: u32,
    /// Instruction id, an index into [`Kernel::instructions`]; ids follow program order.
    pub inst: u32,
    /// Dynamic instance: loop snapshot rank or per-thread occurrence count.
    pub dyn_inst: u32,
    pub addr: u64,
    pub size: u16,
    pub kind: AccessKind,
    pub space: MemSpace,
}

impl Access {
    /// A CTA barrier in `thread`'s stream.
    pub fn barrier(thread: u32) -> Self {
        Access {
            thread,
            inst: 0,
            dyn_inst: 0,
            addr: 0,
            size: 0,
            kind: AccessKind::Barrier,
            space: MemSpace::Global,
        }
    }
}

/// A static instruction: a name (or PC) shown in reports, and the source line it was
/// compiled from where the trace says (Accel-Sim traces taken with `TRACE_LINEINFO=1` of a
/// binary built with `nvcc -lineinfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instruction {
    pub name: String,
    pub pc: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// How the accesses of a kernel are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Only the order within each thread is meaningful; the scheduler decides the rest.
    PerThread,
    /// The rows are already in issue order (e.g. a Dinero trace); replayed as they are.
    Issued,
    /// Warp-level traces (Accel-Sim): only the order within each warp is meaningful, and a
    /// warp instruction is the rows of a warp's threads with the same dynamic instance (the
    /// instruction's position in the warp's stream). The scheduler decides the interleaving.
    #[serde(rename = "warp")]
    PerWarp,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::PerThread => "thread",
            Order::Issued => "issued",
            Order::PerWarp => "warp",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "thread" => Some(Order::PerThread),
            "issued" => Some(Order::Issued),
            "warp" => Some(Order::PerWarp),
            _ => None,
        }
    }
    /// The key that orders one thread's candidate rows within a warp: (instruction, instance)
    /// for per-thread traces (min-PC reconvergence), the instance alone for warp-level ones.
    #[inline]
    pub fn warp_key(self, inst: u32, dyn_inst: u32) -> u64 {
        match self {
            Order::PerWarp => dyn_inst as u64,
            _ => ((inst as u64) << 32) | dyn_inst as u64,
        }
    }
}

/// Instructions a warp executed, counting every opcode (not only memory ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarpInstructions {
    /// Linear CTA id.
    pub cta: u32,
    /// Warp index within the CTA.
    pub warp: u32,
    pub count: u64,
}

/// What an importer learned about a kernel beyond its accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// Header attributes of the source trace in file order (e.g. Accel-Sim's `nregs`, `shmem`).
    pub attributes: Vec<(String, String)>,
    /// The SM each CTA ran on, indexed by linear CTA id; empty when the trace does not say.
    pub cta_sm: Vec<u32>,
    /// Executed instructions per warp (all opcodes), for analytical models; empty when unknown.
    pub warp_instructions: Vec<WarpInstructions>,
    /// Executed warp instructions per opcode, sorted by opcode; empty when unknown.
    pub opcodes: Vec<(String, u64)>,
}

impl KernelInfo {
    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
            && self.cta_sm.is_empty()
            && self.warp_instructions.is_empty()
            && self.opcodes.is_empty()
    }
    /// The value of a header attribute.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The columns of a kernel's accesses (struct of arrays, 23 bytes a row).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub addr: Vec<u64>,
    pub thread: Vec<u32>,
    pub inst: Vec<u32>,
    pub dyn_inst: Vec<u32>,
    pub size: Vec<u16>,
    /// Kind code in the low 5 bits, memory space in the high 3 bits.
    pub flags: Vec<u8>,
}

impl Columns {
    pub fn len(&self) -> usize {
        self.addr.len()
    }
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty()
    }
    fn reserve_exact(&mut self, n: usize) {
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
    fn truncate(&mut self, n: usize) {
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
    fn shrink_to_fit(&mut self) {
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
    fn permute(&mut self, perm: &[u32]) {
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

/// Bit `k` is set when `k` is the code of an access kind ([`AccessKind::from_code`]).
const VALID_KINDS: u32 = 0b111 | (((1u32 << AtomicOp::ALL.len()) - 1) << 16);

pub(crate) fn pack_flags(kind: AccessKind, space: MemSpace) -> u8 {
    kind.code() | ((space as u8) << 5)
}

pub(crate) fn unpack_flags(flags: u8) -> (AccessKind, MemSpace) {
    let kind = AccessKind::from_code(flags & 0x1f).unwrap_or(AccessKind::Load);
    let space = MemSpace::ALL
        .get((flags >> 5) as usize)
        .copied()
        .unwrap_or_default();
    (kind, space)
}

/// One kernel launch (one superstep).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub order: Order,
    pub instructions: Vec<Instruction>,
    /// Source facts beyond the accesses (SM of each CTA, instruction counts, header).
    pub info: KernelInfo,
    cols: Columns,
    /// For [`Order::PerThread`]: rows of CTA `c` are `cta_starts[c]..cta_starts[c+1]`, grouped
    /// by thread in increasing order (4 bytes per CTA, not per thread, to keep a trace at
    /// under 24 bytes an access).
    cta_starts: Vec<u32>,
}

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
        Kernel::without_rows(
            &self.name,
            self.grid,
            self.block,
            self.order,
            &self.instructions,
            &self.info,
        )
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
        let (kind, space) = unpack_flags(self.cols.flags[i]);
        Access {
            thread: self.cols.thread[i],
            inst: self.cols.inst[i],
            dyn_inst: self.cols.dyn_inst[i],
            addr: self.cols.addr[i],
            size: self.cols.size[i],
            kind,
            space,
        }
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

/// A sequence of kernel launches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub kernels: Vec<Kernel>,
}

impl Trace {
    pub fn total_accesses(&self) -> usize {
        self.kernels.iter().map(Kernel::len).sum()
    }
    pub fn heap_bytes(&self) -> usize {
        self.kernels.iter().map(Kernel::heap_bytes).sum()
    }
}

/// Why a kernel could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BuildError {
    #[error("thread {thread} is outside the grid ({threads} threads)")]
    ThreadOutOfRange { thread: u64, threads: u64 },
    #[error("instruction id {inst} is not declared ({count} instructions)")]
    UnknownInstruction { inst: u32, count: usize },
    #[error("grid and block must be non-empty and hold at most 2^32 threads")]
    BadShape,
    #[error("access size must be at least 1 byte")]
    ZeroSize,
    #[error("invalid kind/space flags {flags:#04x}")]
    BadFlags { flags: u8 },
    #[error("a kernel holds at most 2^32 - 1 rows")]
    TooManyRows,
    #[error("grid {grid} x block {block} declares {threads} threads in {ctas} CTAs for only {rows} accesses: too sparse to model (per-thread and per-CTA state would not fit in memory)")]
    TooSparse {
        grid: Dim3,
        block: Dim3,
        threads: u64,
        ctas: u64,
        rows: usize,
    },
}

/// Refuses a shape whose per-CTA (and, unless issued, per-thread) state would dwarf its `rows`
/// accesses: more than 2^20 CTAs or 2^24 threads and over four per access.
pub fn check_density(grid: Dim3, block: Dim3, rows: usize, order: Order) -> Result<(), BuildError> {
    let r = rows as u64;
    let ctas = grid.count();
    let threads = ctas.saturating_mul(block.count());
    if ctas > (4 * r).max(1 << 20) || (order != Order::Issued && threads > (4 * r).max(1 << 24)) {
        return Err(BuildError::TooSparse {
            grid,
            block,
            threads,
            ctas,
            rows,
        });
    }
    Ok(())
}

/// Where each of `n` threads' rows start when the rows are grouped by thread (`n + 1`
/// entries, the last one the number of rows).
fn thread_starts(thread: &[u32], n: usize) -> Vec<u32> {
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
fn rows_by_thread(thread: &[u32], starts: &[u32]) -> Vec<u32> {
    let mut next = starts.to_vec();
    let mut perm = vec![0u32; thread.len()];
    for (row, &t) in thread.iter().enumerate() {
        let slot = &mut next[t as usize];
        perm[*slot as usize] = row as u32;
        *slot += 1;
    }
    perm
}

/// Builds a [`Kernel`] row by row, validating each access.
#[derive(Debug)]
pub struct KernelBuilder {
    name: String,
    grid: Dim3,
    block: Dim3,
    order: Order,
    instructions: Vec<Instruction>,
    inst_index: rustc_hash::FxHashMap<String, u32>,
    info: KernelInfo,
    cols: Columns,
    threads: u64,
    sorted: bool,
    last_thread: u32,
    /// Dynamic instances are numbered at [`KernelBuilder::finish`] (see
    /// [`KernelBuilder::number_instances`]).
    number_dyn: bool,
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
            let counts = thread_starts(&self.cols.thread, self.threads as usize);
            if !self.sorted {
                let perm = rows_by_thread(&self.cols.thread, &counts);
                self.cols.permute(&perm);
            }
            let tpb = (self.block.count() as usize).max(1);
            cta_starts = counts.iter().step_by(tpb).copied().collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_valid_kind_mask_matches_the_kind_codes() {
        for code in 0..32u8 {
            assert_eq!(
                (VALID_KINDS >> code) & 1 == 1,
                AccessKind::from_code(code).is_some(),
                "code {code}"
            );
        }
    }

    #[test]
    fn flags_round_trip_every_kind_and_space() {
        let mut kinds = vec![AccessKind::Load, AccessKind::Store, AccessKind::Barrier];
        kinds.extend(AtomicOp::ALL.map(AccessKind::Atomic));
        for k in kinds {
            for s in MemSpace::ALL {
                assert_eq!(unpack_flags(pack_flags(k, s)), (k, s));
            }
            assert_eq!(AccessKind::from_token(&k.token()), Some(k));
        }
    }

    #[test]
    fn finish_groups_rows_by_thread_stably() {
        let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(3), Order::PerThread).unwrap();
        let i = b.instruction("a", None);
        for (t, addr) in [(2, 1), (0, 2), (2, 3), (1, 4), (0, 5)] {
            b.push(Access {
                thread: t,
                inst: i,
                dyn_inst: 0,
                addr,
                size: 4,
                kind: AccessKind::Load,
                space: MemSpace::Global,
            })
            .unwrap();
        }
        let k = b.finish();
        let addrs: Vec<u64> = k.accesses().map(|a| a.addr).collect();
        assert_eq!(addrs, vec![2, 5, 4, 1, 3]);
        assert_eq!(k.thread_rows(0), 0..2);
        assert_eq!(k.thread_rows(2), 3..5);
    }

    #[test]
    fn storage_is_at_most_24_bytes_per_access() {
        let n = 100_000;
        let mut b = KernelBuilder::new("k", Dim3::x(100), Dim3::x(1000), Order::PerThread).unwrap();
        let i = b.instruction("a", None);
        b.reserve(n);
        for r in 0..n {
            b.push(Access {
                thread: r as u32,
                inst: i,
                dyn_inst: 0,
                addr: r as u64 * 4,
                size: 4,
                kind: AccessKind::Load,
                space: MemSpace::Global,
            })
            .unwrap();
        }
        let k = b.finish();
        let per_access = (k.columns().heap_bytes()) as f64 / n as f64;
        assert!(per_access <= 24.0, "{per_access} bytes per access");
        assert_eq!(std::mem::size_of::<u64>() + 3 * 4 + 2 + 1, 23);
    }

    #[test]
    fn builder_rejects_bad_rows() {
        let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(2), Order::PerThread).unwrap();
        let a = Access {
            thread: 5,
            inst: 0,
            dyn_inst: 0,
            addr: 0,
            size: 4,
            kind: AccessKind::Load,
            space: MemSpace::Global,
        };
        assert!(matches!(
            b.push(a),
            Err(BuildError::ThreadOutOfRange { .. })
        ));
        assert!(matches!(
            b.push(Access { thread: 0, ..a }),
            Err(BuildError::UnknownInstruction { .. })
        ));
        assert!(KernelBuilder::new("k", Dim3::new(0, 1, 1), Dim3::x(2), Order::PerThread).is_err());
    }
}
