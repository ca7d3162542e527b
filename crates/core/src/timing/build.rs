//! Building each CTA's warp streams ([`super::CtaStreams`]): from a kernel held whole
//! ([`super::WarpStreams::build`]), or from the CTA's rows as a reader gives them, so that a
//! trace read from a file need never be held whole for the timing model ([`StreamsBuilder`]).

use super::engine::TimingError;
use super::streams::{
    CtaStreams, Event, Firsts, Lanes, Position, Shape, StoreReq, ThreadLoad, MAX_PORTION_LANES,
};
use crate::coalesce::{Coalesced, Coalescer, Geometry};
use crate::config::{CacheConfig, Coalescing, GpuConfig, IssueUnit, Merging, Stores, TimingRules};
use crate::schedule::{WarpThreads, BARRIER, HW_WARP, READY};
use crate::trace::{model_flags, AccessKind, Columns, Kernel, Order};

/// Builds the streams of one kernel's CTAs from their rows, given in increasing CTA order:
/// each CTA's streams as [`super::WarpStreams::build`] gives them.
pub struct StreamsBuilder {
    shape: Shape,
    order: Order,
    /// Each simulated SM (by number) where only some are (CTA `c` runs on SM `c % sms`).
    simulated: Option<Vec<bool>>,
    /// The last CTA added.
    last: Option<u32>,
    unit: Unit,
    /// Per thread of the CTA being added: its next row, and the end of its rows.
    cursor: Vec<u32>,
    starts: Vec<u32>,
    /// Streams of CTAs done with, whose room the next CTAs take ([`StreamsBuilder::recycle`]).
    spare: Vec<CtaStreams>,
}

/// What the issue unit needs while building.
enum Unit {
    /// Warp instructions of coalesced requests.
    Warps(WarpUnit),
    /// The released model's per-thread loads.
    Threads(ThreadUnit),
}

/// What building warp instructions keeps between CTAs: the coalescer and its buffers.
struct WarpUnit {
    coalescer: Box<Coalescer>,
    drop_stores: bool,
    /// Keep each store request (for a simulated L2), not only their counts.
    keep_stores: bool,
    rows: Vec<u32>,
    out: Vec<Coalesced>,
}

/// What building per-thread loads keeps between CTAs.
struct ThreadUnit {
    /// By flags byte: whether the row is a load that reaches the L1.
    l1_load: Box<[bool; 256]>,
    line_shift: u32,
    /// The width-bump rule of the released coalescer ([`Merging::WidthBump`]).
    width_bump: bool,
    scratch: Box<Scratch>,
}

impl StreamsBuilder {
    /// A builder for kernel `header`'s streams (its shape and order; its rows are not read).
    /// `simulated`: which SMs (of `gpu.sms`) are simulated, where only some are: the CTAs of
    /// the others are skipped.
    pub fn new(
        header: &Kernel,
        warp_size: u32,
        coalescing: Coalescing,
        cache: &CacheConfig,
        gpu: &GpuConfig,
        rules: &TimingRules,
        simulated: Option<Vec<bool>>,
    ) -> Result<Self, TimingError> {
        if header.order == Order::Issued {
            return Err(TimingError::IssuedOrder);
        }
        let tpb = header.threads_per_cta().max(1);
        let ws = warp_size.max(1);
        let wpc = tpb.div_ceil(ws);
        let hw_warps = tpb.div_ceil(HW_WARP);
        if tpb > gpu.max_threads_per_sm || hw_warps > gpu.max_warps_per_sm {
            return Err(TimingError::CtaTooLarge {
                threads: tpb,
                max_threads: gpu.max_threads_per_sm,
                max_warps: gpu.max_warps_per_sm,
            });
        }
        let threads = rules.issue == IssueUnit::ThreadPortions;
        if threads && ws.min(tpb) > MAX_PORTION_LANES {
            return Err(TimingError::WarpTooWide {
                threads: ws.min(tpb),
                max: MAX_PORTION_LANES,
            });
        }
        let shape = Shape {
            wpc,
            tpb,
            warp_size: ws,
            ctas: gpu.modelled_ctas(header.num_ctas(), tpb),
        };
        let unit = if threads {
            Unit::Threads(ThreadUnit {
                l1_load: Box::new(std::array::from_fn(|f| {
                    let (kind, space) = model_flags(f as u8);
                    kind == AccessKind::Load && space.reaches_l1()
                })),
                line_shift: cache.line_bytes.trailing_zeros(),
                width_bump: rules.merging == Merging::WidthBump,
                scratch: Box::default(),
            })
        } else {
            Unit::Warps(WarpUnit {
                coalescer: Box::new(Coalescer::new(
                    coalescing,
                    Geometry {
                        line_bytes: cache.line_bytes,
                        sector_bytes: cache.sector_bytes,
                        warp_size: ws,
                        threads_per_cta: tpb,
                    },
                )),
                drop_stores: rules.stores == Stores::Dropped,
                keep_stores: false,
                rows: Vec::with_capacity(64),
                out: Vec::with_capacity(64),
            })
        };
        Ok(StreamsBuilder {
            shape,
            order: header.order,
            simulated,
            last: None,
            unit,
            cursor: Vec::new(),
            starts: Vec::new(),
            spare: Vec::new(),
        })
    }

    /// Keeps each warp instruction's store requests in the streams (for a simulated L2, which
    /// they go on to), not only their counts. The released model's issue unit (thread
    /// portions) has no stores to keep.
    pub fn keep_stores(mut self, keep: bool) -> Self {
        if let Unit::Warps(unit) = &mut self.unit {
            unit.keep_stores = keep;
        }
        self
    }

    /// Gives the builder a CTA's streams that no run needs any more: a later CTA's are
    /// built in their room, which saves the cost of fresh memory.
    pub fn recycle(&mut self, spare: CtaStreams) {
        self.spare.push(spare);
    }

    /// The shape of the kernel's warps.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Whether CTA `cta` is modelled on a simulated SM (the others are skipped when added).
    pub fn wants(&self, cta: u32) -> bool {
        cta < self.shape.ctas
            && self.simulated.as_ref().is_none_or(|on| {
                on.get((cta % on.len().max(1) as u32) as usize)
                    .copied()
                    .unwrap_or(false)
            })
    }

    /// The streams of CTA `cta` from its rows (its threads' rows only, grouped by thread in
    /// increasing order, as a reader gives a CTA); `None` for a CTA not simulated. CTAs
    /// come in increasing order.
    pub fn add_cta(&mut self, cta: u32, rows: &Columns) -> Result<Option<CtaStreams>, TimingError> {
        self.check_order(cta)?;
        if !self.wants(cta) {
            return Ok(None);
        }
        let tpb = self.shape.tpb as usize;
        let first = cta as u64 * tpb as u64;
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
        starts.resize(tpb + 1, 0);
        let mut last = 0;
        for (i, &t) in rows.thread.iter().enumerate() {
            let local = t as u64 - first.min(t as u64);
            if (t as u64) < first || local >= tpb as u64 || (local as usize) < last {
                return Err(TimingError::CtaRows {
                    cta,
                    row: i as u64,
                    thread: t,
                });
            }
            last = local as usize;
            starts[last + 1] += 1;
        }
        for i in 0..tpb {
            starts[i + 1] += starts[i];
        }
        let built = self.add(rows, &starts);
        self.starts = starts;
        Ok(Some(built))
    }

    /// The streams of CTA `cta` of kernel `k`, held whole (`starts`: `k.thread_starts()`);
    /// `None` for a CTA not simulated. CTAs come in increasing order.
    pub fn add_held(&mut self, k: &Kernel, starts: &[u32], cta: u32) -> Option<CtaStreams> {
        if self.check_order(cta).is_err() || !self.wants(cta) {
            return None;
        }
        let tpb = self.shape.tpb as usize;
        let t0 = cta as usize * tpb;
        Some(self.add(k.columns(), &starts[t0..=t0 + tpb]))
    }

    fn check_order(&mut self, cta: u32) -> Result<(), TimingError> {
        if self.last.is_some_and(|l| cta <= l) {
            return Err(TimingError::CtaOrder {
                cta,
                after: self.last.unwrap_or(0),
            });
        }
        self.last = Some(cta);
        Ok(())
    }

    /// The streams of a CTA whose thread `i` has the rows `starts[i]..starts[i + 1]` of
    /// `cols`.
    fn add(&mut self, cols: &Columns, starts: &[u32]) -> CtaStreams {
        self.cursor.clear();
        self.cursor.extend_from_slice(&starts[..starts.len() - 1]);
        let n_rows = (starts[starts.len() - 1] - starts[0]) as usize;
        let (shape, cursor, order) = (self.shape, &mut self.cursor, self.order);
        let mut into = self.spare.pop().unwrap_or_default();
        into.clear();
        into.rows = n_rows as u64;
        match &mut self.unit {
            Unit::Warps(unit) => add_warps(into, shape, cols, order, cursor, &starts[1..], unit),
            Unit::Threads(unit) => add_threads(into, shape, n_rows, cols, starts, unit),
        }
    }
}

/// The warp-instruction streams of a CTA's warps: each instruction's coalesced load
/// requests, its stores counted; barriers as events. `cursor`/`end`: per thread of the CTA,
/// its next row and the end of its rows in `cols`. Built in the room of `s` (empty).
fn add_warps(
    mut s: CtaStreams,
    shape: Shape,
    cols: &Columns,
    order: Order,
    cursor: &mut [u32],
    end: &[u32],
    unit: &mut WarpUnit,
) -> CtaStreams {
    let (drop_stores, keep_stores) = (unit.drop_stores, unit.keep_stores);
    let (coalescer, rows, out) = (&mut *unit.coalescer, &mut unit.rows, &mut unit.out);
    let Shape { wpc, .. } = shape;
    let flags = &cols.flags;
    for w in 0..wpc {
        let threads = shape.warp_threads(w);
        let mut wt = WarpThreads {
            cursor: &mut cursor[threads.clone()],
            end: &end[threads],
        };
        let first = s.events.len() as u32;
        let mut st = wt.state(cols);
        loop {
            match st {
                READY => {
                    rows.clear();
                    st = wt.exec(cols, order, rows);
                    if drop_stores {
                        rows.retain(|&r| !model_flags(flags[r as usize]).0.is_write());
                        if rows.is_empty() {
                            continue;
                        }
                    }
                    let used = coalescer.coalesce(cols, rows, out);
                    let mut e = Event {
                        inst: rows.first().map_or(0, |&r| cols.inst[r as usize]),
                        req_start: s.reqs.len() as u32,
                        store_start: s.store_reqs.len() as u32,
                        accesses: used,
                        ..Default::default()
                    };
                    s.insts = s.insts.max(e.inst + 1);
                    for (ci, c) in out.iter().enumerate() {
                        if c.request.write {
                            e.stores += 1;
                            e.store_bytes += c.request.bytes as u64;
                            if keep_stores {
                                s.store_reqs.push(StoreReq {
                                    line: c.request.line,
                                    sectors: c.request.sectors,
                                    bytes: c.request.bytes,
                                    written: coalescer.byte_mask(ci).unwrap_or(0),
                                });
                            }
                        } else {
                            s.reqs.push(c.request.line);
                            e.transactions += c.transactions;
                        }
                    }
                    e.req_end = s.reqs.len() as u32;
                    e.store_end = s.store_reqs.len() as u32;
                    s.events.push(e);
                }
                BARRIER => {
                    let barrier = Event {
                        barrier: true,
                        ..Default::default()
                    };
                    s.events.push(barrier);
                    wt.pass_barrier(cols);
                    st = wt.state(cols);
                }
                _ => break,
            }
        }
        s.warp_events.push((first, s.events.len() as u32));
    }
    s
}

/// Per-thread load streams of a CTA, warp by warp and position by position (a thread's
/// `n`-th load is at its position `n`), and which threads request their line at each (the
/// released model's rule, [`Position::leaders`]). Thread `i` of the CTA has the rows
/// `starts[i]..starts[i + 1]` of `cols`, `rows` in all; built in the room of `s` (empty).
///
/// Each position is kept as masks of lanes ([`Lanes`]) and the loads of its leaders, so
/// that a run reads a few bytes a position, not one load per thread. A warp's lanes are read
/// side by side, each from its own next row, so each position is built in one go.
fn add_threads(
    mut s: CtaStreams,
    shape: Shape,
    rows: usize,
    cols: &Columns,
    starts: &[u32],
    unit: &mut ThreadUnit,
) -> CtaStreams {
    let (is_l1_load, line_shift) = (&*unit.l1_load, unit.line_shift);
    let scratch = &mut *unit.scratch;
    let Scratch {
        next,
        lines,
        addrs,
        bytes,
        insts,
        firsts,
        per_inst,
    } = scratch;
    s.positions.reserve(rows / shape.warp_size.max(1) as usize);
    for w in 0..shape.wpc {
        let threads = shape.warp_threads(w);
        let lanes = threads.len();
        next.clear();
        next.extend(threads.clone().map(|l| starts[l] as usize));
        lines.clear();
        lines.resize(lanes, 0);
        addrs.clear();
        addrs.resize(lanes, 0);
        bytes.clear();
        bytes.resize(lanes, 0);
        insts.clear();
        insts.resize(lanes, 0);
        let start = s.positions.len() as u32;
        loop {
            let mut at = Lanes {
                first: s.leader_loads.len() as u32,
                ..Lanes::default()
            };
            for (lane, l) in threads.clone().enumerate() {
                let end = starts[l + 1] as usize;
                let mut r = next[lane];
                while r < end && !is_l1_load[cols.flags[r] as usize] {
                    r += 1;
                }
                if r < end {
                    at.loads |= 1 << lane;
                    lines[lane] = cols.addr[r] >> line_shift;
                    addrs[lane] = cols.addr[r];
                    bytes[lane] = cols.size[r];
                    let i = cols.inst[r];
                    insts[lane] = i;
                    if i as usize >= per_inst.len() {
                        per_inst.resize(i as usize + 1, 0);
                    }
                    per_inst[i as usize] += 1;
                    r += 1;
                }
                next[lane] = r;
            }
            if at.loads == 0 {
                break;
            }
            let here = Position {
                loads: at.loads,
                lines,
                addrs: unit.width_bump.then_some(&addrs[..]),
                bytes,
                ws: shape.warp_size,
            };
            at.leaders = here.leaders(firsts);
            let mut leaders = at.leaders;
            while leaders != 0 {
                let lane = leaders.trailing_zeros() as usize;
                leaders &= leaders - 1;
                s.leader_loads.push(ThreadLoad {
                    line: lines[lane],
                    inst: insts[lane],
                    bytes: bytes[lane],
                });
            }
            s.positions.push(at);
        }
        s.warp_positions.push((start, s.positions.len() as u32));
    }
    for (i, n) in per_inst.iter_mut().enumerate() {
        if *n > 0 {
            s.inst_loads.push((i as u32, std::mem::take(n)));
            s.insts = s.insts.max(i as u32 + 1);
        }
    }
    s
}

/// The builder's room for one warp's lanes while its positions are built (`add_threads`).
#[derive(Default)]
struct Scratch {
    /// Per lane: its next row.
    next: Vec<usize>,
    /// Per lane: its load at the position being built.
    lines: Vec<u64>,
    /// Per lane: the address of that load (for [`Merging::WidthBump`]).
    addrs: Vec<u64>,
    bytes: Vec<u16>,
    insts: Vec<u32>,
    firsts: Firsts,
    /// Per instruction: the CTA's loads of it.
    per_inst: Vec<u64>,
}
