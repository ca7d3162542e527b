//! Set index functions: which set a line maps to (modulo, Fermi's XOR hash, chosen bits,
//! GPGPU-Sim's IPOLY and XOR hashes).
//!
//! This is the *indexing* policy (gem5's split): it picks the candidate set; replacement then
//! picks the victim inside it.
//!
//! One file per function, each with its entry in the registry of [`SetIndex`]; the compiled
//! form ([`SetIndexFn`]) dispatches with one `match`.

mod bits;
mod fermi;
pub mod ipoly;
mod modulo;
mod xor;

use crate::config::choice::{Choice, Entry};
use crate::config::SetIndex;
pub use fermi::{fermi_line_set, fermi_set};

impl Choice for SetIndex {
    const WHAT: &'static str = "set index";
    const ENTRIES: &'static [Entry<SetIndex>] = &[
        modulo::ENTRY,
        fermi::ENTRY,
        bits::ENTRY,
        ipoly::ENTRY,
        xor::ENTRY,
    ];
}

/// A compiled set index function.
#[derive(Clone, Debug)]
pub enum SetIndexFn {
    Mask { mask: u64 },
    Modulo { sets: u64 },
    Fermi { sets: u64 },
    Bits { line_shift: u32, bits: Vec<u8> },
    Ipoly { log2_sets: u32 },
    Xor { log2_sets: u32 },
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
            SetIndex::Ipoly => SetIndexFn::Ipoly {
                log2_sets: sets.max(1).trailing_zeros(),
            },
            SetIndex::Xor => SetIndexFn::Xor {
                log2_sets: sets.max(1).trailing_zeros(),
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
            SetIndexFn::Bits { line_shift, bits } => bits::set(*line_shift, bits, line),
            SetIndexFn::Ipoly { log2_sets } => ipoly::ipoly(line, *log2_sets),
            SetIndexFn::Xor { log2_sets } => xor::set(line, *log2_sets),
        }
    }
}

impl SetIndexFn {
    /// How the set of `line` is computed, in words with the bit values (for explanations):
    /// for example `line 0x2a = address >> 7; set = line mod 32 = bits 7-11 of the address
    /// = 0b01010 = 10`.
    pub fn derivation(&self, line: u64, line_bytes: u32) -> String {
        let shift = line_bytes.max(1).trailing_zeros();
        let set = self.set(line);
        let head = format!("line {line:#x} = address >> {shift}; ");
        let body = match self {
            SetIndexFn::Mask { mask } => {
                let n = mask.count_ones();
                if n == 0 {
                    "one set: every line maps to set 0".to_string()
                } else {
                    format!(
                        "set = line mod {} = address bits {}-{} = {:#0w$b} = {set}",
                        mask + 1,
                        shift,
                        shift + n - 1,
                        line & mask,
                        w = n as usize + 2
                    )
                }
            }
            SetIndexFn::Modulo { sets } => format!("set = line mod {sets} = {set}"),
            SetIndexFn::Fermi { sets } => {
                let bit = |b: u32| (line >> b) & 1;
                let high = bit(6) | bit(7) << 1 | bit(8) << 2 | bit(10) << 3 | bit(12) << 4;
                let at = |b: u32| b + shift;
                format!(
                    "Fermi hash: address bits {}-{} ({:#07b}) XOR bits {},{},{},{},{} ({high:#07b}){}, mod {sets} = {set}",
                    at(0),
                    at(4),
                    line & 0x1f,
                    at(6),
                    at(7),
                    at(8),
                    at(10),
                    at(12),
                    if *sets > 32 {
                        format!(", plus bit {} ({}) as bit 5", at(5), bit(5))
                    } else {
                        String::new()
                    }
                )
            }
            SetIndexFn::Bits { line_shift, bits } => {
                let a = line << line_shift;
                let parts: Vec<String> = bits
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| format!("bit {i} = address bit {b} = {}", (a >> b) & 1))
                    .collect();
                format!("{}; set = {set}", parts.join(", "))
            }
            SetIndexFn::Ipoly { log2_sets } => format!(
                "IPOLY hash: address bits {}-{} ({:#0w$b}) XOR the remainder of the bits above \
                 them modulo a polynomial of degree {log2_sets} = {set}",
                shift,
                shift + log2_sets.max(&1) - 1,
                line & ((1u64 << log2_sets) - 1),
                w = *log2_sets as usize + 2
            ),
            SetIndexFn::Xor { log2_sets } => format!(
                "XOR hash: address bits {}-{} XOR bits {}-{} = {set}",
                shift,
                shift + log2_sets.max(&1) - 1,
                shift + log2_sets,
                shift + 2 * log2_sets.max(&1) - 1
            ),
        };
        head + &body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivations_name_the_bits_and_the_set() {
        let f = SetIndexFn::new(&SetIndex::Modulo, 32, 128);
        assert_eq!(
            f.derivation(0x2a, 128),
            "line 0x2a = address >> 7; set = line mod 32 = address bits 7-11 = 0b01010 = 10"
        );
        let f = SetIndexFn::new(&SetIndex::Modulo, 3, 128);
        assert_eq!(
            f.derivation(7, 128),
            "line 0x7 = address >> 7; set = line mod 3 = 1"
        );
        let f = SetIndexFn::new(&SetIndex::Bits(vec![7, 13]), 4, 128);
        let d = f.derivation((1 << 13) >> 7, 128);
        assert!(
            d.ends_with("bit 0 = address bit 7 = 0, bit 1 = address bit 13 = 1; set = 2"),
            "{d}"
        );
        let f = SetIndexFn::new(&SetIndex::FermiHash, 32, 128);
        let d = f.derivation((1 << 13) >> 7, 128);
        assert!(
            d.ends_with("(0b00000) XOR bits 13,14,15,17,19 (0b00001), mod 32 = 1"),
            "{d}"
        );
    }

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
