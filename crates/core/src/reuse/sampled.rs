//! Reuse distances of a sample of the lines: SHARDS (Waldspurger et al. 2015), in its
//! fixed-size form, so that memory is bounded however many lines the trace touches, with the
//! distances below a depth measured without the sample.
//!
//! A line is in the sample when its hash is below a threshold, so a sampled line has every
//! one of its uses measured and an unsampled line none. Among the sampled lines the distances
//! are exact ([`ReuseTracker`]); a distance of `d` sampled lines at sampling rate `R` stands
//! for `d / R` lines, and each sampled use for `1 / R` uses. The rate starts at 1 (every
//! line: the result is exact while the trace touches at most [`SAMPLE_LINES`] lines); once
//! the trace outgrows that, it halves until the sample holds at most [`SAMPLED_LINES`] lines,
//! and again whenever it outgrows them: the lines whose hash is above the new threshold leave
//! it (they would not have been sampled at the new rate). The sample is smaller once it is a
//! sample because its cost is one exact measurement per sampled use (a quarter of the lines
//! measure a quarter of the uses), and the stack of recent lines below is deeper to make up
//! for it: a sample errs most on the distances just past that stack, where few sampled lines
//! stand for many uses (`docs/speed-history.md`, "A smaller sample, a deeper stack"). What
//! was counted before stays, in estimated uses (the paper rescales its counts at each change
//! of rate to the same effect); each bucket of the histogram is then twice as wide, the counts
//! of an odd bucket split between its two neighbours. Halving, rather than lowering the
//! threshold a line at a time, keeps every scaled distance a multiple of a power of two, so the
//! histogram has at most [`SAMPLE_LINES`] buckets at any rate.
//!
//! A sample cannot tell apart distances below `1 / R` (at a rate of 1/128, a cache of 16
//! lines from one of 128, which is what a GPU's L1 holds), so every use also goes through a
//! [`NearStack`] of the most recently used lines: a use it finds has its distance measured
//! there (its log2 bin, and whether it is below the cache's capacity, exactly; within the
//! set, exactly), and only the others, at least its depth away, are estimated from the
//! sample. The uses that went past the near stack are counted exactly, and the sample's
//! estimate of them is made to add up to that count (the paper's `SHARDS_adj` gives the
//! difference to the shortest distance, because a sample errs most on the lines used most;
//! here those are measured, and what is left is scaled).
//!
//! The sampled lines are also split in two halves by another bit of their hash, each half's
//! estimate kept at twice the weight: the two halves are independent samples of the same
//! trace, and half the difference of their miss-rate curves estimates the error of the whole
//! sample's curve (`report::ReuseReport::expected_error`).

use super::near::NearStack;
use super::{Distances, Histogram, ReuseTracker};

/// Bits of the hash that pick the sample: a line is in it when its hash's top bits are below
/// `2^HASH_BITS >> scale_bits`.
const HASH_BITS: u32 = 24;

/// Lines the sample holds at most while it holds every line (the distances are exact); one
/// more, and the sampling rate falls until it holds at most [`SAMPLED_LINES`].
pub const SAMPLE_LINES: usize = 1 << 15;

/// Lines the sample holds at most once the rate has fallen below 1; one more halves it.
pub const SAMPLED_LINES: usize = 1 << 13;

/// The least depth of the near stack, below which the distances are measured without the
/// sample (the cache's own capacity is always below it: its depth is at least twice that).
pub const NEAR_LINES: usize = 1 << 12;

/// Reuse distances estimated from the lines a hash samples, exact below a depth.
#[derive(Clone, Debug)]
pub struct SampledTracker {
    near: NearStack,
    depth: u64,
    /// Exact distances among the sampled lines.
    sample: ReuseTracker,
    /// The sampling rate is `2^-scale_bits`.
    scale_bits: u32,
    /// Lines the sample holds at most at the full rate (below it, [`SampledTracker::most_lines`]).
    max_lines: usize,
    /// Reuses found in the near stack, by distance (a whole-cache distance at the start of
    /// its segment), in the whole cache and within the set.
    near_whole: Vec<u64>,
    near_set: Vec<u64>,
    /// Estimated reuses past the near stack at distance `i << scale_bits`.
    far_whole: Vec<f64>,
    far_set: Vec<f64>,
    /// Estimated first uses.
    infinite: f64,
    /// `far_whole` and `infinite` of each half of the sample, each estimating the trace's.
    halves: [Vec<f64>; 2],
    half_infinite: [f64; 2],
    /// Uses the near stack did not find, in the whole cache and within the set (exactly
    /// counted).
    far_uses: u64,
    far_set_uses: u64,
    /// The exact histograms (whole cache, within the set), while every line is in the sample
    /// (until the rate first halves).
    exact: Option<(Histogram, Histogram)>,
}

/// The hash that samples a line (SplitMix64's finaliser: every bit of the line moves the top
/// bits and the lowest).
#[inline]
fn hash(line: u64) -> u64 {
    let mut z = line.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Adds `weight` at bucket `i`.
#[inline]
fn add<T: Copy + Default + std::ops::AddAssign>(buckets: &mut Vec<T>, i: u64, weight: T) {
    let i = i as usize;
    if i >= buckets.len() {
        buckets.resize(i + 1, T::default());
    }
    buckets[i] += weight;
}

/// The buckets made twice as wide: bucket `2j` goes to `j`, an odd bucket `2j + 1` half to
/// `j` and half to `j + 1` (its distance lies between them).
fn widen(buckets: &mut Vec<f64>) {
    let mut wide = vec![0.0; buckets.len() / 2 + 1];
    for (i, &w) in buckets.iter().enumerate() {
        if i % 2 == 0 {
            wide[i / 2] += w;
        } else {
            wide[i / 2] += w / 2.0;
            wide[i / 2 + 1] += w / 2.0;
        }
    }
    while wide.last() == Some(&0.0) {
        wide.pop();
    }
    *buckets = wide;
}

/// A histogram of the exact reuses `near` and the estimated `far` ones and first uses, scaled
/// by `scale` (the estimate's weights made to add up to the uses past the near stack). The
/// estimates are rounded as running sums, so that the counts add up to the rounded total.
fn histogram(near: &[u64], far: &[f64], infinite: f64, scale: f64, far_bits: u32) -> Histogram {
    let mut sum = 0.0;
    let mut rounded = 0u64;
    let mut round = |w: f64| {
        sum += w * scale;
        let now = sum.round().max(0.0) as u64;
        let count = now.saturating_sub(rounded);
        rounded = rounded.max(now);
        count
    };
    let far = far.iter().map(|&w| round(w)).collect();
    let mut h = Histogram {
        counts: near.to_vec(),
        infinite: round(infinite),
        far,
        far_bits,
    };
    // At the full rate the sample is exact: its distances are the trace's.
    if far_bits == 0 {
        let far = std::mem::take(&mut h.far);
        for (d, c) in far.into_iter().enumerate() {
            add(&mut h.counts, d as u64, c);
        }
    }
    h
}

impl SampledTracker {
    /// A tracker for a cache of `sets` sets and `lines` lines whose sample holds at most
    /// [`SAMPLE_LINES`] lines.
    pub fn new(sets: usize, lines: usize) -> Self {
        Self::holding(sets, lines, NEAR_LINES.max(2 * lines), SAMPLE_LINES)
    }

    /// One for a cache of `lines` lines whose near stack holds `depth` lines and whose sample
    /// at most `max_lines` lines at the full rate, and the same share of them as
    /// [`SAMPLED_LINES`] is of [`SAMPLE_LINES`] below it (tests use few).
    pub fn holding(sets: usize, lines: usize, depth: usize, max_lines: usize) -> Self {
        SampledTracker {
            near: NearStack::new(depth, sets, lines),
            depth: depth.max(1) as u64,
            sample: ReuseTracker::for_sample(sets),
            scale_bits: 0,
            max_lines: max_lines.max(1),
            near_whole: Vec::new(),
            near_set: Vec::new(),
            far_whole: Vec::new(),
            far_set: Vec::new(),
            infinite: 0.0,
            halves: [Vec::new(), Vec::new()],
            half_infinite: [0.0; 2],
            far_uses: 0,
            far_set_uses: 0,
            exact: Some(Default::default()),
        }
    }

    /// The current sampling rate's `log2(1 / rate)`.
    pub fn scale_bits(&self) -> u32 {
        self.scale_bits
    }

    /// Records a use of `line` in `set`: its distances where the near stack holds the line
    /// (a whole-cache distance is then its segment's shortest, `NearStack::access`) or the
    /// line is in the sample (estimated), `None` otherwise.
    #[inline]
    pub fn access(&mut self, line: u64, set: u32) -> Option<Distances> {
        let (near_whole, near_set) = self.near.access(line, set);
        // With one set, the set's distances are the whole cache's.
        let (near_set, set_floor) = match self.near.set_depth() {
            0 => (near_whole, self.depth),
            d => (near_set, d as u64),
        };
        let h = hash(line);
        let sampled = (h >> (64 - HASH_BITS)) < (1 << HASH_BITS) >> self.scale_bits;
        let far = sampled.then(|| {
            let d = self.sample.measure(line, set);
            let bits = self.scale_bits;
            // While every line is in the sample, its distances are the trace's.
            if let Some(exact) = &mut self.exact {
                exact.0.add(d.whole);
                exact.1.add(d.in_set);
            }
            // Past the near stack, a line is at least its depth away (its set's, within it).
            let whole = d.whole.map(|d| (d << bits).max(self.depth));
            let in_set = d.in_set.map(|d| (d << bits).max(set_floor));
            let weight = (1u64 << bits) as f64;
            if near_whole.is_none() {
                let half = (h & 1) as usize;
                match whole {
                    None => {
                        self.infinite += weight;
                        self.half_infinite[half] += 2.0 * weight;
                    }
                    Some(d) => {
                        add(&mut self.far_whole, d >> bits, weight);
                        add(&mut self.halves[half], d >> bits, 2.0 * weight);
                    }
                }
            }
            if let (None, Some(d)) = (near_set, in_set) {
                add(&mut self.far_set, d >> bits, weight);
            }
            if self.sample.live_lines() > self.most_lines() {
                self.halve();
            }
            // Exact at the full rate; the estimate past the near stack after.
            match bits {
                0 => d,
                _ => Distances { whole, in_set },
            }
        });
        match near_whole {
            Some(d) => add(&mut self.near_whole, d, 1),
            None => self.far_uses += 1,
        }
        match near_set {
            Some(d) => add(&mut self.near_set, d, 1),
            None => self.far_set_uses += 1,
        }
        if self.scale_bits == 0 {
            return far;
        }
        let whole = near_whole.or(far.and_then(|f| f.whole));
        let in_set = near_set.or(far.and_then(|f| f.in_set));
        (near_whole.is_some() || far.is_some()).then_some(Distances { whole, in_set })
    }

    /// Lines the sample may hold at the current rate.
    #[inline]
    fn most_lines(&self) -> u64 {
        match self.scale_bits {
            0 => self.max_lines as u64,
            _ => (self.max_lines / (SAMPLE_LINES / SAMPLED_LINES)).max(1) as u64,
        }
    }

    /// Halves the sampling rate until the sample holds at most the lines it may at the new
    /// rate: the lines above the new threshold leave it.
    #[cold]
    fn halve(&mut self) {
        self.exact = None;
        while self.sample.live_lines() > self.most_lines() && self.scale_bits < HASH_BITS {
            self.scale_bits += 1;
            let limit = (1u64 << HASH_BITS) >> self.scale_bits;
            self.sample = self
                .sample
                .keep_only(|line| hash(line) >> (64 - HASH_BITS) < limit);
            widen(&mut self.far_whole);
            widen(&mut self.far_set);
            for h in &mut self.halves {
                widen(h);
            }
        }
    }

    /// The factor that makes estimated uses `weights` add up to `uses`, the uses past the
    /// near stack.
    fn scale(uses: u64, weights: f64) -> f64 {
        if weights > 0.0 {
            uses as f64 / weights
        } else {
            1.0
        }
    }

    /// The histograms: whole cache, within the set, and of each half of the sample. Each
    /// holds as many uses as were seen: the estimates are scaled to the uses the near stack
    /// did not find.
    pub fn histograms(&self) -> (Histogram, Histogram, [Histogram; 2]) {
        if let Some((whole, in_set)) = &self.exact {
            return (
                whole.clone(),
                in_set.clone(),
                [whole.clone(), whole.clone()],
            );
        }
        let bits = self.scale_bits;
        let estimate = |near: &[u64], far: &[f64], infinite: f64, uses: u64| {
            let scale = Self::scale(uses, far.iter().sum::<f64>() + infinite);
            histogram(near, far, infinite, scale, bits)
        };
        let whole = estimate(
            &self.near_whole,
            &self.far_whole,
            self.infinite,
            self.far_uses,
        );
        let in_set = estimate(
            &self.near_set,
            &self.far_set,
            self.infinite,
            self.far_set_uses,
        );
        let halves = [0, 1].map(|i| {
            let (far, infinite) = (&self.halves[i], self.half_infinite[i]);
            estimate(&self.near_whole, far, infinite, self.far_uses)
        });
        (whole, in_set, halves)
    }

    /// Estimated distinct lines (the sample's first uses, scaled as the histograms are).
    pub fn distinct_lines(&self) -> u64 {
        if let Some((whole, _)) = &self.exact {
            return whole.infinite;
        }
        let far = self.far_whole.iter().sum::<f64>() + self.infinite;
        (self.infinite * Self::scale(self.far_uses, far)).round() as u64
    }

    /// Bytes it holds: the near stack, the sample's tracker and the buckets.
    pub fn heap_bytes(&self) -> usize {
        self.near.heap_bytes()
            + self.sample.heap_bytes()
            + 8 * (self.near_whole.capacity()
                + self.near_set.capacity()
                + self.far_whole.capacity()
                + self.far_set.capacity()
                + self.halves.iter().map(Vec::capacity).sum::<usize>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A stream that never reuses a line outgrows the sample all the same: its result is a
    /// sample's (rate below 1), even though no sampled line came back, and says so through
    /// a merge with other SMs' histograms too; its first uses are every line, exactly.
    #[test]
    fn a_stream_without_reuse_is_still_reported_as_sampled() {
        let mut t = SampledTracker::new(32, 128);
        let lines = 4 * SAMPLE_LINES as u64;
        for line in 0..lines {
            t.access(line, (line % 32) as u32);
        }
        let (whole, in_set, _) = t.histograms();
        assert!(whole.far.is_empty());
        assert!(whole.is_sampled() && in_set.is_sampled());
        assert_eq!(whole.infinite, lines);
        let mut merged = Histogram::default();
        merged.merge(&whole);
        assert!(merged.is_sampled());
        assert_eq!(merged.far_bits, whole.far_bits);
    }

    /// Lines of a trace that mixes a hot set, a stream and random lines of a large region.
    fn trace(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let mut pos = 0;
        (0..n)
            .map(|_| match rng.below(10) {
                0..=3 => rng.below(300),
                4..=6 => {
                    pos += 1;
                    10_000 + pos % 50_000
                }
                _ => 1_000_000 + rng.below(200_000),
            })
            .collect()
    }

    /// The miss rate of a fully associative LRU cache of each capacity.
    fn curve(h: &Histogram, caps: &[u64]) -> Vec<f64> {
        caps.iter()
            .map(|&c| h.misses_at(c) as f64 / h.total().max(1) as f64)
            .collect()
    }

    fn mean_gap(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64
    }

    #[test]
    fn exact_while_the_sample_holds_every_line() {
        let lines = trace(50_000, 1);
        let mut exact = ReuseTracker::new(4);
        let mut sampled = SampledTracker::holding(4, 24, 64, 1 << 20);
        for &l in &lines {
            let set = (l % 4) as u32;
            let want = exact.access(l, set);
            let got = sampled.access(l, set).unwrap();
            assert_eq!(got.in_set, want.in_set);
            // Below the near stack's depth, a distance's segment's start; past it, exact.
            match (got.whole, want.whole) {
                (Some(g), Some(w)) if w < 64 => {
                    assert!(g <= w && g.max(1).ilog2() == w.max(1).ilog2())
                }
                (g, w) => assert_eq!(g, w),
            }
        }
        let (whole, in_set, halves) = sampled.histograms();
        assert_eq!(sampled.scale_bits(), 0);
        assert!(!whole.is_sampled());
        assert_eq!(whole.log2_bins(), exact.whole_hist.log2_bins());
        for c in (0..20).map(|k| 1u64 << k).chain([24]) {
            assert_eq!(
                whole.misses_at(c),
                exact.whole_hist.misses_at(c),
                "{c} lines"
            );
        }
        assert_eq!(in_set, exact.set_hist);
        // Each half estimates the whole (they differ: each holds half the lines).
        for h in &halves {
            assert_eq!(h.total(), whole.total());
        }
    }

    /// Every line is in the sample up to `SAMPLE_LINES` distinct lines; one more, and the
    /// rate falls until the sample holds at most `SAMPLED_LINES`, and stays so.
    #[test]
    fn the_sample_shrinks_once_it_is_a_sample() {
        let mut t = SampledTracker::new(32, 128);
        let touch = |t: &mut SampledTracker, lines: std::ops::Range<u64>| {
            for line in lines {
                t.access(line, (line % 32) as u32);
            }
        };
        touch(&mut t, 0..SAMPLE_LINES as u64);
        assert_eq!(t.scale_bits(), 0);
        assert_eq!(t.sample.live_lines(), SAMPLE_LINES as u64);
        touch(&mut t, SAMPLE_LINES as u64..SAMPLE_LINES as u64 + 1);
        assert!(t.scale_bits() >= 2, "rate 1/{}", 1 << t.scale_bits());
        assert!(t.sample.live_lines() <= SAMPLED_LINES as u64);
        touch(&mut t, 1 << 20..1 << 22);
        assert!(t.sample.live_lines() <= SAMPLED_LINES as u64);
        assert!(t.sample.live_lines() > SAMPLED_LINES as u64 / 4);
    }

    #[test]
    fn a_small_sample_estimates_the_miss_rate_curve() {
        let lines = trace(400_000, 2);
        let mut exact = ReuseTracker::new(1);
        let mut sampled = SampledTracker::holding(1, 64, 512, 8192);
        for &l in &lines {
            exact.access(l, 0);
            sampled.access(l, 0);
        }
        let bits = sampled.scale_bits();
        assert!(bits >= 5, "the rate halved to 1/{}", 1 << bits);
        let (whole, _, halves) = sampled.histograms();
        assert!(whole.is_sampled());
        assert_eq!(whole.total(), lines.len() as u64);
        assert!(sampled.sample.live_lines() <= 2048);
        let caps: Vec<u64> = (0..20).map(|k| 1 << k).collect();
        let want = curve(&exact.whole_hist, &caps);
        let got = curve(&whole, &caps);
        // Below the near stack's depth, exact.
        assert_eq!(want[..10], got[..10]);
        let mae = mean_gap(&want, &got);
        assert!(
            mae < 0.01,
            "mean absolute error {mae}: {want:?} against {got:?}"
        );
        // The halves' difference is of the size of the error.
        let expected = mean_gap(&curve(&halves[0], &caps), &curve(&halves[1], &caps)) / 2.0;
        assert!(expected < 0.02 && expected > 0.0, "{expected}");
        // The estimated distinct lines are near the true ones.
        let distinct = exact.distinct_lines() as f64;
        let est = sampled.distinct_lines() as f64;
        assert!(
            (est - distinct).abs() / distinct < 0.15,
            "{est} against {distinct}"
        );
    }

    #[test]
    fn widening_keeps_the_weight_and_the_mean_distance() {
        let mut b = vec![1.0, 2.0, 4.0, 8.0, 0.0, 6.0];
        let mean = |b: &[f64], width: f64| {
            b.iter()
                .enumerate()
                .map(|(i, w)| i as f64 * width * w)
                .sum::<f64>()
                / b.iter().sum::<f64>()
        };
        let before = mean(&b, 1.0);
        widen(&mut b);
        assert_eq!(b, vec![2.0, 9.0, 7.0, 3.0]);
        assert!((mean(&b, 2.0) - before).abs() < 1e-9);
    }
}
