//! The `.traceg` reader: address modes, errors, legacy and lineinfo files, and that
//! streaming CTA by CTA gives what reading whole gives.

use super::*;
use crate::rng::Rng;
use crate::trace::{open_trace, CtaSink, Kernel, ReadOptions, SinkHooks, Trace, WarpInstructions};
use proptest::prelude::*;

const HEADER: &str = "-kernel name = k\n-grid dim = (2,1,1)\n-block dim = (64,1,1)\n-accelsim tracer version = 4\n\n#BEGIN_TB\nthread block = 1,0,0\nwarp = 1\n";

fn one(body: &str) -> Result<super::super::Kernel, TraceError> {
    read_kernel(format!("{HEADER}{body}").as_bytes(), "k.traceg")
}

#[test]
fn address_modes_decode_per_active_lane() {
    // Lanes 0, 1 and 3 active: list, base+stride and base+deltas (popcount-1 deltas).
    let k = one("insts = 4\n0010 0000000b 1 R1 LDG.E 1 R2 4 0 0x100 0x104 0x10c\n0018 0000000b 1 R1 LDG.E.64 1 R2 8 1 0x200 8\n0020 0000000b 0 STG.E 2 R2 R3 4 2 0x300 -4 16\n0028 ffffffff 0 EXIT 0 0\n#END_TB\n").unwrap();
    let rows: Vec<_> = k
        .accesses()
        .map(|a| (a.thread, a.dyn_inst, a.addr, a.size, a.kind))
        .collect();
    let t0 = 64 + 32; // CTA 1, warp 1
    assert_eq!(
        rows,
        vec![
            (t0, 0, 0x100, 4, AccessKind::Load),
            (t0, 1, 0x200, 8, AccessKind::Load),
            (t0, 2, 0x300, 4, AccessKind::Store),
            (t0 + 1, 0, 0x104, 4, AccessKind::Load),
            (t0 + 1, 1, 0x208, 8, AccessKind::Load),
            (t0 + 1, 2, 0x2fc, 4, AccessKind::Store),
            (t0 + 3, 0, 0x10c, 4, AccessKind::Load),
            (t0 + 3, 1, 0x210, 8, AccessKind::Load),
            (t0 + 3, 2, 0x30c, 4, AccessKind::Store),
        ]
    );
    assert_eq!(k.order, Order::PerWarp);
    assert_eq!(
        k.info.warp_instructions,
        vec![WarpInstructions {
            cta: 1,
            warp: 1,
            count: 4
        }]
    );
    assert_eq!(k.info.attribute("accelsim_tracer_version"), Some("4"));
    assert_eq!(k.instructions[0].pc, Some(0x10));
}

#[test]
fn loads_group_until_an_instruction_reads_what_one_of_them_loaded() {
    // Two independent loads (R4, R6), then an add reads R4: one group of two. A move that
    // overwrites R8 takes it out of the next group, so the add reading R8 does not end it; the
    // warp's end closes that group of one. Non-memory instructions are never loads, and a
    // store is not a load. 3 loads in 2 groups: 1.5 independent loads.
    let k = one(concat!(
        "insts = 9\n",
        "0010 00000001 1 R4 LDG.E 1 R2 4 0 0x100\n",
        "0018 00000001 1 R6 LDG.E 1 R2 4 0 0x200\n",
        "0020 00000001 1 R7 IADD 2 R4 R6 0\n",
        "0028 00000001 1 R8 LDG.E 1 R2 4 0 0x300\n",
        "0030 00000001 1 R8 MOV 1 R255 0\n",
        "0038 00000001 1 R10 IADD 1 R8 0\n",
        "0040 00000001 1 R12 FFMA 2 R10 R10 0\n",
        "0048 00000001 0 STG.E 2 R2 R12 4 0 0x400\n",
        "0050 ffffffff 0 EXIT 0 0\n#END_TB\n"
    ))
    .unwrap();
    let g = k.info.load_groups;
    assert_eq!((g.loads, g.groups), (3, 2));
    assert_eq!(k.info.independent_loads(), Some(1.5));
}

#[test]
fn reading_popcount_deltas_like_accel_sim_is_an_error() {
    // Two active lanes: one delta. Two deltas leave a stray field.
    let e = one("insts = 1\n0010 00000003 0 STG.E 2 R2 R3 4 2 0x300 4 4 4\n#END_TB\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 10") && e.contains("unexpected fields"),
        "{e}"
    );
}

#[test]
fn malformed_input_names_the_line_and_what_was_expected() {
    for (body, want) in [
        (
            "insts = 2\n0010 ffffffff 0 NOP 0 0\n#END_TB\n",
            "announced `insts = 2`",
        ),
        (
            "insts = 1\n0010 ffffffff 0 LDG.E 1 R2 4 0 0x1\n#END_TB\n",
            "expected an address",
        ),
        (
            "insts = 1\n0010 ffffffff 0 LDG.E 1 R2 4 7 0x1\n#END_TB\n",
            "address mode",
        ),
        ("insts = 1\n0010 zz 0 NOP 0 0\n#END_TB\n", "active mask"),
        ("insts = 1\n0010 ffffffff 0 NOP 0 0\n", "expected #END_TB"),
    ] {
        let e = one(body).unwrap_err().to_string();
        assert!(
            e.starts_with("k.traceg: line ") && e.contains(want),
            "{body}: {e}"
        );
    }
    // Lanes beyond the block's threads.
    let e = read_kernel(
        "-grid dim = (1,1,1)\n-block dim = (40,1,1)\n-accelsim tracer version = 4\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\ninsts = 1\n0010 000001ff 0 LDG.E 1 R2 4 1 0x0 4\n#END_TB\n".as_bytes(),
        "b",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("only 40 threads"), "{e}");
}

#[test]
fn legacy_versions_carry_the_block_and_warp_on_each_line() {
    let k = read_kernel(
        "-grid dim = (2,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 2\nenable lineinfo = 0\n#BEGIN_TB\nthread block = 1,0,0\n1 0 0 0 0010 00000001 0 LDG.E 1 R2 4 0 0x40\n#END_TB\n"
            .replace("enable lineinfo = 0\n", "")
            .as_bytes(),
        "old",
    )
    .unwrap();
    assert_eq!(k.access(0).thread, 32);
    assert_eq!(k.access(0).addr, 0x40);
}

#[test]
fn lineinfo_traces_keep_each_instructions_source_line() {
    let head = "-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 4\n-enable lineinfo = 1\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 4\n";
    let k = read_kernel(
        format!("{head}3 0000 ffffffff 1 R1 MOV 0 0\n7 0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n7 0020 ffffffff 1 R3 LDG.E 1 R6 4 1 0x200 4\n0 0030 ffffffff 0 STG.E 2 R8 R3 4 1 0x300 4\n#END_TB\n").as_bytes(),
        "k.traceg",
    )
    .unwrap();
    let lines: Vec<(&str, Option<u32>)> = k
        .instructions
        .iter()
        .map(|i| (i.name.as_str(), i.line))
        .collect();
    assert_eq!(
        lines,
        [
            ("LDG.E@0010", Some(7)),
            ("LDG.E@0020", Some(7)),
            ("STG.E@0030", None)
        ]
    );
    // Without the header key the first field is the PC, and no line is invented.
    let plain = read_kernel(
        format!(
            "{}0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n#END_TB\n",
            head.replace("-enable lineinfo = 1\n", "")
                .replace("insts = 4", "insts = 1")
        )
        .as_bytes(),
        "k.traceg",
    )
    .unwrap();
    assert_eq!(plain.instructions[0].line, None);
    assert_eq!(plain.instructions[0].pc, Some(0x10));
    let e = read_kernel(
        format!("{head}x7 0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n#END_TB\n").as_bytes(),
        "k.traceg",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("line 9") && e.contains("source line number"),
        "{e}"
    );
}

#[test]
fn opcodes_map_to_kind_and_space() {
    assert_eq!(classify(b"LDG.E.CG"), (AccessKind::Load, MemSpace::Global));
    assert_eq!(classify(b"LDS.U.128"), (AccessKind::Load, MemSpace::Shared));
    assert_eq!(classify(b"STL.64"), (AccessKind::Store, MemSpace::Local));
    assert_eq!(
        classify(b"ATOM.E.CAS"),
        (AccessKind::Atomic(AtomicOp::Cas), MemSpace::Global)
    );
    assert_eq!(
        classify(b"RED.E.ADD.F32.FTZ.RN"),
        (AccessKind::Atomic(AtomicOp::Add), MemSpace::Global)
    );
    assert_eq!(
        classify(b"ATOMS.EXCH"),
        (AccessKind::Atomic(AtomicOp::Exch), MemSpace::Shared)
    );
}

/// What a source handed a [`CtaSink`]: the CTAs given one by one, the kernels given whole,
/// and every kernel assembled.
#[derive(Default)]
struct Recorded {
    ctas: Vec<u32>,
    whole: usize,
    /// Takes instructions as they are found (the file is read once).
    takes_more: bool,
    trace: Trace,
    building: Option<crate::trace::model::KernelBuilder>,
}

impl KernelSink for Recorded {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.whole += 1;
        self.trace.kernels.push(k);
        Ok(())
    }
}

impl CtaSink for Recorded {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        assert!(header.is_empty(), "a header carries no rows");
        self.building = Some(crate::trace::sink::builder_for(header)?);
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let tpb = self.building.as_ref().unwrap().block().count() as u32;
        assert!(
            rows.thread.windows(2).all(|w| w[0] <= w[1])
                && rows.thread.iter().all(|&t| t / tpb == cta),
            "CTA {cta}: rows of its threads, grouped by thread"
        );
        self.ctas.push(cta);
        crate::trace::sink::append_cta(self.building.as_mut(), cta, rows)
    }
    fn issued(&mut self, _rows: &Columns) -> Result<(), TraceError> {
        panic!("Accel-Sim kernels are scheduled, not issued-order")
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        let k = crate::trace::sink::finish(self.building.take())?;
        self.trace.kernels.push(k);
        Ok(())
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for Recorded {
    fn takes_more_instructions(&self) -> bool {
        self.takes_more
    }
    fn more_instructions(&mut self, added: &[crate::trace::Instruction]) -> Result<(), TraceError> {
        crate::trace::sink::declare_more(self.building.as_mut(), added)
    }
}

/// `k` without the counts found at a kernel's end, which a read once leaves out.
fn counts_aside(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    k.info.warp_instructions.clear();
    k.info.opcodes.clear();
    k.info.load_groups = Default::default();
    k
}

/// A `.traceg` of `ctas` (linear ids, in this order) of a 1-D or 2-D grid: each warp runs a
/// few instructions at a handful of PCs, with random masks, widths and address modes.
pub(super) fn synthetic(seed: u64, grid: Dim3, tpb: u32, ctas: &[u32], version: u32) -> String {
    let mut r = Rng::new(seed);
    let mut s = format!(
        "-kernel name = k{seed}\n-grid dim = ({},{},{})\n-block dim = ({tpb},1,1)\n-accelsim tracer version = {version}\n\n",
        grid.x, grid.y, grid.z
    );
    let opcodes = ["LDG.E", "STG.E", "NOP", "LDS", "ATOMG.E.ADD", "LDG.E.64"];
    for &c in ctas {
        let idx = grid.from_linear(c as u64);
        s += &format!(
            "#BEGIN_TB\n\nthread block = {},{},{}\n\n",
            idx.x, idx.y, idx.z
        );
        for w in 0..tpb.div_ceil(32) {
            let lanes = (tpb - w * 32).min(32);
            let full = if lanes == 32 {
                u32::MAX
            } else {
                (1 << lanes) - 1
            };
            let n = r.below(5);
            s += &format!("warp = {w}\ninsts = {n}\n");
            for _ in 0..n {
                let op = opcodes[r.below(opcodes.len() as u64) as usize];
                let pc = 0x10 * (1 + r.below(6));
                let mask = (r.next_u64() as u32 & full).max(1);
                let legacy = if version < 3 {
                    format!("{} {} {} {w} ", idx.x, idx.y, idx.z)
                } else {
                    String::new()
                };
                if op == "NOP" {
                    s += &format!("{legacy}{pc:04x} {mask:08x} 0 NOP 0 0\n");
                    continue;
                }
                let width = if op.ends_with("64") { 8 } else { 4 };
                let base = 0x1000 + r.below(1 << 16) * 4;
                let addrs = match r.below(3) {
                    0 => (0..mask.count_ones())
                        .map(|i| format!(" {:#x}", base + 4 * i as u64))
                        .collect::<String>()
                        .replacen(' ', " 0 ", 1),
                    1 => format!(" 1 {base:#x} {}", width * (r.below(3) as i64 - 1)),
                    _ => format!(
                        " 2 {base:#x}{}",
                        (1..mask.count_ones())
                            .map(|_| format!(" {}", r.below(64) as i64 - 32))
                            .collect::<String>()
                    ),
                };
                s += &format!("{legacy}{pc:04x} {mask:08x} 1 R1 {op} 1 R2 {width}{addrs}\n");
            }
        }
        s += "\n#END_TB\n";
    }
    s
}

/// Streams the file `text` written to disk, and reads it whole.
fn stream_and_whole(name: &str, text: &str) -> (Recorded, Kernel) {
    let (rec, whole, _) = streamed_once_and_whole(name, text);
    (rec, whole)
}

/// [`stream_and_whole`], and streamed into a receiver that takes instructions as they are
/// found (read once).
fn streamed_once_and_whole(
    name: &str,
    text: &str,
) -> (Recorded, Kernel, Result<Recorded, TraceError>) {
    let path =
        crate::trace::testing::scratch("accelsim", &format!("{name}.traceg"), text.as_bytes());
    let stream = |mut rec: Recorded| {
        let opts = ReadOptions::default();
        let open = open_trace(&path, opts, &|s| s, &|s| s).unwrap();
        open.stream(&|s| s, &|s| s, &mut rec).map(|()| rec)
    };
    let rec = stream(Recorded::default()).unwrap();
    let once = stream(Recorded {
        takes_more: true,
        ..Recorded::default()
    });
    let whole = read_kernel(text.as_bytes(), "whole").unwrap();
    (rec, whole, once)
}

#[test]
fn a_kernel_in_cta_order_streams_cta_by_cta_as_it_reads_whole() {
    let grid = Dim3::new(3, 2, 1);
    let text = synthetic(7, grid, 80, &[0, 1, 3, 4, 5], 4);
    let (rec, whole) = stream_and_whole("ordered", &text);
    assert_eq!(rec.whole, 0);
    assert!(!rec.ctas.is_empty() && rec.ctas.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(rec.trace.kernels.len(), 1);
    assert!(rec.trace.kernels[0] == whole);
    assert!(!whole.info.warp_instructions.is_empty());
}

#[test]
fn read_once_a_kernel_gets_the_instructions_of_blocks_without_accesses_too() {
    // CTA 1 runs only a load with no active lane, at a PC not seen before: no access, but
    // an instruction.
    let text = "-kernel name = tail\n-grid dim = (2,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 4\n\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n0010 ffffffff 1 R1 LDG.E 1 R2 4 1 0x1000 4\n#END_TB\n#BEGIN_TB\nthread block = 1,0,0\nwarp = 0\ninsts = 1\n0020 00000000 1 R1 LDG.E.64 1 R2 8 0\n#END_TB\n";
    let (_, whole, once) = streamed_once_and_whole("tail", text);
    let once = once.unwrap();
    assert_eq!(whole.instructions.len(), 2);
    assert!(counts_aside(&once.trace.kernels[0]) == counts_aside(&whole));
}

#[test]
fn read_once_the_first_cta_goes_on_before_the_file_is_read() {
    let ctas: Vec<u32> = (0..3000).collect();
    let text = synthetic(11, Dim3::x(3000), 64, &ctas, 4);
    let dir = std::env::temp_dir().join(format!("ws-accelsim-first-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long.traceg");
    std::fs::write(&path, &text).unwrap();
    let once = crate::trace::testing::read_before_first_kernel(&path, true);
    let twice = crate::trace::testing::read_before_first_kernel(&path, false);
    std::fs::remove_dir_all(&dir).unwrap();
    let len = text.len() as u64;
    assert!(len > 1 << 20, "{len}");
    assert!(once < len / 10, "{once} of {len}");
    assert!(twice >= len, "{twice} of {len}");
}

#[test]
fn blocks_out_of_order_or_mixing_ctas_are_read_whole() {
    let grid = Dim3::x(4);
    // CTA 2 before CTA 1.
    let text = synthetic(3, grid, 64, &[0, 2, 1, 3], 4);
    let (rec, whole, once) = streamed_once_and_whole("disordered", &text);
    assert_eq!((rec.whole, rec.ctas.len()), (1, 0));
    assert!(rec.trace.kernels[0] == whole);
    // Read once, CTA 1 after CTA 2 stops the read: it is read again in two passes.
    let e = once.map(|_| ()).unwrap_err();
    assert!(
        e.must_read_again() && e.to_string().contains("increasing CTA order"),
        "{e}"
    );
    // A legacy file whose second block holds lines of two CTAs.
    let line =
        |cta: u32, addr: u32| format!("{cta} 0 0 0 0010 00000001 1 R1 LDG.E 1 R2 4 0 {addr:#x}\n");
    let text = format!(
        "-kernel name = mixed\n-grid dim = (4,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 2\n#BEGIN_TB\nthread block = 0,0,0\n{}#END_TB\n#BEGIN_TB\nthread block = 1,0,0\n{}{}#END_TB\n",
        line(0, 0x40),
        line(1, 0x80),
        line(3, 0xc0)
    );
    let (rec, whole, once) = streamed_once_and_whole("mixed", &text);
    assert_eq!((rec.whole, rec.ctas.len()), (1, 0));
    assert!(rec.trace.kernels[0] == whole);
    let e = once.map(|_| ()).unwrap_err();
    assert!(
        e.must_read_again() && e.to_string().contains("several CTAs"),
        "{e}"
    );
}

#[test]
fn a_damaged_line_found_by_the_second_pass_names_its_line() {
    let text = synthetic(5, Dim3::x(2), 32, &[0, 1], 4);
    // An address that is not hex: the scan decodes no address, so the read that follows
    // finds it.
    let line = text
        .lines()
        .position(|l| l.contains(" 0x"))
        .expect("a memory instruction");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[line] = lines[line].replacen(" 0x", " 0xZZ", 1);
    let bad = lines.join("\n") + "\n";
    let dir = std::env::temp_dir().join(format!("ws-accelsim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.traceg");
    std::fs::write(&path, &bad).unwrap();
    let open = open_trace(&path, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    let e = open
        .stream(&|s| s, &|s| s, &mut Recorded::default())
        .unwrap_err()
        .to_string();
    // Read once, the read finds it too, after the CTAs before it.
    let open = open_trace(&path, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    let mut once = Recorded {
        takes_more: true,
        ..Recorded::default()
    };
    let e_once = open.stream(&|s| s, &|s| s, &mut once).unwrap_err();
    assert_eq!(e_once.to_string(), e);
    let whole = read_kernel(bad.as_bytes(), &path.display().to_string())
        .unwrap_err()
        .to_string();
    assert_eq!(e, whole);
    assert!(
        e.contains(&format!("line {}", line + 1)) && e.contains("address"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any kernel: streamed (CTA by CTA when its blocks are in order, else whole) it is
    /// the kernel read whole. Read once, for a receiver that takes instructions as they are
    /// found, it is too but for the counts found at its end, or where the two reads hold it
    /// whole, it asks to be read again.
    #[test]
    fn streaming_gives_the_kernel_read_whole(
        seed in any::<u64>(),
        gx in 1u32..5, gy in 1u32..3,
        tpb in 1u32..100,
        shuffle in any::<bool>(),
        legacy in any::<bool>(),
    ) {
        let grid = Dim3::new(gx, gy, 1);
        let mut r = Rng::new(seed ^ 1);
        let mut ctas: Vec<u32> = (0..gx * gy).filter(|_| r.below(4) != 0).collect();
        if shuffle {
            for i in (1..ctas.len()).rev() {
                ctas.swap(i, r.below(i as u64 + 1) as usize);
            }
        }
        let text = synthetic(seed, grid, tpb, &ctas, if legacy { 2 } else { 4 });
        let (rec, whole, once) = streamed_once_and_whole(&format!("p{seed}"), &text);
        prop_assert_eq!(rec.trace.kernels.len(), 1);
        prop_assert!(rec.trace.kernels[0] == whole);
        match once {
            Ok(once) => {
                prop_assert_eq!((once.whole, rec.whole), (0, 0));
                prop_assert_eq!(&once.ctas, &rec.ctas);
                prop_assert!(once.trace.kernels.len() == 1 && counts_aside(&once.trace.kernels[0]) == counts_aside(&whole));
            }
            Err(e) => {
                prop_assert!(e.must_read_again(), "{}", e);
                prop_assert_eq!(rec.whole, 1);
            }
        }
        let ordered = ctas.windows(2).all(|w| w[0] < w[1]);
        if ordered {
            prop_assert_eq!(rec.whole, 0);
        }
    }
}
