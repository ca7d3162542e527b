//! Handing a `.trc` file on CTA by CTA without holding it.
//!
//! The kernel's header needs the grid, which only the largest thread id gives. Where the
//! receiver can have the file read again ([`TraceError::ReadAgain`]: it takes what a read
//! finds as it goes) and the file is a plain one, the grid is taken from its last line, which
//! holds the last CTA when the CTAs come in order, and the file is walked once ([`once`]):
//! each CTA goes on as the next starts, and a CTA out of order or past the last line's ends
//! that read, to be read again the way below. Otherwise the file is walked twice. The first walk checks every line and learns whether the CTAs come in order
//! (each CTA's lines together, CTAs ascending): the released model's tracer writes them so
//! (Ocelot emulates one CTA after another; within a CTA the threads' lines interleave, a
//! warp instruction at a time), and so does our writer. Then the second walk hands each CTA
//! on as soon as the next one starts, its lines sorted by thread (stably, keeping each
//! thread's order), while the receiver simulates: no sort of the file, nothing on disk, one
//! CTA's rows in memory. A file whose CTAs are out of order, or a pipe (which cannot be read
//! twice), goes through an external sort instead (`spill.rs`). Both give the kernel that
//! reading the file whole gives, and the same error for a bad file.

use std::io::BufRead;

use super::super::model::{BuildError, Columns};
use super::super::{spill, CtaSink, Location, TraceError};
use super::walk::{walk, Line};
use super::{access, header};

/// Streams the file (`r`, its first read) into `out`. `again` opens it once more from its
/// start for the second walk; `None` where it cannot be (a pipe): the lines are then sorted
/// in an external sort of `cap` rows a run.
pub(crate) fn stream<R: BufRead, A: BufRead>(
    r: R,
    file: &str,
    cap: usize,
    again: Option<&dyn Fn() -> Result<A, TraceError>>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let Some(again) = again else {
        return sorted(r, file, cap, out);
    };
    // Whether each line's CTA is at least the one of the line before.
    let (mut ordered, mut last) = (true, 0u64);
    let walked = walk(r, file, |b, l| {
        let c = l.0 as u64 / b.count();
        ordered &= c >= last;
        last = c;
        Ok(())
    })?;
    if !ordered {
        return sorted(again()?, file, cap, out);
    }
    let b = header(walked.block, walked.max_tid, walked.rows, file)?;
    too_many(walked.rows, file)?;
    out.begin_kernel(&b.header())?;
    out.expect_rows(walked.rows);
    let mut cta = CtaRows::default();
    let tpb = walked.block.count();
    let last_cta = walked.max_tid as u64 / tpb;
    let second = walk(again()?, file, |_, l| {
        if !cta.holds(l.0) {
            let c = l.0 as u64 / tpb;
            if cta.of.is_some_and(|now| c < now) || c > last_cta {
                return Err(changed(file));
            }
            cta.hand_on(out)?;
            cta.begin(c, tpb);
        }
        cta.lines.push(l);
        Ok(())
    })?;
    cta.hand_on(out)?;
    if second != walked {
        return Err(changed(file));
    }
    out.end_kernel()
}

/// Streams the file (`r`) into `out` in one walk, the grid being that of thread `last_tid`
/// (the thread of the file's last line); `max_rows` bounds the rows (the file's size over
/// the shortest line's) for the header's checks before they are counted. CTAs that do not
/// come in order end the read with [`TraceError::ReadAgain`].
pub(crate) fn once<R: BufRead>(
    r: R,
    file: &str,
    last_tid: u32,
    max_rows: u64,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut cta = CtaRows::default();
    let mut state = Once::Before;
    let mut row = 0u64;
    let walked = walk(r, file, |b, l| {
        let tpb = b.count();
        row += 1;
        if state == Once::Before {
            // Checked for the most rows the file can hold: where even that fails, the file
            // is only checked on, so the error is the one of the rows counted (after any
            // line's), as a whole read gives.
            state = match header(b, last_tid, max_rows, file) {
                Ok(h) => {
                    out.begin_kernel(&h.header())?;
                    Once::Begun(last_tid as u64 / tpb)
                }
                Err(_) => Once::Checking,
            };
        }
        let Once::Begun(last) = state else {
            return Ok(());
        };
        if !cta.holds(l.0) {
            let c = l.0 as u64 / tpb;
            let again = |why: String| TraceError::read_again(file, Location::Row(row - 1), why);
            match cta.of {
                Some(now) if c < now => {
                    return Err(again(format!(
                        "CTA {c} comes again after CTA {now}: the CTAs are not in order"
                    )))
                }
                _ if c > last => {
                    return Err(again(format!(
                        "CTA {c} is past the last line's CTA {last}: the CTAs are not in order"
                    )))
                }
                _ => {}
            }
            cta.hand_on(out)?;
            cta.begin(c, tpb);
        }
        cta.lines.push(l);
        Ok(())
    })?;
    // The checks of a read in two walks, on what was counted.
    let b = header(walked.block, walked.max_tid, walked.rows, file)?;
    too_many(walked.rows, file)?;
    match state {
        Once::Begun(_) => cta.hand_on(out)?,
        // A file of no access line: the kernel of one empty CTA, as read whole.
        Once::Before => out.begin_kernel(&b.header())?,
        // Passed with the rows counted where it failed with more: cannot be, but the
        // kernel was not handed on.
        Once::Checking => {
            return Err(TraceError::read_again(
                file,
                Location::Row(0),
                "the kernel's size was not known before its rows",
            ))
        }
    }
    out.end_kernel()
}

/// Where a read in one walk stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Once {
    /// Before the first access line.
    Before,
    /// The kernel begun, its last CTA.
    Begun(u64),
    /// Its header failed its checks: the file is checked on, nothing handed on.
    Checking,
}

/// The error for a file that changed between its two walks.
fn changed(file: &str) -> TraceError {
    TraceError::parse(
        file,
        Location::Line(0),
        "the file changed while it was read: its second read differs from its first",
    )
}

/// The error for a kernel of more rows than a kernel may have.
fn too_many(rows: u64, file: &str) -> Result<(), TraceError> {
    if rows > u32::MAX as u64 {
        return Err(TraceError::parse(
            file,
            Location::Line(0),
            BuildError::TooManyRows.to_string(),
        ));
    }
    Ok(())
}

/// The lines of the CTA being gathered.
#[derive(Default)]
struct CtaRows {
    of: Option<u64>,
    /// Its threads' ids: `first..end` (so that a line's CTA is known without a division
    /// while it is this one's).
    first: u64,
    end: u64,
    lines: Vec<Line>,
    rows: Columns,
    /// Per thread of the CTA: where its next row goes, then its loads and stores so far
    /// ([`CtaRows::by_thread`]).
    next: Vec<u32>,
    counts: Vec<(u32, u32)>,
}

/// The most threads a CTA's lines are sorted by counting them per thread ([`CtaRows::by_thread`]);
/// a larger CTA's are sorted by comparison.
const COUNTED_THREADS: u64 = 1 << 16;

impl CtaRows {
    /// Whether thread `tid` is of the CTA gathered.
    #[inline]
    fn holds(&self, tid: u32) -> bool {
        (self.first..self.end).contains(&(tid as u64)) && self.of.is_some()
    }

    /// Starts gathering CTA `c` of `tpb` threads.
    fn begin(&mut self, c: u64, tpb: u64) {
        self.of = Some(c);
        self.first = c * tpb;
        self.end = self.first.saturating_add(tpb);
    }

    /// Hands the CTA gathered on (its lines sorted by thread, each thread's in file order)
    /// and starts the next empty.
    fn hand_on(&mut self, out: &mut dyn CtaSink) -> Result<(), TraceError> {
        let Some(c) = self.of else {
            return Ok(());
        };
        self.rows.clear();
        if self.end - self.first <= COUNTED_THREADS {
            self.by_thread();
        } else {
            self.by_comparison();
        }
        self.lines.clear();
        // `c` is below the grid's CTAs, which the header checked fit in a u32.
        out.cta_taken(c as u32, &mut self.rows)
    }

    /// The lines into `rows` sorted by thread, each thread's in file order, by a stable sort.
    fn by_comparison(&mut self) {
        if !self.lines.is_sorted_by_key(|l| l.0) {
            self.lines.sort_by_key(|l| l.0);
        }
        let mut counts = (0u32, 0u32);
        let mut last = None;
        for &(tid, store, addr, size) in &self.lines {
            if last != Some(tid) {
                counts = (0, 0);
                last = Some(tid);
            }
            self.rows.push(&access(tid, store, addr, size, &mut counts));
        }
    }

    /// The lines into `rows` sorted by thread, each thread's in file order, by counting each
    /// thread's lines and then placing every line where its thread's next row goes (the
    /// released model's tracer interleaves a CTA's threads a warp instruction at a time, so a
    /// comparison sort did most of its work moving lines). Rows pushed in file order and then
    /// grouped by `Columns::group_by_thread`, which permutes columns already built, took 5%
    /// longer on the timing model's run.
    fn by_thread(&mut self) {
        let threads = (self.end - self.first) as usize;
        let first = self.first as u32;
        self.next.clear();
        self.next.resize(threads + 1, 0);
        for l in &self.lines {
            self.next[(l.0 - first) as usize + 1] += 1;
        }
        for t in 1..=threads {
            self.next[t] += self.next[t - 1];
        }
        self.counts.clear();
        self.counts.resize(threads, (0, 0));
        let n = self.lines.len();
        let r = &mut self.rows;
        r.addr.resize(n, 0);
        r.thread.resize(n, 0);
        r.inst.resize(n, 0);
        r.dyn_inst.resize(n, 0);
        r.size.resize(n, 0);
        r.flags.resize(n, 0);
        for &(tid, store, addr, size) in &self.lines {
            let local = (tid - first) as usize;
            let at = self.next[local] as usize;
            self.next[local] += 1;
            let a = access(tid, store, addr, size, &mut self.counts[local]);
            r.set(at, &a);
        }
    }
}

/// Streams the file through an external sort (`cap` rows a run: `trace/spill.rs`): its
/// lines sorted by thread, keeping each thread's order, handed on CTA by CTA.
pub(crate) fn sorted<R: BufRead>(
    r: R,
    file: &str,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let io = |e| TraceError::io(file, e);
    let mut sort = spill::Sort::new(cap);
    let walked = walk(r, file, |block, (tid, store, addr, size)| {
        let tpb = block.count();
        sort.push(spill::Row {
            cta: tid as u64 / tpb,
            local: (tid as u64 % tpb) as u32,
            inst: store as u32,
            addr,
            aux: 0,
            size,
            flags: 0,
        })
        .map_err(io)
    })?;
    let b = header(walked.block, walked.max_tid, sort.len(), file)?;
    too_many(sort.len(), file)?;
    out.begin_kernel(&b.header())?;
    let tpb = walked.block.count() as u32;
    // The loads and stores of the thread whose rows are being handed on.
    let mut counts = (0u32, 0u32);
    let mut last = None;
    let sorted = sort.sorted().map_err(io)?;
    spill::hand_on_by_cta(
        sorted,
        file,
        tpb,
        out,
        |c| c as u32,
        |r, tid| {
            if last != Some(tid) {
                counts = (0, 0);
                last = Some(tid);
            }
            access(tid, r.inst == 1, r.addr, r.size, &mut counts)
        },
    )?;
    out.end_kernel()
}

/// The thread of the last access line of the plain (uncompressed) file at `path`, read from
/// its end; `None` for a compressed file, one whose last line is not an access line, or one
/// that cannot be read so (the file is then walked as a whole).
pub(crate) fn last_thread(path: &std::path::Path) -> Option<u32> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = [0u8; 8];
    let n = f.read(&mut head).ok()?;
    if super::super::source::Compression::from_magic(&head[..n])
        != super::super::source::Compression::None
    {
        return None;
    }
    let len = f.seek(SeekFrom::End(0)).ok()?;
    let from = len.saturating_sub(4096);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::with_capacity((len - from) as usize);
    f.read_to_end(&mut tail).ok()?;
    last_line_thread(&tail, from == 0)
}

/// The thread of the last access line of `tail`, the end of a file (`whole`: all of it).
pub(crate) fn last_line_thread(tail: &[u8], whole: bool) -> Option<u32> {
    let tail = tail.trim_ascii_end();
    // The last line, whole: after a line end, or the file's start.
    let start = match memchr::memrchr(b'\n', tail) {
        Some(i) => i + 1,
        None if whole => 0,
        None => return None,
    };
    super::walk::access_line(tail[start..].trim_ascii())
        .ok()
        .map(|l| l.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting each thread's lines gives the rows a stable sort by thread gives.
    #[test]
    fn counting_threads_sorts_as_a_stable_sort() {
        let mut rng = crate::rng::Rng::new(12);
        for _ in 0..200 {
            let tpb = 1 + rng.below(70);
            let c = rng.below(5);
            let mut a = CtaRows::default();
            a.begin(c, tpb);
            for _ in 0..rng.below(300) {
                let tid = (c * tpb + rng.below(tpb)) as u32;
                a.lines
                    .push((tid, rng.below(3) == 0, rng.below(1 << 20), 4));
            }
            let mut b = CtaRows {
                lines: a.lines.clone(),
                ..CtaRows::default()
            };
            a.by_thread();
            b.by_comparison();
            assert_eq!(a.rows, b.rows, "{tpb} threads");
        }
    }
}
