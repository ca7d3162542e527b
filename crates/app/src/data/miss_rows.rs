//! The rows of the miss view's tables (per instruction, per CTA, per source line), built on
//! the worker with the rest of a run's [`SimData`] so that the view only sorts and draws them
//! (the per-CTA rows are kept compact and each made when asked for, `cta_rows.rs`).

use std::borrow::Cow;

use super::cta_rows::CtaRows;
use super::{inst_label, ClassSplit, Classes, Outcome, SimData};
use warpscope_core::cache::{Counters, MissClasses};
use warpscope_core::report::CtaRow;

/// Which table the miss view shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Per {
    #[default]
    Instruction,
    Cta,
    /// Per source line, for traces with line info (Accel-Sim `-lineinfo`).
    SourceLine,
}

/// The three tables of a run, in report order, and the run's classes for reads and writes.
#[derive(Clone, Debug, Default)]
pub struct MissTables {
    pub instruction: Vec<MissRow>,
    /// One row per CTA: kept compact, each row made when asked for.
    pub cta: CtaRows,
    pub source_line: Vec<MissRow>,
    /// Every request's classes, for reads and for writes.
    pub totals: ClassCounts,
}

impl MissTables {
    /// The tables of `d`, each CTA row's classes looked up by `cta_classes` (without
    /// timing; the timing model's rows have their classes).
    pub fn new(d: &SimData, cta_classes: &dyn Fn(&CtaRow) -> Classes) -> Self {
        let mut totals = ClassCounts::default();
        if d.config.timing.is_some() {
            totals = ClassCounts::from_classes(&d.report.totals.miss_classes);
        } else {
            for s in &d.per_inst {
                let c = ClassCounts::from_split(s);
                for k in 0..5 {
                    totals.reads[k] += c.reads[k];
                    totals.writes[k] += c.writes[k];
                }
            }
        }
        let several = d.kernels.len() > 1;
        let timing = d.config.timing.is_some();
        MissTables {
            instruction: instruction_rows(d),
            cta: CtaRows::new(&d.report.ctas, several, timing, cta_classes),
            source_line: source_line_rows(d),
            totals,
        }
    }
    /// The rows of one table.
    pub fn len(&self, per: Per) -> usize {
        match per {
            Per::Instruction => self.instruction.len(),
            Per::Cta => self.cta.len(),
            Per::SourceLine => self.source_line.len(),
        }
    }
    /// Row `i` of one table.
    pub fn row(&self, per: Per, i: usize) -> Option<Cow<'_, MissRow>> {
        match per {
            Per::Instruction => self.instruction.get(i).map(Cow::Borrowed),
            Per::Cta => self.cta.row(i).map(Cow::Owned),
            Per::SourceLine => self.source_line.get(i).map(Cow::Borrowed),
        }
    }
    /// Row `i`'s requests and misses (what a table sorts by).
    pub fn counts(&self, per: Per, i: usize) -> (u64, u64) {
        match per {
            Per::Cta => self.cta.counts(i),
            _ => self.row(per, i).map_or((0, 0), |r| (r.requests, r.misses)),
        }
    }
    /// Every row of one table, made.
    #[cfg(test)]
    pub fn rows(&self, per: Per) -> Vec<MissRow> {
        (0..self.len(per))
            .filter_map(|i| self.row(per, i).map(Cow::into_owned))
            .collect()
    }
}

/// Misses per class column, for reads and for writes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClassCounts {
    pub reads: [u64; 5],
    pub writes: [u64; 5],
}

impl ClassCounts {
    /// From the per-request split (no timing): the three classes of each request.
    fn from_split(s: &ClassSplit) -> Self {
        let of = |w| {
            [
                s.get(w, Outcome::Compulsory),
                s.get(w, Outcome::Capacity),
                s.get(w, Outcome::Conflict),
                0,
                0,
            ]
        };
        ClassCounts {
            reads: of(false),
            writes: of(true),
        }
    }
    /// From a CTA's misses by class (no timing).
    pub(super) fn from_cta(c: &Classes) -> Self {
        let of = |w: usize| [c[w][0], c[w][1], c[w][2], 0, 0];
        ClassCounts {
            reads: of(0),
            writes: of(1),
        }
    }
    /// From the report's classes (timing): every request is a load, so all are reads.
    fn from_classes(c: &MissClasses) -> Self {
        ClassCounts {
            reads: [c.compulsory, c.capacity, c.conflict, c.latency, c.mshr],
            writes: [0; 5],
        }
    }
}

/// A table row: label, requests, misses, classes, stores that bypassed the L1, and the
/// Nsight-Compute-like measures of its traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct MissRow {
    pub label: String,
    /// The instruction (kernel, id) of a per-instruction row.
    pub inst: Option<(u16, u32)>,
    pub requests: u64,
    pub misses: u64,
    pub classes: ClassCounts,
    pub bypassed: u64,
    /// Thread accesses served, and memory transactions (sectors or segments) made.
    pub accesses: u64,
    pub transactions: u64,
    /// Bytes brought into the L1 (from L2 / memory) and sent out of it.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl MissRow {
    pub fn rate(&self) -> f64 {
        self.misses as f64 / self.requests.max(1) as f64
    }
    /// Thread accesses per request: how well the warp's accesses coalesced (32 for a warp
    /// of 4-byte accesses to one 128-byte line).
    pub fn accesses_per_request(&self) -> f64 {
        self.accesses as f64 / self.requests.max(1) as f64
    }
    /// Memory transactions (sectors with sectored lines) per request.
    pub fn transactions_per_request(&self) -> f64 {
        self.transactions as f64 / self.requests.max(1) as f64
    }
}

/// A row of counters `c`, its classes from `classes` without timing.
pub(super) fn row(
    timing: bool,
    label: String,
    c: &Counters,
    classes: impl FnOnce() -> ClassCounts,
) -> MissRow {
    MissRow {
        label,
        inst: None,
        requests: c.requests,
        misses: c.misses,
        classes: if timing {
            ClassCounts::from_classes(&c.miss_classes)
        } else {
            classes()
        },
        bypassed: if timing { c.writes } else { 0 },
        accesses: c.accesses,
        transactions: c.transactions,
        bytes_in: c.bytes_from_memory,
        bytes_out: c.bytes_to_memory,
    }
}

/// Each instruction's requests by read/write and outcome ([`SimData::per_inst`]).
fn split_of(d: &SimData, i: usize) -> ClassSplit {
    d.per_inst.get(i).copied().unwrap_or_default()
}

/// The rows of the per-instruction table, in report order.
fn instruction_rows(d: &SimData) -> Vec<MissRow> {
    let several = d.kernels.len() > 1;
    let timing = d.config.timing.is_some();
    d.report
        .instructions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut label = inst_label(several, r.kernel, &r.name);
            if let Some(l) = r.line {
                label.push_str(&format!(" (line {l})"));
            }
            MissRow {
                inst: Some((r.kernel.min(u16::MAX as u32) as u16, r.inst)),
                ..row(timing, label, &r.counters, || {
                    ClassCounts::from_split(&split_of(d, i))
                })
            }
        })
        .collect()
}

/// The rows of the per-source-line table, in report order.
fn source_line_rows(d: &SimData) -> Vec<MissRow> {
    let timing = d.config.timing.is_some();
    let names: std::collections::BTreeSet<&str> = d
        .report
        .source_lines
        .iter()
        .map(|l| l.kernel_name.as_str())
        .collect();
    let kernel_name = |k: u32| {
        d.report
            .kernels
            .iter()
            .find(|r| r.kernel == k)
            .map_or("", |r| r.name.as_str())
    };
    d.report
        .source_lines
        .iter()
        .map(|l| {
            // The line's classes: the sum of its instructions' (over every launch).
            let mut sum = ClassSplit::default();
            for (i, r) in d.report.instructions.iter().enumerate() {
                if r.line == Some(l.line) && kernel_name(r.kernel) == l.kernel_name {
                    let s = split_of(d, i);
                    for (a, b) in sum.counts.iter_mut().zip(s.counts) {
                        for (x, y) in a.iter_mut().zip(b) {
                            *x += y;
                        }
                    }
                }
            }
            let label = if names.len() > 1 {
                format!(
                    "{} line {}",
                    warpscope_core::sim::short_name(&l.kernel_name, 24),
                    l.line
                )
            } else {
                format!("line {}", l.line)
            };
            row(timing, label, &l.counters, || ClassCounts::from_split(&sum))
        })
        .collect()
}
