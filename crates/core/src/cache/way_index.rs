//! Where a line sits in a wide set: a small hash table from line to slot.
//!
//! A fully associative array (the shadow that classifies misses, a cache of one set of
//! hundreds of ways, the stack of recent lines of a sampled reuse meter) cannot scan its ways
//! on every request. It holds at most one entry per way, so its table is sized once, at four
//! times the ways, in buckets of [`BUCKET`] entries: a line's hash picks its bucket, and all
//! of the bucket's keys are compared at once, without a branch on the data. On a trace of
//! many misses a probe loop's exit is a branch the processor cannot predict, and such loops
//! (linear probing, with its removals shifting entries back) cost more than the rest of the
//! cache. A bucket that fills up spills into the next one and is marked so; marks build up
//! only as often as a bucket overflows (rarely, at a quarter full), and the table is rebuilt
//! without them when they reach an eighth of the buckets.

/// Entries per bucket.
const BUCKET: usize = 8;

/// Line to slot, for at most `capacity` lines at a time.
#[derive(Clone, Debug)]
pub struct WayIndex {
    /// `line + 1` per entry (0 = empty). Lines are below 2^62 (addresses over lines of at
    /// least 4 bytes), so `line + 1` is never 0.
    keys: Vec<[u64; BUCKET]>,
    slots: Vec<[u32; BUCKET]>,
    /// A bucket that filled up: its lines may be in the buckets after it.
    spilled: Vec<bool>,
    spills: usize,
    /// `64 - log2(buckets)`: the hash's top bits pick the bucket.
    shift: u32,
}

/// Bit `i` set where `keys[i] == key`.
#[inline]
fn matches(keys: &[u64; BUCKET], key: u64) -> u32 {
    keys.iter()
        .enumerate()
        .fold(0, |m, (i, &k)| m | ((k == key) as u32) << i)
}

impl WayIndex {
    /// A table for at most `capacity` lines.
    pub fn new(capacity: usize) -> Self {
        let buckets = Self::buckets_for(capacity);
        WayIndex {
            keys: vec![[0; BUCKET]; buckets],
            slots: vec![[0; BUCKET]; buckets],
            spilled: vec![false; buckets],
            spills: 0,
            shift: 64 - buckets.trailing_zeros(),
        }
    }

    fn buckets_for(capacity: usize) -> usize {
        (capacity * 4 / BUCKET).max(2).next_power_of_two()
    }

    /// Lines it has room for.
    pub fn capacity(&self) -> usize {
        self.keys.len() * BUCKET / 4
    }

    /// Makes room for `capacity` lines (a table that grows with what it holds costs little
    /// until it is needed).
    pub fn reserve(&mut self, capacity: usize) {
        if capacity > self.capacity() {
            let old = std::mem::replace(self, WayIndex::new(capacity));
            for (keys, slots) in old.keys.iter().zip(&old.slots) {
                for (&k, &s) in keys.iter().zip(slots) {
                    if k != 0 {
                        self.insert(k - 1, s);
                    }
                }
            }
        }
    }

    /// Bytes its table holds.
    pub fn heap_bytes(&self) -> usize {
        self.keys.len() * (BUCKET * 12 + 1)
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn next(&self, b: usize) -> usize {
        (b + 1) & (self.keys.len() - 1)
    }

    /// The bucket and entry of `key`.
    #[inline]
    fn find(&self, key: u64) -> Option<(usize, usize)> {
        let mut b = self.home(key);
        loop {
            let m = matches(&self.keys[b], key);
            if m != 0 {
                return Some((b, m.trailing_zeros() as usize));
            }
            if !self.spilled[b] {
                return None;
            }
            b = self.next(b);
        }
    }

    /// The slot of `line`, if it is held.
    #[inline]
    pub fn get(&self, line: u64) -> Option<u32> {
        self.find(line.wrapping_add(1))
            .map(|(b, i)| self.slots[b][i])
    }

    /// Records that `line`, not held, is now in `slot`.
    #[inline]
    pub fn insert(&mut self, line: u64, slot: u32) {
        let key = line.wrapping_add(1);
        let mut b = self.home(key);
        loop {
            let free = matches(&self.keys[b], 0);
            if free != 0 {
                let i = free.trailing_zeros() as usize;
                self.keys[b][i] = key;
                self.slots[b][i] = slot;
                return;
            }
            if !self.spilled[b] {
                self.spilled[b] = true;
                self.spills += 1;
            }
            b = self.next(b);
        }
    }

    /// Forgets `line` (nothing happens if it is not held).
    #[inline]
    pub fn remove(&mut self, line: u64) {
        if let Some((b, i)) = self.find(line.wrapping_add(1)) {
            self.keys[b][i] = 0;
            if self.spills * 8 > self.keys.len() {
                self.rebuild();
            }
        }
    }

    /// Puts every entry in again, with no bucket marked as spilled.
    #[cold]
    fn rebuild(&mut self) {
        let entries: Vec<(u64, u32)> = self
            .keys
            .iter()
            .zip(&self.slots)
            .flat_map(|(k, s)| k.iter().zip(s).filter(|(&k, _)| k != 0))
            .map(|(&k, &s)| (k - 1, s))
            .collect();
        for k in &mut self.keys {
            *k = [0; BUCKET];
        }
        self.spilled.iter_mut().for_each(|s| *s = false);
        self.spills = 0;
        for (line, slot) in entries {
            self.insert(line, slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Inserts and removals in any order (lines from a small range, so that buckets
        /// fill up and spill, and the table is rebuilt) keep it equal to a map.
        #[test]
        fn behaves_like_a_map(
            capacity in 1usize..40,
            ops in prop::collection::vec((any::<bool>(), prop_oneof![0u64..64, 0u64..1 << 62]), 0..400),
            crowded in any::<bool>(),
        ) {
            let mut index = WayIndex::new(capacity);
            let mut map: HashMap<u64, u32> = HashMap::new();
            for (n, (insert, line)) in ops.into_iter().enumerate() {
                // Lines of one bucket only: every insert past the eighth spills.
                let line = if crowded { line.wrapping_mul(1 << 40) >> 2 } else { line };
                if insert && !map.contains_key(&line) && map.len() < capacity {
                    index.insert(line, n as u32);
                    map.insert(line, n as u32);
                } else if !insert {
                    index.remove(line);
                    map.remove(&line);
                }
                for (&l, &s) in &map {
                    prop_assert_eq!(index.get(l), Some(s));
                }
                prop_assert_eq!(index.get(line), map.get(&line).copied());
            }
        }
    }

    #[test]
    fn a_table_that_grows_keeps_its_lines() {
        let mut index = WayIndex::new(4);
        for line in 0..1000u64 {
            if line as usize >= index.capacity() {
                index.reserve(2 * index.capacity());
            }
            index.insert(line * 7, line as u32);
        }
        for line in 0..1000u64 {
            assert_eq!(index.get(line * 7), Some(line as u32));
        }
        assert_eq!(index.get(3), None);
    }

    #[test]
    fn the_largest_line_is_a_line_like_any_other() {
        let top = u64::MAX >> 2;
        let mut index = WayIndex::new(2);
        index.insert(top, 3);
        index.insert(0, 4);
        assert_eq!(index.get(top), Some(3));
        index.remove(top);
        assert_eq!((index.get(top), index.get(0)), (None, Some(4)));
    }
}
