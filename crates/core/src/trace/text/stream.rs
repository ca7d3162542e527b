//! Text traces handed on in bounded memory. A kernel's header must be complete before its
//! rows, but in this format instructions are numbered as rows first name them, and `inst`,
//! `attr` and `cta-sm` lines may come anywhere in the kernel: the header is known only at its
//! end. So each kernel's rows go through an external sort (`trace/spill.rs`) as they are
//! read, by CTA and thread (which keeps each thread's order), and are handed on CTA by CTA
//! once the kernel ends; an issued-order kernel's rows all get the same key, so the sort
//! gives them back in file order, a chunk at a time. Memory is the sort's buffer, whatever
//! the kernel's length; the file is read once.

use std::io::BufRead;

use super::{walk, Rows};
use crate::trace::model::{check_density, pack_flags, Access, BuildError, KernelBuilder, Order};
use crate::trace::sink::IssuedChunks;
use crate::trace::{spill, CtaSink, Fail, TraceError};

/// Reads each kernel through an external sort and hands it on in pieces.
struct Stream<'a> {
    file: &'a str,
    /// Rows the sort holds in memory.
    cap: usize,
    /// The current kernel's rows.
    sort: Option<spill::Sort>,
    out: &'a mut dyn CtaSink,
}

impl Rows for Stream<'_> {
    fn row(&mut self, b: &mut KernelBuilder, a: Access) -> Result<(), String> {
        b.check(&a).map_err(|e| e.to_string())?;
        let sort = self.sort.get_or_insert_with(|| spill::Sort::new(self.cap));
        // As the whole read's builder refuses its 2^32-th row.
        if sort.len() >= u32::MAX as u64 {
            return Err(BuildError::TooManyRows.to_string());
        }
        let tpb = b.block().count() as u32;
        // Issued order: one key for all, and the thread kept beside the instance.
        let (cta, local, thread) = match b.order() {
            Order::Issued => (0, 0, u64::from(a.thread) << 32),
            _ => (u64::from(a.thread / tpb), a.thread % tpb, 0),
        };
        sort.push(spill::Row {
            cta,
            local,
            inst: a.inst,
            addr: a.addr,
            aux: thread | u64::from(a.dyn_inst),
            size: a.size,
            flags: pack_flags(a.kind, a.space),
        })
        .map_err(|e| format!("writing the sort's temporary file: {e}"))
    }

    fn end(&mut self, b: KernelBuilder) -> Result<(), Fail> {
        let sort = self.sort.take().unwrap_or_else(|| spill::Sort::new(1));
        let (grid, block, order) = (b.grid(), b.block(), b.order());
        check_density(grid, block, sort.len() as usize, order).map_err(|e| e.to_string())?;
        self.out.begin_kernel(&b.header())?;
        let file = self.file;
        let mut sorted = sort.sorted().map_err(|e| TraceError::io(file, e))?;
        // The instance is the low half: the high one holds an issued row's thread.
        let access = |r: &spill::Row, thread: u32| r.access(thread, r.aux as u32);
        if order != Order::Issued {
            let tpb = block.count() as u32;
            spill::hand_on_by_cta(sorted, file, tpb, self.out, |c| c as u32, access)?;
            return Ok(self.out.end_kernel()?);
        }
        // Issued order: the rows come back in file order, each with its thread.
        let mut rows = IssuedChunks::default();
        while let Some(r) = sorted.next().map_err(|e| TraceError::io(file, e))? {
            rows.push(&access(&r, (r.aux >> 32) as u32));
            rows.hand_on_full(self.out)?;
        }
        rows.hand_on(self.out)?;
        Ok(self.out.end_kernel()?)
    }
}

/// Reads a text trace into `out`, each kernel through an external sort of `cap` rows a run;
/// the kernels are those [`super::read_into`] gives.
pub(crate) fn stream_into<R: BufRead>(
    r: R,
    file: &str,
    cap: usize,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    walk(
        r,
        file,
        &mut Stream {
            file,
            cap,
            sort: None,
            out,
        },
    )
}

#[cfg(test)]
mod tests;
