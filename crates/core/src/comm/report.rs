//! What the communication analysis reports, and how the report is assembled from the passes'
//! results: the types the CLI and the app read, the queries the views make of them (density
//! maps, transfer-size CDFs), and [`summarize`], which turns the transfers, per-launch
//! figures and stride counts into the report.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::pairs::pairs_and_out_degrees;
use super::strides::{top_strides, StrideCounts};
use super::transfers::Transfers;
use crate::trace::{Dim3, Trace};

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
    /// unless more than [`STRIDE_SLOTS`](super::STRIDE_SLOTS) distinct strides were seen (see
    /// [`StrideCounts`]).
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

/// The report from the ordered transfers, the per-launch figures of the first pass and the
/// stride counts of both passes.
pub(super) fn summarize(
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
