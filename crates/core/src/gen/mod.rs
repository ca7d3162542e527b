//! Built-in kernel trace generators: classic GPU kernels as per-thread access streams in the
//! order each thread executes them, barriers included, so no GPU is needed.
//!
//! Instruction ids are declared in program order; the dynamic instance of an access inside a
//! loop is the loop iteration (Crawford 2014 §4.4), 0 outside loops. Only global-memory accesses
//! are traced (shared-memory traffic of tiled kernels is not an L1 access).

mod din_mix;
mod kernels;
mod params;
pub mod source;

pub use din_mix::DinMix;
pub use params::GenError;

pub use crate::trace::CtaSink;
use crate::trace::{Kernel, Trace};
use params::Params;
pub use params::{Control, GenProgress};

/// A built-in kernel: name, one-line description, parameters with defaults (`params` is what
/// the app pre-fills, so it must parse as it stands).
#[derive(Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static str,
    /// The generator.
    generate: Generate,
    /// The same kernel in the kernel language (`kernels/NAME.wsk`): the editor's example,
    /// giving the generator's trace exactly (tested).
    pub source: &'static str,
    /// Compute instructions per memory instruction in the kernel's machine code, for the
    /// performance model (`analyze::default_compute_per_memory`), where measured.
    pub compute_per_memory: Option<f64>,
}

/// How a built-in kernel is generated: one launch, or several.
#[derive(Clone, Copy)]
enum Generate {
    One(fn(&mut Params) -> Result<Kernel, GenError>),
    Launches(fn(&mut Params) -> Result<Vec<Kernel>, GenError>),
}
use Generate::{Launches, One};

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builtin")
            .field("name", &self.name)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

pub const BUILTINS: [Builtin; 18] = [
    kernels::vecadd::BUILTIN,
    kernels::matmul::BUILTIN,
    kernels::matmul_tiled::BUILTIN,
    kernels::transpose::BUILTIN,
    kernels::transpose_tiled::BUILTIN,
    kernels::stencil3d::BUILTIN,
    kernels::stencil2d::BUILTIN,
    kernels::column_copy::BUILTIN,
    kernels::strided::BUILTIN,
    kernels::reduction::BUILTIN,
    kernels::histogram::BUILTIN,
    kernels::spmv::BUILTIN,
    kernels::bfs::BUILTIN,
    kernels::merging::BUILTIN,
    kernels::hotspot::BUILTIN,
    kernels::histogram2::BUILTIN,
    kernels::nbody::BUILTIN,
    kernels::bfs_levels::BUILTIN,
];

/// The built-in kernel `name`.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Generates kernel `name` with `key=value` parameters. Every kernel also takes `elem`
/// (element size, default 4), `base` (first buffer address) and `align` (buffer alignment).
pub fn generate(name: &str, pairs: &[(String, String)]) -> Result<Trace, GenError> {
    generate_with(name, pairs, None)
}

/// [`generate`], asking `control` after every CTA whether to go on (to cancel, or to stop a
/// trace that would not fit in memory before it is built: see [`GenProgress::projected`]).
pub fn generate_with(
    name: &str,
    pairs: &[(String, String)],
    control: Option<Control<'_>>,
) -> Result<Trace, GenError> {
    let mut p = Params::new(name, pairs, control);
    run(name, &mut p)
}

/// Runs generator `name` with its parameters (and their sink, if any).
fn run(name: &str, p: &mut Params) -> Result<Trace, GenError> {
    let b = builtin(name).ok_or_else(|| GenError::UnknownKernel(name.into()))?;
    let kernels = match b.generate {
        One(f) => vec![f(p)?],
        Launches(f) => f(p)?,
    };
    p.finish()?;
    Ok(Trace { kernels })
}

/// [`generate_with`], handing each CTA to `sink` as it is built instead of returning the
/// trace: memory holds one CTA, whatever the size of the grid.
pub fn generate_by_cta(
    name: &str,
    pairs: &[(String, String)],
    mut control: Option<Control<'_>>,
    sink: &mut dyn CtaSink,
) -> Result<(), GenError> {
    // Both borrowed for this call only.
    let control: Option<Control<'_>> = match control.as_mut() {
        Some(c) => Some(&mut **c),
        None => None,
    };
    let mut p = Params::new(name, pairs, control);
    p.send_to(sink);
    run(name, &mut p).map(drop)
}

/// Parses `key=value` words.
pub fn parse_pairs(words: &[String]) -> Result<Vec<(String, String)>, String> {
    words
        .iter()
        .map(|w| {
            w.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("expected key=value, found `{w}`"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, x)| (k.to_string(), x.to_string()))
            .collect()
    }

    #[test]
    fn the_control_sees_every_cta_projects_the_size_and_can_stop() {
        let p = pairs(&[("n", "64")]);
        let full = generate("matmul", &p).unwrap().total_accesses() as u64;
        let mut seen = Vec::new();
        let mut watch = |g: &GenProgress| {
            seen.push(*g);
            true
        };
        generate_with("matmul", &p, Some(&mut watch)).unwrap();
        // 16 CTAs of the same work: the first one already projects the exact size.
        assert_eq!(seen.len(), 16);
        assert!(seen.iter().all(|g| g.projected == full && g.ctas == 16));
        assert_eq!(seen[15].accesses, full);
        // Stopped after the third CTA: an error that says how far it got.
        let mut calls = 0;
        let mut stop = |_: &GenProgress| {
            calls += 1;
            calls < 3
        };
        let e = generate_with("matmul", &p, Some(&mut stop)).unwrap_err();
        assert_eq!(
            e,
            GenError::Stopped {
                kernel: "matmul".into(),
                accesses: full / 16 * 3,
                projected: full
            }
        );
        // A multi-launch kernel counts the launches already built.
        let mut last = None;
        let mut watch = |g: &GenProgress| {
            last = Some(*g);
            true
        };
        let t = generate_with("hotspot", &pairs(&[]), Some(&mut watch)).unwrap();
        let g = last.unwrap();
        assert_eq!(g.launch + 1, t.kernels.len());
        assert_eq!(g.accesses, t.total_accesses() as u64);
    }

    #[test]
    fn every_kernel_generates_with_defaults() {
        for k in BUILTINS {
            let t = generate(k.name, &[]).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert!(t.kernels[0].memory_accesses() > 0, "{}", k.name);
        }
    }

    #[test]
    fn the_listed_defaults_parse_and_generate_as_written() {
        for k in BUILTINS {
            let words: Vec<String> = k.params.split_whitespace().map(String::from).collect();
            let pairs = parse_pairs(&words).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let t = generate(k.name, &pairs).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert_eq!(
                t,
                generate(k.name, &[]).unwrap(),
                "{}: defaults differ",
                k.name
            );
        }
    }

    #[test]
    fn unknown_names_and_keys_are_errors() {
        assert!(matches!(
            generate("nope", &[]),
            Err(GenError::UnknownKernel(_))
        ));
        let e = generate("vecadd", &[("size".into(), "3".into())])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown parameter `size`") && e.contains("n"),
            "{e}"
        );
        assert!(generate("vecadd", &[("n".into(), "x".into())]).is_err());
    }

    #[test]
    fn matmul_matches_listing_7_1() {
        let t = generate(
            "matmul",
            &[("n".into(), "4".into()), ("block".into(), "2,2".into())],
        )
        .unwrap();
        let k = &t.kernels[0];
        // Thread (row 1, col 2): CTA (1,0), thread (0,1).
        let th = k.thread_id(
            crate::trace::Dim3::new(1, 0, 0),
            crate::trace::Dim3::new(0, 1, 0),
        ) as u32;
        let a: Vec<_> = k.thread_rows(th).map(|r| k.access(r)).collect();
        assert_eq!(a.len(), 9);
        let base_a = a[0].addr - 4 * 4; // A[1*4 + 0]
        assert_eq!(a[2].addr, base_a + 4 * (4 + 1)); // A[row*n + 1]
        assert_eq!(a[3].addr - a[1].addr, 4 * 4); // B[(index+1)*n + col] - B[index*n + col]
        assert_eq!(
            (a[2].dyn_inst, a[8].kind),
            (1, crate::trace::AccessKind::Store)
        );
    }
}
