//! The kernel language: a small CUDA-like language for writing a kernel's memory accesses,
//! typed in the app or given to `warpscope gen --source` / `sim --source` (`docs/kernel-language.md`).
//!
//! A program declares `param`s (each overridable as `key=value`, like a built-in kernel's),
//! `grid(...)` and `block(...)`, the global arrays (element type, length, optionally a fixed
//! address; otherwise laid out from `base` every `align` bytes like the generators' buffers),
//! and one or more kernels (`kernel NAME { ... }` or `__global__ void NAME(...) { ... }`),
//! launched in order. Each array element read is a load, each element written a store,
//! `atomicAdd(&A[i], v)` an atomic, `__syncthreads()` a barrier; shared-memory arrays are not
//! traced. Every thread runs the kernel in CTA order then thread order, exactly as the built-in
//! generators do, through the same builder (so a large grid streams CTA by CTA and is never
//! held whole). `parse.rs` is the grammar (winnow), `ast.rs` the tree, `eval.rs` the
//! interpreter.

mod ast;
mod eval;
mod parse;

use rustc_hash::{FxHashMap, FxHashSet};

use super::params::{GenError, Layout, Params};
use super::{kernels, Control, CtaSink};
use crate::trace::{Dim3, Kernel, Trace};
use ast::*;
use eval::{constant, Array, Env, RunError, Thread};

/// The built-in kernels written in the language (`kernels/*.wsk`): the app's examples, and
/// each gives its generator's trace exactly (tested).
pub const EXAMPLES: [(&str, &str); 14] = [
    ("vecadd", include_str!("../../../kernels/vecadd.wsk")),
    ("matmul", include_str!("../../../kernels/matmul.wsk")),
    (
        "matmul-tiled",
        include_str!("../../../kernels/matmul-tiled.wsk"),
    ),
    ("transpose", include_str!("../../../kernels/transpose.wsk")),
    (
        "transpose-tiled",
        include_str!("../../../kernels/transpose-tiled.wsk"),
    ),
    ("stencil3d", include_str!("../../../kernels/stencil3d.wsk")),
    ("stencil2d", include_str!("../../../kernels/stencil2d.wsk")),
    (
        "column-copy",
        include_str!("../../../kernels/column-copy.wsk"),
    ),
    ("strided", include_str!("../../../kernels/strided.wsk")),
    ("reduction", include_str!("../../../kernels/reduction.wsk")),
    ("hotspot", include_str!("../../../kernels/hotspot.wsk")),
    (
        "histogram2",
        include_str!("../../../kernels/histogram2.wsk"),
    ),
    ("nbody", include_str!("../../../kernels/nbody.wsk")),
    ("histogram", include_str!("../../../kernels/histogram.wsk")),
];

/// Line and column (from 1) of byte offset `pos` of `src`.
pub fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let before = &src[..pos.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map_or(1, |l| l.chars().count() + 1);
    (line, col)
}

fn source_error(src: &str, file: &str, pos: usize, message: String) -> GenError {
    let (line, column) = line_col(src, pos);
    GenError::Source {
        file: file.to_string(),
        line,
        column,
        message,
    }
}

/// Checks a program's syntax (what the app's editor does as the user types).
pub fn check(src: &str, file: &str) -> Result<(), GenError> {
    parse::program(src)
        .map(drop)
        .map_err(|(pos, m)| source_error(src, file, pos, m))
}

/// Generates the trace of the program in `src` (named `file` in errors) with `key=value`
/// parameters overriding its `param`s.
pub fn generate(
    src: &str,
    file: &str,
    pairs: &[(String, String)],
    control: Option<Control<'_>>,
) -> Result<Trace, GenError> {
    let mut p = Params::new(file, pairs, control);
    let kernels = run(src, file, &mut p)?;
    p.finish()?;
    Ok(Trace { kernels })
}

/// [`generate`], handing each CTA to `sink` as it is built instead of keeping the trace.
pub fn generate_by_cta(
    src: &str,
    file: &str,
    pairs: &[(String, String)],
    mut control: Option<Control<'_>>,
    sink: &mut dyn CtaSink,
) -> Result<(), GenError> {
    let control: Option<Control<'_>> = match control.as_mut() {
        Some(c) => Some(&mut **c),
        None => None,
    };
    let mut p = Params::new(file, pairs, control);
    p.send_to(sink);
    run(src, file, &mut p)?;
    p.finish()
}

/// Gives each access site its instructions, in the order a thread evaluates them: the value
/// before the place it is written to, a compound assignment's read before its value.
struct Sites<'a> {
    names: Vec<String>,
    shared: &'a FxHashSet<String>,
}

impl Sites<'_> {
    fn add(&mut self, label: &Option<String>, default: String) -> u32 {
        // The same name given twice is one instruction (the same access written in two
        // branches); a default name given twice gets a suffix.
        if let Some(l) = label {
            if let Some(i) = self.names.iter().position(|n| n == l) {
                return i as u32;
            }
        }
        let base = label.clone().unwrap_or(default);
        let mut name = base.clone();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{base}.{n}");
            n += 1;
        }
        self.names.push(name);
        self.names.len() as u32 - 1
    }
    fn stmts(&mut self, v: &mut [Stmt]) {
        for s in v {
            self.stmt(s);
        }
    }
    fn stmt(&mut self, s: &mut Stmt) {
        match s {
            Stmt::Block(v) => self.stmts(v),
            Stmt::If(c, a, b) => {
                self.expr(c);
                self.stmt(a);
                if let Some(b) = b {
                    self.stmt(b);
                }
            }
            Stmt::For {
                init,
                cond,
                step,
                body,
            } => {
                if let Some(i) = init {
                    self.stmt(i);
                }
                if let Some(c) = cond {
                    self.expr(c);
                }
                self.stmt(body);
                if let Some(s) = step {
                    self.stmt(s);
                }
            }
            Stmt::While(c, body) => {
                self.expr(c);
                self.stmt(body);
            }
            Stmt::Decl(_, Some(e), _) | Stmt::Expr(e) => self.expr(e),
            Stmt::Assign(place, op, value) => match place {
                Place::Var(..) => self.expr(value),
                Place::Elem(a) => {
                    let traced = !self.shared.contains(&a.array);
                    if let AssignOp::With(_) = op {
                        self.expr(&mut a.index);
                        if traced {
                            a.load_inst = self.add(&None, format!("ld_{}", a.array));
                        }
                        self.expr(value);
                    } else {
                        self.expr(value);
                        self.expr(&mut a.index);
                    }
                    if traced {
                        a.store_inst = self.add(&a.label, format!("st_{}", a.array));
                    }
                }
            },
            Stmt::Decl(_, None, _)
            | Stmt::Sync
            | Stmt::Return
            | Stmt::Break
            | Stmt::Continue
            | Stmt::Shared(_)
            | Stmt::Launch(..)
            | Stmt::Nothing => {}
        }
    }
    fn expr(&mut self, e: &mut Expr) {
        match e {
            Expr::Load(a) => {
                self.expr(&mut a.index);
                if !self.shared.contains(&a.array) {
                    a.load_inst = self.add(&a.label, format!("ld_{}", a.array));
                }
            }
            Expr::Atomic(_, a, args) => {
                for x in args.iter_mut() {
                    self.expr(x);
                }
                self.expr(&mut a.index);
                if !self.shared.contains(&a.array) {
                    a.load_inst = self.add(&a.label, format!("atom_{}", a.array));
                }
            }
            Expr::Unary(_, x) => self.expr(x),
            Expr::Binary(_, a, b, _) | Expr::MinMax(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Ternary(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Num(_) | Expr::Float | Expr::Var(..) | Expr::Builtin(..) => {}
        }
    }
}

/// Shared arrays declared inside a kernel.
fn local_shared(v: &[Stmt], out: &mut FxHashSet<String>) {
    for s in v {
        match s {
            Stmt::Shared(a) => {
                out.insert(a.name.clone());
            }
            Stmt::Block(v) => local_shared(v, out),
            Stmt::If(_, a, b) => {
                local_shared(std::slice::from_ref(a), out);
                if let Some(b) = b {
                    local_shared(std::slice::from_ref(b), out);
                }
            }
            Stmt::For { body, .. } | Stmt::While(_, body) => {
                local_shared(std::slice::from_ref(body), out)
            }
            _ => {}
        }
    }
}

fn dims(
    src: &str,
    file: &str,
    what: &str,
    d: &Option<(Vec<Expr>, usize)>,
    params: &FxHashMap<String, i64>,
) -> Result<[i64; 3], GenError> {
    let Some((v, at)) = d else {
        return Err(source_error(
            src,
            file,
            src.len(),
            format!("`{what}(X, Y, Z);` is missing"),
        ));
    };
    let mut out = [1i64; 3];
    for (k, e) in v.iter().enumerate() {
        let x =
            constant(e, params).map_err(|e| source_error(src, file, e.pos.max(*at), e.message))?;
        if !(1..=1 << 31).contains(&x) {
            return Err(source_error(
                src,
                file,
                *at,
                format!("{what} dimension {k} is {x}: expected at least 1"),
            ));
        }
        out[k] = x;
    }
    Ok(out)
}

/// Launches a top-level statement asks for: (kernel, the loop variables it sees).
fn top_level(
    st: &Stmt,
    kernels: &[&str],
    params: &FxHashMap<String, i64>,
    vars: &mut Vec<(String, i64)>,
    out: &mut Vec<(usize, Vec<(String, i64)>)>,
) -> Result<(), RunError> {
    let value = |e: &Expr, vars: &[(String, i64)]| {
        let mut all = params.clone();
        all.extend(vars.iter().cloned());
        constant(e, &all)
    };
    match st {
        Stmt::Launch(name, pos) => match kernels.iter().position(|k| k == name) {
            Some(k) => out.push((k, vars.clone())),
            None => {
                return Err(RunError {
                    pos: *pos,
                    message: format!("no kernel `{name}` to launch"),
                })
            }
        },
        Stmt::Block(v) => {
            for s in v {
                top_level(s, kernels, params, vars, out)?;
            }
        }
        Stmt::Decl(name, init, _) => {
            let v = init.as_ref().map_or(Ok(0), |e| value(e, vars))?;
            vars.push((name.clone(), v));
        }
        Stmt::Assign(Place::Var(name, pos), op, e) => {
            let v = value(e, vars)?;
            let Some(slot) = vars.iter().rposition(|(n, _)| n == name) else {
                return Err(RunError {
                    pos: *pos,
                    message: format!("`{name}` is not a variable declared before"),
                });
            };
            vars[slot].1 = match op {
                AssignOp::Set => v,
                AssignOp::With(b) => {
                    eval::binop(*b, Some(vars[slot].1), Some(v), *pos)?.unwrap_or(0)
                }
            };
        }
        Stmt::For {
            init,
            cond,
            step,
            body,
        } => {
            let mark = vars.len();
            if let Some(i) = init {
                top_level(i, kernels, params, vars, out)?;
            }
            let mut n = 0u32;
            while cond.as_ref().map_or(Ok(1), |c| value(c, vars))? != 0 {
                top_level(body, kernels, params, vars, out)?;
                if let Some(s) = step {
                    top_level(s, kernels, params, vars, out)?;
                }
                n += 1;
                if n > 1 << 16 {
                    return Err(RunError {
                        pos: cond.as_ref().map_or(0, eval::expr_pos),
                        message: "more than 65536 launches".into(),
                    });
                }
            }
            vars.truncate(mark);
        }
        Stmt::Nothing => {}
        _ => {
            return Err(RunError {
                pos: 0,
                message:
                    "only `launch`, variables and `for` loops over launches belong at the top level"
                        .into(),
            })
        }
    }
    Ok(())
}

/// Parses, lays out and runs every kernel of the program.
fn run(src: &str, file: &str, p: &mut Params) -> Result<Vec<Kernel>, GenError> {
    let at = |pos: usize, m: String| source_error(src, file, pos, m);
    let mut prog = parse::program(src).map_err(|(pos, m)| at(pos, m))?;
    if prog.kernels.is_empty() {
        return Err(at(
            src.len(),
            "no kernel: write `kernel NAME { ... }`".into(),
        ));
    }
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
    // The program's launch shape, for the kernels without their own `<<<...>>>`.
    let every_own = prog.kernels.iter().all(|k| k.launch.is_some());
    let shape = if every_own {
        None
    } else {
        Some((
            dims(src, file, "grid", &prog.grid, &params)?,
            dims(src, file, "block", &prog.block, &params)?,
        ))
    };
    let mut layout = Layout::new(p)?;
    let mut arrays = FxHashMap::default();
    let mut shared = FxHashSet::default();
    for a in &prog.arrays {
        if a.shared {
            shared.insert(a.name.clone());
            continue;
        }
        let len = constant(&a.len, &params).map_err(|e| at(e.pos.max(a.pos), e.message))?;
        if len < 1 {
            return Err(at(
                a.pos,
                format!("`{}` has {len} elements: expected at least 1", a.name),
            ));
        }
        let bytes = (len as u64).saturating_mul(a.elem);
        let base = match &a.base {
            Some(b) => constant(b, &params).map_err(|e| at(e.pos.max(a.pos), e.message))? as u64,
            None => layout.alloc(bytes),
        };
        let values = match &a.random {
            None => None,
            Some((seed, bound)) => {
                let seed = constant(seed, &params).map_err(|e| at(e.pos, e.message))?;
                let bound = constant(bound, &params).map_err(|e| at(e.pos, e.message))?;
                if bound < 1 {
                    return Err(at(
                        a.pos,
                        format!("random(_, {bound}): the bound is at least 1"),
                    ));
                }
                let mut rng = crate::rng::Rng::new(seed as u64);
                let v: Vec<i64> = (0..len).map(|_| rng.below(bound as u64) as i64).collect();
                Some(std::sync::Arc::new(v))
            }
        };
        if arrays
            .insert(
                a.name.clone(),
                Array {
                    base,
                    elem: a.elem,
                    len: len as u64,
                    values,
                },
            )
            .is_some()
        {
            return Err(at(a.pos, format!("`{}` is declared twice", a.name)));
        }
    }
    // Each kernel's instructions, then the launches in order.
    let mut prepared = Vec::new();
    for k in &mut prog.kernels {
        let mut shared_here = shared.clone();
        local_shared(&k.body, &mut shared_here);
        let mut sites = Sites {
            names: Vec::new(),
            shared: &shared_here,
        };
        sites.stmts(&mut k.body);
        prepared.push((sites.names, shared_here));
    }
    let order: Vec<(usize, Vec<(String, i64)>)> = if prog.launches.is_empty() {
        (0..prog.kernels.len()).map(|k| (k, Vec::new())).collect()
    } else {
        let mut order = Vec::new();
        let mut vars = Vec::new();
        let names: Vec<&str> = prog.kernels.iter().map(|k| k.name.as_str()).collect();
        for st in &prog.launches {
            top_level(st, &names, &params, &mut vars, &mut order)
                .map_err(|e| at(e.pos, e.message))?;
        }
        order
    };
    let mut out = Vec::new();
    for (ki, vars) in order {
        let k = &prog.kernels[ki];
        let (names, shared_here) = &prepared[ki];
        let mut launch_params = params.clone();
        launch_params.extend(vars);
        let (grid, block) = match (&k.launch, shape) {
            (Some((g, b, pos)), _) => (
                dims(src, file, "grid", &Some((g.clone(), *pos)), &launch_params)?,
                dims(src, file, "block", &Some((b.clone(), *pos)), &launch_params)?,
            ),
            (None, Some(s)) => s,
            // Without a program shape every kernel has its own.
            (None, None) => ([1, 1, 1], [1, 1, 1]),
        };
        let env = Env {
            params: launch_params,
            arrays: arrays.clone(),
            shared: shared_here.clone(),
            grid,
            block,
        };
        let insts: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut failed: Option<RunError> = None;
        let d = |v: [i64; 3]| Dim3::new(v[0] as u32, v[1] as u32, v[2] as u32);
        let body = &k.body;
        let kernel = kernels::build(
            p,
            &k.name,
            d(grid),
            d(block),
            4,
            &insts,
            |cta, tid, emit| {
                if failed.is_some() {
                    return;
                }
                let c = [cta.x as i64, cta.y as i64, cta.z as i64];
                let t = [tid.x as i64, tid.y as i64, tid.z as i64];
                if let Err(e) = Thread::new(&env, c, t, emit).run(body) {
                    failed = Some(e);
                }
            },
        );
        if let Some(e) = failed {
            return Err(at(e.pos, e.message));
        }
        out.push(kernel?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
