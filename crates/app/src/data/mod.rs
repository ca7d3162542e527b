//! What the views draw, computed on the worker: a loaded trace with its address segments, and a
//! simulation's report with every request as compact columns.

use std::path::PathBuf;

use warpscope_core::cache::MissClass;
use warpscope_core::config::SimConfig;
use warpscope_core::sim::{Report, RequestEvent};
use warpscope_core::trace::{Format, Kernel, Trace};

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
    /// A request's outcome from the cache's answer.
    pub fn of(hit: bool, class: Option<MissClass>) -> Outcome {
        match (hit, class) {
            (true, _) => Outcome::Hit,
            (false, Some(MissClass::Compulsory)) => Outcome::Compulsory,
            (false, Some(MissClass::Capacity)) => Outcome::Capacity,
            (false, Some(MissClass::Conflict)) => Outcome::Conflict,
            (false, None) => Outcome::Miss,
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
    /// Outcome code in the low 3 bits, bit 5 set for the first request of a warp instruction,
    /// bit 6 for a timing-model miss whose line was in flight, bit 7 for writes.
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

/// Address ranges that hold data, packed one above the other so that buffers far apart in
/// memory share one readable axis (Crawford 2014 fig. 8.1 draws each allocation separately).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Segments {
    /// (first byte, one past the last byte, axis offset of the first byte), by address.
    pub ranges: Vec<(u64, u64, f64)>,
    /// The arrays the instructions touch, by address: first byte and label
    /// ([`array_labels`]), painted beside the axis.
    pub labels: Vec<(u64, String)>,
}

/// Gap between segments on the axis, as a fraction of the total span.
const SEGMENT_GAP: f64 = 0.03;
/// Addresses closer than this belong to one segment.
const MERGE_BYTES: u64 = 1 << 20;

/// A loaded or generated trace.
pub struct TraceData {
    pub trace: Trace,
    /// File name, or the generator and its parameters.
    pub label: String,
    pub path: Option<PathBuf>,
    pub format: Option<Format>,
    /// The address segments of the accesses that reach the L1 (global and local memory).
    pub segments: Segments,
    /// Accesses that reach the L1 (shared-memory, constant and texture accesses and barriers
    /// are in the trace but not here).
    pub accesses: u64,
    /// Why reading stopped early, when only the complete kernels before an error were kept.
    pub truncated: Option<String>,
    /// `Some(bytes on disk)` for a file too large to hold: `trace` is empty, and each
    /// simulation reads the file from `path` as it runs (`worker::simulate`).
    pub streamed: Option<u64>,
}

impl TraceData {
    pub fn new(trace: Trace, label: String, path: Option<PathBuf>, format: Option<Format>) -> Self {
        let l1_addresses = || {
            trace.kernels.iter().flat_map(|k| {
                let c = k.columns();
                c.addr.iter().zip(&c.flags).filter_map(|(&a, &f)| {
                    let (kind, space) = warpscope_core::trace::model_flags(f);
                    (kind != warpscope_core::trace::AccessKind::Barrier && space.reaches_l1())
                        .then_some(a)
                })
            })
        };
        let mut segments = Segments::from_addresses(l1_addresses());
        segments.labels = array_labels(&trace);
        let accesses = l1_addresses().count() as u64;
        TraceData {
            trace,
            label,
            path,
            format,
            segments,
            accesses,
            truncated: None,
            streamed: None,
        }
    }

    /// A trace file to be read by each simulation rather than held: `bytes` on disk.
    pub fn streamed(path: PathBuf, format: Format, label: String, bytes: u64) -> Self {
        TraceData {
            streamed: Some(bytes),
            format: Some(format),
            ..TraceData::new(Trace::default(), label, Some(path), Some(format))
        }
    }

    /// Its kernels and accesses, in a few words.
    pub fn summary(&self) -> String {
        match self.streamed {
            Some(bytes) => format!(
                "{:.1} MiB read from disk as each run goes (not held in memory)",
                bytes as f64 / (1u64 << 20) as f64
            ),
            None => format!(
                "{} kernel(s), {} global/local accesses",
                self.trace.kernels.len(),
                self.accesses
            ),
        }
    }
}

/// Instruction names shown in an array's label, at most.
const LABEL_NAMES: usize = 3;

/// Time slices of the set heatmap.
pub const SET_BINS: usize = 256;
/// Time slices of the miss-rate-over-time plot.
pub const OVER_TIME_SLICES: usize = 64;

/// Requests by reads and writes and outcome, for one instruction.
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
    #[cfg(test)]
    pub fn misses(&self) -> u64 {
        self.counts.iter().map(|r| r[1..].iter().sum::<u64>()).sum()
    }
    #[cfg(test)]
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|r| r.iter().sum::<u64>()).sum()
    }
}

/// Stretches kernel `k`'s span in `spans` (one past its latest issue cycle) to hold cycle `t`.
pub fn stretch(spans: &mut Vec<u64>, k: u32, t: u64) {
    let k = k as usize;
    if spans.len() <= k {
        spans.resize(k + 1, 0);
    }
    spans[k] = spans[k].max(t.saturating_add(1));
}

/// The x axis of the address view: issue order, or the issue cycle in the timing model.
#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    /// Request `i` sits at `x = i`.
    Order,
    /// A streamed run's sample: kept request `i` is request `start + i * stride` of the run
    /// (`start` is 0 unless the requests kept are a window of the run's).
    Sampled { start: u64, stride: u64 },
    /// Request `i` sits at its issue cycle, each kernel starting where the previous one's last
    /// request was issued (SMs run side by side, so `x` is not monotonic in `i`). The requests
    /// kept may be a regular sample of a streamed run's, or of a window of it: kept request
    /// `i` is request `start + i * stride`.
    Time {
        x: Vec<u64>,
        /// Request indices by increasing `x` (ties in issue order).
        by_x: Vec<u32>,
        /// One past the largest `x`.
        end: u64,
        /// Per kernel, the cycle at which it starts on the axis (the whole run's, for a
        /// window's detail).
        bases: Vec<u64>,
        start: u64,
        stride: u64,
    },
}

impl XAxis {
    /// Builds the time axis when every request has a cycle, each kernel taking the span of
    /// its requests kept.
    fn new(p: &Points) -> XAxis {
        if p.time.is_empty() || p.time.len() != p.len() {
            return XAxis::Order;
        }
        let mut spans = Vec::new();
        for (&k, &t) in p.kernel.iter().zip(&p.time) {
            stretch(&mut spans, k.into(), t);
        }
        XAxis::timed(p, &spans, 0, 1)
    }

    /// The time axis of requests kept with their cycles (every `stride`-th from request
    /// `start`), kernel `k` taking `spans[k]` cycles: [`XAxis::Order`] if one has no cycle.
    pub fn timed(p: &Points, spans: &[u64], start: u64, stride: u64) -> XAxis {
        if p.time.len() != p.len() {
            return XAxis::Order;
        }
        let mut bases = vec![0u64; spans.len()];
        for k in 1..spans.len() {
            bases[k] = bases[k - 1].saturating_add(spans[k - 1]);
        }
        XAxis::at_bases(p, bases, start, stride)
    }

    /// [`XAxis::timed`] with the kernels' places on the axis given.
    pub fn at_bases(p: &Points, bases: Vec<u64>, start: u64, stride: u64) -> XAxis {
        let base = |k: u32| bases.get(k as usize).copied().unwrap_or(0);
        let x: Vec<u64> = p
            .kernel
            .iter()
            .zip(&p.time)
            .map(|(&k, &t)| base(k.into()).saturating_add(t))
            .collect();
        let mut by_x: Vec<u32> = (0..x.len() as u32).collect();
        // Each SM's requests come in cycle order, so this stable sort merges a few runs.
        by_x.sort_by_key(|&i| x[i as usize]);
        let end = x.iter().copied().max().map_or(0, |m| m.saturating_add(1));
        XAxis::Time {
            x,
            by_x,
            end,
            bases,
            start,
            stride,
        }
    }

    /// The kept requests' regular stride: that of a streamed run's sample, 1 otherwise.
    pub fn stride(&self) -> u64 {
        match self {
            XAxis::Sampled { stride, .. } | XAxis::Time { stride, .. } => *stride,
            XAxis::Order => 1,
        }
    }

    #[cfg(test)]
    pub fn is_time(&self) -> bool {
        matches!(self, XAxis::Time { .. })
    }
}

/// The requests whose x lies in a range, in increasing x.
pub enum Visible<'a> {
    Range(std::ops::Range<usize>),
    Sorted(std::slice::Iter<'a, u32>),
}

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

/// The communication analysis of a trace, and the launch pairs its view offers.
pub struct CommData {
    pub report: std::sync::Arc<warpscope_core::comm::CommReport>,
    /// (writer launch, reader launch) pairs with transfers.
    pub launch_pairs: Vec<(u32, u32)>,
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
    /// Per instruction (of every kernel), in the report's instruction order. (Per CTA, only
    /// the misses by class are kept, in the CTA table's rows.)
    pub per_inst: Vec<ClassSplit>,
    /// Miss rate over time per instruction and per SM.
    pub inst_over_time: super::over_time::OverTime,
    pub sm_over_time: super::over_time::OverTime,
    /// The miss view's tables (shared with the details of a streamed run's windows).
    pub miss_tables: std::sync::Arc<MissTables>,
    /// How many distinct ids each colouring of the address view has.
    pub ids: IdCounts,
    /// The simulated kernels' headers (names, shapes, instructions; [`Kernel::shape_only`]).
    pub kernels: Vec<Kernel>,
    /// The address axis.
    pub segments: Segments,
    /// A preview of a streamed run still going: totals and drawings so far, no tables.
    pub preview: bool,
    /// A run on a trace read as it ran (a file too large to hold), or a window of one.
    pub streamed: bool,
    /// The requests (numbers in the run) that `points` is limited to: the detail of a
    /// window of a streamed run ([`SimData::window_of`]); `None`: the whole run.
    pub window: Option<std::ops::Range<u64>>,
    /// Copies of a streamed run's simulation to zoom from (`checkpoints.rs`).
    pub checkpoints: std::sync::Arc<checkpoints::Checkpoints>,
}

/// One more than the largest id of each kind among the kept requests (0 when none): what the
/// address view's legends list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdCounts {
    pub thread: u32,
    pub warp: u32,
    pub cta: u32,
    pub inst: u32,
    pub sm: u32,
    pub kernel: u32,
}

impl IdCounts {
    fn new(p: &Points) -> Self {
        fn count(v: impl Iterator<Item = u32>) -> u32 {
            v.max().map_or(0, |m| m.saturating_add(1))
        }
        IdCounts {
            thread: count(p.thread.iter().copied()),
            warp: count(p.warp.iter().copied()),
            cta: count(p.cta.iter().copied()),
            inst: count(p.inst.iter().copied()),
            sm: count(p.sm.iter().map(|&v| v as u32)),
            kernel: count(p.kernel.iter().map(|&v| v as u32)),
        }
    }
}

pub mod checkpoints;
mod gather;
#[cfg(test)]
pub use gather::SAMPLE_POINTS;
pub use gather::{Gather, Preview, PreviewSlot, Slots};
mod cta_classes;
pub use cta_classes::{Classes, CtaClasses};
mod cta_rows;
mod miss_rows;
mod set_grid;
pub use set_grid::{SetGrid, SetMetric};
mod points;
mod segments;
pub use miss_rows::{MissRow, MissTables, Per};
pub use segments::array_labels;
mod sim;
pub use sim::Selecting;

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
        let t = warpscope_core::gen::generate("vecadd", &pairs(&[("n", "1024")])).unwrap();
        let d = TraceData::new(t, "vecadd".into(), None, None);
        assert_eq!(d.segments.ranges.len(), 1);
        let base = d.segments.ranges[0].0;
        let a: Vec<(u64, &str)> = d
            .segments
            .labels
            .iter()
            .map(|(a, l)| (a - base, l.as_str()))
            .collect();
        assert_eq!(a, [(0, "ld_a"), (4096, "ld_b"), (8192, "st_c")]);
        // Instructions whose ranges overlap share one array; shared memory is not an array.
        let t = warpscope_core::gen::generate("stencil2d", &pairs(&[])).unwrap();
        let d = TraceData::new(t, "stencil2d".into(), None, None);
        let arrays = &d.segments.labels;
        assert_eq!(arrays.len(), 2, "{arrays:?}");
        assert!(arrays[0].1.contains(" +"), "{arrays:?}");
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
        // The separators lie in the gaps, off every address's position (a request at a
        // segment's first address was drawn on its dashed line).
        let seps = s.separators();
        assert_eq!(seps.len(), 2);
        assert!(seps[0].1 < 0.0 && s.addr(seps[0].1).is_none(), "{seps:?}");
        assert!(
            seps[1].1 < second && seps[1].1 > s.y(0x1000_0fff),
            "{seps:?}"
        );
        assert!(s.addr(seps[1].1).is_none(), "{seps:?}");
    }
}
