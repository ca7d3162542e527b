//! Inter-CTA communication across kernel launches (Rieber 2017, ch. 4 and 6).
//!
//! CTAs exchange data reliably only through global memory across kernel boundaries: bytes
//! written by one CTA in one launch and read by a CTA in a later launch. [`analyze`] tracks the
//! last writer (launch, CTA) of every written byte as ranges ([`writers`]) and replays the
//! trace launch by launch:
//! - a read of a byte last written in an earlier launch is **communication** from that writer
//!   to the reader (the diagonal, same CTA id in both launches, is kept);
//! - a read of a byte written in the same launch by another CTA is **intra-launch sharing**,
//!   not reliable under CUDA's memory model, reported apart;
//! - atomics are a read, then a write; loads, stores and atomics to global memory count, and
//!   texture loads (they read global memory); other spaces are private or host-written.
//!
//! Volumes of communication are sets: a transfer from (writer launch, writer CTA) to
//! (reader launch, reader CTA) is the number of distinct bytes the reader read that the
//! writer wrote, however many times it read them (Rieber 2017 fig. 4.1: the overlap of a write
//! set and a read set). CTA ids are serialized x fastest, then y, then z.
//!
//! Within a launch the trace order decides which write a read sees (per-thread order for
//! traces without issue order). The full definitions are in `docs/communication.md`.

mod writers;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::trace::memory;
use crate::trace::{AccessKind, Columns, Dim3, MemSpace, Trace};
use writers::{Retired, Writers};

/// One transfer: the distinct bytes `reader_cta` read in `reader_launch` whose last write
/// was by `writer_cta` in `writer_launch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Transfer {
    pub writer_launch: u32,
    pub reader_launch: u32,
    pub writer_cta: u32,
    pub reader_cta: u32,
    pub bytes: u64,
}

/// Writer CTA, reader CTA, bytes: transfers summed over launch pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Pair(pub u32, pub u32, pub u64);

/// What one launch did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchComm {
    pub name: String,
    pub grid: Dim3,
    /// Bytes loaded (loads and atomics, every access counted).
    pub read_bytes: u64,
    /// Bytes stored (stores and atomics, every access counted).
    pub write_bytes: u64,
    /// Communication into this launch: the sum of its transfers as reader.
    pub communicated_read_bytes: u64,
    /// Bytes this launch wrote that a later launch read (each written byte once).
    pub communicated_write_bytes: u64,
    /// Distinct (reader CTA, writer CTA, byte) reads of bytes another CTA wrote in this launch.
    pub shared_bytes: u64,
    pub in_degree_mean: f64,
    pub in_degree_std: f64,
    pub out_degree_mean: f64,
    pub out_degree_std: f64,
    /// Per CTA of this launch: distinct writer CTAs (of any earlier launch) it read from.
    #[serde(skip)]
    pub in_degree: Vec<u32>,
    /// Per CTA of this launch: distinct reader CTAs (of any later launch) that read its writes.
    #[serde(skip)]
    pub out_degree: Vec<u32>,
}

/// Bytes crossing a cut of the CTA grid into two halves along one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bisection {
    /// False when no launch has more than one CTA along this dimension (nothing to cut).
    pub cuttable: bool,
    pub bytes: u64,
    /// `bytes` over all communicated bytes (0 when nothing is communicated).
    pub relative: f64,
}

/// A histogram of byte strides: `(stride, count)`, most frequent first.
pub type Strides = Vec<(i64, u64)>;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommReport {
    pub write_bytes: u64,
    pub read_bytes: u64,
    /// The sum of all transfers.
    pub communicated_bytes: u64,
    /// Written bytes that a later launch read (each written byte once).
    pub communicated_write_bytes: u64,
    /// `communicated_write_bytes / write_bytes` (0 without writes).
    pub communication_fraction: f64,
    pub shared_bytes: u64,
    /// The most CTAs any launch has: the length of the per-CTA lists.
    pub ctas: u32,
    /// Sorted by launch pair, then writer, then reader.
    pub transfers: Vec<Transfer>,
    /// Sorted by writer, then reader.
    pub pairs: Vec<Pair>,
    /// Per CTA id: distinct writer CTA ids it received from, over all launches.
    pub in_degree: Vec<u32>,
    /// Per CTA id: distinct reader CTA ids it sent to, over all launches.
    pub out_degree: Vec<u32>,
    /// Along x, y and z.
    pub bisection: [Bisection; 3],
    /// Bytes by superstep distance: index `d` is reads `d + 1` launches after the write.
    pub distance: Vec<u64>,
    /// Strides between consecutive communicated loads of a CTA in a launch.
    pub load_strides: Strides,
    /// Strides between consecutive communicated stores of a CTA in a launch.
    pub store_strides: Strides,
    /// How far the stride counts may be over the true counts, loads and stores: 0 (exact)
    /// unless more than [`STRIDE_SLOTS`] distinct strides were seen (see [`StrideCounts`]).
    pub stride_count_error: [u64; 2],
    pub per_launch: Vec<LaunchComm>,
}

/// What a density map counts per (writer CTA, reader CTA) cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Bytes,
    /// Number of transfers (launch pairs) between the two CTAs.
    Transfers,
}

impl CommReport {
    /// Cells `(writer CTA, reader CTA, value)` of the density map over all launch pairs, or
    /// for one `(writer launch, reader launch)` pair; sorted by writer, then reader.
    pub fn density(&self, launches: Option<(u32, u32)>, measure: Measure) -> Vec<Pair> {
        let mut cells: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        for t in &self.transfers {
            if launches.is_some_and(|l| l != (t.writer_launch, t.reader_launch)) {
                continue;
            }
            *cells.entry((t.writer_cta, t.reader_cta)).or_default() += match measure {
                Measure::Bytes => t.bytes,
                Measure::Transfers => 1,
            };
        }
        let mut v: Vec<Pair> = cells.into_iter().map(|((w, r), n)| Pair(w, r, n)).collect();
        v.sort_unstable();
        v
    }

    /// The CDF of transfer sizes over all launch pairs or one `(writer launch, reader launch)`
    /// pair: `(bytes, fraction of transfers of at most that size)`, one point per distinct size.
    pub fn transfer_cdf(&self, launches: Option<(u32, u32)>) -> Vec<(u64, f64)> {
        let mut sizes: Vec<u64> = self
            .transfers
            .iter()
            .filter(|t| launches.is_none_or(|l| l == (t.writer_launch, t.reader_launch)))
            .map(|t| t.bytes)
            .collect();
        sizes.sort_unstable();
        let n = sizes.len() as f64;
        let mut out: Vec<(u64, f64)> = Vec::new();
        for (i, s) in sizes.iter().enumerate() {
            let f = (i + 1) as f64 / n;
            match out.last_mut() {
                Some(l) if l.0 == *s => l.1 = f,
                _ => out.push((*s, f)),
            }
        }
        out
    }

    /// The launch pairs that have transfers, in order.
    pub fn launch_pairs(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self
            .transfers
            .iter()
            .map(|t| (t.writer_launch, t.reader_launch))
            .collect();
        v.dedup();
        v
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommError {
    #[error("cancelled")]
    Cancelled,
    /// The analysis numbers every (launch, CTA) pair with 32 bits.
    #[error("the launches have {0} CTAs in all; the analysis handles at most 4294967295")]
    TooManyCtas(u64),
}

/// The most distinct strides kept per histogram; the rest are summed into none.
pub const MAX_STRIDES: usize = 64;

/// How often `progress` is called, in accesses.
const PROGRESS_EVERY: usize = 1 << 16;

/// Analyzes the communication of `trace`. `progress(done, total)` is called every few tens of
/// thousands of accesses (two passes: `total` is twice the accesses); returning `false`
/// cancels.
pub fn analyze(
    trace: &Trace,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<CommReport, CommError> {
    let total = 2 * trace.total_accesses() as u64;
    let mut done = 0u64;
    // Writer numbers: CTA `c` of launch `l` is `first[l] + c`, so that every writer of an
    // earlier launch has a smaller number.
    let mut first = Vec::with_capacity(trace.kernels.len() + 1);
    let mut n = 0u64;
    for k in &trace.kernels {
        first.push(n as u32);
        n += u64::from(k.num_ctas());
        if n > u64::from(u32::MAX) {
            return Err(CommError::TooManyCtas(
                trace.kernels.iter().map(|k| u64::from(k.num_ctas())).sum(),
            ));
        }
    }
    first.push(n as u32);
    let numbers = Numbers(first);
    let launch_of = LaunchOf::new(&numbers.0);
    let mut writers = Writers::default();
    let classes = counted_table();
    // Per reader launch, its transfers as `(writer, reader, bytes)` sorted by writer, then
    // reader (each key once: a launch's pieces are drained once), launch after launch from
    // `into_at[l]`.
    let mut into: Vec<Row> = Vec::new();
    let mut into_at: Vec<usize> = vec![0];
    // One launch's rows in reader order, reused.
    let mut rows: Vec<Row> = Vec::new();
    let mut retired: Vec<Retired> = Vec::new();
    let mut per_launch = Vec::with_capacity(trace.kernels.len());
    let mut load_strides = StrideCounts::default();
    let mut comm = Pieces::default();
    let mut shared = Pieces::default();
    // Stamps per CTA id, for counting distinct partners.
    let mut seen = vec![
        0u64;
        trace
            .kernels
            .iter()
            .map(|k| k.num_ctas())
            .max()
            .unwrap_or(0) as usize
    ];
    let mut stamp = 0u64;

    for (li, k) in trace.kernels.iter().enumerate() {
        let base = numbers.0[li];
        let ctas = k.num_ctas();
        let cta_of = CtaOf::new(k);
        let cols = k.columns();
        let mut last_load = vec![u64::MAX; ctas as usize];
        let (mut read_bytes, mut write_bytes) = (0u64, 0u64);
        each_access(cols, done, total, progress, |flag, addr, thread, size| {
            let class = classes[flag as usize];
            if class == 0 {
                return;
            }
            let size = u64::from(size);
            let cta = cta_of.of(thread);
            if cta >= ctas {
                return;
            }
            let me = base + cta;
            if class & 1 != 0 {
                read_bytes += size;
                let mut any = false;
                writers.read(base, me, addr, size, |start, end, writer| {
                    let to = if writer < base {
                        any = true;
                        &mut comm
                    } else {
                        &mut shared
                    };
                    to.push(cta, Piece::new(writer, start, end));
                });
                if any {
                    if let Some(last) = last_load.get_mut(cta as usize) {
                        if *last != u64::MAX {
                            load_strides.add(stride(*last, addr));
                        }
                        *last = addr;
                    }
                }
            }
            if class & 2 != 0 {
                write_bytes += size;
                writers.write(me, addr, size, |r| memory::push(&mut retired, r));
            }
        })?;
        done += cols.len() as u64;
        let mut communicated_read_bytes = 0;
        rows.clear();
        let mut in_degree = vec![0; ctas as usize];
        // Distinct writer CTA ids per reader: a writer CTA id is counted when its stamp is
        // not yet the reader's.
        let mut reader_at = None;
        comm.drain(|reader, writer, bytes| {
            communicated_read_bytes += bytes;
            rows.push((writer, reader, bytes));
            if reader_at != Some(reader) {
                reader_at = Some(reader);
                stamp += 1;
            }
            let wc = writer - numbers.0[launch_of.of(writer)];
            if let (Some(s), Some(d)) = (
                seen.get_mut(wc as usize),
                in_degree.get_mut(reader as usize),
            ) {
                // Added, not branched on, as in `Pairs::add`.
                *d += u32::from(*s != stamp);
                *s = stamp;
            }
        });
        by_writer(&rows, &mut into);
        into_at.push(into.len());
        let mut shared_bytes = 0;
        shared.drain(|_, _, bytes| shared_bytes += bytes);
        per_launch.push(LaunchComm {
            name: k.name.clone(),
            grid: k.grid,
            read_bytes,
            write_bytes,
            communicated_read_bytes,
            communicated_write_bytes: 0,
            shared_bytes,
            in_degree_mean: 0.0,
            in_degree_std: 0.0,
            out_degree_mean: 0.0,
            out_degree_std: 0.0,
            in_degree,
            out_degree: vec![0; ctas as usize],
        });
    }
    writers.finish(|r| memory::push(&mut retired, r));

    // Communicated write ranges sorted by writer (so by launch, then CTA) and address (those
    // of one writer never overlap: a byte is retired once per write, and a launch's writes
    // are all before any later read), then split by launch.
    match counting_sort(&retired, |r| r.writer) {
        Some(sorted) => {
            retired = sorted;
            for group in retired.chunk_by_mut(|a, b| a.writer == b.writer) {
                group.sort_unstable_by_key(|r| r.start);
            }
        }
        None => retired.sort_unstable_by_key(|r| (r.writer, r.start)),
    }
    let mut by_launch: Vec<&[Retired]> = Vec::with_capacity(per_launch.len());
    let mut rest = &retired[..];
    for (l, pl) in per_launch.iter_mut().enumerate() {
        let n = rest.partition_point(|r| r.writer < numbers.0[l + 1]);
        let (mine, after) = rest.split_at(n);
        pl.communicated_write_bytes = mine.iter().map(|r| u64::from(r.len)).sum();
        by_launch.push(mine);
        rest = after;
    }
    let store_strides = store_strides(trace, &numbers, &by_launch, &mut done, total, progress)?;
    progress(total, total);

    let grids: Vec<Dim3> = trace.kernels.iter().map(|k| k.grid).collect();
    Ok(summarize(
        trace,
        in_order(&into, &into_at, &numbers, &grids),
        per_launch,
        load_strides,
        store_strides,
    ))
}

/// For a stable counting sort of `v` by a `u32` key: the smallest key and where the items of
/// each key (less the smallest) start. `None` when `v` is empty or the keys span more than a
/// few times the items (writer numbers and CTA ids are dense, so they seldom do).
fn key_starts<T>(v: &[T], key: &impl Fn(&T) -> u32) -> Option<(u32, Vec<usize>)> {
    let first = key(v.first()?);
    let (lo, hi) = v.iter().fold((first, first), |(lo, hi), x| {
        (lo.min(key(x)), hi.max(key(x)))
    });
    let span = (hi - lo) as usize + 1;
    if span > 4 * v.len() + 1024 {
        return None;
    }
    let mut at = vec![0usize; span + 1];
    for x in v {
        at[(key(x) - lo) as usize + 1] += 1;
    }
    for i in 1..at.len() {
        at[i] += at[i - 1];
    }
    Some((lo, at))
}

/// `v` stably sorted by a `u32` key with a counting sort, or `None` as [`key_starts`].
fn counting_sort<T: Copy>(v: &[T], key: impl Fn(&T) -> u32) -> Option<Vec<T>> {
    let mut sorted = Vec::new();
    counting_sort_onto(v, key, &mut sorted).then_some(sorted)
}

/// Appends `v` stably sorted by a `u32` key (a counting sort) to `out`; `false`, appending
/// nothing, where [`key_starts`] declines.
fn counting_sort_onto<T: Copy>(v: &[T], key: impl Fn(&T) -> u32, out: &mut Vec<T>) -> bool {
    let (Some((lo, mut at)), Some(&fill)) = (key_starts(v, &key), v.first()) else {
        return false;
    };
    let from = out.len();
    memory::reserve(out, v.len());
    out.resize(from + v.len(), fill);
    let sorted = &mut out[from..];
    for x in v {
        let slot = &mut at[(key(x) - lo) as usize];
        sorted[*slot] = *x;
        *slot += 1;
    }
    true
}

/// The indices of `v` in a stable order by a `u32` key (a counting sort), or `None` as
/// [`key_starts`] or when an index would not fit in 32 bits.
fn counting_order<T>(v: &[T], key: impl Fn(&T) -> u32) -> Option<Vec<u32>> {
    u32::try_from(v.len()).ok()?;
    let (lo, mut at) = key_starts(v, &key)?;
    let mut order = memory::filled(0u32, v.len());
    for (i, x) in v.iter().enumerate() {
        let slot = &mut at[(key(x) - lo) as usize];
        order[*slot] = i as u32;
        *slot += 1;
    }
    Some(order)
}

/// A transfer into one reader launch: writer number, reader CTA, bytes.
type Row = (u32, u32, u64);

/// One reader launch's rows in reader order, sorted by writer, then reader, appended to `out`.
fn by_writer(rows: &[Row], out: &mut Vec<Row>) {
    if !counting_sort_onto(rows, |r| r.0, out) {
        let from = out.len();
        out.extend_from_slice(rows);
        out[from..].sort_unstable_by_key(|r| (r.0, r.1));
    }
}

/// The first writer number of each launch, and one past the last.
struct Numbers(Vec<u32>);

/// The launch of a writer number in a step or two: the launch at the start of each block of
/// `1 << shift` writer numbers, blocks no longer than the smallest launch (unless the table
/// would grow past [`LAUNCH_BLOCKS`]), so a block holds the start of few other launches.
struct LaunchOf<'a> {
    first: &'a [u32],
    shift: u32,
    at: Vec<usize>,
}

/// The most blocks [`LaunchOf`] keeps.
const LAUNCH_BLOCKS: u32 = 1 << 16;

impl<'a> LaunchOf<'a> {
    /// `first`: the first writer number of each launch, and the number past the last.
    fn new(first: &'a [u32]) -> Self {
        let smallest = first
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(1);
        let total = first.last().copied().unwrap_or(0);
        let mut shift = smallest.ilog2();
        while total >> shift > LAUNCH_BLOCKS {
            shift += 1;
        }
        let at = (0..=total >> shift)
            .map(|b| {
                first
                    .partition_point(|&f| f <= b << shift)
                    .saturating_sub(1)
            })
            .collect();
        LaunchOf { first, shift, at }
    }

    /// The launch whose writers include `writer` (the last launch with a first number at or
    /// below it).
    fn of(&self, writer: u32) -> usize {
        let mut l = self
            .at
            .get((writer >> self.shift) as usize)
            .copied()
            .unwrap_or(0);
        while self.first.get(l + 1).is_some_and(|&f| f <= writer) {
            l += 1;
        }
        l
    }
}

/// All transfers sorted by writer launch, then reader launch, writer and reader, from each
/// reader launch's rows sorted by writer (`rows[at[l]..at[l + 1]]` for launch `l`): for each
/// writer launch, the part of each later launch's rows that it wrote. Beside them, as they
/// are made, the bytes per superstep distance and the bytes crossing each dimension's
/// bisection (`grids`: each launch's grid).
fn in_order(rows: &[Row], at: &[usize], numbers: &Numbers, grids: &[Dim3]) -> Transfers {
    let into: Vec<&[Row]> = at.windows(2).map(|w| &rows[w[0]..w[1]]).collect();
    let mut out = memory::with_capacity(rows.len());
    let mut distance: Vec<u64> = Vec::new();
    let mut crossing = [0u64; 3];
    // How far each reader launch's rows have been taken.
    let mut taken = vec![0usize; into.len()];
    for (wl, w) in numbers.0.windows(2).enumerate() {
        let (first, next) = (w[0], w[1]);
        for (rl, (list, at)) in into.iter().zip(taken.iter_mut()).enumerate() {
            let n = list[*at..].iter().take_while(|r| r.0 < next).count();
            if n == 0 {
                continue;
            }
            let block = &list[*at..*at + n];
            *at += n;
            let d = rl.saturating_sub(wl + 1);
            if distance.len() <= d {
                distance.resize(d + 1, 0);
            }
            distance[d] += block.iter().map(|r| r.2).sum::<u64>();
            let (wg, rg) = (grids[wl], grids[rl]);
            // Both grids 1-D (as most are): only x has two halves.
            let flat = wg.y <= 1 && wg.z <= 1 && rg.y <= 1 && rg.z <= 1;
            out.extend(block.iter().map(|&(writer, reader, bytes)| {
                let writer_cta = writer - first;
                // Multiplied, not branched on: which transfers cross is as good as random.
                if flat {
                    let high = |c: u32, n: u32| u64::from(c) * 2 >= u64::from(n);
                    crossing[0] += bytes * u64::from(high(writer_cta, wg.x) != high(reader, rg.x));
                } else {
                    let (w, r) = (upper_halves(wg, writer_cta), upper_halves(rg, reader));
                    for (dim, c) in crossing.iter_mut().enumerate() {
                        *c += bytes * u64::from(w[dim] != r[dim]);
                    }
                }
                Transfer {
                    writer_launch: wl as u32,
                    reader_launch: rl as u32,
                    writer_cta,
                    reader_cta: reader,
                    bytes,
                }
            }));
        }
    }
    Transfers {
        transfers: out,
        distance,
        crossing,
    }
}

/// [`counted`] of every flags byte: bit 0 reads, bit 1 writes.
fn counted_table() -> [u8; 256] {
    std::array::from_fn(|f| match counted(f as u8) {
        Some((r, w)) => u8::from(r) | u8::from(w) << 1,
        None => 0,
    })
}

/// The CTA of a thread: a shift when the CTA size is a power of two, as it usually is.
#[derive(Clone, Copy)]
struct CtaOf {
    tpc: u32,
    shift: Option<u32>,
}

impl CtaOf {
    fn new(k: &crate::trace::Kernel) -> Self {
        let tpc = k.threads_per_cta().max(1);
        CtaOf {
            tpc,
            shift: tpc.is_power_of_two().then(|| tpc.trailing_zeros()),
        }
    }
    fn of(self, thread: u32) -> u32 {
        match self.shift {
            Some(s) => thread >> s,
            None => thread / self.tpc,
        }
    }
}

/// Whether an access with these flags is counted, and then whether it reads and writes.
fn counted(flags: u8) -> Option<(bool, bool)> {
    let (kind, space) = crate::trace::model_flags(flags);
    match (kind, space) {
        (AccessKind::Load, MemSpace::Global | MemSpace::Texture) => Some((true, false)),
        (AccessKind::Store, MemSpace::Global) => Some((false, true)),
        (AccessKind::Atomic(_), MemSpace::Global) => Some((true, true)),
        _ => None,
    }
}

/// Calls `f(flags, addr, thread, size)` for each access of `cols` in order, and `progress`
/// (with `done` plus the accesses walked) before every [`PROGRESS_EVERY`] of them: the
/// columns are walked in chunks of zipped slices, with no test per access.
fn each_access(
    cols: &Columns,
    done: u64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
    mut f: impl FnMut(u8, u64, u32, u16),
) -> Result<(), CommError> {
    let n = cols.len();
    let (flags, addrs, threads, sizes) = (
        &cols.flags[..n],
        &cols.addr[..n],
        &cols.thread[..n],
        &cols.size[..n],
    );
    for from in (0..n).step_by(PROGRESS_EVERY) {
        if !progress(done + from as u64, total) {
            return Err(CommError::Cancelled);
        }
        let to = n.min(from + PROGRESS_EVERY);
        for (((&flag, &addr), &thread), &size) in flags[from..to]
            .iter()
            .zip(&addrs[from..to])
            .zip(&threads[from..to])
            .zip(&sizes[from..to])
        {
            f(flag, addr, thread, size);
        }
    }
    Ok(())
}

fn stride(from: u64, to: u64) -> i64 {
    to.wrapping_sub(from) as i64
}

/// Second pass: strides between consecutive stores of a CTA that wrote communicated bytes.
/// `retired[l]`: launch `l`'s communicated write ranges, sorted by writer and address.
fn store_strides(
    trace: &Trace,
    numbers: &Numbers,
    retired: &[&[Retired]],
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<StrideCounts, CommError> {
    let mut hist = StrideCounts::default();
    let classes = counted_table();
    for ((l, k), ranges) in trace.kernels.iter().enumerate().zip(retired) {
        let cols = k.columns();
        if ranges.is_empty() {
            *done += cols.len() as u64;
            continue;
        }
        let cta_of = CtaOf::new(k);
        let ctas = k.num_ctas() as usize;
        let base = numbers.0[l];
        let mut last = vec![u64::MAX; ctas];
        // Where each CTA's ranges start, so that a store searches only its own CTA's ranges.
        let mut first = vec![0usize; ctas + 1];
        let mut j = 0;
        for (c, f) in first.iter_mut().enumerate() {
            while j < ranges.len() && ((ranges[j].writer - base) as usize) < c {
                j += 1;
            }
            *f = j;
        }
        each_access(cols, *done, total, progress, |flag, addr, thread, size| {
            if classes[flag as usize] & 2 == 0 {
                return;
            }
            let c = cta_of.of(thread) as usize;
            let end = addr.saturating_add(u64::from(size));
            let own = match (first.get(c), first.get(c + 1)) {
                (Some(&a), Some(&b)) => &ranges[a..b],
                _ => &[],
            };
            let j = own.partition_point(|r| r.end() <= addr);
            let hit = own.get(j).is_some_and(|r| r.start < end && addr < r.end());
            if !hit {
                return;
            }
            if let Some(l) = last.get_mut(c) {
                if *l != u64::MAX {
                    hist.add(stride(*l, addr));
                }
                *l = addr;
            }
        })?;
        *done += cols.len() as u64;
    }
    Ok(hist)
}

/// The number of distinct strides a histogram counts exactly.
pub const STRIDE_SLOTS: usize = 4096;

/// Slots of the probation list of [`StrideCounts`] (a power of two).
const PROBATION: usize = 4096;

/// Counts of strides in bounded memory (random accesses have as many distinct strides as
/// accesses). Exact while at most [`STRIDE_SLOTS`] distinct strides have been seen. Beyond, as
/// in Metwally et al.'s Space-Saving, a stride that is dropped raises `floor` to its count, and
/// a stride that enters starts from `floor`; a count is then never below the true count and at
/// most `floor` above it, so every stride more frequent than `floor` is kept:
/// - once the table has filled, a new stride waits on probation, a direct-mapped list of
///   [`PROBATION`] strides, and enters the table when it comes again while there; a stride
///   that takes its slot drops it. Random strides, seen once each, so cost a slot instead of a
///   table insertion (and, every so many insertions, an eviction).
/// - when a stride enters the full table, the strides with the lower half of the counts are
///   dropped.
///
/// A run of one stride (a CTA reading consecutive elements) is counted first and added at once
/// when another stride comes, which leaves the counts exactly as adding it one at a time would.
#[derive(Default)]
struct StrideCounts {
    counts: FxHashMap<i64, u64>,
    floor: u64,
    /// The latest stride and how many times in a row it came, not yet in `counts`.
    run: Option<(i64, u64)>,
    /// Strides on probation with their counts (0: an empty slot); allocated when the table
    /// fills.
    probation: Vec<(i64, u64)>,
}

impl StrideCounts {
    fn add(&mut self, s: i64) {
        match &mut self.run {
            Some((r, n)) if *r == s => *n += 1,
            run => {
                if let Some((r, n)) = run.replace((s, 1)) {
                    self.add_n(r, n);
                }
            }
        }
    }

    /// Adds `n` (at least 1) counts of `s`, as `n` single adds would.
    fn add_n(&mut self, s: i64, n: u64) {
        if let Some(c) = self.counts.get_mut(&s) {
            *c += n;
            return;
        }
        if self.probation.is_empty() {
            self.enter_early(s, n);
            return;
        }
        let h = (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PROBATION.trailing_zeros());
        let slot = &mut self.probation[h as usize];
        let count = if slot.1 != 0 && slot.0 == s {
            // Seen again on probation: it enters the table.
            slot.1 + n
        } else {
            // It takes the slot; with a second count at once it enters the table.
            if slot.1 != 0 {
                self.floor = self.floor.max(slot.1);
            }
            if n == 1 {
                *slot = (s, self.floor + 1);
                return;
            }
            self.floor + n
        };
        *slot = (0, 0);
        self.enter(s, count);
    }

    /// [`StrideCounts::add_n`] of a stride not counted before the table has filled: it
    /// enters the table, or, once the table is full, probation begins.
    #[cold]
    #[inline(never)]
    fn enter_early(&mut self, s: i64, n: u64) {
        if self.counts.len() < STRIDE_SLOTS {
            self.counts.insert(s, self.floor + n);
            return;
        }
        self.probation = vec![(0, 0); PROBATION];
        self.add_n(s, n);
    }

    /// Puts stride `s` into the full table with `count`, dropping the lower half of the
    /// counts when there is no room (apart from the hot path of [`StrideCounts::add_n`]).
    #[cold]
    #[inline(never)]
    fn enter(&mut self, s: i64, count: u64) {
        if self.counts.len() >= STRIDE_SLOTS {
            let mut v: Vec<u64> = self.counts.values().copied().collect();
            let (_, &mut cut, _) = v.select_nth_unstable(STRIDE_SLOTS / 2);
            self.counts.retain(|_, c| *c > cut);
            self.floor = self.floor.max(cut);
        }
        self.counts.insert(s, count);
    }

    /// The counts (of the table and of the strides on probation) and the floor, with the
    /// pending run added.
    fn settle(mut self) -> (FxHashMap<i64, u64>, u64) {
        if let Some((r, n)) = self.run.take() {
            self.add_n(r, n);
        }
        for &(s, c) in &self.probation {
            if c != 0 {
                self.counts.insert(s, c);
            }
        }
        (self.counts, self.floor)
    }
}

fn top_strides(h: FxHashMap<i64, u64>) -> Strides {
    let mut v: Strides = h.into_iter().collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(MAX_STRIDES);
    v
}

fn mean_std(v: &[u32]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = v
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n;
    (mean, var.sqrt())
}

/// The pairs (transfers summed over launch pairs, sorted by writer, then reader) and each
/// launch's out-degrees, from the transfers taken grouped by writer CTA, within a writer in
/// writer launch, reader launch, reader order. `ctas`: more than any CTA id.
fn pairs_and_out_degrees(
    transfers: &[Transfer],
    ctas: usize,
    per_launch: &mut [LaunchComm],
) -> Vec<Pair> {
    let mut pairs = Pairs::new(ctas, transfers.len());
    // The transfers of each launch pair, sorted by writer CTA: where each has got to.
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for b in transfers
        .chunk_by(|a, b| (a.writer_launch, a.reader_launch) == (b.writer_launch, b.reader_launch))
    {
        blocks.push((at, at + b.len()));
        at += b.len();
    }
    if blocks.len().saturating_mul(ctas) <= 4 * transfers.len() + 65536 {
        // Few launch pairs: for each writer CTA in turn, its run in each launch pair, walking
        // the transfers in a few sequential streams.
        for w in 0..ctas as u32 {
            for (next, end) in blocks.iter_mut() {
                while let Some(t) = transfers
                    .get(*next)
                    .filter(|t| *next < *end && t.writer_cta == w)
                {
                    pairs.add(t, per_launch);
                    *next += 1;
                }
            }
        }
        return pairs.finish(per_launch);
    }
    match counting_order(transfers, |t| t.writer_cta) {
        Some(order) => {
            for &i in &order {
                pairs.add(&transfers[i as usize], per_launch);
            }
        }
        None => {
            let mut grouped: Vec<&Transfer> = transfers.iter().collect();
            grouped.sort_by_key(|t| t.writer_cta);
            for t in grouped {
                pairs.add(t, per_launch);
            }
        }
    }
    pairs.finish(per_launch)
}

/// Pairs and out-degrees from transfers that come grouped by writer CTA, within a writer by
/// writer launch. Whether a transfer brings a new reader (of the writer, and of the writer
/// in its launch) is added as a number, not branched on: which readers repeat is as good as
/// random.
struct Pairs {
    pairs: Vec<Pair>,
    /// The current writer and writer launch.
    writer: Option<u32>,
    launch: Option<u32>,
    /// Bytes per reader of the current writer.
    bytes: Vec<u64>,
    /// The current writer's readers, in the order first seen: the first `readers_seen`.
    readers: Vec<u32>,
    readers_seen: usize,
    /// Readers of the current writer in the current launch.
    out_degree: u32,
    /// Stamps per reader for the current writer (pairs) and the current (writer launch,
    /// writer) (out-degrees).
    pair_seen: Vec<u64>,
    out_seen: Vec<u64>,
    pair_stamp: u64,
    out_stamp: u64,
}

impl Pairs {
    fn new(ctas: usize, most: usize) -> Self {
        Pairs {
            pairs: memory::with_capacity(most),
            writer: None,
            launch: None,
            bytes: vec![0; ctas],
            readers: vec![0; ctas],
            readers_seen: 0,
            out_degree: 0,
            pair_seen: vec![0; ctas],
            out_seen: vec![0; ctas],
            pair_stamp: 0,
            out_stamp: 0,
        }
    }

    #[inline(always)]
    fn add(&mut self, t: &Transfer, per_launch: &mut [LaunchComm]) {
        if self.writer != Some(t.writer_cta) || self.launch != Some(t.writer_launch) {
            self.next_group(t, per_launch);
        }
        let r = t.reader_cta as usize;
        let (Some(pair_seen), Some(out_seen), Some(bytes)) = (
            self.pair_seen.get_mut(r),
            self.out_seen.get_mut(r),
            self.bytes.get_mut(r),
        ) else {
            return;
        };
        // Written in the next free slot whether new or not, kept when new.
        let new = *pair_seen != self.pair_stamp;
        *pair_seen = self.pair_stamp;
        if let Some(slot) = self.readers.get_mut(self.readers_seen) {
            *slot = t.reader_cta;
        }
        self.readers_seen += usize::from(new);
        *bytes += t.bytes;
        self.out_degree += u32::from(*out_seen != self.out_stamp);
        *out_seen = self.out_stamp;
    }

    /// Starts the group of `t`'s writer and writer launch.
    #[inline(never)]
    fn next_group(&mut self, t: &Transfer, per_launch: &mut [LaunchComm]) {
        self.end_launch(per_launch);
        if self.writer != Some(t.writer_cta) {
            self.end_writer();
            self.writer = Some(t.writer_cta);
            self.pair_stamp += 1;
        }
        self.launch = Some(t.writer_launch);
        self.out_stamp += 1;
    }

    /// Records the current writer's out-degree in the current launch.
    fn end_launch(&mut self, per_launch: &mut [LaunchComm]) {
        if let (Some(w), Some(l)) = (self.writer, self.launch) {
            if let Some(d) = per_launch
                .get_mut(l as usize)
                .and_then(|l| l.out_degree.get_mut(w as usize))
            {
                *d += self.out_degree;
            }
        }
        self.out_degree = 0;
    }

    /// Emits the current writer's pairs.
    fn end_writer(&mut self) {
        let Some(w) = self.writer else {
            return;
        };
        let readers = &mut self.readers[..self.readers_seen.min(self.bytes.len())];
        if readers.len() * 16 >= self.bytes.len() {
            // Many readers: listed again in order from their stamps instead of sorted.
            let seen = self.pair_seen.iter().enumerate();
            let now = seen.filter(|(_, &s)| s == self.pair_stamp);
            for (slot, (reader, _)) in readers.iter_mut().zip(now) {
                *slot = reader as u32;
            }
        } else {
            readers.sort_unstable();
        }
        for &reader in readers.iter() {
            if let Some(b) = self.bytes.get_mut(reader as usize) {
                self.pairs.push(Pair(w, reader, *b));
                *b = 0;
            }
        }
        self.readers_seen = 0;
    }

    fn finish(mut self, per_launch: &mut [LaunchComm]) -> Vec<Pair> {
        self.end_launch(per_launch);
        self.end_writer();
        self.pairs
    }
}

/// Whether a CTA lies in the upper half of its grid along x, y and z.
fn upper_halves(grid: Dim3, cta: u32) -> [bool; 3] {
    let high = |c: u32, n: u32| u64::from(c) * 2 >= u64::from(n);
    if grid.y <= 1 && grid.z <= 1 {
        // A 1-D grid (as most are): no division.
        return [high(cta, grid.x), false, false];
    }
    let c = grid.from_linear(u64::from(cta));
    [high(c.x, grid.x), high(c.y, grid.y), high(c.z, grid.z)]
}

/// The transfers in order, with their bytes per superstep distance and across each
/// dimension's bisection.
struct Transfers {
    transfers: Vec<Transfer>,
    distance: Vec<u64>,
    crossing: [u64; 3],
}

fn summarize(
    trace: &Trace,
    Transfers {
        transfers,
        distance,
        crossing,
    }: Transfers,
    mut per_launch: Vec<LaunchComm>,
    load_strides: StrideCounts,
    store_strides: StrideCounts,
) -> CommReport {
    let ctas = trace
        .kernels
        .iter()
        .map(|k| k.num_ctas())
        .max()
        .unwrap_or(0);
    let pairs = pairs_and_out_degrees(&transfers, ctas as usize, &mut per_launch);
    let communicated_bytes: u64 = transfers.iter().map(|t| t.bytes).sum();
    let cuttable = [
        trace.kernels.iter().any(|k| k.grid.x > 1),
        trace.kernels.iter().any(|k| k.grid.y > 1),
        trace.kernels.iter().any(|k| k.grid.z > 1),
    ];
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let bisection = [0, 1, 2].map(|d| Bisection {
        cuttable: cuttable[d],
        bytes: crossing[d],
        relative: ratio(crossing[d], communicated_bytes),
    });

    // Degrees per launch: distinct partner CTA ids over all launches on the other side.
    for l in per_launch.iter_mut() {
        (l.out_degree_mean, l.out_degree_std) = mean_std(&l.out_degree);
        (l.in_degree_mean, l.in_degree_std) = mean_std(&l.in_degree);
    }
    // The pairs are distinct: each is one partner of its writer and of its reader.
    let mut in_degree = vec![0u32; ctas as usize];
    let mut out_degree = vec![0u32; ctas as usize];
    for p in &pairs {
        if let Some(o) = out_degree.get_mut(p.0 as usize) {
            *o += 1;
        }
        if let Some(i) = in_degree.get_mut(p.1 as usize) {
            *i += 1;
        }
    }

    let (load_counts, load_floor) = load_strides.settle();
    let (store_counts, store_floor) = store_strides.settle();
    let write_bytes: u64 = per_launch.iter().map(|l| l.write_bytes).sum();
    let communicated_write_bytes: u64 = per_launch.iter().map(|l| l.communicated_write_bytes).sum();
    CommReport {
        write_bytes,
        read_bytes: per_launch.iter().map(|l| l.read_bytes).sum(),
        communicated_bytes,
        communicated_write_bytes,
        communication_fraction: ratio(communicated_write_bytes, write_bytes),
        shared_bytes: per_launch.iter().map(|l| l.shared_bytes).sum(),
        ctas,
        transfers,
        pairs,
        in_degree,
        out_degree,
        bisection,
        distance,
        stride_count_error: [load_floor, store_floor],
        load_strides: top_strides(load_counts),
        store_strides: top_strides(store_counts),
        per_launch,
    }
}

/// A read piece: a reader read `[start, start + len)`, last written by writer number `writer`.
/// A piece lies within one [`BLOCK_BITS`]-aligned block, so that its length fits 32 bits and
/// the piece fits 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    start: u64,
    len: u32,
    writer: u32,
}

/// Pieces lie within blocks of `1 << BLOCK_BITS` bytes (pieces of one block never overlap
/// pieces of another, so merging within blocks counts every byte once).
const BLOCK_BITS: u32 = 31;

impl Piece {
    /// The piece `[start, end)`, which must lie within one block (a page's piece does).
    fn new(writer: u32, start: u64, end: u64) -> Self {
        debug_assert!(start < end && start >> BLOCK_BITS == (end - 1) >> BLOCK_BITS);
        Piece {
            start,
            len: (end - start) as u32,
            writer,
        }
    }
    fn end(&self) -> u64 {
        self.start + u64::from(self.len)
    }
    /// Makes this piece the union of itself and `p`, of the same writer, when they overlap or
    /// touch and the union lies within one block.
    fn absorb(&mut self, p: &Piece) -> bool {
        if p.start > self.end() || self.start > p.end() {
            return false;
        }
        let (s, e) = (self.start.min(p.start), self.end().max(p.end()));
        if (s ^ (e - 1)) >> BLOCK_BITS != 0 {
            return false;
        }
        self.start = s;
        self.len = (e - s) as u32;
        true
    }
}

/// How many of the reader's latest pieces a new piece may extend.
const RECENT: usize = 4;

/// Pieces the current reader's list may hold beyond twice its length after its last
/// compaction before it is compacted again.
const SLACK: usize = 1024;

/// Pieces the finished runs may hold beyond twice their length after the last consolidation
/// before they are consolidated again.
const RUN_SLACK: usize = 1 << 16;

/// The read pieces of one launch, per reader CTA, reduced to distinct bytes per (reader,
/// writer).
///
/// A trace usually holds each CTA's accesses together (a CTA runs on one SM, its warps
/// issue one after another), so pieces come reader by reader: the current reader's pieces
/// are gathered in one list, where a new piece that overlaps or touches one of the latest
/// pieces of the same writer joins it (threads of a CTA reading consecutive elements, one
/// instruction after another, build a few long pieces). When another reader comes, the list
/// is grouped by writer and merged once (see [`Grouper`]), while it is still in the
/// processor's cache, and kept as a finished run. A reader that comes back starts a new run;
/// runs of one reader are merged when the launch ends, or earlier when the runs have doubled
/// since they were last merged, so memory stays within a small factor of the distinct ranges
/// read even for a trace that interleaves its CTAs access by access.
#[derive(Default)]
struct Pieces {
    /// The reader whose pieces `current` holds.
    reader: Option<u32>,
    current: Vec<Piece>,
    /// The length of `current` after its last compaction: the pieces before are not recent.
    compacted: usize,
    /// Finished runs' pieces, run after run, each grouped by writer, each writer's sorted by
    /// start and merged.
    done: Vec<Piece>,
    /// `(reader, start, end)` of each finished run in `done`.
    runs: Vec<(u32, usize, usize)>,
    /// The length of `done` after the last consolidation.
    consolidated: usize,
    grouper: Grouper,
}

impl Pieces {
    // Inlined into the read path (its one caller outside tests): 3% fewer instructions.
    #[inline(always)]
    fn push(&mut self, reader: u32, p: Piece) {
        if self.reader != Some(reader) {
            self.switch(reader);
        }
        let n = self.current.len();
        let recent = n.saturating_sub(RECENT).max(self.compacted);
        for q in self.current[recent..].iter_mut().rev() {
            if q.writer == p.writer && q.absorb(&p) {
                return;
            }
        }
        self.current.push(p);
        if self.current.len() >= 2 * self.compacted + SLACK {
            self.grouper.compact(&mut self.current);
            self.compacted = self.current.len();
        }
    }

    /// Finishes the current reader's run and makes `reader` current.
    #[inline(never)]
    fn switch(&mut self, reader: u32) {
        self.finish_run();
        self.reader = Some(reader);
    }

    fn finish_run(&mut self) {
        let Some(reader) = self.reader.take() else {
            return;
        };
        self.grouper.compact(&mut self.current);
        let start = self.done.len();
        self.done.append(&mut self.current);
        self.compacted = 0;
        self.runs.push((reader, start, self.done.len()));
        if self.done.len() >= 2 * self.consolidated + RUN_SLACK {
            self.consolidate();
        }
    }

    /// Merges the runs of each reader into one, the runs in reader order.
    fn consolidate(&mut self) {
        if self.runs.is_sorted_by(|a, b| a.0 < b.0) {
            self.consolidated = self.done.len();
            return;
        }
        self.runs.sort_by_key(|r| r.0);
        let mut done = memory::with_capacity(self.done.len());
        let mut runs = Vec::with_capacity(self.runs.len());
        for group in self.runs.chunk_by(|a, b| a.0 == b.0) {
            let start = done.len();
            for &(_, a, b) in group {
                done.extend_from_slice(&self.done[a..b]);
            }
            if group.len() > 1 {
                let mut merged = done.split_off(start);
                self.grouper.compact(&mut merged);
                done.append(&mut merged);
            }
            runs.push((group[0].0, start, done.len()));
        }
        self.done = done;
        self.runs = runs;
        self.consolidated = self.done.len();
    }

    /// Calls `f(reader, writer, distinct bytes)` per key, readers in order (each reader's
    /// writers in no particular order), and empties the lists.
    fn drain(&mut self, mut f: impl FnMut(u32, u32, u64)) {
        self.finish_run();
        self.consolidate();
        for &(reader, a, b) in &self.runs {
            for group in self.done[a..b].chunk_by(|p, q| p.writer == q.writer) {
                f(
                    reader,
                    group[0].writer,
                    group.iter().map(|p| u64::from(p.len)).sum(),
                );
            }
        }
        self.done.clear();
        self.runs.clear();
        self.consolidated = 0;
    }

    /// The number of pieces the current reader holds (for tests).
    #[cfg(test)]
    fn held(&self, reader: u32) -> usize {
        if self.reader == Some(reader) {
            self.current.len()
        } else {
            0
        }
    }
}

/// Groups pieces by writer and merges those of one writer that overlap or touch, without
/// sorting the list by writer: most writers of a reader have one or two pieces, so a table
/// from writer to its latest piece chains each writer's pieces, and only a writer with
/// several pieces has them sorted by start.
#[derive(Default)]
struct Grouper {
    /// Per writer number, `(stamp, group)`: its group in the list being compacted when the
    /// stamp is the current one.
    slot: Vec<(u32, u32)>,
    stamp: u32,
    /// Per group, its latest piece.
    head: Vec<u32>,
    /// Per piece, the piece of its writer before it ([`NO_PIECE`]: none).
    before: Vec<u32>,
    grouped: Vec<Piece>,
}

/// The end of a chain of pieces.
const NO_PIECE: u32 = u32::MAX;

impl Grouper {
    /// Leaves the pieces of each writer together (writers in the order they first come),
    /// each writer's sorted by start and merged.
    fn compact(&mut self, v: &mut Vec<Piece>) {
        let n = v.len();
        if n < 2 {
            return;
        }
        if n >= NO_PIECE as usize {
            sort_compact(v);
            return;
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.slot.fill((0, 0));
            self.stamp = 1;
        }
        let stamp = self.stamp;
        self.head.clear();
        self.before.clear();
        self.before.resize(n, NO_PIECE);
        for (i, (p, before)) in v.iter().zip(self.before.iter_mut()).enumerate() {
            let w = p.writer as usize;
            if w >= self.slot.len() {
                self.slot.resize((w + 1).next_power_of_two(), (0, 0));
            }
            let s = &mut self.slot[w];
            if s.0 == stamp {
                if let Some(h) = self.head.get_mut(s.1 as usize) {
                    *before = *h;
                    *h = i as u32;
                }
            } else {
                *s = (stamp, self.head.len() as u32);
                self.head.push(i as u32);
            }
        }
        if self.head.len() == n {
            // One piece per writer: nothing to merge.
            return;
        }
        let out = &mut self.grouped;
        out.clear();
        out.reserve(n);
        for &h in &self.head {
            let start = out.len();
            let mut i = h as usize;
            while let Some(p) = v.get(i) {
                out.push(*p);
                i = self.before.get(i).map_or(usize::MAX, |&b| b as usize);
            }
            if out.len() - start > 1 {
                out[start..].sort_unstable_by_key(|p| p.start);
                let mut k = start;
                for j in start + 1..out.len() {
                    let p = out[j];
                    if !out[k].absorb(&p) {
                        k += 1;
                        out[k] = p;
                    }
                }
                out.truncate(k + 1);
            }
        }
        std::mem::swap(v, out);
    }
}

/// [`Grouper::compact`] by sorting: by writer, then start, then merged.
fn sort_compact(v: &mut Vec<Piece>) {
    v.sort_by_key(|p| p.writer);
    for group in v.chunk_by_mut(|a, b| a.writer == b.writer) {
        group.sort_unstable_by_key(|p| p.start);
    }
    v.dedup_by(|next, prev| prev.writer == next.writer && prev.absorb(next));
}

#[cfg(test)]
mod tests;
