//! Least / most frequently used (Crawford 2014 ch. 6): a use count per line, reset when the line
//! is filled. Ties go to the line filled earliest.

#[derive(Clone, Debug)]
pub struct Frequency {
    ways: usize,
    most: bool,
    count: Vec<u64>,
    filled_at: Vec<u64>,
    clock: u64,
}

impl Frequency {
    pub fn new(sets: usize, ways: usize, most: bool) -> Self {
        Frequency {
            ways,
            most,
            count: vec![0; sets * ways],
            filled_at: vec![0; sets * ways],
            clock: 0,
        }
    }
    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        self.count[set * self.ways + way] += 1;
    }
    #[inline]
    pub fn insert(&mut self, set: usize, way: usize) {
        let slot = set * self.ways + way;
        self.clock += 1;
        self.count[slot] = 1;
        self.filled_at[slot] = self.clock;
    }
    pub fn victim(&self, set: usize) -> usize {
        let base = set * self.ways;
        let mut best = 0;
        for w in 1..self.ways {
            let (c, b) = (self.count[base + w], self.count[base + best]);
            let better = if self.most { c > b } else { c < b };
            if better || (c == b && self.filled_at[base + w] < self.filled_at[base + best]) {
                best = w;
            }
        }
        best
    }
}
