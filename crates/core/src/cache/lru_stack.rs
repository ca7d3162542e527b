//! A fully associative LRU cache that every request allocates in: the shadow that classifies
//! a cache's misses wherever that shadow is an LRU stack (LRU, write-allocate, unsectored
//! lines; see `CacheModel::shadow_is_a_stack`).
//!
//! Its ways form one doubly linked recency list, and a [`WayIndex`] finds a line's way: a
//! request is one look-up in a table of four times the ways, which stays in the processor's
//! first-level cache however many lines the trace touches. Whether a line it does not hold
//! was ever seen is the classifier's record of sectors seen (`super::Seen`).

use super::way_index::WayIndex;

const NIL: u32 = u32::MAX;

/// A fully associative LRU cache of `capacity` lines.
#[derive(Clone, Debug)]
pub struct LruStack {
    /// The way of each line held.
    index: WayIndex,
    /// The line each way holds (ways `0..fill`).
    line_of: Vec<u64>,
    /// The recency list: towards the most recently used way, and towards the least.
    prev: Vec<u32>,
    next: Vec<u32>,
    /// The most and the least recently used way (`NIL` while empty).
    head: u32,
    tail: u32,
    /// Ways holding a line.
    fill: u32,
}

impl LruStack {
    pub fn new(capacity: u32) -> Self {
        let n = capacity as usize;
        LruStack {
            index: WayIndex::new(n),
            line_of: vec![0; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            fill: 0,
        }
    }

    /// Lines it holds when full.
    pub fn capacity(&self) -> u32 {
        self.line_of.len() as u32
    }

    /// Uses `line`: it becomes the most recently used, given a way if it was not held (the
    /// least recently used line gives up its way when all are taken). Returns whether it
    /// was held (its reuse distance is below the capacity).
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        if let Some(way) = self.index.get(line) {
            if self.head != way {
                self.unlink(way);
                self.push_front(way);
            }
            return true;
        }
        let capacity = self.capacity();
        let way = if self.fill < capacity {
            self.fill += 1;
            self.fill - 1
        } else if capacity == 0 {
            return false;
        } else {
            let victim = self.tail;
            self.unlink(victim);
            self.index.remove(self.line_of[victim as usize]);
            victim
        };
        self.line_of[way as usize] = line;
        self.push_front(way);
        self.index.insert(line, way);
        false
    }

    #[inline]
    fn unlink(&mut self, way: u32) {
        let (p, n) = (self.prev[way as usize], self.next[way as usize]);
        match p {
            NIL => self.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NIL => self.tail = p,
            n => self.prev[n as usize] = p,
        }
    }

    #[inline]
    fn push_front(&mut self, way: u32) {
        self.prev[way as usize] = NIL;
        self.next[way as usize] = self.head;
        match self.head {
            NIL => self.tail = way,
            h => self.prev[h as usize] = way,
        }
        self.head = way;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition: a list of lines, most recently used first.
    fn plain(capacity: usize, lines: &[u64]) -> Vec<bool> {
        let mut stack: Vec<u64> = Vec::new();
        lines
            .iter()
            .map(|&l| {
                let hit = match stack.iter().position(|&s| s == l) {
                    Some(i) => {
                        stack.remove(i);
                        true
                    }
                    None => false,
                };
                stack.insert(0, l);
                stack.truncate(capacity);
                hit
            })
            .collect()
    }

    proptest! {
        #[test]
        fn agrees_with_a_plain_lru_list(
            capacity in 0usize..40,
            // Lines from a small range (hits), nearby and far apart.
            lines in prop::collection::vec(
                prop_oneof![0u64..60, 250u64..300, (0u64..1 << 62)],
                0..600,
            ),
        ) {
            let mut s = LruStack::new(capacity as u32);
            let got: Vec<bool> = lines.iter().map(|&l| s.access(l)).collect();
            prop_assert_eq!(got, plain(capacity, &lines));
        }
    }

    #[test]
    fn a_full_stack_gives_up_its_least_recently_used_line() {
        let mut s = LruStack::new(2);
        let got: Vec<_> = [1, 2, 1, 3, 2, 1, 3].iter().map(|&l| s.access(l)).collect();
        // 3 evicts 2 (1 was used after it); 2 then evicts 1, and 1 evicts 3.
        assert_eq!(got, vec![false, false, true, false, false, false, false]);
    }
}
