//! Set index functions: which set a line maps to (modulo, Fermi's XOR hash, chosen bits).
//!
//! This is the *indexing* policy (gem5's split): it picks the candidate set; replacement then
//! picks the victim inside it.

use crate::config::choice::{Choice, Entry, Form};
use crate::config::SetIndex;

impl Choice for SetIndex {
    const WHAT: &'static str = "set index";
    const ENTRIES: &'static [Entry<SetIndex>] = &[
        Entry {
            name: "modulo",
            aliases: &[],
            label: "modulo",
            description: "set = line address mod sets",
            form: Form::Plain(SetIndex::Modulo),
        },
        Entry {
            name: "fermi-hash",
            aliases: &["fermi"],
            label: "fermi-hash",
            description: "Fermi's XOR hash (128-byte lines, 32 or 64 sets)",
            form: Form::Plain(SetIndex::FermiHash),
        },
        Entry {
            name: "bits",
            aliases: &[],
            label: "address bits",
            description: "the set index is made of the address bits you list",
            form: Form::Param {
                syntax: "B0,B1,...",
                parse: parse_bits,
                is: |s| matches!(s, SetIndex::Bits(_)),
                default: || SetIndex::Bits(vec![7]),
            },
        },
    ];
}

/// `B0,B1,...`: the address bits of the set index, low to high.
fn parse_bits(list: &str) -> Result<SetIndex, String> {
    list.split(',')
        .map(|b| b.trim().parse::<u8>().ok().filter(|&b| b < 64))
        .collect::<Option<Vec<u8>>>()
        .map(SetIndex::Bits)
        .ok_or_else(|| "expected address bit numbers 0-63".to_string())
}

/// A compiled set index function.
#[derive(Clone, Debug)]
pub enum SetIndexFn {
    Mask { mask: u64 },
    Modulo { sets: u64 },
    Fermi { sets: u64 },
    Bits { line_shift: u32, bits: Vec<u8> },
}

impl SetIndexFn {
    pub fn new(kind: &SetIndex, sets: u32, line_bytes: u32) -> Self {
        let line_shift = line_bytes.trailing_zeros();
        match kind {
            SetIndex::Modulo if sets.is_power_of_two() => SetIndexFn::Mask {
                mask: sets as u64 - 1,
            },
            SetIndex::Modulo => SetIndexFn::Modulo { sets: sets as u64 },
            SetIndex::FermiHash => SetIndexFn::Fermi {
                sets: sets.max(1) as u64,
            },
            SetIndex::Bits(bits) => SetIndexFn::Bits {
                line_shift,
                bits: bits.clone(),
            },
        }
    }

    /// The set of a line (line address = byte address >> log2(line size)).
    #[inline]
    pub fn set(&self, line: u64) -> u32 {
        match self {
            SetIndexFn::Mask { mask } => (line & mask) as u32,
            SetIndexFn::Modulo { sets } => (line % sets) as u32,
            SetIndexFn::Fermi { sets } => fermi_line_set(line, *sets),
            SetIndexFn::Bits { line_shift, bits } => {
                let a = line << line_shift;
                bits.iter()
                    .enumerate()
                    .fold(0u32, |s, (i, &b)| s | ((((a >> b) & 1) as u32) << i))
            }
        }
    }
}

/// Fermi's L1 set hash (Nugteren et al. 2014, §5.1, fig. 6) on a line address: line bits
/// 0-4 XOR bits 6, 7, 8, 10, 12 (pairwise in that order), plus 32 x bit 5, modulo the sets.
/// With 128-byte lines these are byte-address bits 7-11, 13, 14, 15, 17, 19 and 12, the
/// published hash of the 32-set (16 KB) and 64-set (48 KB) caches; for other line sizes and
/// set counts it is the same function of the line address, as the released model applies it.
#[inline]
pub fn fermi_line_set(line: u64, sets: u64) -> u32 {
    let low = line & 0x1f;
    let bit = |b: u32| (line >> b) & 1;
    let high = bit(6) | bit(7) << 1 | bit(8) << 2 | bit(10) << 3 | bit(12) << 4;
    (((low ^ high) + (bit(5) << 5)) % sets) as u32
}

/// [`fermi_line_set`] of a byte address in a cache of 128-byte lines with 32 or 64 sets.
#[inline]
pub fn fermi_set(addr: u64, sets64: bool) -> u32 {
    fermi_line_set(addr >> 7, if sets64 { 64 } else { 32 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fermi_hash_uses_the_published_bits() {
        // Consecutive lines fill consecutive sets.
        for i in 0..32u64 {
            assert_eq!(fermi_set(i * 128, false), i as u32);
        }
        // Bit 12 is ignored by the 32-set hash and is the top bit of the 64-set one.
        assert_eq!(fermi_set(1 << 12, false), 0);
        assert_eq!(fermi_set(1 << 12, true), 32);
        // Each upper bit flips one set bit.
        for (b, s) in [(13, 1), (14, 2), (15, 4), (17, 8), (19, 16)] {
            assert_eq!(fermi_set(1 << b, false), s, "bit {b}");
        }
        // Bits 16 and 18 are not used.
        assert_eq!(fermi_set((1 << 16) | (1 << 18), false), 0);
        // A stride of 2^12 over 128 loads touches 16 sets (bits 13,14,15,17 vary): Nugteren et al. 2014 §5.1.
        let sets: std::collections::BTreeSet<u32> =
            (0..128u64).map(|i| fermi_set(i << 12, false)).collect();
        assert_eq!(sets.len(), 16);
    }

    #[test]
    fn the_fermi_hash_of_other_line_sizes_uses_the_same_line_address_bits() {
        // 64-byte lines, 32 sets: line bits 0-4 XOR line bits 6, 7, 8, 10, 12; bit 5 adds 32.
        let f = SetIndexFn::new(&SetIndex::FermiHash, 32, 64);
        assert_eq!(f.set(3), 3);
        assert_eq!(f.set(1 << 6), 1);
        assert_eq!(f.set((1 << 12) | 16), 0);
        assert_eq!(f.set(1 << 5), 0);
        // 16 sets: modulo 16 of the 32-set value.
        let f = SetIndexFn::new(&SetIndex::FermiHash, 16, 64);
        assert_eq!(f.set(1 << 10), 8);
        assert_eq!(f.set(1 << 12), 0);
        // 64 sets: bit 5 selects the upper half.
        let f = SetIndexFn::new(&SetIndex::FermiHash, 64, 32);
        assert_eq!(f.set(1 << 5), 32);
    }

    #[test]
    fn bit_list_and_modulo() {
        let f = SetIndexFn::new(&SetIndex::Bits(vec![7, 9]), 4, 128);
        assert_eq!(f.set(1), 1); // byte 128: bit 7
        assert_eq!(f.set(4), 2); // byte 512: bit 9
        assert_eq!(f.set(2), 0); // byte 256: bit 8 unused
        let m = SetIndexFn::new(&SetIndex::Modulo, 6, 64);
        assert_eq!(m.set(13), 1);
    }
}
