//! Miss rate over time per instruction and per SM (the view AerialVision made familiar):
//! requests in issue order cut into equal slices, accesses and misses counted per slice for
//! each instruction and each SM, on the worker when a result arrives.

use super::data::{Outcome, Points};

/// Counts of one series (an instruction or an SM) per time slice.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub label: String,
    /// The instruction id or SM number (what the other views colour by).
    pub key: u32,
    pub requests: Vec<u32>,
    pub misses: Vec<u32>,
}

impl Series {
    /// The miss rate (%) of each slice that has requests: (slice, rate).
    pub fn rates(&self) -> Vec<[f64; 2]> {
        self.requests
            .iter()
            .zip(&self.misses)
            .enumerate()
            .filter(|(_, (&r, _))| r > 0)
            .map(|(b, (&r, &m))| [b as f64, 100.0 * m as f64 / r as f64])
            .collect()
    }
    fn total(&self) -> u64 {
        self.requests.iter().map(|&r| r as u64).sum()
    }
}

/// Series of one kind over the same slices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OverTime {
    pub slices: usize,
    /// Requests per slice (issue order).
    pub per_slice: u64,
    pub series: Vec<Series>,
}

/// Instructions or SMs shown at most (the busiest), so the plot stays readable.
pub const MAX_SERIES: usize = 8;

impl OverTime {
    /// Per instruction (`by_sm` false; `name` gives an instruction's label from its kernel and
    /// id) or per SM, the busiest [`MAX_SERIES`] kept.
    pub fn build(
        p: &Points,
        slices: usize,
        by_sm: bool,
        name: &dyn Fn(u16, u32) -> String,
    ) -> OverTime {
        let n = p.len();
        let slices = slices.max(1);
        let per_slice = (n as u64).div_ceil(slices as u64).max(1);
        let mut index: rustc_hash::FxHashMap<(u16, u32), usize> = Default::default();
        let mut series: Vec<Series> = Vec::new();
        for i in 0..n {
            let key = if by_sm {
                (p.sm[i], 0)
            } else {
                (p.kernel[i], p.inst[i])
            };
            let s = match index.get(&key) {
                Some(&s) => s,
                None => {
                    index.insert(key, series.len());
                    series.push(Series {
                        key: if by_sm { key.0 as u32 } else { key.1 },
                        label: if by_sm {
                            format!("SM {}", key.0)
                        } else {
                            name(key.0, key.1)
                        },
                        requests: vec![0; slices],
                        misses: vec![0; slices],
                    });
                    series.len() - 1
                }
            };
            let b = ((i as u64 / per_slice) as usize).min(slices - 1);
            series[s].requests[b] += 1;
            if p.outcome(i) != Outcome::Hit {
                series[s].misses[b] += 1;
            }
        }
        series.sort_by_key(|s| std::cmp::Reverse(s.total()));
        series.truncate(MAX_SERIES);
        OverTime {
            slices,
            per_slice,
            series,
        }
    }
}
