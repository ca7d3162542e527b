//! Reference streams of one thread, for Dinero IV `din` traces: the mixes of the benchmark
//! corpus (`tools/make-corpus`, `examples/make_din.rs`) and of the tests that check sampled
//! reuse distances on the same kinds of input, from fixed seeds.
//!
//! - `friendly`: a third each of a sequential stream over 8 MiB, reads of a 256 KiB working
//!   set at random and writes to it. Few misses in a 16 KB cache, a small footprint.
//! - `hostile`: what a GPU kernel's L1 sees at its worst. Four strided streams of 12.5% each
//!   (8 B over 64 MiB, 136 B over 96 MiB, 4096 B over 128 MiB, 520 B over 48 MiB, so they
//!   cross lines and pile into sets), 35% on a 16 KiB hot set (the size of the cache, so the
//!   streams evict it), 15% uniformly random over 256 MiB; 25% writes. About 75% of its
//!   references miss in a 16 KB 4-way cache of 128 B lines, and it touches millions of lines.
//! - `random`: every reference uniformly random over 4 GiB (32 M lines of 128 B), 30% writes:
//!   nearly every reference a new line, the largest footprint and the worst case for
//!   anything kept per line.

use crate::rng::Rng;

/// One of the mixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DinMix {
    Friendly,
    Hostile,
    Random,
}

impl DinMix {
    pub const ALL: [DinMix; 3] = [DinMix::Friendly, DinMix::Hostile, DinMix::Random];

    pub fn name(self) -> &'static str {
        match self {
            DinMix::Friendly => "friendly",
            DinMix::Hostile => "hostile",
            DinMix::Random => "random",
        }
    }

    pub fn from_name(name: &str) -> Option<DinMix> {
        DinMix::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The first `n` references of the mix: address and whether it writes.
    pub fn references(self, n: u64) -> impl Iterator<Item = (u64, bool)> {
        let mut rng = Rng::new(match self {
            DinMix::Friendly => 26,
            DinMix::Hostile => 71,
            DinMix::Random => 4096,
        });
        let mut seq = 0u64;
        // (base, stride, span) of the hostile mix's four streams, and where each is.
        let streams: [(u64, u64, u64); 4] = [
            (0x1_0000_0000, 8, 64 << 20),
            (0x2_0000_0000, 136, 96 << 20),
            (0x3_0000_0000, 4096, 128 << 20),
            (0x4_0000_0000, 520, 48 << 20),
        ];
        let mut pos = [0u64; 4];
        (0..n).map(move |i| match self {
            DinMix::Friendly => match i % 3 {
                0 => {
                    let a = 0x1000_0000 + seq % (8 << 20);
                    seq += 8;
                    (a, false)
                }
                1 => (0x2000_0000 + rng.below(256 << 10) / 8 * 8, false),
                _ => (0x2000_0000 + rng.below(256 << 10) / 8 * 8, true),
            },
            DinMix::Hostile => {
                let pick = rng.below(1000);
                let addr = if pick < 500 {
                    let s = (pick / 125) as usize;
                    let (base, stride, span) = streams[s];
                    let a = base + pos[s];
                    pos[s] = (pos[s] + stride) % span;
                    a
                } else if pick < 850 {
                    0x5_0000_0000 + rng.below(16 << 10) / 4 * 4
                } else {
                    0x6_0000_0000 + rng.below(256 << 20) / 4 * 4
                };
                (addr, rng.below(4) == 0)
            }
            DinMix::Random => {
                let addr = 0x10_0000_0000 + rng.below(4 << 30) / 8 * 8;
                (addr, rng.below(10) < 3)
            }
        })
    }

    /// The first `n` references as a `din` trace in Dinero IV's traditional format (a label,
    /// 0 read or 1 write, and a hex address per line).
    pub fn write(self, n: u64, out: &mut impl std::io::Write) -> std::io::Result<()> {
        for (addr, write) in self.references(n) {
            writeln!(out, "{} {addr:x}", write as u8)?;
        }
        Ok(())
    }
}
