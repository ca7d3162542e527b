//! The L2's requests and misses per slice over time, for the app's slice heat map: at most
//! [`MAX_BINS`] bins of equal numbers of L2 requests (issue order), each twice as wide when
//! they are all used, so its size does not grow with the trace.

/// The most bins a slice's row has.
pub const MAX_BINS: usize = 128;

#[derive(Clone, Debug, PartialEq)]
pub struct SliceHeat {
    pub slices: usize,
    /// L2 requests per bin.
    pub per_bin: u64,
    /// Bins with requests so far (the last may be part full).
    pub bins: usize,
    /// Slice `s`'s bin `b` is at `s * MAX_BINS + b`.
    requests: Vec<u32>,
    misses: Vec<u32>,
    seen: u64,
}

impl SliceHeat {
    pub fn new(slices: usize) -> SliceHeat {
        SliceHeat {
            slices,
            per_bin: 64,
            bins: 0,
            requests: vec![0; slices * MAX_BINS],
            misses: vec![0; slices * MAX_BINS],
            seen: 0,
        }
    }

    /// One L2 request to `slice`.
    #[inline]
    pub fn add(&mut self, slice: u32, miss: bool) {
        let mut bin = (self.seen / self.per_bin) as usize;
        if bin >= MAX_BINS {
            self.widen();
            bin = (self.seen / self.per_bin) as usize;
        }
        let i = slice as usize * MAX_BINS + bin;
        if let (Some(r), Some(m)) = (self.requests.get_mut(i), self.misses.get_mut(i)) {
            *r += 1;
            *m += miss as u32;
        }
        self.seen += 1;
        self.bins = self.bins.max(bin + 1);
    }

    /// Merges each pair of bins into one twice as wide.
    fn widen(&mut self) {
        for v in [&mut self.requests, &mut self.misses] {
            for row in v.chunks_mut(MAX_BINS) {
                for b in 0..MAX_BINS / 2 {
                    row[b] = row[2 * b] + row[2 * b + 1];
                }
                row[MAX_BINS / 2..].fill(0);
            }
        }
        self.per_bin *= 2;
        self.bins = self.bins.div_ceil(2);
    }

    /// Requests and misses of `slice` in `bin`.
    pub fn at(&self, slice: usize, bin: usize) -> (u32, u32) {
        let i = slice * MAX_BINS + bin;
        (
            self.requests.get(i).copied().unwrap_or(0),
            self.misses.get(i).copied().unwrap_or(0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_widen_and_keep_every_request() {
        let mut h = SliceHeat::new(3);
        for i in 0..64 * MAX_BINS as u64 + 10 {
            h.add((i % 3) as u32, i % 2 == 0);
        }
        assert_eq!(h.per_bin, 128);
        assert_eq!(h.bins, MAX_BINS / 2 + 1);
        let total: u32 = (0..3)
            .flat_map(|s| (0..MAX_BINS).map(move |b| (s, b)))
            .map(|(s, b)| h.at(s, b).0)
            .sum();
        assert_eq!(total as u64, 64 * MAX_BINS as u64 + 10);
        // The first bin holds the first 128 requests, a third of them each slice's.
        assert_eq!(h.at(0, 0).0 + h.at(1, 0).0 + h.at(2, 0).0, 128);
    }
}
