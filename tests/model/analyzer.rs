//! The analytical model of Dasgupta 2011 / Hong and Kim 2009 (`warpscope::analyze`):
//! hand-computed cases for each MWP limit and each execution-time case, the thesis's tuning
//! tables 8-10 reproduced from its published inputs, its micro-benchmark's transactions and
//! duplicate loads measured from the generated traces, consistency with table 14, and
//! monotonicity in the latency and bandwidth parameters.

use proptest::prelude::*;
use warpscope::analyze::{self, ExecCase, GpuModel, KernelInputs, MwpLimit};

/// A GPU with round numbers, for arithmetic by hand.
fn round_gpu() -> GpuModel {
    GpuModel {
        name: "test".into(),
        clock_mhz: 1000.0,
        sms: 10,
        bandwidth_gb_s: 100.0,
        base_latency: 400.0,
        departure_delay: [20.0, 40.0, 80.0],
        departure_delay_vector: 50.0,
        issue_cycles: 4.0,
        high_latency_cycles: 20.0,
        max_blocks_per_sm: 8,
        max_warps_per_sm: 32,
        max_threads_per_sm: 1024,
        warp_size: 32,
    }
}

/// 256 threads (8 warps), 80 blocks, 4 resident: N = 32, #Rep = 80 / (4 x 10) = 2; per warp
/// 1000 instructions and 100 loads of four 128-byte transactions each.
fn heavy() -> KernelInputs {
    KernelInputs {
        threads_per_block: 256,
        blocks: 80,
        active_blocks_per_sm: 4,
        instructions: 1000.0,
        high_latency: 0.0,
        load_requests: 100.0,
        store_requests: 0.0,
        transactions: [0.0, 0.0, 400.0],
        sync: 0.0,
        independent_loads: 1.0,
        duplicate_loads: 1.0,
        vector: false,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn the_latency_limit_and_the_memory_bound_case_by_hand() {
    let a = analyze::analyze(&heavy(), &round_gpu()).unwrap();
    // (16) 400 x 128 / 100 = 512 B; (19) 4 per request; (23) 80; (24) 400 + 3 x 80 = 640;
    // (25) 4 x 80 = 320; (17) 1e9 x 512 / 640 = 0.8 GB/s; (18) 100 / (0.8 x 10) = 12.5;
    // (26) 640 / 320 = 2; (27) 32.
    assert!(close(a.data_per_request, 512.0));
    assert!(close(a.memory_latency, 640.0));
    assert!(close(a.departure_delay_per_request, 320.0));
    assert!(close(a.bandwidth_per_warp_gb_s, 0.8));
    assert!(close(a.mwp_peak_bandwidth, 12.5));
    assert!(close(a.mwp_without_bandwidth, 2.0));
    assert!(close(a.active_warps_for_mwp, 32.0));
    assert_eq!((a.mwp, a.mwp_limit), (2.0, MwpLimit::Latency));
    // Compute 4 x 1000 = 4000, memory 640 x 100 = 64000: CWP = 68000 / 4000 = 17 < N.
    assert!(close(a.cwp, 17.0));
    assert_eq!(a.case, ExecCase::MemoryBound);
    // (64000 x 32 / 2 + 4000 / 100 x (2 - 1)) x 2 = 2,048,080 cycles = 2.04808 ms at 1 GHz.
    assert!(close(a.cycles, 2_048_080.0), "{}", a.cycles);
    assert!(close(a.milliseconds, 2.04808));
    assert!(a.memory_bound);
    // The report's rows read as words: the case named, each equation as "eq. N" (the view
    // printed `case MemoryBound` and bare numbers).
    let rows = analyze::model_rows(&a);
    let case = rows.iter().find(|(n, _)| *n == "case").unwrap();
    assert!(case.1.starts_with("memory-bound"), "{}", case.1);
    for (name, _) in &rows {
        if let Some(i) = name.find('(') {
            let inside = &name[i + 1..];
            let numbered = inside.starts_with(|c: char| c.is_ascii_digit());
            assert!(!numbered, "{name}: an equation number without `eq.`");
        }
    }
}

#[test]
fn the_bandwidth_limit_by_hand() {
    let g = GpuModel {
        bandwidth_gb_s: 10.0,
        ..round_gpu()
    };
    let a = analyze::analyze(&heavy(), &g).unwrap();
    // (18) 10 / (0.8 x 10) = 1.25 binds: (64000 x 32 / 1.25 + 40 x 0.25) x 2.
    assert_eq!(a.mwp_limit, MwpLimit::Bandwidth);
    assert!(close(a.mwp, 1.25));
    assert!(close(a.cycles, 3_276_820.0), "{}", a.cycles);
}

#[test]
fn the_active_warps_limit_and_the_compute_bound_case_by_hand() {
    // One 8-warp block per SM (N = 8, #Rep = 8), 10 loads of one 32-byte transaction.
    let k = KernelInputs {
        active_blocks_per_sm: 1,
        load_requests: 10.0,
        transactions: [10.0, 0.0, 0.0],
        ..heavy()
    };
    let a = analyze::analyze(&k, &round_gpu()).unwrap();
    // Latency 400, 20 per request: (26) 20; 0.08 GB/s: (18) 125; (27) 8 binds.
    assert_eq!((a.mwp, a.mwp_limit), (8.0, MwpLimit::ActiveWarps));
    // Compute 4000, memory 4000: CWP 2 < MWP 8: compute-bound, (400 + 4000 x 8) x 8.
    assert!(close(a.cwp, 2.0));
    assert_eq!(a.case, ExecCase::ComputeBound);
    assert!(close(a.cycles, 259_200.0), "{}", a.cycles);
    assert!(!a.memory_bound);
    // Two independent loads per thread double the warps' share (27): 16.
    let a = analyze::analyze(
        &KernelInputs {
            independent_loads: 2.0,
            ..k.clone()
        },
        &round_gpu(),
    )
    .unwrap();
    assert!(close(a.active_warps_for_mwp, 16.0) && close(a.mwp, 16.0));
    // Two requests per fetch halve the transactions (0.5 per request: latency 400, 10 per
    // request, (26) 40) and the warps' share (27): 4.
    let a = analyze::analyze(
        &KernelInputs {
            duplicate_loads: 2.0,
            ..k.clone()
        },
        &round_gpu(),
    )
    .unwrap();
    assert!(close(a.transactions_per_request, 0.5) && close(a.mwp_without_bandwidth, 40.0));
    assert_eq!((a.mwp, a.mwp_limit), (4.0, MwpLimit::ActiveWarps));
    // Vector operations do not merge (Dasgupta 2011 §3.2.5) and take their own delay.
    let a = analyze::analyze(
        &KernelInputs {
            duplicate_loads: 2.0,
            vector: true,
            ..k
        },
        &round_gpu(),
    )
    .unwrap();
    assert!(close(a.active_warps_for_mwp, 8.0) && close(a.departure_delay_per_request, 50.0));
}

#[test]
fn not_enough_warps_by_hand() {
    // Two warps per SM (one 64-thread block), three 128-byte transactions per request.
    let k = KernelInputs {
        threads_per_block: 64,
        active_blocks_per_sm: 1,
        transactions: [0.0, 0.0, 300.0],
        ..heavy()
    };
    let a = analyze::analyze(&k, &round_gpu()).unwrap();
    // Latency 400 + 2 x 80 = 560, (26) 560 / 240 = 2.33; (27) 2 binds; CWP 15 capped at 2.
    assert_eq!(
        (a.mwp, a.mwp_limit, a.cwp),
        (2.0, MwpLimit::ActiveWarps, 2.0)
    );
    assert_eq!(a.case, ExecCase::NotEnoughWarps);
    // (56000 + 4000 + 4000 / 100 x (2 - 1)) x #Rep 8.
    assert!(close(a.cycles, 480_320.0), "{}", a.cycles);
}

#[test]
fn barriers_cost_the_departure_of_the_other_warps_requests() {
    let k = KernelInputs {
        sync: 2.0,
        ..heavy()
    };
    let a = analyze::analyze(&k, &round_gpu()).unwrap();
    // 320 x (MWP 2 - 1) x 2 barriers x 4 blocks x #Rep 2.
    assert!(close(a.sync_cycles, 5120.0));
    assert!(close(a.cycles, 2_048_080.0 + 5120.0));
}

#[test]
fn no_memory_leaves_the_instructions_times_the_warps() {
    // Dasgupta 2011 §3.2.6.1's frequency tuning: no load, CWP 0, compute-bound.
    let k = KernelInputs {
        threads_per_block: 512,
        blocks: 120,
        active_blocks_per_sm: 2,
        instructions: 4336.0,
        load_requests: 0.0,
        transactions: [0.0; 3],
        ..heavy()
    };
    let a = analyze::analyze(&k, &analyze::gt200()).unwrap();
    assert_eq!((a.case, a.cwp), (ExecCase::ComputeBound, 0.0));
    // 4336 x 4 cycles x 32 warps x #Rep 2 at 1312 MHz: table 6's 0.846 ms measured.
    assert!(close(a.cycles, 4336.0 * 4.0 * 32.0 * 2.0));
    assert!((a.milliseconds - 0.846).abs() < 0.001, "{}", a.milliseconds);
}

/// Tables 2-3 and 8-10's runs: 256 threads, 120 blocks, occupancy 1 (4 blocks, 32 warps per SM
/// of the C1060), 400 requests and 800 transactions of one size per warp, no merging.
fn tuning_run(size: usize) -> KernelInputs {
    let mut transactions = [0.0; 3];
    transactions[size] = 800.0;
    KernelInputs {
        threads_per_block: 256,
        blocks: 120,
        active_blocks_per_sm: 4,
        instructions: 7942.0,
        high_latency: 0.0,
        load_requests: 400.0,
        store_requests: 0.0,
        transactions,
        sync: 0.0,
        independent_loads: 1.0,
        duplicate_loads: 1.0,
        vector: false,
    }
}

#[test]
fn the_thesis_tuning_tables_8_to_10_are_reproduced() {
    // The model's predictions the thesis reports: 0.7222 ms for 32 and 64-byte transactions
    // (tables 8, 9) and 1.131 ms for 128-byte ones (table 10).
    let g = analyze::gt200();
    for (size, want) in [(0, 0.7222), (1, 0.7222), (2, 1.131)] {
        let a = analyze::analyze(&tuning_run(size), &g).unwrap();
        assert!(
            (a.milliseconds - want).abs() / want < 0.001,
            "size {size}: {} ms, the thesis {want}",
            a.milliseconds
        );
        assert!(a.memory_bound && a.mwp_limit == MwpLimit::Latency);
    }
}

fn generated(params: &str) -> warpscope::trace::Kernel {
    let words: Vec<String> = params.split_whitespace().map(String::from).collect();
    let pairs = warpscope::gen::parse_pairs(&words).unwrap();
    warpscope::gen::generate("merging", &pairs)
        .unwrap()
        .kernels
        .remove(0)
}

#[test]
fn the_micro_benchmark_spawns_the_thesis_transactions_and_its_merging_variants_duplicate() {
    let g = analyze::gt200();
    let given = analyze::Given::default();
    // 30 blocks (one per SM), 10 iterations: 40 requests per warp, 80 transactions.
    for (params, size) in [
        ("width=32", 0),
        ("width=64", 1),
        ("width=128", 2),
        ("vector=1", 0),
    ] {
        let m = analyze::measure(&generated(&format!("{params} iters=10")), &g, &given).unwrap();
        let k = &m.inputs;
        assert_eq!(k.load_requests, 40.0, "{params}");
        let mut want = [0.0; 3];
        want[size] = 80.0;
        assert_eq!(k.transactions, want, "{params}");
        // Every warp on memory of its own: nothing is ever in flight for another warp.
        assert_eq!(
            (m.duplicates.in_flight, k.duplicate_loads),
            (0, 1.0),
            "{params}"
        );
        assert_eq!(k.vector, params.starts_with("vector"));
        assert_eq!(k.active_blocks_per_sm, 1);
    }
    for params in ["width=32 merge=1", "width=64 merge=1", "vector=1 merge=1"] {
        let kernel = generated(&format!("{params} iters=10"));
        let m = analyze::measure(&kernel, &g, &given).unwrap();
        // Warp w's load j + 1 is warp w + 2's (32 B) or w + 1's (64 B, vector) load j: the
        // indexing lets a piece be asked for by many warps; the timing model finds some of
        // them while it is in flight, and never more than the indexing allows.
        let cols = kernel.columns();
        let mut distinct: Vec<u64> = cols.addr.iter().map(|a| a / 32).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let requests = m.duplicates.pieces as f64;
        assert!(m.duplicates.in_flight > 0, "{params}");
        assert!(m.inputs.duplicate_loads > 1.0, "{params}");
        assert!(m.duplicates.pieces - m.duplicates.in_flight >= 1);
        // On SM 0 at most all its pieces but one per distinct piece it touched merge.
        assert!(m.inputs.duplicate_loads <= requests, "{params}");
        assert!(!distinct.is_empty());
    }
}

#[test]
fn table_14_baseline_and_vecpack_are_memory_bound_with_the_baseline_cwp_at_the_active_warps() {
    // Table 14, 64 threads per block at occupancy 0.5: 8 blocks of 2 warps, N = 16 of the
    // C1060's 32. Per warp: the baseline's 235880 instructions and 47013 memory operations,
    // VecPack's 165275 and 11893 (vector). Transactions per operation are not in the table: one
    // 32-byte transaction each (the fewest). The thesis: baseline CWP 16 (= N), VecPack 8.486,
    // MWP below CWP in both (memory-bound).
    let g = analyze::gt200();
    let column = |instructions: f64, ops: f64, vector: bool| KernelInputs {
        threads_per_block: 64,
        blocks: 8 * 30,
        active_blocks_per_sm: 8,
        instructions,
        high_latency: 0.0,
        load_requests: ops,
        store_requests: 0.0,
        transactions: [ops, 0.0, 0.0],
        sync: 0.0,
        independent_loads: 1.0,
        duplicate_loads: 1.0,
        vector,
    };
    let base = analyze::analyze(&column(235880.0, 47013.0, false), &g).unwrap();
    let vec = analyze::analyze(&column(165275.0, 11893.0, true), &g).unwrap();
    assert_eq!(base.active_warps, 16.0);
    assert_eq!(base.cwp, 16.0, "capped at the active warps");
    assert!(base.cwp_full > 16.0);
    assert!(vec.cwp < 16.0 && vec.cwp > 1.0);
    assert!(base.memory_bound && vec.memory_bound);
    assert!(vec.milliseconds < base.milliseconds);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Within one execution case and without barriers, a longer latency or departure delay
    /// never shortens the prediction and more bandwidth never lengthens it. (Hong and Kim's
    /// cases are discontinuous where CWP crosses MWP, and their barrier cost grows with MWP:
    /// the two tests below show where the model itself is not monotone.)
    #[test]
    fn the_prediction_is_monotone_in_latency_and_bandwidth_within_a_case(
        warps in 1u32..=8, blocks in 1u64..400, resident in 1u32..=4,
        loads in 1.0f64..200.0, stores in 0.0f64..50.0, per in 1.0f64..8.0, size in 0usize..3,
        compute in 0.0f64..40.0, indep in 1.0f64..4.0, dup in 1.0f64..4.0,
        vector: bool, factor in 1.0f64..3.0, which in 0usize..3,
    ) {
        let requests = loads + stores;
        let mut transactions = [0.0; 3];
        transactions[size] = requests * per;
        let k = KernelInputs {
            threads_per_block: warps * 32,
            blocks,
            active_blocks_per_sm: resident,
            instructions: requests * (1.0 + compute),
            high_latency: 0.0,
            load_requests: loads,
            store_requests: stores,
            transactions,
            sync: 0.0,
            independent_loads: indep,
            duplicate_loads: dup,
            vector,
        };
        let g = analyze::gt200();
        let base = analyze::analyze(&k, &g).unwrap();
        let mut slower = g.clone();
        match which {
            0 => slower.base_latency *= factor,
            1 => slower.departure_delay = g.departure_delay.map(|d| d * factor),
            _ => slower.bandwidth_gb_s /= factor,
        }
        let s = analyze::analyze(&k, &slower).unwrap();
        if s.case == base.case {
            prop_assert!(s.cycles >= base.cycles * (1.0 - 1e-12), "{} < {}", s.cycles, base.cycles);
        }
    }
}

#[test]
fn the_cases_are_discontinuous_where_cwp_crosses_mwp() {
    // Table 8's run on either side of CWP = MWP: compute-bound (MWP > CWP) costs
    // Mem_L + Comp_cycles x N, memory-bound Mem_cycles x N / MWP + ...; a shorter departure
    // delay (25 cycles instead of 37: MWP 9.5 > CWP 7.0) tips the kernel into the compute-bound
    // case and predicts a longer time (1,017,051 cycles instead of 947,508). Faithful to Hong
    // and Kim 2009; docs/analyzer.md says so.
    let g = analyze::gt200();
    let k = tuning_run(0);
    let memory = analyze::analyze(&k, &g).unwrap();
    let faster = GpuModel {
        departure_delay: [25.0; 3],
        ..g
    };
    let compute = analyze::analyze(&k, &faster).unwrap();
    assert_eq!(
        (memory.case, compute.case),
        (ExecCase::MemoryBound, ExecCase::ComputeBound)
    );
    assert!(compute.cycles > memory.cycles);
}

#[test]
fn the_barrier_cost_grows_with_mwp() {
    // Found by the property test: a kernel of one 64-byte load pair and two barriers per warp,
    // almost no computation. Halving the bandwidth halves the bandwidth limit of MWP; the
    // memory term grows less than the barrier cost, Departure_delay x (MWP - 1) x ..., falls.
    let k = KernelInputs {
        threads_per_block: 160,
        blocks: 25,
        active_blocks_per_sm: 3,
        instructions: 1.0,
        high_latency: 0.0,
        load_requests: 1.0,
        store_requests: 0.0,
        transactions: [0.0, 2.0, 0.0],
        sync: 2.0,
        independent_loads: 2.0,
        duplicate_loads: 1.0,
        vector: false,
    };
    let g = analyze::gt200();
    let base = analyze::analyze(&k, &g).unwrap();
    let narrow = GpuModel {
        bandwidth_gb_s: g.bandwidth_gb_s / 2.0,
        ..g
    };
    let slow = analyze::analyze(&k, &narrow).unwrap();
    assert_eq!(base.case, slow.case);
    assert!(slow.mwp < base.mwp && slow.sync_cycles < base.sync_cycles);
    assert!(
        slow.cycles < base.cycles,
        "{} vs {}",
        slow.cycles,
        base.cycles
    );
}

/// The inputs measured a piece at a time (the web build, between frames) are the ones
/// measured whole, on generated kernels, the micro-benchmark and a recorded Accel-Sim trace
/// (instruction counts and independent loads from the trace), and the errors too.
#[test]
fn inputs_measured_in_pieces_are_the_whole_measurements() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join("accelsim-matrixmul");
    let mut kernels = warpscope::trace::read_file(&sample, None)
        .unwrap()
        .0
        .kernels;
    for (name, pairs) in [("matmul", "n=64"), ("spmv", ""), ("hotspot", "steps=2")] {
        let words: Vec<String> = pairs.split_whitespace().map(String::from).collect();
        let pairs = warpscope::gen::parse_pairs(&words).unwrap();
        kernels.extend(warpscope::gen::generate(name, &pairs).unwrap().kernels);
    }
    kernels.push(generated("merge=4"));
    let din =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/dinero-small.din");
    kernels.extend(warpscope::trace::read_file(&din, None).unwrap().0.kernels);
    let given = analyze::Given::default();
    let mut measured = 0;
    for g in [analyze::gt200(), round_gpu()] {
        for k in &kernels {
            let whole = analyze::measure(k, &g, &given);
            let mut m = analyze::Measuring::new(&g, &given);
            let mut n = 0;
            let cut = loop {
                n += 1;
                match m.step(k, &mut warpscope::sim::NoObserver) {
                    Ok(None) => {}
                    Ok(Some(x)) => break Ok(x),
                    Err(e) => break Err(e),
                }
            };
            match (whole, cut) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{} on {}", k.name, g.name);
                    assert!(n > 3, "{}: {n} pieces", k.name);
                    measured += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", k.name),
                (a, b) => panic!("{} on {}: {a:?} against {b:?}", k.name, g.name),
            }
        }
    }
    assert!(measured >= 8, "{measured}");
}
