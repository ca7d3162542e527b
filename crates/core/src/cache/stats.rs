//! Cache statistics: the counters every report shows, per SM, per instruction and per CTA.

use serde::{Deserialize, Serialize};

/// Why a request missed (Dinero IV's three Cs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MissClass {
    Compulsory,
    Capacity,
    Conflict,
}

impl MissClass {
    pub fn name(self) -> &'static str {
        match self {
            MissClass::Compulsory => "compulsory",
            MissClass::Capacity => "capacity",
            MissClass::Conflict => "conflict",
        }
    }
}

/// Misses by class. `latency` and `mshr` are only non-zero in timing mode (Nugteren et al. 2014 §6.1):
/// misses because the line was still in flight, and because MSHR stalls changed the order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissClasses {
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
    pub latency: u64,
    pub mshr: u64,
}

impl MissClasses {
    pub fn total(&self) -> u64 {
        self.compulsory + self.capacity + self.conflict + self.latency + self.mshr
    }

    pub fn add(&mut self, o: &MissClasses) {
        self.compulsory += o.compulsory;
        self.capacity += o.capacity;
        self.conflict += o.conflict;
        self.latency += o.latency;
        self.mshr += o.mshr;
    }
}

/// The statistics of a set of requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Thread-level memory accesses that reached the L1 (before coalescing).
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub hits: u64,
    pub misses: u64,
    pub read_misses: u64,
    pub write_misses: u64,
    /// Dirty lines written back when they were evicted.
    pub writebacks: u64,
    pub bytes_from_memory: u64,
    /// Write-through stores, writebacks of evicted lines and the final flush.
    pub bytes_to_memory: u64,
    /// Dirty lines still in the cache at the end of the run, written back then (Dinero IV's
    /// final copy-back); only SM rows and totals have them.
    pub flush_writebacks: u64,
    /// The bytes of those lines (also counted in `bytes_to_memory`).
    pub flush_bytes_to_memory: u64,
    pub requests: u64,
    pub transactions: u64,
    pub miss_classes: MissClasses,
}

impl Counters {
    /// Records one request's outcome.
    #[inline]
    pub fn record(&mut self, write: bool, o: &super::Outcome) {
        self.count(write, o.hit, o.class);
        self.writebacks += o.writeback as u64;
        self.bytes_from_memory += o.bytes_from_memory;
        self.bytes_to_memory += o.bytes_to_memory;
    }

    /// Records one request's read or write, hit or miss, and miss class (not its traffic).
    /// Without a branch on any of them: on a trace of many misses they follow no pattern the
    /// processor could predict.
    #[inline]
    pub fn count(&mut self, write: bool, hit: bool, class: Option<MissClass>) {
        let (w, m) = (write as u64, !hit as u64);
        self.requests += 1;
        self.writes += w;
        self.reads += 1 - w;
        self.hits += 1 - m;
        self.misses += m;
        self.write_misses += w & m;
        self.read_misses += (1 - w) & m;
        let c = &mut self.miss_classes;
        c.compulsory += (class == Some(MissClass::Compulsory)) as u64;
        c.capacity += (class == Some(MissClass::Capacity)) as u64;
        c.conflict += (class == Some(MissClass::Conflict)) as u64;
    }

    pub fn add(&mut self, o: &Counters) {
        self.accesses += o.accesses;
        self.reads += o.reads;
        self.writes += o.writes;
        self.hits += o.hits;
        self.misses += o.misses;
        self.read_misses += o.read_misses;
        self.write_misses += o.write_misses;
        self.writebacks += o.writebacks;
        self.bytes_from_memory += o.bytes_from_memory;
        self.bytes_to_memory += o.bytes_to_memory;
        self.flush_writebacks += o.flush_writebacks;
        self.flush_bytes_to_memory += o.flush_bytes_to_memory;
        self.requests += o.requests;
        self.transactions += o.transactions;
        self.miss_classes.add(&o.miss_classes);
    }

    /// Misses per request (0 when there were no requests).
    pub fn miss_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.misses as f64 / self.requests as f64
        }
    }
}
