//! How the analysis walks a launch's accesses, shared by its two passes: which accesses
//! count (and whether they read, write or both), the CTA of a thread, and a chunked walk
//! over the columns that reports progress. The second pass, the strides between a CTA's
//! communicated stores, is here too; the first is in [`super::first_pass`].

use super::report::CommError;
use super::strides::{stride, StrideCounts};
use super::transfers::Numbers;
use super::tuning::PROGRESS_EVERY;
use super::writers::Retired;
use crate::trace::{model_flags, AccessKind, Columns, Kernel, MemSpace};

/// [`counted`] of every flags byte: bit 0 reads, bit 1 writes.
pub(super) fn counted_table() -> [u8; 256] {
    std::array::from_fn(|f| match counted(f as u8) {
        Some((r, w)) => u8::from(r) | u8::from(w) << 1,
        None => 0,
    })
}

/// The CTA of a thread: a shift when the CTA size is a power of two, as it usually is.
#[derive(Clone, Copy)]
pub(super) struct CtaOf {
    tpc: u32,
    shift: Option<u32>,
}

impl CtaOf {
    pub fn new(k: &Kernel) -> Self {
        let tpc = k.threads_per_cta().max(1);
        CtaOf {
            tpc,
            shift: tpc.is_power_of_two().then(|| tpc.trailing_zeros()),
        }
    }
    pub fn of(self, thread: u32) -> u32 {
        match self.shift {
            Some(s) => thread >> s,
            None => thread / self.tpc,
        }
    }
}

/// Whether an access with these flags is counted, and then whether it reads and writes.
fn counted(flags: u8) -> Option<(bool, bool)> {
    let (kind, space) = model_flags(flags);
    match (kind, space) {
        (AccessKind::Load, MemSpace::Global | MemSpace::Texture) => Some((true, false)),
        (AccessKind::Store, MemSpace::Global) => Some((false, true)),
        (AccessKind::Atomic(_), MemSpace::Global) => Some((true, true)),
        _ => None,
    }
}

/// Calls `f(flags, addr, thread, size)` for each access of rows `rows` of `cols` in order,
/// and `progress` (with `done` plus the accesses walked) before every [`PROGRESS_EVERY`] of
/// them: the columns are walked in chunks of zipped slices, with no test per access.
pub(super) fn each_access(
    cols: &Columns,
    rows: std::ops::Range<usize>,
    done: u64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64) -> bool,
    mut f: impl FnMut(u8, u64, u32, u16),
) -> Result<(), CommError> {
    let (start, n) = (rows.start, rows.end.min(cols.len()));
    let (flags, addrs, threads, sizes) = (
        &cols.flags[..n],
        &cols.addr[..n],
        &cols.thread[..n],
        &cols.size[..n],
    );
    for from in (start..n).step_by(PROGRESS_EVERY) {
        if !progress(done + (from - start) as u64, total) {
            return Err(CommError::Cancelled);
        }
        let to = n.min(from + PROGRESS_EVERY);
        for (((&flag, &addr), &thread), &size) in flags[from..to]
            .iter()
            .zip(&addrs[from..to])
            .zip(&threads[from..to])
            .zip(&sizes[from..to])
        {
            f(flag, addr, thread, size);
        }
    }
    Ok(())
}

/// Second pass: strides between consecutive stores of a CTA that wrote communicated bytes,
/// launch by launch ([`StridePass::begin`]), a range of rows at a time.
#[derive(Default)]
pub(super) struct StridePass {
    pub hist: StrideCounts,
}

/// The launch the second pass walks: its communicated write ranges, sorted by writer and
/// address, where each CTA's start, and each CTA's latest communicated store.
pub(super) struct StrideLaunch {
    /// Its ranges' place in the first pass's retired ranges.
    at: std::ops::Range<usize>,
    first: Vec<usize>,
    last: Vec<u64>,
    cta_of: CtaOf,
    classes: [u8; 256],
}

impl StridePass {
    /// Begins launch `l`, `k`, whose communicated write ranges are `retired[at]`; `None`
    /// when it has none (it has nothing to walk).
    pub fn begin(
        numbers: &Numbers,
        l: usize,
        k: &Kernel,
        retired: &[Retired],
        at: std::ops::Range<usize>,
    ) -> Option<StrideLaunch> {
        let ranges = retired.get(at.clone()).filter(|r| !r.is_empty())?;
        let ctas = k.num_ctas() as usize;
        let base = numbers.0[l];
        // Where each CTA's ranges start, so that a store searches only its own CTA's ranges.
        let mut first = vec![0usize; ctas + 1];
        let mut j = 0;
        for (c, f) in first.iter_mut().enumerate() {
            while j < ranges.len() && ((ranges[j].writer - base) as usize) < c {
                j += 1;
            }
            *f = j;
        }
        Some(StrideLaunch {
            at,
            first,
            last: vec![u64::MAX; ctas],
            cta_of: CtaOf::new(k),
            classes: counted_table(),
        })
    }

    /// Walks rows `rows` of the launch begun, `k` (`retired`: the first pass's ranges);
    /// `done` counts the accesses walked.
    #[allow(clippy::too_many_arguments)]
    pub fn rows(
        &mut self,
        launch: &mut StrideLaunch,
        k: &Kernel,
        retired: &[Retired],
        rows: std::ops::Range<usize>,
        done: &mut u64,
        total: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(), CommError> {
        let n = rows.len() as u64;
        let StrideLaunch {
            at,
            first,
            last,
            cta_of,
            classes,
        } = launch;
        let hist = &mut self.hist;
        let ranges = retired.get(at.clone()).unwrap_or_default();
        each_access(
            k.columns(),
            rows,
            *done,
            total,
            progress,
            |flag, addr, thread, size| {
                if classes[flag as usize] & 2 == 0 {
                    return;
                }
                let c = cta_of.of(thread) as usize;
                let end = addr.saturating_add(u64::from(size));
                let own = match (first.get(c), first.get(c + 1)) {
                    (Some(&a), Some(&b)) => &ranges[a..b],
                    _ => &[],
                };
                let j = own.partition_point(|r| r.end() <= addr);
                let hit = own.get(j).is_some_and(|r| r.start < end && addr < r.end());
                if !hit {
                    return;
                }
                if let Some(l) = last.get_mut(c) {
                    if *l != u64::MAX {
                        hist.add(stride(*l, addr));
                    }
                    *l = addr;
                }
            },
        )?;
        *done += n;
        Ok(())
    }
}
