//! The data model: flags, building, grouping by thread, reading back.

use super::*;

#[test]
fn the_valid_kind_mask_matches_the_kind_codes() {
    for code in 0..32u8 {
        assert_eq!(
            (VALID_KINDS >> code) & 1 == 1,
            AccessKind::from_code(code).is_some(),
            "code {code}"
        );
    }
}

#[test]
fn flags_round_trip_every_kind_and_space() {
    let mut kinds = vec![AccessKind::Load, AccessKind::Store, AccessKind::Barrier];
    kinds.extend(AtomicOp::ALL.map(AccessKind::Atomic));
    for k in kinds {
        for s in MemSpace::ALL {
            assert_eq!(unpack_flags(pack_flags(k, s)), (k, s));
        }
        assert_eq!(AccessKind::from_token(&k.token()), Some(k));
    }
}

#[test]
fn finish_groups_rows_by_thread_stably() {
    let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(3), Order::PerThread).unwrap();
    let i = b.instruction("a", None);
    for (t, addr) in [(2, 1), (0, 2), (2, 3), (1, 4), (0, 5)] {
        b.push(Access {
            thread: t,
            inst: i,
            dyn_inst: 0,
            addr,
            size: 4,
            kind: AccessKind::Load,
            space: MemSpace::Global,
        })
        .unwrap();
    }
    let k = b.finish();
    let addrs: Vec<u64> = k.accesses().map(|a| a.addr).collect();
    assert_eq!(addrs, vec![2, 5, 4, 1, 3]);
    assert_eq!(k.thread_rows(0), 0..2);
    assert_eq!(k.thread_rows(2), 3..5);
}

#[test]
fn storage_is_at_most_24_bytes_per_access() {
    let n = 100_000;
    let mut b = KernelBuilder::new("k", Dim3::x(100), Dim3::x(1000), Order::PerThread).unwrap();
    let i = b.instruction("a", None);
    b.reserve(n);
    for r in 0..n {
        b.push(Access {
            thread: r as u32,
            inst: i,
            dyn_inst: 0,
            addr: r as u64 * 4,
            size: 4,
            kind: AccessKind::Load,
            space: MemSpace::Global,
        })
        .unwrap();
    }
    let k = b.finish();
    let per_access = (k.columns().heap_bytes()) as f64 / n as f64;
    assert!(per_access <= 24.0, "{per_access} bytes per access");
    assert_eq!(std::mem::size_of::<u64>() + 3 * 4 + 2 + 1, 23);
}

#[test]
fn builder_rejects_bad_rows() {
    let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(2), Order::PerThread).unwrap();
    let a = Access {
        thread: 5,
        inst: 0,
        dyn_inst: 0,
        addr: 0,
        size: 4,
        kind: AccessKind::Load,
        space: MemSpace::Global,
    };
    assert!(matches!(
        b.push(a),
        Err(BuildError::ThreadOutOfRange { .. })
    ));
    assert!(matches!(
        b.push(Access { thread: 0, ..a }),
        Err(BuildError::UnknownInstruction { .. })
    ));
    assert!(KernelBuilder::new("k", Dim3::new(0, 1, 1), Dim3::x(2), Order::PerThread).is_err());
}

fn parts_of(name: &str, pairs: &[(&str, &str)]) -> Vec<Kernel> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    crate::gen::generate(name, &pairs).unwrap().kernels
}

#[test]
fn a_kernel_taken_apart_and_put_back_is_the_same_kernel() {
    let mut kernels = parts_of("matmul", &[("n", "32")]);
    kernels.extend(parts_of(
        "hotspot",
        &[("nx", "16"), ("ny", "16"), ("steps", "2")],
    ));
    let mut b = KernelBuilder::new("din", Dim3::x(1), Dim3::x(1), Order::Issued).unwrap();
    let i = b.instruction("ld", None);
    for addr in [64u64, 0, 4096] {
        b.push(Access {
            thread: 0,
            inst: i,
            dyn_inst: 0,
            addr,
            size: 4,
            kind: AccessKind::Load,
            space: MemSpace::Global,
        })
        .unwrap();
    }
    kernels.push(b.finish());
    assert!(kernels.len() >= 4);
    for k in kernels {
        let back = Kernel::from_parts(k.clone().into_parts()).unwrap();
        assert_eq!(back, k);
        assert_eq!(back.cta_rows(1), k.cta_rows(1));
    }
}

#[test]
fn parts_that_do_not_fit_are_an_error_not_a_kernel() {
    let k = parts_of("matmul", &[("n", "32")]).remove(0);
    let mut p = k.clone().into_parts();
    p.columns.size.pop();
    assert_eq!(Kernel::from_parts(p), Err(PartsError::Lengths));
    let mut p = k.clone().into_parts();
    p.cta_starts.pop();
    assert!(matches!(
        Kernel::from_parts(p),
        Err(PartsError::CtaStarts { .. })
    ));
    let mut p = k.clone().into_parts();
    p.cta_starts.swap(1, 2);
    assert!(matches!(
        Kernel::from_parts(p),
        Err(PartsError::CtaStarts { .. })
    ));
    let mut p = k.clone().into_parts();
    p.columns.thread[3] = u32::MAX;
    assert!(matches!(
        Kernel::from_parts(p),
        Err(PartsError::Build(BuildError::ThreadOutOfRange { .. }))
    ));
    let mut p = k.clone().into_parts();
    p.columns.inst[0] = 99;
    assert!(matches!(
        Kernel::from_parts(p),
        Err(PartsError::Build(BuildError::UnknownInstruction {
            inst: 99,
            ..
        }))
    ));
    let mut p = k.clone().into_parts();
    p.columns.flags[0] = 0x1f;
    assert!(matches!(
        Kernel::from_parts(p),
        Err(PartsError::Build(BuildError::BadFlags { .. }))
    ));
    let mut p = k.into_parts();
    p.header.grid = Dim3::x(0);
    assert!(Kernel::from_parts(p).is_err());
}

#[test]
fn rows_checked_in_pieces_make_the_kernel_the_whole_check_makes() {
    let k = parts_of("matmul", &[("n", "32")]).remove(0);
    let p = k.clone().into_parts();
    let n = p.columns.len();
    for start in (0..n).step_by(1000) {
        p.check_rows(start..(start + 1000).min(n)).unwrap();
    }
    assert_eq!(Kernel::from_parts_rows_checked(p).unwrap(), k);
    // A bad row is found by the piece that holds it, not by the others.
    let mut p = k.clone().into_parts();
    p.columns.thread[1500] = u32::MAX;
    assert!(p.check_rows(0..1000).is_ok());
    assert!(matches!(
        p.check_rows(1000..2000),
        Err(PartsError::Build(BuildError::ThreadOutOfRange { .. }))
    ));
    // Rows past the end, or a range backwards, are an error, not a panic.
    assert_eq!(p.check_rows(n - 10..n + 10), Err(PartsError::Lengths));
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 20..10;
    assert_eq!(p.check_rows(backwards), Err(PartsError::Lengths));
    // Lengths and CTA starts are checked however the rows were.
    let mut p = k.into_parts();
    p.cta_starts.pop();
    assert!(matches!(
        Kernel::from_parts_rows_checked(p),
        Err(PartsError::CtaStarts { .. })
    ));
}
