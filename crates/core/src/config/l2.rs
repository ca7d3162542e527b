//! The shared L2's configuration: how many slices (memory sub-partitions), which slice an
//! address goes to, and the cache each slice is.
//!
//! The slice of an address is GPGPU-Sim's memory sub-partition (its `addrdec`): the address
//! map (`-gpgpu_mem_addr_mapping`) says which address bits are the DRAM bank, row and column
//! and where the channel bits go in; the channel count and sub-partitions per channel
//! (`-gpgpu_n_mem`, `-gpgpu_n_sub_partition_per_mchannel`) how many; the indexing
//! (`-gpgpu_memory_partition_indexing`) how the bits above them are folded in. The model of
//! the map is `crate::l2::AddressMap`.

use super::choice::{self, Choice, Entry, Form};
use super::{CacheConfig, Invalid, Replacement, SetIndex, WritePolicy};
use serde::{Deserialize, Serialize};

/// How the bits above the channel bits choose among the slices (GPGPU-Sim's
/// `-gpgpu_memory_partition_indexing` 0, 1 and 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SliceHash {
    /// The channel bits as they are (consecutive).
    #[default]
    Linear,
    /// The channel XOR the bits above the channel and sub-partition bits (power-of-two
    /// channels).
    Xor,
    /// The sub-partition number XOR the IPOLY remainder of the bits above it.
    Ipoly,
}

impl SliceHash {
    pub fn name(self) -> &'static str {
        choice::entry_of(&self).map_or("?", |e| e.name)
    }
}

impl Choice for SliceHash {
    const WHAT: &'static str = "L2 slice hash";
    const ENTRIES: &'static [Entry<SliceHash>] = &[
        Entry {
            name: "linear",
            aliases: &["consecutive", "0"],
            label: "linear",
            description: "the channel bits of the address as they are (GPGPU-Sim's indexing 0)",
            form: Form::Plain(SliceHash::Linear),
        },
        Entry {
            name: "xor",
            aliases: &["1"],
            label: "XOR",
            description: "the channel bits XOR the bits above them (GPGPU-Sim's indexing 1)",
            form: Form::Plain(SliceHash::Xor),
        },
        Entry {
            name: "ipoly",
            aliases: &["2"],
            label: "IPOLY",
            description: "the sub-partition number hashed with IPOLY (GPGPU-Sim's indexing 2)",
            form: Form::Plain(SliceHash::Ipoly),
        },
    ];
}

/// The address map of Accel-Sim's Volta, Turing and Hopper configurations.
pub const VOLTA_ADDRESS_MAP: &str =
    "dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCB.CCCSSSSS";

/// The shared L2: every SM's L1 misses, write-throughs and write-backs go to one of its
/// slices, each a set-associative sectored cache of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L2Config {
    /// Memory channels (GPGPU-Sim's `-gpgpu_n_mem`).
    pub channels: u32,
    /// Slices (memory sub-partitions) per channel, a power of two
    /// (`-gpgpu_n_sub_partition_per_mchannel`).
    pub slices_per_channel: u32,
    /// How the address picks its slice.
    pub slice_hash: SliceHash,
    /// Which address bits are DRAM bank, row and column, and where the channel bits go
    /// (`-gpgpu_mem_addr_mapping`, `dramid@BIT;` then 64 characters of `B`, `R`, `C`, `S`,
    /// `D` and `0`, high bit first; dots and spaces are ignored).
    pub address_map: String,
    /// One slice's cache: its size is the slice's, its set index is computed on the address
    /// with the slice's bits taken out (as GPGPU-Sim does). Write-back (`wbwa`), its writes
    /// allocating without a fetch.
    pub slice: CacheConfig,
}

impl Default for L2Config {
    /// Fermi GTX480's L2 in Accel-Sim's configuration: 6 channels of 2 slices of 64 sets of
    /// 8 ways of 128-byte lines with 32-byte sectors (768 KB), linear set index and slices.
    fn default() -> Self {
        L2Config {
            channels: 6,
            slices_per_channel: 2,
            slice_hash: SliceHash::Linear,
            address_map:
                "dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.BBBCCCCB.CCSSSSSS"
                    .to_string(),
            slice: slice_cache(64, 8, SetIndex::Modulo),
        }
    }
}

/// A slice of `sets` sets of `ways` ways of 128-byte lines with 32-byte sectors, LRU,
/// write-back with write-allocate (GPGPU-Sim's `S:sets:128:ways,L:B:m:L:...`).
pub fn slice_cache(sets: u64, ways: u32, set_index: SetIndex) -> CacheConfig {
    CacheConfig {
        size_bytes: sets * ways as u64 * 128,
        line_bytes: 128,
        ways,
        sector_bytes: 32,
        set_index,
        replacement: Replacement::Lru,
        write_policy: WritePolicy::Wbwa,
        bypass: false,
    }
}

impl L2Config {
    /// Slices in all.
    pub fn slices(&self) -> u32 {
        self.channels.saturating_mul(self.slices_per_channel)
    }

    /// Bytes in all the slices.
    pub fn size_bytes(&self) -> u64 {
        self.slice.size_bytes * self.slices() as u64
    }

    /// Checks the slices, the address map and the slice's cache.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.channels == 0 || self.channels > 1024 {
            return Err(Invalid::L2Channels {
                channels: self.channels,
            });
        }
        let per = self.slices_per_channel;
        if per == 0 || !per.is_power_of_two() || per > 64 {
            return Err(Invalid::L2SlicesPerChannel { per });
        }
        if self.slice_hash == SliceHash::Xor && !self.channels.is_power_of_two() {
            return Err(Invalid::L2XorChannels {
                channels: self.channels,
            });
        }
        crate::l2::AddressMap::new(self).map_err(|why| Invalid::L2AddressMap {
            map: self.address_map.clone(),
            why,
        })?;
        if self.slice.write_policy != WritePolicy::Wbwa {
            return Err(Invalid::L2WriteBack);
        }
        if self.slice.bypass {
            return Err(Invalid::L2Bypass);
        }
        self.slice
            .validate()
            .map_err(|e| Invalid::L2Slice(Box::new(e)))
    }

    /// Sets one of its keys (`l2.KEY=VALUE`, `--l2 KEY=VALUE`): the slice's cache by the L1's
    /// key names (not its write policy: the L2 writes back), and `channels`,
    /// `slices-per-channel`, `slice-hash`, `address-map`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let number = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("l2.{key}: expected a whole number, found `{v}`"))
        };
        match key {
            "channels" => self.channels = number(v)?,
            "slices-per-channel" => self.slices_per_channel = number(v)?,
            "slice-hash" => self.slice_hash = choice::parse(v)?,
            "address-map" => self.address_map = v.to_string(),
            "slice-size" => self.slice.size_bytes = super::keys::parse_size(v)?,
            "ways" => self.slice.ways = number(v)?,
            "line-size" => self.slice.line_bytes = super::keys::parse_size(v)? as u32,
            "sector-size" => self.slice.sector_bytes = super::keys::parse_size(v)? as u32,
            "set-index" => self.slice.set_index = choice::parse(v)?,
            "replacement" => self.slice.replacement = choice::parse(v)?,
            _ => {
                return Err(format!(
                    "unknown L2 key `{key}`: expected channels, slices-per-channel, slice-hash, \
                     address-map, slice-size, ways, line-size, sector-size, set-index or \
                     replacement"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_gtx480s_768_kb() {
        let c = L2Config::default();
        c.validate().unwrap();
        assert_eq!((c.slices(), c.size_bytes()), (12, 768 * 1024));
        assert_eq!(c.slice.sets(), 64);
    }

    #[test]
    fn keys_set_the_slices_and_their_cache() {
        let mut c = L2Config::default();
        c.set("channels", "32").unwrap();
        c.set("slice-hash", "ipoly").unwrap();
        c.set("slice-size", "96K").unwrap();
        c.set("ways", "24").unwrap();
        c.set("set-index", "ipoly").unwrap();
        c.address_map = VOLTA_ADDRESS_MAP.into();
        c.validate().unwrap();
        assert_eq!((c.slices(), c.size_bytes()), (64, 6 << 20));
        assert!(c
            .set("colour", "red")
            .unwrap_err()
            .contains("unknown L2 key"));
        c.slices_per_channel = 3;
        assert_eq!(c.validate(), Err(Invalid::L2SlicesPerChannel { per: 3 }));
        c.slices_per_channel = 2;
        c.channels = 6;
        c.slice_hash = SliceHash::Xor;
        assert_eq!(c.validate(), Err(Invalid::L2XorChannels { channels: 6 }));
    }
}
