//! The hardware check: Warpscope's coalescer and L1 model against counters measured on a GPU.
//!
//! `hw/kernels.cu` holds the built-in kernels in CUDA with exactly the generators' index
//! arithmetic; `hw/run.sh` runs each case of `hw/cases.txt` on a GPU under Nsight Compute and
//! writes one CSV row per case with the L1 counters (`docs/hardware.md`). Here each case is
//! generated again and simulated with a preset on every SM, and the two are put side by side:
//! - requests (warp-level global load or store instructions that reached the L1: what the
//!   counters call a request) and sectors (32-byte sectors those requests touched) depend only
//!   on the addresses and the coalescer, so they must be equal;
//! - load sector hits depend on the scheduling, the replacement policy and the capacity, so
//!   their difference is reported, not required to be zero.
//!
//! A user's own kernels are checked the same way (`trace_check.rs`): their trace beside
//! Nsight Compute's raw CSV of the same launches ([`ncu`]), launch by launch, with the
//! sectors the L1 read from the L2 and, where the report has them, the L2's sectors and hits.
//!
//! Reading the CSVs is in [`counters`] and [`ncu`] (feature `tables`); everything else is pure.

#[cfg(feature = "tables")]
pub mod counters;
#[cfg(feature = "tables")]
pub mod ncu;
mod trace_check;

pub use trace_check::{check_trace, FillCounts, L2Check, L2Counts, LaunchCheck, MeasuredLaunch};

use crate::config::{Coalescing, SimConfig, SmSelection};
use crate::sim::{self, SimError};
use crate::trace::{AccessKind, Kernel};
use serde::Serialize;

/// The sector size of the L1 counters.
pub const SECTOR_BYTES: u32 = 32;

/// What the L1 saw of one kind of global access (loads or stores) in one case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// Warp instructions with at least one active thread.
    pub requests: u64,
    /// 32-byte sectors those instructions touched, counted once per instruction.
    pub sectors: u64,
    /// Sectors found in the L1 (`None` where the side gives none).
    pub sector_hits: Option<u64>,
}

impl OpCounts {
    /// Sector hits per sector, in percent (`None` without hits or sectors).
    pub fn hit_rate_pct(&self) -> Option<f64> {
        match self.sector_hits {
            Some(h) if self.sectors > 0 => Some(100.0 * h as f64 / self.sectors as f64),
            _ => None,
        }
    }
}

/// Loads and stores of one case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CaseCounts {
    pub load: OpCounts,
    pub store: OpCounts,
}

/// One case measured and simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseCheck {
    /// The case as in `hw/cases.txt`: `NAME key=value...`.
    pub case: String,
    pub measured: CaseCounts,
    pub simulated: CaseCounts,
}

impl CaseCheck {
    /// Requests and sectors equal for loads and for stores.
    pub fn counts_agree(&self) -> bool {
        let (m, s) = (&self.measured, &self.simulated);
        (
            m.load.requests,
            m.load.sectors,
            m.store.requests,
            m.store.sectors,
        ) == (
            s.load.requests,
            s.load.sectors,
            s.store.requests,
            s.store.sectors,
        )
    }

    /// Simulated minus measured load sector hit rate, in percentage points.
    pub fn load_hit_rate_difference(&self) -> Option<f64> {
        Some(self.simulated.load.hit_rate_pct()? - self.measured.load.hit_rate_pct()?)
    }

    /// Simulated minus measured store sector hit rate, in points (`None` without stores).
    pub fn store_hit_rate_difference(&self) -> Option<f64> {
        Some(self.simulated.store.hit_rate_pct()? - self.measured.store.hit_rate_pct()?)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("case `{case}`: {message}")]
    Case { case: String, message: String },
    #[error("case `{case}`")]
    Sim {
        case: String,
        #[source]
        source: SimError,
    },
}

/// Splits a case line into the kernel name and its `key=value` parameters.
pub fn parse_case(case: &str) -> Result<(String, Vec<(String, String)>), CheckError> {
    let words: Vec<String> = case.split_whitespace().map(String::from).collect();
    let Some((name, params)) = words.split_first() else {
        return Err(CheckError::Case {
            case: case.into(),
            message: "empty: expected `NAME key=value...`".into(),
        });
    };
    let pairs = crate::gen::parse_pairs(params).map_err(|message| CheckError::Case {
        case: case.into(),
        message,
    })?;
    Ok((name.clone(), pairs))
}

/// The configuration a case is simulated with: `cfg` with every SM simulated, as on the GPU
/// (and no reuse distances, which the check does not use).
pub fn for_check(mut cfg: SimConfig) -> SimConfig {
    cfg.gpu.simulate = SmSelection::All;
    cfg.reuse = crate::config::ReuseMode::Off;
    cfg
}

/// Generates `case` and simulates it under `cfg`: requests and sectors from the scheduler and
/// the coalescer, load sector hits from the whole pipeline ([`sim::run`]).
pub fn simulate_case(case: &str, cfg: &SimConfig) -> Result<CaseCounts, CheckError> {
    let (name, pairs) = parse_case(case)?;
    let trace = crate::gen::generate(&name, &pairs).map_err(|e| CheckError::Case {
        case: case.into(),
        message: e.to_string(),
    })?;
    let sim_err = |source| CheckError::Sim {
        case: case.into(),
        source,
    };
    cfg.validate().map_err(|e| sim_err(e.into()))?;
    if cfg.cache.sector_bytes != SECTOR_BYTES || cfg.coalescing != Coalescing::Sector {
        return Err(CheckError::Case {
            case: case.into(),
            message: format!(
                "the counters count {SECTOR_BYTES}-byte sectors: simulate with per-line sector \
                 coalescing and {SECTOR_BYTES}-byte sectors (presets volta, ampere, hopper)"
            ),
        });
    }
    let mut counts = CaseCounts::default();
    for k in &trace.kernels {
        coalesced_counts(k, cfg, &mut counts).map_err(sim_err)?;
    }
    let mut stores = StoreHits::default();
    let report = sim::run(cfg, &trace, &mut stores).map_err(sim_err)?;
    // A read fetches only the sectors it asked for that were missing (`bytes_from_memory`);
    // every other sector it asked for was a hit. Each instruction of the generated kernels is
    // all loads or all stores.
    let sector_bytes = cfg.cache.sector_bytes.max(1) as u64;
    let (mut sectors, mut fetched) = (0, 0);
    for row in report.instructions.iter().filter(|r| r.counters.reads > 0) {
        sectors += row.counters.transactions;
        fetched += row.counters.bytes_from_memory / sector_bytes;
    }
    counts.load.sector_hits = Some(sectors.saturating_sub(fetched));
    counts.store.sector_hits = Some(stores.0.iter().sum());
    Ok(counts)
}

/// The sectors of the store requests that hit, per kernel, as the counters count a store
/// lookup: under `wtwa` a store hits on its line's tag, and each of its sectors is then a hit.
#[derive(Default)]
pub(crate) struct StoreHits(pub Vec<u64>);

impl StoreHits {
    /// Kernel `k`'s store sector hits.
    pub fn of(&self, k: usize) -> u64 {
        self.0.get(k).copied().unwrap_or(0)
    }
}

impl sim::Observer for StoreHits {
    fn on_request(&mut self, e: &sim::RequestEvent) {
        if e.write && e.hit {
            let k = e.kernel as usize;
            if self.0.len() <= k {
                self.0.resize(k + 1, 0);
            }
            self.0[k] += e.sectors.count_ones() as u64;
        }
    }
}

/// Adds the warp instructions of `k` and the sectors they touch, through the scheduler and
/// the coalescer of `cfg` (one request per instruction, whatever its lines).
pub(crate) fn coalesced_counts(
    k: &Kernel,
    cfg: &SimConfig,
    counts: &mut CaseCounts,
) -> Result<(), SimError> {
    sim::each_warp_request(k, cfg, |rows, out| {
        let first = rows
            .iter()
            .map(|&r| k.access(r as usize).kind)
            .find(|kind| *kind != AccessKind::Barrier);
        let op = match first {
            Some(AccessKind::Store) => &mut counts.store,
            _ => &mut counts.load,
        };
        op.requests += 1;
        op.sectors += out.iter().map(|c| c.transactions as u64).sum::<u64>();
    })
}

/// Checks every measured case against its simulation under `cfg` (see [`for_check`]).
pub fn check(
    measured: &[(String, CaseCounts)],
    cfg: &SimConfig,
) -> Result<Vec<CaseCheck>, CheckError> {
    measured
        .iter()
        .map(|(case, m)| {
            Ok(CaseCheck {
                case: case.clone(),
                measured: *m,
                simulated: simulate_case(case, cfg)?,
            })
        })
        .collect()
}
