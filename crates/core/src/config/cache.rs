//! The L1 cache's configuration: size, line, ways, sectors, set index, replacement, writes.

use super::choice::{self, Choice, Entry, Form};
use super::*;

/// How addresses map to sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SetIndex {
    /// `line_address % sets`.
    #[default]
    Modulo,
    /// Fermi's XOR hash (Nugteren et al. 2014, §5.1, fig. 6): with 128-byte lines, bits 7-11
    /// XOR bits 13,14,15,17,19, and bit 12 on top for 64 sets; the same bits of the line
    /// address for other line sizes, modulo the sets (at most 64).
    FermiHash,
    /// Set index bit `i` is byte-address bit `bits[i]`.
    Bits(Vec<u8>),
    /// The line address modulo an irreducible polynomial over GF(2) (GPGPU-Sim's IPOLY,
    /// its L2's `P`): power-of-two sets, at most 2^16.
    Ipoly,
    /// The line address's low bits XOR the bits above them (GPGPU-Sim's `X`): power-of-two
    /// sets.
    Xor,
}

impl SetIndex {
    /// How it is written (`modulo`, `bits:7,8`), from the registry (`cache::set_index`).
    pub fn name(&self) -> String {
        choice::name_of(self)
    }
}

/// Which line a full set gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    #[default]
    Lru,
    Fifo,
    Lfu,
    Mfu,
    Random,
    Plru,
}

impl Replacement {
    /// Its name in the registry (`cache::replacement`).
    pub fn name(self) -> &'static str {
        choice::entry_of(&self).map_or("?", |e| e.name)
    }
}

/// What stores do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WritePolicy {
    /// Write-through, no write-allocate: stores go to memory and never fill a line (GPU L1 default).
    #[default]
    Wtna,
    /// Write-back with write-allocate: stores fill lines and mark them dirty.
    Wbwa,
    /// Write-through with allocation and no fetch (the H100's L1, GPGPU-Sim's `T` with `L`):
    /// a store hits on its line's tag, allocates the line on a miss without reading memory,
    /// and goes through to the level below; a sector it covers only in part is fetched by
    /// the first load that needs it.
    Wtwa,
}

impl WritePolicy {
    pub fn name(self) -> &'static str {
        choice::entry_of(&self).map_or("?", |e| e.name)
    }
}

impl Choice for WritePolicy {
    const WHAT: &'static str = "write policy";
    const ENTRIES: &'static [Entry<WritePolicy>] = &[
        Entry {
            name: "wtna",
            aliases: &[],
            label: "write-through, no allocate",
            description: "stores go to memory; a store miss does not fill a line (Fermi L1)",
            form: Form::Plain(WritePolicy::Wtna),
        },
        Entry {
            name: "wbwa",
            aliases: &[],
            label: "write-back, allocate",
            description: "stores dirty the line; a store miss fills it; evictions write back",
            form: Form::Plain(WritePolicy::Wbwa),
        },
        Entry {
            name: "wtwa",
            aliases: &[],
            label: "write-through, allocate",
            description: "stores go to memory and allocate their line without fetching; a store hits on the line's tag (H100 L1)",
            form: Form::Plain(WritePolicy::Wtwa),
        },
    ];
}

/// The L1 cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    pub size_bytes: u64,
    pub line_bytes: u32,
    /// Ways per set; 0 means fully associative.
    pub ways: u32,
    /// Sector size; equal to `line_bytes` for an unsectored cache.
    pub sector_bytes: u32,
    pub set_index: SetIndex,
    pub replacement: Replacement,
    pub write_policy: WritePolicy,
    /// Global loads and stores skip the L1 (GPGPU-Sim's `-gpgpu_gmem_skip_L1D`, what
    /// `nvcc -Xptxas -dlcm=cg` compiles to, Kepler's default): every request misses without
    /// allocating, a store goes on to the level below, and the requests' sectors go to the L2.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bypass: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            size_bytes: 16 * 1024,
            line_bytes: 128,
            ways: 4,
            sector_bytes: 128,
            set_index: SetIndex::Modulo,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtna,
            bypass: false,
        }
    }
}

impl CacheConfig {
    pub fn lines(&self) -> u64 {
        self.size_bytes / self.line_bytes.max(1) as u64
    }
    pub fn ways_effective(&self) -> u32 {
        if self.ways == 0 {
            self.lines() as u32
        } else {
            self.ways
        }
    }
    pub fn sets(&self) -> u32 {
        (self.lines() / self.ways_effective().max(1) as u64) as u32
    }
    /// Every sector of a line, as a mask (bit s = sector s).
    pub fn sector_mask(&self) -> u32 {
        let per_line = self.line_bytes / self.sector_bytes.max(1);
        if per_line >= 32 {
            u32::MAX
        } else {
            (1u32 << per_line) - 1
        }
    }
    /// Checks the geometry; the message says what is wrong and what is expected.
    pub fn validate(&self) -> Result<(), Invalid> {
        let pow2 = |v: u64| v != 0 && v.is_power_of_two();
        let line = self.line_bytes;
        if !pow2(line as u64) || line < 4 {
            return Err(Invalid::LineSize { line });
        }
        let sector = self.sector_bytes;
        if !pow2(sector as u64) || sector > line {
            return Err(Invalid::SectorSize { sector, line });
        }
        if line / sector > 32 {
            return Err(Invalid::TooManySectors);
        }
        let size = self.size_bytes;
        if size < line as u64 || size % line as u64 != 0 {
            return Err(Invalid::CacheSize { size, line });
        }
        let lines = self.lines();
        if lines > 1 << 24 {
            return Err(Invalid::TooManyLines { lines });
        }
        let ways = self.ways_effective() as u64;
        if ways > lines || lines % ways != 0 {
            return Err(Invalid::Ways {
                ways: self.ways,
                lines,
            });
        }
        let sets = self.sets() as u64;
        match &self.set_index {
            SetIndex::Modulo => {}
            SetIndex::FermiHash => {
                if sets > 64 {
                    return Err(Invalid::FermiHashSets { sets });
                }
            }
            SetIndex::Bits(bits) => {
                if bits.len() >= 64 || 1u64 << bits.len() != sets {
                    return Err(Invalid::SetIndexBits {
                        bits: bits.len(),
                        sets,
                    });
                }
                let offset_bits = line.trailing_zeros() as u8;
                if let Some(&bit) = bits.iter().find(|&&b| b < offset_bits) {
                    return Err(Invalid::SetIndexBitInOffset { bit, offset_bits });
                }
            }
            SetIndex::Ipoly | SetIndex::Xor => {
                let most = 1u64 << crate::cache::set_index::ipoly::MAX_DEGREE;
                if !sets.is_power_of_two() || sets > most {
                    return Err(Invalid::HashSets {
                        hash: self.set_index.name(),
                        sets,
                    });
                }
            }
        }
        if self.replacement == Replacement::Plru && !ways.is_power_of_two() {
            return Err(Invalid::PlruWays { ways: ways as u32 });
        }
        Ok(())
    }
}
