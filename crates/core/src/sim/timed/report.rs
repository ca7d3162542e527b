//! The timing model's report from its runs' results: the five miss classes per kernel,
//! instruction, CTA and SM, the full run's timing statistics and the reuse histograms.

use super::{Runs, TimedPlan};
use crate::cache::{Counters, MissClasses};
use crate::config::Kernels;
use crate::report::{
    Comparison, CtaRow, CtaTable, DistanceCounts, OccupancySample, TimingReport, ValueCount,
};
use crate::reuse::Histogram;
use crate::sim::Report;
use crate::timing::{classify_by, CtaTally, KernelRun, RunCounts, TimingStats, Variant, Written};
use crate::trace::Kernel;

/// The report of the timing model from every run's results.
pub(super) fn report(
    plan: &TimedPlan,
    runs: &Runs,
    full_stats: &[TimingStats],
    fa_hist: &Histogram,
    l2: Option<&crate::l2::L2Model>,
) -> Report {
    let cfg = plan.cfg;
    let mut report = Report::new(cfg, &plan.sms);
    add_kernels(&mut report, plan, runs);
    let (mut timing, set_hist) = add_sms(&mut report, plan, runs, full_stats);
    let totals = |v: Variant| {
        variant(plan, v).map(|i| {
            let mut t = RunCounts::default();
            runs[i].iter().flatten().for_each(|kr| t.add(&kr.counts));
            t
        })
    };
    timing.comparison = Comparison {
        full: totals(Variant::Full).unwrap_or_default(),
        fully_associative: totals(Variant::FullyAssociative),
        zero_latency: totals(Variant::ZeroLatency),
        unlimited_mshrs: totals(Variant::UnlimitedMshrs),
    };
    // Reuse: whole-cache distances from the fully associative run, set distances from the
    // full run (both at issue, in each run's own order).
    // The timing model's stacks give every distance exactly: its reuse is exact in every
    // mode but off.
    if cfg.reuse.is_on() {
        let distinct_lines = timing
            .comparison
            .zero_latency
            .map_or(timing.comparison.full.infinite, |z| z.infinite);
        let whole = if variant(plan, Variant::FullyAssociative).is_some() {
            Some(fa_hist)
        } else {
            (cfg.cache.sets() == 1).then_some(&set_hist)
        };
        if let Some(whole) = whole {
            report.add_histograms(&crate::reuse::ReuseHistograms {
                whole: whole.clone(),
                in_set: set_hist.clone(),
                halves: [whole.clone(), whole.clone()],
                distinct_lines,
            });
        }
    }
    report.timing = Some(timing);
    report.finish(cfg.cache.lines());
    if let Some(l2) = l2 {
        report.add_l2(l2);
    }
    report
}

/// The index of variant `v` among the plan's runs.
fn variant(plan: &TimedPlan, v: Variant) -> Option<usize> {
    plan.variants.iter().position(|&x| x == v)
}

/// The miss classes of each row `get` gives of the runs (one `RunCounts` per row from each
/// variant's runs): the four variants compared, as the rules say; none without the four.
fn classes(
    plan: &TimedPlan,
    runs: &Runs,
    get: &dyn Fn(&[Vec<KernelRun>]) -> Vec<RunCounts>,
) -> Vec<MissClasses> {
    let counts: Vec<Vec<RunCounts>> = plan
        .variants
        .iter()
        .map(|&v| get(&runs[variant(plan, v).unwrap_or(0)]))
        .collect();
    let n = counts[0].len();
    (0..n)
        .map(|i| {
            if plan.variants.len() == 4 {
                classify_by(
                    &plan.t.rules,
                    &counts[0][i],
                    &counts[1][i],
                    &counts[2][i],
                    &counts[3][i],
                )
            } else {
                Default::default()
            }
        })
        .collect()
}

/// Each kernel's instruction and CTA rows (summed over SMs).
fn add_kernels(report: &mut Report, plan: &TimedPlan, runs: &Runs) {
    let line_bytes = plan.cfg.cache.line_bytes as u64;
    let full = &runs[0];
    for (ki, k) in plan.launches.iter().enumerate() {
        let inst_classes = classes(plan, runs, &|r| sum_rows(r, ki, |kr| &kr.per_inst));
        let per_inst = sum_rows(full, ki, |kr| &kr.per_inst);
        let mut insts = vec![Counters::default(); k.instructions.len()];
        for s in full {
            let kr = &s[ki];
            for (i, c) in insts.iter_mut().enumerate() {
                c.accesses += kr.accesses_inst[i];
                c.transactions += kr.transactions_inst[i];
                c.writes += kr.stores_inst[i].0;
                c.bytes_to_memory += kr.stores_inst[i].1;
            }
        }
        for (c, (rc, cl)) in insts.iter_mut().zip(per_inst.iter().zip(&inst_classes)) {
            fill(c, rc, cl, line_bytes);
        }
        let ctas = cta_table(plan, runs, ki, k);
        let warp_insts: u64 = full.iter().map(|s| s[ki].warp_instructions).sum();
        let row = crate::report::KernelRow {
            kernel: ki as u32,
            name: k.name.clone(),
            grid: k.grid,
            block: k.block,
            rows: plan.rows[ki],
            warp_instructions: warp_insts,
        };
        report.add_kernel_rows(row, &k.instructions, &insts, ctas);
    }
}

/// Each simulated SM's miss classes: kernels modelled cold are classified one by one, as the
/// released model does.
fn sm_classes(plan: &TimedPlan, runs: &Runs) -> Vec<MissClasses> {
    if plan.t.rules.kernels == Kernels::Cold {
        let mut per_sm = vec![MissClasses::default(); plan.sms.len()];
        for ki in 0..plan.launches.len() {
            let of_kernel = classes(plan, runs, &|r| r.iter().map(|s| s[ki].counts).collect());
            for (a, b) in per_sm.iter_mut().zip(&of_kernel) {
                a.add(b);
            }
        }
        per_sm
    } else {
        classes(plan, runs, &|r| {
            r.iter()
                .map(|s| {
                    let mut t = RunCounts::default();
                    s.iter().for_each(|kr| t.add(&kr.counts));
                    t
                })
                .collect()
        })
    }
}

/// Each simulated SM's row, and the full runs' timing statistics summed over the SMs (the
/// comparison of the variants is left to the caller); also the set distances' histogram.
fn add_sms(
    report: &mut Report,
    plan: &TimedPlan,
    runs: &Runs,
    full_stats: &[TimingStats],
) -> (TimingReport, Histogram) {
    let line_bytes = plan.cfg.cache.line_bytes as u64;
    let sm_classes = sm_classes(plan, runs);
    let full = &runs[0];
    let mut timing = TimingReport::default();
    let mut sum = StatsSum::default();
    for (slot, &sm) in plan.sms.iter().enumerate() {
        let mut c = Counters::default();
        let mut rc = RunCounts::default();
        for kr in &full[slot] {
            rc.add(&kr.counts);
            c.accesses += kr.accesses_inst.iter().sum::<u64>();
            c.transactions += kr.transactions_inst.iter().sum::<u64>();
            c.writes += kr.stores_inst.iter().map(|s| s.0).sum::<u64>();
            c.bytes_to_memory += kr.stores_inst.iter().map(|s| s.1).sum::<u64>();
        }
        fill(&mut c, &rc, &sm_classes[slot], line_bytes);
        report.add_sm(sm, &c, None);
        let st = &full_stats[slot];
        sum.add(&mut timing, st);
        if slot == 0 {
            timing.mshr_occupancy = st
                .occupancy_series
                .iter()
                .map(|&(time, used)| OccupancySample { time, used })
                .collect();
        }
    }
    timing.set_distance_counts = sum.distance_counts.map(|all| DistanceCounts {
        infinite: all.get(&u64::MAX).copied().unwrap_or(0),
        finite: all
            .iter()
            .filter(|(&d, _)| d != u64::MAX)
            .map(|(&value, &count)| ValueCount { value, count })
            .collect(),
    });
    let issued: u64 = sum.latency_counts.iter().sum();
    let lat_sum: u64 = full_stats.iter().map(|s| s.latency_sum).sum();
    timing.mean_latency = if issued == 0 {
        0.0
    } else {
        (lat_sum as f64 / issued as f64 * 1e3).round() / 1e3
    };
    timing.latency_histogram = sum
        .latency_counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(l, &n)| ValueCount {
            value: l as u64,
            count: n,
        })
        .collect();
    (timing, sum.set_hist)
}

/// The full runs' statistics summed over the SMs, where the report's fields do not hold them
/// as they are summed.
#[derive(Default)]
struct StatsSum {
    latency_counts: Vec<u64>,
    set_hist: Histogram,
    distance_counts: Option<std::collections::BTreeMap<u64, u64>>,
}

impl StatsSum {
    /// Adds one SM's statistics (into `timing` where its fields hold the sum).
    fn add(&mut self, timing: &mut TimingReport, st: &TimingStats) {
        timing.time_steps = timing.time_steps.max(st.time_steps);
        timing.idle_steps += st.idle_steps;
        timing.mshr_stalls += st.mshr_stalls;
        timing.fills += st.fills;
        timing.duplicate_loads += st.duplicates;
        add_counts(&mut self.latency_counts, &st.latency_counts);
        add_counts(&mut timing.mshr_occupancy_histogram, &st.occupancy_counts);
        self.set_hist.merge(&st.set_hist);
        if let Some(dc) = &st.distance_counts {
            let all = self.distance_counts.get_or_insert_with(Default::default);
            for (&d, &n) in dc {
                *all.entry(d).or_insert(0) += n;
            }
        }
    }
}

/// Adds `b` to `a` element by element, `a` grown to `b`'s length.
fn add_counts(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Kernel `ki`'s per-CTA rows, from every run's tallies of its CTAs. CTA `c` ran on SM
/// `c % sms` (the timing model's round-robin), in every run; each run's tallies on an SM are
/// in CTA order, so one pass over the CTAs reads them all back.
fn cta_table(plan: &TimedPlan, runs: &Runs, ki: usize, k: &Kernel) -> CtaTable {
    let n_sms = plan.cfg.gpu.sms.max(1);
    let line_bytes = plan.cfg.cache.line_bytes as u64;
    let classify = plan.variants.len() == 4;
    // Each SM's slot among the simulated ones.
    let mut slot_of = vec![None; n_sms as usize];
    for (slot, &sm) in plan.sms.iter().enumerate() {
        if let Some(s) = slot_of.get_mut(sm as usize) {
            *s = Some(slot);
        }
    }
    let mut readers: Vec<Vec<std::iter::Peekable<Written>>> = runs
        .iter()
        .map(|per_sm| {
            per_sm
                .iter()
                .map(|s| s[ki].ctas.iter().peekable())
                .collect()
        })
        .collect();
    let mut table = CtaTable::default();
    for c in 0..k.num_ctas() {
        let Some(slot) = slot_of[(c % n_sms) as usize] else {
            continue;
        };
        let mut of_run = [CtaTally::default(); 4];
        let mut any = false;
        for (v, per_sm) in readers.iter_mut().enumerate() {
            let r = &mut per_sm[slot];
            if let (Some((_, t)), Some(at)) = (r.next_if(|&(x, _)| x == c), of_run.get_mut(v)) {
                *at = t;
                any = true;
            }
        }
        if !any {
            continue;
        }
        let full = &of_run[0];
        let classes = if classify {
            classify_by(
                &plan.t.rules,
                &of_run[0].counts,
                &of_run[1].counts,
                &of_run[2].counts,
                &of_run[3].counts,
            )
        } else {
            Default::default()
        };
        let mut counters = Counters {
            accesses: full.accesses,
            transactions: full.transactions,
            writes: full.stores,
            bytes_to_memory: full.store_bytes,
            ..Counters::default()
        };
        fill(&mut counters, &full.counts, &classes, line_bytes);
        if let Some(row) = CtaRow::of(ki as u32, k.grid, c, Some(c % n_sms), counters) {
            table.push(&row);
        }
    }
    table
}

fn sum_rows(
    per_sm: &[Vec<KernelRun>],
    ki: usize,
    get: impl Fn(&KernelRun) -> &Vec<RunCounts>,
) -> Vec<RunCounts> {
    let mut out: Vec<RunCounts> = Vec::new();
    for s in per_sm {
        let v = get(&s[ki]);
        if out.len() < v.len() {
            out.resize(v.len(), RunCounts::default());
        }
        for (a, b) in out.iter_mut().zip(v) {
            a.add(b);
        }
    }
    out
}

fn fill(c: &mut Counters, rc: &RunCounts, classes: &MissClasses, line_bytes: u64) {
    c.requests += rc.requests;
    c.reads += rc.requests;
    c.misses += rc.misses;
    c.read_misses += rc.misses;
    c.hits += rc.requests - rc.misses;
    c.bytes_from_memory += rc.fills * line_bytes;
    c.miss_classes = *classes;
}
