//! The last writer of every byte of global memory, kept as ranges: memory grows with the
//! number of distinct written ranges, not with the trace.
//!
//! The address space is cut into 256-byte pages; each written page holds a sorted list of
//! non-overlapping segments `[start, end)` with the (launch, CTA) that wrote them last and
//! whether a later launch has read them (so each written byte is counted as communicated at
//! most once). Adjacent segments of the same writer and flag are merged, so a CTA that writes
//! a contiguous block costs one segment per page.

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: u64 = 1 << PAGE_BITS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    start: u16,
    end: u16,
    launch: u32,
    cta: u32,
    /// Read by a later launch.
    comm: bool,
}

impl Seg {
    fn same_writer(&self, o: &Seg) -> bool {
        self.launch == o.launch && self.cta == o.cta && self.comm == o.comm
    }
}

/// What a read of a byte range found, one piece at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Last written in an earlier launch: communication from that writer.
    Earlier { launch: u32, cta: u32 },
    /// Last written in this launch by another CTA: intra-launch sharing.
    SameLaunch { cta: u32 },
}

/// A range of written bytes whose write was read by a later launch, reported when the range
/// is overwritten or at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Retired {
    pub launch: u32,
    pub cta: u32,
    pub start: u64,
    pub end: u64,
}

#[derive(Default)]
pub(super) struct Writers {
    pages: FxHashMap<u64, Vec<Seg>>,
    scratch: Vec<Seg>,
    merged: Vec<Seg>,
}

impl Writers {
    /// Number of segments held (for tests of the memory bound).
    #[cfg(test)]
    pub fn segments(&self) -> usize {
        self.pages.values().map(Vec::len).sum()
    }

    /// Looks up the writers of `[addr, addr + len)` for a read by `cta` in `launch`: calls
    /// `found(start, end, what)` for every piece written by someone else (in address order)
    /// and marks the pieces from earlier launches as communicated. Bytes never written and
    /// bytes the reader itself wrote in this launch are skipped.
    pub fn read(
        &mut self,
        launch: u32,
        cta: u32,
        addr: u64,
        len: u64,
        mut found: impl FnMut(u64, u64, Found),
    ) {
        for (page, base, s, e) in pages(addr, len) {
            if let Some(segs) = self.pages.get_mut(&page) {
                let bufs = (&mut self.scratch, &mut self.merged);
                read_page(segs, bufs, launch, cta, s, e, |a, b, f| {
                    found(base + u64::from(a), base + u64::from(b), f)
                });
            }
        }
    }

    /// Records `[addr, addr + len)` as written by `cta` in `launch`; pieces of older writes
    /// that a later launch had read are passed to `retired`.
    pub fn write(
        &mut self,
        launch: u32,
        cta: u32,
        addr: u64,
        len: u64,
        mut retired: impl FnMut(Retired),
    ) {
        for (page, base, s, e) in pages(addr, len) {
            let new = Seg {
                start: s,
                end: e,
                launch,
                cta,
                comm: false,
            };
            write_page(self.pages.entry(page).or_default(), new, |s| {
                retired(Retired {
                    launch: s.launch,
                    cta: s.cta,
                    start: base + u64::from(s.start),
                    end: base + u64::from(s.end),
                })
            });
        }
    }

    /// Ends the analysis: every communicated range still held is retired.
    pub fn finish(self, mut retired: impl FnMut(Retired)) {
        let mut pages: Vec<_> = self.pages.into_iter().collect();
        pages.sort_unstable_by_key(|p| p.0);
        for (page, segs) in pages {
            let base = page << PAGE_BITS;
            for s in segs.into_iter().filter(|s| s.comm) {
                retired(Retired {
                    launch: s.launch,
                    cta: s.cta,
                    start: base + u64::from(s.start),
                    end: base + u64::from(s.end),
                });
            }
        }
    }
}

/// Splits `[addr, addr + len)` into its pages: `(page, page base, start, end)` with start and
/// end inside the page. The address space ends at `u64::MAX` (exclusive).
fn pages(addr: u64, len: u64) -> impl Iterator<Item = (u64, u64, u16, u16)> {
    let end = addr.saturating_add(len);
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let page = at >> PAGE_BITS;
        let base = page << PAGE_BITS;
        let stop = end.min(base.saturating_add(PAGE));
        let piece = (page, base, (at - base) as u16, (stop - base) as u16);
        at = stop;
        Some(piece)
    })
}

/// One page's part of [`Writers::read`]: bytes `[s, e)` of the page (`e` <= 256).
fn read_page(
    segs: &mut Vec<Seg>,
    (scratch, merged): (&mut Vec<Seg>, &mut Vec<Seg>),
    launch: u32,
    cta: u32,
    s: u16,
    e: u16,
    mut found: impl FnMut(u16, u16, Found),
) {
    // First segment that ends after `s`.
    let first = segs.partition_point(|g| g.end <= s);
    let mut i = first;
    let mut mark = false;
    while i < segs.len() && segs[i].start < e {
        let g = segs[i];
        let (a, b) = (g.start.max(s), g.end.min(e));
        if g.launch < launch {
            found(
                a,
                b,
                Found::Earlier {
                    launch: g.launch,
                    cta: g.cta,
                },
            );
            mark |= !g.comm;
        } else if g.cta != cta {
            found(a, b, Found::SameLaunch { cta: g.cta });
        }
        i += 1;
    }
    if !mark {
        return;
    }
    // Split the earlier-launch segments at `s` and `e` and flag the part inside.
    scratch.clear();
    for g in &segs[first..i] {
        if g.launch >= launch || g.comm {
            scratch.push(*g);
            continue;
        }
        let (a, b) = (g.start.max(s), g.end.min(e));
        if g.start < a {
            scratch.push(Seg { end: a, ..*g });
        }
        scratch.push(Seg {
            start: a,
            end: b,
            comm: true,
            ..*g
        });
        if b < g.end {
            scratch.push(Seg { start: b, ..*g });
        }
    }
    // Merge with each other and with the untouched neighbours.
    let lo = first.saturating_sub(1);
    let hi = (i + 1).min(segs.len());
    merged.clear();
    for g in segs[lo..first]
        .iter()
        .chain(scratch.iter())
        .chain(segs[i..hi].iter())
    {
        match merged.last_mut() {
            Some(m) if m.end == g.start && m.same_writer(g) => m.end = g.end,
            _ => merged.push(*g),
        }
    }
    segs.splice(lo..hi, merged.iter().copied());
}

fn write_page(segs: &mut Vec<Seg>, new: Seg, mut retired: impl FnMut(&Seg)) {
    let first = segs.partition_point(|g| g.end <= new.start);
    let mut i = first;
    while i < segs.len() && segs[i].start < new.end {
        i += 1;
    }
    // Fast path: the write extends the segment just before it (a CTA writing forward).
    if first == i {
        if let Some(p) = first.checked_sub(1).map(|p| &mut segs[p]) {
            if p.end == new.start && p.same_writer(&new) {
                p.end = new.end;
                if let Some(n) = segs.get(first).copied() {
                    if n.start == new.end && n.same_writer(&new) {
                        segs[first - 1].end = n.end;
                        segs.remove(first);
                    }
                }
                return;
            }
        }
    }
    let mut pieces: [Option<Seg>; 3] = [None, None, None];
    for g in &segs[first..i] {
        let (a, b) = (g.start.max(new.start), g.end.min(new.end));
        if g.comm {
            retired(&Seg {
                start: a,
                end: b,
                ..*g
            });
        }
        if g.start < new.start {
            pieces[0] = Some(Seg {
                end: new.start,
                ..*g
            });
        }
        if g.end > new.end {
            pieces[2] = Some(Seg {
                start: new.end,
                ..*g
            });
        }
    }
    pieces[1] = Some(new);
    let lo = first.saturating_sub(1);
    let hi = (i + 1).min(segs.len());
    let mut merged: [Seg; 5] = [new; 5];
    let mut n = 0;
    for g in segs[lo..first]
        .iter()
        .chain(pieces.iter().flatten())
        .chain(segs[i..hi].iter())
    {
        if n > 0 && merged[n - 1].end == g.start && merged[n - 1].same_writer(g) {
            merged[n - 1].end = g.end;
        } else {
            merged[n] = *g;
            n += 1;
        }
    }
    segs.splice(lo..hi, merged[..n].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(
        w: &mut Writers,
        launch: u32,
        cta: u32,
        addr: u64,
        len: u64,
    ) -> Vec<(u64, u64, Found)> {
        let mut v = Vec::new();
        w.read(launch, cta, addr, len, |a, b, f| v.push((a, b, f)));
        v
    }

    #[test]
    fn a_contiguous_write_is_one_segment_per_page() {
        let mut w = Writers::default();
        for i in 0..512u64 {
            w.write(0, 3, 4096 + i * 4, 4, |_| panic!("nothing was read"));
        }
        // 2 KiB from 4096: 8 pages.
        assert_eq!(w.segments(), 8);
        let f = Found::Earlier { launch: 0, cta: 3 };
        assert_eq!(
            reads(&mut w, 1, 0, 5118, 4),
            vec![(5118, 5120, f), (5120, 5122, f)]
        );
        // Marking split the two pages' segments in two at the read's edges.
        assert_eq!(w.segments(), 10);
        // Reading it again finds the same writer and changes nothing.
        assert_eq!(reads(&mut w, 2, 1, 5118, 4).len(), 2);
        assert_eq!(w.segments(), 10);
    }

    #[test]
    fn the_top_of_the_address_space_does_not_overflow() {
        let mut w = Writers::default();
        w.write(0, 1, u64::MAX - 6, 16, |_| unreachable!());
        let f = Found::Earlier { launch: 0, cta: 1 };
        assert_eq!(
            reads(&mut w, 1, 0, u64::MAX - 3, 8),
            vec![(u64::MAX - 3, u64::MAX, f)]
        );
        let mut r = Vec::new();
        w.finish(|x| r.push(x));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn overwrites_retire_exactly_the_read_bytes() {
        let mut w = Writers::default();
        w.write(0, 1, 0, 16, |_| unreachable!());
        assert_eq!(
            reads(&mut w, 1, 2, 4, 4),
            vec![(4, 8, Found::Earlier { launch: 0, cta: 1 })]
        );
        // Same launch, other CTA: sharing; own write: nothing.
        w.write(1, 5, 8, 4, |_| unreachable!());
        assert_eq!(
            reads(&mut w, 1, 2, 8, 4),
            vec![(8, 12, Found::SameLaunch { cta: 5 })]
        );
        assert_eq!(reads(&mut w, 1, 5, 8, 4), vec![]);
        let mut r = Vec::new();
        w.write(2, 0, 0, 6, |x| r.push(x));
        assert_eq!(
            r,
            vec![Retired {
                launch: 0,
                cta: 1,
                start: 4,
                end: 6
            }]
        );
        let mut r = Vec::new();
        w.finish(|x| r.push(x));
        assert_eq!(
            r,
            vec![Retired {
                launch: 0,
                cta: 1,
                start: 6,
                end: 8
            }]
        );
    }
}
