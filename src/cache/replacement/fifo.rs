//! First in, first out: the oldest filled way goes. Lines are never invalidated, so the
//! fill order within a set is cyclic and a per-set pointer is exact.

#[derive(Clone, Debug)]
pub struct Fifo {
    ways: usize,
    next: Vec<u32>,
}

impl Fifo {
    pub fn new(sets: usize, ways: usize) -> Self {
        Fifo {
            ways,
            next: vec![0; sets],
        }
    }
    #[inline]
    pub fn insert(&mut self, _set: usize, _way: usize) {}
    #[inline]
    pub fn victim(&mut self, set: usize) -> usize {
        let v = self.next[set] as usize;
        self.next[set] = ((v + 1) % self.ways) as u32;
        v
    }
}
