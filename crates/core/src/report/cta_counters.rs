//! What each CTA of the running kernel adds up to, held only while it can still change: a
//! CTA's counters become a row of the compact table ([`CtaTable`]) once it has finished and
//! every CTA before it too (rows stay in CTA order). CTAs finish roughly in the order they
//! start, so a kernel read CTA by CTA holds counters for about as many CTAs as are resident,
//! not one per CTA of the grid. A kernel whose CTAs are never said to finish (a whole kernel,
//! an issued-order one) holds at most [`WINDOW_CTAS`]: past that the lowest CTA becomes a row
//! anyway, and what is added to a CTA after its row was made waits in a map until the kernel
//! ends, when the table is rewritten with it. CTAs of such kernels also run roughly in order,
//! so the map stays small; in the worst case it holds what the window would have.

use super::{CtaRow, CtaTable};
use crate::cache::Counters;
use crate::trace::Dim3;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// The most CTAs whose counters are held before the lowest becomes a row unfinished (about
/// 170 bytes each).
pub(crate) const WINDOW_CTAS: usize = 1 << 16;

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
    /// What was added to CTAs before `base` after they became rows.
    late: FxHashMap<u32, Counters>,
    /// The most CTAs `live` holds.
    window: usize,
}

/// The window a new kernel's counters get: [`WINDOW_CTAS`], or in the crate's tests what the
/// test set with `set_test_window`, so that whole sessions can be run with a tiny one.
#[cfg(not(test))]
fn window_ctas() -> usize {
    WINDOW_CTAS
}

#[cfg(test)]
thread_local! {
    static TEST_WINDOW: std::cell::Cell<usize> = const { std::cell::Cell::new(WINDOW_CTAS) };
}

#[cfg(test)]
fn window_ctas() -> usize {
    TEST_WINDOW.with(|w| w.get())
}

/// Gives the kernels this thread's sessions begin from now on a window of `ctas`.
#[cfg(test)]
pub(crate) fn set_test_window(ctas: usize) {
    TEST_WINDOW.with(|w| w.set(ctas));
}

#[derive(Clone, Copy)]
struct Live {
    counters: Counters,
    /// Said to have finished, on this SM (`u32::MAX`: none).
    done: Option<u32>,
    /// The SM its warp instructions were issued on (`u32::MAX`: none yet).
    sm: u32,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            counters: Counters::default(),
            done: None,
            sm: u32::MAX,
        }
    }
}

impl CtaCounters {
    pub(crate) fn new(ki: u32, grid: Dim3) -> Self {
        Self::with_window(ki, grid, window_ctas())
    }

    /// [`CtaCounters::new`] holding at most `window` CTAs' counters.
    pub(crate) fn with_window(ki: u32, grid: Dim3, window: usize) -> Self {
        CtaCounters {
            ki,
            grid,
            base: 0,
            live: VecDeque::new(),
            table: CtaTable::default(),
            late: FxHashMap::default(),
            window: window.max(1),
        }
    }

    /// Adds `c`, of a warp instruction issued on SM `sm`, to CTA `cta`, which has not been
    /// said to have finished.
    #[inline]
    pub(crate) fn add(&mut self, cta: u32, sm: u32, c: &Counters) {
        let Some(i) = cta.checked_sub(self.base).map(|i| i as usize) else {
            self.late.entry(cta).or_default().add(c);
            return;
        };
        if i >= self.live.len() {
            self.live.resize(i + 1, Live::default());
        }
        let l = &mut self.live[i];
        l.counters.add(c);
        l.sm = sm;
        if self.live.len() > self.window {
            self.evict();
        }
    }

    /// Makes rows of the lowest CTAs, finished or not, until the window holds at most
    /// `window` CTAs.
    #[cold]
    fn evict(&mut self) {
        while self.live.len() > self.window {
            let Some(l) = self.live.pop_front() else {
                break;
            };
            let sm = match l.done {
                Some(s) => s,
                None => l.sm,
            };
            self.emit(l.counters, (sm != u32::MAX).then_some(sm));
        }
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
        if let Some(row) = CtaRow::of(self.ki, self.grid, cta, sm, c) {
            self.table.push(&row);
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
        if self.late.is_empty() {
            return self.table;
        }
        // Rewritten with what came late: added to a CTA's row, or a row of its own where the
        // CTA had none (its SM from `cta_sm`), in CTA order.
        let mut late: Vec<(u32, Counters)> = self.late.drain().collect();
        late.sort_unstable_by_key(|&(cta, _)| cta);
        let mut late = late.into_iter().peekable();
        let mut out = CtaTable::default();
        let own_row = |out: &mut CtaTable, cta: u32, c: Counters| {
            if let Some(row) = CtaRow::of(self.ki, self.grid, cta, cta_sm(cta), c) {
                out.push(&row);
            }
        };
        for mut row in self.table.iter() {
            let at = self.grid.linear(row.cta) as u32;
            while let Some((cta, c)) = late.next_if(|&(cta, _)| cta < at) {
                own_row(&mut out, cta, c);
            }
            if let Some((_, c)) = late.next_if(|&(cta, _)| cta == at) {
                row.counters.add(&c);
                row.miss_rate = super::rate(&row.counters);
            }
            out.push(&row);
        }
        for (cta, c) in late {
            own_row(&mut out, cta, c);
        }
        out
    }

    /// The CTAs whose counters it holds (not yet rows).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.live.len()
    }

    /// About the bytes it holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.live.capacity() * std::mem::size_of::<Live>()
            + self.late.capacity() * std::mem::size_of::<(u32, Counters)>()
            + self.table.heap_bytes()
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
        t.add(0, 0, &c(1));
        t.add(2, 0, &c(5));
        t.add(1, 0, &c(2));
        t.finish(2, Some(7));
        t.finish(1, Some(6));
        assert_eq!((t.base, t.live.len(), t.table.len()), (0, 3, 0));
        t.add(0, 0, &c(1));
        t.finish(0, Some(5));
        assert_eq!((t.base, t.live.len(), t.table.len()), (3, 0, 3));
        t.add(4, 0, &c(9));
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

    proptest::proptest! {
        /// A window of a few CTAs gives the table an unbounded one does, however late the
        /// counters of a CTA come: added to its row, or a row of its own where it had none.
        #[test]
        fn a_small_window_gives_the_rows_an_unbounded_one_does(
            steps in proptest::collection::vec((0u32..40, 0u64..3, proptest::bool::ANY), 0..300),
            window in 1usize..6,
        ) {
            let grid = Dim3 { x: 5, y: 8, z: 1 };
            let mut small = CtaCounters::with_window(1, grid, window);
            let mut all = CtaCounters::with_window(1, grid, usize::MAX);
            // Each CTA runs on one SM, as the pipeline's do.
            let sm_of = |cta: u32| cta % 4;
            for (cta, requests, writes) in steps {
                let mut x = c(requests);
                x.writes = writes as u64;
                small.add(cta, sm_of(cta), &x);
                all.add(cta, sm_of(cta), &x);
            }
            let (a, b) = (small.end(|c| Some(sm_of(c))), all.end(|c| Some(sm_of(c))));
            proptest::prop_assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        }
    }
}
