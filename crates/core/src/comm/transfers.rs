//! From each reader launch's transfers to the report's list of all transfers: writer numbers
//! (one per (launch, CTA), every writer of an earlier launch numbered below every writer of a
//! later one), the launch of a writer number, and the merge of the per-launch rows into one
//! list in (writer launch, reader launch, writer, reader) order, with the bytes per superstep
//! distance and across each bisection summed on the way.

use super::report::{CommError, Transfer};
use super::sort::stable_sort_onto;
use super::tuning::LAUNCH_BLOCKS;
use crate::trace::memory;
use crate::trace::{Dim3, Trace};

/// A transfer into one reader launch: the distinct bytes `reader` (a CTA id) read whose last
/// write was by writer number `writer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Row {
    pub writer: u32,
    pub reader: u32,
    pub bytes: u64,
}

/// One reader launch's rows, which come in reader order, sorted by writer, then reader,
/// appended to `out`.
pub(super) fn by_writer(rows: &[Row], out: &mut Vec<Row>) {
    stable_sort_onto(rows, |r| r.writer, out);
}

/// The first writer number of each launch, and one past the last.
#[derive(Clone)]
pub(super) struct Numbers(pub Vec<u32>);

impl Numbers {
    /// Numbers the writers of `trace`: CTA `c` of launch `l` is `first[l] + c`.
    pub fn new(trace: &Trace) -> Result<Self, CommError> {
        let mut first = Vec::with_capacity(trace.kernels.len() + 1);
        let mut n = 0u64;
        for k in &trace.kernels {
            first.push(n as u32);
            n += u64::from(k.num_ctas());
            if n > u64::from(u32::MAX) {
                return Err(CommError::TooManyCtas(
                    trace.kernels.iter().map(|k| u64::from(k.num_ctas())).sum(),
                ));
            }
        }
        first.push(n as u32);
        Ok(Numbers(first))
    }
}

/// The launch of a writer number in a step or two: the launch at the start of each block of
/// `1 << shift` writer numbers, blocks no longer than the smallest launch (unless the table
/// would grow past [`LAUNCH_BLOCKS`]), so a block holds the start of few other launches.
pub(super) struct LaunchOf {
    first: Vec<u32>,
    shift: u32,
    at: Vec<usize>,
}

impl LaunchOf {
    /// `first`: the first writer number of each launch, and the number past the last.
    pub fn new(first: &[u32]) -> Self {
        let smallest = first
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|&n| n > 0)
            .min()
            .unwrap_or(1);
        let total = first.last().copied().unwrap_or(0);
        let mut shift = smallest.ilog2();
        while total >> shift > LAUNCH_BLOCKS {
            shift += 1;
        }
        let at = (0..=total >> shift)
            .map(|b| {
                first
                    .partition_point(|&f| f <= b << shift)
                    .saturating_sub(1)
            })
            .collect();
        LaunchOf {
            first: first.to_vec(),
            shift,
            at,
        }
    }

    /// The launch whose writers include `writer` (the last launch with a first number at or
    /// below it).
    pub fn of(&self, writer: u32) -> usize {
        let mut l = self
            .at
            .get((writer >> self.shift) as usize)
            .copied()
            .unwrap_or(0);
        while self.first.get(l + 1).is_some_and(|&f| f <= writer) {
            l += 1;
        }
        l
    }
}

/// All transfers sorted by writer launch, then reader launch, writer and reader, from each
/// reader launch's rows sorted by writer (`rows[at[l]..at[l + 1]]` for launch `l`): for each
/// writer launch, the part of each later launch's rows that it wrote. Beside them, as they
/// are made, the bytes per superstep distance and the bytes crossing each dimension's
/// bisection (`grids`: each launch's grid).
pub(super) fn in_order(rows: &[Row], at: &[usize], numbers: &Numbers, grids: &[Dim3]) -> Transfers {
    let into: Vec<&[Row]> = at.windows(2).map(|w| &rows[w[0]..w[1]]).collect();
    let mut out = memory::with_capacity(rows.len());
    let mut distance: Vec<u64> = Vec::new();
    let mut crossing = [0u64; 3];
    // How far each reader launch's rows have been taken.
    let mut taken = vec![0usize; into.len()];
    for (wl, w) in numbers.0.windows(2).enumerate() {
        let (first, next) = (w[0], w[1]);
        for (rl, (list, at)) in into.iter().zip(taken.iter_mut()).enumerate() {
            let n = list[*at..].iter().take_while(|r| r.writer < next).count();
            if n == 0 {
                continue;
            }
            let block = &list[*at..*at + n];
            *at += n;
            let d = rl.saturating_sub(wl + 1);
            if distance.len() <= d {
                distance.resize(d + 1, 0);
            }
            distance[d] += block.iter().map(|r| r.bytes).sum::<u64>();
            let (wg, rg) = (grids[wl], grids[rl]);
            // Both grids 1-D (as most are): only x has two halves.
            let flat = wg.y <= 1 && wg.z <= 1 && rg.y <= 1 && rg.z <= 1;
            out.extend(block.iter().map(
                |&Row {
                     writer,
                     reader,
                     bytes,
                 }| {
                    let writer_cta = writer - first;
                    // Multiplied, not branched on: which transfers cross is as good as random.
                    if flat {
                        let high = |c: u32, n: u32| u64::from(c) * 2 >= u64::from(n);
                        crossing[0] +=
                            bytes * u64::from(high(writer_cta, wg.x) != high(reader, rg.x));
                    } else {
                        let (w, r) = (upper_halves(wg, writer_cta), upper_halves(rg, reader));
                        for (dim, c) in crossing.iter_mut().enumerate() {
                            *c += bytes * u64::from(w[dim] != r[dim]);
                        }
                    }
                    Transfer {
                        writer_launch: wl as u32,
                        reader_launch: rl as u32,
                        writer_cta,
                        reader_cta: reader,
                        bytes,
                    }
                },
            ));
        }
    }
    Transfers {
        transfers: out,
        distance,
        crossing,
    }
}

/// Whether a CTA lies in the upper half of its grid along x, y and z.
fn upper_halves(grid: Dim3, cta: u32) -> [bool; 3] {
    let high = |c: u32, n: u32| u64::from(c) * 2 >= u64::from(n);
    if grid.y <= 1 && grid.z <= 1 {
        // A 1-D grid (as most are): no division.
        return [high(cta, grid.x), false, false];
    }
    let c = grid.from_linear(u64::from(cta));
    [high(c.x, grid.x), high(c.y, grid.y), high(c.z, grid.z)]
}

/// The transfers in order, with their bytes per superstep distance and across each
/// dimension's bisection.
pub(super) struct Transfers {
    pub transfers: Vec<Transfer>,
    pub distance: Vec<u64>,
    pub crossing: [u64; 3],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_of_a_writer_number_agrees_with_a_search() {
        // Launch sizes with empty launches, one-CTA launches and uneven ones.
        for sizes in [
            vec![4u32, 4, 4],
            vec![1, 1000, 0, 7, 1],
            vec![0, 3, 0, 0, 5],
            vec![100_000, 1, 200_000, 3],
            vec![65_537, 65_535],
        ] {
            let mut first = vec![0u32];
            for n in &sizes {
                first.push(first.last().unwrap() + n);
            }
            let of = LaunchOf::new(&first);
            let total = *first.last().unwrap();
            let edges = first.iter().flat_map(|&f| [f.saturating_sub(1), f, f + 1]);
            for w in (0..total)
                .step_by(1 + total as usize / 5000)
                .chain(edges.filter(|&w| w < total))
            {
                let want = first.partition_point(|&f| f <= w) - 1;
                assert_eq!(of.of(w), want, "writer {w} of {sizes:?}");
                assert!(first[want] <= w && w < first[want + 1]);
            }
        }
    }
}
