//! The result of a simulation: totals, per-SM, per-kernel, per-instruction and per-CTA
//! tables, and reuse-distance histograms with the miss-rate curve. Serialises to the JSON
//! schema of `docs/cli.md`.
//!
//! Both shells write it the same way: the readable text ([`text`]) and JSON ([`json`]) the
//! CLI prints, and every file export behind one [`Exporter`] trait ([`export`](mod@export): text,
//! JSON, and with the `tables` feature the summary tables as CSV or Parquet, [`tables`]),
//! chosen by the file name's extension. The per-request table, written while a run goes,
//! is `sim::RequestExporter` (an observer of the run, so it lives in `sim`).

mod cta_counters;
pub mod cta_table;
pub mod export;
pub mod json;
#[cfg(feature = "tables")]
pub mod sweep;
pub mod sweep_columns;
#[cfg(feature = "tables")]
pub mod tables;
pub mod text;
mod text_l2;

pub(crate) use cta_counters::CtaCounters;
#[cfg(test)]
pub(crate) use cta_counters::{set_test_window, WINDOW_CTAS};
pub use cta_table::{CtaTable, RowAt};
pub use export::{export, export_extensions, exporter_for, exporters, ExportError, Exporter};

use crate::cache::Counters;
use crate::config::SimConfig;
use crate::reuse::{Histogram, LogBin, ReuseHistograms, ReuseMeter};
use crate::timing::RunCounts;
use crate::trace::{Dim3, Instruction, Kernel};
use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// Totals over all simulated SMs (flattened: `reads`, `misses`, `miss_classes`, ...).
    #[serde(flatten)]
    pub totals: Counters,
    pub miss_rate: f64,
    pub warp_instructions: u64,
    pub simulated_sms: Vec<u32>,
    pub config: SimConfig,
    pub sms: Vec<SmRow>,
    pub kernels: Vec<KernelRow>,
    pub instructions: Vec<InstRow>,
    /// The instruction rows summed per source line, for traces that say which line each
    /// instruction came from (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_lines: Vec<SourceLineRow>,
    /// Per-CTA rows, held compactly ([`CtaTable`]).
    pub ctas: CtaTable,
    /// Present when reuse tracking is on.
    pub reuse: Option<ReuseReport>,
    /// Present in timing mode.
    pub timing: Option<TimingReport>,
    /// The shared L2, when it was simulated (`SimConfig::l2_simulated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<crate::l2::L2Report>,
    #[serde(skip)]
    whole: Histogram,
    #[serde(skip)]
    in_set: Histogram,
    /// Two independent halves of a sample's whole-cache histogram (both equal to `whole`
    /// where exact): their difference is the estimated error.
    #[serde(skip)]
    halves: [Histogram; 2],
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SmRow {
    pub sm: u32,
    #[serde(flatten)]
    pub counters: Counters,
    pub miss_rate: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct KernelRow {
    pub kernel: u32,
    pub name: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub rows: u64,
    pub warp_instructions: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct InstRow {
    pub kernel: u32,
    pub inst: u32,
    pub name: String,
    /// The source line the instruction was compiled from, where the trace says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(flatten)]
    pub counters: Counters,
    pub miss_rate: f64,
}

/// One source line of one kernel: every launch's requests of the instructions compiled
/// from it. The tracer names no file, so a line is a line of the kernel's source file.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SourceLineRow {
    pub kernel_name: String,
    pub line: u32,
    /// Static memory instructions of the line that reached the cache (e.g. `LDG.E@0090`).
    pub instructions: Vec<String>,
    #[serde(flatten)]
    pub counters: Counters,
    pub miss_rate: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CtaRow {
    pub kernel: u32,
    pub cta: Dim3,
    pub sm: Option<u32>,
    #[serde(flatten)]
    pub counters: Counters,
    pub miss_rate: f64,
}

impl CtaRow {
    /// The row of CTA `cta` (linear) of launch `kernel` of grid `grid`, run on `sm`; none for a
    /// CTA that made no request and no write (the table lists the CTAs that did something).
    pub(crate) fn of(
        kernel: u32,
        grid: Dim3,
        cta: u32,
        sm: Option<u32>,
        counters: Counters,
    ) -> Option<CtaRow> {
        (counters.requests > 0 || counters.writes > 0).then(|| CtaRow {
            kernel,
            cta: grid.from_linear(cta as u64),
            sm,
            counters,
            miss_rate: rate(&counters),
        })
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ReuseReport {
    /// How the distances were measured: `exact`, or `sampled` (SHARDS, Waldspurger et al.
    /// 2015: the lines a hash chose, each of their uses counted `1 / sampling_rate` times).
    pub method: ReuseMethod,
    /// The fraction of the lines sampled (the lowest of the simulated SMs'); 1 when exact.
    pub sampling_rate: f64,
    /// The estimated mean absolute error of the miss-rate curve's miss rates (half the mean
    /// difference between the curves of two independent halves of the sample); 0 when exact.
    pub expected_error: f64,
    /// Reuses per log2 bin of the whole-cache distance.
    pub histogram: Vec<LogBin>,
    /// Reuses per log2 bin of the distance within the line's set.
    pub set_histogram: Vec<LogBin>,
    /// First uses (distance ∞).
    pub infinite: u64,
    pub distinct_lines: u64,
    /// Misses of a fully associative LRU cache for capacities 1, 2, 4, ... and the cache's own.
    pub miss_rate_curve: Vec<CurvePoint>,
}

/// How reuse distances were measured.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReuseMethod {
    Exact,
    Sampled,
}

impl ReuseMethod {
    pub fn name(self) -> &'static str {
        match self {
            ReuseMethod::Exact => "exact",
            ReuseMethod::Sampled => "sampled",
        }
    }
}

/// What the timing model adds (totals over the simulated SMs of the full run).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TimingReport {
    /// Time steps the longest-running SM took (one warp instruction per step).
    pub time_steps: u64,
    /// Steps in which no warp could issue (all waiting for data or at barriers).
    pub idle_steps: u64,
    /// Issue attempts cancelled because no MSHR was free (warp stalls).
    pub mshr_stalls: u64,
    /// Lines fetched from memory (misses that took a new MSHR).
    pub fills: u64,
    /// Misses that found their line in flight for another warp: duplicate loads, which ride
    /// on that warp's fetch (transaction merging, Dasgupta 2011 §3.2.4).
    pub duplicate_loads: u64,
    /// Mean steps from issue to effect over all load requests.
    pub mean_latency: f64,
    /// Requests per latency (steps from issue to effect).
    pub latency_histogram: Vec<ValueCount>,
    /// Issue steps per number of MSHRs in use after the step (index = MSHRs).
    pub mshr_occupancy_histogram: Vec<u64>,
    /// MSHRs in use over time on the first simulated SM (evenly spaced samples).
    pub mshr_occupancy: Vec<OccupancySample>,
    /// Totals of the full run and of the comparison runs behind the miss classes.
    pub comparison: Comparison,
    /// Requests per exact set-stack distance at issue in the full run, as the released model
    /// of Nugteren et al. (2014) prints them (with its class rule only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_distance_counts: Option<DistanceCounts>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DistanceCounts {
    pub finite: Vec<ValueCount>,
    pub infinite: u64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct ValueCount {
    pub value: u64,
    pub count: u64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct OccupancySample {
    pub time: u64,
    pub used: u32,
}

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Comparison {
    pub full: RunCounts,
    pub fully_associative: Option<RunCounts>,
    pub zero_latency: Option<RunCounts>,
    pub unlimited_mshrs: Option<RunCounts>,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct CurvePoint {
    pub lines: u64,
    pub misses: u64,
    pub miss_rate: f64,
}

/// The reuse report of histograms `h` for a cache of `cache_lines` lines: the log2 bins, the
/// miss-rate curve at every power of two up to the longest distance and at the cache's size,
/// the method and, when sampled, the expected error (half the mean gap between the curves of
/// the two halves of the sample).
pub(crate) fn reuse_report(h: &ReuseHistograms, cache_lines: u64) -> ReuseReport {
    let whole = &h.whole;
    let mut caps: Vec<u64> = std::iter::successors(Some(1u64), |c| Some(c * 2))
        .take_while(|&c| c <= whole.span())
        .collect();
    caps.push(cache_lines);
    caps.sort_unstable();
    caps.dedup();
    let sampled = whole.is_sampled();
    let expected_error = if sampled {
        let [a, b] = &h.halves;
        let gap: f64 = caps
            .iter()
            .map(|&c| (miss_rate_at(a, c) - miss_rate_at(b, c)).abs())
            .sum();
        (gap / (2 * caps.len()) as f64 * 1e6).round() / 1e6
    } else {
        0.0
    };
    ReuseReport {
        method: if sampled {
            ReuseMethod::Sampled
        } else {
            ReuseMethod::Exact
        },
        sampling_rate: match sampled {
            true => 1.0 / (1u64 << whole.far_bits) as f64,
            false => 1.0,
        },
        expected_error,
        histogram: whole.log2_bins(),
        set_histogram: h.in_set.log2_bins(),
        infinite: whole.infinite,
        distinct_lines: h.distinct_lines,
        miss_rate_curve: caps
            .into_iter()
            .map(|lines| CurvePoint {
                lines,
                misses: whole.misses_at(lines),
                miss_rate: (miss_rate_at(whole, lines) * 1e6).round() / 1e6,
            })
            .collect(),
    }
}

fn rate(c: &Counters) -> f64 {
    (c.miss_rate() * 1e6).round() / 1e6
}

impl Report {
    pub(crate) fn new(cfg: &SimConfig, sms: &[u32]) -> Self {
        Report {
            totals: Counters::default(),
            miss_rate: 0.0,
            warp_instructions: 0,
            simulated_sms: sms.to_vec(),
            config: cfg.clone(),
            sms: Vec::new(),
            kernels: Vec::new(),
            instructions: Vec::new(),
            source_lines: Vec::new(),
            ctas: CtaTable::default(),
            reuse: None,
            timing: None,
            l2: None,
            whole: Histogram::default(),
            in_set: Histogram::default(),
            halves: Default::default(),
        }
    }

    /// The report of a run still going, for a preview: the totals counted so far (a front end
    /// counts them from the requests it is shown); no tables or reuse histograms yet.
    pub fn in_progress(cfg: &SimConfig, sms: &[u32], totals: Counters) -> Self {
        let mut r = Report::new(cfg, sms);
        r.totals = totals;
        r.finish(cfg.cache.lines());
        r
    }

    /// Adds the row of a whole kernel `k` (launch `ki`), its per-instruction counters and
    /// its per-CTA rows.
    pub(crate) fn add_whole_kernel(
        &mut self,
        k: &Kernel,
        ki: u32,
        warp_instructions: u64,
        insts: &[Counters],
        ctas: CtaTable,
    ) {
        let row = KernelRow {
            kernel: ki,
            name: k.name.clone(),
            grid: k.grid,
            block: k.block,
            rows: k.len() as u64,
            warp_instructions,
        };
        self.add_kernel_rows(row, &k.instructions, insts, ctas);
    }

    /// Adds one kernel's row and its per-instruction and per-CTA counters (CTA `i` of the
    /// grid is `ctas[i]`).
    pub(crate) fn add_kernel(
        &mut self,
        row: KernelRow,
        instructions: &[Instruction],
        insts: &[Counters],
        ctas: &[Counters],
        cta_sm: impl Fn(u32) -> Option<u32>,
    ) {
        let table = ctas
            .iter()
            .enumerate()
            .filter_map(|(i, c)| CtaRow::of(row.kernel, row.grid, i as u32, cta_sm(i as u32), *c))
            .collect();
        self.add_kernel_rows(row, instructions, insts, table);
    }

    /// Adds one kernel's row, its per-instruction counters and its per-CTA rows.
    pub(crate) fn add_kernel_rows(
        &mut self,
        row: KernelRow,
        instructions: &[Instruction],
        insts: &[Counters],
        ctas: CtaTable,
    ) {
        self.warp_instructions += row.warp_instructions;
        let ki = row.kernel as usize;
        self.kernels.push(row);
        // A row for everything that reached the L1, and for stores that went past it (the
        // timing model's bypassed stores have writes but no requests).
        for (i, c) in insts.iter().enumerate() {
            if c.requests > 0 || c.writes > 0 {
                self.instructions.push(InstRow {
                    kernel: ki as u32,
                    inst: i as u32,
                    name: instructions[i].name.clone(),
                    line: instructions[i].line,
                    counters: *c,
                    miss_rate: rate(c),
                });
            }
        }
        self.ctas.append(ctas);
    }

    pub(crate) fn add_sm(&mut self, sm: u32, c: &Counters, reuse: Option<&ReuseMeter>) {
        self.totals.add(c);
        self.sms.push(SmRow {
            sm,
            counters: *c,
            miss_rate: rate(c),
        });
        if let Some(r) = reuse {
            self.add_histograms(&r.histograms());
        }
    }

    /// Adds one SM's reuse histograms.
    pub(crate) fn add_histograms(&mut self, h: &ReuseHistograms) {
        self.whole.merge(&h.whole);
        self.in_set.merge(&h.in_set);
        for (mine, theirs) in self.halves.iter_mut().zip(&h.halves) {
            mine.merge(theirs);
        }
        let rep = self.reuse.get_or_insert(ReuseReport {
            method: ReuseMethod::Exact,
            sampling_rate: 1.0,
            expected_error: 0.0,
            histogram: vec![],
            set_histogram: vec![],
            infinite: 0,
            distinct_lines: 0,
            miss_rate_curve: vec![],
        });
        rep.distinct_lines += h.distinct_lines;
    }

    pub(crate) fn finish(&mut self, cache_lines: u64) {
        self.miss_rate = rate(&self.totals);
        self.source_lines = source_lines(&self.kernels, &self.instructions);
        if let Some(rep) = &mut self.reuse {
            let h = ReuseHistograms {
                whole: std::mem::take(&mut self.whole),
                in_set: std::mem::take(&mut self.in_set),
                halves: std::mem::take(&mut self.halves),
                distinct_lines: rep.distinct_lines,
            };
            *rep = reuse_report(&h, cache_lines);
            self.whole = h.whole;
            self.in_set = h.in_set;
            self.halves = h.halves;
        }
    }

    /// Combines the reports of sessions that each simulated some of the SMs of one
    /// configuration on the same trace ([`crate::sim::Session::for_sms`], [`crate::sim::partition_sms`])
    /// into the report of one session simulating them all: equal to it field for field
    /// (`tests/model/partitions.rs`). The shells run the parts on separate cores. Refused when the
    /// parts are of different configurations, kernels or SMs that overlap, or of the timing
    /// model (whose SMs share a clock).
    pub fn merge(parts: Vec<Report>) -> Result<Report, String> {
        let mut parts = parts.into_iter();
        let Some(mut out) = parts.next() else {
            return Err("no reports to merge".into());
        };
        for p in parts {
            out.absorb(p)?;
        }
        out.sms.sort_by_key(|r| r.sm);
        out.simulated_sms.sort_unstable();
        out.instructions.sort_by_key(|r| (r.kernel, r.inst));
        let grids: Vec<crate::trace::Dim3> = out.kernels.iter().map(|k| k.grid).collect();
        out.ctas.sort_by_key(|r| {
            let linear = grids.get(r.kernel as usize).map_or(0, |g| g.linear(r.cta));
            (r.kernel, linear)
        });
        out.finish(out.config.cache.lines());
        Ok(out)
    }

    /// Adds the report of another part of the same run (see [`Report::merge`]).
    fn absorb(&mut self, p: Report) -> Result<(), String> {
        if p.config != self.config {
            return Err("the parts were simulated with different configurations".into());
        }
        if self.timing.is_some() || p.timing.is_some() {
            return Err("the timing model's SMs share a clock: its runs cannot be split".into());
        }
        let same_kernels = p.kernels.len() == self.kernels.len()
            && p.kernels.iter().zip(&self.kernels).all(|(a, b)| {
                (a.kernel, &a.name, a.grid, a.block, a.rows)
                    == (b.kernel, &b.name, b.grid, b.block, b.rows)
            });
        if !same_kernels {
            return Err("the parts were simulated on different traces".into());
        }
        if let Some(sm) = p
            .simulated_sms
            .iter()
            .find(|s| self.simulated_sms.contains(s))
        {
            return Err(format!("SM {sm} was simulated in two parts"));
        }
        if self.l2.is_some() || p.l2.is_some() {
            return Err("the L2 sees every SM: its run cannot be split".into());
        }
        self.simulated_sms.extend(&p.simulated_sms);
        self.totals.add(&p.totals);
        self.warp_instructions += p.warp_instructions;
        self.sms.extend(p.sms);
        for (k, pk) in self.kernels.iter_mut().zip(&p.kernels) {
            k.warp_instructions += pk.warp_instructions;
        }
        let mut at: std::collections::HashMap<(u32, u32), usize> = self
            .instructions
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.kernel, r.inst), i))
            .collect();
        for r in p.instructions {
            match at.get(&(r.kernel, r.inst)) {
                Some(&i) => {
                    let q = &mut self.instructions[i];
                    q.counters.add(&r.counters);
                    q.miss_rate = rate(&q.counters);
                }
                None => {
                    at.insert((r.kernel, r.inst), self.instructions.len());
                    self.instructions.push(r);
                }
            }
        }
        // A CTA runs on one SM, so it has requests in one part only.
        self.ctas.append(p.ctas);
        self.whole.merge(&p.whole);
        self.in_set.merge(&p.in_set);
        for (mine, theirs) in self.halves.iter_mut().zip(&p.halves) {
            mine.merge(theirs);
        }
        match (&mut self.reuse, p.reuse) {
            (Some(mine), Some(theirs)) => mine.distinct_lines += theirs.distinct_lines,
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        Ok(())
    }

    /// The exact whole-cache reuse histogram (all simulated SMs).
    pub fn reuse_histogram(&self) -> &Histogram {
        &self.whole
    }

    /// The L2's report, its kernels and instructions named as this report's (once
    /// finished).
    pub fn add_l2(&mut self, l2: &crate::l2::L2Model) {
        let names: Vec<String> = self.kernels.iter().map(|k| k.name.clone()).collect();
        let rows = &self.instructions;
        self.l2 = Some(l2.report(&names, |k, i| {
            rows.iter()
                .find(|r| r.kernel == k && r.inst == i)
                .map(|r| r.name.clone())
                .unwrap_or_default()
        }));
    }
}

/// `name` cut to `max_chars` characters, the last one an ellipsis (mangled C++ kernel names
/// are long; tables show them in a column).
pub fn short_name(name: &str, max_chars: usize) -> String {
    if name.chars().count() <= max_chars {
        return name.to_string();
    }
    let mut s: String = name.chars().take(max_chars.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Sums the instruction rows that carry a source line per (kernel name, line), kernels in
/// the order of their first launch and lines in increasing order.
fn source_lines(kernels: &[KernelRow], insts: &[InstRow]) -> Vec<SourceLineRow> {
    let mut first_launch: Vec<(&str, usize)> = Vec::new();
    let mut rows: std::collections::BTreeMap<(usize, u32), SourceLineRow> = Default::default();
    for r in insts {
        let Some(line) = r.line else { continue };
        let name = kernels
            .iter()
            .find(|k| k.kernel == r.kernel)
            .map_or("", |k| k.name.as_str());
        let order = match first_launch.iter().find(|(n, _)| *n == name) {
            Some(&(_, o)) => o,
            None => {
                first_launch.push((name, first_launch.len()));
                first_launch.len() - 1
            }
        };
        let row = rows.entry((order, line)).or_insert_with(|| SourceLineRow {
            kernel_name: name.to_string(),
            line,
            instructions: Vec::new(),
            counters: Counters::default(),
            miss_rate: 0.0,
        });
        row.counters.add(&r.counters);
        if !row.instructions.contains(&r.name) {
            row.instructions.push(r.name.clone());
        }
    }
    rows.into_values()
        .map(|mut r| {
            r.miss_rate = rate(&r.counters);
            r
        })
        .collect()
}

/// The miss rate of a fully associative LRU cache of `lines` lines, by histogram `h`.
fn miss_rate_at(h: &Histogram, lines: u64) -> f64 {
    h.misses_at(lines) as f64 / h.total().max(1) as f64
}
