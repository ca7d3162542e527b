//! A bit per byte of a page of the last-writer map: whether a later launch has read the
//! byte's last write.

use super::PAGE;

/// Bit per byte of a page.
#[derive(Clone, Copy, Default)]
pub(super) struct Bits([u64; PAGE as usize / 64]);

impl Bits {
    /// The mask of bits `[s, e)` within word `w`.
    fn mask(w: usize, s: u16, e: u16) -> u64 {
        let lo = (w * 64) as u16;
        let (a, b) = (s.max(lo) - lo, e.min(lo + 64).saturating_sub(lo));
        if a >= b {
            return 0;
        }
        let high = if b == 64 { u64::MAX } else { (1u64 << b) - 1 };
        high & !((1u64 << a) - 1)
    }
    /// `(word, mask)` for the words that bits `[s, e)` touch (none when the range is empty).
    fn masks(s: u16, e: u16) -> impl Iterator<Item = (usize, u64)> {
        (s as usize / 64..(e as usize).div_ceil(64)).map(move |w| (w, Self::mask(w, s, e)))
    }
    /// `(word, mask)` when bits `[s, e)` lie in one word and are fewer than 64, as for most
    /// accesses (a few bytes), which then skip the walk over [`Bits::masks`].
    #[inline(always)]
    fn one_word(s: u16, e: u16) -> Option<(usize, u64)> {
        let w = s as usize / 64;
        (e > s && (e as usize - 1) / 64 == w && e - s < 64)
            .then(|| (w, ((1u64 << (e - s)) - 1) << (s % 64)))
    }
    pub fn set(&mut self, s: u16, e: u16) {
        if let Some((w, m)) = Self::one_word(s, e) {
            self.0[w] |= m;
            return;
        }
        for (w, m) in Self::masks(s, e) {
            self.0[w] |= m;
        }
    }
    pub fn clear(&mut self, s: u16, e: u16) {
        for (w, m) in Self::masks(s, e) {
            self.0[w] &= !m;
        }
    }
    pub fn any(&self, s: u16, e: u16) -> bool {
        if let Some((w, m)) = Self::one_word(s, e) {
            return self.0[w] & m != 0;
        }
        Self::masks(s, e).any(|(w, m)| self.0[w] & m != 0)
    }
    pub fn get(&self, b: u16) -> bool {
        self.0[b as usize / 64] >> (b % 64) & 1 == 1
    }
    /// Calls `f(a, b)` for every maximal run of set bits within `[s, e)`.
    pub fn runs(&self, s: u16, e: u16, mut f: impl FnMut(u16, u16)) {
        let mut a = s;
        while a < e {
            if !self.get(a) {
                a += 1;
                continue;
            }
            let mut b = a + 1;
            while b < e && self.get(b) {
                b += 1;
            }
            f(a, b);
            a = b;
        }
    }
}
