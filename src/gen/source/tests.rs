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
        include_str!("../../../kernels/vecadd.wsk"),
        &[("n", "1000"), ("block", "128")],
        &[("n", "1000"), ("threads", "128")],
    ),
    (
        "matmul",
        include_str!("../../../kernels/matmul.wsk"),
        &[("n", "40"), ("block", "8,4")],
        &[("n", "40"), ("bx", "8"), ("by", "4")],
    ),
    (
        "matmul-tiled",
        include_str!("../../../kernels/matmul-tiled.wsk"),
        &[("n", "32"), ("tile", "8")],
        &[("n", "32"), ("tile", "8")],
    ),
    (
        "transpose",
        include_str!("../../../kernels/transpose.wsk"),
        &[("width", "40"), ("height", "24")],
        &[("width", "40"), ("height", "24")],
    ),
    (
        "transpose-tiled",
        include_str!("../../../kernels/transpose-tiled.wsk"),
        &[("width", "40"), ("height", "24"), ("tile", "8")],
        &[("width", "40"), ("height", "24"), ("tile", "8")],
    ),
    (
        "stencil3d",
        include_str!("../../../kernels/stencil3d.wsk"),
        &[("nx", "11"), ("ny", "7"), ("nz", "5")],
        &[("nx", "11"), ("ny", "7"), ("nz", "5")],
    ),
    (
        "stencil2d",
        include_str!("../../../kernels/stencil2d.wsk"),
        &[("nx", "35"), ("ny", "20")],
        &[("nx", "35"), ("ny", "20")],
    ),
    (
        "column-copy",
        include_str!("../../../kernels/column-copy.wsk"),
        &[("threads", "64"), ("width", "40")],
        &[("threads", "64"), ("width", "40")],
    ),
    (
        "strided",
        include_str!("../../../kernels/strided.wsk"),
        &[("n", "500"), ("stride", "3")],
        &[("n", "500"), ("stride", "3")],
    ),
    (
        "reduction",
        include_str!("../../../kernels/reduction.wsk"),
        &[("n", "1000"), ("block", "64")],
        &[("n", "1000"), ("threads", "64")],
    ),
    (
        "hotspot",
        include_str!("../../../kernels/hotspot.wsk"),
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
        include_str!("../../../kernels/histogram2.wsk"),
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
        include_str!("../../../kernels/histogram.wsk"),
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
        include_str!("../../../kernels/nbody.wsk"),
        &[("n", "200"), ("steps", "2"), ("block", "32")],
        &[("n", "200"), ("steps", "2"), ("threads", "32")],
    ),
];

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
    let src = include_str!("../../../kernels/matmul.wsk");
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
    // A missing semicolon: at the token after it.
    let e = error(&format!(
        "{HEAD}kernel k {{\n  int i = threadIdx.x\n  float x = a[i];\n}}\n"
    ));
    assert!(e.starts_with("k.wsk:7:3: ") && e.contains("`;`"), "{e}");
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
    assert!(check(include_str!("../../../kernels/stencil3d.wsk"), "s.wsk").is_ok());
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
