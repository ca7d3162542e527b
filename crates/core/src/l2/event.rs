//! One L2 request as an observer sees it ([`crate::sim::Observer::on_l2`]): which slice,
//! whether it hit, what it evicted and why the L1 sent it, so that explain can say who
//! brought a line into its slice ("missed in the L1, hit in L2 slice 17: SM 3 brought the
//! line in at request 812").

use crate::cache::MissClass;
use serde::Serialize;

/// Why an L1 request sent something to the L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum L2Cause {
    /// The sectors a read (or a partial write that allocates) fetched.
    Fetch,
    /// A store under write-through (or with the L1 bypassed).
    WriteThrough,
    /// The dirty sectors of the line the request's fill evicted from its L1.
    WriteBack,
    /// An L1's dirty line written back at the end of the run.
    Flush,
    /// A store of the timing model, whose L1 takes loads only: it goes on to the L2 without
    /// being an L1 request (an observer is told of no request for it).
    Store,
}

impl L2Cause {
    /// In words: "a fetch", "a write-through", ...
    pub fn words(self) -> &'static str {
        match self {
            L2Cause::Fetch => "a fetch",
            L2Cause::WriteThrough => "a store written through",
            L2Cause::WriteBack => "the write-back of a line its fill evicted from the L1",
            L2Cause::Flush => "the L1's final write-back",
            L2Cause::Store => "a store, which the L1 of the timing model passes on",
        }
    }
}

/// One L2 request: the L2 line (byte address / the L2's line size) in `slice`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Event {
    pub slice: u32,
    /// The L2 line.
    pub line: u64,
    /// Its set within the slice.
    pub set: u32,
    pub write: bool,
    /// The line and every sector it needs were in the slice.
    pub hit: bool,
    /// The requested sectors that were not there (or not readable).
    pub missing: u32,
    pub class: Option<MissClass>,
    /// The L2 line its allocation evicted from the slice.
    pub evicted: Option<u64>,
    pub cause: L2Cause,
}
