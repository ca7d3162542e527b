//! Each CTA's misses by class, for its reads and for its writes: what the class columns of the
//! miss view's CTA table show (`reads/writes` per class).
//!
//! A trace may launch millions of CTAs, so an entry is six `u16` counts (12 bytes, where the
//! read/write split of every outcome took 80), kept in a [`LineMap`] by CTA slot: pages of
//! 256 slots where the CTAs that miss lie close together, one entry per CTA where they are
//! spread out (one SM of 14 simulated: one CTA in 14 has requests), so no memory goes to the
//! CTAs of the grid that made no request. A count that passes `u16::MAX` stays there and its
//! excess goes to a map, which holds at most one entry per 65,535 misses of the run.

use rustc_hash::FxHashMap;

use super::Outcome;
use warpscope_core::linemap::LineMap;

/// A CTA's misses: `[read, write][compulsory, capacity, conflict]`.
pub type Classes = [[u64; 3]; 2];

/// Misses by read/write and class, per CTA slot ([`super::Slots::cta`]).
#[derive(Clone, Debug, Default)]
pub struct CtaClasses {
    counts: LineMap<[[u16; 3]; 2]>,
    /// Slots `0..len` are kept.
    len: usize,
    /// The counts past `u16::MAX` of the saturated cells, by `slot * 6 + write * 3 + class`.
    spill: FxHashMap<u64, u64>,
}

impl CtaClasses {
    /// Room for `slots` CTAs (more slots start at zero; fewer drops the last).
    pub fn resize(&mut self, slots: usize) {
        if slots < self.len {
            self.spill.retain(|&k, _| k / 6 < slots as u64);
            for s in slots..self.len {
                if self.counts.get(s as u64) != [[0; 3]; 2] {
                    *self.counts.entry(s as u64) = [[0; 3]; 2];
                }
            }
        }
        self.len = slots;
    }

    /// Counts a request of CTA `slot` (a slot past the end is ignored). Hits and misses the
    /// model does not classify count nowhere.
    #[inline]
    pub fn add(&mut self, slot: usize, write: bool, o: Outcome) {
        let class = match o {
            Outcome::Compulsory => 0,
            Outcome::Capacity => 1,
            Outcome::Conflict => 2,
            Outcome::Hit | Outcome::Miss => return,
        };
        if slot >= self.len {
            return;
        }
        let cell = self.counts.entry(slot as u64);
        let n = &mut cell[write as usize][class];
        if *n < u16::MAX {
            *n += 1;
        } else {
            let key = slot as u64 * 6 + write as u64 * 3 + class as u64;
            *self.spill.entry(key).or_default() += 1;
        }
    }

    /// Sets CTA `slot`'s misses to `c` (a slot past the end is ignored).
    pub fn set(&mut self, slot: usize, c: &Classes) {
        if slot >= self.len {
            return;
        }
        let cell = self.counts.entry(slot as u64);
        for (w, row) in c.iter().enumerate() {
            for (k, &n) in row.iter().enumerate() {
                let max = u16::MAX as u64;
                cell[w][k] = n.min(max) as u16;
                let key = slot as u64 * 6 + w as u64 * 3 + k as u64;
                if n > max {
                    self.spill.insert(key, n - max);
                } else {
                    self.spill.remove(&key);
                }
            }
        }
    }

    /// CTA `slot`'s misses (zero for a slot past the end).
    pub fn get(&self, slot: usize) -> Classes {
        if slot >= self.len {
            return [[0; 3]; 2];
        }
        let cell = self.counts.get(slot as u64);
        let mut out = [[0u64; 3]; 2];
        for (w, row) in cell.iter().enumerate() {
            for (c, &n) in row.iter().enumerate() {
                out[w][c] = n as u64;
                if n == u16::MAX {
                    let key = slot as u64 * 6 + w as u64 * 3 + c as u64;
                    out[w][c] += self.spill.get(&key).copied().unwrap_or(0);
                }
            }
        }
        out
    }

    /// The bytes held on the heap (the map's entries at their size, without its overhead).
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.counts.heap_bytes() + self.spill.capacity() * std::mem::size_of::<(u64, u64)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CLASSES: [Outcome; 5] = Outcome::ALL;

    fn index(o: Outcome) -> Option<usize> {
        match o {
            Outcome::Compulsory => Some(0),
            Outcome::Capacity => Some(1),
            Outcome::Conflict => Some(2),
            _ => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any requests, in runs long enough to pass `u16::MAX` in some cells, count as plain
        /// `u64` counters would, slots past the end included.
        #[test]
        fn counts_as_plain_counters_do_past_a_u16(
            slots in 1usize..6,
            runs in prop::collection::vec((0usize..8, any::<bool>(), 0usize..5, 1u32..70_000), 1..12),
        ) {
            let mut c = CtaClasses::default();
            c.resize(slots);
            let mut want = vec![[[0u64; 3]; 2]; slots];
            for &(slot, write, o, times) in &runs {
                let o = CLASSES[o];
                for _ in 0..times {
                    c.add(slot, write, o);
                }
                if let (Some(w), Some(k)) = (want.get_mut(slot), index(o)) {
                    w[write as usize][k] += times as u64;
                }
            }
            for (s, w) in want.iter().enumerate() {
                prop_assert_eq!(c.get(s), *w, "slot {}", s);
            }
            prop_assert_eq!(c.get(slots), [[0; 3]; 2]);
            // What is got can be set again elsewhere, over anything there before.
            let mut copy = CtaClasses::default();
            copy.resize(slots);
            for s in 0..slots {
                copy.set(s, &want[(s + 1) % slots]);
                copy.set(s, &want[s]);
                prop_assert_eq!(copy.get(s), want[s], "slot {}", s);
            }
        }
    }

    #[test]
    fn a_cta_takes_twelve_bytes_and_a_shrink_forgets_the_spill_of_slots_dropped() {
        let mut c = CtaClasses::default();
        c.resize(1_000_000);
        // Nothing for the CTAs without misses; 12 B a CTA once they all have some (and the
        // last chunk's room to grow), and under 64 B a CTA that has some where only one in 14
        // does (a hash entry per CTA, against 168 B of pages).
        assert!(c.heap_bytes() < 1024, "{}", c.heap_bytes());
        for s in 0..1_000_000 {
            c.add(s, false, Outcome::Compulsory);
        }
        assert!(
            c.heap_bytes() <= 12 * 1_000_000 + (6 << 20),
            "{}",
            c.heap_bytes()
        );
        let mut spread = CtaClasses::default();
        spread.resize(14_000_000);
        for s in (0..14_000_000).step_by(14) {
            spread.add(s, true, Outcome::Capacity);
        }
        assert_eq!(spread.get(14 * 999)[1][1], 1);
        assert_eq!(spread.get(14 * 999 + 1), [[0; 3]; 2]);
        assert!(
            spread.heap_bytes() < 64 * 1_000_000,
            "{}",
            spread.heap_bytes()
        );
        for _ in 0..70_000 {
            c.add(999_999, true, Outcome::Conflict);
        }
        assert_eq!(c.get(999_999)[1][2], 70_000);
        c.resize(10);
        c.resize(1_000_000);
        assert_eq!(c.get(999_999), [[0; 3]; 2]);
        // Its excess went with it: counting it full again starts from nothing.
        for _ in 0..65_540 {
            c.add(999_999, true, Outcome::Conflict);
        }
        assert_eq!(c.get(999_999)[1][2], 65_540);
    }
}
