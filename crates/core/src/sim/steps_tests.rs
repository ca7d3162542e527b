use std::path::PathBuf;

use super::*;
use crate::cache::CacheModel;
use crate::config::{preset, L2Config, SmSelection};
use crate::l2::L2Event;
use crate::sim::{run_kernels, RequestEvent};
use crate::trace::{Columns, Trace};

/// Every event an observer is given, in order.
#[derive(Debug, Default, PartialEq)]
struct Record {
    kernels: Vec<(u32, String)>,
    events: Vec<Event>,
}

#[derive(Debug, PartialEq)]
enum Event {
    Request(RequestEvent),
    After(RequestEvent, String),
    Warp(Vec<(u64, u32, u32)>),
    L2(L2Event),
}

impl Observer for Record {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.kernels.push((kernel, header.name.clone()));
    }
    fn on_request(&mut self, e: &RequestEvent) {
        self.events.push(Event::Request(*e));
    }
    fn on_warp_instruction(&mut self, cols: &Columns, rows: &[u32]) {
        // The rows are of `cols`, a CTA's copy when the kernel is given by CTA: the accesses
        // are what must be equal.
        let accesses = rows
            .iter()
            .map(|&r| {
                (
                    cols.addr[r as usize],
                    cols.thread[r as usize],
                    cols.dyn_inst[r as usize],
                )
            })
            .collect();
        self.events.push(Event::Warp(accesses));
    }
    fn after_request(&mut self, e: &RequestEvent, cache: &CacheModel) {
        self.events
            .push(Event::After(*e, format!("{:?}", cache.set_state(e.set))));
    }
    fn on_l2(&mut self, e: &L2Event) {
        self.events.push(Event::L2(*e));
    }
}

fn sample(name: &str) -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../sample-traces")
        .join(name);
    crate::trace::read_file(&path, None).unwrap().0
}

fn generated(name: &str, pairs: &[(&str, &str)]) -> Trace {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    crate::gen::generate(name, &pairs).unwrap()
}

#[test]
fn a_run_in_pieces_gives_the_whole_runs_report_and_every_event_in_order() {
    let traces = [
        ("matmul", generated("matmul", &[("n", "48")])),
        ("spmv", generated("spmv", &[])),
        ("hotspot", generated("hotspot", &[("steps", "2")])),
        ("din", sample("dinero-small.din")),
        ("accelsim", sample("accelsim-matrixmul")),
        ("wst", sample("table2.wst")),
    ];
    let fermi = preset("fermi-16k").unwrap();
    let mut every_sm = fermi.clone();
    every_sm.gpu.simulate = SmSelection::All;
    let mut with_l2 = every_sm.clone();
    with_l2.gpu.sms = 4;
    with_l2.l2 = Some(L2Config::default());
    let mut volta = preset("volta").unwrap();
    volta.seed = 7;
    let gtx470 = preset("gtx470-16k").unwrap();
    let mut timed_l2 = gtx470.clone();
    timed_l2.gpu.sms = 4;
    timed_l2.gpu.simulate = SmSelection::All;
    timed_l2.l2 = Some(L2Config::default());
    let configs = [fermi, every_sm, with_l2, volta, gtx470, timed_l2];
    for (name, t) in &traces {
        for (c, cfg) in configs.iter().enumerate() {
            let what = format!("{name} under configuration {c}");
            let (mut whole, mut pieces) = (Record::default(), Record::default());
            let whole_run = run_kernels(cfg, &t.kernels, &mut whole);
            let mut steps = RunSteps::new(cfg).unwrap();
            let mut n = 0;
            let pieces_run = loop {
                n += 1;
                match steps.step(cfg, &t.kernels, &mut pieces) {
                    Ok(None) => {}
                    Ok(Some(r)) => break Ok(r),
                    Err(e) => break Err(e),
                }
            };
            let (a, b) = match (whole_run, pieces_run) {
                (Ok(a), Ok(b)) => (a, b),
                // A trace the timing model cannot run (a reference stream): the same error.
                (Err(a), Err(b)) if cfg.timing.is_some() => {
                    assert_eq!(a, b, "{what}");
                    continue;
                }
                (a, b) => panic!("{what}: {a:?} against {b:?}"),
            };
            assert!(n > 2 * t.kernels.len(), "{what}: {n} pieces");
            assert_eq!(a, b, "{what}");
            assert!(!whole.events.is_empty(), "{what}");
            assert_eq!(whole.kernels, pieces.kernels, "{what}");
            assert_eq!(whole.events.len(), pieces.events.len(), "{what}");
            if let Some(i) = (0..whole.events.len()).find(|&i| whole.events[i] != pieces.events[i])
            {
                panic!(
                    "{what}: event {i} differs: {:?} against {:?}",
                    whole.events[i], pieces.events[i]
                );
            }
            // Done: it does nothing more.
            assert_eq!(steps.step(cfg, &t.kernels, &mut pieces), Ok(None));
        }
    }
}

#[test]
fn a_run_in_pieces_checks_its_configuration_and_stops_when_its_observer_says_so() {
    let mut bad = preset("fermi-16k").unwrap();
    bad.cache.ways = 3;
    assert!(RunSteps::new(&bad).is_err());

    struct Stop(u32);
    impl Observer for Stop {
        fn progress(&mut self, _: u64, _: u64) -> bool {
            self.0 += 1;
            self.0 < 3
        }
    }
    let t = generated("matmul", &[("n", "64")]);
    for cfg in [preset("fermi-16k").unwrap(), preset("gtx470-16k").unwrap()] {
        let mut steps = RunSteps::new(&cfg).unwrap();
        let mut stop = Stop(0);
        let end = loop {
            match steps.step(&cfg, &t.kernels, &mut stop) {
                Ok(None) => {}
                other => break other,
            }
        };
        assert_eq!(end, Err(SimError::Cancelled));
        assert_eq!(steps.step(&cfg, &t.kernels, &mut stop), Ok(None));
    }
}
