//! The address axis of a trace: its used address ranges packed into segments, and the arrays' labels.

use super::*;

impl Segments {
    /// Segments covering `addrs` (any order).
    pub fn from_addresses(addrs: impl Iterator<Item = u64>) -> Segments {
        // Pages of 4 KiB are fine enough and keep the sort small.
        let mut pages: Vec<u64> = Vec::new();
        let mut last = u64::MAX;
        for a in addrs {
            let p = a >> 12;
            if p != last {
                pages.push(p);
                last = p;
            }
        }
        pages.sort_unstable();
        pages.dedup();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for p in pages {
            let lo = p << 12;
            let hi = lo.saturating_add(1 << 12);
            match spans.last_mut() {
                Some(s) if lo.saturating_sub(s.1) <= MERGE_BYTES => s.1 = hi,
                _ => spans.push((lo, hi)),
            }
        }
        let total: u64 = spans.iter().map(|s| s.1 - s.0).sum();
        let gap = (total as f64 * SEGMENT_GAP).max(4096.0);
        let mut y = 0.0;
        let ranges = spans
            .into_iter()
            .map(|(lo, hi)| {
                let r = (lo, hi, y);
                y += (hi - lo) as f64 + gap;
                r
            })
            .collect();
        Segments {
            ranges,
            labels: Vec::new(),
        }
    }
    /// Where each segment's separator is drawn, with the segment's first address: half way
    /// into the gap below it (below the first: as far as the gap above it), so requests at a
    /// segment's first address are not drawn on the line.
    pub fn separators(&self) -> Vec<(u64, f64)> {
        let end = |&(lo, hi, y): &(u64, u64, f64)| y + (hi - lo) as f64;
        let half_gap = match self.ranges.as_slice() {
            [a, b, ..] => (b.2 - end(a)) / 2.0,
            _ => 2048.0,
        };
        self.ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let below = match i.checked_sub(1).map(|j| &self.ranges[j]) {
                    Some(prev) => (r.2 - end(prev)) / 2.0,
                    None => half_gap,
                };
                (r.0, r.2 - below)
            })
            .collect()
    }
    /// Axis position of a byte address.
    pub fn y(&self, addr: u64) -> f64 {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        match i.checked_sub(1).and_then(|i| self.ranges.get(i)) {
            Some(&(lo, _, y)) => y + (addr - lo) as f64,
            None => addr as f64,
        }
    }
    /// The address at an axis position, if it lies in a segment.
    pub fn addr(&self, y: f64) -> Option<u64> {
        self.ranges.iter().find_map(|&(lo, hi, y0)| {
            let off = y - y0;
            (off >= 0.0 && off < (hi - lo) as f64).then(|| lo + off as u64)
        })
    }
    /// Grid marks of the address axis between `lo` and `hi` (axis values): addresses that are
    /// multiples of a power-of-two step of at least `min_step`, so their hex labels are round,
    /// as (axis value, step). Steps of 4 and 16 times the smallest mark the thicker lines.
    pub fn hex_marks(&self, lo: f64, hi: f64, min_step: f64) -> Vec<(f64, u64)> {
        let step = (min_step.max(1.0).ceil() as u64).next_power_of_two();
        let mut marks = Vec::new();
        for &(a0, a1, y0) in &self.ranges {
            let y1 = y0 + (a1 - a0) as f64;
            if y1 < lo || y0 > hi {
                continue;
            }
            let first = a0 + (lo - y0).max(0.0) as u64;
            let last = (a0 + (hi - y0).max(0.0) as u64).min(a1.saturating_sub(1));
            let mut a = first.div_ceil(step).saturating_mul(step);
            while a <= last && marks.len() < 1000 {
                let size = [step * 16, step * 4, step]
                    .into_iter()
                    .find(|&s| a % s == 0)
                    .unwrap_or(step);
                marks.push((y0 + (a - a0) as f64, size));
                a = match a.checked_add(step) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        marks
    }
    /// The top of the axis.
    pub fn height(&self) -> f64 {
        self.ranges
            .last()
            .map(|&(lo, hi, y)| y + (hi - lo) as f64)
            .unwrap_or(1.0)
    }
}

/// The arrays of a trace as its instructions show them: each instruction's address range
/// (what it touches of global and local memory), ranges that overlap joined into one.
/// Returns each array's first byte and a label naming its instructions ("ld_A, st_A"), by
/// address. A trace has no array names; the instructions say which array a range is.
pub fn array_labels(trace: &Trace) -> Vec<(u64, String)> {
    // (first byte, one past the last, name) per instruction of each kernel.
    let mut ranges: Vec<(u64, u64, &str)> = Vec::new();
    for k in &trace.kernels {
        let c = k.columns();
        let mut span = vec![(u64::MAX, 0u64); k.instructions.len()];
        for (((&a, &f), &inst), &size) in c.addr.iter().zip(&c.flags).zip(&c.inst).zip(&c.size) {
            let (kind, space) = warpscope_core::trace::model_flags(f);
            if kind == warpscope_core::trace::AccessKind::Barrier || !space.reaches_l1() {
                continue;
            }
            if let Some(s) = span.get_mut(inst as usize) {
                s.0 = s.0.min(a);
                s.1 = s.1.max(a.saturating_add(size.max(1) as u64));
            }
        }
        for (i, &(lo, hi)) in span.iter().enumerate() {
            if lo < hi {
                ranges.push((lo, hi, k.instructions[i].name.as_str()));
            }
        }
    }
    labels_of_ranges(ranges)
}

/// Array labels from each instruction's address range, (first byte, one past the last,
/// instruction name): ranges that overlap are one array, named by its instructions.
pub fn labels_of_ranges(mut ranges: Vec<(u64, u64, &str)>) -> Vec<(u64, String)> {
    ranges.sort_unstable_by_key(|r| (r.0, r.1));
    let mut arrays: Vec<(u64, u64, Vec<&str>, usize)> = Vec::new();
    for (lo, hi, name) in ranges {
        match arrays.last_mut() {
            Some(a) if lo < a.1 => {
                a.1 = a.1.max(hi);
                if !a.2.contains(&name) {
                    if a.2.len() < LABEL_NAMES {
                        a.2.push(name);
                    } else {
                        a.3 += 1;
                    }
                }
            }
            _ => arrays.push((lo, hi, vec![name], 0)),
        }
    }
    arrays
        .into_iter()
        .map(|(lo, _, names, more)| {
            let mut text = names.join(", ");
            if more > 0 {
                text.push_str(&format!(" +{more} more"));
            }
            (lo, text)
        })
        .collect()
}
