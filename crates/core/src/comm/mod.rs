//! Inter-CTA communication across kernel launches (Rieber 2017, ch. 4 and 6).
//!
//! CTAs exchange data reliably only through global memory across kernel boundaries: bytes
//! written by one CTA in one launch and read by a CTA in a later launch. [`analyze`] tracks the
//! last writer (launch, CTA) of every written byte as ranges ([`writers`]) and replays the
//! trace launch by launch:
//! - a read of a byte last written in an earlier launch is **communication** from that writer
//!   to the reader (the diagonal, same CTA id in both launches, is kept);
//! - a read of a byte written in the same launch by another CTA is **intra-launch sharing**,
//!   not reliable under CUDA's memory model, reported apart;
//! - atomics are a read, then a write; loads, stores and atomics to global memory count, and
//!   texture loads (they read global memory); other spaces are private or host-written.
//!
//! Volumes of communication are sets: a transfer from (writer launch, writer CTA) to
//! (reader launch, reader CTA) is the number of distinct bytes the reader read that the
//! writer wrote, however many times it read them (Rieber 2017 fig. 4.1: the overlap of a write
//! set and a read set). CTA ids are serialized x fastest, then y, then z.
//!
//! Within a launch the trace order decides which write a read sees (per-thread order for
//! traces without issue order). The full definitions are in `docs/communication.md`.

//!
//! The analysis in modules, by concept:
//! - [`analyzing`]: the analysis as a sequence of pieces ([`analyze`] takes whole launches);
//! - [`first_pass`]: the replay against the last-writer map ([`writers`]), with the read
//!   pieces of a launch reduced to distinct bytes per (reader, writer) in [`pieces`];
//! - [`transfers`]: writer numbers and the merge of each launch's rows into the ordered list
//!   of transfers; [`pairs`]: transfers summed per (writer, reader) and out-degrees;
//! - [`passes`]: the access walk both passes share, and the second pass (store strides);
//!   [`strides`]: bounded stride histograms;
//! - [`report`]: the report and its assembly; [`sort`]: the counting sorts and their
//!   comparison twins; [`tuning`]: every threshold that picks a fast path or sizes a buffer.

mod analyzing;
mod first_pass;
mod pairs;
mod passes;
mod pieces;
mod report;
mod sort;
mod strides;
mod transfers;
mod tuning;
mod writers;

pub use analyzing::{Analyzing, PIECE_ROWS};
pub use report::{
    Bisection, CommError, CommReport, LaunchComm, Measure, Pair, Strides, Transfer, MAX_STRIDES,
};
pub use strides::STRIDE_SLOTS;

use crate::trace::Trace;

/// Analyzes the communication of `trace`. `progress(done, total)` is called every few tens of
/// thousands of accesses (two passes: `total` is twice the accesses); returning `false`
/// cancels. [`Analyzing`] does the same a piece at a time.
pub fn analyze(
    trace: &Trace,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<CommReport, CommError> {
    let mut analyzing = Analyzing::new(usize::MAX);
    loop {
        if let Some(r) = analyzing.step(trace, progress)? {
            return Ok(r);
        }
    }
}

#[cfg(test)]
mod tests;
