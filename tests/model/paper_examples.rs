//! The papers' worked examples, through the whole pipeline (trace text -> scheduler ->
//! coalescer -> cache -> statistics).

use warpscope::cache::MissClass;
use warpscope::config::{preset, CacheConfig, Coalescing, IssuePolicy, SimConfig, SmSelection};
use warpscope::sim::{self, Observer, RequestEvent};
use warpscope::trace::text;

#[derive(Default)]
struct Events(Vec<RequestEvent>);
impl Observer for Events {
    fn on_request(&mut self, e: &RequestEvent) {
        self.0.push(*e);
    }
}

/// A fully associative LRU cache of `lines` lines of 16 bytes (4 elements of 4 bytes), one
/// SM, per-thread round-robin scheduling.
fn tiny(lines: u64) -> SimConfig {
    let mut c = SimConfig {
        cache: CacheConfig {
            size_bytes: 16 * lines,
            line_bytes: 16,
            ways: 0,
            sector_bytes: 16,
            ..CacheConfig::default()
        },
        coalescing: Coalescing::Line,
        ..SimConfig::default()
    };
    c.schedule.warp_size = 1;
    c.schedule.policy = IssuePolicy::RoundRobin;
    c
}

fn run(trace_text: &str, cfg: &SimConfig) -> (sim::Report, Vec<RequestEvent>) {
    let t = text::read(trace_text.as_bytes(), "example.wst").unwrap();
    let mut ev = Events::default();
    let r = sim::run(cfg, &t, &mut ev).unwrap();
    (r, ev.0)
}

#[test]
fn seed001_table1_reuse_distances_and_misses() {
    // One thread accessing x[0] x[5] x[3] x[9] x[3] x[3] x[5]; 4-element lines.
    let mut s = String::from("kernel t1 grid=1 block=1\n");
    for (i, x) in [0u64, 5, 3, 9, 3, 3, 5].iter().enumerate() {
        s += &format!("0,0,0 0,0,0 ld_x {i} ld {} 4\n", x * 4);
    }
    let (r, ev) = run(&s, &tiny(2));
    let d: Vec<_> = ev.iter().map(|e| e.reuse_distance).collect();
    assert_eq!(
        d,
        vec![None, None, Some(1), None, Some(1), Some(0), Some(2)]
    );
    // With a cache of 2 lines: 3 compulsory misses (42%) and 1 capacity miss (14%).
    assert_eq!(r.totals.miss_classes.compulsory, 3);
    assert_eq!(r.totals.miss_classes.capacity, 1);
    assert_eq!(r.totals.miss_classes.conflict, 0);
    assert_eq!(r.totals.misses, 4);
}

#[test]
fn seed001_table2_round_robin_threads() {
    // 4 threads, each loading x[2*tid] then x[2*tid+1]; one thread per warp, round-robin.
    let mut s = String::from("kernel t2 grid=1 block=4\ninst i0\ninst i1\n");
    for tid in 0..4u64 {
        s += &format!("0,0,0 {tid},0,0 i0 0 ld {} 4\n", 2 * tid * 4);
        s += &format!("0,0,0 {tid},0,0 i1 0 ld {} 4\n", (2 * tid + 1) * 4);
    }
    let (_, ev) = run(&s, &tiny(64));
    let lines: Vec<u64> = ev.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![0, 0, 1, 1, 0, 0, 1, 1]);
    let d: Vec<_> = ev.iter().map(|e| e.reuse_distance).collect();
    assert_eq!(
        d,
        vec![
            None,
            Some(0),
            None,
            Some(0),
            Some(1),
            Some(0),
            Some(1),
            Some(0)
        ]
    );
    let insts: Vec<u32> = ev.iter().map(|e| e.inst).collect();
    assert_eq!(insts, vec![0, 0, 0, 0, 1, 1, 1, 1]);
}

#[test]
fn seed000_every_read_of_the_naive_transpose_misses() {
    // §8.1.2: reads are perfectly coalesced and no element is read twice.
    for (w, h, bx, by) in [
        (64, 64, 16, 16),
        (160, 100, 16, 10),
        (256, 128, 32, 8),
        (320, 320, 32, 32),
    ] {
        let pairs = vec![
            ("width".to_string(), w.to_string()),
            ("height".to_string(), h.to_string()),
            ("block".to_string(), format!("{bx},{by}")),
        ];
        let t = warpscope::gen::generate("transpose", &pairs).unwrap();
        for sel in [SmSelection::One(0), SmSelection::All] {
            let mut c = preset("fermi-16k").unwrap();
            c.gpu.simulate = sel.clone();
            let r = sim::run(&c, &t, &mut sim::NoObserver).unwrap();
            assert!(r.totals.reads > 0);
            assert_eq!(
                r.totals.read_misses, r.totals.reads,
                "{w}x{h} block {bx}x{by} {sel:?}"
            );
        }
    }
}

#[test]
fn fermi_hash_conflicts_differ_from_modulo() {
    // Nugteren et al. 2014 §5.1: a single warp striding 2^12 bytes. Modulo indexing maps every line to set 0;
    // the hash spreads 16 lines over 16 sets, so a second pass hits.
    let mut s = String::from("kernel stride grid=1 block=1\n");
    for pass in 0..2 {
        for i in 0..16u64 {
            s += &format!("0,0,0 0,0,0 ld_{pass} {i} ld {} 4\n", i << 12);
        }
    }
    let mut c = preset("fermi-16k").unwrap();
    c.gpu.sms = 1;
    let (hash, _) = run(&s, &c);
    assert_eq!(hash.totals.misses, 16);
    c.cache.set_index = warpscope::config::SetIndex::Modulo;
    let (modulo, _) = run(&s, &c);
    assert_eq!(modulo.totals.misses, 32);
    assert_eq!(modulo.totals.miss_classes.conflict, 16);
}

#[test]
fn barriers_hold_every_warp_of_the_cta() {
    // Two warps of one thread each; warp 0 has a barrier between its two loads. Warp 1's load
    // after its own barrier must come after both loads before the barrier.
    let s = "kernel b grid=1 block=2\n\
             0,0,0 0,0,0 a 0 ld 0 4\n0,0,0 0,0,0 bar\n0,0,0 0,0,0 c 0 ld 64 4\n\
             0,0,0 1,0,0 a 0 ld 128 4\n0,0,0 1,0,0 b 0 ld 192 4\n0,0,0 1,0,0 bar\n0,0,0 1,0,0 c 0 ld 256 4\n";
    let mut c = tiny(64);
    c.schedule.policy = IssuePolicy::Gto;
    let (_, ev) = run(s, &c);
    let lines: Vec<u64> = ev.iter().map(|e| e.line).collect();
    // GTO: warp 0 issues until its barrier, warp 1 runs to the barrier, the release lets the
    // greedy warp (1) go on first.
    assert_eq!(lines, vec![0, 8, 12, 16, 4]);
    assert!(ev
        .iter()
        .all(|e| e.class.is_none_or(|c| c == MissClass::Compulsory)));
    // Round-robin alternates: after the release it is warp 0's turn.
    c.schedule.policy = IssuePolicy::RoundRobin;
    let (_, ev) = run(s, &c);
    let lines: Vec<u64> = ev.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![0, 8, 12, 4, 16]);
}
