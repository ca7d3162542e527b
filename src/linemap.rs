//! A map from line address to a small value, paged so that lines near each other share one
//! page: streaming and strided patterns touch the hash table once per page, not per line.
//! Memory grows with the address footprint (one page of 256 values per 256 consecutive lines
//! touched), which for GPU traces (dense buffers) is far smaller than a hash entry per line.
//!
//! The pages lie in chunks of [`CHUNK_PAGES`] pages: only the last chunk grows (doubling), so
//! at tens of millions of lines the values take what they use plus at most half a chunk,
//! where one growing vector of them would take up to twice what it uses.

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: usize = 1 << PAGE_BITS;
/// Pages per chunk (2^20 values: 12 MiB of 12-byte values).
const CHUNK_PAGES_BITS: u32 = 12;
pub const CHUNK_PAGES: usize = 1 << CHUNK_PAGES_BITS;

#[derive(Clone, Debug)]
pub struct LineMap<V: Copy + Default> {
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
}

impl<V: Copy + Default> Default for LineMap<V> {
    fn default() -> Self {
        LineMap {
            pages: FxHashMap::default(),
            chunks: Vec::new(),
            used: 0,
            last_page: u64::MAX,
            last_chunk: 0,
            last_start: 0,
        }
    }
}

impl<V: Copy + Default> LineMap<V> {
    /// Bytes its pages and their index hold.
    pub fn heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.capacity() * std::mem::size_of::<V>())
            .sum::<usize>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<V>>()
            + self.pages.capacity() * 16
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
        if page != self.last_page {
            self.turn_to(page);
        }
        &mut self.chunks[self.last_chunk as usize]
            [self.last_start as usize + (line as usize & (PAGE - 1))]
    }

    /// Makes `page` the last one looked at, adding it if it is new.
    fn turn_to(&mut self, page: u64) {
        let next = self.used;
        let idx = *self.pages.entry(page).or_insert(next);
        let (chunk, start) = Self::place(idx);
        if idx == next {
            self.used += 1;
            if chunk as usize == self.chunks.len() {
                self.chunks.push(Vec::new());
            }
            let values = &mut self.chunks[chunk as usize];
            values.resize(values.len() + PAGE, V::default());
        }
        self.last_page = page;
        (self.last_chunk, self.last_start) = (chunk, start);
    }

    /// Every value ever set (and the defaults beside them in their pages), mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.chunks.iter_mut().flatten()
    }

    /// The value of `line` (default if never set), without changing the map.
    pub fn get(&self, line: u64) -> V {
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
    #[test]
    fn behaves_like_a_map() {
        let mut m = LineMap::<u32>::default();
        let mut reference = std::collections::HashMap::new();
        let mut rng = crate::rng::Rng::new(5);
        // Random lines far apart (a page each) fill more than two chunks of pages.
        for i in 0..24_000u32 {
            let line = if i % 2 == 0 {
                rng.below(1 << 40)
            } else {
                rng.below(4096)
            };
            assert_eq!(m.get(line), reference.get(&line).copied().unwrap_or(0));
            assert_eq!(*m.entry(line), reference.get(&line).copied().unwrap_or(0));
            *m.entry(line) = i;
            reference.insert(line, i);
        }
        assert!(m.chunks.len() >= 3, "{} chunks", m.chunks.len());
        for (&line, &v) in &reference {
            assert_eq!(m.get(line), v);
        }
        // Every value set is among the values, and only the pages used are held.
        let mut values: Vec<u32> = m.values_mut().map(|v| *v).filter(|&v| v != 0).collect();
        let mut want: Vec<u32> = reference.values().copied().filter(|&v| v != 0).collect();
        values.sort_unstable();
        want.sort_unstable();
        assert_eq!(values, want);
        let held: usize = m.chunks.iter().map(Vec::len).sum();
        assert_eq!(held, m.used as usize * PAGE);
        // Full chunks are exactly full; only the last may have room to grow.
        for c in &m.chunks[..m.chunks.len() - 1] {
            assert_eq!(c.capacity(), CHUNK_PAGES * PAGE);
        }
    }
}
