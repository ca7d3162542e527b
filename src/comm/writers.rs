//! The last writer of every byte of global memory, kept as ranges: memory grows with the
//! number of distinct written ranges, not with the trace.
//!
//! A writer is a (launch, CTA) pair numbered by the caller so that every writer of an earlier
//! launch has a smaller number than every writer of a later one: whether a piece was written
//! in an earlier launch is one comparison with the first number of the reading launch.
//!
//! The address space is cut into 256-byte pages; each written page holds a sorted list of
//! non-overlapping segments `[start, end)` with the writer that wrote them last, adjacent
//! segments of one writer merged, so a CTA that writes a contiguous block costs one segment
//! per page. Beside the list, a bit per byte says whether a later launch has read the byte's
//! last write (so each written byte is counted as communicated at most once); reads only set
//! bits and never split segments.
//!
//! A page whose list grows past [`DENSE_AT`] segments (many CTAs writing scattered bytes, as
//! in BFS's frontier updates) becomes dense: one writer per byte, 1 KiB, at most four times
//! the list it replaces (so still at most 32 bytes per written range), read in one step at the
//! byte instead of a binary search through cache lines of segments, and written without
//! shifting the list.

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 8;
const PAGE: u64 = 1 << PAGE_BITS;
/// Segments above which a page is kept dense (a dense page is as large as four times this
/// many).
const DENSE_AT: usize = 32;
/// The writer of a byte of a dense page never written.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    start: u16,
    end: u16,
    writer: u32,
}

/// A range of written bytes whose write was read by a later launch, reported when the range
/// is overwritten or at the end. Its bytes lie in one page, so it is 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Retired {
    pub start: u64,
    pub len: u32,
    pub writer: u32,
}

impl Retired {
    fn new(writer: u32, base: u64, a: u16, b: u16) -> Self {
        Retired {
            start: base + u64::from(a),
            len: u32::from(b - a),
            writer,
        }
    }
    pub fn end(&self) -> u64 {
        self.start + u64::from(self.len)
    }
}

/// Bit per byte of a page.
#[derive(Clone, Copy, Default)]
struct Bits([u64; PAGE as usize / 64]);

impl Bits {
    /// The mask of bits `[s, e)` within word `w`.
    fn mask(w: usize, s: u16, e: u16) -> u64 {
        let lo = (w * 64) as u16;
        let (a, b) = (s.max(lo) - lo, e.min(lo + 64).saturating_sub(lo));
        if a >= b {
            return 0;
        }
        let high = if b == 64 { u64::MAX } else { (1u64 << b) - 1 };
        high & !((1u64 << a) - 1)
    }
    /// `(word, mask)` for the words that bits `[s, e)` touch (none when the range is empty).
    fn masks(s: u16, e: u16) -> impl Iterator<Item = (usize, u64)> {
        (s as usize / 64..(e as usize).div_ceil(64)).map(move |w| (w, Self::mask(w, s, e)))
    }
    /// `(word, mask)` when bits `[s, e)` lie in one word and are fewer than 64, as for most
    /// accesses (a few bytes), which then skip the walk over [`Bits::masks`].
    #[inline(always)]
    fn one_word(s: u16, e: u16) -> Option<(usize, u64)> {
        let w = s as usize / 64;
        (e > s && (e as usize - 1) / 64 == w && e - s < 64)
            .then(|| (w, ((1u64 << (e - s)) - 1) << (s % 64)))
    }
    fn set(&mut self, s: u16, e: u16) {
        if let Some((w, m)) = Self::one_word(s, e) {
            self.0[w] |= m;
            return;
        }
        for (w, m) in Self::masks(s, e) {
            self.0[w] |= m;
        }
    }
    fn clear(&mut self, s: u16, e: u16) {
        for (w, m) in Self::masks(s, e) {
            self.0[w] &= !m;
        }
    }
    fn any(&self, s: u16, e: u16) -> bool {
        if let Some((w, m)) = Self::one_word(s, e) {
            return self.0[w] & m != 0;
        }
        Self::masks(s, e).any(|(w, m)| self.0[w] & m != 0)
    }
    fn get(&self, b: u16) -> bool {
        self.0[b as usize / 64] >> (b % 64) & 1 == 1
    }
    /// Calls `f(a, b)` for every maximal run of set bits within `[s, e)`.
    fn runs(&self, s: u16, e: u16, mut f: impl FnMut(u16, u16)) {
        let mut a = s;
        while a < e {
            if !self.get(a) {
                a += 1;
                continue;
            }
            let mut b = a + 1;
            while b < e && self.get(b) {
                b += 1;
            }
            f(a, b);
            a = b;
        }
    }
}

enum Data {
    Segs(Vec<Seg>),
    /// The writer of each byte; [`NONE`] for bytes never written.
    Dense(Box<[u32; PAGE as usize]>),
}

struct Page {
    data: Data,
    /// Bytes whose last write a later launch has read.
    comm: Bits,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            data: Data::Segs(Vec::new()),
            comm: Bits::default(),
        }
    }
}

/// Calls `f` on the maximal runs of one writer within `[s, e)` of a dense page, written bytes
/// only.
#[inline(always)]
fn dense_runs(who: &[u32; PAGE as usize], s: u16, e: u16, mut f: impl FnMut(Seg)) {
    let mut a = s as usize;
    let e = e as usize;
    while a < e {
        let w = who[a];
        let mut b = a + 1;
        while b < e && who[b] == w {
            b += 1;
        }
        if w != NONE {
            f(Seg {
                start: a as u16,
                end: b as u16,
                writer: w,
            });
        }
        a = b;
    }
}

impl Data {
    /// Calls `f` on every segment (a dense page's runs) that overlaps `[s, e)`, clipped to it,
    /// in address order.
    #[inline(always)]
    fn within(&self, s: u16, e: u16, mut f: impl FnMut(Seg)) {
        match self {
            Data::Segs(v) => {
                let first = v.partition_point(|g| g.end <= s);
                for g in v[first..].iter().take_while(|g| g.start < e) {
                    f(Seg {
                        start: g.start.max(s),
                        end: g.end.min(e),
                        writer: g.writer,
                    });
                }
            }
            Data::Dense(who) => dense_runs(who, s, e, f),
        }
    }
}

#[derive(Default)]
pub(super) struct Writers {
    pages: FxHashMap<u64, Page>,
}

impl Writers {
    /// Number of segments held (for tests of the memory bound).
    #[cfg(test)]
    pub fn segments(&self) -> usize {
        let mut n = 0;
        for p in self.pages.values() {
            p.data.within(0, PAGE as u16, |_| n += 1);
        }
        n
    }

    /// Number of dense pages (for tests).
    #[cfg(test)]
    pub fn dense_pages(&self) -> usize {
        self.pages
            .values()
            .filter(|p| matches!(p.data, Data::Dense(_)))
            .count()
    }

    /// Looks up the writers of `[addr, addr + len)` for a read by writer number `reader`,
    /// whose launch's writers are numbered from `first`: calls `found(start, end, writer)`
    /// for every piece written by another writer (in address order), and marks the pieces
    /// from earlier launches (`writer < first`) as read by a later launch. Bytes never
    /// written and bytes the reader itself wrote are skipped.
    // Inlined into the main pass with the page step (its one caller outside tests): a read
    // within one page, nearly every read, makes no call.
    #[inline(always)]
    pub fn read(
        &mut self,
        first: u32,
        reader: u32,
        addr: u64,
        len: u64,
        mut found: impl FnMut(u64, u64, u32),
    ) {
        match one_page(addr, len) {
            Some((page, base, s, e)) => self.read_page(first, reader, page, base, s, e, &mut found),
            None => self.read_pages(first, reader, addr, len, &mut found),
        }
    }

    /// [`Writers::read`] of a range that crosses pages.
    #[inline(never)]
    fn read_pages(
        &mut self,
        first: u32,
        reader: u32,
        addr: u64,
        len: u64,
        found: &mut dyn FnMut(u64, u64, u32),
    ) {
        for (page, base, s, e) in pages(addr, len) {
            self.read_page(first, reader, page, base, s, e, found);
        }
    }

    /// [`Writers::read`] of `[s, e)` within one page.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn read_page<F: FnMut(u64, u64, u32) + ?Sized>(
        &mut self,
        first: u32,
        reader: u32,
        page: u64,
        base: u64,
        s: u16,
        e: u16,
        found: &mut F,
    ) {
        let Some(p) = self.pages.get_mut(&page) else {
            return;
        };
        let comm = &mut p.comm;
        p.data.within(s, e, |g| {
            if g.writer < first {
                comm.set(g.start, g.end);
            } else if g.writer == reader {
                return;
            }
            found(base + u64::from(g.start), base + u64::from(g.end), g.writer);
        });
    }

    /// Records `[addr, addr + len)` as written by `writer`; pieces of older writes that a
    /// later launch had read are passed to `retired`.
    // Inlined into the main pass like `read`.
    #[inline(always)]
    pub fn write(&mut self, writer: u32, addr: u64, len: u64, mut retired: impl FnMut(Retired)) {
        match one_page(addr, len) {
            Some((page, base, s, e)) => self.write_page(writer, page, base, s, e, &mut retired),
            None => self.write_pages(writer, addr, len, &mut retired),
        }
    }

    /// [`Writers::write`] of a range that crosses pages.
    #[inline(never)]
    fn write_pages(&mut self, writer: u32, addr: u64, len: u64, retired: &mut dyn FnMut(Retired)) {
        for (page, base, s, e) in pages(addr, len) {
            self.write_page(writer, page, base, s, e, retired);
        }
    }

    /// [`Writers::write`] of `[s, e)` within one page.
    #[inline(always)]
    fn write_page<F: FnMut(Retired) + ?Sized>(
        &mut self,
        writer: u32,
        page: u64,
        base: u64,
        s: u16,
        e: u16,
        retired: &mut F,
    ) {
        let p = self.pages.entry(page).or_default();
        if p.comm.any(s, e) {
            retire(p, base, s, e, retired);
        }
        match &mut p.data {
            Data::Dense(who) => who[s as usize..e as usize].fill(writer),
            Data::Segs(v) => {
                let new = Seg {
                    start: s,
                    end: e,
                    writer,
                };
                write_segs(v, new);
                if v.len() > DENSE_AT {
                    p.data = Data::Dense(dense_of(v));
                }
            }
        }
    }

    /// Ends the analysis: every communicated range still held is retired.
    pub fn finish(self, mut retired: impl FnMut(Retired)) {
        let mut pages: Vec<_> = self.pages.into_iter().collect();
        pages.sort_unstable_by_key(|p| p.0);
        for (page, p) in pages {
            let base = page << PAGE_BITS;
            p.data.within(0, PAGE as u16, |g| {
                p.comm.runs(g.start, g.end, |a, b| {
                    retired(Retired::new(g.writer, base, a, b))
                })
            });
        }
    }
}

/// `(page, page base, start, end)` as [`pages`] gives it when `[addr, addr + len)` lies in one
/// page (nearly every access), which then skips the iterator.
#[inline(always)]
fn one_page(addr: u64, len: u64) -> Option<(u64, u64, u16, u16)> {
    let page = addr >> PAGE_BITS;
    let base = page << PAGE_BITS;
    let s = addr - base;
    (len > 0 && len <= PAGE - s).then(|| (page, base, s as u16, (s + len) as u16))
}

/// Passes the communicated bytes of `[s, e)` of a page, about to be overwritten, to
/// `retired`, and clears their bits.
#[inline(never)]
fn retire<F: FnMut(Retired) + ?Sized>(p: &mut Page, base: u64, s: u16, e: u16, retired: &mut F) {
    let comm = p.comm;
    p.data.within(s, e, |g| {
        comm.runs(g.start, g.end, |a, b| {
            retired(Retired::new(g.writer, base, a, b))
        })
    });
    p.comm.clear(s, e);
}

/// A page's segments as a dense page.
fn dense_of(v: &[Seg]) -> Box<[u32; PAGE as usize]> {
    let mut who = Box::new([NONE; PAGE as usize]);
    for g in v {
        who[g.start as usize..g.end as usize].fill(g.writer);
    }
    who
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

/// Writes `new` into a page's sorted list of segments.
fn write_segs(segs: &mut Vec<Seg>, new: Seg) {
    let first = segs.partition_point(|g| g.end <= new.start);
    let mut i = first;
    while i < segs.len() && segs[i].start < new.end {
        i += 1;
    }
    // Whether the segment before `first` and the one at `after` join the new one.
    let joins_left = first > 0 && {
        let p = segs[first - 1];
        p.end == new.start && p.writer == new.writer
    };
    // Fast path: the write extends the segment just before it (a CTA writing forward) into
    // the head of the segment it overwrites.
    if first + 1 == i && joins_left && segs[first].start == new.start && segs[first].end > new.end {
        segs[first - 1].end = new.end;
        segs[first].start = new.end;
        return;
    }
    let joins_right = |after: usize| {
        segs.get(after)
            .is_some_and(|n| n.start == new.end && n.writer == new.writer)
    };
    // Fast path: the write lies in bytes not written, extending or joining its neighbours.
    if first == i {
        match (joins_left, joins_right(first)) {
            (true, true) => {
                segs[first - 1].end = segs[first].end;
                segs.remove(first);
            }
            (true, false) => segs[first - 1].end = new.end,
            (false, true) => segs[first].start = new.start,
            (false, false) => segs.insert(first, new),
        }
        return;
    }
    // Fast path: the write covers exactly one segment and joins neither neighbour (a flag
    // that many CTAs write in turn).
    if first + 1 == i
        && segs[first].start == new.start
        && segs[first].end == new.end
        && !joins_left
        && !joins_right(i)
    {
        segs[first].writer = new.writer;
        return;
    }
    let mut pieces: [Option<Seg>; 3] = [None, None, Some(new)];
    if let Some(g) = segs.get(first).filter(|g| first < i && g.start < new.start) {
        pieces[0] = Some(Seg {
            end: new.start,
            ..*g
        });
    }
    if let Some(g) = i.checked_sub(1).and_then(|l| segs.get(l)) {
        if first < i && g.end > new.end {
            pieces[1] = Some(Seg {
                start: new.end,
                ..*g
            });
        }
    }
    let [left, right, mid] = pieces;
    let lo = first.saturating_sub(1);
    let hi = (i + 1).min(segs.len());
    let mut merged: [Seg; 5] = [new; 5];
    let mut n = 0;
    for g in segs[lo..first]
        .iter()
        .chain(left.iter())
        .chain(mid.iter())
        .chain(right.iter())
        .chain(segs[i..hi].iter())
    {
        if n > 0 && merged[n - 1].end == g.start && merged[n - 1].writer == g.writer {
            merged[n - 1].end = g.end;
        } else {
            merged[n] = *g;
            n += 1;
        }
    }
    replace(segs, lo, hi, &merged[..n]);
}

/// Replaces `v[lo..hi]` with `new`, as `Vec::splice` would, shifting the tail once.
fn replace(v: &mut Vec<Seg>, lo: usize, hi: usize, new: &[Seg]) {
    let (len, old) = (v.len(), hi - lo);
    if new.len() > old {
        let more = new.len() - old;
        v.resize(len + more, new[0]);
        v.copy_within(hi..len, hi + more);
    } else if new.len() < old {
        v.copy_within(hi..len, lo + new.len());
        v.truncate(len - (old - new.len()));
    }
    v[lo..lo + new.len()].copy_from_slice(new);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writer numbers in these tests: launch * 256 + CTA.
    fn id(launch: u32, cta: u32) -> u32 {
        launch * 256 + cta
    }

    /// A read by `cta` in `launch`: pieces as (start, end, writer launch, writer CTA).
    fn reads(
        w: &mut Writers,
        launch: u32,
        cta: u32,
        addr: u64,
        len: u64,
    ) -> Vec<(u64, u64, u32, u32)> {
        let mut v = Vec::new();
        w.read(id(launch, 0), id(launch, cta), addr, len, |a, b, f| {
            v.push((a, b, f / 256, f % 256))
        });
        v
    }

    #[test]
    fn bit_masks_cover_exactly_the_range() {
        for (s, e) in [
            (0u16, 1u16),
            (0, 64),
            (0, 256),
            (63, 65),
            (5, 200),
            (255, 256),
            (64, 128),
        ] {
            let mut b = Bits::default();
            b.set(s, e);
            for x in 0..256u16 {
                assert_eq!(b.get(x), (s..e).contains(&x), "{s}..{e} at {x}");
            }
            assert!(b.any(s, e));
            assert!(e == 256 || !b.any(e, 256));
            assert!(s == 0 || !b.any(0, s));
            let mut runs = Vec::new();
            b.runs(0, 256, |a, z| runs.push((a, z)));
            assert_eq!(runs, vec![(s, e)]);
            b.clear(s + 1, e);
            let mut runs = Vec::new();
            b.runs(0, 256, |a, z| runs.push((a, z)));
            assert_eq!(runs, vec![(s, s + 1)]);
        }
    }

    #[test]
    fn a_contiguous_write_is_one_segment_per_page() {
        let mut w = Writers::default();
        for i in 0..512u64 {
            w.write(id(0, 3), 4096 + i * 4, 4, |_| panic!("nothing was read"));
        }
        // 2 KiB from 4096: 8 pages.
        assert_eq!(w.segments(), 8);
        assert_eq!(
            reads(&mut w, 1, 0, 5118, 4),
            vec![(5118, 5120, 0, 3), (5120, 5122, 0, 3)]
        );
        // Reads mark bytes without splitting segments.
        assert_eq!(w.segments(), 8);
        assert_eq!(reads(&mut w, 2, 1, 5118, 4).len(), 2);
        // The writer's own read in its launch finds nothing; another CTA's is sharing.
        assert_eq!(reads(&mut w, 0, 3, 5118, 4), vec![]);
        assert_eq!(reads(&mut w, 0, 4, 5118, 2), vec![(5118, 5120, 0, 3)]);
        let mut left = Vec::new();
        w.finish(|r| left.push(r));
        assert_eq!(
            left,
            vec![
                Retired {
                    start: 5118,
                    len: 2,
                    writer: id(0, 3)
                },
                Retired {
                    start: 5120,
                    len: 2,
                    writer: id(0, 3)
                }
            ]
        );
    }

    /// A plain per-byte model of the last writers, to check the pages against.
    #[derive(Default)]
    struct Model(std::collections::BTreeMap<u64, (u32, bool)>);

    impl Model {
        fn read(&mut self, first: u32, reader: u32, addr: u64, len: u64) -> Vec<(u64, u32)> {
            let mut v = Vec::new();
            for b in addr..addr + len {
                if let Some(w) = self.0.get_mut(&b) {
                    if w.0 < first {
                        v.push((b, w.0));
                        w.1 = true;
                    } else if w.0 != reader {
                        v.push((b, w.0));
                    }
                }
            }
            v
        }
        fn write(&mut self, writer: u32, addr: u64, len: u64) -> Vec<(u64, u32)> {
            let mut v = Vec::new();
            for b in addr..addr + len {
                if let Some(&(w, true)) = self.0.get(&b) {
                    v.push((b, w));
                }
                self.0.insert(b, (writer, false));
            }
            v
        }
    }

    /// Pieces as single bytes, to compare with the model.
    fn bytes_of(pieces: Vec<(u64, u64, u32)>) -> Vec<(u64, u32)> {
        pieces
            .into_iter()
            .flat_map(|(a, b, f)| (a..b).map(move |x| (x, f)))
            .collect()
    }

    /// Random reads, writes and atomics by `ctas` CTAs over `span` bytes in launches 1 to 3,
    /// checked against the model.
    fn agree_at_random(w: &mut Writers, m: &mut Model, seed: u64, ctas: u64, span: u64) {
        let mut rng = crate::rng::Rng::new(seed);
        for launch in 1..4u32 {
            for _ in 0..2000 {
                let cta = rng.below(ctas) as u32;
                let addr = rng.below(span);
                let len = 1 + rng.below(8);
                let (first, me) = (id(launch, 0), id(launch, cta));
                if rng.below(3) > 0 {
                    let mut got = Vec::new();
                    w.read(first, me, addr, len, |a, b, f| got.push((a, b, f)));
                    assert_eq!(bytes_of(got), m.read(first, me, addr, len));
                } else {
                    let mut got = Vec::new();
                    w.write(me, addr, len, |r| {
                        got.extend((r.start..r.end()).map(|b| (b, r.writer)))
                    });
                    got.sort_unstable();
                    assert_eq!(got, m.write(me, addr, len));
                }
            }
        }
    }

    fn left_over(w: Writers, m: &Model) {
        let mut left = Vec::new();
        w.finish(|r| left.extend((r.start..r.end()).map(|b| (b, r.writer))));
        let want: Vec<(u64, u32)> =
            m.0.iter()
                .filter(|(_, w)| w.1)
                .map(|(&b, w)| (b, w.0))
                .collect();
        assert_eq!(left, want);
    }

    #[test]
    fn scattered_bytes_make_a_page_dense_and_it_agrees_with_a_per_byte_model() {
        let mut w = Writers::default();
        let mut m = Model::default();
        // Launch 0: each byte of page 0 written by another CTA: 256 segments.
        for b in 0..256u64 {
            let me = id(0, b as u32 % 200);
            w.write(me, b, 1, |_| unreachable!());
            m.write(me, b, 1);
        }
        assert_eq!(w.dense_pages(), 1);
        agree_at_random(&mut w, &mut m, 7, 64, 512);
        assert!(w.dense_pages() >= 1);
        left_over(w, &m);
    }

    #[test]
    fn segment_lists_agree_with_a_per_byte_model() {
        // Writes spread over 256 pages: the lists stay short.
        let mut w = Writers::default();
        let mut m = Model::default();
        agree_at_random(&mut w, &mut m, 11, 3, 65536);
        assert!(w.segments() > 1000);
        assert_eq!(w.dense_pages(), 0);
        left_over(w, &m);
    }

    /// Every segment list is sorted, its segments not empty, apart and, when they touch, of
    /// different writers (so a contiguous write by one writer stays one segment).
    fn check_segments(w: &Writers) {
        for p in w.pages.values() {
            if let Data::Segs(v) = &p.data {
                assert!(v.iter().all(|g| g.start < g.end), "{v:?}");
                for pair in v.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    assert!(a.end <= b.start, "{v:?}");
                    assert!(a.end < b.start || a.writer != b.writer, "{v:?}");
                }
            }
        }
    }

    #[test]
    fn segment_lists_stay_sorted_apart_and_merged() {
        // Three writers over 64 bytes of one page: every case of a write meeting its
        // neighbours (gaps, exact overwrites, joins on either side, splits) comes often.
        let mut w = Writers::default();
        let mut m = Model::default();
        let mut rng = crate::rng::Rng::new(5);
        for _ in 0..20_000 {
            let me = id(0, rng.below(3) as u32);
            let (addr, len) = (rng.below(64), 1 + rng.below(6));
            w.write(me, addr, len, |_| {});
            m.write(me, addr, len);
            check_segments(&w);
            if w.dense_pages() > 0 {
                // Too many segments for a list; start again.
                w = Writers::default();
                m = Model::default();
            }
        }
        let mut got = Vec::new();
        w.read(id(1, 0), id(1, 0), 0, 80, |a, b, f| got.push((a, b, f)));
        assert_eq!(bytes_of(got), m.read(id(1, 0), id(1, 0), 0, 80));
    }

    #[test]
    fn the_top_of_the_address_space_does_not_overflow() {
        let mut w = Writers::default();
        w.write(id(0, 1), u64::MAX - 6, 16, |_| unreachable!());
        assert_eq!(
            reads(&mut w, 1, 0, u64::MAX - 3, 8),
            vec![(u64::MAX - 3, u64::MAX, 0, 1)]
        );
        let mut r = Vec::new();
        w.finish(|x| r.push(x));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn overwrites_retire_exactly_the_read_bytes() {
        let mut w = Writers::default();
        w.write(id(0, 1), 0, 16, |_| unreachable!());
        assert_eq!(reads(&mut w, 1, 2, 4, 4), vec![(4, 8, 0, 1)]);
        // Same launch, other CTA: sharing; own write: nothing.
        w.write(id(1, 5), 8, 4, |_| unreachable!());
        assert_eq!(reads(&mut w, 1, 2, 8, 4), vec![(8, 12, 1, 5)]);
        assert_eq!(reads(&mut w, 1, 5, 8, 4), vec![]);
        let mut r = Vec::new();
        w.write(id(2, 0), 0, 6, |x| r.push(x));
        assert_eq!(
            r,
            vec![Retired {
                start: 4,
                len: 2,
                writer: id(0, 1)
            }]
        );
        let mut r = Vec::new();
        w.finish(|x| r.push(x));
        assert_eq!(
            r,
            vec![Retired {
                start: 6,
                len: 2,
                writer: id(0, 1)
            }]
        );
    }
}
