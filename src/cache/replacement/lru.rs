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

#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Most recently used way per set.
    head: Vec<u32>,
    /// Least recently used way per set.
    tail: Vec<u32>,
    linked: Vec<bool>,
}

impl ReplacementPolicy for Lru {
    fn implements(kind: Replacement) -> bool {
        kind == Replacement::Lru
    }
    fn new(_: Replacement, sets: usize, ways: usize, _: u64) -> Self {
        Lru {
            ways,
            prev: vec![NIL; sets * ways],
            next: vec![NIL; sets * ways],
            head: vec![NIL; sets],
            tail: vec![NIL; sets],
            linked: vec![false; sets * ways],
        }
    }

    /// Makes `way` the most recently used of `set` (inserting it if new).
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let base = set * self.ways;
        let slot = base + way;
        let w = way as u32;
        if self.head[set] == w {
            return;
        }
        if self.linked[slot] {
            // unlink
            let p = self.prev[slot];
            let n = self.next[slot];
            if p != NIL {
                self.next[base + p as usize] = n;
            }
            if n != NIL {
                self.prev[base + n as usize] = p;
            } else {
                self.tail[set] = p;
            }
        }
        self.linked[slot] = true;
        let h = self.head[set];
        self.prev[slot] = NIL;
        self.next[slot] = h;
        if h != NIL {
            self.prev[base + h as usize] = w;
        } else {
            self.tail[set] = w;
        }
        self.head[set] = w;
    }

    /// A fill is a use.
    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.touch(set, way)
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        self.tail[set] as usize
    }
    /// The way's age: 0 for the most recently used, counting along the list.
    fn state(&self, set: usize, way: usize) -> u64 {
        let base = set * self.ways;
        let mut w = self.head[set];
        let mut age = 0;
        while w != NIL && age <= self.ways as u64 {
            if w as usize == way {
                return age;
            }
            w = self.next[base + w as usize];
            age += 1;
        }
        age
    }
    const STATE: &'static str = "age (0 = most recently used)";
}
