//! Pairs (transfers summed over launch pairs) and each launch's out-degrees, from the
//! transfers in (writer launch, reader launch, writer, reader) order: the transfers are taken
//! grouped by writer CTA and summed per reader with stamps instead of a map.

use super::report::{LaunchComm, Pair, Transfer};
use super::sort::stable_order;
use crate::trace::memory;

/// The pairs (transfers summed over launch pairs, sorted by writer, then reader) and each
/// launch's out-degrees. `transfers`: in (writer launch, reader launch, writer, reader)
/// order; `ctas`: more than any CTA id.
///
/// [`Pairs`] takes the transfers grouped by writer CTA, within a writer by writer launch: a
/// stable sort by writer CTA ([`stable_order`]) gives that order. (Walking each launch
/// pair's block of transfers writer by writer gives it too, without the sort's index; it
/// was within noise of the sort on both benchmarks, so there is one way.)
pub(super) fn pairs_and_out_degrees(
    transfers: &[Transfer],
    ctas: usize,
    per_launch: &mut [LaunchComm],
) -> Vec<Pair> {
    let mut pairs = Pairs::new(ctas, transfers.len());
    if let Some(order) = stable_order(transfers, |t| t.writer_cta) {
        for &i in &order {
            pairs.add(&transfers[i as usize], per_launch);
        }
    } else {
        // 2^32 transfers or more: too many for 32-bit indices.
        let mut grouped: Vec<&Transfer> = transfers.iter().collect();
        grouped.sort_by_key(|t| t.writer_cta);
        for t in grouped {
            pairs.add(t, per_launch);
        }
    }
    pairs.finish(per_launch)
}

/// Pairs and out-degrees from transfers that come grouped by writer CTA, within a writer by
/// writer launch. Whether a transfer brings a new reader (of the writer, and of the writer
/// in its launch) is added as a number, not branched on: which readers repeat is as good as
/// random.
struct Pairs {
    pairs: Vec<Pair>,
    /// The current writer and writer launch.
    writer: Option<u32>,
    launch: Option<u32>,
    /// Bytes per reader of the current writer.
    bytes: Vec<u64>,
    /// The current writer's readers, in the order first seen: the first `readers_seen`.
    readers: Vec<u32>,
    readers_seen: usize,
    /// Readers of the current writer in the current launch.
    out_degree: u32,
    /// Stamps per reader for the current writer (pairs) and the current (writer launch,
    /// writer) (out-degrees).
    pair_seen: Vec<u64>,
    out_seen: Vec<u64>,
    pair_stamp: u64,
    out_stamp: u64,
}

impl Pairs {
    fn new(ctas: usize, most: usize) -> Self {
        Pairs {
            pairs: memory::with_capacity(most),
            writer: None,
            launch: None,
            bytes: vec![0; ctas],
            readers: vec![0; ctas],
            readers_seen: 0,
            out_degree: 0,
            pair_seen: vec![0; ctas],
            out_seen: vec![0; ctas],
            pair_stamp: 0,
            out_stamp: 0,
        }
    }

    #[inline(always)]
    fn add(&mut self, t: &Transfer, per_launch: &mut [LaunchComm]) {
        if self.writer != Some(t.writer_cta) || self.launch != Some(t.writer_launch) {
            self.next_group(t, per_launch);
        }
        let r = t.reader_cta as usize;
        let (Some(pair_seen), Some(out_seen), Some(bytes)) = (
            self.pair_seen.get_mut(r),
            self.out_seen.get_mut(r),
            self.bytes.get_mut(r),
        ) else {
            return;
        };
        // Written in the next free slot whether new or not, kept when new.
        let new = *pair_seen != self.pair_stamp;
        *pair_seen = self.pair_stamp;
        if let Some(slot) = self.readers.get_mut(self.readers_seen) {
            *slot = t.reader_cta;
        }
        self.readers_seen += usize::from(new);
        *bytes += t.bytes;
        self.out_degree += u32::from(*out_seen != self.out_stamp);
        *out_seen = self.out_stamp;
    }

    /// Starts the group of `t`'s writer and writer launch.
    #[inline(never)]
    fn next_group(&mut self, t: &Transfer, per_launch: &mut [LaunchComm]) {
        self.end_launch(per_launch);
        if self.writer != Some(t.writer_cta) {
            self.end_writer();
            self.writer = Some(t.writer_cta);
            self.pair_stamp += 1;
        }
        self.launch = Some(t.writer_launch);
        self.out_stamp += 1;
    }

    /// Records the current writer's out-degree in the current launch.
    fn end_launch(&mut self, per_launch: &mut [LaunchComm]) {
        if let (Some(w), Some(l)) = (self.writer, self.launch) {
            if let Some(d) = per_launch
                .get_mut(l as usize)
                .and_then(|l| l.out_degree.get_mut(w as usize))
            {
                *d += self.out_degree;
            }
        }
        self.out_degree = 0;
    }

    /// Emits the current writer's pairs.
    fn end_writer(&mut self) {
        let Some(w) = self.writer else {
            return;
        };
        // (Listing many readers again from their stamps, a pass over every CTA, was within
        // noise of sorting them on both benchmarks, so they are always sorted.)
        let readers = &mut self.readers[..self.readers_seen.min(self.bytes.len())];
        readers.sort_unstable();
        for &reader in readers.iter() {
            if let Some(b) = self.bytes.get_mut(reader as usize) {
                self.pairs.push(Pair(w, reader, *b));
                *b = 0;
            }
        }
        self.readers_seen = 0;
    }

    fn finish(mut self, per_launch: &mut [LaunchComm]) -> Vec<Pair> {
        self.end_launch(per_launch);
        self.end_writer();
        self.pairs
    }
}
