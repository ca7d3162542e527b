//! Stable sorts by a `u32` key. Writer numbers and CTA ids are dense, so a counting sort
//! (one pass to count, one to place) is the fast path; keys that span far more values than
//! there are items (huge sparse grids) take the simple twin, a comparison sort, which gives
//! the same order. The tests run both sides on the same input.

use super::tuning::{COUNTING_SPAN_PER_ITEM, COUNTING_SPAN_SLACK};
use crate::trace::memory;

/// Appends `v` stably sorted by `key` to `out`.
pub(super) fn stable_sort_onto<T: Copy>(v: &[T], key: impl Fn(&T) -> u32, out: &mut Vec<T>) {
    if !counting_sort_onto(v, &key, out) {
        let from = out.len();
        out.extend_from_slice(v);
        out[from..].sort_by_key(key);
    }
}

/// `v` stably sorted by `key`.
pub(super) fn stable_sorted<T: Copy>(v: &[T], key: impl Fn(&T) -> u32) -> Vec<T> {
    let mut sorted = Vec::new();
    stable_sort_onto(v, key, &mut sorted);
    sorted
}

/// The indices of `v` in a stable order by `key`, or `None` when an index would not fit in
/// 32 bits.
pub(super) fn stable_order<T>(v: &[T], key: impl Fn(&T) -> u32) -> Option<Vec<u32>> {
    let n = u32::try_from(v.len()).ok()?;
    if let Some(order) = counting_order(v, &key) {
        return Some(order);
    }
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by_key(|&i| key(&v[i as usize]));
    Some(order)
}

/// For a counting sort of `v` by `key`: the smallest key and where the items of each key
/// (less the smallest) start. `None` when `v` is empty or the keys span too many values
/// (see [`COUNTING_SPAN_PER_ITEM`]).
fn key_starts<T>(v: &[T], key: &impl Fn(&T) -> u32) -> Option<(u32, Vec<usize>)> {
    let first = key(v.first()?);
    let (lo, hi) = v.iter().fold((first, first), |(lo, hi), x| {
        (lo.min(key(x)), hi.max(key(x)))
    });
    let span = (hi - lo) as usize + 1;
    if span > COUNTING_SPAN_PER_ITEM * v.len() + COUNTING_SPAN_SLACK {
        return None;
    }
    let mut at = vec![0usize; span + 1];
    for x in v {
        at[(key(x) - lo) as usize + 1] += 1;
    }
    for i in 1..at.len() {
        at[i] += at[i - 1];
    }
    Some((lo, at))
}

/// Appends `v` stably sorted by `key` (a counting sort) to `out`; `false`, appending nothing,
/// where [`key_starts`] declines.
pub(super) fn counting_sort_onto<T: Copy>(
    v: &[T],
    key: &impl Fn(&T) -> u32,
    out: &mut Vec<T>,
) -> bool {
    let (Some((lo, mut at)), Some(&fill)) = (key_starts(v, key), v.first()) else {
        return false;
    };
    let from = out.len();
    memory::reserve(out, v.len());
    out.resize(from + v.len(), fill);
    let sorted = &mut out[from..];
    for x in v {
        let slot = &mut at[(key(x) - lo) as usize];
        sorted[*slot] = *x;
        *slot += 1;
    }
    true
}

/// The indices of `v` in a stable order by `key` (a counting sort), or `None` where
/// [`key_starts`] declines. `v` must have fewer than 2^32 items.
fn counting_order<T>(v: &[T], key: &impl Fn(&T) -> u32) -> Option<Vec<u32>> {
    let (lo, mut at) = key_starts(v, key)?;
    let mut order = memory::filled(0u32, v.len());
    for (i, x) in v.iter().enumerate() {
        let slot = &mut at[(key(x) - lo) as usize];
        order[*slot] = i as u32;
        *slot += 1;
    }
    Some(order)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn counting_sort_is_stable_and_declines_sparse_keys() {
        let v: Vec<(u32, usize)> = [5u32, 1, 5, 3, 1, 0, 5]
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i))
            .collect();
        let mut sorted = vec![(9, 9)];
        assert!(counting_sort_onto(&v, &|x: &(u32, usize)| x.0, &mut sorted));
        let mut want = v.clone();
        want.sort_by_key(|x| x.0);
        assert_eq!(sorted[0], (9, 9), "appends after what is there");
        assert_eq!(sorted[1..], want[..]);
        let key = |x: &(u32, usize)| x.0;
        let mut out = Vec::new();
        assert!(!counting_sort_onto(
            &[(0u32, 0), (1 << 20, 1)],
            &key,
            &mut out
        ));
        assert!(!counting_sort_onto(&[], &key, &mut out));
        assert!(out.is_empty());
    }

    proptest! {
        /// Both sides of the threshold give what a plain stable sort gives: keys below `span`
        /// take the counting sort when `span` is small, mostly the comparison sort when it is
        /// large.
        #[test]
        fn the_counting_sort_and_its_twin_agree_with_a_stable_sort(
            keys in proptest::collection::vec(any::<u32>(), 0..300),
            span in prop_oneof![Just(8u32), Just(1u32 << 24)],
        ) {
            let v: Vec<(u32, usize)> = keys.iter().enumerate().map(|(i, &k)| (k % span, i)).collect();
            let key = |x: &(u32, usize)| x.0;
            let mut want = v.clone();
            want.sort_by_key(key);
            prop_assert_eq!(stable_sorted(&v, key), want.clone());
            let order = stable_order(&v, key).unwrap();
            let by_order: Vec<_> = order.iter().map(|&i| v[i as usize]).collect();
            prop_assert_eq!(by_order, want.clone());
            let mut counted = Vec::new();
            let took = counting_sort_onto(&v, &key, &mut counted);
            if span == 8 {
                prop_assert_eq!(took, !v.is_empty());
            }
            if took {
                prop_assert_eq!(counted, want);
            }
        }
    }
}
