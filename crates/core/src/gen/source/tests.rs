//! The kernel language: every built-in kernel written in it gives the generator's trace
//! exactly (`kernels/*.wsk`), and errors point at the line and column.

use super::*;

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, x)| (k.to_string(), x.to_string()))
        .collect()
}

/// Each file of `kernels/` with the built-in kernel it writes, and a non-default setting
/// as the generator and as the source name it.
/// `key=value` pairs.
type Pairs = &'static [(&'static str, &'static str)];

const ROUND_TRIPS: &[(&str, &str, Pairs, Pairs)] = &[
    (
        "vecadd",
        include_str!("../../../../../kernels/vecadd.wsk"),
        &[("n", "1000"), ("block", "128")],
        &[("n", "1000"), ("threads", "128")],
    ),
    (
        "matmul",
        include_str!("../../../../../kernels/matmul.wsk"),
        &[("n", "40"), ("block", "8,4")],
        &[("n", "40"), ("bx", "8"), ("by", "4")],
    ),
    (
        "matmul-tiled",
        include_str!("../../../../../kernels/matmul-tiled.wsk"),
        &[("n", "32"), ("tile", "8")],
        &[("n", "32"), ("tile", "8")],
    ),
    (
        "transpose",
        include_str!("../../../../../kernels/transpose.wsk"),
        &[("width", "40"), ("height", "24")],
        &[("width", "40"), ("height", "24")],
    ),
    (
        "transpose-tiled",
        include_str!("../../../../../kernels/transpose-tiled.wsk"),
        &[("width", "40"), ("height", "24"), ("tile", "8")],
        &[("width", "40"), ("height", "24"), ("tile", "8")],
    ),
    (
        "stencil3d",
        include_str!("../../../../../kernels/stencil3d.wsk"),
        &[("nx", "11"), ("ny", "7"), ("nz", "5")],
        &[("nx", "11"), ("ny", "7"), ("nz", "5")],
    ),
    (
        "stencil2d",
        include_str!("../../../../../kernels/stencil2d.wsk"),
        &[("nx", "35"), ("ny", "20")],
        &[("nx", "35"), ("ny", "20")],
    ),
    (
        "column-copy",
        include_str!("../../../../../kernels/column-copy.wsk"),
        &[("threads", "64"), ("width", "40")],
        &[("threads", "64"), ("width", "40")],
    ),
    (
        "strided",
        include_str!("../../../../../kernels/strided.wsk"),
        &[("n", "500"), ("stride", "3")],
        &[("n", "500"), ("stride", "3")],
    ),
    (
        "reduction",
        include_str!("../../../../../kernels/reduction.wsk"),
        &[("n", "1000"), ("block", "64")],
        &[("n", "1000"), ("threads", "64")],
    ),
    (
        "hotspot",
        include_str!("../../../../../kernels/hotspot.wsk"),
        &[("nx", "20"), ("ny", "12"), ("steps", "3"), ("block", "8,8")],
        &[
            ("nx", "20"),
            ("ny", "12"),
            ("steps", "3"),
            ("bx", "8"),
            ("by", "8"),
        ],
    ),
    (
        "histogram2",
        include_str!("../../../../../kernels/histogram2.wsk"),
        &[
            ("n", "5000"),
            ("bins", "32"),
            ("ctas", "40"),
            ("block", "64"),
        ],
        &[
            ("n", "5000"),
            ("bins", "32"),
            ("ctas", "40"),
            ("threads", "64"),
        ],
    ),
    (
        "histogram",
        include_str!("../../../../../kernels/histogram.wsk"),
        &[
            ("n", "3000"),
            ("bins", "50"),
            ("block", "128"),
            ("seed", "7"),
        ],
        &[
            ("n", "3000"),
            ("bins", "50"),
            ("threads", "128"),
            ("seed", "7"),
        ],
    ),
    (
        "nbody",
        include_str!("../../../../../kernels/nbody.wsk"),
        &[("n", "200"), ("steps", "2"), ("block", "32")],
        &[("n", "200"), ("steps", "2"), ("threads", "32")],
    ),
    (
        "spmv",
        include_str!("../../../../../kernels/spmv.wsk"),
        &[
            ("rows", "300"),
            ("cols", "77"),
            ("nnz", "3"),
            ("seed", "5"),
            ("elem", "8"),
            ("block", "64"),
        ],
        &[
            ("rows", "300"),
            ("cols", "77"),
            ("nnz", "3"),
            ("seed", "5"),
            ("elem", "8"),
            ("threads", "64"),
        ],
    ),
    (
        "bfs",
        include_str!("../../../../../kernels/bfs.wsk"),
        &[
            ("nodes", "700"),
            ("degree", "3"),
            ("frontier", "60"),
            ("seed", "9"),
        ],
        &[
            ("nodes", "700"),
            ("degree", "3"),
            ("frontier", "60"),
            ("seed", "9"),
        ],
    ),
    (
        "bfs-levels",
        include_str!("../../../../../kernels/bfs-levels.wsk"),
        &[
            ("nodes", "900"),
            ("degree", "2"),
            ("seed", "4"),
            ("levels", "5"),
        ],
        &[
            ("nodes", "900"),
            ("degree", "2"),
            ("seed", "4"),
            ("levels", "5"),
        ],
    ),
    (
        "merging",
        include_str!("../../../../../kernels/merging.wsk"),
        &[
            ("vector", "1"),
            ("merge", "1"),
            ("blocks", "4"),
            ("block", "64"),
            ("loads", "7"),
        ],
        &[
            ("vector", "1"),
            ("merge", "1"),
            ("blocks", "4"),
            ("threads", "64"),
            ("loads", "7"),
        ],
    ),
];

/// Every variant of the merging micro-benchmark (its start indices differ per variant).
#[test]
fn every_variant_of_the_merging_benchmark_gives_its_trace() {
    let src = include_str!("../../../../../kernels/merging.wsk");
    for v in [
        &[("width", "64")][..],
        &[("width", "128"), ("blocks", "3")],
        &[("merge", "1")],
        &[
            ("merge", "1"),
            ("width", "64"),
            ("iters", "5"),
            ("loads", "3"),
        ],
        &[("vector", "1"), ("iters", "3")],
    ] {
        assert_eq!(
            generate(src, "merging.wsk", &pairs(v), None).unwrap(),
            crate::gen::generate("merging", &pairs(v)).unwrap(),
            "{v:?}"
        );
    }
}

#[test]
fn every_built_in_kernel_written_in_the_language_gives_its_trace() {
    for &(name, src, gen_pairs, src_pairs) in ROUND_TRIPS {
        let file = format!("{name}.wsk");
        let ours = generate(src, &file, &[], None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let theirs = crate::gen::generate(name, &[]).unwrap();
        assert_eq!(ours, theirs, "{name} with its defaults");
        let ours =
            generate(src, &file, &pairs(src_pairs), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let theirs = crate::gen::generate(name, &pairs(gen_pairs)).unwrap();
        assert_eq!(ours, theirs, "{name} with {src_pairs:?}");
        // The layout parameters of the generators apply too.
        let moved = [("base", "0x2000"), ("align", "4096")];
        assert_eq!(
            generate(src, &file, &pairs(&moved), None).unwrap(),
            crate::gen::generate(name, &pairs(&moved)).unwrap(),
            "{name} moved"
        );
    }
}

#[test]
fn a_kernel_streams_cta_by_cta_like_the_generators() {
    use crate::trace::{Assemble, KernelSink};
    let src = include_str!("../../../../../kernels/matmul.wsk");
    let mut whole = crate::trace::Trace::default();
    let mut assemble = Assemble::new(&mut whole as &mut dyn KernelSink);
    generate_by_cta(
        src,
        "matmul.wsk",
        &pairs(&[("n", "32")]),
        None,
        &mut assemble,
    )
    .unwrap();
    assert_eq!(
        whole,
        generate(src, "matmul.wsk", &pairs(&[("n", "32")]), None).unwrap()
    );
}

fn error(src: &str) -> String {
    generate(src, "k.wsk", &[], None).unwrap_err().to_string()
}

const HEAD: &str = "param n = 8;\ngrid(1);\nblock(n);\nfloat a[n];\n";

#[test]
fn errors_point_at_the_line_and_column() {
    // A missing semicolon at the end of a line: where it belongs, not at the next line's
    // first token, across blank lines and comments.
    let e = error(&format!(
        "{HEAD}kernel k {{\n  int i = threadIdx.x\n  float x = a[i];\n}}\n"
    ));
    assert!(e.starts_with("k.wsk:6:22: ") && e.contains("`;`"), "{e}");
    let e = error(&format!(
        "{HEAD}kernel k {{\n  int i = threadIdx.x // the thread\n\n  // next\n  float x = a[i];\n}}\n"
    ));
    assert!(e.starts_with("k.wsk:6:22: ") && e.contains("`;`"), "{e}");
    let e = error("param n = 8\n");
    assert!(e.starts_with("k.wsk:1:12: ") && e.contains("`;`"), "{e}");
    // Within a line: at the token met.
    let e = error(&format!(
        "{HEAD}kernel k {{\n  int i = threadIdx.x float;\n}}\n"
    ));
    assert!(e.starts_with("k.wsk:6:23: "), "{e}");
    // An unknown name, at the name.
    let e = error(&format!("{HEAD}kernel k {{\n  float x = a[j];\n}}\n"));
    assert_eq!(e, "k.wsk:6:15: unknown name `j`: not a variable or a param");
    // An index past the end, at the index.
    let e = error(&format!(
        "{HEAD}kernel k {{\n  float x = a[threadIdx.x + 1];\n}}\n"
    ));
    assert!(
        e.starts_with("k.wsk:6:") && e.contains("index 8 is outside `a` (8 elements)"),
        "{e}"
    );
    // An index that needs data.
    let e = error(&format!(
        "{HEAD}int idx[n];\nkernel k {{\n  float x = a[idx[threadIdx.x]];\n}}\n"
    ));
    assert!(e.contains("depends on data loaded from memory"), "{e}");
    // No kernel, no grid.
    assert!(error("param n = 1;").contains("no kernel"));
    assert!(error("block(1);\nkernel k { }").contains("`grid(X, Y, Z);` is missing"));
    // An unknown parameter given from outside names the params.
    let e = generate(
        &format!("{HEAD}kernel k {{ }}"),
        "k.wsk",
        &pairs(&[("m", "3")]),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unknown parameter `m`") && e.contains("n"),
        "{e}"
    );
    // Syntax only (the editor's check).
    assert!(check(&format!("{HEAD}kernel k {{ a[0] = ; }}"), "k.wsk").is_err());
    assert!(check(
        include_str!("../../../../../kernels/stencil3d.wsk"),
        "s.wsk"
    )
    .is_ok());
}

#[test]
fn the_language_covers_loops_atomics_and_control_flow() {
    let src = "param n = 4;\ngrid(1);\nblock(2);\nint h[n];\nfloat x[n];\n\
               kernel k {\n  int t = threadIdx.x;\n  int i = 0;\n  while (i < n) {\n    if (i == 2) { i++; continue; }\n    \
               atomicAdd(&h[i], 1);\n    i += 1;\n    if (t == 1 && i == 3) break;\n  }\n  \
               x[t] += 1.0f;\n  if (t == 0) return;\n  x[n - 1 - t] = t > 0 ? 1 : 2;\n}\n";
    let t = generate(src, "k.wsk", &[], None).unwrap();
    let k = &t.kernels[0];
    let names: Vec<&str> = k.instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, vec!["atom_h", "ld_x", "st_x", "st_x.2"]);
    let rows: Vec<(u32, u32, u32, u64)> = (0..k.len())
        .map(|r| {
            let a = k.access(r);
            (a.thread, a.inst, a.dyn_inst, (a.addr - 0x1000_0000))
        })
        .collect();
    // Each thread: atomics on h[0], h[1], h[3] (iterations 0, 1, 3: `continue` skips h[2]
    // but counts its iteration), then x[t] read and written; thread 0 returns, thread 1 also
    // stores x[2] (its `break` never comes: i is 4 by then).
    let h = |i: u64| i * 4;
    let x = |i: u64| 256 + i * 4;
    assert_eq!(
        rows,
        vec![
            (0, 0, 0, h(0)),
            (0, 0, 1, h(1)),
            (0, 0, 3, h(3)),
            (0, 1, 0, x(0)),
            (0, 2, 0, x(0)),
            (1, 0, 0, h(0)),
            (1, 0, 1, h(1)),
            (1, 0, 3, h(3)),
            (1, 1, 0, x(1)),
            (1, 2, 0, x(1)),
            (1, 3, 0, x(2)),
        ]
    );
}

/// The rows of kernel `k` of `t`: (thread, instruction, instance, address - base).
fn rows(t: &crate::trace::Trace, k: usize) -> Vec<(u32, u32, u32, u64)> {
    let k = &t.kernels[k];
    (0..k.len())
        .map(|r| {
            let a = k.access(r);
            (a.thread, a.inst, a.dyn_inst, a.addr - 0x1000_0000)
        })
        .collect()
}

#[test]
fn host_code_fills_arrays_untraced_and_sizes_them() {
    // The host draws three values below 10 from the seeded stream into a growing array,
    // and a second array is as long as the first's last value plus one.
    let src =
        "param s = 3;\ngrid(1);\nblock(3);\nint v[];\nbytes(s + 5) w[v[0] + v[1] + v[2] + 1];\n\
               srand(s);\nfor (int i = 0; i < 3; i++) { v[i] = random(10); }\n\
               kernel k {\n  int t = threadIdx.x;\n  float x = w[v[t]];\n}\n";
    let t = generate(src, "k.wsk", &[], None).unwrap();
    let mut rng = crate::rng::Rng::new(3);
    let drawn: Vec<u64> = (0..3).map(|_| rng.below(10)).collect();
    // `v` holds 3 ints (12 bytes) at the base; `w` (8-byte elements) at the next 256.
    let expected: Vec<(u32, u32, u32, u64)> = (0..3)
        .flat_map(|t| {
            [
                (t, 0, 0, t as u64 * 4),
                (t, 1, 0, 256 + drawn[t as usize] * 8),
            ]
        })
        .collect();
    assert_eq!(rows(&t, 0), expected);
    // Only the kernel's accesses are traced, with `w`'s element size.
    assert_eq!(t.kernels[0].access(1).size, 8);
}

#[test]
fn kernels_keep_known_values_across_threads_and_launches() {
    // A queue: each thread takes a slot with an atomic on a known counter and writes its
    // slot (threads run in order, so thread t gets slot t * 2 after the first launch's 0..3).
    // The host loop stops when the kernel has set the flag twice.
    let src = "grid(1);\nblock(3);\nint count[1];\nint out[8];\nint flag[1];\n\
               kernel k {\n  int slot = atomicAdd(&count[0], 1);\n  out[slot] = 1;\n  \
               if (slot == 4) { flag[0] += 1; }\n}\n\
               count[0] = 0;\nflag[0] = 0;\nint n = 0;\n\
               while (flag[0] == 0) { launch k; n++; }\n";
    let t = generate(src, "k.wsk", &[], None).unwrap();
    // Launch 1: slots 0, 1, 2; launch 2: slots 3, 4 (flag set), 5; then the host stops.
    assert_eq!(t.kernels.len(), 2);
    let out = |i: u64| 256 + i * 4;
    let flag = 512;
    assert_eq!(
        rows(&t, 0),
        vec![
            (0, 0, 0, 0),
            (0, 1, 0, out(0)),
            (1, 0, 0, 0),
            (1, 1, 0, out(1)),
            (2, 0, 0, 0),
            (2, 1, 0, out(2)),
        ]
    );
    assert_eq!(
        rows(&t, 1),
        vec![
            (0, 0, 0, 0),
            (0, 1, 0, out(3)),
            (1, 0, 0, 0),
            (1, 1, 0, out(4)),
            (1, 2, 0, flag),
            (1, 3, 0, flag),
            (2, 0, 0, 0),
            (2, 1, 0, out(5)),
        ]
    );
}

#[test]
fn an_unrolled_loop_gives_each_copy_its_instructions() {
    let src = "param m = 3;\ngrid(1);\nblock(1);\nfloat a[16];\n\
               kernel k {\n  for (int it = 0; it < 2; it++) {\n    #pragma unroll\n    \
               for (int c = 0; c < m; c++) {\n      float x = a[it * 8 + c] @ \"ld\";\n      a[c] = x;\n    }\n  }\n}\n";
    let t = generate(src, "k.wsk", &[], None).unwrap();
    let names: Vec<&str> = t.kernels[0]
        .instructions
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["ld_0", "st_a_0", "ld_1", "st_a_1", "ld_2", "st_a_2"]
    );
    // Each copy's accesses keep the outer loop's iteration as their instance.
    let expected: Vec<(u32, u32, u32, u64)> = (0..2u32)
        .flat_map(|it| {
            (0..3u32).flat_map(move |c| {
                [
                    (0, 2 * c, it, (it as u64 * 8 + c as u64) * 4),
                    (0, 2 * c + 1, it, c as u64 * 4),
                ]
            })
        })
        .collect();
    assert_eq!(rows(&t, 0), expected);
    // With m=1 there is one copy.
    let t = generate(src, "k.wsk", &pairs(&[("m", "1")]), None).unwrap();
    assert_eq!(t.kernels[0].instructions.len(), 2);
}

#[test]
fn host_code_errors_name_their_place() {
    let e = |body: &str| error(&format!("{HEAD}kernel k {{ }}\n{body}"));
    assert!(e("int x = random(4);").contains("before `srand(SEED);`"));
    assert!(e("int x = threadIdx.x;").contains("known only in a kernel"));
    let err = e("int b[];\nsrand(1);\nint y = b[0];");
    assert!(
        err.starts_with("k.wsk:8:9: ") && err.contains("read before the host code writes it"),
        "{err}"
    );
    assert!(e("int b[];").contains("`b` has no elements"));
    assert!(e("int b[b[0]];\nb[0] = 1;").contains("depends on itself"));
    assert!(e("launch nothing;").contains("no kernel `nothing`"));
    assert!(e("float c[4];\nc[4] = 1;").contains("index 4 is outside `c` (4 elements)"));
    // In a kernel: no draws, no launches.
    let k = |body: &str| error(&format!("{HEAD}kernel k {{ {body} }}"));
    assert!(k("int x = random(3);").contains("draws in the host code only"));
    assert!(k("launch k;").contains("belongs in the host code"));
    assert!(
        k("#pragma unroll\nfor (int c = 0; c < threadIdx.x; c++) { }")
            .contains("expected a constant")
    );
    assert!(k("#pragma unroll\nfor (int c = 0; c < 3; c++) { break; }").contains("cannot `break`"));
    assert!(check(
        &format!("{HEAD}kernel k {{ #pragma unroll\n a[0] = 1; }}"),
        "k.wsk"
    )
    .unwrap_err()
    .to_string()
    .contains("a `for` loop after `#pragma unroll`"));
    let err = error(&format!(
        "param e = 3;\n{HEAD}bytes(e) b[4];\nkernel k {{ }}"
    ));
    assert!(err.contains("elements of 3 bytes"), "{err}");
    // A grid from a host variable, worked out at the launch.
    let t = generate(
        "block(2);\ngrid(g);\nfloat a[8];\nkernel k { a[blockIdx.x * 2 + threadIdx.x] = 1; }\n\
         int g = 3;\nlaunch k;\n",
        "k.wsk",
        &[],
        None,
    )
    .unwrap();
    assert_eq!(t.kernels[0].grid.x, 3);
    // An endless loop in the host code, at its line.
    let err = e("int i = 0;\nwhile (1) { i++; }");
    assert!(err.starts_with("k.wsk:7:1: a loop ran"), "{err}");
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of programs, valid and not, to shuffle together.
    const TOKENS: &[&str] = &[
        "param n = 8;",
        "grid(",
        "block(",
        ")",
        "(",
        ";",
        "{",
        "}",
        "[",
        "]",
        "float a[n];",
        "int i",
        "=",
        "+",
        "-",
        "*",
        "/",
        "%",
        "<<",
        ">>",
        "<",
        "<<<",
        ">>>",
        "&&",
        "?",
        ":",
        "kernel k",
        "__global__ void k()",
        "for (int j = 0; j < n; j++)",
        "if (",
        "else",
        "a[i]",
        "a[",
        "threadIdx.x",
        "blockIdx.y",
        "atomicAdd(&a[0], 1)",
        "__syncthreads();",
        "launch k;",
        "@ \"x\"",
        "0x1f",
        "1.5f",
        "-9223372036854775808",
        "n",
        "i",
        "return;",
        "while (1)",
        "break;",
        "\n",
        " ",
        "// c\n",
        "/*",
        "*/",
        "é",
        "\"",
        "#pragma unroll",
        "srand(1);",
        "random(3)",
        "int b[];",
        "bytes(n) w[n];",
        "b[0] = 1;",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn any_text_gives_a_trace_or_an_error_naming_a_place(picks in prop::collection::vec(0..TOKENS.len(), 0..60)) {
            let src: String = picks.iter().map(|&i| TOKENS[i]).collect::<Vec<_>>().join(" ");
            let prefix = "param n = 4;\ngrid(1);\nblock(2);\nfloat a[n];\n";
            for text in [src.clone(), format!("{prefix}kernel k {{ {src} }}")] {
                let _ = check(&text, "k.wsk");
                // Runs are bounded: a small grid, loops stop at their limit.
                match generate(&text, "k.wsk", &[], None) {
                    Ok(_) => {}
                    Err(GenError::Source { line, column, .. }) => {
                        prop_assert!(line >= 1 && column >= 1);
                    }
                    Err(_) => {}
                }
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let src = format!("param n = {}1{};", "(".repeat(100_000), ")".repeat(100_000));
        let e = check(&src, "d.wsk").unwrap_err().to_string();
        assert!(e.contains("nest more than 200 deep"), "{e}");
    }
}

/// The generator's settings carried into the program that writes the same kernel give the
/// generator's trace.
#[test]
fn a_generators_pairs_carry_into_its_program() {
    for (name, src, gen_pairs, source_pairs) in ROUND_TRIPS {
        let (carried, dropped) = carry_pairs(src, &pairs(gen_pairs));
        if dropped.is_empty() {
            assert_eq!(carried, pairs(source_pairs), "{name}");
        }
    }
    let matmul = include_str!("../../../../../kernels/matmul.wsk");
    let (carried, dropped) = carry_pairs(
        matmul,
        &pairs(&[("n", "128"), ("block", "8,4"), ("x", "1")]),
    );
    assert_eq!(carried, pairs(&[("n", "128"), ("bx", "8"), ("by", "4")]));
    assert_eq!(dropped, ["x"]);
    let t = generate(matmul, "m.wsk", &carried, None).unwrap();
    let g = crate::gen::generate("matmul", &pairs(&[("n", "128"), ("block", "8,4")])).unwrap();
    assert_eq!(t, g);
}
