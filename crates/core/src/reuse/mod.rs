//! Reuse distances at line granularity (Nugteren et al. 2014 §3.3): the number of distinct lines
//! referenced between two uses of a line, for the whole cache and per set; exact
//! ([`ReuseTracker`]) or estimated from a sample of the lines ([`SampledTracker`]), one or the
//! other as the configuration's [`ReuseMode`](crate::config::ReuseMode) says ([`ReuseMeter`]).
//!
//! One pass, O(log N) per request: every line keeps one mark at the time of its last use (see
//! [`Marks`]); the distance of a reuse is the number of marks after the previous use.
//! A fully associative LRU cache of `n` lines hits exactly when the distance is `< n`, so the
//! histogram gives the miss-rate curve for every capacity at once.
//!
//! Every use takes a new position, so the marks are renumbered in order (compacted) whenever
//! the positions handed out reach twice the live marks (and at least [`COMPACT_MIN`]): memory
//! stays proportional to the distinct lines however long the trace, and positions fit in 32
//! bits. Renumbering keeps the order of the marks, so no distance changes.

mod marks;
mod meter;
mod near;
mod sampled;

pub use marks::Marks;
pub use meter::{ReuseHistograms, ReuseMeter};
pub use sampled::{SampledTracker, NEAR_LINES, SAMPLED_LINES, SAMPLE_LINES};

use crate::linemap::LineMap;

use serde::{Deserialize, Serialize};

/// One LRU stack (whole cache or one set).
#[derive(Clone, Debug, Default)]
struct Stack {
    marks: Marks,
    distinct: u64,
}

impl Stack {
    /// Returns the distance for a use whose previous use was at time `prev` (0 = never), and
    /// the time of this use (its mark's position + 1).
    #[inline]
    fn reuse(&mut self, prev: u32) -> (Option<u64>, u32) {
        let d = if prev == 0 {
            self.distinct += 1;
            None
        } else {
            let pos = prev as usize - 1;
            let d = self.marks.count_after(pos);
            self.marks.remove(pos);
            Some(d)
        };
        let t = self.marks.push() as u32 + 1;
        (d, t)
    }
}

/// Distances of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distances {
    /// Distinct lines since the previous use in the whole cache; `None` = first use (∞).
    pub whole: Option<u64>,
    /// The same, counting only lines of the same set.
    pub in_set: Option<u64>,
}

/// Histogram of distances plus first uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// `counts[d]` = number of reuses at distance `d`.
    pub counts: Vec<u64>,
    /// First uses (distance ∞).
    pub infinite: u64,
    /// Reuses at longer distances estimated from a sample ([`SampledTracker`]): `far[i]` at
    /// distance `i << far_bits`, the inverse of the sampling rate. Empty when exact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub far: Vec<u64>,
    #[serde(default)]
    pub far_bits: u32,
}

impl Histogram {
    #[inline]
    pub fn add(&mut self, d: Option<u64>) {
        match d {
            None => self.infinite += 1,
            Some(d) => {
                let d = d as usize;
                if d >= self.counts.len() {
                    self.counts.resize(d + 1, 0);
                }
                self.counts[d] += 1;
            }
        }
    }
    pub fn total(&self) -> u64 {
        self.infinite + self.counts.iter().sum::<u64>() + self.far.iter().sum::<u64>()
    }
    /// Whether part of it is estimated from a sample: its far uses came from a sample of
    /// less than every line (even if no sampled line was reused far away, so that the
    /// estimate of far reuses is nil).
    pub fn is_sampled(&self) -> bool {
        self.far_bits > 0 || !self.far.is_empty()
    }
    /// One more than the largest distance it can hold: every capacity from this one on
    /// misses only the first uses.
    pub fn span(&self) -> u64 {
        (self.counts.len() as u64).max((self.far.len() as u64) << self.far_bits) + 1
    }
    /// Misses of a fully associative LRU cache of `lines` lines: first uses plus reuses at
    /// distance `>= lines`.
    pub fn misses_at(&self, lines: u64) -> u64 {
        let exact = (lines.min(self.counts.len() as u64)) as usize;
        let far = (lines
            .div_ceil(1 << self.far_bits)
            .min(self.far.len() as u64)) as usize;
        self.infinite
            + self.counts[exact..].iter().sum::<u64>()
            + self.far[far..].iter().sum::<u64>()
    }
    /// Adds `other`'s counts; the finer of two samples' scales is made the coarser one's.
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.infinite += other.infinite;
        if other.far.is_empty() {
            // Sampled with no far reuse: still a sample's (an empty `far` needs no widening).
            if self.far.is_empty() {
                self.far_bits = self.far_bits.max(other.far_bits);
            }
            return;
        }
        let bits = self.far_bits.max(other.far_bits);
        self.far = widened(&self.far, bits - self.far_bits.min(bits));
        self.far_bits = bits;
        let shift = bits - other.far_bits;
        for (i, &c) in other.far.iter().enumerate() {
            let j = i >> shift;
            if j >= self.far.len() {
                self.far.resize(j + 1, 0);
            }
            self.far[j] += c;
        }
    }
    /// Logarithmic bins: `[0,1) [1,2) [2,4) [4,8) ...` with their counts, every bin up to
    /// the largest distance it can hold.
    pub fn log2_bins(&self) -> Vec<LogBin> {
        // Bin 0 is distance 0; bin k + 1 is [2^k, 2^(k+1)).
        let bin = |d: u64| {
            if d == 0 {
                0
            } else {
                64 - d.leading_zeros() as usize
            }
        };
        let mut counts = [0u64; 65];
        let mut top = None;
        let exact = self.counts.iter().enumerate().map(|(d, &c)| (d as u64, c));
        let far = self
            .far
            .iter()
            .enumerate()
            .map(|(i, &c)| ((i as u64) << self.far_bits, c));
        for (d, c) in exact.chain(far) {
            let b = bin(d);
            counts[b] += c;
            top = top.max(Some(b));
        }
        let Some(top) = top else {
            return Vec::new();
        };
        (0..=top)
            .map(|b| {
                let (lo, hi) = if b == 0 {
                    (0, 1)
                } else {
                    (1u64 << (b - 1), 1u64 << b)
                };
                LogBin {
                    lo,
                    hi,
                    count: counts[b],
                }
            })
            .collect()
    }
}

/// `far` in buckets `2^shift` times as wide.
fn widened(far: &[u64], shift: u32) -> Vec<u64> {
    if shift == 0 {
        return far.to_vec();
    }
    let mut out = vec![0; far.len().div_ceil(1 << shift)];
    for (i, &c) in far.iter().enumerate() {
        out[i >> shift] += c;
    }
    out
}

/// A histogram bin covering distances `lo..hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogBin {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
}

/// A line's last use: its position in the whole stack and in its set's stack (0 = never),
/// and its set (to find that stack when the marks are renumbered).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Last {
    whole: u32,
    in_set: u32,
    set: u32,
}

/// The fewest positions handed out before the marks are renumbered.
pub const COMPACT_MIN: usize = 1 << 22;

/// Tracks distances for a stream of (line, set) uses.
#[derive(Clone, Debug, Default)]
pub struct ReuseTracker {
    last: LineMap<Last>,
    whole: Stack,
    sets: Vec<Stack>,
    pub whole_hist: Histogram,
    pub set_hist: Histogram,
    /// The whole stack's length at which the marks are renumbered next.
    compact_at: usize,
    /// The least `compact_at` (tests lower it).
    compact_min: usize,
}

impl ReuseTracker {
    pub fn new(sets: usize) -> Self {
        ReuseTracker {
            // With one set the set's stack is the whole cache's: keep none.
            sets: if sets > 1 {
                vec![Stack::default(); sets]
            } else {
                Vec::new()
            },
            compact_at: COMPACT_MIN,
            compact_min: COMPACT_MIN,
            ..Default::default()
        }
    }
    /// A tracker that renumbers its marks once `min` positions are handed out (and then at
    /// twice the distinct lines): tests use a small `min` to renumber often.
    pub fn with_compaction(sets: usize, min: usize) -> Self {
        ReuseTracker {
            compact_at: min.max(1),
            compact_min: min.max(1),
            ..Self::new(sets)
        }
    }
    /// Renumbers every stack's marks in order, so that positions run from 0 to the live
    /// marks, and updates each line's last positions.
    #[cold]
    fn compact(&mut self) {
        let whole = &self.whole.marks;
        let sets = &self.sets;
        for last in self.last.values_mut() {
            if last.whole == 0 {
                continue;
            }
            last.whole = whole.count_before(last.whole as usize - 1) as u32 + 1;
            if let Some(stack) = sets.get(last.set as usize) {
                last.in_set = stack.marks.count_before(last.in_set as usize - 1) as u32 + 1;
            }
        }
        self.whole.marks = Marks::filled(self.whole.marks.count() as usize);
        for stack in &mut self.sets {
            stack.marks = Marks::filled(stack.marks.count() as usize);
        }
        self.compact_at = (2 * self.whole.marks.count() as usize).max(self.compact_min);
    }
    /// Records a use of `line` in `set` and returns its distances.
    #[inline]
    pub fn access(&mut self, line: u64, set: u32) -> Distances {
        let d = self.measure(line, set);
        self.whole_hist.add(d.whole);
        self.set_hist.add(d.in_set);
        d
    }

    /// [`ReuseTracker::access`] without adding to the histograms.
    #[inline]
    pub(crate) fn measure(&mut self, line: u64, set: u32) -> Distances {
        if self.whole.marks.len() >= self.compact_at {
            self.compact();
        }
        let entry = self.last.entry(line);
        let (whole, tw) = self.whole.reuse(entry.whole);
        // With one set the set's stack is the whole cache's.
        let (in_set, ts) = if self.sets.is_empty() {
            (whole, tw)
        } else {
            self.sets[set as usize].reuse(entry.in_set)
        };
        *entry = Last {
            whole: tw,
            in_set: ts,
            set,
        };
        Distances { whole, in_set }
    }

    /// Whether the lines' last uses are held one per line (`LineMap::is_sparse`: lines far
    /// apart), where each look-up is likely to miss the processor's caches and asking for
    /// them ahead pays.
    pub(crate) fn lines_far_apart(&self) -> bool {
        self.last.is_sparse()
    }

    /// Asks for `line`'s last use to be brought into the processor's caches, a few uses
    /// before it is measured (a hint; see `linetable`).
    #[inline]
    pub(crate) fn prefetch_line(&self, line: u64) {
        self.last.prefetch(line);
    }

    /// Asks for the marks at `line`'s last uses to be brought into the processor's caches,
    /// once its last use is (a hint: [`ReuseTracker::prefetch_line`] a few uses before).
    #[inline]
    pub(crate) fn prefetch_marks(&self, line: u64) {
        let last = self.last.get(line);
        if last.whole != 0 {
            self.whole.marks.prefetch(last.whole as usize - 1);
        }
        if let Some(stack) = self
            .sets
            .get(last.set as usize)
            .filter(|_| last.in_set != 0)
        {
            stack.marks.prefetch(last.in_set as usize - 1);
        }
    }

    /// A tracker of a sample of lines chosen by a hash: they lie far apart, so their last
    /// uses are kept one entry per line from the start (`LineMap::per_line`).
    pub(crate) fn for_sample(sets: usize) -> Self {
        ReuseTracker {
            last: LineMap::per_line(),
            ..Self::new(sets)
        }
    }

    /// Lines whose last use it holds.
    pub(crate) fn live_lines(&self) -> u64 {
        self.whole.marks.count()
    }

    /// A tracker that holds only the lines `keep` keeps, in the same order of last use (so
    /// each stack is this one's without the others), and no histogram.
    pub(crate) fn keep_only(&self, keep: impl Fn(u64) -> bool) -> ReuseTracker {
        let mut kept: Vec<(u32, u64, u32)> = Vec::new();
        self.last.for_each(|line, last| {
            if last.whole != 0 && keep(line) {
                kept.push((last.whole, line, last.set));
            }
        });
        kept.sort_unstable();
        let mut t = ReuseTracker {
            last: LineMap::per_line(),
            compact_min: self.compact_min,
            compact_at: self.compact_min,
            ..ReuseTracker::new(self.sets.len())
        };
        for (_, line, set) in kept {
            t.measure(line, set);
        }
        t
    }
    /// Distinct lines seen so far.
    pub fn distinct_lines(&self) -> u64 {
        self.whole.distinct
    }
    /// Bytes it holds: the last uses, the stacks' marks and the histograms.
    pub fn heap_bytes(&self) -> usize {
        self.last.heap_bytes()
            + self.whole.marks.heap_bytes()
            + self
                .sets
                .iter()
                .map(|s| s.marks.heap_bytes() + std::mem::size_of::<Stack>())
                .sum::<usize>()
            + 8 * (self.whole_hist.counts.capacity() + self.set_hist.counts.capacity())
    }
}

/// Distances of a plain sequence of lines (whole-cache stack only).
pub fn distances(lines: &[u64]) -> Vec<Option<u64>> {
    let mut t = ReuseTracker::new(1);
    lines.iter().map(|&l| t.access(l, 0).whole).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed001_table1() {
        // Address granularity row and cache-line row of table 1.
        assert_eq!(
            distances(&[0, 5, 3, 9, 3, 3, 5]),
            vec![None, None, None, None, Some(1), Some(0), Some(2)]
        );
        assert_eq!(
            distances(&[0, 1, 0, 2, 0, 0, 1]),
            vec![None, None, Some(1), None, Some(1), Some(0), Some(2)]
        );
        let mut t = ReuseTracker::new(1);
        for l in [0, 1, 0, 2, 0, 0, 1] {
            t.access(l, 0);
        }
        // 2-line cache: 3 compulsory + 1 capacity miss.
        assert_eq!(t.whole_hist.infinite, 3);
        assert_eq!(t.whole_hist.misses_at(2) - t.whole_hist.infinite, 1);
        assert_eq!(t.whole_hist.misses_at(2), 4);
    }

    #[test]
    fn renumbering_the_marks_changes_no_distance() {
        let mut rng = crate::rng::Rng::new(7);
        let mut plain = ReuseTracker::new(8);
        // Renumbered after 64 positions, then at twice the distinct lines.
        let mut compacted = ReuseTracker::with_compaction(8, 64);
        for i in 0..200_000u64 {
            // A drifting working set: old lines die, new ones come, some come back.
            let line = if i % 5 == 0 {
                rng.below(4096)
            } else {
                i / 50 + rng.below(40)
            };
            let set = (line % 8) as u32;
            assert_eq!(
                compacted.access(line, set),
                plain.access(line, set),
                "use {i}"
            );
        }
        assert_eq!(compacted.whole_hist, plain.whole_hist);
        assert_eq!(compacted.set_hist, plain.set_hist);
        // Bounded by the distinct lines, not by the 200 000 uses.
        assert!(compacted.whole.marks.len() <= 2 * 8192 + 64);
        assert!(plain.whole.marks.len() == 200_000);
    }

    #[test]
    fn per_set_stacks_only_count_their_set() {
        let mut t = ReuseTracker::new(2);
        // lines 0,2 in set 0; 1 in set 1
        let d: Vec<_> = [(0, 0), (1, 1), (2, 0), (0, 0)]
            .iter()
            .map(|&(l, s)| t.access(l, s))
            .collect();
        assert_eq!(d[3].whole, Some(2));
        assert_eq!(d[3].in_set, Some(1));
    }

    #[test]
    fn log_bins() {
        let h = Histogram {
            counts: vec![1, 2, 3, 4, 5],
            ..Default::default()
        };
        let b = h.log2_bins();
        assert_eq!(
            b,
            vec![
                LogBin {
                    lo: 0,
                    hi: 1,
                    count: 1
                },
                LogBin {
                    lo: 1,
                    hi: 2,
                    count: 2
                },
                LogBin {
                    lo: 2,
                    hi: 4,
                    count: 7
                },
                LogBin {
                    lo: 4,
                    hi: 8,
                    count: 5
                }
            ]
        );
    }
}
