//! The per-CTA table held compactly: a kernel of 10^7 small CTAs has 10^7 rows, and a row as a
//! [`CtaRow`] takes about 200 bytes where its numbers, written as variable-length integers,
//! take about 25. The table keeps the rows so encoded, in order, and gives them back one at a
//! time ([`CtaTable::iter`]): the JSON report and the table exports are written from it row by
//! row, so a report's memory grows by tens of bytes per CTA, not hundreds.

use super::{rate, CtaRow};
use crate::cache::{Counters, MissClasses};
use crate::trace::Dim3;
use serde::ser::{Serialize, SerializeSeq, Serializer};

/// Per-CTA rows, encoded. Equal tables hold equal rows in the same order.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CtaTable {
    bytes: Vec<u8>,
    rows: usize,
}

/// The numbers of one row, in the order they are encoded.
const FIELDS: usize = 24;

fn fields(r: &CtaRow) -> [u64; FIELDS] {
    let c = &r.counters;
    let m = &c.miss_classes;
    [
        r.kernel as u64,
        r.cta.x as u64,
        r.cta.y as u64,
        r.cta.z as u64,
        r.sm.map_or(0, |s| s as u64 + 1),
        c.accesses,
        c.reads,
        c.writes,
        c.hits,
        c.misses,
        c.read_misses,
        c.write_misses,
        c.writebacks,
        c.bytes_from_memory,
        c.bytes_to_memory,
        c.flush_writebacks,
        c.flush_bytes_to_memory,
        c.requests,
        c.transactions,
        m.compulsory,
        m.capacity,
        m.conflict,
        m.latency,
        m.mshr,
    ]
}

fn row(f: &[u64; FIELDS]) -> CtaRow {
    let counters = Counters {
        accesses: f[5],
        reads: f[6],
        writes: f[7],
        hits: f[8],
        misses: f[9],
        read_misses: f[10],
        write_misses: f[11],
        writebacks: f[12],
        bytes_from_memory: f[13],
        bytes_to_memory: f[14],
        flush_writebacks: f[15],
        flush_bytes_to_memory: f[16],
        requests: f[17],
        transactions: f[18],
        miss_classes: MissClasses {
            compulsory: f[19],
            capacity: f[20],
            conflict: f[21],
            latency: f[22],
            mshr: f[23],
        },
    };
    CtaRow {
        kernel: f[0] as u32,
        cta: Dim3 {
            x: f[1] as u32,
            y: f[2] as u32,
            z: f[3] as u32,
        },
        sm: f[4].checked_sub(1).map(|s| s as u32),
        miss_rate: rate(&counters),
        counters,
    }
}

impl CtaTable {
    /// Adds a row at the end. Its miss rate is not kept: it follows from its counters.
    pub fn push(&mut self, r: &CtaRow) {
        for v in fields(r) {
            crate::varint::put(&mut self.bytes, v);
        }
        self.rows += 1;
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The bytes the rows take.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// The rows in order.
    pub fn iter(&self) -> Rows<'_> {
        Rows {
            bytes: &self.bytes,
            left: self.rows,
        }
    }

    /// Adds the rows of `other` after these.
    pub fn append(&mut self, other: CtaTable) {
        if self.rows == 0 {
            *self = other;
            return;
        }
        self.bytes.extend_from_slice(&other.bytes);
        self.rows += other.rows;
    }

    /// Puts the rows in the order of `key` (stable: rows of equal keys keep their order).
    pub fn sort_by_key<K: Ord>(&mut self, key: impl Fn(&CtaRow) -> K) {
        // Most tables come in order already: make sure of that without room for every key.
        let mut keys = self.iter().map(|r| key(&r));
        let Some(mut last) = keys.next() else { return };
        if keys.all(|k| {
            let ordered = last <= k;
            last = k;
            ordered
        }) {
            return;
        }
        let mut at = Vec::with_capacity(self.rows);
        let mut rows = self.iter();
        loop {
            let start = self.bytes.len() - rows.bytes.len();
            let Some(r) = rows.next() else { break };
            at.push((key(&r), start));
        }
        at.sort_by(|a, b| a.0.cmp(&b.0));
        let mut sorted = CtaTable::default();
        sorted.bytes.reserve(self.bytes.len());
        for (_, start) in at {
            if let Some(r) = (Rows {
                bytes: &self.bytes[start..],
                left: 1,
            })
            .next()
            {
                sorted.push(&r);
            }
        }
        *self = sorted;
    }
}

impl FromIterator<CtaRow> for CtaTable {
    fn from_iter<I: IntoIterator<Item = CtaRow>>(iter: I) -> Self {
        let mut t = CtaTable::default();
        for r in iter {
            t.push(&r);
        }
        t
    }
}

impl<'a> IntoIterator for &'a CtaTable {
    type Item = CtaRow;
    type IntoIter = Rows<'a>;
    fn into_iter(self) -> Rows<'a> {
        self.iter()
    }
}

/// The rows of a [`CtaTable`], decoded one at a time.
pub struct Rows<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl Iterator for Rows<'_> {
    type Item = CtaRow;

    fn next(&mut self) -> Option<CtaRow> {
        if self.left == 0 {
            return None;
        }
        let mut f = [0u64; FIELDS];
        let mut at = 0;
        for v in f.iter_mut() {
            *v = crate::varint::get(self.bytes, &mut at);
        }
        self.bytes = &self.bytes[at.min(self.bytes.len())..];
        self.left -= 1;
        Some(row(&f))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Rows<'_> {}

impl std::fmt::Debug for CtaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Written as the list of its rows, each decoded as it is written.
impl Serialize for CtaTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.rows))?;
        for r in self.iter() {
            seq.serialize_element(&r)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_row() -> impl Strategy<Value = CtaRow> {
        (
            any::<u32>(),
            any::<[u32; 3]>(),
            any::<Option<u32>>(),
            proptest::array::uniform19(prop_oneof![0u64..200, any::<u64>()]),
        )
            .prop_map(|(kernel, [x, y, z], sm, n)| {
                let counters = Counters {
                    accesses: n[0],
                    reads: n[1],
                    writes: n[2],
                    hits: n[3],
                    misses: n[4],
                    read_misses: n[5],
                    write_misses: n[6],
                    writebacks: n[7],
                    bytes_from_memory: n[8],
                    bytes_to_memory: n[9],
                    flush_writebacks: n[10],
                    flush_bytes_to_memory: n[11],
                    requests: n[12],
                    transactions: n[13],
                    miss_classes: MissClasses {
                        compulsory: n[14],
                        capacity: n[15],
                        conflict: n[16],
                        latency: n[17],
                        mshr: n[18],
                    },
                };
                CtaRow {
                    kernel,
                    cta: Dim3 { x, y, z },
                    sm,
                    miss_rate: rate(&counters),
                    counters,
                }
            })
    }

    proptest! {
        #[test]
        fn rows_come_back_as_they_went_in_and_sort_as_a_vec_does(
            rows in proptest::collection::vec(any_row(), 0..60),
            more in proptest::collection::vec(any_row(), 0..20),
        ) {
            let mut t: CtaTable = rows.iter().cloned().collect();
            prop_assert_eq!(t.len(), rows.len());
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), rows.clone());
            prop_assert_eq!(
                serde_json::to_string(&t).unwrap(),
                serde_json::to_string(&rows).unwrap()
            );
            t.append(more.iter().cloned().collect());
            let mut all = rows.clone();
            all.extend(more);
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), all.clone());
            let key = |r: &CtaRow| (r.cta.y % 3, r.kernel % 4);
            t.sort_by_key(key);
            all.sort_by_key(key);
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), all);
        }
    }

    #[test]
    fn a_small_cta_row_takes_tens_of_bytes() {
        let counters = Counters {
            accesses: 96,
            reads: 2,
            writes: 1,
            misses: 3,
            read_misses: 2,
            write_misses: 1,
            bytes_from_memory: 256,
            bytes_to_memory: 128,
            requests: 3,
            transactions: 3,
            miss_classes: MissClasses {
                compulsory: 3,
                ..Default::default()
            },
            ..Default::default()
        };
        let t: CtaTable = (0..1000u32)
            .map(|x| CtaRow {
                kernel: 0,
                cta: Dim3 {
                    x: x * 200,
                    y: 0,
                    z: 0,
                },
                sm: Some(x % 15),
                miss_rate: rate(&counters),
                counters,
            })
            .collect();
        let per_row = t.bytes.len() / t.len();
        assert!((24..=28).contains(&per_row), "{per_row} bytes a row");
        assert_eq!(t.iter().nth(999).map(|r| r.cta.x), Some(999 * 200));
    }
}
