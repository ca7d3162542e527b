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
    /// Global loads and the groups of them that can be in flight together, from the
    /// registers an Accel-Sim trace names (zero when unknown; not kept by our formats).
    #[serde(default)]
    pub load_groups: LoadGroups,
}

/// The attribute name under which our formats keep [`KernelInfo::load_groups`].
pub const LOAD_GROUPS_ATTRIBUTE: &str = "warpscope.load-groups";

/// Global loads and their groups (see `trace/accelsim/parse.rs`, `group_loads`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadGroups {
    pub loads: u64,
    pub groups: u64,
}

impl KernelInfo {
    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
            && self.cta_sm.is_empty()
            && self.warp_instructions.is_empty()
            && self.opcodes.is_empty()
            && self.load_groups.groups == 0
    }

    /// The attributes our formats write: the source's, then [`KernelInfo::load_groups`] as the
    /// attribute [`LOAD_GROUPS_ATTRIBUTE`] (`LOADS GROUPS`) when known, so that files stay
    /// readable by earlier versions.
    pub fn attributes_to_write(&self) -> Vec<(String, String)> {
        let mut a = self.attributes.clone();
        let g = self.load_groups;
        if g.groups > 0 {
            a.push((
                LOAD_GROUPS_ATTRIBUTE.into(),
                format!("{} {}", g.loads, g.groups),
            ));
        }
        a
    }

    /// Reads back an attribute our formats wrote: `true` when `key` was
    /// [`LOAD_GROUPS_ATTRIBUTE`] with a valid value (then kept in `load_groups`, not as an
    /// attribute).
    pub fn read_special_attribute(&mut self, key: &str, value: &str) -> bool {
        if key != LOAD_GROUPS_ATTRIBUTE {
            return false;
        }
        let mut f = value.split_whitespace().map(str::parse::<u64>);
        match (f.next(), f.next(), f.next()) {
            (Some(Ok(loads)), Some(Ok(groups)), None) => {
                self.load_groups = LoadGroups { loads, groups };
                true
            }
            _ => false,
        }
    }

    /// Independent loads per thread (Dasgupta 2011 §3.2.1.3): loads per group, where the
    /// trace said.
    pub fn independent_loads(&self) -> Option<f64> {
        let g = self.load_groups;
        (g.groups > 0).then(|| g.loads as f64 / g.groups as f64)
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
    let most = r.saturating_mul(4);
    if ctas > most.max(1 << 20) || (order != Order::Issued && threads > most.max(1 << 24)) {
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

/// Builds a [`Kernel`] row by row, validating each access.
#[derive(Clone, Debug)]
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

mod builder;
mod columns;
mod kernel;
mod parts;
pub use parts::{KernelHeader, KernelParts, PartsError};

#[cfg(test)]
mod tests;
