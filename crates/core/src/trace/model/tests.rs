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
