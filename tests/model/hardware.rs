//! The hardware check against the committed H100 measurements (hw/h100/, docs/hardware.md):
//! the requests and sectors Nsight Compute counted for every case must equal what the
//! scheduler and the coalescer make of the generated kernel, and the load sector hit rates of
//! the `hopper` preset must stay as close to the measured ones as they are now.

#![cfg(feature = "tables")]

use std::path::Path;
use warpscope::config::preset;
use warpscope::hwcheck::{self, counters};

fn measured() -> Vec<(String, hwcheck::CaseCounts)> {
    counters::read(Path::new("hw/h100/counters.csv")).expect("the committed counters read")
}

#[test]
fn every_measured_case_has_the_simulated_requests_and_sectors() {
    let m = measured();
    let cases: Vec<String> = std::fs::read_to_string("hw/cases.txt")
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    // The committed run measured every case of hw/cases.txt, in its order.
    assert_eq!(m.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(), cases);
    let cfg = hwcheck::for_check(preset("hopper").unwrap());
    let checks = hwcheck::check(&m, &cfg).unwrap();
    for c in &checks {
        assert!(
            c.counts_agree(),
            "{}: measured {:?}, simulated {:?}",
            c.case,
            c.measured,
            c.simulated
        );
        // Loads of every kernel reach the L1; the strided read is the only kernel without stores.
        assert!(c.measured.load.requests > 0, "{}", c.case);
        let d = c.load_hit_rate_difference().unwrap();
        assert!(
            d.abs() < 0.5,
            "{}: load sector hit rate off by {d:.2} points",
            c.case
        );
    }
    assert_eq!(checks.len(), 28);
}

#[test]
fn a_preset_without_32_byte_sectors_is_refused() {
    let m = measured();
    let cfg = hwcheck::for_check(preset("fermi-16k").unwrap());
    let e = hwcheck::check(&m[..1], &cfg).unwrap_err().to_string();
    assert!(e.contains("32-byte sectors") && e.contains("vecadd"), "{e}");
}

#[test]
fn one_sector_more_or_less_is_a_difference() {
    let cfg = hwcheck::for_check(preset("hopper").unwrap());
    let mut m: Vec<_> = measured().into_iter().take(3).collect();
    m[1].1.store.sectors += 1;
    m[2].1.load.requests -= 1;
    let checks = hwcheck::check(&m, &cfg).unwrap();
    let agree: Vec<bool> = checks.iter().map(|c| c.counts_agree()).collect();
    assert_eq!(agree, [true, false, false]);
}
