//! `xor`: the line address's low bits XOR the bits just above them (GPGPU-Sim's `X` set index
//! function, its "bitwise XORing", which the A100's L2 uses in Accel-Sim).

use crate::config::choice::{Entry, Form};
use crate::config::SetIndex;

/// This function in the registry of [`SetIndex`] (see `config::choice`).
pub const ENTRY: Entry<SetIndex> = Entry {
    name: "xor",
    aliases: &[],
    label: "XOR hash",
    description: "line address bits XOR the bits above them (GPGPU-Sim's `X`, power-of-two sets)",
    form: Form::Plain(SetIndex::Xor),
};

/// The set of `line` among `sets = 2^n` sets: its low `n` bits XOR the next `n`.
#[inline]
pub fn set(line: u64, log2_sets: u32) -> u32 {
    let mask = (1u64 << log2_sets) - 1;
    ((line & mask) ^ ((line >> log2_sets) & mask)) as u32
}

#[cfg(test)]
mod tests {
    #[test]
    fn low_bits_xor_the_next_ones() {
        // 32 sets: line 0b00011_00101 -> 00101 ^ 00011 = 00110.
        assert_eq!(super::set(0b00011_00101, 5), 0b00110);
        // Bits above the next five do not count.
        assert_eq!(super::set(1 << 10, 5), 0);
        // Consecutive lines fill the sets in order within an aligned block.
        let sets: Vec<u32> = (0..4u64).map(|l| super::set(l, 2)).collect();
        assert_eq!(sets, vec![0, 1, 2, 3]);
    }
}
