//! A map from line address to a small value, paged so that lines near each other share one
//! page: streaming and strided patterns touch the hash table once per page, not per line.
//! Memory grows with the address footprint (one page of 256 values per 256 consecutive lines
//! touched), which for GPU traces (dense buffers) is far smaller than a hash entry per line.

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: usize = 1 << PAGE_BITS;

#[derive(Clone, Debug)]
pub struct LineMap<V: Copy + Default> {
    pages: FxHashMap<u64, u32>,
    slots: Vec<V>,
    last_page: u64,
    last_index: u32,
}

impl<V: Copy + Default> Default for LineMap<V> {
    fn default() -> Self {
        LineMap {
            pages: FxHashMap::default(),
            slots: Vec::new(),
            last_page: u64::MAX,
            last_index: 0,
        }
    }
}

impl<V: Copy + Default> LineMap<V> {
    /// Bytes its pages and their index hold.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<V>() + self.pages.capacity() * 16
    }

    /// The value of `line` (default if never set), mutable.
    #[inline]
    pub fn entry(&mut self, line: u64) -> &mut V {
        let page = line >> PAGE_BITS;
        if page != self.last_page {
            let next = (self.slots.len() / PAGE) as u32;
            let idx = *self.pages.entry(page).or_insert(next);
            if idx == next {
                self.slots.resize(self.slots.len() + PAGE, V::default());
            }
            self.last_page = page;
            self.last_index = idx;
        }
        &mut self.slots[self.last_index as usize * PAGE + (line as usize & (PAGE - 1))]
    }

    /// Every value ever set (and the defaults beside them in their pages), mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots.iter_mut()
    }

    /// The value of `line` (default if never set), without changing the map.
    pub fn get(&self, line: u64) -> V {
        let page = line >> PAGE_BITS;
        let idx = if page == self.last_page {
            Some(self.last_index)
        } else {
            self.pages.get(&page).copied()
        };
        idx.map_or_else(V::default, |i| {
            self.slots[i as usize * PAGE + (line as usize & (PAGE - 1))]
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
        for i in 0..5000u32 {
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
    }
}
