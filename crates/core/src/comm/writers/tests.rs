use super::*;

/// Writer numbers in these tests: launch * 256 + CTA.
fn id(launch: u32, cta: u32) -> u32 {
    launch * 256 + cta
}

/// A read by `cta` in `launch`: pieces as (start, end, writer launch, writer CTA).
fn reads(w: &mut Writers, launch: u32, cta: u32, addr: u64, len: u64) -> Vec<(u64, u64, u32, u32)> {
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
