use super::fanout::{BATCH_PIECES, BATCH_ROWS};
use super::*;
use warpscope_core::config::SimConfig;
use warpscope_core::sim::Report;

/// A reference stream of `n` references over a few KiB, as `din::read` gives it.
fn din_kernel(n: u64) -> Kernel {
    let mut text = String::new();
    for i in 0..n {
        let addr = (i * 40503 % 6151) * 8 + (i % 7) * 4096;
        text.push_str(&format!("{} {addr:x}\n", i % 2));
    }
    let t = din::read(text.as_bytes(), "t.din").unwrap();
    t.kernels.into_iter().next().unwrap()
}

/// Sends `k` as a file's reference stream is sent, in chunks of 1000 rows, then fails
/// when `fail` is set.
fn source(k: Kernel, fail: bool) -> Source {
    Box::new(move |to| {
        to.send(Piece::Stream(k.header()))?;
        let cols = k.columns();
        for at in (0..cols.len()).step_by(1000) {
            let mut chunk = to.buffer();
            chunk.extend_from(cols, at..(at + 1000).min(cols.len()));
            to.send(Piece::Rows(chunk, None))?;
        }
        if fail {
            anyhow::bail!("t.din: line 9: expected a hex address");
        }
        Ok(())
    })
}

fn unsectored() -> SimConfig {
    let mut cfg = SimConfig::default();
    cfg.cache.size_bytes = 4096;
    cfg.cache.sector_bytes = cfg.cache.line_bytes;
    cfg.cache.write_policy = warpscope_core::config::WritePolicy::Wbwa;
    cfg
}

fn plain(cfg: &SimConfig, k: &Kernel) -> Report {
    let s = Session::new(cfg, 0).unwrap();
    let mut s = run(vec![s], 1, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
    s.remove(0).finish(&mut NoObserver)
}

#[test]
fn distances_measured_apart_give_the_report_of_one_thread() {
    let k = din_kernel(25_000);
    for cfg in [unsectored(), SimConfig::default()] {
        let want = plain(&cfg, &k);
        assert!(want.totals.misses > 1000 && want.reuse.is_some());
        let s = Session::new(&cfg, 0).unwrap();
        let got = run_apart(s, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
        assert_eq!(got.finish(&mut NoObserver), want);
    }
    // Without reuse distances, or sampled: the classes are measured apart all the same.
    for cfg in [unsectored(), SimConfig::default()] {
        let cfg = SimConfig {
            reuse: warpscope_core::config::ReuseMode::Off,
            ..cfg
        };
        let mut s = Session::new(&cfg, 0).unwrap();
        assert!(s.detach_reuse().is_some());
        let s = Session::new(&cfg, 0).unwrap();
        let got = run_apart(s, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
        assert_eq!(got.finish(&mut NoObserver), plain(&cfg, &k));
        let sampled = SimConfig {
            reuse: warpscope_core::config::ReuseMode::Sampled,
            ..cfg
        };
        let s = Session::new(&sampled, 0).unwrap();
        let got = run_apart(s, 4, &mut NoObserver, source(k.clone(), false)).unwrap();
        assert_eq!(got.finish(&mut NoObserver), plain(&sampled, &k));
    }
}

/// `n` rows of loads, as a CTA's or a chunk's.
fn rows(n: usize) -> Columns {
    let mut c = Columns::default();
    for i in 0..n as u32 {
        c.push(&trace::Access {
            thread: i,
            inst: 0,
            dyn_inst: 0,
            addr: u64::from(i) * 4,
            size: 4,
            kind: trace::AccessKind::Load,
            space: trace::MemSpace::Global,
        });
    }
    c
}

/// The CTA numbers and row counts of the pieces of `batches`, in order.
fn ctas_in(batches: &[Batch]) -> Vec<(u32, usize)> {
    let pieces = batches.iter().flatten();
    pieces
        .filter_map(|p| match &**p {
            Piece::Cta(cta, rows, _) => Some((*cta, rows.len())),
            _ => None,
        })
        .collect()
}

#[test]
fn small_ctas_are_sent_in_batches_in_order_and_the_last_on_a_flush() {
    // Room for every batch, so that sending never waits.
    let (mut to, from, _) = pipe(1 << 12);
    // CTAs of 32 threads of three accesses: about 170 to a batch.
    for cta in 0..1000 {
        to.send(Piece::Cta(cta, Arc::new(rows(96)), None)).unwrap();
    }
    let sent: Vec<Batch> = from.try_iter().collect();
    assert!((4..=6).contains(&sent.len()), "{} batches", sent.len());
    for b in &sent {
        let held: usize = b.iter().map(|p| p.rows()).sum();
        assert!((BATCH_ROWS..BATCH_ROWS + 96).contains(&held), "{held} rows");
    }
    let mut all = sent;
    assert!(from.try_recv().is_err(), "a partial batch went early");
    to.flush().unwrap();
    all.extend(from.try_iter());
    let want: Vec<(u32, usize)> = (0..1000).map(|cta| (cta, 96)).collect();
    assert_eq!(ctas_in(&all), want);
    // Pieces without rows are batched by their count.
    for _ in 0..BATCH_PIECES + 1 {
        to.send(Piece::End).unwrap();
    }
    assert_eq!(
        from.try_iter().map(|b| b.len()).collect::<Vec<_>>(),
        [BATCH_PIECES]
    );
}

#[test]
fn a_large_piece_goes_at_once_and_a_dropped_source_sends_its_rest() {
    let (mut to, from, _) = pipe(4);
    to.send(Piece::Cta(0, Arc::new(rows(10)), None)).unwrap();
    assert!(from.try_recv().is_err());
    // A chunk of a stream, or a large CTA, goes with the pieces before it.
    to.send(Piece::Rows(rows(BATCH_ROWS), None)).unwrap();
    let first = from.try_recv().unwrap();
    assert_eq!(
        first.iter().map(|p| p.rows()).collect::<Vec<_>>(),
        [10, BATCH_ROWS]
    );
    to.send(Piece::Cta(1, Arc::new(rows(5)), None)).unwrap();
    to.send(Piece::End).unwrap();
    drop(to);
    let rest: Vec<Batch> = from.iter().collect();
    assert_eq!(ctas_in(&rest), [(1, 5)]);
    assert!(matches!(
        rest.concat().last().map(|p| &**p),
        Some(Piece::End)
    ));
}

/// Cancels after the first progress report.
struct Cancel;
impl Observer for Cancel {
    fn wants_requests(&self) -> bool {
        false
    }
    fn progress(&mut self, _: u64, _: u64) -> bool {
        false
    }
}

#[test]
fn a_run_measured_apart_stops_on_a_cancel_or_a_bad_file() {
    let k = din_kernel(25_000);
    let s = Session::new(&unsectored(), 0).unwrap();
    match run_apart(s, 1, &mut Cancel, source(k.clone(), false)) {
        Err(Failure::Session(0, SimError::Cancelled)) => {}
        Err(e) => panic!("{:?}", anyhow::Error::from(e)),
        Ok(_) => panic!("not cancelled"),
    }
    let s = Session::new(&unsectored(), 0).unwrap();
    let e = match run_apart(s, 1, &mut NoObserver, source(k, true)) {
        Err(e) => anyhow::Error::from(e).to_string(),
        Ok(_) => panic!("the source's failure was lost"),
    };
    assert!(e.contains("line 9"), "{e}");
}

/// A front end's default (the app's `--jobs`) stands in for 0, never for a number given.
#[test]
fn the_default_jobs_stand_in_for_zero_only() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(cores(0), all);
    set_default_jobs(5);
    assert_eq!((cores(0), cores(2)), (5, 2));
    set_default_jobs(0);
    assert_eq!(cores(0), all);
}
