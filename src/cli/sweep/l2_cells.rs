//! A sweep row's L2 counters (`report::sweep_columns::L2_METRICS`), where its point
//! simulated an L2: from the report, as CSV cells, as the table's columns and back.

#[cfg(feature = "tables")]
use anyhow::Result;
use serde::Serialize;
#[cfg(feature = "tables")]
use warpscope::report::sweep_columns::L2_METRICS;
use warpscope::sim::Report;

#[cfg(feature = "tables")]
use super::Row;

/// A sweep row's L2 counters, in the order of `report::sweep::L2_METRICS`.
#[derive(Clone, Copy, Serialize)]
pub(super) struct L2Cells {
    l2_requests: u64,
    l2_hits: u64,
    l2_misses: u64,
    l2_miss_rate: f64,
    bytes_from_dram: u64,
    bytes_to_dram: u64,
}

impl L2Cells {
    pub(super) fn of(r: &Report) -> Option<Self> {
        let t = &r.l2.as_ref()?.totals;
        Some(L2Cells {
            l2_requests: t.requests,
            l2_hits: t.hits,
            l2_misses: t.misses,
            l2_miss_rate: r.l2.as_ref()?.miss_rate,
            bytes_from_dram: t.bytes_from_dram,
            bytes_to_dram: t.bytes_to_dram,
        })
    }

    /// Its cells as text, the miss rate fourth (as the CSV writes them).
    pub(super) fn texts(&self) -> [String; 6] {
        [
            self.l2_requests.to_string(),
            self.l2_hits.to_string(),
            self.l2_misses.to_string(),
            self.l2_miss_rate.to_string(),
            self.bytes_from_dram.to_string(),
            self.bytes_to_dram.to_string(),
        ]
    }
}

/// The L2's columns of `rows` (`L2_METRICS`), empty (null) where a row has none.
#[cfg(feature = "tables")]
pub(super) fn l2_columns(rows: &[Row]) -> Vec<polars::prelude::Column> {
    use polars::prelude::Column;
    let count = |f: fn(&L2Cells) -> u64| -> Vec<Option<u64>> {
        rows.iter().map(|r| r.l2.as_ref().map(f)).collect()
    };
    let rate: Vec<Option<f64>> = rows
        .iter()
        .map(|r| r.l2.as_ref().map(|c| c.l2_miss_rate))
        .collect();
    vec![
        Column::new(L2_METRICS[0].into(), count(|c| c.l2_requests)),
        Column::new(L2_METRICS[1].into(), count(|c| c.l2_hits)),
        Column::new(L2_METRICS[2].into(), count(|c| c.l2_misses)),
        Column::new(L2_METRICS[3].into(), rate),
        Column::new(L2_METRICS[4].into(), count(|c| c.bytes_from_dram)),
        Column::new(L2_METRICS[5].into(), count(|c| c.bytes_to_dram)),
    ]
}

/// The L2's cells of each row of a sweep table (none where the table has no L2 columns or
/// the row's are empty).
#[cfg(feature = "tables")]
pub(super) fn l2_cells(df: &polars::prelude::DataFrame) -> Result<Vec<Option<L2Cells>>> {
    if df.column(L2_METRICS[0]).is_err() {
        return Ok(vec![None; df.height()]);
    }
    let count = |c: &str| -> Result<Vec<Option<u64>>> {
        let s = df.column(c)?.as_materialized_series().clone();
        Ok(s.u64()?.iter().collect())
    };
    let [requests, hits, misses] = [0, 1, 2].map(|i| count(L2_METRICS[i]));
    let (requests, hits, misses) = (requests?, hits?, misses?);
    let (from, to) = (count(L2_METRICS[4])?, count(L2_METRICS[5])?);
    let rate = df.column(L2_METRICS[3])?.as_materialized_series().clone();
    let rate: Vec<Option<f64>> = rate.f64()?.iter().collect();
    Ok((0..df.height())
        .map(|i| {
            Some(L2Cells {
                l2_requests: requests[i]?,
                l2_hits: hits[i]?,
                l2_misses: misses[i]?,
                l2_miss_rate: rate[i]?,
                bytes_from_dram: from[i]?,
                bytes_to_dram: to[i]?,
            })
        })
        .collect())
}
