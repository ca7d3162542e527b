//! An explanation in plain words: the rule behind its class, each replacement policy's
//! reason for a victim, and the whole story a paragraph at a time.

use super::{Explanation, Resident, Use, Why};
use crate::config::Replacement;

fn kind(u: &Use) -> &'static str {
    if u.write {
        "store"
    } else {
        "load"
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "request 12 (load, instruction ld.a, warp 1 of CTA 0, cycle 40)".
pub fn who(u: &Use) -> String {
    let time = u.time.map_or(String::new(), |t| format!(", cycle {t}"));
    format!(
        "request {} ({}, instruction {}, warp {} of CTA {}{time})",
        u.request,
        kind(u),
        u.inst_name,
        u.warp,
        u.cta
    )
}

fn requests(list: impl Iterator<Item = u64>) -> String {
    let v: Vec<String> = list.map(|r| r.to_string()).collect();
    v.join(", ")
}

/// Why `policy` gave up `victim`, the set holding `residents` (least recently used first).
pub fn policy_reason(
    policy: Replacement,
    victim: u64,
    residents: &[Resident],
    ways: u32,
    line_bytes: u32,
) -> String {
    let others = || residents.iter().filter(|r| r.line != victim);
    let Some(v) = residents.iter().find(|r| r.line == victim) else {
        return format!("{} chose it", policy_name(policy));
    };
    if ways == 1 {
        return "a direct-mapped set holds one line, so any other line of the set evicts it".into();
    }
    match policy {
        Replacement::Lru => format!(
            "LRU gives up the least recently used line of a full set: this line was last used by request {}, and the set's other {} were used after it (last by requests {})",
            v.last_use,
            plural(others().count() as u64, "line", "lines"),
            requests(others().map(|r| r.last_use))
        ),
        Replacement::Fifo => {
            let mut o: Vec<&Resident> = others().collect();
            o.sort_by_key(|r| r.filled_by);
            format!(
                "FIFO gives up the line that came in first: this line came in with request {}, before the set's other lines (in with requests {})",
                v.filled_by,
                requests(o.iter().map(|r| r.filled_by))
            )
        }
        Replacement::Lfu | Replacement::Mfu => {
            let (rule, least) = if policy == Replacement::Lfu {
                ("LFU gives up the line used least", "fewest")
            } else {
                ("MFU gives up the line used most", "most")
            };
            format!(
                "{rule} since it came in (on a tie, the one in first): this line had {} since request {}, the {least}; the set's other lines had {}",
                plural(v.uses, "use", "uses"),
                v.filled_by,
                requests(others().map(|r| r.uses))
            )
        }
        Replacement::Random => format!(
            "random replacement draws a way from the seeded generator: it drew this line's way, one of {ways}"
        ),
        Replacement::Plru => {
            let lru = residents.first();
            let lru_says = match lru {
                Some(l) if l.line != victim => format!(
                    "; true LRU would have given up line {:#x} instead (last used by request {}, before this line's request {})",
                    l.line * line_bytes as u64, l.last_use, v.last_use
                ),
                _ => "; true LRU would have given up the same line".to_string(),
            };
            format!("tree-PLRU follows its tree's bits, set on each use to point away from the way used, down to a way: they led to this line's way{lru_says}")
        }
    }
}

fn policy_name(p: Replacement) -> String {
    crate::config::choice::name_of(&p)
}

/// The rule that gave the request its class, with its evidence.
pub fn rule(e: &Explanation) -> String {
    let c = &e.cache;
    let since = e.reuse.map_or(String::new(), |r| {
        format!(
            "; {} and {} of its set were used since its previous use",
            plural(r.lines, "other line", "other lines"),
            r.set_lines
        )
    });
    match e.why {
        Why::Hit if c.timing => format!(
            "a hit: the line was in its set's LRU stack at distance {}, below the {} ways",
            e.reuse.and_then(|r| r.stack_distance).unwrap_or(0),
            c.ways
        ),
        Why::Hit => "a hit: the line and every sector it needs were in the cache".into(),
        Why::Compulsory if c.timing => "compulsory: even with no latency its line would not have been in its set's stack: nothing had brought it in before".into(),
        Why::Compulsory => "compulsory: a sector it needs had never been asked for before (first touch), so no cache could have held it".into(),
        Why::Capacity => format!(
            "capacity: a fully associative cache of the same size ({} lines, same policy) would have missed too{since}",
            c.lines
        ),
        Why::Conflict => format!(
            "conflict: a fully associative cache of the same size ({} lines, same policy) would have hit, but its set has only {} ways{since}",
            c.lines, c.ways
        ),
        Why::Latency if e.flight.is_some() => "latency: its line had been asked for but had not arrived; with no latency it would have been in the set's stack".into(),
        // Nugteren et al.'s rule counts every request whose line is not in the stack with
        // latencies but is without them; a first use can be one, as the warps' order changes.
        Why::Latency => "latency: with no latency the warps run in another order and an earlier request would already have brought the line into the set's stack; with latencies this request was the first to ask for it".into(),
        Why::Mshr => "MSHR: with unlimited MSHRs it would have hit; waiting for a free MSHR changed the order of the requests".into(),
        Why::Bypassed => "bypassed: the L1 caches no global data (l1-bypass on, as GPGPU-Sim's -gpgpu_gmem_skip_L1D or nvcc -Xptxas -dlcm=cg), so every request goes on to the level below and none can hit".into(),
    }
}

/// The explanation as paragraphs: what, previous use, distance, eviction, timing, class,
/// counterfactuals.
pub fn story(e: &Explanation) -> Vec<String> {
    let r = &e.request;
    let c = &e.cache;
    let mut out = vec![what(e)];
    out.push(match &e.previous {
        None => "First touch: no earlier request on this SM used this line.".into(),
        Some(p) => format!(
            "Its line was last used by {}, which {}.",
            who(p),
            if p.hit { "hit" } else { "missed" }
        ),
    });
    if let Some(u) = e.reuse {
        let stack = u.stack_distance.map_or(String::new(), |d| {
            format!(" In the timing model its distance in the set's LRU stack was {d}.")
        });
        out.push(format!(
            "Since then {} were used in the whole cache, which holds {}, and {} in its set {}, which holds {}.{stack}",
            plural(u.lines, "other line", "other lines"),
            plural(c.lines, "line", "lines"),
            u.set_lines,
            r.set,
            plural(c.ways as u64, "line", "lines"),
        ));
    }
    out.extend(why_gone(e));
    if let Some(f) = &e.flight {
        let t = r.time.unwrap_or(0);
        out.push(format!(
            "The line was still on its way: {} had missed and asked for it, and it arrives at cycle {}; this request came {} early.",
            who(&f.fetched_by),
            f.arrives_at,
            plural(f.arrives_at.saturating_sub(t), "cycle", "cycles")
        ));
    }
    if e.refused > 0 {
        out.push(format!(
            "It was refused {} because no MSHR was free; each time its warp went to the back of the queue.",
            plural(e.refused as u64, "time", "times")
        ));
    }
    out.push(format!("{}.", capitalize(&e.rule)));
    if let Some(l2) = &e.l2 {
        out.push(super::l2::words(l2));
    }
    if !e.counterfactuals.is_empty() {
        let v: Vec<String> = e
            .counterfactuals
            .iter()
            .map(|k| match k.hit {
                Some(true) => format!("with {} it would have hit", k.change),
                Some(false) => format!("with {} it would still have missed", k.change),
                None => format!("with {} it would not have been issued", k.change),
            })
            .collect();
        out.push(format!("{}.", capitalize(&v.join("; "))));
    }
    out
}

/// The story's first paragraph: the request, where it comes from, the accesses coalesced into
/// it, its line (and sectors) and set.
fn what(e: &Explanation) -> String {
    let r = &e.request;
    let c = &e.cache;
    let a = &e.asked;
    let coalesced: Vec<&super::Access> = a.accesses.iter().filter(|x| x.in_line).collect();
    let threads = if a.accesses.is_empty() {
        String::new()
    } else {
        let shown: Vec<String> = coalesced
            .iter()
            .take(4)
            .map(|x| format!("thread {} at {:#x}", x.thread, x.address))
            .collect();
        let more = coalesced.len().saturating_sub(4);
        format!(
            " {} of its warp instruction's {} coalesced into it ({}{}).",
            coalesced.len(),
            plural(a.accesses.len() as u64, "access", "accesses"),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    let sectors = if c.sector_bytes < c.line_bytes {
        format!(
            ", sector{} {}",
            if a.sectors.len() == 1 { "" } else { "s" },
            a.sectors
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    format!(
        "Request {} is a {} of kernel {} on SM {}: instruction {} of warp {} in CTA {}{}.{threads} It asks for line {:#x} ({} bytes{sectors}). {}.",
        r.request,
        kind(r),
        a.kernel_name,
        r.sm,
        r.inst_name,
        r.warp,
        r.cta,
        r.time.map_or(String::new(), |t| format!(", issued at cycle {t}")),
        a.line_address,
        c.line_bytes,
        capitalize(&a.set_index)
    )
}

/// Why the line was not there, if the story knows more than the distance: its eviction, a
/// sector not fetched, or a store that did not bring it in.
fn why_gone(e: &Explanation) -> Option<String> {
    let (r, c) = (&e.request, &e.cache);
    if let Some(ev) = &e.eviction {
        Some(format!("It was evicted by {}: {}.", who(&ev.by), ev.reason))
    } else if e.sector_miss {
        Some("The line was still in the cache, but not every sector this request needs: only the sectors a request asks for are fetched.".into())
    } else if !r.hit && !c.timing && e.previous.as_ref().is_some_and(|p| p.write) {
        use crate::config::choice::Choice;
        let policy = <crate::config::WritePolicy as Choice>::ENTRIES
            .iter()
            .find(|p| p.name == c.write_policy)
            .map_or(c.write_policy.as_str(), |p| p.label);
        Some(format!(
            "The previous use was a store, and under {policy} a store does not bring its line into the cache: the line was never in it since, so no size or associativity would have kept it. Its class is the rule's below, which asks what a fully associative cache of the same size and write policy would have done."
        ))
    } else {
        None
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
