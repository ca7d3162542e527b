//! Histograms of byte strides in bounded memory: counts of the strides between consecutive
//! communicated loads (or stores) of a CTA, exact up to [`STRIDE_SLOTS`] distinct strides and
//! bounded beyond.

use rustc_hash::FxHashMap;

use super::report::{Strides, MAX_STRIDES};
use super::tuning::PROBATION;

/// The stride from one address to the next, as a signed byte count.
pub(super) fn stride(from: u64, to: u64) -> i64 {
    to.wrapping_sub(from) as i64
}

/// The number of distinct strides a histogram counts exactly.
pub const STRIDE_SLOTS: usize = 4096;

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
pub(super) struct StrideCounts {
    counts: FxHashMap<i64, u64>,
    floor: u64,
    /// The latest stride and how many times in a row it came, not yet in `counts`.
    run: Option<Counted>,
    /// Strides on probation with their counts (count 0: an empty slot); allocated when the
    /// table fills.
    probation: Vec<Counted>,
}

/// A stride and its count.
#[derive(Clone, Copy, Default)]
struct Counted {
    stride: i64,
    count: u64,
}

impl StrideCounts {
    pub(super) fn add(&mut self, s: i64) {
        match &mut self.run {
            Some(r) if r.stride == s => r.count += 1,
            run => {
                let next = Counted {
                    stride: s,
                    count: 1,
                };
                if let Some(r) = run.replace(next) {
                    self.add_n(r.stride, r.count);
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
        let count = if slot.count != 0 && slot.stride == s {
            // Seen again on probation: it enters the table.
            slot.count + n
        } else {
            // It takes the slot; with a second count at once it enters the table.
            if slot.count != 0 {
                self.floor = self.floor.max(slot.count);
            }
            if n == 1 {
                *slot = Counted {
                    stride: s,
                    count: self.floor + 1,
                };
                return;
            }
            self.floor + n
        };
        *slot = Counted::default();
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
        self.probation = vec![Counted::default(); PROBATION];
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
    pub(super) fn settle(mut self) -> (FxHashMap<i64, u64>, u64) {
        if let Some(r) = self.run.take() {
            self.add_n(r.stride, r.count);
        }
        for c in &self.probation {
            if c.count != 0 {
                self.counts.insert(c.stride, c.count);
            }
        }
        (self.counts, self.floor)
    }
}

/// The [`MAX_STRIDES`] most frequent strides, most frequent first (ties by stride).
pub(super) fn top_strides(h: FxHashMap<i64, u64>) -> Strides {
    let mut v: Strides = h.into_iter().collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(MAX_STRIDES);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::tuning::PROBATION;

    #[test]
    fn stride_counts_are_exact_up_to_the_slots_and_bounded_beyond() {
        // Exact: STRIDE_SLOTS distinct strides.
        let mut h = StrideCounts::default();
        for s in 0..STRIDE_SLOTS as i64 {
            for _ in 0..(s % 5 + 1) {
                h.add(s);
            }
        }
        let (counts, floor) = h.settle();
        assert_eq!(floor, 0);
        assert_eq!(counts.len(), STRIDE_SLOTS);
        assert!(counts.iter().all(|(&s, &c)| c == (s % 5 + 1) as u64));

        // Beyond: 10^5 random strides with 128 every third time and -4 every seventh.
        let mut h = StrideCounts::default();
        let mut rng = crate::rng::Rng::new(11);
        let mut truth: FxHashMap<i64, u64> = FxHashMap::default();
        for i in 0..100_000u64 {
            let s = if i % 3 == 0 {
                128
            } else if i % 7 == 0 {
                -4
            } else {
                rng.below(1 << 40) as i64
            };
            *truth.entry(s).or_default() += 1;
            h.add(s);
        }
        let (counts, floor) = h.settle();
        assert!(floor > 0 && counts.len() <= STRIDE_SLOTS + PROBATION);
        for (s, &c) in &counts {
            assert!(c >= truth[s] && c <= truth[s] + floor, "stride {s}");
        }
        let top = top_strides(counts);
        assert_eq!(top[0].0, 128);
        assert_eq!(top[1].0, -4);
        assert_eq!(top[0].1, truth[&128]);
    }

    #[test]
    fn stride_runs_leave_the_table_as_single_adds_would() {
        // Runs of repeated strides among many distinct ones, so the table evicts meanwhile.
        let mut rng = crate::rng::Rng::new(5);
        let mut runs = StrideCounts::default();
        let mut single = StrideCounts::default();
        for _ in 0..20_000 {
            let s = if rng.below(4) == 0 {
                rng.below(8) as i64
            } else {
                rng.below(1 << 30) as i64
            };
            for _ in 0..1 + rng.below(5) {
                runs.add(s);
                single.add_n(s, 1);
            }
        }
        let (a, fa) = runs.settle();
        let (b, fb) = single.settle();
        assert!(fb > 0, "the table must have evicted");
        assert_eq!((fa, a), (fb, b));
    }
}
