//! The last writer of every byte of global memory, kept as ranges: memory grows with the
//! number of distinct written ranges, not with the trace.
//!
//! The address space is cut into 256-byte pages; each written page holds a sorted list of
//! non-overlapping segments `[start, end)` with the (launch, CTA) that wrote them last and
//! whether a later launch has read them (so each written byte is counted as communicated at
//! most once). Adjacent segments of the same writer and flag are merged, so a CTA that writes
//! a contiguous block costs one segment per page.
//!
//! A page whose list grows past [`DENSE_AT`] segments (many CTAs writing scattered bytes, as
//! in BFS's frontier updates) becomes dense: one (launch, CTA) per byte and a flag bit per
//! byte, 2 KiB, no larger than the list it replaces, and read or written in time proportional
//! to the bytes touched instead of by searching and shifting the list.

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: u64 = 1 << PAGE_BITS;
/// Segments above which a page is kept dense (a dense page is about as large as this many).
const DENSE_AT: usize = 128;
/// The launch of a byte of a dense page never written.
const NONE: u32 = u32::MAX;

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

/// A page as one writer per byte.
struct Dense {
    /// (launch, CTA) of each byte's last write; launch [`NONE`] for bytes never written.
    who: [(u32, u32); PAGE as usize],
    /// Bit per byte: read by a later launch.
    comm: [u64; PAGE as usize / 64],
}

impl Dense {
    fn from_segs(segs: &[Seg]) -> Box<Self> {
        let mut d = Box::new(Dense {
            who: [(NONE, 0); PAGE as usize],
            comm: [0; PAGE as usize / 64],
        });
        for g in segs {
            for b in g.start..g.end {
                d.who[b as usize] = (g.launch, g.cta);
                d.set_comm(b, g.comm);
            }
        }
        d
    }
    fn comm(&self, b: u16) -> bool {
        self.comm[b as usize / 64] >> (b % 64) & 1 == 1
    }
    fn set_comm(&mut self, b: u16, on: bool) {
        let bit = 1u64 << (b % 64);
        if on {
            self.comm[b as usize / 64] |= bit;
        } else {
            self.comm[b as usize / 64] &= !bit;
        }
    }
    /// Maximal runs `[a, b)` of `[s, e)` whose bytes have the same writer and flag, written
    /// ones only, as segments.
    fn runs(&self, s: u16, e: u16, mut f: impl FnMut(Seg)) {
        let mut a = s;
        while a < e {
            let (launch, cta) = self.who[a as usize];
            let comm = self.comm(a);
            let mut b = a + 1;
            while b < e && self.who[b as usize] == (launch, cta) && self.comm(b) == comm {
                b += 1;
            }
            if launch != NONE {
                f(Seg {
                    start: a,
                    end: b,
                    launch,
                    cta,
                    comm,
                });
            }
            a = b;
        }
    }
}

enum Page {
    Segs(Vec<Seg>),
    Dense(Box<Dense>),
}

impl Default for Page {
    fn default() -> Self {
        Page::Segs(Vec::new())
    }
}

impl Page {
    /// Makes a long list dense.
    fn settle(&mut self) {
        if let Page::Segs(v) = self {
            if v.len() > DENSE_AT {
                *self = Page::Dense(Dense::from_segs(v));
            }
        }
    }
    /// Calls `f` on every segment (a dense page's runs), in address order.
    fn each(&self, mut f: impl FnMut(Seg)) {
        match self {
            Page::Segs(v) => v.iter().for_each(|g| f(*g)),
            Page::Dense(d) => d.runs(0, PAGE as u16, f),
        }
    }
}

#[derive(Default)]
pub(super) struct Writers {
    pages: FxHashMap<u64, Page>,
    scratch: Vec<Seg>,
    merged: Vec<Seg>,
}

impl Writers {
    /// Number of segments held (for tests of the memory bound).
    #[cfg(test)]
    pub fn segments(&self) -> usize {
        let mut n = 0;
        for p in self.pages.values() {
            p.each(|_| n += 1);
        }
        n
    }

    /// Number of dense pages (for tests).
    #[cfg(test)]
    pub fn dense_pages(&self) -> usize {
        self.pages
            .values()
            .filter(|p| matches!(p, Page::Dense(_)))
            .count()
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
            let found = |a: u16, b: u16, f| found(base + u64::from(a), base + u64::from(b), f);
            let Some(p) = self.pages.get_mut(&page) else {
                continue;
            };
            match p {
                Page::Segs(segs) => {
                    let bufs = (&mut self.scratch, &mut self.merged);
                    read_page(segs, bufs, launch, cta, s, e, found);
                }
                Page::Dense(d) => read_dense(d, launch, cta, s, e, found),
            }
            // Marking can split segments.
            p.settle();
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
            let retired = |s: &Seg| {
                retired(Retired {
                    launch: s.launch,
                    cta: s.cta,
                    start: base + u64::from(s.start),
                    end: base + u64::from(s.end),
                })
            };
            let p = self.pages.entry(page).or_default();
            match p {
                Page::Segs(segs) => {
                    write_page(segs, new, retired);
                    p.settle();
                }
                Page::Dense(d) => write_dense(d, new, retired),
            }
        }
    }

    /// Ends the analysis: every communicated range still held is retired.
    pub fn finish(self, mut retired: impl FnMut(Retired)) {
        let mut pages: Vec<_> = self.pages.into_iter().collect();
        pages.sort_unstable_by_key(|p| p.0);
        for (page, p) in pages {
            let base = page << PAGE_BITS;
            p.each(|s| {
                if s.comm {
                    retired(Retired {
                        launch: s.launch,
                        cta: s.cta,
                        start: base + u64::from(s.start),
                        end: base + u64::from(s.end),
                    });
                }
            });
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

/// [`read_page`] on a dense page.
fn read_dense(
    d: &mut Dense,
    launch: u32,
    cta: u32,
    s: u16,
    e: u16,
    mut found: impl FnMut(u16, u16, Found),
) {
    let mut mark = false;
    d.runs(s, e, |g| {
        if g.launch < launch {
            found(
                g.start,
                g.end,
                Found::Earlier {
                    launch: g.launch,
                    cta: g.cta,
                },
            );
            mark |= !g.comm;
        } else if g.cta != cta {
            found(g.start, g.end, Found::SameLaunch { cta: g.cta });
        }
    });
    if mark {
        for b in s..e {
            let (l, _) = d.who[b as usize];
            if l != NONE && l < launch {
                d.set_comm(b, true);
            }
        }
    }
}

/// [`write_page`] on a dense page.
fn write_dense(d: &mut Dense, new: Seg, mut retired: impl FnMut(&Seg)) {
    d.runs(new.start, new.end, |g| {
        if g.comm {
            retired(&g);
        }
    });
    for b in new.start..new.end {
        d.who[b as usize] = (new.launch, new.cta);
        d.set_comm(b, false);
    }
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

    /// A plain per-byte model of the last writers, to check dense pages against.
    #[derive(Default)]
    struct Model(std::collections::BTreeMap<u64, (u32, u32, bool)>);

    impl Model {
        fn read(&mut self, launch: u32, cta: u32, addr: u64, len: u64) -> Vec<(u64, Found)> {
            let mut v = Vec::new();
            for b in addr..addr + len {
                if let Some(w) = self.0.get_mut(&b) {
                    if w.0 < launch {
                        v.push((
                            b,
                            Found::Earlier {
                                launch: w.0,
                                cta: w.1,
                            },
                        ));
                        w.2 = true;
                    } else if w.1 != cta {
                        v.push((b, Found::SameLaunch { cta: w.1 }));
                    }
                }
            }
            v
        }
        fn write(&mut self, launch: u32, cta: u32, addr: u64, len: u64) -> Vec<(u64, u32, u32)> {
            let mut v = Vec::new();
            for b in addr..addr + len {
                if let Some(&(l, c, true)) = self.0.get(&b) {
                    v.push((b, l, c));
                }
                self.0.insert(b, (launch, cta, false));
            }
            v
        }
    }

    /// Pieces as single bytes, to compare with the model.
    fn bytes_of(pieces: Vec<(u64, u64, Found)>) -> Vec<(u64, Found)> {
        pieces
            .into_iter()
            .flat_map(|(a, b, f)| (a..b).map(move |x| (x, f)))
            .collect()
    }

    #[test]
    fn scattered_bytes_make_a_page_dense_and_it_agrees_with_a_per_byte_model() {
        let mut w = Writers::default();
        let mut m = Model::default();
        let mut rng = crate::rng::Rng::new(7);
        // Launch 0: each byte of page 0 written by another CTA: 256 segments.
        for b in 0..256u64 {
            let (cta, addr) = (b as u32 % 200, b);
            w.write(0, cta, addr, 1, |_| unreachable!());
            m.write(0, cta, addr, 1);
        }
        assert_eq!(w.dense_pages(), 1);
        // Then random reads, writes and atomics across launches 1 to 3 over two pages.
        for launch in 1..4u32 {
            for _ in 0..2000 {
                let cta = rng.below(64) as u32;
                let addr = rng.below(512);
                let len = 1 + rng.below(8);
                if rng.below(3) > 0 {
                    let mut got = Vec::new();
                    w.read(launch, cta, addr, len, |a, b, f| got.push((a, b, f)));
                    assert_eq!(bytes_of(got), m.read(launch, cta, addr, len));
                } else {
                    let mut got = Vec::new();
                    w.write(launch, cta, addr, len, |r| {
                        got.extend((r.start..r.end).map(|b| (b, r.launch, r.cta)))
                    });
                    got.sort_unstable();
                    assert_eq!(got, m.write(launch, cta, addr, len));
                }
            }
        }
        assert!(w.dense_pages() >= 1);
        let mut left = Vec::new();
        w.finish(|r| left.extend((r.start..r.end).map(|b| (b, r.launch, r.cta))));
        let want: Vec<(u64, u32, u32)> =
            m.0.iter()
                .filter(|(_, w)| w.2)
                .map(|(&b, w)| (b, w.0, w.1))
                .collect();
        assert_eq!(left, want);
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
