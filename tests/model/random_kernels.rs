//! Random kernels for the property tests that compare two ways of simulating one trace
//! (`by_cta.rs`, `partitions.rs`): rows of loads, stores and barriers, some to shared memory.
#![allow(dead_code)]

use proptest::prelude::*;
use warpscope::config::{IssuePolicy, SimConfig};
use warpscope::trace::{Access, AccessKind, Dim3, Kernel, KernelBuilder, MemSpace, Order};

pub type Row = (u32, u32, u32, u64, u16, u8);

pub fn kernel(name: &str, ctas: u32, tpb: u32, warp_order: bool, rows: &[Row]) -> Kernel {
    let order = if warp_order {
        Order::PerWarp
    } else {
        Order::PerThread
    };
    let mut b = KernelBuilder::new(name, Dim3::x(ctas), Dim3::x(tpb), order).unwrap();
    for i in 0..3 {
        b.instruction(&format!("i{i}"), None);
    }
    for &(thread, inst, dyn_inst, addr, size, kind) in rows {
        let kind = [
            AccessKind::Load,
            AccessKind::Store,
            AccessKind::Barrier,
            AccessKind::Load,
        ][kind as usize];
        let space = if kind == AccessKind::Load && addr % 7 == 0 {
            MemSpace::Shared
        } else {
            MemSpace::Global
        };
        let barrier = kind == AccessKind::Barrier;
        b.push(Access {
            thread: thread % (ctas * tpb),
            inst: if barrier { 0 } else { inst },
            dyn_inst: if barrier { 0 } else { dyn_inst },
            addr: if barrier { 0 } else { addr },
            size: if barrier { 0 } else { size },
            kind,
            space,
        })
        .unwrap();
    }
    b.finish()
}

pub fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (0u32..400, 0u32..3, 0u32..4, 0u64..8192, 1u16..40, 0u8..4),
        0..250,
    )
}

/// A small cache (2 KB, 2 ways, so that random kernels evict) on `sms` SMs, with issue
/// policy number `policy` of the five and fetch groups of 2 for the two-level one.
pub fn small_config(
    warp_size: u32,
    policy: usize,
    sms: u32,
    max_ctas: u32,
    reuse: bool,
    seed: u64,
) -> SimConfig {
    let mut cfg = SimConfig::default();
    cfg.cache.size_bytes = 2048;
    cfg.cache.ways = 2;
    cfg.schedule.warp_size = warp_size;
    cfg.schedule.policy = [
        IssuePolicy::RoundRobin,
        IssuePolicy::Sequential,
        IssuePolicy::Random,
        IssuePolicy::Gto,
        IssuePolicy::TwoLevel,
    ][policy];
    cfg.schedule.fetch_group = 2;
    cfg.gpu.sms = sms;
    cfg.gpu.max_ctas_per_sm = max_ctas;
    cfg.reuse = if reuse {
        warpscope::config::ReuseMode::Auto
    } else {
        warpscope::config::ReuseMode::Off
    };
    cfg.seed = seed;
    cfg
}
