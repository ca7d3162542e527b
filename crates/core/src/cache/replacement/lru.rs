//! Least recently used, as a doubly linked recency list per set: O(1) per event even for
//! fully associative caches of thousands of ways.

use super::ReplacementPolicy;
use crate::config::choice::{Entry, Form};
use crate::config::Replacement;

/// This policy in the registry of [`Replacement`] (see `config::choice`).
pub const ENTRY: Entry<Replacement> = Entry {
    name: "lru",
    aliases: &[],
    label: "LRU",
    description: "least recently used",
    form: Form::Plain(Replacement::Lru),
};

const NIL: u32 = u32::MAX;

/// Sets of at most this many ways keep a time of last use per way (below 2^60 uses, the way
/// fits beside it in the low 4 bits); wider ones a list.
const STAMPED_WAYS: usize = 16;

#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    order: Order,
}

/// How the recency of a set's ways is kept.
#[derive(Clone, Debug)]
enum Order {
    /// A time of last use per way: a use is one store, and a victim a scan of a few ways.
    Stamped { stamp: Vec<u64>, clock: u64 },
    /// A doubly linked recency list per set: O(1) per event even for fully associative
    /// caches of thousands of ways.
    Listed {
        prev: Vec<u32>,
        next: Vec<u32>,
        /// Most recently used way per set.
        head: Vec<u32>,
        /// Least recently used way per set.
        tail: Vec<u32>,
        linked: Vec<bool>,
    },
}

impl ReplacementPolicy for Lru {
    fn implements(kind: Replacement) -> bool {
        kind == Replacement::Lru
    }
    fn new(_: Replacement, sets: usize, ways: usize, _: u64) -> Self {
        let order = if ways <= STAMPED_WAYS {
            Order::Stamped {
                stamp: vec![0; sets * ways],
                clock: 0,
            }
        } else {
            Order::Listed {
                prev: vec![NIL; sets * ways],
                next: vec![NIL; sets * ways],
                head: vec![NIL; sets],
                tail: vec![NIL; sets],
                linked: vec![false; sets * ways],
            }
        };
        Lru { ways, order }
    }

    /// Makes `way` the most recently used of `set` (inserting it if new).
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let base = set * self.ways;
        let slot = base + way;
        match &mut self.order {
            Order::Stamped { stamp, clock } => {
                *clock += 1;
                stamp[slot] = *clock;
            }
            Order::Listed {
                prev,
                next,
                head,
                tail,
                linked,
            } => {
                let w = way as u32;
                if head[set] == w {
                    return;
                }
                if linked[slot] {
                    let (p, n) = (prev[slot], next[slot]);
                    if p != NIL {
                        next[base + p as usize] = n;
                    }
                    if n != NIL {
                        prev[base + n as usize] = p;
                    } else {
                        tail[set] = p;
                    }
                }
                linked[slot] = true;
                let h = head[set];
                prev[slot] = NIL;
                next[slot] = h;
                if h != NIL {
                    prev[base + h as usize] = w;
                } else {
                    tail[set] = w;
                }
                head[set] = w;
            }
        }
    }

    /// A fill is a use.
    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.touch(set, way)
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        match &self.order {
            // The least time of last use, its way in the low bits (no branch on the data).
            Order::Stamped { stamp, .. } => stamp[set * self.ways..][..self.ways]
                .iter()
                .enumerate()
                .map(|(w, &t)| t << 4 | w as u64)
                .min()
                .map_or(0, |m| (m & 15) as usize),
            Order::Listed { tail, .. } => tail[set] as usize,
        }
    }

    /// The way's age: 0 for the most recently used, counting along the list.
    fn state(&self, set: usize, way: usize) -> u64 {
        let base = set * self.ways;
        match &self.order {
            Order::Stamped { stamp, .. } => {
                let ways = &stamp[base..base + self.ways];
                // Ways never used (stamp 0) are not in the order.
                ways.iter().filter(|&&t| t > ways[way]).count() as u64
            }
            Order::Listed { head, next, .. } => {
                let mut w = head[set];
                let mut age = 0;
                while w != NIL && age <= self.ways as u64 {
                    if w as usize == way {
                        return age;
                    }
                    w = next[base + w as usize];
                    age += 1;
                }
                age
            }
        }
    }
    const STATE: &'static str = "age (0 = most recently used)";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of keeping the order agree on victims and ages, for a set narrow enough
    /// for stamps and one wide enough for the list.
    #[test]
    fn stamps_and_lists_give_the_same_order() {
        for ways in [4, STAMPED_WAYS, STAMPED_WAYS + 1, 40] {
            let mut lru = Lru::new(Replacement::Lru, 2, ways, 0);
            let mut plain: Vec<usize> = Vec::new();
            let mut rng = crate::rng::Rng::new(ways as u64);
            for _ in 0..2000 {
                let way = rng.below(ways as u64) as usize;
                lru.touch(1, way);
                plain.retain(|&w| w != way);
                plain.insert(0, way);
                if plain.len() == ways {
                    assert_eq!(lru.victim(1), plain[ways - 1]);
                    for (age, &w) in plain.iter().enumerate() {
                        assert_eq!(lru.state(1, w), age as u64);
                    }
                }
            }
        }
    }
}
