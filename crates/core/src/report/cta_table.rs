//! The per-CTA table held compactly: a kernel of 10^7 small CTAs has 10^7 rows, and a row as a
//! [`CtaRow`] takes about 200 bytes where its numbers, written as variable-length integers,
//! take about 25. The table keeps the rows so encoded, in order, and gives them back one at a
//! time ([`CtaTable::iter`]): the JSON report and the table exports are written from it row by
//! row, so a report's memory grows by a few bytes per CTA, not hundreds.
//!
//! CTAs of a kernel mostly do the same work, so a row is written as its differences from the
//! first row of its block: which numbers differ (a bit each, as one variable-length integer)
//! and by how much (zigzag, variable-length). A row of a regular kernel, whose counters equal
//! the block's first, takes about 5 bytes: its CTA index and SM. Any row is still read alone,
//! from its block's first row and its own bytes ([`CtaTable::row_at`]).

use super::{rate, CtaRow};
use crate::cache::{Counters, MissClasses};
use crate::trace::Dim3;
use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::sync::Arc;

/// Per-CTA rows, encoded. Equal tables hold equal rows in the same order.
///
/// The rows are kept in blocks of about [`BLOCK_BYTES`]; a full block is shared between a
/// table and its copies (the app keeps up to 16 copies of a streamed run's session, report
/// included, for zooming), so that a copy holds anew only the rows of the last block.
#[derive(Clone, Default)]
pub struct CtaTable {
    /// Full blocks of whole rows, shared by copies.
    blocks: Vec<Arc<[u8]>>,
    /// The rows after the last full block.
    tail: Vec<u8>,
    /// The numbers of the tail's first row, which its other rows are written against.
    tail_first: [u64; FIELDS],
    rows: usize,
}

/// The bytes of encoded rows after which a table's block is full (small in the crate's tests,
/// so that they span blocks).
const BLOCK_BYTES: usize = if cfg!(test) { 200 } else { 64 << 10 };

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

/// Writes `f` as its differences from `first`: a bit per number that differs, then each
/// difference (wrapping, zigzag).
fn encode(out: &mut Vec<u8>, f: &[u64; FIELDS], first: &[u64; FIELDS]) {
    let mut mask = 0u64;
    for i in 0..FIELDS {
        if f[i] != first[i] {
            mask |= 1 << i;
        }
    }
    crate::varint::put(out, mask);
    for i in 0..FIELDS {
        if f[i] != first[i] {
            let d = f[i].wrapping_sub(first[i]) as i64;
            crate::varint::put(out, ((d << 1) ^ (d >> 63)) as u64);
        }
    }
}

/// The numbers of the row that starts at `bytes[*at]`, written against `first`; moves `at`
/// past it.
fn decode_fields(bytes: &[u8], at: &mut usize, first: &[u64; FIELDS]) -> [u64; FIELDS] {
    let mut f = *first;
    let mask = crate::varint::get(bytes, at);
    for (i, v) in f.iter_mut().enumerate() {
        if mask & (1 << i) != 0 {
            let z = crate::varint::get(bytes, at);
            let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
            *v = v.wrapping_add(d as u64);
        }
    }
    f
}

/// The numbers of a segment's first row (all zero for an empty one: nothing read is zero).
fn first_of(bytes: &[u8]) -> [u64; FIELDS] {
    decode_fields(bytes, &mut 0, &[0; FIELDS])
}

impl CtaTable {
    /// Adds a row at the end. Its miss rate is not kept: it follows from its counters.
    pub fn push(&mut self, r: &CtaRow) {
        let f = fields(r);
        if self.tail.is_empty() {
            // A block's first row is written whole (against zeros), the others against it.
            encode(&mut self.tail, &f, &[0; FIELDS]);
            self.tail_first = f;
        } else {
            encode(&mut self.tail, &f, &self.tail_first);
        }
        self.rows += 1;
        if self.tail.len() >= BLOCK_BYTES {
            self.seal();
        }
    }

    /// Makes the rows after the last full block a block.
    fn seal(&mut self) {
        if !self.tail.is_empty() {
            self.blocks.push(Arc::from(std::mem::take(&mut self.tail)));
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The bytes the rows take, a block shared with copies counted as this table's share.
    pub fn heap_bytes(&self) -> usize {
        let blocks: usize = self
            .blocks
            .iter()
            .map(|b| b.len() / Arc::strong_count(b).max(1))
            .sum();
        blocks + self.tail.capacity() + self.blocks.capacity() * std::mem::size_of::<Arc<[u8]>>()
    }

    /// The encoded rows, block by block.
    fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.blocks
            .iter()
            .map(|b| &b[..])
            .chain(std::iter::once(&self.tail[..]))
    }

    /// The rows in order.
    pub fn iter(&self) -> Rows<'_> {
        Rows {
            blocks: self.blocks.iter(),
            tail: Some(&self.tail),
            bytes: &[],
            at: 0,
            first: [0; FIELDS],
            left: self.rows,
        }
    }

    /// Adds the rows of `other` after these.
    pub fn append(&mut self, other: CtaTable) {
        if self.rows == 0 {
            *self = other;
            return;
        }
        self.seal();
        self.blocks.extend(other.blocks);
        self.tail = other.tail;
        self.tail_first = other.tail_first;
        self.rows += other.rows;
    }

    /// Each row in order, with where it starts: what [`CtaTable::row_at`] reads it again by,
    /// in this table or any copy of it, however many rows are added after.
    pub fn rows_at(&self) -> impl Iterator<Item = (RowAt, CtaRow)> + '_ {
        self.segments().enumerate().flat_map(|(segment, bytes)| {
            let mut offset = 0;
            let first = first_of(bytes);
            std::iter::from_fn(move || {
                (offset < bytes.len()).then(|| {
                    let (r, next) = decode(bytes, offset, &first);
                    let at = RowAt {
                        segment: segment as u32,
                        offset: offset as u32,
                    };
                    offset = next;
                    (at, r)
                })
            })
        })
    }

    /// The row that starts at `at` ([`CtaTable::rows_at`]); `None` for a place that is not in
    /// this table.
    pub fn row_at(&self, at: RowAt) -> Option<CtaRow> {
        let bytes = match self.blocks.get(at.segment as usize) {
            Some(b) => &b[..],
            None if at.segment as usize == self.blocks.len() => &self.tail[..],
            None => return None,
        };
        ((at.offset as usize) < bytes.len())
            .then(|| decode(bytes, at.offset as usize, &first_of(bytes)).0)
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
        // Each row's key and where it starts.
        let mut at: Vec<(K, RowAt)> = self.rows_at().map(|(at, r)| (key(&r), at)).collect();
        at.sort_by(|a, b| a.0.cmp(&b.0));
        let mut sorted = CtaTable::default();
        for r in at.into_iter().filter_map(|(_, at)| self.row_at(at)) {
            sorted.push(&r);
        }
        *self = sorted;
    }
}

/// Where a row of a [`CtaTable`] starts: its segment (a full block, or the rows after the last)
/// and its offset there. 8 bytes, where the row itself takes about 200 decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowAt {
    segment: u32,
    offset: u32,
}

/// The row that starts at `bytes[at]` (of a segment whose first row's numbers are `first`),
/// and where the next one starts.
fn decode(bytes: &[u8], mut at: usize, first: &[u64; FIELDS]) -> (CtaRow, usize) {
    let f = if at == 0 {
        decode_fields(bytes, &mut at, &[0; FIELDS])
    } else {
        decode_fields(bytes, &mut at, first)
    };
    (row(&f), at)
}

/// Equal rows in the same order (the bytes may differ where blocks begin at other rows).
impl PartialEq for CtaTable {
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows && self.iter().eq(other.iter())
    }
}

impl Eq for CtaTable {}

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
    blocks: std::slice::Iter<'a, Arc<[u8]>>,
    tail: Option<&'a [u8]>,
    /// The segment being read, where its next row starts, and its first row's numbers.
    bytes: &'a [u8],
    at: usize,
    first: [u64; FIELDS],
    left: usize,
}

impl Iterator for Rows<'_> {
    type Item = CtaRow;

    fn next(&mut self) -> Option<CtaRow> {
        if self.left == 0 {
            return None;
        }
        while self.at >= self.bytes.len() {
            self.bytes = match self.blocks.next() {
                Some(b) => b,
                None => self.tail.take()?,
            };
            self.at = 0;
        }
        if self.at == 0 {
            self.first = first_of(self.bytes);
        }
        let (r, next) = decode(self.bytes, self.at, &self.first);
        self.at = next;
        self.left -= 1;
        Some(r)
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
            // Equal to the same rows pushed one by one, whose blocks begin at other rows.
            prop_assert_eq!(&t, &all.iter().cloned().collect::<CtaTable>());
            let key = |r: &CtaRow| (r.cta.y % 3, r.kernel % 4);
            t.sort_by_key(key);
            all.sort_by_key(key);
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), all);
        }

        /// Every row is read again where `rows_at` says it starts: in the table, and in a copy
        /// of it that more rows were pushed or appended to.
        #[test]
        fn a_row_is_read_again_where_it_starts_in_the_table_and_its_grown_copies(
            rows in proptest::collection::vec(any_row(), 0..60),
            pushed in proptest::collection::vec(any_row(), 0..20),
            appended in proptest::collection::vec(any_row(), 0..20),
        ) {
            let t: CtaTable = rows.iter().cloned().collect();
            let at: Vec<(RowAt, CtaRow)> = t.rows_at().collect();
            prop_assert_eq!(at.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(), rows);
            let mut grown = t.clone();
            for r in &pushed {
                grown.push(r);
            }
            grown.append(appended.iter().cloned().collect());
            for (place, r) in &at {
                prop_assert_eq!(t.row_at(*place), Some(r.clone()));
                prop_assert_eq!(grown.row_at(*place), Some(r.clone()));
            }
            let past = RowAt { segment: t.blocks.len() as u32 + 1, offset: 0 };
            prop_assert_eq!(t.row_at(past), None);
            let end = RowAt { segment: t.blocks.len() as u32, offset: t.tail.len() as u32 };
            prop_assert_eq!(t.row_at(end), None);
        }
    }

    /// A copy shares the full blocks of rows: it holds anew only the last one's, and the
    /// table and its copy each count half of what they share.
    #[test]
    fn a_copy_shares_the_full_blocks() {
        let mut t = CtaTable::default();
        let mut rows = Vec::new();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for _ in 0..300 {
            let r =
                proptest::strategy::ValueTree::current(&any_row().new_tree(&mut runner).unwrap());
            t.push(&r);
            rows.push(r);
        }
        assert!(t.blocks.len() > 10, "{} blocks", t.blocks.len());
        let alone = t.heap_bytes();
        let mut copy = t.clone();
        assert!(t
            .blocks
            .iter()
            .zip(&copy.blocks)
            .all(|(a, b)| Arc::ptr_eq(a, b)));
        let shared = t.heap_bytes();
        assert!(shared < alone * 2 / 3, "{shared} of {alone}");
        // The copy goes on by itself; the table keeps its rows.
        copy.push(&rows[0]);
        assert_eq!(t.iter().collect::<Vec<_>>(), rows);
        rows.push(rows[0].clone());
        assert_eq!(copy.iter().collect::<Vec<_>>(), rows);
    }

    #[test]
    fn a_regular_kernels_row_takes_a_few_bytes() {
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
        let per_row = t.segments().map(|s| s.len()).sum::<usize>() / t.len();
        // Which numbers differ (x and SM: one byte), x's difference (three) and SM's (one).
        assert!((4..=5).contains(&per_row), "{per_row} bytes a row");
        assert_eq!(t.iter().nth(999).map(|r| r.cta.x), Some(999 * 200));
    }
}
