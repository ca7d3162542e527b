//! What the L2 counted: per slice, per kernel, per instruction, the traffic on each side and
//! its own reuse distances ([`L2Report`], under `l2` in the JSON report).

use super::L2Model;
use crate::cache::{MissClass, MissClasses, Outcome, Request};
use crate::report::ReuseReport;
use serde::Serialize;

/// The counts of a set of L2 requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L2Counters {
    /// Requests: an L1 fetch, write-through or write-back of one line.
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    /// Requests that found the line and every sector they need.
    pub hits: u64,
    pub misses: u64,
    pub read_misses: u64,
    pub write_misses: u64,
    /// Sectors the requests touched, and those that were not in the slice.
    pub sectors: u64,
    pub sector_misses: u64,
    /// Bytes read from DRAM (missing sectors fetched).
    pub bytes_from_dram: u64,
    /// Bytes written to DRAM (dirty sectors of evicted lines).
    pub bytes_to_dram: u64,
    /// Dirty lines written back when they were evicted.
    pub writebacks: u64,
    /// Misses by Dinero IV's three Cs, against a fully associative LRU cache of one slice's
    /// size fed that slice's requests.
    pub miss_classes: MissClasses,
}

impl L2Counters {
    #[inline]
    pub(super) fn record(&mut self, r: &Request, o: &Outcome) {
        let (w, m) = (r.write as u64, !o.hit as u64);
        self.requests += 1;
        self.writes += w;
        self.reads += 1 - w;
        self.hits += 1 - m;
        self.misses += m;
        self.write_misses += w & m;
        self.read_misses += (1 - w) & m;
        self.sectors += r.sectors.count_ones() as u64;
        self.sector_misses += o.missing.count_ones() as u64;
        self.bytes_from_dram += o.bytes_from_memory;
        self.bytes_to_dram += o.bytes_to_memory;
        self.writebacks += o.writeback as u64;
        let c = &mut self.miss_classes;
        c.compulsory += (o.class == Some(MissClass::Compulsory)) as u64;
        c.capacity += (o.class == Some(MissClass::Capacity)) as u64;
        c.conflict += (o.class == Some(MissClass::Conflict)) as u64;
    }

    pub fn add(&mut self, o: &L2Counters) {
        self.requests += o.requests;
        self.reads += o.reads;
        self.writes += o.writes;
        self.hits += o.hits;
        self.misses += o.misses;
        self.read_misses += o.read_misses;
        self.write_misses += o.write_misses;
        self.sectors += o.sectors;
        self.sector_misses += o.sector_misses;
        self.bytes_from_dram += o.bytes_from_dram;
        self.bytes_to_dram += o.bytes_to_dram;
        self.writebacks += o.writebacks;
        self.miss_classes.add(&o.miss_classes);
    }

    /// Misses per request (0 with none).
    pub fn miss_rate(&self) -> f64 {
        match self.requests {
            0 => 0.0,
            n => (self.misses as f64 / n as f64 * 1e6).round() / 1e6,
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct L2SliceRow {
    pub slice: u32,
    #[serde(flatten)]
    pub counters: L2Counters,
    pub miss_rate: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct L2KernelRow {
    pub kernel: u32,
    pub name: String,
    #[serde(flatten)]
    pub counters: L2Counters,
    pub miss_rate: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct L2InstRow {
    pub kernel: u32,
    pub inst: u32,
    pub name: String,
    #[serde(flatten)]
    pub counters: L2Counters,
    pub miss_rate: f64,
}

/// The L2 of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct L2Report {
    pub slices: u32,
    pub size_bytes: u64,
    /// Totals over the slices (flattened: `requests`, `hits`, `bytes_from_dram`, ...).
    #[serde(flatten)]
    pub totals: L2Counters,
    pub miss_rate: f64,
    /// Bytes the L1s sent down: write-throughs, write-backs and their final write-back.
    pub bytes_l1_to_l2: u64,
    /// Bytes the L2 sent up: the sectors the L1s fetched.
    pub bytes_l2_to_l1: u64,
    /// Bytes of dirty sectors still in the L2 when the run ended (not written to DRAM).
    pub dirty_bytes_at_end: u64,
    /// The L1s' final write-back of their dirty lines, which no instruction issued (also in
    /// the totals and the slices).
    pub l1_flush: L2Counters,
    pub per_slice: Vec<L2SliceRow>,
    pub kernels: Vec<L2KernelRow>,
    pub instructions: Vec<L2InstRow>,
    /// The L2's own reuse distances: distinct L2 lines between two uses of a line, over all
    /// the slices; per set within its slice. Absent when reuse is off.
    pub reuse: Option<ReuseReport>,
    /// Requests and misses per slice over time (the app's heat map; not in the JSON).
    #[serde(skip)]
    pub heat: super::SliceHeat,
}

pub(super) fn build(
    m: &L2Model,
    names: &[String],
    inst_name: impl Fn(u32, u32) -> String,
) -> L2Report {
    let mut totals = L2Counters::default();
    let per_slice = m
        .per_slice
        .iter()
        .enumerate()
        .map(|(i, c)| {
            totals.add(c);
            L2SliceRow {
                slice: i as u32,
                counters: *c,
                miss_rate: c.miss_rate(),
            }
        })
        .collect();
    let mut kernels = Vec::new();
    let mut instructions = Vec::new();
    for (k, insts) in m.per_inst.iter().enumerate() {
        let mut kc = L2Counters::default();
        for (i, c) in insts.iter().enumerate() {
            if c.requests == 0 {
                continue;
            }
            kc.add(c);
            instructions.push(L2InstRow {
                kernel: k as u32,
                inst: i as u32,
                name: inst_name(k as u32, i as u32),
                counters: *c,
                miss_rate: c.miss_rate(),
            });
        }
        if kc.requests > 0 {
            kernels.push(L2KernelRow {
                kernel: k as u32,
                name: names.get(k).cloned().unwrap_or_default(),
                counters: kc,
                miss_rate: kc.miss_rate(),
            });
        }
    }
    let lines = m.cfg.slice.lines() * m.slices.len() as u64;
    L2Report {
        slices: m.slices.len() as u32,
        size_bytes: m.cfg.size_bytes(),
        miss_rate: totals.miss_rate(),
        totals,
        bytes_l1_to_l2: m.bytes_l1_to_l2,
        bytes_l2_to_l1: m.bytes_l2_to_l1,
        dirty_bytes_at_end: m.slices.iter().map(|s| s.dirty_bytes()).sum(),
        l1_flush: m.flush,
        per_slice,
        kernels,
        instructions,
        reuse: m
            .reuse
            .as_ref()
            .map(|r| crate::report::reuse_report(&r.histograms(), lines)),
        heat: m.heat.clone(),
    }
}
