//! Exact reuse distances at line granularity (Nugteren et al. 2014 §3.3): the number of distinct lines
//! referenced between two uses of a line, for the whole cache and per set.
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

pub use marks::Marks;

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

/// Exact histogram of distances plus first uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// `counts[d]` = number of reuses at distance `d`.
    pub counts: Vec<u64>,
    /// First uses (distance ∞).
    pub infinite: u64,
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
        self.infinite + self.counts.iter().sum::<u64>()
    }
    /// Misses of a fully associative LRU cache of `lines` lines: first uses plus reuses at
    /// distance `>= lines`.
    pub fn misses_at(&self, lines: u64) -> u64 {
        let start = (lines as usize).min(self.counts.len());
        self.infinite + self.counts[start..].iter().sum::<u64>()
    }
    /// Misses for every capacity from 0 to the largest distance + 1 (one pass, suffix sums).
    pub fn miss_curve(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.counts.len() + 1];
        let mut acc = self.infinite;
        out[self.counts.len()] = acc;
        for d in (0..self.counts.len()).rev() {
            acc += self.counts[d];
            out[d] = acc;
        }
        out
    }
    /// Logarithmic bins: `[0,1) [1,2) [2,4) [4,8) ...` with their counts.
    pub fn log2_bins(&self) -> Vec<LogBin> {
        let mut bins: Vec<LogBin> = Vec::new();
        for (d, &c) in self.counts.iter().enumerate() {
            let (lo, hi) = if d == 0 {
                (0, 1)
            } else {
                let lo = 1u64 << (63 - (d as u64).leading_zeros());
                (lo, lo * 2)
            };
            match bins.last_mut() {
                Some(b) if b.lo == lo => b.count += c,
                _ => bins.push(LogBin { lo, hi, count: c }),
            }
        }
        bins
    }
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
        self.whole_hist.add(whole);
        self.set_hist.add(in_set);
        Distances { whole, in_set }
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
        assert_eq!(t.whole_hist.miss_curve()[2], 4);
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
            infinite: 0,
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
