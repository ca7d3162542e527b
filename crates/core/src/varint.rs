//! Unsigned LEB128 integers: seven bits a byte, the high bit set on all but the last. Tables
//! that grow with the CTAs of a kernel (the report's per-CTA rows, the timing model's per-CTA
//! results) keep their numbers so, because most are small: a few bytes each instead of eight.

/// Appends `v` to `bytes`.
#[inline]
pub fn put(bytes: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        bytes.push(v as u8 | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
}

/// The number that starts at `bytes[*at]`, moving `at` past it. Bytes that end inside a
/// number give what was read of it (a table reads only what it wrote itself).
#[inline]
pub fn get(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        if shift < 64 {
            v |= ((b & 0x7f) as u64) << shift;
        }
        shift += 7;
        if b < 0x80 {
            break;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn numbers_come_back_as_they_went_in(vs in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut bytes = Vec::new();
            for &v in &vs {
                super::put(&mut bytes, v);
            }
            let mut at = 0;
            let back: Vec<u64> = vs.iter().map(|_| super::get(&bytes, &mut at)).collect();
            prop_assert_eq!(back, vs);
            prop_assert_eq!(at, bytes.len());
        }
    }

    #[test]
    fn small_numbers_take_one_byte_and_the_largest_ten() {
        let mut b = Vec::new();
        super::put(&mut b, 127);
        assert_eq!(b, [127]);
        b.clear();
        super::put(&mut b, 128);
        assert_eq!(b, [0x80, 1]);
        b.clear();
        super::put(&mut b, u64::MAX);
        assert_eq!(b.len(), 10);
    }
}
