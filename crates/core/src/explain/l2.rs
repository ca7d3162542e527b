//! The L2's part of an explanation: where the request's line went below the L1 (which slice
//! and set), whether it hit there, and who brought it into that slice or evicted it from it,
//! whatever SM that was ("missed in the L1, hit in L2 slice 17: request 812 on SM 3 brought
//! the line in").

use serde::Serialize;

use super::follow::Names;
use super::Use;
use crate::cache::MissClass;
use crate::l2::{L2Cause, L2Event};
use crate::sim::RequestEvent;

/// What the target request's line met in the L2.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InL2 {
    pub slice: u32,
    /// Its set within the slice.
    pub set: u32,
    /// The line and every sector the request needs were in the slice.
    pub hit: bool,
    pub class: Option<MissClass>,
    /// Why the L1 sent it (a fetch or a store written through).
    pub cause: L2Cause,
    /// The request, on any SM, whose L2 request last brought the line (or sectors of it)
    /// into the slice before this one (none for a store of the timing model, which is no
    /// L1 request: then `brought_in_as` says so).
    pub brought_in_by: Option<Use>,
    /// Why that request went to the L2.
    pub brought_in_as: Option<L2Cause>,
    /// L2 requests to the line since it was brought in, before this one.
    pub uses_since: u64,
    /// The request whose L2 request evicted the line from the slice after it was brought in.
    pub evicted_by: Option<Use>,
    /// A store of the timing model (no L1 request) evicted it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub evicted_by_store: bool,
}

/// Follows the target's L2 line(s) over every SM's L2 requests up to the target.
pub(super) struct L2Follow {
    /// The target's L2 lines (an L1 line may span several smaller L2 lines).
    lines: std::ops::RangeInclusive<u64>,
    /// The last L2 request that brought the target's line in: after which request, by
    /// which (none for a store of the timing model, [`L2Cause::Store`]), and why.
    brought_in: Option<(u64, Option<RequestEvent>, L2Cause)>,
    uses_since: u64,
    evicted: Option<(u64, Option<RequestEvent>)>,
    /// The target's own L2 requests.
    target: Vec<L2Event>,
}

impl L2Follow {
    /// For the L1 line `line` of `l1_line_bytes` behind an L2 of `l2_line_bytes` lines.
    pub fn new(line: u64, l1_line_bytes: u64, l2_line_bytes: u64) -> Self {
        let (a, b) = (l1_line_bytes.max(1), l2_line_bytes.max(1));
        L2Follow {
            lines: line * a / b..=((line + 1) * a - 1) / b,
            brought_in: None,
            uses_since: 0,
            evicted: None,
            target: Vec::new(),
        }
    }

    /// An L2 request made by request `i` (`by`: `(i, request)`), or after it by a store of
    /// the timing model ([`L2Cause::Store`], which may come before any request: `by` none);
    /// `n` is the target's number.
    pub fn step(&mut self, by: Option<(u64, &RequestEvent)>, n: u64, e: &L2Event) {
        let i = by.map_or(0, |b| b.0);
        let store = e.cause == L2Cause::Store;
        if e.cause == L2Cause::Flush || i > n || (by.is_none() && !store) {
            return;
        }
        let ours = self.lines.contains(&e.line);
        if by.is_some() && i == n {
            // The target's own requests (a store after it comes later).
            if ours && e.cause != L2Cause::WriteBack && !store {
                self.target.push(*e);
            }
            return;
        }
        let who = by.filter(|_| !store).map(|b| *b.1);
        if e.evicted.is_some_and(|l| self.lines.contains(&l)) {
            self.evicted = Some((i, who));
        }
        if !ours {
            return;
        }
        if e.missing != 0 {
            self.brought_in = Some((i, who, e.cause));
            self.uses_since = 0;
            self.evicted = None;
        } else {
            self.uses_since += 1;
        }
    }

    /// What the target met, if it went to the L2 (an L1 hit that writes nothing does not).
    pub fn finish(self, names: &Names) -> Option<InL2> {
        let first = *self.target.first()?;
        let hit = self.target.iter().all(|e| e.hit);
        Some(InL2 {
            slice: first.slice,
            set: first.set,
            hit,
            class: self.target.iter().find_map(|e| e.class),
            cause: first.cause,
            brought_in_by: self
                .brought_in
                .and_then(|(i, by, _)| Some(names.use_of(i, &by?))),
            brought_in_as: self.brought_in.map(|(_, _, how)| how),
            uses_since: self.uses_since,
            evicted_by: self.evicted.and_then(|(i, by)| Some(names.use_of(i, &by?))),
            evicted_by_store: self.evicted.is_some_and(|(_, by)| by.is_none()),
        })
    }
}

/// The story's paragraph on the L2.
pub(super) fn words(l2: &InL2) -> String {
    let on = |u: &Use| format!("{} on SM {}", super::words::who(u), u.sm);
    let store = l2.cause == L2Cause::WriteThrough;
    let went = format!(
        "It went on to L2 slice {}, set {}{}",
        l2.slice,
        l2.set,
        if store {
            ", a store written through"
        } else {
            ""
        }
    );
    // A store of the timing model is no L1 request: it has no number to name.
    let a_store = "a store of a warp (no L1 request: the timing model's L1 takes loads only)";
    let brought_by = match (&l2.brought_in_by, l2.brought_in_as) {
        (Some(u), _) => Some(on(u)),
        (None, Some(L2Cause::Store)) => Some(a_store.to_string()),
        _ => None,
    };
    let evicted_by = match &l2.evicted_by {
        Some(u) => Some(on(u)),
        None if l2.evicted_by_store => Some(a_store.to_string()),
        None => None,
    };
    let brought = |by: &str| {
        let how = l2.brought_in_as.unwrap_or(L2Cause::Fetch);
        let since = match l2.uses_since {
            0 => String::new(),
            1 => ", and 1 other L2 request used it since".to_string(),
            n => format!(", and {n} other L2 requests used it since"),
        };
        format!(
            "{by} brought the line into that slice ({}){since}",
            how.words()
        )
    };
    let class = l2
        .class
        .map_or(String::new(), |c| format!(" ({} in the slice)", c.name()));
    let missed = if store {
        format!("where its line was not{class}: the store allocates it without reading DRAM, and the slice writes it back when it leaves")
    } else {
        format!("where it missed{class} and read DRAM")
    };
    match (&brought_by, &evicted_by) {
        (Some(b), _) if l2.hit => format!("{went}, where it hit: {}.", brought(b)),
        _ if l2.hit => format!("{went}, where it hit."),
        (_, Some(ev)) => format!("{went}, {missed}: {ev} had evicted the line from the slice."),
        (Some(b), None) => format!(
            "{went}, {missed}, though {}: a sector it needs was not there, or only written in part.",
            brought(b)
        ),
        (None, None) => format!("{went}, {missed}: no SM had brought the line into the L2 before."),
    }
}
