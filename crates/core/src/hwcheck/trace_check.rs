//! A user's own trace beside the counters Nsight Compute measured for the same launches
//! (`warpscope hwcheck --ncu REPORT --trace TRACE`): launch `i` of the report is kernel `i`
//! of the trace (their blocks and grids must agree), simulated on every SM with the whole
//! trace in order, so that each launch finds the caches as the ones before left them.

use super::{coalesced_counts, CaseCounts, CheckError, SECTOR_BYTES};
use crate::config::{Coalescing, SimConfig};
use crate::sim;
use crate::trace::{Dim3, Trace};
use serde::Serialize;

/// The L2's sectors asked for by the L1s, and those it found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L2Counts {
    pub sectors: u64,
    pub sector_hits: u64,
}

/// One launch as the report gives it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeasuredLaunch {
    /// Its line in the report.
    pub line: usize,
    /// Its kernel's name as the report gives it (a demangled signature).
    pub name: String,
    pub block: Option<Dim3>,
    pub grid: Option<Dim3>,
    pub counts: CaseCounts,
    /// Sectors the L1 read from the L2 (`None`: not in the report).
    pub l1_fill_sectors: Option<u64>,
    /// The L2's counts (`None`: not in the report).
    pub l2: Option<L2Counts>,
}

/// The sectors the L1 read from the L2, measured and simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FillCounts {
    pub measured: Option<u64>,
    pub simulated: u64,
}

/// The L2 of a launch, measured (where the report has it) and simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct L2Check {
    pub measured: Option<L2Counts>,
    pub simulated: L2Counts,
}

/// One launch of the trace beside its row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchCheck {
    pub launch: u32,
    /// The trace's name for it, and the report's.
    pub kernel: String,
    pub measured_name: String,
    pub measured: CaseCounts,
    pub simulated: CaseCounts,
    pub l1_fill_sectors: FillCounts,
    /// `None` when the simulation had no L2 (a configuration without one).
    pub l2: Option<L2Check>,
}

impl LaunchCheck {
    /// Requests and sectors equal for loads and for stores.
    pub fn counts_agree(&self) -> bool {
        super::CaseCheck {
            case: String::new(),
            measured: self.measured,
            simulated: self.simulated,
        }
        .counts_agree()
    }
}

/// Simulates `trace` under `cfg` (every SM: [`super::for_check`]) and puts each of its
/// kernels beside launch `i` of `measured`.
pub fn check_trace(
    measured: &[MeasuredLaunch],
    trace: &Trace,
    cfg: &SimConfig,
) -> Result<Vec<LaunchCheck>, CheckError> {
    let whole = |message: String| CheckError::Case {
        case: "the trace".into(),
        message,
    };
    if measured.len() != trace.kernels.len() {
        return Err(whole(format!(
            "the report has {} launches and the trace {} kernels: they must be the same launches, in order",
            measured.len(),
            trace.kernels.len()
        )));
    }
    cfg.validate().map_err(|e| whole(e.to_string()))?;
    if cfg.cache.sector_bytes != SECTOR_BYTES || cfg.coalescing != Coalescing::Sector {
        return Err(whole(format!(
            "the counters count {SECTOR_BYTES}-byte sectors: simulate with per-line sector \
             coalescing and {SECTOR_BYTES}-byte sectors (presets volta, ampere, hopper)"
        )));
    }
    for (i, (m, k)) in measured.iter().zip(&trace.kernels).enumerate() {
        let differs = |what: &str, report: Option<Dim3>, ours: Dim3| {
            match report {
            Some(r) if r != ours => Some(format!(
                "launch {i} (line {} of the report): its {what} is ({r}) there and ({ours}) in the trace's kernel `{}`",
                m.line, k.name
            )),
            _ => None,
        }
        };
        if let Some(message) =
            differs("block", m.block, k.block).or_else(|| differs("grid", m.grid, k.grid))
        {
            return Err(whole(message));
        }
    }
    let sim_err = |source| CheckError::Sim {
        case: "the trace".into(),
        source,
    };
    let mut stores = super::StoreHits::default();
    let report = sim::run(cfg, trace, &mut stores).map_err(sim_err)?;
    let sector = cfg.cache.sector_bytes.max(1) as u64;
    let mut out = Vec::with_capacity(measured.len());
    for (i, (m, k)) in measured.iter().zip(&trace.kernels).enumerate() {
        let mut counts = CaseCounts::default();
        coalesced_counts(k, cfg, &mut counts).map_err(sim_err)?;
        // A read fetches only its missing sectors: the others it asked for were hits.
        let (mut sectors, mut fetched) = (0, 0);
        for row in report
            .instructions
            .iter()
            .filter(|r| r.kernel == i as u32 && r.counters.reads > 0)
        {
            sectors += row.counters.transactions;
            fetched += row.counters.bytes_from_memory / sector;
        }
        counts.load.sector_hits = Some(sectors.saturating_sub(fetched));
        counts.store.sector_hits = Some(stores.of(i));
        let l2 = report.l2.as_ref().map(|l2| {
            let c = l2
                .kernels
                .iter()
                .find(|r| r.kernel == i as u32)
                .map(|r| r.counters)
                .unwrap_or_default();
            L2Check {
                measured: m.l2,
                simulated: L2Counts {
                    sectors: c.sectors,
                    sector_hits: c.sectors - c.sector_misses,
                },
            }
        });
        out.push(LaunchCheck {
            launch: i as u32,
            kernel: k.name.clone(),
            measured_name: m.name.clone(),
            measured: m.counts,
            simulated: counts,
            l1_fill_sectors: FillCounts {
                measured: m.l1_fill_sectors,
                simulated: fetched,
            },
            l2,
        });
    }
    Ok(out)
}
