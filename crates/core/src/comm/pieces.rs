//! The read pieces of one launch, reduced to distinct bytes per (reader CTA, writer): the
//! transfers into a launch are the sizes of these sets (Rieber 2017, fig. 4.1), so a byte
//! read twice must count once. Pieces are joined as they come and merged per reader.

use super::tuning::{PIECE_SLACK, RECENT_PIECES, RUN_SLACK};
use crate::trace::memory;

/// A read piece: a reader read `[start, start + len)`, last written by writer number `writer`.
/// A piece lies within one [`BLOCK_BITS`]-aligned block, so that its length fits 32 bits and
/// the piece fits 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    start: u64,
    len: u32,
    writer: u32,
}

/// Pieces lie within blocks of `1 << BLOCK_BITS` bytes (pieces of one block never overlap
/// pieces of another, so merging within blocks counts every byte once).
const BLOCK_BITS: u32 = 31;

impl Piece {
    /// The piece `[start, end)`, which must lie within one block (a page's piece does).
    pub fn new(writer: u32, start: u64, end: u64) -> Self {
        debug_assert!(start < end && start >> BLOCK_BITS == (end - 1) >> BLOCK_BITS);
        Piece {
            start,
            len: (end - start) as u32,
            writer,
        }
    }
    fn end(&self) -> u64 {
        self.start + u64::from(self.len)
    }
    /// Makes this piece the union of itself and `p`, of the same writer, when they overlap or
    /// touch and the union lies within one block.
    fn absorb(&mut self, p: &Piece) -> bool {
        if p.start > self.end() || self.start > p.end() {
            return false;
        }
        let (s, e) = (self.start.min(p.start), self.end().max(p.end()));
        if (s ^ (e - 1)) >> BLOCK_BITS != 0 {
            return false;
        }
        self.start = s;
        self.len = (e - s) as u32;
        true
    }
}

/// The read pieces of one launch, per reader CTA, reduced to distinct bytes per (reader,
/// writer).
///
/// A trace usually holds each CTA's accesses together (a CTA runs on one SM, its warps
/// issue one after another), so pieces come reader by reader: the current reader's pieces
/// are gathered in one list, where a new piece that overlaps or touches one of the latest
/// pieces of the same writer joins it (threads of a CTA reading consecutive elements, one
/// instruction after another, build a few long pieces). When another reader comes, the list
/// is grouped by writer and merged once (see [`Grouper`]), while it is still in the
/// processor's cache, and kept as a finished run. A reader that comes back starts a new run;
/// runs of one reader are merged when the launch ends, or earlier when the runs have doubled
/// since they were last merged, so memory stays within a small factor of the distinct ranges
/// read even for a trace that interleaves its CTAs access by access.
#[derive(Default)]
pub(super) struct Pieces {
    /// The reader whose pieces `current` holds.
    reader: Option<u32>,
    current: Vec<Piece>,
    /// The length of `current` after its last compaction: the pieces before are not recent.
    compacted: usize,
    /// Finished runs' pieces, run after run, each grouped by writer, each writer's sorted by
    /// start and merged.
    done: Vec<Piece>,
    /// Where each finished run lies in `done`.
    runs: Vec<Run>,
    /// The length of `done` after the last consolidation.
    consolidated: usize,
    grouper: Grouper,
}

impl Pieces {
    // Inlined into the read path (its one caller outside tests): 3% fewer instructions.
    #[inline(always)]
    pub fn push(&mut self, reader: u32, p: Piece) {
        if self.reader != Some(reader) {
            self.switch(reader);
        }
        let n = self.current.len();
        let recent = n.saturating_sub(RECENT_PIECES).max(self.compacted);
        for q in self.current[recent..].iter_mut().rev() {
            if q.writer == p.writer && q.absorb(&p) {
                return;
            }
        }
        self.current.push(p);
        if self.current.len() >= 2 * self.compacted + PIECE_SLACK {
            self.grouper.compact(&mut self.current);
            self.compacted = self.current.len();
        }
    }

    /// Finishes the current reader's run and makes `reader` current.
    #[inline(never)]
    fn switch(&mut self, reader: u32) {
        self.finish_run();
        self.reader = Some(reader);
    }

    fn finish_run(&mut self) {
        let Some(reader) = self.reader.take() else {
            return;
        };
        self.grouper.compact(&mut self.current);
        let start = self.done.len();
        self.done.append(&mut self.current);
        self.compacted = 0;
        self.runs.push(Run {
            reader,
            pieces: start..self.done.len(),
        });
        if self.done.len() >= 2 * self.consolidated + RUN_SLACK {
            self.consolidate();
        }
    }

    /// Merges the runs of each reader into one, the runs in reader order.
    fn consolidate(&mut self) {
        if self.runs.is_sorted_by(|a, b| a.reader < b.reader) {
            self.consolidated = self.done.len();
            return;
        }
        self.runs.sort_by_key(|r| r.reader);
        let mut done = memory::with_capacity(self.done.len());
        let mut runs = Vec::with_capacity(self.runs.len());
        for group in self.runs.chunk_by(|a, b| a.reader == b.reader) {
            let start = done.len();
            for r in group {
                done.extend_from_slice(&self.done[r.pieces.clone()]);
            }
            if group.len() > 1 {
                let mut merged = done.split_off(start);
                self.grouper.compact(&mut merged);
                done.append(&mut merged);
            }
            runs.push(Run {
                reader: group[0].reader,
                pieces: start..done.len(),
            });
        }
        self.done = done;
        self.runs = runs;
        self.consolidated = self.done.len();
    }

    /// Calls `f(reader, writer, distinct bytes)` per key, readers in order (each reader's
    /// writers in no particular order), and empties the lists.
    pub fn drain(&mut self, mut f: impl FnMut(u32, u32, u64)) {
        self.finish_run();
        self.consolidate();
        for r in &self.runs {
            for group in self.done[r.pieces.clone()].chunk_by(|p, q| p.writer == q.writer) {
                f(
                    r.reader,
                    group[0].writer,
                    group.iter().map(|p| u64::from(p.len)).sum(),
                );
            }
        }
        self.done.clear();
        self.runs.clear();
        self.consolidated = 0;
    }

    /// The number of pieces the current reader holds (for tests).
    #[cfg(test)]
    fn held(&self, reader: u32) -> usize {
        if self.reader == Some(reader) {
            self.current.len()
        } else {
            0
        }
    }
}

/// One finished run: pieces of one reader, in `Pieces::done`.
struct Run {
    reader: u32,
    pieces: std::ops::Range<usize>,
}

/// Groups pieces by writer and merges those of one writer that overlap or touch, without
/// sorting the list by writer: most writers of a reader have one or two pieces, so a table
/// from writer to its latest piece chains each writer's pieces, and only a writer with
/// several pieces has them sorted by start.
#[derive(Default)]
struct Grouper {
    /// Per writer number, its group in the list being compacted when the slot's stamp is
    /// the current one.
    slot: Vec<Slot>,
    stamp: u32,
    /// Per group, its latest piece.
    head: Vec<u32>,
    /// Per piece, the piece of its writer before it ([`NO_PIECE`]: none).
    before: Vec<u32>,
    grouped: Vec<Piece>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    stamp: u32,
    group: u32,
}

/// The end of a chain of pieces.
const NO_PIECE: u32 = u32::MAX;

impl Grouper {
    /// Leaves the pieces of each writer together (writers in the order they first come),
    /// each writer's sorted by start and merged.
    fn compact(&mut self, v: &mut Vec<Piece>) {
        let n = v.len();
        if n < 2 {
            return;
        }
        if n >= NO_PIECE as usize {
            sort_compact(v);
            return;
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.slot.fill(Slot::default());
            self.stamp = 1;
        }
        let stamp = self.stamp;
        self.head.clear();
        self.before.clear();
        self.before.resize(n, NO_PIECE);
        for (i, (p, before)) in v.iter().zip(self.before.iter_mut()).enumerate() {
            let w = p.writer as usize;
            if w >= self.slot.len() {
                self.slot
                    .resize((w + 1).next_power_of_two(), Slot::default());
            }
            let s = &mut self.slot[w];
            if s.stamp == stamp {
                if let Some(h) = self.head.get_mut(s.group as usize) {
                    *before = *h;
                    *h = i as u32;
                }
            } else {
                *s = Slot {
                    stamp,
                    group: self.head.len() as u32,
                };
                self.head.push(i as u32);
            }
        }
        if self.head.len() == n {
            // One piece per writer: nothing to merge.
            return;
        }
        let out = &mut self.grouped;
        out.clear();
        out.reserve(n);
        for &h in &self.head {
            let start = out.len();
            let mut i = h as usize;
            while let Some(p) = v.get(i) {
                out.push(*p);
                i = self.before.get(i).map_or(usize::MAX, |&b| b as usize);
            }
            if out.len() - start > 1 {
                out[start..].sort_unstable_by_key(|p| p.start);
                let mut k = start;
                for j in start + 1..out.len() {
                    let p = out[j];
                    if !out[k].absorb(&p) {
                        k += 1;
                        out[k] = p;
                    }
                }
                out.truncate(k + 1);
            }
        }
        std::mem::swap(v, out);
    }
}

/// [`Grouper::compact`] by sorting: by writer, then start, then merged.
fn sort_compact(v: &mut Vec<Piece>) {
    v.sort_by_key(|p| p.writer);
    for group in v.chunk_by_mut(|a, b| a.writer == b.writer) {
        group.sort_unstable_by_key(|p| p.start);
    }
    v.dedup_by(|next, prev| prev.writer == next.writer && prev.absorb(next));
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_piece_joins_the_latest_piece_of_its_writer_across_other_writers() {
        let mut p = Pieces::default();
        let piece = Piece::new;
        // Writer 7 reads forward while writers 1 to RECENT_PIECES - 1 come between (so its piece stays
        // among the latest RECENT_PIECES); writer 7's pieces join.
        let between = RECENT_PIECES as u32 - 1;
        p.push(3, piece(7, 0, 4));
        for w in 1..=between {
            p.push(3, piece(w, 100 * u64::from(w), 100 * u64::from(w) + 1));
            p.push(3, piece(7, 4 * u64::from(w), 4 * u64::from(w) + 4));
        }
        assert_eq!(p.held(3), RECENT_PIECES);
        // Beyond the latest RECENT_PIECES pieces it is a new piece, merged when the list is drained.
        for w in 10..10 + RECENT_PIECES as u32 {
            p.push(3, piece(w, 1000 * u64::from(w), 1000 * u64::from(w) + 2));
        }
        let next = 4 * u64::from(between + 1);
        p.push(3, piece(7, next, next + 4));
        assert_eq!(p.held(3), 2 * RECENT_PIECES + 1);
        let mut got = Vec::new();
        p.drain(|r, w, bytes| got.push((r, w, bytes)));
        // Readers come in order, each reader's writers in any order.
        got.sort_unstable();
        let mut want: Vec<_> = (1..=between).map(|w| (3, w, 1)).collect();
        want.push((3, 7, next + 4));
        assert_eq!(got[..RECENT_PIECES], want[..]);
        assert_eq!(got.len(), 2 * RECENT_PIECES);
        assert!(got[RECENT_PIECES..]
            .iter()
            .all(|&(_, w, b)| w >= 10 && b == 2));
    }

    #[test]
    fn pieces_stay_within_their_block_and_count_each_byte_once() {
        let mut p = Pieces::default();
        let b = 1u64 << BLOCK_BITS;
        // Touching pieces across a block boundary stay apart; overlapping ones within a block
        // join.
        p.push(1, Piece::new(9, b - 4, b));
        p.push(1, Piece::new(9, b, b + 4));
        p.push(1, Piece::new(9, b - 6, b - 2));
        assert_eq!(p.held(1), 2);
        // Bytes already read and 2 more, beyond the recent pieces: merged at the drain, 12 bytes.
        for w in 10..10 + RECENT_PIECES as u32 {
            p.push(1, Piece::new(w, 0, 1));
        }
        p.push(1, Piece::new(9, b - 8, b));
        let mut got = Vec::new();
        p.drain(|r, w, bytes| got.push((r, w, bytes)));
        // Readers come in order, each reader's writers in any order.
        got.sort_unstable();
        assert_eq!(got[0], (1, 9, 12));
        assert_eq!(got.len(), 1 + RECENT_PIECES);
    }

    #[test]
    fn a_reader_ring_left_from_an_earlier_launch_joins_nothing() {
        let mut p = Pieces::default();
        for w in 0..RECENT_PIECES as u32 {
            p.push(2, Piece::new(w, 10 * u64::from(w), 10 * u64::from(w) + 1));
        }
        p.drain(|_, _, _| {});
        // The ring still names writers 0 to 7; the new list has two pieces, neither of them
        // touching what writer 5 reads next (which the ring's stale slot 5 would point past).
        p.push(2, Piece::new(9, 0, 1));
        p.push(2, Piece::new(6, 40, 41));
        p.push(2, Piece::new(5, 50, 51));
        p.push(2, Piece::new(5, 51, 52));
        assert_eq!(p.held(2), 3);
        // The oldest of the recent pieces is still found.
        for w in 20..20 + RECENT_PIECES as u32 - 3 {
            p.push(
                2,
                Piece::new(w, 1000 * u64::from(w), 1000 * u64::from(w) + 1),
            );
        }
        p.push(2, Piece::new(9, 1, 2));
        assert_eq!(p.held(2), 3 + RECENT_PIECES - 3);
        let mut got = Vec::new();
        p.drain(|r, w, bytes| got.push((r, w, bytes)));
        // Readers come in order, each reader's writers in any order.
        got.sort_unstable();
        assert_eq!(got[..3], [(2, 5, 2), (2, 6, 1), (2, 9, 2)]);
    }

    #[test]
    fn a_reader_that_comes_back_counts_each_byte_once() {
        let mut p = Pieces::default();
        p.push(1, Piece::new(9, 0, 4));
        p.push(2, Piece::new(9, 0, 4));
        p.push(1, Piece::new(9, 2, 6));
        p.push(0, Piece::new(4, 8, 9));
        p.push(1, Piece::new(3, 0, 1));
        let mut got = Vec::new();
        p.drain(|r, w, bytes| got.push((r, w, bytes)));
        // Readers come in order, each reader's writers in any order.
        got.sort_unstable();
        assert_eq!(got, [(0, 4, 1), (1, 3, 1), (1, 9, 6), (2, 9, 4)]);
    }

    #[test]
    fn readers_interleaved_access_by_access_keep_memory_bounded() {
        // Three readers take turns, each re-reading the same 16 bytes of 4 writers: every push
        // finishes a run, and the runs are merged as they double.
        let mut p = Pieces::default();
        for i in 0..300_000u64 {
            let (reader, writer, at) = ((i % 3) as u32, (i / 3 % 4) as u32, i / 12 % 16);
            p.push(reader, Piece::new(writer, at, at + 1));
            assert!(p.done.len() <= 2 * 3 * 4 * 16 + RUN_SLACK);
        }
        let mut got = Vec::new();
        p.drain(|r, w, bytes| got.push((r, w, bytes)));
        // Readers come in order, each reader's writers in any order.
        got.sort_unstable();
        let want: Vec<_> = (0..3)
            .flat_map(|r| (0..4).map(move |w| (r, w, 16)))
            .collect();
        assert_eq!(got, want);
        assert!(p.done.is_empty() && p.runs.is_empty());
    }

    /// The pieces of `v` as (writer, start, end), sorted.
    fn spans(v: &[Piece]) -> Vec<(u32, u64, u64)> {
        let mut s: Vec<_> = v.iter().map(|p| (p.writer, p.start, p.end())).collect();
        s.sort_unstable();
        s
    }

    proptest! {
        /// The table of chains merges exactly as the sort does (writers in another order).
        #[test]
        fn grouping_by_chains_agrees_with_sorting(
            raw in proptest::collection::vec((0u32..6, 0u64..200, 1u64..12), 0..200),
        ) {
            let v: Vec<Piece> = raw.iter().map(|&(w, s, n)| Piece::new(w, s, s + n)).collect();
            let mut grouped = v.clone();
            Grouper::default().compact(&mut grouped);
            let mut sorted = v;
            sort_compact(&mut sorted);
            prop_assert_eq!(spans(&grouped), spans(&sorted));
            // Each writer's pieces together, sorted by start and apart.
            for pair in grouped.windows(2) {
                if pair[0].writer == pair[1].writer {
                    prop_assert!(pair[0].end() < pair[1].start);
                }
            }
        }
    }
}
