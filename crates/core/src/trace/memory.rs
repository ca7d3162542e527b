//! A memory hint for large vectors: the trace columns and the large tables of the analyses.
//!
//! Loading a trace writes hundreds of megabytes of fresh memory, and with 4 KiB pages most of
//! that time goes to page faults (on a virtual machine several microseconds each). On Linux,
//! transparent huge pages are often enabled only for memory that asks for them (`madvise`
//! mode), so large vectors ask, before they are written. The hint never changes what the
//! program computes; elsewhere it does nothing.

/// Columns smaller than this keep the default pages.
#[cfg(target_os = "linux")]
const MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back the 2 MiB-aligned interior of `v`'s allocation with huge pages.
#[cfg(target_os = "linux")]
pub(crate) fn prefer_huge_pages<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES {
        return;
    }
    let start = v.as_ptr() as usize;
    let first = start.next_multiple_of(HUGE);
    let end = (start + bytes) & !(HUGE - 1);
    if end > first {
        // SAFETY: madvise with MADV_HUGEPAGE only changes how the kernel backs pages; the
        // range is page aligned and lies inside the vector's live allocation, whose contents
        // and ownership it does not touch. Failure (e.g. THP disabled) is harmless and ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn prefer_huge_pages<T>(_v: &Vec<T>) {}

/// Asks the processor to bring the cache line holding `x` into its caches: a hint, which never
/// changes what the program computes (a table's slot looked up a few references later,
/// `linetable::LineTable::prefetch`).
#[inline]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; the address is a
    // live reference's. SSE, which the instruction needs, is part of every x86_64 target.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(x as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// An empty vector with room for `n` items, hinted before anything is written.
pub(crate) fn with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    prefer_huge_pages(&v);
    v
}

/// `n` copies of `x`, hinted before they are written.
pub(crate) fn filled<T: Clone>(x: T, n: usize) -> Vec<T> {
    let mut v = with_capacity(n);
    v.resize(n, x);
    v
}

/// Makes room for `additional` more items, growing `v` (at least to twice its length) into a
/// new hinted allocation, as `Vec::reserve` would grow it in place.
pub(crate) fn reserve<T: Copy>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional {
        let mut more = with_capacity((2 * v.len()).max(v.len() + additional).max(16));
        more.extend_from_slice(v);
        *v = more;
    }
}

/// Pushes `x`, growing `v` as [`reserve`] when full.
#[inline]
pub(crate) fn push<T: Copy>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        reserve(v, 1);
    }
    v.push(x);
}

#[cfg(test)]
mod tests {
    #[test]
    fn hint_leaves_contents_alone() {
        let mut v: Vec<u64> = (0..10).collect();
        v.reserve_exact(2 << 20);
        super::prefer_huge_pages(&v);
        v.extend(10..(3 << 20));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    fn hinted_vectors_hold_what_plain_ones_do() {
        let mut v = Vec::new();
        for i in 0..(1u64 << 20) {
            super::push(&mut v, i);
        }
        assert_eq!(v, (0..1u64 << 20).collect::<Vec<_>>());
        assert_eq!(super::filled(7u32, 3 << 20), vec![7u32; 3 << 20]);
        assert!(super::with_capacity::<u8>(5 << 20).is_empty());
    }
}
