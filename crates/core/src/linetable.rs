//! A hash table from line address to a small value, one entry per line, whose slot for a line
//! can be fetched into the processor's caches ahead of its use ([`LineTable::prefetch`]).
//!
//! The exact reuse tracker keeps each line's last use in a table like this one; with millions
//! of distinct lines (random addresses over a large footprint) every look-up misses the
//! processor's caches, and a reference waits for memory several times in a row (the table,
//! then the marks at the line's last position). A caller that knows the lines a few
//! references ahead (a chunk of a reference stream) can ask for their slots first, so that
//! the misses of several references overlap instead of following one another.
//!
//! Open addressing with linear probing in one array of (key, value) pairs, so a look-up that
//! finds its line reads one or two cache lines; at most 3/4 full. The one key the array
//! cannot hold (`u64::MAX`, its empty slot) is kept beside it.

const EMPTY: u64 = u64::MAX;
/// The fewest slots (a power of two).
const MIN_SLOTS: usize = 16;

#[derive(Clone, Debug)]
pub struct LineTable<V: Copy + Default> {
    slots: Vec<(u64, V)>,
    /// `64 - log2(slots)`: a line's first slot is its hash's top bits.
    shift: u32,
    /// Lines in `slots`.
    held: usize,
    /// The value of key `u64::MAX`, which marks an empty slot in `slots`.
    max_key: Option<V>,
}

impl<V: Copy + Default> Default for LineTable<V> {
    fn default() -> Self {
        LineTable {
            slots: Vec::new(),
            shift: 64,
            held: 0,
            max_key: None,
        }
    }
}

/// Fibonacci hashing: the top bits of `line` times 2^64 over the golden ratio, well spread for
/// lines that are consecutive or a stride apart.
#[inline]
fn first_slot(line: u64, shift: u32) -> usize {
    // An empty table's shift is 64: no slot.
    line.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .checked_shr(shift)
        .unwrap_or(0) as usize
}

impl<V: Copy + Default> LineTable<V> {
    /// Lines held.
    pub fn len(&self) -> usize {
        self.held + usize::from(self.max_key.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes its slots take.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<(u64, V)>()
    }

    /// The slot that holds `line`, or the empty one where it would go.
    #[inline]
    fn find(&self, line: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = first_slot(line, self.shift);
        loop {
            let k = self.slots[i].0;
            if k == line || k == EMPTY {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `line`, if it is held.
    #[inline]
    pub fn get(&self, line: u64) -> Option<&V> {
        if line == EMPTY {
            return self.max_key.as_ref();
        }
        if self.slots.is_empty() {
            return None;
        }
        let (k, v) = &self.slots[self.find(line)];
        (*k == line).then_some(v)
    }

    /// The value of `line`, added as the default if it was not held.
    #[inline]
    pub fn entry(&mut self, line: u64) -> &mut V {
        if line == EMPTY {
            return self.max_key.get_or_insert_with(V::default);
        }
        if (self.held + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let i = self.find(line);
        if self.slots[i].0 == EMPTY {
            self.slots[i] = (line, V::default());
            self.held += 1;
        }
        &mut self.slots[i].1
    }

    /// Sets the value of `line`.
    pub fn insert(&mut self, line: u64, value: V) {
        *self.entry(line) = value;
    }

    /// Asks for the cache line of `line`'s first slot, where a look-up of it starts: a hint,
    /// which changes nothing.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        if let Some(slot) = self.slots.get(first_slot(line, self.shift)) {
            crate::trace::memory::prefetch(slot);
        }
    }

    /// Twice the slots, every line placed again.
    #[cold]
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(MIN_SLOTS);
        let mut slots = Vec::with_capacity(n);
        slots.resize(n, (EMPTY, V::default()));
        let old = std::mem::replace(&mut self.slots, slots);
        self.shift = 64 - n.trailing_zeros();
        for (k, v) in old {
            if k != EMPTY {
                let i = self.find(k);
                self.slots[i] = (k, v);
            }
        }
    }

    /// Every line held and its value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        let max = self.max_key.as_ref().map(|v| (EMPTY, v));
        self.slots
            .iter()
            .filter(|(k, _)| *k != EMPTY)
            .map(|(k, v)| (*k, v))
            .chain(max)
    }

    /// Every value held, mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots
            .iter_mut()
            .filter(|(k, _)| *k != EMPTY)
            .map(|(_, v)| v)
            .chain(self.max_key.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Against a `HashMap`, on lines close together, a stride apart, anywhere, and the
        /// one key an empty slot is marked by.
        #[test]
        fn agrees_with_a_hash_map(
            ops in prop::collection::vec(
                (prop_oneof![0u64..64, (0u64..64).prop_map(|l| l << 20), any::<u64>(),
                             Just(u64::MAX), Just(u64::MAX - 1)], any::<u32>()),
                0..2000,
            ),
        ) {
            let mut t = LineTable::<u32>::default();
            let mut want = HashMap::new();
            for &(line, v) in &ops {
                t.prefetch(line);
                prop_assert_eq!(t.get(line), want.get(&line));
                if v % 3 == 0 {
                    *t.entry(line) += 1;
                    *want.entry(line).or_insert(0) += 1;
                } else {
                    t.insert(line, v);
                    want.insert(line, v);
                }
                prop_assert_eq!(t.len(), want.len());
            }
            let mut all: Vec<(u64, u32)> = t.iter().map(|(k, v)| (k, *v)).collect();
            all.sort_unstable();
            let mut w: Vec<(u64, u32)> = want.into_iter().collect();
            w.sort_unstable();
            prop_assert_eq!(all, w);
            for v in t.values_mut() {
                *v = 7;
            }
            prop_assert!(t.iter().all(|(_, v)| *v == 7));
        }
    }

    #[test]
    fn stays_at_most_three_quarters_full() {
        let mut t = LineTable::<u8>::default();
        for line in 0..100_000u64 {
            t.entry(line * 4096);
            assert!(t.held * 4 <= t.slots.len() * 3);
        }
        assert_eq!(t.len(), 100_000);
        assert_eq!(t.slots.len(), 1 << 18);
    }
}
