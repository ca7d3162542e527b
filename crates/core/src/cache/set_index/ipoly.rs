//! `ipoly`: the set is the line address reduced modulo an irreducible polynomial over GF(2)
//! (Rau 1991's pseudo-random interleaving), as GPGPU-Sim's `P` set index function and its
//! IPOLY memory-partition indexing compute it.
//!
//! The line address is read as a polynomial whose coefficients are its bits; its remainder
//! modulo a polynomial of degree `n` is an `n`-bit index, and every power-of-two stride maps
//! consecutive lines to distinct sets until all `2^n` are used. GPGPU-Sim writes the
//! remainders out as XOR equations for 16, 32 and 64 sets, which use the 13, 15 and 19 bits
//! above the index only; we use the same polynomials (x^4+x+1, x^5+x^2+1, x^6+x+1) and the
//! same bits for those sizes, so the sets are GPGPU-Sim's (tested against its equations
//! written out by hand below), and a primitive polynomial of the table for the other sizes.

use crate::config::choice::{Entry, Form};
use crate::config::SetIndex;

/// This function in the registry of [`SetIndex`] (see `config::choice`).
pub const ENTRY: Entry<SetIndex> = Entry {
    name: "ipoly",
    aliases: &[],
    label: "IPOLY hash",
    description: "line address modulo an irreducible polynomial over GF(2) (GPGPU-Sim's L2 `P`)",
    form: Form::Plain(SetIndex::Ipoly),
};

/// The polynomial of degree `n` (bit `n` set), for `n` in 1..=16: primitive polynomials, the
/// ones GPGPU-Sim uses for degrees 4, 5 and 6.
const POLYNOMIALS: [u32; 17] = [
    0,
    0b11,
    0b111,
    0b1011,
    0b1_0011,
    0b10_0101,
    0b100_0011,
    0b1000_0011,
    0b1_0001_1101,
    0b10_0001_0001,
    0b100_0000_1001,
    0b1000_0000_0101,
    0b1_0000_0101_0011,
    0b10_0000_0001_1011,
    0b100_0100_0100_0011,
    0b1000_0000_0000_0011,
    0b1_0001_0000_0000_1011,
];

/// The most sets (`2^16`) this function indexes.
pub const MAX_DEGREE: u32 = 16;

/// How many bits above the index GPGPU-Sim's equations read, for degrees 4, 5 and 6; all
/// of them for the others.
fn high_bits(degree: u32) -> u32 {
    match degree {
        4 => 13,
        5 => 15,
        6 => 19,
        _ => 64,
    }
}

/// The IPOLY index of `value` over `2^degree` values (degree 0: always 0): its low `degree`
/// bits XOR the remainder of the bits above them (as many as GPGPU-Sim reads) times
/// `x^degree`, modulo the polynomial.
#[inline]
pub fn ipoly(value: u64, degree: u32) -> u32 {
    if degree == 0 || degree > MAX_DEGREE {
        return 0;
    }
    let poly = POLYNOMIALS[degree as usize] as u64;
    let mask = (1u64 << degree) - 1;
    let keep = high_bits(degree);
    let high = value >> degree;
    let high = if keep >= 64 {
        high
    } else {
        high & ((1u64 << keep) - 1)
    };
    // Long division of high(x) * x^degree: reduce from the top bit down.
    let mut rem: u128 = (high as u128) << degree;
    let mut top = 127 - rem.leading_zeros().min(127) as i32;
    while rem != 0 && top >= degree as i32 {
        if rem >> top & 1 == 1 {
            rem ^= (poly as u128) << (top as u32 - degree);
        }
        top -= 1;
    }
    ((value & mask) ^ rem as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remainder by the definition: XOR of the remainders of each set bit's power.
    fn by_powers(value: u64, degree: u32) -> u32 {
        let poly = POLYNOMIALS[degree as usize] as u64;
        let mask = (1u64 << degree) - 1;
        let mut r = value & mask;
        // x^(degree + j) mod p, step by step: multiply by x and reduce.
        let mut power = poly & mask; // x^degree = p - x^degree
        for j in 0..high_bits(degree).min(64 - degree) {
            if value >> (degree + j) & 1 == 1 {
                r ^= power;
            }
            power <<= 1;
            if power >> degree & 1 == 1 {
                power ^= poly;
            }
        }
        r as u32
    }

    #[test]
    fn the_equations_of_gpgpu_sim_for_16_sets() {
        // GPGPU-Sim's hashing.cc, 16 banks: index bit 0 = a11^a10^a9^a8^a6^a4^a3^a0^b0,
        // bit 1 = a12^a8^a7^a6^a5^a3^a1^a0^b1, bit 2 = a9^a8^a7^a6^a4^a2^a1^b2,
        // bit 3 = a10^a9^a8^a7^a5^a3^a2^b3 (a: the bits above the index, b: the index).
        let eq = |v: u64| {
            let a = |i: u32| (v >> (4 + i)) & 1;
            let b = |i: u32| (v >> i) & 1;
            let bit0 = a(11) ^ a(10) ^ a(9) ^ a(8) ^ a(6) ^ a(4) ^ a(3) ^ a(0) ^ b(0);
            let bit1 = a(12) ^ a(8) ^ a(7) ^ a(6) ^ a(5) ^ a(3) ^ a(1) ^ a(0) ^ b(1);
            let bit2 = a(9) ^ a(8) ^ a(7) ^ a(6) ^ a(4) ^ a(2) ^ a(1) ^ b(2);
            let bit3 = a(10) ^ a(9) ^ a(8) ^ a(7) ^ a(5) ^ a(3) ^ a(2) ^ b(3);
            (bit0 | bit1 << 1 | bit2 << 2 | bit3 << 3) as u32
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(ipoly(x, 4), eq(x), "{x:#x}");
        }
        // One power by hand: x^4 = x + 1 modulo x^4 + x + 1.
        assert_eq!(ipoly(1 << 4, 4), 0b0011);
    }

    #[test]
    fn one_bit_of_the_32_and_64_set_equations() {
        // 32 sets: a0 enters index bits 0 and 2 (x^5 = x^2 + 1); a14 enters bits 1 and 2.
        assert_eq!(ipoly(1 << 5, 5), 0b00101);
        assert_eq!(ipoly(1 << (5 + 14), 5), 0b00110);
        // Bits above a14 are not read, as in GPGPU-Sim.
        assert_eq!(ipoly(1 << (5 + 15), 5), 0);
        // 64 sets: a0 enters bits 0 and 1 (x^6 = x + 1); a18 enters bits 0 and 4.
        assert_eq!(ipoly(1 << 6, 6), 0b000011);
        assert_eq!(ipoly(1 << (6 + 18), 6), 0b010001);
    }

    #[test]
    fn long_division_matches_the_sum_of_powers_for_every_degree() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for degree in 1..=MAX_DEGREE {
            for _ in 0..300 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(ipoly(x, degree), by_powers(x, degree), "{x:#x} {degree}");
            }
        }
    }

    #[test]
    fn power_of_two_strides_use_every_set() {
        for degree in 1..=10u32 {
            for stride_log2 in 0..12u32 {
                let sets: std::collections::BTreeSet<u32> = (0..1u64 << degree)
                    .map(|i| ipoly(i << stride_log2, degree))
                    .collect();
                assert_eq!(
                    sets.len(),
                    1 << degree,
                    "degree {degree} stride 2^{stride_log2}"
                );
            }
        }
    }
}
