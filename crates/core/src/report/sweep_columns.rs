//! The columns of a sweep's table, by name: what the CLI writes (CSV and JSON need no
//! polars) and what `report::sweep` reads back and the app draws.

/// The counters of a sweep row, after its keys, in this order.
pub const METRICS: [&str; 11] = [
    "requests",
    "hits",
    "misses",
    "miss_rate",
    "compulsory",
    "capacity",
    "conflict",
    "transactions",
    "bytes_from_memory",
    "bytes_to_memory",
    "writebacks",
];

/// The L2's counters, after [`METRICS`], in the table of a sweep any of whose points
/// simulates an L2 (empty cells where a point does not).
pub const L2_METRICS: [&str; 6] = [
    "l2_requests",
    "l2_hits",
    "l2_misses",
    "l2_miss_rate",
    "bytes_from_dram",
    "bytes_to_dram",
];

/// Whether column `name` is a counter (of [`METRICS`] or [`L2_METRICS`]), not a key.
pub fn is_metric(name: &str) -> bool {
    METRICS.contains(&name) || L2_METRICS.contains(&name)
}

/// The columns every sweep row starts with: the point's id and its input.
pub const KEYS: [&str; 2] = ["id", "input"];
