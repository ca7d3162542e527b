//! Dinero IV's three Cs (`-ccc`): what tells a miss's class, kept apart from the cache that
//! misses.
//!
//! A miss that would hit in a fully associative cache of the same capacity, replacement
//! policy and write-allocate behaviour (the *shadow*) is a conflict miss; otherwise it is
//! compulsory when some requested sector was never referenced before, else capacity. What
//! the shadow and the record of sectors seen say of a request depends on the requests alone,
//! not on the cache: so a [`Classifier`] can run beside the cache ([`super::CacheModel`]
//! keeps one), or on another thread, handing the cache a [`Tag`] per request
//! (`sim::ReuseStage`). And where the shadow is an LRU stack, a request's whole-cache reuse
//! distance tells the same as the shadow: below the capacity is a hit, none is a first use
//! ([`Classifier::tag_at_distance`]).

use super::{CacheArray, LruStack, MissClass, Request, Seen, Written};
use crate::config::{CacheConfig, Replacement, WritePolicy};

/// Bytes of the record of sectors seen beyond which it no longer stays in a core's own
/// caches.
const SEEN_SPREAD_BYTES: usize = 1 << 20;

/// What the shadow and the record of sectors seen say of a request: the class its miss
/// would have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    /// The shadow held it: a conflict miss.
    Hit = 0,
    /// Seen before, not in the shadow: a capacity miss.
    Seen = 1,
    /// Some requested sector never seen: a compulsory miss.
    New = 2,
}

impl Tag {
    /// The class of a miss so tagged.
    #[inline]
    pub fn class(self) -> MissClass {
        match self {
            Tag::Hit => MissClass::Conflict,
            Tag::Seen => MissClass::Capacity,
            Tag::New => MissClass::Compulsory,
        }
    }
}

/// The fully associative shadow of a cache.
#[derive(Clone, Debug)]
enum Shadow {
    /// Where the shadow is an LRU stack ([`Classifier::shadow_is_a_stack`]).
    Stack(LruStack),
    /// Any replacement policy and write policy, sectored lines: an array of one set.
    Array(CacheArray),
    /// A bypassed cache holds nothing ([`CacheConfig::bypass`]): neither does its shadow, so
    /// its misses are compulsory or capacity.
    Empty,
}

/// A cache's shadow and the record of the sectors it was ever asked for.
#[derive(Clone, Debug)]
pub struct Classifier {
    shadow: Shadow,
    seen: Seen,
    write_allocate: bool,
    /// A store hits on its line's tag, whatever its sectors (`wtwa`).
    write_hits_on_tag: bool,
    /// Lines the shadow holds.
    capacity: u64,
}

impl Classifier {
    /// The classifier of a cache of configuration `cfg` (valid), its random replacement (if
    /// any) seeded from `seed`.
    pub fn new(cfg: &CacheConfig, seed: u64) -> Self {
        let lines = if cfg.bypass {
            0
        } else {
            (cfg.sets() * cfg.ways_effective()) as usize
        };
        let stack = !cfg.bypass
            && cfg.replacement == Replacement::Lru
            && cfg.write_policy == WritePolicy::Wbwa
            && cfg.sector_bytes >= cfg.line_bytes;
        Classifier {
            shadow: if cfg.bypass {
                Shadow::Empty
            } else if stack {
                Shadow::Stack(LruStack::new(lines as u32))
            } else {
                Shadow::Array(CacheArray::new(1, lines, cfg.replacement, seed ^ 0xFA))
            },
            seen: Seen::new((cfg.line_bytes / cfg.sector_bytes).trailing_zeros()),
            write_allocate: cfg.write_policy == WritePolicy::Wbwa,
            write_hits_on_tag: cfg.write_policy == WritePolicy::Wtwa,
            capacity: lines as u64,
        }
    }

    /// The classifier of a cache under lazy fetch-on-read (an L2 slice,
    /// [`Classifier::classify_lazy`]): its shadow an array, which can be lazy too.
    pub fn new_lazy(cfg: &CacheConfig, seed: u64) -> Self {
        let mut c = Classifier::new(cfg, seed);
        if c.shadow_is_a_stack() {
            c.shadow = Shadow::Array(CacheArray::new(
                1,
                c.capacity as usize,
                cfg.replacement,
                seed ^ 0xFA,
            ));
        }
        c
    }

    /// Whether the shadow is an LRU stack (LRU, write-allocate, unsectored lines): a fully
    /// associative LRU cache that every request allocates in, with one sector per line, which
    /// hits exactly when the line's whole-cache reuse distance is below its capacity, and
    /// in which a line is new exactly when it has no distance.
    pub fn shadow_is_a_stack(&self) -> bool {
        matches!(self.shadow, Shadow::Stack(_))
    }

    /// Lines the shadow holds.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Runs the shadow on `r`: whether it hit.
    #[inline]
    fn shadow(&mut self, r: &Request) -> bool {
        match &mut self.shadow {
            // Every request allocates here (write-allocate), and a line is one sector.
            Shadow::Stack(s) => s.access(r.line),
            Shadow::Array(lines) => {
                let allocate = !r.write || self.write_allocate;
                lines.access(0, r.line, r.sectors, allocate, false).hit
            }
            Shadow::Empty => false,
        }
    }

    /// The class of `r`'s miss, or none when the cache hit (`cache_hit`). The shadow sees
    /// every request; the record of sectors seen only those that missed both (the others were
    /// asked for before, so theirs are recorded already).
    #[inline]
    pub fn classify(&mut self, r: &Request, cache_hit: bool) -> Option<MissClass> {
        let shadow_hit = self.shadow(r);
        if cache_hit {
            None
        } else if shadow_hit {
            Some(MissClass::Conflict)
        } else {
            Some(self.unheld(r).class())
        }
    }

    /// [`Classifier::classify`] for a cache under lazy fetch-on-read
    /// ([`CacheArray::access_lazy`]; an L2 slice built by [`Classifier::new_lazy`], or a `wtwa`
    /// L1): the shadow is lazy too, so a read of a sector that a store wrote only in part
    /// (`written`) misses in both, as it would in a fully associative cache of the same size:
    /// not a conflict. Under `wtwa` a store hits the shadow on its line's tag, as the cache.
    #[inline]
    pub fn classify_lazy(
        &mut self,
        r: &Request,
        written: Written,
        cache_hit: bool,
    ) -> Option<MissClass> {
        let shadow_hit = match &mut self.shadow {
            Shadow::Array(lines) => {
                let m = lines.access_lazy(0, r.line, r.sectors, r.write, written, false);
                if r.write && self.write_hits_on_tag {
                    m.line_hit
                } else {
                    m.hit
                }
            }
            _ => self.shadow(r),
        };
        if cache_hit {
            None
        } else if shadow_hit {
            Some(MissClass::Conflict)
        } else {
            Some(self.unheld(r).class())
        }
    }

    /// What the shadow says of `r`, whatever the cache does (the cache's hit is not known
    /// here: the sectors of every request the shadow misses are recorded).
    #[inline]
    pub fn tag(&mut self, r: &Request) -> Tag {
        if self.shadow(r) {
            Tag::Hit
        } else {
            self.unheld(r)
        }
    }

    /// What the shadow would say of `r`, whose line's whole-cache reuse distance is
    /// `distance` (`None`: its first use), where the shadow is an LRU stack; the shadow is not
    /// run.
    #[inline]
    pub fn tag_at_distance(&self, distance: Option<u64>) -> Tag {
        debug_assert!(self.shadow_is_a_stack());
        match distance {
            Some(d) if d < self.capacity => Tag::Hit,
            Some(_) => Tag::Seen,
            None => Tag::New,
        }
    }

    /// [`Classifier::tag`] where the shadow is an LRU stack and `r`'s distance is known only
    /// when it is below some depth of at least the capacity (`distance`, from a stack of the
    /// most recent lines: `reuse::SampledTracker`); past it, the record of sectors seen says
    /// whether the line is new. The shadow is not run.
    #[inline]
    pub fn tag_near(&mut self, r: &Request, distance: Option<u64>) -> Tag {
        debug_assert!(self.shadow_is_a_stack());
        match distance {
            Some(d) if d < self.capacity => Tag::Hit,
            _ => self.unheld(r),
        }
    }

    /// Whether the record of sectors seen is larger than a core's own caches hold (so that
    /// asking for its words ahead pays).
    #[inline]
    pub fn seen_spread(&self) -> bool {
        self.seen.word_bytes() > SEEN_SPREAD_BYTES
    }

    /// Asks for the word of `line` in the record of sectors seen (a hint).
    #[inline]
    pub fn prefetch_seen(&mut self, line: u64) {
        self.seen.prefetch(line);
    }

    /// A request the shadow does not hold: new or seen.
    #[inline]
    fn unheld(&mut self, r: &Request) -> Tag {
        if self.seen.record(r.line, r.sectors) {
            Tag::New
        } else {
            Tag::Seen
        }
    }

    /// About the bytes it holds beyond the shadow's own size: the record of every sector
    /// seen, which grows with the lines the trace touches (a bit per sector where they lie
    /// close together).
    pub fn heap_bytes(&self) -> usize {
        self.seen.heap_bytes()
    }
}
