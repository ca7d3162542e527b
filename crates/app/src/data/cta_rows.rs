//! The miss view's per-CTA table, kept compact: a run of 10^6 CTAs has 10^6 rows, and a
//! [`MissRow`] with its label takes about 200 bytes. The table instead keeps where each row
//! starts in the report's own encoded rows ([`CtaTable`], whose blocks it shares) and each
//! row's misses by class (12 bytes), about 20 bytes a row, and makes a row's [`MissRow`]
//! when the view draws or sorts it.

use super::miss_rows::{row, ClassCounts, MissRow};
use super::{Classes, CtaClasses};
use warpscope_core::report::{CtaRow, CtaTable, RowAt};

/// The rows of the per-CTA table, in the report's order.
#[derive(Clone, Debug, Default)]
pub struct CtaRows {
    /// The report's rows (a copy that shares their blocks).
    table: CtaTable,
    /// Where each row of this table starts in `table`.
    at: Vec<RowAt>,
    /// Each row's misses by class, by its number here (without timing; the timing model's
    /// rows hold their classes).
    classes: CtaClasses,
    /// Labels name the kernel.
    several: bool,
    timing: bool,
}

impl CtaRows {
    /// The rows of the CTAs of `table` that made a request or a write, each one's classes
    /// from `classes_of` without timing.
    pub fn new(
        table: &CtaTable,
        several: bool,
        timing: bool,
        classes_of: &dyn Fn(&CtaRow) -> Classes,
    ) -> Self {
        let mut at = Vec::with_capacity(table.len());
        let mut classes = CtaClasses::default();
        if !timing {
            classes.resize(table.len());
        }
        for (place, r) in table.rows_at() {
            if r.counters.requests == 0 && r.counters.writes == 0 {
                continue;
            }
            if !timing {
                classes.set(at.len(), &classes_of(&r));
            }
            at.push(place);
        }
        at.shrink_to_fit();
        if !timing {
            classes.resize(at.len());
        }
        CtaRows {
            table: table.clone(),
            at,
            classes,
            several,
            timing,
        }
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Row `i` of the table.
    pub fn row(&self, i: usize) -> Option<MissRow> {
        let r = self.table.row_at(*self.at.get(i)?)?;
        let k = if self.several {
            format!("k{} ", r.kernel)
        } else {
            String::new()
        };
        let label = format!("{k}({},{},{})", r.cta.x, r.cta.y, r.cta.z);
        let classes = || ClassCounts::from_cta(&self.classes.get(i));
        Some(row(self.timing, label, &r.counters, classes))
    }

    /// Row `i`'s requests and misses (what the table sorts by), without making its label.
    pub fn counts(&self, i: usize) -> (u64, u64) {
        self.at
            .get(i)
            .and_then(|&at| self.table.row_at(at))
            .map_or((0, 0), |r| (r.counters.requests, r.counters.misses))
    }

    /// The bytes held on the heap, the report's shared blocks as this table's share.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.table.heap_bytes()
            + self.at.capacity() * std::mem::size_of::<RowAt>()
            + self.classes.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use warpscope_core::cache::{Counters, MissClasses};
    use warpscope_core::trace::Dim3;

    fn cta_row(kernel: u32, x: u32, n: [u64; 6]) -> CtaRow {
        let counters = Counters {
            requests: n[0],
            writes: n[1],
            misses: n[2],
            accesses: n[3],
            transactions: n[4],
            bytes_from_memory: n[5],
            bytes_to_memory: n[5] / 2,
            miss_classes: MissClasses {
                compulsory: n[2] / 2,
                capacity: n[2] / 3,
                conflict: n[2] - n[2] / 2 - n[2] / 3,
                latency: n[4] % 3,
                mshr: n[5] % 2,
            },
            ..Counters::default()
        };
        CtaRow {
            kernel,
            cta: Dim3 { x, y: x % 3, z: 1 },
            sm: Some(x % 4),
            miss_rate: 0.0,
            counters,
        }
    }

    /// A row's classes, made up from its numbers (some past a `u16`).
    fn classes_of(r: &CtaRow) -> Classes {
        let m = r.counters.misses;
        [
            [m, m * 7, r.cta.x as u64 * 1000],
            [m / 2, 0, r.kernel as u64],
        ]
    }

    proptest! {
        /// Any table (many blocks of encoded rows in the crate's tests), with or without
        /// timing and kernel names: the rows are those of the CTAs that made a request or a
        /// write, in order, each as it would be made from the CTA's row and classes.
        #[test]
        fn the_rows_are_the_ctas_rows_made_one_by_one(
            raw in prop::collection::vec(
                (0u32..3, 0u32..100_000, prop::array::uniform6(prop_oneof![Just(0u64), 0u64..50, 0u64..200_000])),
                0..80,
            ),
            several in any::<bool>(),
            timing in any::<bool>(),
        ) {
            let all: Vec<CtaRow> = raw.iter().map(|&(k, x, n)| cta_row(k, x, n)).collect();
            let table: CtaTable = all.iter().cloned().collect();
            let rows = CtaRows::new(&table, several, timing, &classes_of);
            let kept: Vec<&CtaRow> = all
                .iter()
                .filter(|r| r.counters.requests > 0 || r.counters.writes > 0)
                .collect();
            prop_assert_eq!(rows.len(), kept.len());
            for (i, r) in kept.iter().enumerate() {
                let c = &r.counters;
                let label = format!(
                    "{}({},{},{})",
                    if several { format!("k{} ", r.kernel) } else { String::new() },
                    r.cta.x, r.cta.y, r.cta.z
                );
                let m = &c.miss_classes;
                let classes = if timing {
                    ClassCounts {
                        reads: [m.compulsory, m.capacity, m.conflict, m.latency, m.mshr],
                        writes: [0; 5],
                    }
                } else {
                    let k = classes_of(r);
                    ClassCounts {
                        reads: [k[0][0], k[0][1], k[0][2], 0, 0],
                        writes: [k[1][0], k[1][1], k[1][2], 0, 0],
                    }
                };
                let want = MissRow {
                    label,
                    inst: None,
                    requests: c.requests,
                    misses: c.misses,
                    classes,
                    bypassed: if timing { c.writes } else { 0 },
                    accesses: c.accesses,
                    transactions: c.transactions,
                    bytes_in: c.bytes_from_memory,
                    bytes_out: c.bytes_to_memory,
                };
                prop_assert_eq!(rows.row(i), Some(want), "row {}", i);
                prop_assert_eq!(rows.counts(i), (c.requests, c.misses));
            }
            prop_assert_eq!(rows.row(kept.len()), None);
            prop_assert_eq!(rows.counts(kept.len()), (0, 0));
        }
    }

    /// A row takes tens of bytes, not the 176 of a `MissRow` and its label's.
    #[test]
    fn a_row_takes_tens_of_bytes() {
        let n = 100_000;
        let table: CtaTable = (0..n)
            .map(|x| cta_row(0, x, [3, 1, 3, 96, 3, 256]))
            .collect();
        let rows = CtaRows::new(&table, false, false, &|_| [[2, 0, 0], [1, 0, 0]]);
        assert_eq!(rows.len(), n as usize);
        // What the table adds to the report's encoded rows: 20 B a row (where it starts, its
        // classes), and the classes' room to grow (their pages double up to a chunk).
        let own = rows.at.capacity() * std::mem::size_of::<RowAt>() + rows.classes.heap_bytes();
        assert!(own <= 32 * n as usize + 64, "{own} B");
        // With its share of the report's rows (half: the report holds them too).
        let per_row = rows.heap_bytes() / n as usize;
        assert!(per_row <= 64, "{per_row} B a row");
    }
}
