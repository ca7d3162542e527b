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

mod bits;
mod segs;

use rustc_hash::FxHashMap;

use super::tuning::{DENSE_AT, PAGE_BITS};
use bits::Bits;
use segs::write_segs;

const PAGE: u64 = 1 << PAGE_BITS;
/// The writer of a byte of a dense page never written.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seg {
    pub start: u16,
    pub end: u16,
    pub writer: u32,
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

/// The part of an access that lies in one page: `[s, e)` of page `page`, which starts at
/// byte `base`.
#[derive(Clone, Copy)]
struct Span {
    page: u64,
    base: u64,
    s: u16,
    e: u16,
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
            Some(span) => self.read_page(first, reader, span, &mut found),
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
        for span in pages(addr, len) {
            self.read_page(first, reader, span, found);
        }
    }

    /// [`Writers::read`] of one page's span.
    #[inline(always)]
    fn read_page<F: FnMut(u64, u64, u32) + ?Sized>(
        &mut self,
        first: u32,
        reader: u32,
        Span { page, base, s, e }: Span,
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
            Some(span) => self.write_page(writer, span, &mut retired),
            None => self.write_pages(writer, addr, len, &mut retired),
        }
    }

    /// [`Writers::write`] of a range that crosses pages.
    #[inline(never)]
    fn write_pages(&mut self, writer: u32, addr: u64, len: u64, retired: &mut dyn FnMut(Retired)) {
        for span in pages(addr, len) {
            self.write_page(writer, span, retired);
        }
    }

    /// [`Writers::write`] of one page's span.
    #[inline(always)]
    fn write_page<F: FnMut(Retired) + ?Sized>(
        &mut self,
        writer: u32,
        Span { page, base, s, e }: Span,
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

/// The span of `[addr, addr + len)` when it lies in one page (nearly every access), which then
/// skips the iterator of [`pages`].
#[inline(always)]
fn one_page(addr: u64, len: u64) -> Option<Span> {
    let page = addr >> PAGE_BITS;
    let base = page << PAGE_BITS;
    let s = addr - base;
    (len > 0 && len <= PAGE - s).then(|| Span {
        page,
        base,
        s: s as u16,
        e: (s + len) as u16,
    })
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

/// Splits `[addr, addr + len)` into its pages' spans. The address space ends at `u64::MAX`
/// (exclusive).
fn pages(addr: u64, len: u64) -> impl Iterator<Item = Span> {
    let end = addr.saturating_add(len);
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let page = at >> PAGE_BITS;
        let base = page << PAGE_BITS;
        let stop = end.min(base.saturating_add(PAGE));
        let piece = Span {
            page,
            base,
            s: (at - base) as u16,
            e: (stop - base) as u16,
        };
        at = stop;
        Some(piece)
    })
}

#[cfg(test)]
mod tests;
