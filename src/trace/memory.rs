//! A memory hint for the large trace columns.
//!
//! Loading a trace writes hundreds of megabytes of fresh memory, and with 4 KiB pages most of
//! that time goes to page faults. On Linux, transparent huge pages are often enabled only for
//! memory that asks for them (`madvise` mode), so large columns ask. The hint never changes
//! what the program computes; elsewhere it does nothing.

/// Columns smaller than this keep the default pages.
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
}
