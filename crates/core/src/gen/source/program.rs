//! Runs a whole kernel-language program: its params, its kernels' instructions, then its
//! host code (the top-level statements), which fills arrays with known data, lays the
//! arrays out at the first launch and launches the kernels, each built CTA by CTA through
//! the generators' builder.

use rustc_hash::{FxHashMap, FxHashSet};

use super::eval::{constant, Env, Launcher, RunError, Side, Thread, Val};
use super::memory::{Array, Memory};
use super::{local_shared, parse, source_error, unroll, Sites};
use crate::gen::kernels;
use crate::gen::params::{GenError, Layout, Params};
use crate::trace::{Dim3, Kernel};

use super::ast::*;

/// `grid(...)` or `block(...)`: its dimensions and where it is written.
type Dims = (Vec<Expr>, usize);

/// Launches one program may make.
const MAX_LAUNCHES: usize = 1 << 16;

/// A launch shape's dimensions, each at least 1.
fn dims(what: &str, d: &Dims, params: &FxHashMap<String, i64>) -> Result<[i64; 3], RunError> {
    let (v, at) = d;
    let mut out = [1i64; 3];
    for (k, e) in v.iter().enumerate() {
        let x = constant(e, params).map_err(|e| RunError {
            pos: e.pos.max(*at),
            message: e.message,
        })?;
        if !(1..=1 << 31).contains(&x) {
            return Err(RunError {
                pos: *at,
                message: format!("{what} dimension {k} is {x}: expected at least 1"),
            });
        }
        out[k] = x;
    }
    Ok(out)
}

/// Whether any statement launches a kernel.
fn launches(v: &[Stmt]) -> bool {
    v.iter().any(|s| match s {
        Stmt::Launch(..) => true,
        Stmt::Block(v) => launches(v),
        Stmt::If(_, a, b) => {
            launches(std::slice::from_ref(a))
                || b.as_deref()
                    .is_some_and(|b| launches(std::slice::from_ref(b)))
        }
        Stmt::For { body, .. } | Stmt::While(_, body, _) => launches(std::slice::from_ref(body)),
        _ => false,
    })
}

/// A kernel ready to launch: its definition, instruction names and shared arrays.
struct Prepared<'a> {
    def: &'a KernelDef,
    insts: Vec<String>,
    shared: FxHashSet<String>,
}

/// The host code's launches: each builds its kernel into `out`.
struct Launches<'a, 'p> {
    p: &'a Params<'p>,
    kernels: Vec<Prepared<'a>>,
    params: &'a FxHashMap<String, i64>,
    /// The program's `grid(...)` and `block(...)`, for kernels without their own.
    shape: Option<&'a (Dims, Dims)>,
    out: Vec<Kernel>,
    /// A generator error (stopped, too large) behind the last `Err`.
    failed: Option<GenError>,
}

impl Launches<'_, '_> {
    fn stop(&mut self, e: GenError) -> RunError {
        self.failed = Some(e);
        RunError {
            pos: 0,
            message: String::new(),
        }
    }
}

impl Launcher for Launches<'_, '_> {
    fn launch(
        &mut self,
        name: &str,
        at: usize,
        vars: &[(&str, Val)],
        mem: &mut Memory,
    ) -> Result<(), RunError> {
        let Some(k) = self.kernels.iter().find(|k| k.def.name == name) else {
            return Err(RunError {
                pos: at,
                message: format!("no kernel `{name}` to launch"),
            });
        };
        if self.out.len() == MAX_LAUNCHES {
            return Err(RunError {
                pos: at,
                message: format!("more than {MAX_LAUNCHES} launches"),
            });
        }
        let mut params = self.params.clone();
        params.extend(
            vars.iter()
                .filter_map(|(n, v)| v.map(|v| (n.to_string(), v))),
        );
        let (grid, block) = match (&k.def.launch, self.shape) {
            (Some((g, b, pos)), _) => (
                dims("grid", &(g.clone(), *pos), &params)?,
                dims("block", &(b.clone(), *pos), &params)?,
            ),
            (None, Some((g, b))) => (dims("grid", g, &params)?, dims("block", b, &params)?),
            // Without a program shape every kernel has its own.
            (None, None) => ([1, 1, 1], [1, 1, 1]),
        };
        let env = Env {
            params,
            shared: k.shared.clone(),
            grid,
            block,
        };
        let insts: Vec<&str> = k.insts.iter().map(String::as_str).collect();
        let mut failed: Option<RunError> = None;
        let d = |v: [i64; 3]| Dim3::new(v[0] as u32, v[1] as u32, v[2] as u32);
        let body = &k.def.body;
        let built = kernels::build(
            self.p,
            &k.def.name,
            d(grid),
            d(block),
            4,
            &insts,
            |cta, tid, emit| {
                if failed.is_some() {
                    return;
                }
                let side = Side::Device {
                    cta: [cta.x as i64, cta.y as i64, cta.z as i64],
                    tid: [tid.x as i64, tid.y as i64, tid.z as i64],
                    emit,
                };
                if let Err(e) = Thread::new(&env, mem, side).run(body) {
                    failed = Some(e);
                }
            },
        );
        if let Some(e) = failed {
            return Err(e);
        }
        match built {
            Ok(kernel) => {
                self.out.push(kernel);
                Ok(())
            }
            Err(e) => Err(self.stop(e)),
        }
    }

    fn tick(&mut self) -> Result<(), RunError> {
        // No CTA built yet: the caller is asked whether to go on, with no progress to show.
        self.p.keep_going(0, 0, 0).map_err(|e| self.stop(e))
    }
}

/// Parses the program, prepares its kernels and runs its host code.
pub(super) fn run(src: &str, file: &str, p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let at = |pos: usize, m: String| source_error(src, file, pos, m);
    let run_err = |e: RunError| source_error(src, file, e.pos, e.message);
    let mut prog = parse::program(src).map_err(|e| super::parse_error(src, file, e))?;
    if prog.kernels.is_empty() {
        return Err(at(
            src.len(),
            "no kernel: write `kernel NAME { ... }`".into(),
        ));
    }
    let params = param_values(&prog, p, &at)?;
    // The program's launch shape, for the kernels without their own `<<<...>>>`.
    let shape = if prog.kernels.iter().all(|k| k.launch.is_some()) {
        None
    } else {
        let missing = |what: &str| at(src.len(), format!("`{what}(X, Y, Z);` is missing"));
        let g = prog.grid.clone().ok_or_else(|| missing("grid"))?;
        let b = prog.block.clone().ok_or_else(|| missing("block"))?;
        Some((g, b))
    };
    let layout = Layout::new(p)?;
    // Shared memory, then each kernel's unrolled loops and instructions.
    let shared: FxHashSet<String> = prog
        .arrays
        .iter()
        .filter(|a| a.shared)
        .map(|a| a.name.clone())
        .collect();
    let prepared = prepare(&mut prog.kernels, &params, &shared).map_err(run_err)?;
    // Without a `launch`, each kernel once, in order, after the host code.
    if !launches(&prog.host) {
        let end = src.len();
        prog.host.extend(
            prog.kernels
                .iter()
                .map(|k| Stmt::Launch(k.name.clone(), end)),
        );
    }
    let (mut mem, decls) = global_arrays(&prog.arrays, &at)?;
    let mut launcher = Launches {
        p,
        kernels: prog
            .kernels
            .iter()
            .zip(prepared)
            .map(|(def, (insts, shared))| Prepared { def, insts, shared })
            .collect(),
        params: &params,
        shape: shape.as_ref(),
        out: Vec::new(),
        failed: None,
    };
    let env = Env {
        params: params.clone(),
        shared,
        grid: [1; 3],
        block: [1; 3],
    };
    let side = Side::Host {
        decls,
        rng: None,
        launcher: &mut launcher,
        layout: Some(layout),
        iterations: 0,
    };
    let mut host = Thread::new(&env, &mut mem, side);
    let mut ran = host.run(&prog.host);
    if ran.is_ok() && !host.laid_out() {
        ran = host.lay_out();
    }
    drop(host);
    if let Some(e) = launcher.failed {
        return Err(e);
    }
    ran.map_err(run_err)?;
    Ok(launcher.out)
}

/// The params' values: each given one, else its default (which may use earlier params).
fn param_values(
    prog: &Program,
    p: &mut Params,
    at: &dyn Fn(usize, String) -> GenError,
) -> Result<FxHashMap<String, i64>, GenError> {
    let mut params = FxHashMap::default();
    for (name, e, pos) in &prog.params {
        let default = constant(e, &params).map_err(|e| at(e.pos.max(*pos), e.message))?;
        if default < 0 {
            return Err(at(
                *pos,
                format!("param `{name}` is {default}: params are not negative"),
            ));
        }
        let v = p.u64(name, default as u64)?;
        params.insert(name.clone(), v.min(i64::MAX as u64) as i64);
    }
    Ok(params)
}

/// A kernel's instruction names and its shared arrays.
type KernelNames = (Vec<String>, FxHashSet<String>);

/// Each kernel's loops unrolled and instructions named: its instruction names and its shared
/// arrays (the program's and its own).
fn prepare(
    kernels: &mut [KernelDef],
    params: &FxHashMap<String, i64>,
    shared: &FxHashSet<String>,
) -> Result<Vec<KernelNames>, RunError> {
    let mut prepared = Vec::new();
    for k in kernels {
        unroll::unroll(&mut k.body, params)?;
        let mut shared_here = shared.clone();
        local_shared(&k.body, &mut shared_here);
        let mut sites = Sites {
            names: Vec::new(),
            shared: &shared_here,
            suffix: String::new(),
        };
        sites.stmts(&mut k.body);
        prepared.push((sites.names, shared_here));
    }
    Ok(prepared)
}

/// The global arrays' memory (a name declared twice is an error) and their declarations.
fn global_arrays<'a>(
    arrays: &'a [ArrayDecl],
    at: &dyn Fn(usize, String) -> GenError,
) -> Result<(Memory, Vec<&'a ArrayDecl>), GenError> {
    let mut mem = Memory::default();
    let mut decls = Vec::new();
    for a in arrays.iter().filter(|a| !a.shared) {
        if mem
            .by_name
            .insert(a.name.clone(), mem.arrays.len())
            .is_some()
        {
            return Err(at(a.pos, format!("`{}` is declared twice", a.name)));
        }
        mem.arrays.push(Array {
            growable: a.len.is_none(),
            ..Array::default()
        });
        decls.push(a);
    }
    Ok((mem, decls))
}
