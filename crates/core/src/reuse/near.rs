//! Short reuse distances without a sample: the `depth` most recently used lines in order,
//! binned, and each set's few most recent lines, exactly.
//!
//! A sampled meter ([`super::SampledTracker`]) estimates a distance of `d` sampled lines as
//! `d / R` lines, which cannot tell apart the distances below `1 / R`: at a rate of 1/128 a
//! cache of 16 lines and one of 128 would look the same, and those are the caches a GPU's L1
//! is. So every use goes through this stack too: a line among its `depth` most recently used
//! has its distance measured here, a line it does not hold is at least `depth` away (or new),
//! and only then does the sample's estimate count.
//!
//! What the report needs of the short distances is their log2 bins and the misses of fully
//! associative caches of 1, 2, 4, ... lines and of the cache's own capacity: so the stack is
//! a recency list cut into segments at those capacities (Mattson's stack, with a pointer to
//! the first line of each segment), and a use finds its line's segment through a
//! [`WayIndex`]. Moving a line to the front moves the first line of each segment before it
//! one place back, so a use costs a look-up and a step per segment it passes, at most one per
//! power of two: no counting structure, and a few tens of KiB that stay in the processor's
//! caches. The distance within the set is the line's place in its set's list of
//! [`SET_DEPTH`] most recent lines, found by a scan: exact there, which covers the
//! associativity of every preset.

use crate::cache::WayIndex;

const NIL: u32 = u32::MAX;
/// No line (lines are below 2^62).
const NO_LINE: u64 = u64::MAX;

/// The most recent lines of each set whose distances within the set are exact.
pub const SET_DEPTH: usize = 16;

#[derive(Clone, Debug)]
pub struct NearStack {
    depth: usize,
    index: WayIndex,
    /// Per node (slot): its line, its neighbours towards the front and the back, its segment.
    line: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    seg: Vec<u8>,
    head: u32,
    tail: u32,
    /// `starts[k]`: where segment `k + 1` starts (segment 0 is the front line alone), and
    /// `first[k]`: the node there (`NIL` while the list is shorter).
    starts: Vec<u32>,
    first: Vec<u32>,
    /// Each set's most recent lines, the most recent first ([`NO_LINE`] where it has fewer);
    /// none with one set.
    set_lines: Vec<[u64; SET_DEPTH]>,
}

impl NearStack {
    /// A stack of the `depth` most recently used lines of a cache of `sets` sets, cut at the
    /// powers of two and at `capacity` (the cache's lines), so that a distance below it is
    /// told apart from one at or above it.
    pub fn new(depth: usize, sets: usize, capacity: usize) -> Self {
        let depth = depth.max(2);
        let mut starts: Vec<u32> = std::iter::successors(Some(1u32), |s| s.checked_mul(2))
            .take_while(|&s| (s as usize) < depth)
            .collect();
        if capacity > 0 && capacity < depth && !starts.contains(&(capacity as u32)) {
            starts.push(capacity as u32);
            starts.sort_unstable();
        }
        NearStack {
            depth,
            // Room for a few lines, doubled as they come (many SMs' stacks, each with few
            // lines, cost little).
            index: WayIndex::new(depth.min(256)),
            line: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            seg: Vec::new(),
            head: NIL,
            tail: NIL,
            first: vec![NIL; starts.len()],
            starts,
            set_lines: match sets {
                0 | 1 => Vec::new(),
                n => vec![[NO_LINE; SET_DEPTH]; n],
            },
        }
    }

    /// The shortest distance of segment `s`.
    #[inline]
    fn start(&self, s: u8) -> u64 {
        match s {
            0 => 0,
            s => self.starts[s as usize - 1] as u64,
        }
    }

    /// Records a use of `line` in `set`. Its whole-cache distance, when it is among the
    /// `depth` most recent lines: the shortest distance of its segment (exact for the
    /// segments of one distance; its log2 bin, and whether it is below `capacity`, are
    /// exact); its distance within the set, when its set's list holds it.
    #[inline]
    pub fn access(&mut self, line: u64, set: u32) -> (Option<u64>, Option<u64>) {
        let in_set = self.in_set(line, set);
        let whole = match self.index.get(line) {
            Some(x) => {
                let s = self.seg[x as usize];
                // The first lines of the segments before it each move one place back.
                for k in 0..s as usize {
                    let b = self.prev[self.first[k] as usize];
                    self.first[k] = b;
                    self.seg[b as usize] = k as u8 + 1;
                }
                self.unlink(x);
                self.push_front(x);
                Some(self.start(s))
            }
            None => {
                self.add(line);
                None
            }
        };
        (whole, in_set)
    }

    /// Puts `line`, not held, at the front: every line moves one place back, and the last
    /// leaves a full list.
    #[inline]
    fn add(&mut self, line: u64) {
        let len = self.line.len();
        for k in 0..self.starts.len() {
            let f = self.first[k];
            let b = if f != NIL {
                self.prev[f as usize]
            } else if len == self.starts[k] as usize {
                // The list reaches this segment now: its last line moves onto its start.
                self.tail
            } else {
                continue;
            };
            self.first[k] = b;
            self.seg[b as usize] = k as u8 + 1;
        }
        let x = if len == self.depth {
            let t = self.tail;
            self.unlink(t);
            self.index.remove(self.line[t as usize]);
            self.line[t as usize] = line;
            t
        } else {
            if len == self.index.capacity() {
                self.index.reserve((2 * len).min(self.depth));
            }
            self.line.push(line);
            self.prev.push(NIL);
            self.next.push(NIL);
            self.seg.push(0);
            len as u32
        };
        self.index.insert(line, x);
        self.push_front(x);
    }

    #[inline]
    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
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
    fn push_front(&mut self, x: u32) {
        self.prev[x as usize] = NIL;
        self.next[x as usize] = self.head;
        match self.head {
            NIL => self.tail = x,
            h => self.prev[h as usize] = x,
        }
        self.head = x;
        self.seg[x as usize] = 0;
    }

    /// The place of `line` in its set's list of most recent lines (its distance within the
    /// set), which it then heads.
    #[inline]
    fn in_set(&mut self, line: u64, set: u32) -> Option<u64> {
        let row = self.set_lines.get_mut(set as usize)?;
        // Every entry compared, with no branch on the data, then the lines before it (or all
        // but the last) moved one place back.
        let mut found = 0u32;
        for (i, &l) in row.iter().enumerate() {
            found |= ((l == line) as u32) << i;
        }
        let end = match found {
            0 => SET_DEPTH - 1,
            m => m.trailing_zeros() as usize,
        };
        let old = *row;
        for i in 1..SET_DEPTH {
            row[i] = if i <= end { old[i - 1] } else { old[i] };
        }
        row[0] = line;
        (found != 0).then(|| found.trailing_zeros() as u64)
    }

    /// The most recent lines of each set it holds (0 with one set: none kept).
    pub fn set_depth(&self) -> usize {
        match self.set_lines.is_empty() {
            true => 0,
            false => SET_DEPTH,
        }
    }

    /// Bytes it holds (fixed by its depth and sets).
    pub fn heap_bytes(&self) -> usize {
        self.line.capacity() * 17
            + self.index.heap_bytes()
            + self.set_lines.capacity() * 8 * SET_DEPTH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuse::ReuseTracker;
    use proptest::prelude::*;

    proptest! {
        /// Against the exact tracker: below the depth, the segment holds the distance (its
        /// start at most the distance, the next start above it), the capacity is a segment's
        /// start; within the set, exact below the set's depth; nothing elsewhere.
        #[test]
        fn finds_the_segment_of_every_distance_below_its_depth(
            depth in 2usize..80,
            capacity in 1usize..60,
            sets in 1usize..5,
            lines in prop::collection::vec(prop_oneof![0u64..20, 0u64..300], 0..3000),
        ) {
            let mut near = NearStack::new(depth, sets, capacity);
            let mut exact = ReuseTracker::new(sets);
            for &l in &lines {
                let set = (l % sets as u64) as u32;
                let want = exact.access(l, set);
                let (whole, in_set) = near.access(l, set);
                match (want.whole, whole) {
                    (Some(d), Some(start)) if d < depth as u64 => {
                        // The segment's start, and no start between it and the distance.
                        prop_assert!(start <= d);
                        prop_assert!(start == 0 || near.starts.contains(&(start as u32)));
                        prop_assert!(!near.starts.iter().any(|&e| start < e as u64 && e as u64 <= d));
                    }
                    (Some(d), None) => prop_assert!(d >= depth as u64),
                    (None, None) => {}
                    (w, g) => prop_assert!(false, "{:?} against {:?}", g, w),
                }
                if sets > 1 {
                    match want.in_set {
                        Some(d) if d < SET_DEPTH as u64 => prop_assert_eq!(in_set, Some(d)),
                        _ => prop_assert_eq!(in_set, None),
                    }
                }
            }
        }
    }

    #[test]
    fn the_segments_are_the_powers_of_two_and_the_capacity() {
        let near = NearStack::new(1024, 4, 384);
        assert_eq!(
            near.starts,
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512]
        );
    }
}
