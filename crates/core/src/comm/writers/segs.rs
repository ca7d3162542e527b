//! A page's sorted list of segments: non-overlapping `[start, end)` byte ranges with the
//! writer that wrote them last, adjacent segments of one writer merged. A write takes one of
//! three fast paths where it can and the general rebuild of its neighbourhood otherwise; the
//! per-byte model in the tests checks every case.

use super::Seg;

/// Writes `new` into a page's sorted list of segments.
pub(super) fn write_segs(segs: &mut Vec<Seg>, new: Seg) {
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
