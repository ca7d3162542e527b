//! Which L2 slice (memory sub-partition) an address goes to, and the address within its
//! slice: GPGPU-Sim's address decoder (`addrdec`, Accel-Sim's configurations), written from
//! its documented behaviour.
//!
//! The map string gives, from bit 63 down, what each address bit is: `B` DRAM bank, `R` row,
//! `C` column, `S` burst (a column bit too), `D` channel, `0` unused. With `dramid@N;` in
//! front, the channel bits are not in the string: `log2(channels)` of them are inserted at
//! bit `N` (the bits from `N` up move up), or, when the channel count is not a power of two,
//! the channel is the address above bit `N` modulo the channels and the rest of the address is
//! the quotient (GPGPU-Sim's "gap" mode). The slice is `channel * slices_per_channel` plus the
//! lowest bank bits, then the configured hash folds in the bits above.

use crate::cache::set_index::ipoly::ipoly;
use crate::config::{L2Config, SliceHash};

/// A compiled address map.
#[derive(Clone, Debug)]
pub struct AddressMap {
    hash: SliceHash,
    channels: u64,
    per_channel: u64,
    log2_per_channel: u32,
    log2_channels: u32,
    /// The channel count is not a power of two: the channel is a remainder.
    gap: bool,
    /// Where the channel bits start (`dramid@N`), when given.
    chip_start: Option<u32>,
    chip_mask: u64,
    bank_mask: u64,
    /// The bank bits that pick the slice within its channel.
    sub_mask: u64,
    /// IPOLY's index width: log2 of the next power of two of the channels, times the
    /// sub-partitions.
    ipoly_degree: u32,
}

/// Packs the bits of `value` that `mask` selects into the low bits, in order.
#[inline]
fn pack(mask: u64, value: u64) -> u64 {
    let (mut out, mut pos, mut m) = (0u64, 0u32, mask);
    while m != 0 {
        let bit = m.trailing_zeros();
        out |= ((value >> bit) & 1) << pos;
        pos += 1;
        m &= m - 1;
    }
    out
}

impl AddressMap {
    /// Compiles the map of `cfg`; the error says what in the string is wrong.
    pub fn new(cfg: &L2Config) -> Result<AddressMap, String> {
        let text = cfg.address_map.trim();
        let (chip_start, bits) = match text.strip_prefix("dramid@") {
            Some(rest) => {
                let (n, bits) = rest
                    .split_once(';')
                    .ok_or("expected `dramid@BIT;` then the bits")?;
                let n: u32 = n
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n| n < 64)
                    .ok_or_else(|| format!("`dramid@{n}`: expected a bit number 0-63"))?;
                (Some(n), bits)
            }
            None => (None, text),
        };
        let (mut chip_mask, mut bank_mask) = (0u64, 0u64);
        let mut bit = 64i32;
        for c in bits.chars() {
            if matches!(c, '.' | ' ' | '|') {
                continue;
            }
            bit -= 1;
            if bit < 0 {
                return Err("more than 64 address bits".into());
            }
            match c.to_ascii_uppercase() {
                'D' if chip_start.is_some() => {
                    return Err("`D` bits and `dramid@` both place the channel bits".into())
                }
                'D' => chip_mask |= 1 << bit,
                'B' => bank_mask |= 1 << bit,
                'R' | 'C' | 'S' | '0' => {}
                other => {
                    return Err(format!(
                        "`{other}` is not an address bit: expected B, R, C, S, D or 0"
                    ))
                }
            }
        }
        if bit != 0 {
            return Err(format!("{} address bits, expected 64", 64 - bit));
        }
        let channels = cfg.channels.max(1) as u64;
        let per_channel = cfg.slices_per_channel.max(1) as u64;
        let log2_channels = 63 - channels.leading_zeros();
        let gap = !channels.is_power_of_two();
        match chip_start {
            Some(start) if !gap => {
                // Insert the channel bits at `start`: the bank bits from there up move up.
                let low = (1u64 << start) - 1;
                bank_mask = ((bank_mask & !low) << log2_channels) | (bank_mask & low);
                chip_mask = ((1u64 << log2_channels) - 1) << start;
            }
            Some(_) => {}
            None if gap => {
                return Err(format!(
                    "{channels} channels is not a power of two: give `dramid@BIT;`"
                ))
            }
            None if chip_mask.count_ones() != log2_channels => {
                return Err(format!(
                    "{} `D` bits for {channels} channels, expected {log2_channels}",
                    chip_mask.count_ones()
                ))
            }
            None => {}
        }
        let log2_per_channel = per_channel.trailing_zeros();
        let mut sub_mask = 0u64;
        let mut m = bank_mask;
        for _ in 0..log2_per_channel {
            if m == 0 {
                return Err(format!(
                    "{per_channel} slices per channel need {log2_per_channel} bank bits"
                ));
            }
            sub_mask |= m & m.wrapping_neg();
            m &= m - 1;
        }
        let line_bits = cfg.slice.line_bytes.max(1).trailing_zeros();
        let lowest = match chip_start {
            Some(start) if gap => start.min(sub_mask.trailing_zeros()),
            _ => (chip_mask | sub_mask).trailing_zeros(),
        };
        if lowest < line_bits {
            return Err(format!(
                "slice bit {lowest} lies inside a {}-byte L2 line",
                cfg.slice.line_bytes
            ));
        }
        let ipoly_degree = (channels.next_power_of_two() * per_channel).trailing_zeros();
        if cfg.slice_hash == SliceHash::Ipoly
            && ipoly_degree > crate::cache::set_index::ipoly::MAX_DEGREE
        {
            return Err("too many slices for the IPOLY hash (at most 65536)".into());
        }
        Ok(AddressMap {
            hash: cfg.slice_hash,
            channels,
            per_channel,
            log2_per_channel,
            log2_channels,
            gap,
            chip_start,
            chip_mask,
            bank_mask,
            sub_mask,
            ipoly_degree,
        })
    }

    /// The slice of byte address `addr`, and the address within the slice (the slice's bits
    /// taken out), from which the slice's set index is computed.
    #[inline]
    pub fn slice_of(&self, addr: u64) -> (u32, u64) {
        let (chip, bank, high, local) = match (self.gap, self.chip_start) {
            (true, Some(start)) => {
                let above = addr >> start;
                let rest = (above / self.channels) << start | (addr & ((1u64 << start) - 1));
                let local = pack(!self.sub_mask, rest);
                (
                    above % self.channels,
                    pack(self.bank_mask, rest),
                    above / self.channels,
                    local,
                )
            }
            _ => {
                let start = self.chip_mask.trailing_zeros().min(63);
                let high = addr
                    .checked_shr(start + self.log2_channels + self.log2_per_channel)
                    .unwrap_or(0);
                (
                    pack(self.chip_mask, addr),
                    pack(self.bank_mask, addr),
                    high,
                    pack(!(self.chip_mask | self.sub_mask), addr),
                )
            }
        };
        let sub = bank & (self.per_channel - 1);
        let slice = match self.hash {
            SliceHash::Linear => chip * self.per_channel + sub,
            SliceHash::Xor => (chip ^ (high & (self.channels - 1))) * self.per_channel + sub,
            SliceHash::Ipoly => {
                let index = chip * self.per_channel + sub;
                let value = (high << self.ipoly_degree) | index;
                let s = ipoly(value, self.ipoly_degree) as u64;
                if self.gap {
                    s % (self.channels * self.per_channel)
                } else {
                    s
                }
            }
        };
        (slice as u32, local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{slice_cache, SetIndex, VOLTA_ADDRESS_MAP};

    fn volta(hash: SliceHash) -> AddressMap {
        AddressMap::new(&L2Config {
            channels: 32,
            slices_per_channel: 2,
            slice_hash: hash,
            address_map: VOLTA_ADDRESS_MAP.into(),
            slice: slice_cache(32, 24, SetIndex::Ipoly),
        })
        .unwrap()
    }

    #[test]
    fn volta_linear_channels_are_bits_8_to_12_and_the_bank_bit_above() {
        // The map's lowest bank bit is bit 8; 5 channel bits go in at bit 8, so it moves to
        // bit 13: slice = channel * 2 + bit 13.
        let m = volta(SliceHash::Linear);
        assert_eq!(m.slice_of(0).0, 0);
        assert_eq!(m.slice_of(0xff).0, 0, "a 256-byte chunk stays in one slice");
        assert_eq!(m.slice_of(0x100).0, 2, "channel 1");
        assert_eq!(m.slice_of(31 << 8).0, 62, "channel 31");
        assert_eq!(
            m.slice_of(1 << 13).0,
            1,
            "the bank bit: the channel's second slice"
        );
        // The address within the slice: bits 8-13 taken out.
        assert_eq!(m.slice_of((1 << 14) | 0x7f).1, (1 << 8) | 0x7f);
    }

    #[test]
    fn ipoly_folds_the_bits_above_into_the_slice() {
        let m = volta(SliceHash::Ipoly);
        // Below the high bits it is the linear slice.
        assert_eq!(m.slice_of(31 << 8).0, 62);
        // Bit 14 is the first high bit (a0): x^6 = x + 1 flips slice bits 0 and 1.
        assert_eq!(m.slice_of(1 << 14).0, 0b11);
        // A stride of 16 KB over 64 addresses uses every slice.
        let slices: std::collections::BTreeSet<u32> =
            (0..64u64).map(|i| m.slice_of(i << 14).0).collect();
        assert_eq!(slices.len(), 64);
        // Linear sends them all to slice 0.
        let lin = volta(SliceHash::Linear);
        assert!((0..64u64).all(|i| lin.slice_of(i << 14).0 == 0));
    }

    #[test]
    fn a_channel_count_that_is_not_a_power_of_two_takes_a_remainder() {
        // GTX480: 6 channels, dramid@8, the lowest bank bit at 8 of what remains.
        let c = L2Config::default();
        let m = AddressMap::new(&c).unwrap();
        // 256-byte chunks go to channels 0-5 in turn, then the next six to their second slices.
        let slices: Vec<u32> = (0..12u64).map(|i| m.slice_of(i << 8).0).collect();
        assert_eq!(slices, vec![0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11]);
        // The address within the slice is the quotient with the bank bit taken out.
        assert_eq!(m.slice_of(12 << 8).1, 1 << 8);
    }

    #[test]
    fn the_a100s_bank_bit_7_splits_a_256_byte_chunk() {
        // Accel-Sim's A100: 40 channels of 4 slices, bank bits 7 and 12 of what remains.
        let c = L2Config {
            channels: 40,
            slices_per_channel: 4,
            slice_hash: SliceHash::Linear,
            address_map:
                "dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCC.BCCSSSSS"
                    .into(),
            slice: slice_cache(128, 16, SetIndex::Xor),
        };
        let m = AddressMap::new(&c).unwrap();
        assert_eq!(m.slice_of(0).0, 0);
        assert_eq!(m.slice_of(0x80).0, 1, "bit 7 is a bank bit");
        assert_eq!(m.slice_of(0x100).0, 4, "channel 1");
    }

    #[test]
    fn bad_maps_say_what_is_wrong() {
        let with = |map: &str| {
            AddressMap::new(&L2Config {
                address_map: map.into(),
                ..L2Config::default()
            })
            .unwrap_err()
        };
        assert!(
            with("dramid@8;RRX").contains("`X` is not an address bit"),
            "{}",
            with("dramid@8;RRX")
        );
        assert!(with("dramid@8;RRBB").contains("4 address bits, expected 64"));
        assert!(with("dramid@x;B").contains("expected a bit number"));
        let inside = AddressMap::new(&L2Config {
            address_map: format!("dramid@4;{}", "0".repeat(60) + "BCCC"),
            ..L2Config::default()
        })
        .unwrap_err();
        assert!(inside.contains("inside a 128-byte L2 line"), "{inside}");
    }
}
