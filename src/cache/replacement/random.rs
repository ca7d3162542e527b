//! Random replacement from the configuration's seed.

use crate::rng::Rng;

#[derive(Clone, Debug)]
pub struct RandomRepl {
    ways: u64,
    rng: Rng,
}

impl RandomRepl {
    pub fn new(ways: usize, seed: u64) -> Self {
        RandomRepl {
            ways: ways as u64,
            rng: Rng::fork(seed, 0x5EED_CAC4E),
        }
    }
    #[inline]
    pub fn victim(&mut self) -> usize {
        self.rng.below(self.ways) as usize
    }
}
