//! What the views draw, computed on the worker: a loaded trace with its address segments, and a
//! simulation's report with every request as compact columns.

use std::path::PathBuf;

use crate::cache::MissClass;
use crate::config::SimConfig;
use crate::sim::{Report, RequestEvent};
use crate::trace::{Format, Trace};

/// Requests kept per simulation for the address and set views (about 33 bytes each); later
/// requests are counted in the report but not drawn.
pub const MAX_POINTS: usize = 20_000_000;

/// A request's outcome as drawn: hit, a miss class, or a miss without a class (timing mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    Hit,
    Compulsory,
    Capacity,
    Conflict,
    /// A miss the per-request model does not classify (the timing model classes misses in
    /// aggregate only).
    Miss,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Hit,
        Outcome::Compulsory,
        Outcome::Capacity,
        Outcome::Conflict,
        Outcome::Miss,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::Compulsory => "compulsory miss",
            Outcome::Capacity => "capacity miss",
            Outcome::Conflict => "conflict miss",
            Outcome::Miss => "miss",
        }
    }
    fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Outcome {
        Self::ALL[(c & 0x7) as usize % Self::ALL.len()]
    }
}

/// An instruction the address view is limited to: kernel, instruction id, name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstFilter {
    pub kernel: u16,
    pub inst: u32,
    pub name: String,
}

impl InstFilter {
    /// The (kernel, instruction) it keeps.
    pub fn key(&self) -> (u16, u32) {
        (self.kernel, self.inst)
    }
}

impl Points {
    /// Whether request `i` is of instruction `only` (every request is without one).
    pub fn of_inst(&self, i: usize, only: Option<(u16, u32)>) -> bool {
        only.is_none_or(|(k, inst)| self.kernel[i] == k && self.inst[i] == inst)
    }
}

/// An instruction's label in tables and legends: its name, after its kernel's number when the
/// trace has several kernels.
pub fn inst_label(several_kernels: bool, kernel: u32, name: &str) -> String {
    if several_kernels {
        format!("k{kernel} {name}")
    } else {
        name.to_string()
    }
}

/// One column per request field, in issue order across the simulated SMs.
#[derive(Default, Clone)]
pub struct Points {
    pub line: Vec<u64>,
    pub cta: Vec<u32>,
    pub warp: Vec<u32>,
    pub inst: Vec<u32>,
    pub kernel: Vec<u16>,
    pub sm: Vec<u16>,
    pub set: Vec<u32>,
    /// Outcome code in the low 3 bits, bit 6 set for a timing-model miss whose line was in
    /// flight, bit 7 set for writes.
    pub outcome: Vec<u8>,
    /// Whole-cache reuse distance; in the timing model the set-stack distance instead (it has
    /// no whole-cache order per request); `u32::MAX` for a first use (or no tracking).
    pub reuse: Vec<u32>,
    /// Issue cycle within the kernel, in the timing model only (empty otherwise).
    pub time: Vec<u64>,
    /// The thread (kernel-linear id) whose access the request serves (a coalesced request: its
    /// lowest thread); empty in the timing model.
    pub thread: Vec<u32>,
    /// Requests not kept because of [`MAX_POINTS`].
    pub dropped: u64,
}

impl Points {
    pub fn len(&self) -> usize {
        self.line.len()
    }
    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
    pub fn push(&mut self, e: &RequestEvent) {
        if self.line.len() >= MAX_POINTS {
            self.dropped += 1;
            return;
        }
        let outcome = match (e.hit, e.class) {
            (true, _) => Outcome::Hit,
            (false, Some(MissClass::Compulsory)) => Outcome::Compulsory,
            (false, Some(MissClass::Capacity)) => Outcome::Capacity,
            (false, Some(MissClass::Conflict)) => Outcome::Conflict,
            (false, None) => Outcome::Miss,
        };
        self.line.push(e.line);
        self.cta.push(e.cta);
        self.warp.push(e.warp);
        self.inst.push(e.inst);
        self.kernel.push(e.kernel.min(u16::MAX as u32) as u16);
        self.sm.push(e.sm.min(u16::MAX as u32) as u16);
        self.set.push(e.set);
        self.outcome.push(
            outcome.code() | if e.write { 0x80 } else { 0 } | if e.in_flight { 0x40 } else { 0 },
        );
        let distance = if e.time.is_some() {
            e.set_distance
        } else {
            e.reuse_distance
        };
        self.reuse.push(
            distance
                .map(|d| d.min(u32::MAX as u64 - 1) as u32)
                .unwrap_or(u32::MAX),
        );
        if let Some(t) = e.time {
            self.time.push(t);
        }
        if let Some(t) = e.thread {
            self.thread.push(t);
        }
    }
    pub fn outcome(&self, i: usize) -> Outcome {
        Outcome::from_code(self.outcome[i])
    }
    pub fn is_write(&self, i: usize) -> bool {
        self.outcome[i] & 0x80 != 0
    }
    /// Whether request `i` (a timing-model miss) found its line in flight.
    pub fn in_flight(&self, i: usize) -> bool {
        self.outcome[i] & 0x40 != 0
    }
    /// Request `i`'s thread, where known.
    pub fn thread(&self, i: usize) -> Option<u32> {
        self.thread.get(i).copied()
    }
}

/// Address ranges that hold data, packed one above the other so that buffers far apart in
/// memory share one readable axis (Crawford 2014 fig. 8.1 draws each allocation separately).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segments {
    /// (first byte, one past the last byte, axis offset of the first byte), by address.
    pub ranges: Vec<(u64, u64, f64)>,
}

/// Gap between segments on the axis, as a fraction of the total span.
const SEGMENT_GAP: f64 = 0.03;
/// Addresses closer than this belong to one segment.
const MERGE_BYTES: u64 = 1 << 20;

impl Segments {
    /// Segments covering `addrs` (any order).
    pub fn from_addresses(addrs: impl Iterator<Item = u64>) -> Segments {
        // Pages of 4 KiB are fine enough and keep the sort small.
        let mut pages: Vec<u64> = Vec::new();
        let mut last = u64::MAX;
        for a in addrs {
            let p = a >> 12;
            if p != last {
                pages.push(p);
                last = p;
            }
        }
        pages.sort_unstable();
        pages.dedup();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for p in pages {
            let lo = p << 12;
            let hi = lo.saturating_add(1 << 12);
            match spans.last_mut() {
                Some(s) if lo.saturating_sub(s.1) <= MERGE_BYTES => s.1 = hi,
                _ => spans.push((lo, hi)),
            }
        }
        let total: u64 = spans.iter().map(|s| s.1 - s.0).sum();
        let gap = (total as f64 * SEGMENT_GAP).max(4096.0);
        let mut y = 0.0;
        let ranges = spans
            .into_iter()
            .map(|(lo, hi)| {
                let r = (lo, hi, y);
                y += (hi - lo) as f64 + gap;
                r
            })
            .collect();
        Segments { ranges }
    }
    /// Axis position of a byte address.
    pub fn y(&self, addr: u64) -> f64 {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        match i.checked_sub(1).and_then(|i| self.ranges.get(i)) {
            Some(&(lo, _, y)) => y + (addr - lo) as f64,
            None => addr as f64,
        }
    }
    /// The address at an axis position, if it lies in a segment.
    pub fn addr(&self, y: f64) -> Option<u64> {
        self.ranges.iter().find_map(|&(lo, hi, y0)| {
            let off = y - y0;
            (off >= 0.0 && off < (hi - lo) as f64).then(|| lo + off as u64)
        })
    }
    /// Grid marks of the address axis between `lo` and `hi` (axis values): addresses that are
    /// multiples of a power-of-two step of at least `min_step`, so their hex labels are round,
    /// as (axis value, step). Steps of 4 and 16 times the smallest mark the thicker lines.
    pub fn hex_marks(&self, lo: f64, hi: f64, min_step: f64) -> Vec<(f64, u64)> {
        let step = (min_step.max(1.0).ceil() as u64).next_power_of_two();
        let mut marks = Vec::new();
        for &(a0, a1, y0) in &self.ranges {
            let y1 = y0 + (a1 - a0) as f64;
            if y1 < lo || y0 > hi {
                continue;
            }
            let first = a0 + (lo - y0).max(0.0) as u64;
            let last = (a0 + (hi - y0).max(0.0) as u64).min(a1.saturating_sub(1));
            let mut a = first.div_ceil(step).saturating_mul(step);
            while a <= last && marks.len() < 1000 {
                let size = [step * 16, step * 4, step]
                    .into_iter()
                    .find(|&s| a % s == 0)
                    .unwrap_or(step);
                marks.push((y0 + (a - a0) as f64, size));
                a = match a.checked_add(step) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        marks
    }
    /// The top of the axis.
    pub fn height(&self) -> f64 {
        self.ranges
            .last()
            .map(|&(lo, hi, y)| y + (hi - lo) as f64)
            .unwrap_or(1.0)
    }
}

/// A loaded or generated trace.
pub struct TraceData {
    pub trace: Trace,
    /// File name, or the generator and its parameters.
    pub label: String,
    pub path: Option<PathBuf>,
    pub format: Option<Format>,
    /// The address segments of the accesses that reach the L1 (global and local memory).
    pub segments: Segments,
    /// The arrays the instructions touch, by address: first byte and label
    /// ([`array_labels`]).
    pub arrays: Vec<(u64, String)>,
    /// Accesses that reach the L1 (shared-memory, constant and texture accesses and barriers
    /// are in the trace but not here).
    pub accesses: u64,
    /// Why reading stopped early, when only the complete kernels before an error were kept.
    pub truncated: Option<String>,
}

impl TraceData {
    pub fn new(trace: Trace, label: String, path: Option<PathBuf>, format: Option<Format>) -> Self {
        let l1_addresses = || {
            trace.kernels.iter().flat_map(|k| {
                let c = k.columns();
                c.addr.iter().zip(&c.flags).filter_map(|(&a, &f)| {
                    let (kind, space) = crate::trace::model_flags(f);
                    (kind != crate::trace::AccessKind::Barrier && space.reaches_l1()).then_some(a)
                })
            })
        };
        let segments = Segments::from_addresses(l1_addresses());
        let accesses = l1_addresses().count() as u64;
        let arrays = array_labels(&trace);
        TraceData {
            trace,
            label,
            path,
            format,
            segments,
            arrays,
            accesses,
            truncated: None,
        }
    }
}

/// Instruction names shown in an array's label, at most.
const LABEL_NAMES: usize = 3;

/// The arrays of a trace as its instructions show them: each instruction's address range
/// (what it touches of global and local memory), ranges that overlap joined into one.
/// Returns each array's first byte and a label naming its instructions ("ld_A, st_A"), by
/// address. A trace has no array names; the instructions say which array a range is.
pub fn array_labels(trace: &Trace) -> Vec<(u64, String)> {
    // (first byte, one past the last, name) per instruction of each kernel.
    let mut ranges: Vec<(u64, u64, &str)> = Vec::new();
    for k in &trace.kernels {
        let c = k.columns();
        let mut span = vec![(u64::MAX, 0u64); k.instructions.len()];
        for (((&a, &f), &inst), &size) in c.addr.iter().zip(&c.flags).zip(&c.inst).zip(&c.size) {
            let (kind, space) = crate::trace::model_flags(f);
            if kind == crate::trace::AccessKind::Barrier || !space.reaches_l1() {
                continue;
            }
            if let Some(s) = span.get_mut(inst as usize) {
                s.0 = s.0.min(a);
                s.1 = s.1.max(a.saturating_add(size.max(1) as u64));
            }
        }
        for (i, &(lo, hi)) in span.iter().enumerate() {
            if lo < hi {
                ranges.push((lo, hi, k.instructions[i].name.as_str()));
            }
        }
    }
    ranges.sort_unstable_by_key(|r| (r.0, r.1));
    let mut arrays: Vec<(u64, u64, Vec<&str>, usize)> = Vec::new();
    for (lo, hi, name) in ranges {
        match arrays.last_mut() {
            Some(a) if lo < a.1 => {
                a.1 = a.1.max(hi);
                if !a.2.contains(&name) {
                    if a.2.len() < LABEL_NAMES {
                        a.2.push(name);
                    } else {
                        a.3 += 1;
                    }
                }
            }
            _ => arrays.push((lo, hi, vec![name], 0)),
        }
    }
    arrays
        .into_iter()
        .map(|(lo, _, names, more)| {
            let mut text = names.join(", ");
            if more > 0 {
                text.push_str(&format!(" +{more} more"));
            }
            (lo, text)
        })
        .collect()
}

/// Accesses and misses per set over time: `bins` time slices x `sets` rows.
#[derive(Clone, Debug, Default)]
pub struct SetGrid {
    pub bins: usize,
    pub sets: usize,
    /// Requests per time slice (the x extent of one bin).
    pub per_bin: u64,
    /// Row-major by set: `accesses[set * bins + bin]`.
    pub accesses: Vec<u32>,
    pub misses: Vec<u32>,
}

/// Time slices of the set heatmap.
pub const SET_BINS: usize = 256;
/// Time slices of the miss-rate-over-time plot.
pub const OVER_TIME_SLICES: usize = 64;

/// Miss classes split by reads and writes for one instruction or CTA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassSplit {
    /// `[read, write][outcome code]`.
    pub counts: [[u64; 5]; 2],
}

impl ClassSplit {
    pub fn add(&mut self, write: bool, o: Outcome) {
        self.counts[write as usize][o as usize] += 1;
    }
    pub fn get(&self, write: bool, o: Outcome) -> u64 {
        self.counts[write as usize][o as usize]
    }
    pub fn misses(&self) -> u64 {
        self.counts.iter().map(|r| r[1..].iter().sum::<u64>()).sum()
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|r| r.iter().sum::<u64>()).sum()
    }
}

/// The x axis of the address view: issue order, or the issue cycle in the timing model.
#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    /// Request `i` sits at `x = i`.
    Order,
    /// Request `i` sits at its issue cycle, each kernel starting where the previous one's last
    /// request was issued (SMs run side by side, so `x` is not monotonic in `i`).
    Time {
        x: Vec<u64>,
        /// Request indices by increasing `x` (ties in issue order).
        by_x: Vec<u32>,
        /// One past the largest `x`.
        end: u64,
    },
}

impl XAxis {
    /// Builds the time axis when every request has a cycle.
    fn new(p: &Points) -> XAxis {
        if p.time.is_empty() || p.time.len() != p.len() {
            return XAxis::Order;
        }
        let kernels = p.kernel.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
        let mut span = vec![0u64; kernels];
        for (&k, &t) in p.kernel.iter().zip(&p.time) {
            let s = &mut span[k as usize];
            *s = (*s).max(t.saturating_add(1));
        }
        let mut base = vec![0u64; kernels];
        for k in 1..kernels {
            base[k] = base[k - 1].saturating_add(span[k - 1]);
        }
        let x: Vec<u64> = p
            .kernel
            .iter()
            .zip(&p.time)
            .map(|(&k, &t)| base[k as usize].saturating_add(t))
            .collect();
        let mut by_x: Vec<u32> = (0..x.len() as u32).collect();
        // Each SM's requests come in cycle order, so this stable sort merges a few runs.
        by_x.sort_by_key(|&i| x[i as usize]);
        let end = x.iter().copied().max().map_or(0, |m| m.saturating_add(1));
        XAxis::Time { x, by_x, end }
    }
    pub fn is_time(&self) -> bool {
        matches!(self, XAxis::Time { .. })
    }
}

/// The requests whose x lies in a range, in increasing x.
pub enum Visible<'a> {
    Range(std::ops::Range<usize>),
    Sorted(std::slice::Iter<'a, u32>),
}

impl Iterator for Visible<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Visible::Range(r) => r.next(),
            Visible::Sorted(it) => it.next().map(|&i| i as usize),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Visible::Range(r) => r.len(),
            Visible::Sorted(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Visible<'_> {}

/// What a box selection in the address view holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    pub x: [f64; 2],
    pub y: [f64; 2],
    pub requests: u64,
    /// Requests by [`Outcome`] code.
    pub outcomes: [u64; 5],
    pub writes: u64,
    /// Distinct lines, CTAs and warps.
    pub lines: u64,
    pub ctas: u64,
    pub warps: u64,
    /// Lowest and highest line address (`u64::MAX`, 0 when empty).
    pub lowest: u64,
    pub highest: u64,
    /// (kernel, instruction, requests), most requests first.
    pub instructions: Vec<(u32, u32, u64)>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            x: [0.0; 2],
            y: [0.0; 2],
            requests: 0,
            outcomes: [0; 5],
            writes: 0,
            lines: 0,
            ctas: 0,
            warps: 0,
            lowest: u64::MAX,
            highest: 0,
            instructions: Vec::new(),
        }
    }
}

/// A finished simulation of one pane.
pub struct SimData {
    pub config: SimConfig,
    pub report: Report,
    pub points: Points,
    /// Each request's place on the address axis ([`Segments::y`] of its line address).
    pub y: Vec<f64>,
    /// Each request's place on the time axis.
    pub x: XAxis,
    pub line_bytes: u64,
    pub sets: SetGrid,
    /// Per instruction (of every kernel), in the report's instruction order.
    pub per_inst: Vec<ClassSplit>,
    /// Per CTA, in the report's CTA order.
    pub per_cta: Vec<ClassSplit>,
    /// Miss rate over time per instruction and per SM.
    pub inst_over_time: super::over_time::OverTime,
    pub sm_over_time: super::over_time::OverTime,
}

impl SimData {
    /// Keeps a run's report and requests, and derives the per-set grid and the read/write
    /// class splits from the requests.
    pub fn new(config: SimConfig, report: Report, points: Points, trace: &TraceData) -> Self {
        let p = &points;
        let sets = config.cache.sets().max(1) as usize;
        let n = p.len();
        let per_bin = (n as u64).div_ceil(SET_BINS as u64).max(1);
        let mut grid = SetGrid {
            bins: SET_BINS,
            sets,
            per_bin,
            accesses: vec![0; sets * SET_BINS],
            misses: vec![0; sets * SET_BINS],
        };
        // Rows of the report's instruction and CTA tables, found through dense tables indexed
        // by each kernel's first slot plus the instruction or serialized CTA id.
        let kernels = &trace.trace.kernels;
        let mut inst_base = Vec::with_capacity(kernels.len() + 1);
        let mut cta_base = Vec::with_capacity(kernels.len() + 1);
        let (mut ib, mut cb) = (0usize, 0usize);
        for k in kernels {
            inst_base.push(ib);
            cta_base.push(cb);
            ib += k.instructions.len();
            cb += k.num_ctas() as usize;
        }
        let mut inst_row = vec![usize::MAX; ib];
        for (row, r) in report.instructions.iter().enumerate() {
            if let Some(slot) = inst_base
                .get(r.kernel as usize)
                .map(|b| b + r.inst as usize)
            {
                if let Some(v) = inst_row.get_mut(slot) {
                    *v = row;
                }
            }
        }
        let mut cta_row = vec![usize::MAX; cb];
        for (row, r) in report.ctas.iter().enumerate() {
            if let Some(k) = kernels.get(r.kernel as usize) {
                let id = (r.cta.z as usize * k.grid.y as usize + r.cta.y as usize)
                    * k.grid.x as usize
                    + r.cta.x as usize;
                if let Some(v) = cta_row.get_mut(cta_base[r.kernel as usize] + id) {
                    *v = row;
                }
            }
        }
        let mut per_inst = vec![ClassSplit::default(); report.instructions.len()];
        let mut per_cta = vec![ClassSplit::default(); report.ctas.len()];
        for i in 0..n {
            let set = (p.set[i] as usize).min(sets - 1);
            let bin = ((i as u64 / per_bin) as usize).min(SET_BINS - 1);
            let o = p.outcome(i);
            grid.accesses[set * SET_BINS + bin] += 1;
            if o != Outcome::Hit {
                grid.misses[set * SET_BINS + bin] += 1;
            }
            let k = p.kernel[i] as usize;
            let write = p.is_write(i);
            if let Some(&b) = inst_base.get(k) {
                if let Some(s) = inst_row
                    .get(b + p.inst[i] as usize)
                    .and_then(|&r| per_inst.get_mut(r))
                {
                    s.add(write, o);
                }
            }
            if let Some(&b) = cta_base.get(k) {
                if let Some(s) = cta_row
                    .get(b + p.cta[i] as usize)
                    .and_then(|&r| per_cta.get_mut(r))
                {
                    s.add(write, o);
                }
            }
        }
        let line_bytes = config.cache.line_bytes as u64;
        let y = points
            .line
            .iter()
            .map(|&l| trace.segments.y(l.saturating_mul(line_bytes)))
            .collect();
        let x = XAxis::new(&points);
        let name = |k: u16, i: u32| {
            let inst = kernels
                .get(k as usize)
                .and_then(|kk| kk.instructions.get(i as usize))
                .map_or_else(|| format!("instruction {i}"), |x| x.name.clone());
            inst_label(kernels.len() > 1, k as u32, &inst)
        };
        let inst_over_time =
            super::over_time::OverTime::build(&points, OVER_TIME_SLICES, false, &name);
        let sm_over_time =
            super::over_time::OverTime::build(&points, OVER_TIME_SLICES, true, &name);
        SimData {
            y,
            x,
            line_bytes,
            config,
            report,
            points,
            sets: grid,
            per_inst,
            per_cta,
            inst_over_time,
            sm_over_time,
        }
    }

    /// Request `i`'s position on the x axis.
    #[inline]
    pub fn x(&self, i: usize) -> f64 {
        match &self.x {
            XAxis::Order => i as f64,
            XAxis::Time { x, .. } => x[i] as f64,
        }
    }
    /// One past the largest x.
    pub fn x_end(&self) -> f64 {
        match &self.x {
            XAxis::Order => self.points.len() as f64,
            XAxis::Time { end, .. } => *end as f64,
        }
    }
    /// What the x axis counts.
    pub fn x_label(&self) -> &'static str {
        match &self.x {
            XAxis::Order => "request (issue order)",
            XAxis::Time { .. } => "cycle (timing model; kernels one after another)",
        }
    }
    /// The requests with `x0 <= x <= x1`, by increasing x.
    pub fn visible(&self, x0: f64, x1: f64) -> Visible<'_> {
        let n = self.points.len();
        if x1.is_nan() || x0.is_nan() || x1 < x0 || x1 < 0.0 {
            return Visible::Range(0..0);
        }
        match &self.x {
            XAxis::Order => {
                let first = (x0.max(0.0).ceil() as usize).min(n);
                let last = ((x1.floor() as usize).saturating_add(1)).min(n).max(first);
                Visible::Range(first..last)
            }
            XAxis::Time { x, by_x, .. } => {
                let lo = by_x.partition_point(|&i| (x[i as usize] as f64) < x0);
                let hi = by_x
                    .partition_point(|&i| (x[i as usize] as f64) <= x1)
                    .max(lo);
                Visible::Sorted(by_x[lo..hi].iter())
            }
        }
    }

    /// Summarizes the requests inside a box of the address view (`x` and `y` in plot units,
    /// bounds included).
    pub fn select(&self, x: [f64; 2], y: [f64; 2]) -> Selection {
        let p = &self.points;
        let mut s = Selection {
            x,
            y,
            ..Selection::default()
        };
        let mut lines = rustc_hash::FxHashSet::default();
        let mut ctas = rustc_hash::FxHashSet::default();
        let mut warps = rustc_hash::FxHashSet::default();
        let mut insts: rustc_hash::FxHashMap<(u16, u32), u64> = Default::default();
        for i in self.visible(x[0], x[1]) {
            let yi = self.y[i];
            if !(yi >= y[0] && yi <= y[1]) {
                continue;
            }
            s.requests += 1;
            s.outcomes[p.outcome(i) as usize] += 1;
            s.writes += p.is_write(i) as u64;
            let line = p.line[i].saturating_mul(self.line_bytes);
            s.lowest = s.lowest.min(line);
            s.highest = s.highest.max(line);
            lines.insert(p.line[i]);
            ctas.insert((p.kernel[i], p.cta[i]));
            warps.insert((p.kernel[i], p.cta[i], p.warp[i]));
            *insts.entry((p.kernel[i], p.inst[i])).or_default() += 1;
        }
        s.lines = lines.len() as u64;
        s.ctas = ctas.len() as u64;
        s.warps = warps.len() as u64;
        s.instructions = insts
            .into_iter()
            .map(|((k, i), n)| (k as u32, i, n))
            .collect();
        s.instructions
            .sort_unstable_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        s
    }

    /// The miss rate in percent.
    pub fn miss_percent(&self) -> f64 {
        self.report.miss_rate * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_array_is_labelled_with_the_instructions_that_touch_it() {
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, x)| (k.to_string(), x.to_string()))
                .collect()
        };
        // Three arrays side by side in one address segment.
        let t = crate::gen::generate("vecadd", &pairs(&[("n", "1024")])).unwrap();
        let d = TraceData::new(t, "vecadd".into(), None, None);
        assert_eq!(d.segments.ranges.len(), 1);
        let base = d.segments.ranges[0].0;
        let a: Vec<(u64, &str)> = d
            .arrays
            .iter()
            .map(|(a, l)| (a - base, l.as_str()))
            .collect();
        assert_eq!(a, [(0, "ld_a"), (4096, "ld_b"), (8192, "st_c")]);
        // Instructions whose ranges overlap share one array; shared memory is not an array.
        let t = crate::gen::generate("stencil2d", &pairs(&[])).unwrap();
        let d = TraceData::new(t, "stencil2d".into(), None, None);
        assert_eq!(d.arrays.len(), 2, "{:?}", d.arrays);
        assert!(d.arrays[0].1.contains(" +"), "{:?}", d.arrays);
    }

    #[test]
    fn segments_pack_distant_buffers() {
        let s = Segments::from_addresses(
            [0x1000_0000u64, 0x1000_0100, 0x7000_0000, 0x7000_2000].into_iter(),
        );
        assert_eq!(s.ranges.len(), 2);
        assert_eq!(s.y(0x1000_0000), 0.0);
        assert_eq!(s.y(0x1000_0100), 256.0);
        let second = s.y(0x7000_0000);
        assert!(second > 4096.0 && second < 16384.0, "{second}");
        assert_eq!(s.addr(s.y(0x7000_2010)), Some(0x7000_2010));
        assert_eq!(s.addr(5000.0), None);
    }
}
