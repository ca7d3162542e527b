//! A fully associative LRU cache that every request allocates in, together with the record of
//! every line it ever saw, kept in one map: the shadow that classifies a cache's misses
//! wherever that shadow is an LRU stack (LRU, write-allocate, unsectored lines; see
//! `CacheModel::shadow_is_a_stack`).
//!
//! A general fully associative [`super::CacheArray`] finds its lines through a hash index
//! (a look-up, and on a miss a removal and an insertion) and needs a second map of the lines
//! seen for compulsory misses. Here one [`LineMap`] value per line says both whether the line
//! was ever seen and which way holds it, and the ways form one doubly linked recency list:
//! a request is one map look-up, two on a miss of a full stack (the victim is marked seen but
//! not held). The map takes what the record of lines seen took alone (four bytes a line).

use crate::linemap::LineMap;

const NIL: u32 = u32::MAX;
/// A line's state in the map: never seen.
const NEW: u32 = 0;
/// Seen, not held now; a held line's state is its way + [`HELD`].
const SEEN: u32 = 1;
const HELD: u32 = 2;

/// What one request found in the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackOutcome {
    /// The line was held: its reuse distance is below the capacity.
    Hit,
    /// Seen before but given up since: a capacity miss, if the cache missed too.
    Seen,
    /// Never seen: a compulsory miss.
    New,
}

/// A fully associative LRU cache of `capacity` lines and the lines it ever saw.
#[derive(Clone, Debug)]
pub struct LruStack {
    /// Per line: [`NEW`], [`SEEN`] or its way + [`HELD`].
    state: LineMap<u32>,
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
            state: LineMap::default(),
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

    /// Bytes it holds beyond its ways: the map of lines, which grows with the distinct lines.
    pub fn heap_bytes(&self) -> usize {
        self.state.heap_bytes()
    }

    /// Uses `line`: it becomes the most recently used, given a way if it was not held (the
    /// least recently used line gives up its way when all are taken).
    #[inline]
    pub fn access(&mut self, line: u64) -> StackOutcome {
        let state = *self.state.entry(line);
        if state >= HELD {
            let way = state - HELD;
            if self.head != way {
                self.unlink(way);
                self.push_front(way);
            }
            return StackOutcome::Hit;
        }
        let capacity = self.capacity();
        let way = if self.fill < capacity {
            self.fill += 1;
            self.fill - 1
        } else if capacity == 0 {
            *self.state.entry(line) = SEEN;
            return Self::missed(state);
        } else {
            let victim = self.tail;
            self.unlink(victim);
            *self.state.entry(self.line_of[victim as usize]) = SEEN;
            victim
        };
        self.line_of[way as usize] = line;
        self.push_front(way);
        *self.state.entry(line) = way + HELD;
        Self::missed(state)
    }

    fn missed(state: u32) -> StackOutcome {
        if state == NEW {
            StackOutcome::New
        } else {
            StackOutcome::Seen
        }
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

    /// The plain definition: a list of lines, most recently used first, and a set of lines seen.
    fn plain(capacity: usize, lines: &[u64]) -> Vec<StackOutcome> {
        let mut stack: Vec<u64> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        lines
            .iter()
            .map(|&l| {
                let out = if let Some(i) = stack.iter().position(|&s| s == l) {
                    stack.remove(i);
                    StackOutcome::Hit
                } else if seen.contains(&l) {
                    StackOutcome::Seen
                } else {
                    StackOutcome::New
                };
                seen.insert(l);
                stack.insert(0, l);
                stack.truncate(capacity);
                out
            })
            .collect()
    }

    proptest! {
        #[test]
        fn agrees_with_a_plain_lru_list(
            capacity in 0usize..40,
            // Lines from a small range (hits), a page away (several pages of the map) and
            // far apart.
            lines in prop::collection::vec(
                prop_oneof![0u64..60, 250u64..300, any::<u64>().prop_map(|l| l >> 8)],
                0..600,
            ),
        ) {
            let mut s = LruStack::new(capacity as u32);
            let got: Vec<StackOutcome> = lines.iter().map(|&l| s.access(l)).collect();
            prop_assert_eq!(got, plain(capacity, &lines));
        }
    }

    #[test]
    fn a_full_stack_gives_up_its_least_recently_used_line() {
        let mut s = LruStack::new(2);
        use StackOutcome::*;
        let got: Vec<_> = [1, 2, 1, 3, 2, 1, 3].iter().map(|&l| s.access(l)).collect();
        // 3 evicts 2 (1 was used after it); 2 then evicts 1, and 1 evicts 3.
        assert_eq!(got, vec![New, New, Hit, New, Seen, Seen, Seen]);
    }
}
