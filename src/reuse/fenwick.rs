//! A growable Fenwick (binary indexed) tree of counts over time positions.

#[derive(Clone, Debug)]
pub struct Fenwick {
    /// 1-based; `tree[0]` is unused.
    tree: Vec<u32>,
}

impl Default for Fenwick {
    fn default() -> Self {
        Fenwick::new()
    }
}

impl Fenwick {
    pub fn new() -> Self {
        Fenwick { tree: vec![0] }
    }
    pub fn with_capacity(n: usize) -> Self {
        let mut tree = Vec::with_capacity(n + 1);
        tree.push(0);
        Fenwick { tree }
    }
    /// Number of positions.
    pub fn len(&self) -> usize {
        self.tree.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Sum of positions `1..=pos`.
    #[inline]
    pub fn prefix(&self, mut pos: usize) -> u64 {
        let mut s = 0u64;
        while pos > 0 {
            s += self.tree[pos] as u64;
            pos &= pos - 1;
        }
        s
    }
    /// Subtracts one at `pos` (which must hold at least one).
    #[inline]
    pub fn decrement(&mut self, mut pos: usize) {
        let n = self.tree.len();
        while pos < n {
            self.tree[pos] -= 1;
            pos += pos & pos.wrapping_neg();
        }
    }
    /// Appends a new last position holding `v`; returns its 1-based index.
    #[inline]
    pub fn push(&mut self, v: u32) -> usize {
        let i = self.tree.len();
        let low = i & i.wrapping_neg();
        // tree[i] covers (i - low, i]: v plus its children i-1, i-2, i-4, ... (each child
        // i - k covers (i - 2k, i - k]); they are recent positions, so this is cheap and cache-hot
        // (amortised O(1): on average one child).
        let mut sum = v;
        let mut k = 1;
        while k < low {
            sum += self.tree[i - k];
            k <<= 1;
        }
        self.tree.push(sum);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn matches_a_plain_array() {
        let mut f = Fenwick::new();
        let mut plain = Vec::new();
        for i in 0..200u32 {
            f.push(i % 3);
            plain.push(i % 3);
            if i % 7 == 0 && plain[(i / 2) as usize] > 0 {
                plain[(i / 2) as usize] -= 1;
                f.decrement((i / 2) as usize + 1);
            }
            for p in 0..=plain.len() {
                assert_eq!(
                    f.prefix(p),
                    plain[..p].iter().map(|&v| v as u64).sum::<u64>()
                );
            }
        }
    }
}
