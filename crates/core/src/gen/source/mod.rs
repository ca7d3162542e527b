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
mod memory;
mod parse;
mod program;
mod unroll;

use rustc_hash::FxHashSet;

use super::params::{GenError, Params};
use super::{Control, CtaSink};
use crate::trace::Trace;
use ast::*;
use program::run;

/// The built-in kernels written in the language (`kernels/*.wsk`), as (name, source): the
/// app's examples, and each gives its generator's trace exactly (tested). Their list is
/// [`crate::gen::BUILTINS`].
pub fn examples() -> impl Iterator<Item = (&'static str, &'static str)> {
    crate::gen::BUILTINS.iter().map(|b| (b.name, b.source))
}

/// The built-in kernel `name`'s source in the language.
pub fn example(name: &str) -> Option<&'static str> {
    crate::gen::builtin(name).map(|b| b.source)
}

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
        .map_err(|e| parse_error(src, file, e))
}

/// A syntax error found at byte `pos`. When the parser met the unexpected token on a line
/// after the last good one (a `;` missing at the end of a line), the error names the end of
/// that last token, where the missing text belongs, not the next line's first token.
fn parse_error(src: &str, file: &str, (pos, message): (usize, String)) -> GenError {
    source_error(
        src,
        file,
        end_of_last_line(src, pos).unwrap_or(pos),
        message,
    )
}

/// The end of the last token before byte `pos` (skipping blanks and `//` comments), if a line
/// ends between them.
fn end_of_last_line(src: &str, pos: usize) -> Option<usize> {
    let mut end = src.get(..pos).map(str::len)?;
    let mut crossed = false;
    loop {
        let before = &src[..end];
        let text = before.trim_end();
        crossed |= before[text.len()..].contains('\n');
        let line_start = text.rfind('\n').map_or(0, |i| i + 1);
        match text[line_start..].find("//") {
            Some(comment) => end = line_start + comment,
            None => return crossed.then_some(text.len()),
        }
    }
}

/// A built-in generator's `key=value` pairs as the params of the program in `src` that writes
/// the same kernel (`kernels/*.wsk`): the keys it declares as they are, and `block=X[,Y[,Z]]`
/// as its `bx`, `by`, `bz` (or `threads`, for a block of one dimension). Returns those pairs
/// and the keys it has no param for (none carried when `src` does not parse).
pub fn carry_pairs(src: &str, pairs: &[(String, String)]) -> (Vec<(String, String)>, Vec<String>) {
    let declared: Vec<String> = match parse::program(src) {
        Ok(p) => p.params.into_iter().map(|(name, _, _)| name).collect(),
        Err(_) => Vec::new(),
    };
    let has = |k: &str| declared.iter().any(|d| d == k);
    let (mut carried, mut dropped) = (Vec::new(), Vec::new());
    for (k, v) in pairs {
        if has(k) {
            carried.push((k.clone(), v.clone()));
            continue;
        }
        let dims: Vec<&str> = v.split(',').collect();
        let names: &[&str] = if has("bx") {
            &["bx", "by", "bz"]
        } else {
            &["threads"]
        };
        let fits = dims.len() <= names.len() && names[..dims.len()].iter().all(|n| has(n));
        if k == "block" && fits {
            for (n, d) in names.iter().zip(dims) {
                carried.push((n.to_string(), d.trim().to_string()));
            }
        } else {
            dropped.push(k.clone());
        }
    }
    (carried, dropped)
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
/// before the place it is written to, a compound assignment's read before its value. The
/// sites of the k-th copy of an unrolled loop's body are instructions of their own, their
/// names ending in `_k`.
struct Sites<'a> {
    names: Vec<String>,
    shared: &'a FxHashSet<String>,
    /// `_k` for each unrolled loop the walk is in.
    suffix: String,
}

impl Sites<'_> {
    fn add(&mut self, label: &Option<String>, default: String) -> u32 {
        let label = label.as_ref().map(|l| format!("{l}{}", self.suffix));
        let default = format!("{default}{}", self.suffix);
        // The same name given twice is one instruction (the same access written in two
        // branches); a default name given twice gets a suffix.
        if let Some(l) = &label {
            if let Some(i) = self.names.iter().position(|n| n == l) {
                return i as u32;
            }
        }
        let base = label.unwrap_or(default);
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
                ..
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
            Stmt::Unrolled(_, copies) => {
                for (k, (_, body)) in copies.iter_mut().enumerate() {
                    let mark = self.suffix.len();
                    self.suffix.push_str(&format!("_{k}"));
                    self.stmt(body);
                    self.suffix.truncate(mark);
                }
            }
            Stmt::While(c, body, _) => {
                self.expr(c);
                self.stmt(body);
            }
            Stmt::Decl(_, Some(e), _) | Stmt::Expr(e) | Stmt::Seed(e, _) => self.expr(e),
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
            | Stmt::Sync(_)
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
            Expr::Unary(_, x) | Expr::Random(x, _) => self.expr(x),
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
            Stmt::For { body, .. } | Stmt::While(_, body, _) => {
                local_shared(std::slice::from_ref(body), out)
            }
            Stmt::Unrolled(_, copies) => {
                for (_, body) in copies {
                    local_shared(std::slice::from_ref(body), out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
