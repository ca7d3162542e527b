//! An Accel-Sim run read on from a copy of its session taken after a CTA
//! ([`ResumePoint::Cta`](super::super::ResumePoint::Cta)): the app zooms into a window of a
//! streamed run from the nearest copy before it rather than from the trace's start.
//!
//! Accel-Sim traces have no index, and need none: each kernel is a file of its own, so the
//! kernel files before the copy's are not opened at all. The copy's kernel file is read again
//! from its start up to the copy's CTA. The thread blocks of the CTAs the copy is done with
//! are only scanned (no address decoded), so that the instructions are numbered as the run
//! numbered them; those of the CTAs it holds resident without their rows are decoded, and
//! their rows handed back ([`SinkHooks::resident`](crate::trace::SinkHooks::resident)). The rest of the file is then read once as
//! the run read it (`stream.rs`), then every later kernel file as [`super::stream_into`]
//! reads them.
//!
//! A file that no longer holds what the run read there (fewer kernels, a missing CTA,
//! other instructions) is an error saying that it changed, never a different run.

use std::io::BufRead;

use super::super::model::Columns;
use super::super::{CtaSink, Ctx, Held, Location, TraceError};
use super::parse::{Mode, Parser};
use super::stream::{read_on, stream_file, Given};
use super::{each_kernel_file, source, KernelFile};

/// Streams the trace `r` (a kernel list or one `.traceg`) on from CTA `next_cta` of its
/// kernel `kernel` (numbered from 0 in the list), for a receiver holding `held` of that
/// kernel: the rows of its wanted resident CTAs, then that kernel's later CTAs and its end,
/// then every later kernel.
pub(crate) fn stream_from<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    kernel: u32,
    next_cta: u32,
    held: Held<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut seen = 0u32;
    each_kernel_file(r, ctx, &mut |file| {
        let k = seen;
        seen += 1;
        match k.cmp(&kernel) {
            // Not opened.
            std::cmp::Ordering::Less => Ok(()),
            std::cmp::Ordering::Equal => match file {
                KernelFile::Given(r) => resume_kernel(r, ctx.file, next_cta, held, out),
                KernelFile::Listed(path) => {
                    let opened = source::open(&path, ctx.wrap, ctx.watch)?;
                    let name = path.display().to_string();
                    resume_kernel(opened.reader, &name, next_cta, held, out)
                }
            },
            std::cmp::Ordering::Greater => stream_file(file, ctx, out),
        }
    })?;
    if seen <= kernel {
        return Err(TraceError::parse(
            ctx.file,
            Location::Byte(0),
            format!(
                "the trace now has {seen} kernels, but the run stood in kernel {}: the file \
                 changed since it was read",
                kernel + 1
            ),
        ));
    }
    Ok(())
}

/// The bytes on disk of the kernel files of the first `kernels` kernels of the trace `r`
/// (which [`stream_from`] a later kernel does not open): 0 for a single `.traceg`.
pub(crate) fn bytes_before<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    kernels: u32,
) -> Result<u64, TraceError> {
    let (mut seen, mut bytes) = (0u32, 0u64);
    each_kernel_file(r, ctx, &mut |file| {
        if let (KernelFile::Listed(path), true) = (file, seen < kernels) {
            bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        }
        seen += 1;
        Ok(())
    })?;
    Ok(bytes)
}

/// Reads the kernel file `r` (named `file`) on from CTA `next_cta` (see the module's header).
fn resume_kernel<R: BufRead>(
    r: R,
    file: &str,
    next_cta: u32,
    held: Held<'_>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let changed = |line: u64, what: String| {
        TraceError::parse(
            file,
            Location::Line(line),
            format!("{what}, which it did not when the run read it: the file changed since"),
        )
    };
    let Some(last) = next_cta.checked_sub(1) else {
        return Err(TraceError::parse(
            file,
            Location::Line(0),
            "a run is read on from after a CTA, not from a kernel's start",
        ));
    };
    let mut read = Parser::new(r, file, Mode::Read)?;
    read.skim(held.instructions);
    let tpb = read.threads_per_cta();
    let wanted = held.wanted_ctas;
    let is_wanted = |c: u32| wanted.binary_search(&c).is_ok();
    // The resident CTAs' rows, until the instructions they name are checked.
    let mut resident: Vec<(u32, Columns)> = Vec::with_capacity(wanted.len());
    let mut rows = Columns::default();
    let mut before: Option<u32> = None;
    // The blocks up to CTA `last`'s, which the run handed on before the copy.
    loop {
        let Some(b) = read.next_block_for(&mut rows, &is_wanted)? else {
            let m = format!("the kernel file ends before CTA {last}");
            return Err(changed(read.line(), m));
        };
        match b.cta {
            Some(c) if before.is_some_and(|p| c <= p) => {
                let m = format!("thread block of CTA {c} comes after that of a later CTA");
                return Err(changed(b.line, m));
            }
            Some(c) if c > last => {
                return Err(changed(b.line, format!("CTA {last} has no accesses")));
            }
            Some(c) => {
                before = Some(c);
                if is_wanted(c) {
                    rows.group_by_thread(c * tpb, tpb);
                    resident.push((c, std::mem::take(&mut rows)));
                }
                if c == last {
                    break;
                }
            }
            None if b.mixed => {
                let m = "this thread block holds accesses of several CTAs".to_string();
                return Err(changed(b.line, m));
            }
            None => {}
        }
        rows.clear();
    }
    let line = read.line();
    if let Some(&c) = wanted
        .iter()
        .find(|&&c| !resident.iter().any(|(r, _)| *r == c))
    {
        return Err(changed(
            line,
            format!("CTA {c} has no accesses before CTA {last}"),
        ));
    }
    let mut given = Given::new(held.instructions);
    given.catch_up(read.instructions(), file, line, out)?;
    for (c, rows) in &resident {
        out.resident(*c, rows)?;
    }
    drop(resident);
    let stop = |at: u64, why: &str| changed(at, why.to_string());
    read_on(read, file, given, Some(last), out, &stop)
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
