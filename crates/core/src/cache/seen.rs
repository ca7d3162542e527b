//! The record of every sector a cache was ever asked for, which tells a compulsory miss from a
//! capacity miss (Dinero IV's "infinite cache").
//!
//! One bit per sector, 64 to a word, the words in a [`LineMap`] (pages of 256 words, so 16 K
//! unsectored lines a page; a map of one entry per word where the pages turn out mostly
//! empty). A line's sectors (at most 32, a power of two) lie in one word. Millions of lines
//! over a few hundred MiB take a few hundred KiB, which stay in the processor's caches, where
//! a value per line took tens of MiB.
//!
//! The cache asks it only for a request that missed both the cache and its fully associative
//! shadow: one that hits either was asked for before, so its sectors are already recorded.

use crate::linemap::LineMap;

#[derive(Clone, Debug)]
pub struct Seen {
    words: LineMap<u64>,
    /// log2 of the sectors per line.
    sector_bits: u32,
    /// Lines with at least one sector recorded.
    lines: u64,
}

impl Seen {
    /// A record for lines of `2^sector_bits` sectors (at most 32).
    pub fn new(sector_bits: u32) -> Self {
        debug_assert!(sector_bits <= 5);
        Seen {
            words: LineMap::default(),
            sector_bits,
            lines: 0,
        }
    }

    /// Records `sectors` (bit i = sector i) of `line`; returns whether some of them were never
    /// recorded before.
    #[inline]
    pub fn record(&mut self, line: u64, sectors: u32) -> bool {
        let first = line << self.sector_bits;
        let shift = first & 63;
        let whole = ((1u64 << (1 << self.sector_bits)) - 1) << shift;
        let want = (sectors as u64) << shift;
        let word = self.words.entry(first >> 6);
        let was = *word;
        *word = was | want;
        self.lines += (was & whole == 0) as u64;
        was & want != want
    }

    /// Asks for `line`'s word to be brought into the processor's caches (a hint).
    #[inline]
    pub fn prefetch(&mut self, line: u64) {
        self.words.prefetch_paged((line << self.sector_bits) >> 6);
    }

    /// Bytes its words take.
    #[inline]
    pub fn word_bytes(&self) -> usize {
        self.words.value_bytes()
    }

    /// Lines of which some sector was recorded.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes its words hold.
    pub fn heap_bytes(&self) -> usize {
        self.words.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    proptest! {
        /// Against a plain map of each line's sectors.
        #[test]
        fn agrees_with_a_map_of_sectors(
            sector_bits in 0u32..6,
            requests in prop::collection::vec(
                (prop_oneof![0u64..300, 0u64..1 << 40], any::<u32>()),
                0..400,
            ),
        ) {
            let mut seen = Seen::new(sector_bits);
            let mut map: HashMap<u64, u32> = HashMap::new();
            let all = if sector_bits == 5 { u32::MAX } else { (1u32 << (1 << sector_bits)) - 1 };
            for (line, sectors) in requests {
                let sectors = (sectors & all).max(1);
                let had = map.entry(line).or_default();
                let new = *had & sectors != sectors;
                *had |= sectors;
                prop_assert_eq!(seen.record(line, sectors), new);
            }
            prop_assert_eq!(seen.lines(), map.len() as u64);
        }
    }

    #[test]
    fn millions_of_lines_over_a_region_take_a_bit_each() {
        let mut seen = Seen::new(0);
        let mut rng = crate::rng::Rng::new(3);
        let mut set = HashSet::new();
        // Random lines of 256 MiB of 128 B lines.
        for _ in 0..1_000_000 {
            let line = (0x6_0000_0000u64 >> 7) + rng.below(1 << 21);
            assert_eq!(seen.record(line, 1), set.insert(line));
        }
        assert_eq!(seen.lines(), set.len() as u64);
        assert!(seen.heap_bytes() < 600 << 10, "{} B", seen.heap_bytes());
    }
}
