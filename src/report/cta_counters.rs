//! What each CTA of the running kernel adds up to, held only while it can still change: a
//! CTA's counters become a row of the compact table ([`CtaTable`]) once it has finished and
//! every CTA before it too (rows stay in CTA order). CTAs finish roughly in the order they
//! start, so a kernel read CTA by CTA holds counters for about as many CTAs as are resident,
//! not one per CTA of the grid. A kernel whose CTAs are never said to finish (a whole kernel,
//! an issued-order one) holds them all until its end, as before.

use super::{CtaRow, CtaTable};
use crate::cache::Counters;
use crate::trace::Dim3;
use std::collections::VecDeque;

/// The per-CTA counters of one kernel (launch `ki` of grid `grid`).
#[derive(Clone)]
pub(crate) struct CtaCounters {
    ki: u32,
    grid: Dim3,
    /// The counters of CTAs `base..base + live.len()`.
    base: u32,
    live: VecDeque<Live>,
    /// The rows of CTAs before `base`, in order.
    table: CtaTable,
}

#[derive(Clone, Copy, Default)]
struct Live {
    counters: Counters,
    /// Said to have finished, on this SM (`u32::MAX`: none).
    done: Option<u32>,
}

impl CtaCounters {
    pub(crate) fn new(ki: u32, grid: Dim3) -> Self {
        CtaCounters {
            ki,
            grid,
            base: 0,
            live: VecDeque::new(),
            table: CtaTable::default(),
        }
    }

    /// Adds `c` to CTA `cta`, which has not been said to have finished.
    #[inline]
    pub(crate) fn add(&mut self, cta: u32, c: &Counters) {
        let Some(i) = cta.checked_sub(self.base).map(|i| i as usize) else {
            debug_assert!(false, "CTA {cta} counted after it finished");
            return;
        };
        if i >= self.live.len() {
            self.live.resize(i + 1, Live::default());
        }
        self.live[i].counters.add(c);
    }

    /// CTA `cta` has finished on SM `sm`: its counters will not change. Rows go to the table
    /// as far as every CTA before them has finished.
    pub(crate) fn finish(&mut self, cta: u32, sm: Option<u32>) {
        let Some(i) = cta.checked_sub(self.base).map(|i| i as usize) else {
            return;
        };
        if i >= self.live.len() {
            self.live.resize(i + 1, Live::default());
        }
        self.live[i].done = Some(sm.unwrap_or(u32::MAX));
        while let Some(l) = self.live.front().filter(|l| l.done.is_some()).copied() {
            self.live.pop_front();
            let sm = l.done.filter(|&s| s != u32::MAX);
            self.emit(l.counters, sm);
        }
    }

    fn emit(&mut self, c: Counters, sm: Option<u32>) {
        let cta = self.base;
        self.base += 1;
        if c.requests > 0 || c.writes > 0 {
            self.table.push(&CtaRow {
                kernel: self.ki,
                cta: self.grid.from_linear(cta as u64),
                sm,
                counters: c,
                miss_rate: super::rate(&c),
            });
        }
    }

    /// The kernel's rows: those of CTAs not said to have finished get their SM from `cta_sm`.
    pub(crate) fn end(mut self, cta_sm: impl Fn(u32) -> Option<u32>) -> CtaTable {
        while let Some(l) = self.live.pop_front() {
            let sm = match l.done {
                Some(s) => (s != u32::MAX).then_some(s),
                None => cta_sm(self.base),
            };
            self.emit(l.counters, sm);
        }
        self.table
    }

    /// The CTAs whose counters it holds (not yet rows).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.live.len()
    }

    /// About the bytes it holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.live.capacity() * std::mem::size_of::<Live>() + self.table.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(requests: u64) -> Counters {
        Counters {
            requests,
            accesses: requests,
            ..Default::default()
        }
    }

    #[test]
    fn rows_leave_in_cta_order_once_all_before_them_finished() {
        let mut t = CtaCounters::new(3, Dim3 { x: 2, y: 3, z: 1 });
        t.add(0, &c(1));
        t.add(2, &c(5));
        t.add(1, &c(2));
        t.finish(2, Some(7));
        t.finish(1, Some(6));
        assert_eq!((t.base, t.live.len(), t.table.len()), (0, 3, 0));
        t.add(0, &c(1));
        t.finish(0, Some(5));
        assert_eq!((t.base, t.live.len(), t.table.len()), (3, 0, 3));
        t.add(4, &c(9));
        t.finish(3, None);
        // CTA 3 had no requests: no row, but it no longer holds the window back.
        assert_eq!((t.base, t.live.len()), (4, 1));
        let rows: Vec<_> = t.end(|cta| Some(cta * 10)).iter().collect();
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.kernel, r.cta, r.sm, r.counters.requests))
            .collect();
        let d = |x, y| Dim3 { x, y, z: 0 };
        assert_eq!(
            got,
            [
                (3, d(0, 0), Some(5), 2),
                (3, d(1, 0), Some(6), 2),
                (3, d(0, 1), Some(7), 5),
                (3, d(0, 2), Some(40), 9),
            ]
        );
    }
}
