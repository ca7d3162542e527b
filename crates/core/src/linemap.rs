//! A map from line address (or another mostly dense number: the app keys each CTA's miss
//! classes by CTA slot) to a small value, paged so that lines near each other share one
//! page: streaming and strided patterns touch the hash table once per page, not per line.
//! Memory grows with the address footprint (one page of 256 values per 256 consecutive lines
//! touched), which for GPU traces (dense buffers) is far smaller than a hash entry per line.
//! A small direct-mapped cache of the pages looked up lately stands in front of the pages'
//! hash table, so that random lines over a few hundred pages (a kernel's working set) are
//! found without hashing (the reuse tracker alone, on the lines of a trace that mixes a
//! stream with random lines of a 256 KiB working set: 37 ns a use against 42-45).
//!
//! The pages lie in chunks of [`CHUNK_PAGES`] pages: only the last chunk grows (doubling), so
//! at tens of millions of lines the values take what they use plus at most half a chunk,
//! where one growing vector of them would take up to twice what it uses.
//!
//! Pages pay only where lines near each other are used. One SM of 14 running a streaming
//! kernel uses one line in 14 of each buffer, so its pages would hold 14 times the values it
//! sets. So whenever the pages double in number (from [`SPARSE_CHECK_PAGES`] on) the map counts
//! the values set; if fewer than a quarter of the pages' values are, it moves them to a hash
//! table of one entry per line (about 2-3 times a page's bytes per line) and stays so: a
//! [`LineTable`], whose slots a caller that knows the lines ahead can ask for
//! ([`LineMap::prefetch`]).

use crate::linetable::LineTable;
use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: usize = 1 << PAGE_BITS;
/// Pages per chunk (2^20 values: 12 MiB of 12-byte values).
const CHUNK_PAGES_BITS: u32 = 12;
pub const CHUNK_PAGES: usize = 1 << CHUNK_PAGES_BITS;
/// Pages at which the map first checks how full they are (2^20 values).
pub const SPARSE_CHECK_PAGES: u32 = 4096;
/// Entries of the cache of pages looked up lately (a power of two), at first; it grows with
/// the pages, up to [`MOST_RECENT`], so that pages used at random in turn are found there.
const RECENT: usize = 256;
/// The most entries of the cache of pages looked up lately (256 KiB of them).
const MOST_RECENT: usize = 1 << 14;

#[derive(Clone, Debug)]
pub struct LineMap<V: Copy + Default + PartialEq> {
    /// Each page's number, in the order they were first touched.
    pages: FxHashMap<u64, u32>,
    /// Page `i`'s values are `chunks[i / CHUNK_PAGES][(i % CHUNK_PAGES) * PAGE..][..PAGE]`.
    chunks: Vec<Vec<V>>,
    /// Pages handed out.
    used: u32,
    last_page: u64,
    /// Where the values of `last_page` lie: chunk and first index in it.
    last_chunk: u32,
    last_start: u32,
    /// A direct-mapped cache of page numbers looked up lately (`page + 1`, 0 = none) and their
    /// index, in front of `pages`: a working set of a few hundred pages used in turn (random
    /// lines of a buffer) finds most of them here, without hashing.
    recent: Vec<(u64, u32)>,
    /// Once the pages turned out mostly empty: a value per line set, instead of pages.
    sparse: Option<LineTable<V>>,
    /// The count of pages at which how full they are is checked next.
    check_at: u32,
}

impl<V: Copy + Default + PartialEq> Default for LineMap<V> {
    fn default() -> Self {
        Self::checking_from(SPARSE_CHECK_PAGES)
    }
}

impl<V: Copy + Default + PartialEq> LineMap<V> {
    /// A map that first checks how full its pages are at `pages` pages (tests use few).
    pub fn checking_from(pages: u32) -> Self {
        LineMap {
            pages: FxHashMap::default(),
            chunks: Vec::new(),
            used: 0,
            last_page: u64::MAX,
            last_chunk: 0,
            last_start: 0,
            recent: Vec::new(),
            sparse: None,
            check_at: pages.max(1),
        }
    }

    /// A map of one entry per line from the start, for keys that never lie close together
    /// (a sample of lines chosen by a hash).
    pub fn per_line() -> Self {
        LineMap {
            sparse: Some(LineTable::default()),
            ..Self::checking_from(u32::MAX)
        }
    }

    /// Calls `f` with every key whose value is not the default, and its value.
    pub fn for_each(&self, mut f: impl FnMut(u64, &V)) {
        if let Some(map) = &self.sparse {
            for (k, v) in map.iter() {
                if *v != V::default() {
                    f(k, v);
                }
            }
            return;
        }
        for (&page, &idx) in &self.pages {
            let (chunk, start) = Self::place(idx);
            let values = &self.chunks[chunk as usize][start as usize..][..PAGE];
            for (i, v) in values.iter().enumerate() {
                if *v != V::default() {
                    f(page << PAGE_BITS | i as u64, v);
                }
            }
        }
    }

    /// Bytes its pages and their indexes hold (or its entries, once sparse).
    pub fn heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.capacity() * std::mem::size_of::<V>())
            .sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<V>>()
            + self.pages.capacity() * 16
            + self.recent.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.sparse.as_ref().map_or(0, |m| m.heap_bytes())
    }

    /// Whether the values are held per line (the pages were mostly empty).
    pub fn is_sparse(&self) -> bool {
        self.sparse.is_some()
    }

    /// Where page number `idx`'s values lie: chunk and first index in it.
    fn place(idx: u32) -> (u32, u32) {
        (
            idx >> CHUNK_PAGES_BITS,
            (idx & (CHUNK_PAGES as u32 - 1)) << PAGE_BITS,
        )
    }

    /// The value of `line` (default if never set), mutable.
    #[inline]
    pub fn entry(&mut self, line: u64) -> &mut V {
        let page = line >> PAGE_BITS;
        if page != self.last_page && self.sparse.is_none() {
            self.turn_to(page);
        }
        match &mut self.sparse {
            Some(map) => map.entry(line),
            None => {
                &mut self.chunks[self.last_chunk as usize]
                    [self.last_start as usize + (line as usize & (PAGE - 1))]
            }
        }
    }

    /// Makes `page` the last one looked at, adding it if it is new (and going sparse if the
    /// pages are mostly empty).
    fn turn_to(&mut self, page: u64) {
        if self.recent.is_empty() {
            self.recent = vec![(0, 0); RECENT];
        }
        let slot = page as usize & (self.recent.len() - 1);
        if self.recent[slot].0 == page.wrapping_add(1) {
            let (chunk, start) = Self::place(self.recent[slot].1);
            self.last_page = page;
            (self.last_chunk, self.last_start) = (chunk, start);
            return;
        }
        let next = self.used;
        let idx = *self.pages.entry(page).or_insert(next);
        self.recent[slot] = (page.wrapping_add(1), idx);
        let (chunk, start) = Self::place(idx);
        if idx == next {
            self.used += 1;
            if chunk as usize == self.chunks.len() {
                self.chunks.push(Vec::new());
            }
            let values = &mut self.chunks[chunk as usize];
            values.resize(values.len() + PAGE, V::default());
            if self.used as usize > self.recent.len() && self.recent.len() < MOST_RECENT {
                self.widen_recent();
            }
            if self.used >= self.check_at {
                self.check_at = self.check_at.saturating_mul(2);
                if self.mostly_empty() {
                    self.go_sparse();
                    return;
                }
            }
        }
        self.last_page = page;
        (self.last_chunk, self.last_start) = (chunk, start);
    }

    /// Twice the entries of the cache of pages looked up lately, those it held kept.
    #[cold]
    fn widen_recent(&mut self) {
        let old = std::mem::take(&mut self.recent);
        self.recent = vec![(0, 0); old.len() * 2];
        let mask = self.recent.len() - 1;
        for (tag, idx) in old {
            if tag != 0 {
                self.recent[tag.wrapping_sub(1) as usize & mask] = (tag, idx);
            }
        }
    }

    /// Fewer than a quarter of the pages' values are set.
    #[cold]
    fn mostly_empty(&self) -> bool {
        let set = self
            .chunks
            .iter()
            .flatten()
            .filter(|v| **v != V::default())
            .count();
        set * 4 < self.used as usize * PAGE
    }

    /// Moves the values set into a map of one entry per line and drops the pages.
    #[cold]
    fn go_sparse(&mut self) {
        let mut map = LineTable::default();
        for (&page, &idx) in &self.pages {
            let (chunk, start) = Self::place(idx);
            let values = &self.chunks[chunk as usize][start as usize..][..PAGE];
            for (i, v) in values.iter().enumerate() {
                if *v != V::default() {
                    map.insert(page << PAGE_BITS | i as u64, *v);
                }
            }
        }
        self.sparse = Some(map);
        self.pages = FxHashMap::default();
        self.recent = Vec::new();
        self.chunks = Vec::new();
        self.last_page = u64::MAX;
    }

    /// Every value ever set (and, while paged, the defaults beside them in their pages),
    /// mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        let sparse = self.sparse.iter_mut().flat_map(|m| m.values_mut());
        self.chunks.iter_mut().flatten().chain(sparse)
    }

    /// Asks for the place of `line`'s value to be brought into the processor's caches, where
    /// the values are held per line (a hint: see [`LineTable::prefetch`]); paged values, close
    /// together, are left to the processor.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        if let Some(map) = &self.sparse {
            map.prefetch(line);
        }
    }

    /// [`LineMap::prefetch`], paged values too: the page of `line`, if it has one, is looked
    /// up (and kept among the pages looked up lately, where the use that follows finds it
    /// without hashing) and its value asked for. Changes no value.
    #[inline]
    pub fn prefetch_paged(&mut self, line: u64) {
        if let Some(map) = &self.sparse {
            map.prefetch(line);
            return;
        }
        let page = line >> PAGE_BITS;
        let slot = page as usize & self.recent.len().wrapping_sub(1);
        let Some(&(tag, idx)) = self.recent.get(slot) else {
            return;
        };
        let idx = if tag == page.wrapping_add(1) {
            idx
        } else {
            match self.pages.get(&page) {
                Some(&idx) => {
                    self.recent[slot] = (page.wrapping_add(1), idx);
                    idx
                }
                None => return,
            }
        };
        let (chunk, start) = Self::place(idx);
        if let Some(v) = self
            .chunks
            .get(chunk as usize)
            .and_then(|c| c.get(start as usize + (line as usize & (PAGE - 1))))
        {
            crate::trace::memory::prefetch(v);
        }
    }

    /// Bytes its values take (not counting the index of pages): what a caller weighs against
    /// the processor's caches.
    #[inline]
    pub fn value_bytes(&self) -> usize {
        match &self.sparse {
            Some(map) => map.heap_bytes(),
            None => self.used as usize * PAGE * std::mem::size_of::<V>(),
        }
    }

    /// The value of `line` (default if never set), without changing the map.
    pub fn get(&self, line: u64) -> V {
        if let Some(map) = &self.sparse {
            return map.get(line).copied().unwrap_or_default();
        }
        let page = line >> PAGE_BITS;
        let place = if page == self.last_page {
            Some((self.last_chunk, self.last_start))
        } else {
            self.pages.get(&page).map(|&i| Self::place(i))
        };
        place.map_or_else(V::default, |(chunk, start)| {
            self.chunks[chunk as usize][start as usize + (line as usize & (PAGE - 1))]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random uses of `lines()`, checked against a `HashMap` at every step; returns the map.
    fn against_a_hash_map(
        mut m: LineMap<u32>,
        n: u32,
        mut lines: impl FnMut(u32) -> u64,
    ) -> LineMap<u32> {
        let mut reference = std::collections::HashMap::new();
        for i in 1..=n {
            let line = lines(i);
            assert_eq!(m.get(line), reference.get(&line).copied().unwrap_or(0));
            assert_eq!(*m.entry(line), reference.get(&line).copied().unwrap_or(0));
            *m.entry(line) = i;
            reference.insert(line, i);
        }
        for (&line, &v) in &reference {
            assert_eq!(m.get(line), v);
        }
        let mut each = std::collections::HashMap::new();
        m.for_each(|line, &v| {
            each.insert(line, v);
        });
        assert_eq!(each, reference);
        // Every value set is among the values.
        let mut values: Vec<u32> = m.values_mut().map(|v| *v).filter(|&v| v != 0).collect();
        let mut want: Vec<u32> = reference.values().copied().collect();
        values.sort_unstable();
        want.sort_unstable();
        assert_eq!(values, want);
        m
    }

    #[test]
    fn behaves_like_a_map_across_chunks() {
        let mut rng = crate::rng::Rng::new(5);
        // Random lines far apart (a page each) fill more than two chunks of pages; never
        // checked for emptiness, so it stays paged.
        let m = against_a_hash_map(LineMap::checking_from(u32::MAX), 24_000, |i| {
            if i % 2 == 0 {
                rng.below(1 << 40)
            } else {
                rng.below(4096)
            }
        });
        assert!(!m.is_sparse());
        assert!(m.chunks.len() >= 3, "{} chunks", m.chunks.len());
        let held: usize = m.chunks.iter().map(Vec::len).sum();
        assert_eq!(held, m.used as usize * PAGE);
        // Full chunks are exactly full; only the last may have room to grow.
        for c in &m.chunks[..m.chunks.len() - 1] {
            assert_eq!(c.capacity(), CHUNK_PAGES * PAGE);
        }
    }

    #[test]
    fn a_map_per_line_from_the_start_behaves_like_a_map() {
        let mut rng = crate::rng::Rng::new(9);
        let m = against_a_hash_map(LineMap::per_line(), 5_000, |_| rng.below(1 << 40));
        assert!(m.is_sparse() && m.chunks.is_empty());
    }

    #[test]
    fn mostly_empty_pages_become_one_entry_per_line() {
        // One line in 14 (one SM of 14 on a streaming kernel), checked from 64 pages on: the
        // values move to a map of lines, and it goes on as a map.
        let m = against_a_hash_map(LineMap::checking_from(64), 40_000, |i| {
            (i as u64 % 30_000) * 14
        });
        assert!(m.is_sparse());
        assert!(m.chunks.is_empty() && m.pages.is_empty());
        assert!(m.heap_bytes() < 30_000 * 64, "{} B", m.heap_bytes());
        // Every line used, in turns: the pages are full, they stay.
        let m = against_a_hash_map(LineMap::checking_from(64), 40_000, |i| i as u64 % 30_000);
        assert!(!m.is_sparse());
        // Half the lines of each page: still paged (a page costs less than entries then).
        let m = against_a_hash_map(LineMap::checking_from(64), 40_000, |i| {
            (i as u64 % 30_000) * 2
        });
        assert!(!m.is_sparse());
    }
}
