//! One run's per-CTA results on one SM, held for the CTAs in flight only. Each of the four
//! runs of every simulated SM counts, per CTA, its requests, misses, distances of ∞, fills,
//! accesses, transactions and stores. Held as eight numbers for every CTA of the kernel, that
//! was 64 bytes a CTA per run and SM: a kernel of 10^6 small CTAs took 256 MB in the runs of
//! one SM alone. Now a CTA's numbers are kept in its slot while it is resident, and once it
//! has finished, and every CTA launched before it has too, they are written as variable-length
//! integers (about ten bytes for a small CTA; nothing for one that counted nothing), in the
//! order the CTAs were launched, for the report to read back in CTA order.

use std::collections::VecDeque;

use super::engine::RunCounts;
use crate::varint;

/// What one run counted of one CTA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtaTally {
    /// Its load requests, misses, distances of ∞ and fills.
    pub counts: RunCounts,
    /// Thread accesses (loads and stores).
    pub accesses: u64,
    pub transactions: u64,
    /// Stores and their bytes (they bypass the L1).
    pub stores: u64,
    pub store_bytes: u64,
}

impl CtaTally {
    pub fn add(&mut self, o: &CtaTally) {
        self.counts.add(&o.counts);
        self.accesses += o.accesses;
        self.transactions += o.transactions;
        self.stores += o.stores;
        self.store_bytes += o.store_bytes;
    }

    fn fields(&self) -> [u64; 8] {
        let c = &self.counts;
        [
            c.requests,
            c.misses,
            c.infinite,
            c.fills,
            self.accesses,
            self.transactions,
            self.stores,
            self.store_bytes,
        ]
    }
}

/// One run's per-CTA results on one SM for one kernel: the tallies of its resident CTAs by
/// slot, and those of finished CTAs written in launch order.
#[derive(Clone, Debug, Default)]
pub struct CtaResults {
    /// The tallies of the resident CTAs, by slot (slots are reused as CTAs finish).
    open: Vec<CtaTally>,
    /// The launch number of the CTA in each slot.
    launch_of: Vec<u64>,
    /// The CTAs launched from the oldest one not yet written on: each one's id, and its
    /// tally once it has finished.
    waiting: VecDeque<(u32, Option<CtaTally>)>,
    /// The launch number of the front of `waiting`.
    base: u64,
    /// The finished CTAs' tallies: per CTA that counted anything, its id less the last such
    /// CTA's, then the eight numbers of [`CtaTally::fields`].
    bytes: Vec<u8>,
    last_cta: u32,
    rows: usize,
}

impl CtaResults {
    /// CTA `cta` is launched into slot `slot`, with nothing counted yet.
    pub fn open(&mut self, slot: usize, cta: u32) {
        if self.open.len() <= slot {
            self.open.resize(slot + 1, CtaTally::default());
            self.launch_of.resize(slot + 1, 0);
        }
        self.open[slot] = CtaTally::default();
        self.launch_of[slot] = self.base + self.waiting.len() as u64;
        self.waiting.push_back((cta, None));
    }

    /// The tally of the CTA resident in slot `slot`.
    #[inline]
    pub fn at(&mut self, slot: usize) -> &mut CtaTally {
        &mut self.open[slot]
    }

    /// The CTA in slot `slot` has finished: its tally is final. It is written once every
    /// CTA launched before it has finished too.
    pub fn close(&mut self, slot: usize) {
        let i = (self.launch_of[slot] - self.base) as usize;
        self.waiting[i].1 = Some(self.open[slot]);
        while let Some(&(cta, Some(t))) = self.waiting.front() {
            self.waiting.pop_front();
            self.base += 1;
            if t != CtaTally::default() {
                varint::put(&mut self.bytes, cta.wrapping_sub(self.last_cta) as u64);
                for v in t.fields() {
                    varint::put(&mut self.bytes, v);
                }
                self.last_cta = cta;
                self.rows += 1;
            }
        }
    }

    /// CTAs launched and not yet written (those still resident, and those finished after an
    /// earlier one that is).
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The bytes held, for tests of memory.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.open.capacity() * std::mem::size_of::<CtaTally>()
            + self.waiting.capacity() * std::mem::size_of::<(u32, Option<CtaTally>)>()
    }

    /// The written tallies, in launch order: each CTA's id and tally.
    pub fn iter(&self) -> Written<'_> {
        Written {
            bytes: &self.bytes,
            at: 0,
            left: self.rows,
            cta: 0,
        }
    }
}

/// The tallies a [`CtaResults`] wrote, read back.
#[derive(Clone)]
pub struct Written<'a> {
    bytes: &'a [u8],
    at: usize,
    left: usize,
    cta: u32,
}

impl Iterator for Written<'_> {
    type Item = (u32, CtaTally);

    fn next(&mut self) -> Option<(u32, CtaTally)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut get = || varint::get(self.bytes, &mut self.at);
        self.cta = self.cta.wrapping_add(get() as u32);
        let mut f = [0u64; 8];
        for v in f.iter_mut() {
            *v = get();
        }
        let t = CtaTally {
            counts: RunCounts {
                requests: f[0],
                misses: f[1],
                infinite: f[2],
                fills: f[3],
            },
            accesses: f[4],
            transactions: f[5],
            stores: f[6],
            store_bytes: f[7],
        };
        Some((self.cta, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tally(seed: u64) -> CtaTally {
        CtaTally {
            counts: RunCounts {
                requests: seed * 3,
                misses: seed,
                infinite: seed / 2,
                fills: seed % 5,
            },
            accesses: seed * 32,
            transactions: seed * 4,
            stores: seed % 3,
            store_bytes: (seed % 3) * 128,
        }
    }

    proptest! {
        /// CTAs launched in order into at most `slots` slots and finished in any order come
        /// out in launch order, the CTAs that counted nothing left out, and no more than
        /// the resident ones wait when they finish in order.
        #[test]
        fn tallies_come_out_in_launch_order_whatever_order_ctas_finish_in(
            slots in 1usize..6,
            ctas in 1u32..60,
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 60),
            step in 1u32..4,
        ) {
            let mut r = CtaResults::default();
            let mut free: Vec<usize> = (0..slots).rev().collect();
            let mut resident: Vec<(usize, u32)> = Vec::new();
            let mut next = 0u32;
            let mut picks = picks.into_iter();
            let mut expect = Vec::new();
            while next < ctas || !resident.is_empty() {
                while next < ctas {
                    let Some(slot) = free.pop() else { break };
                    let cta = next * step;
                    r.open(slot, cta);
                    let t = tally((cta % 7) as u64);
                    r.at(slot).add(&t);
                    if t != CtaTally::default() {
                        expect.push((cta, t));
                    }
                    resident.push((slot, cta));
                    next += 1;
                }
                let i = picks.next().map_or(0, |p| p.index(resident.len()));
                let (slot, _) = resident.remove(i);
                r.close(slot);
                free.push(slot);
            }
            prop_assert_eq!(r.waiting(), 0);
            prop_assert_eq!(r.iter().collect::<Vec<_>>(), expect);
        }
    }

    #[test]
    fn a_small_cta_takes_about_ten_bytes_and_an_idle_one_none() {
        let mut r = CtaResults::default();
        for cta in 0..1000 {
            r.open(0, cta);
            if cta % 2 == 0 {
                r.at(0).add(&tally(3));
            }
            r.close(0);
        }
        assert_eq!(r.iter().count(), 500);
        assert!(r.bytes.len() <= 500 * 11, "{} bytes", r.bytes.len());
        assert_eq!(r.waiting(), 0);
    }
}
