//! `#pragma unroll`: a loop whose bounds are constants of the params becomes one copy of
//! its body per iteration, as a compiler unrolls it, so each copy's accesses are
//! instructions of their own (Dasgupta's micro-benchmark has `loads` distinct loads in its
//! inner loop). The copies' accesses keep the enclosing loop's iteration as their instance.

use rustc_hash::FxHashMap;

use super::ast::*;
use super::eval::{binop, constant, RunError};

/// Copies one unrolled loop may make.
const MAX_COPIES: usize = 1024;

/// Unrolls every `#pragma unroll` loop of `body`, innermost first.
pub(super) fn unroll(body: &mut [Stmt], params: &FxHashMap<String, i64>) -> Result<(), RunError> {
    for s in body {
        stmt(s, params)?;
    }
    Ok(())
}

fn stmt(s: &mut Stmt, params: &FxHashMap<String, i64>) -> Result<(), RunError> {
    match s {
        Stmt::Block(v) => unroll(v, params),
        Stmt::If(_, a, b) => {
            stmt(a, params)?;
            match b {
                Some(b) => stmt(b, params),
                None => Ok(()),
            }
        }
        Stmt::For {
            unroll: true,
            init,
            cond,
            step,
            body,
            at,
        } => {
            stmt(body, params)?;
            let at = *at;
            let Some(Stmt::Decl(var, Some(first), _)) = init.as_deref() else {
                return Err(RunError {
                    pos: at,
                    message: "an unrolled loop starts `for (int VAR = FIRST; ...`".into(),
                });
            };
            if escapes(body) {
                return Err(RunError {
                    pos: at,
                    message: "an unrolled loop cannot `break` or `continue`".into(),
                });
            }
            let mut known = params.clone();
            let mut x = constant(first, &known)?;
            let mut copies = Vec::new();
            loop {
                known.insert(var.clone(), x);
                if let Some(c) = cond {
                    if constant(c, &known)? == 0 {
                        break;
                    }
                }
                if copies.len() == MAX_COPIES {
                    return Err(RunError {
                        pos: at,
                        message: format!("an unrolled loop makes more than {MAX_COPIES} copies"),
                    });
                }
                copies.push((x, (**body).clone()));
                x = match step.as_deref() {
                    Some(Stmt::Assign(Place::Var(name, pos), op, e)) if name == var => {
                        let v = constant(e, &known)?;
                        match op {
                            AssignOp::Set => v,
                            AssignOp::With(b) => binop(*b, Some(x), Some(v), *pos)?.unwrap_or(0),
                        }
                    }
                    _ => {
                        return Err(RunError {
                            pos: at,
                            message: format!("the step of an unrolled loop changes `{var}`"),
                        })
                    }
                };
            }
            *s = Stmt::Unrolled(var.clone(), copies);
            Ok(())
        }
        Stmt::For { body, .. } | Stmt::While(_, body, _) => stmt(body, params),
        _ => Ok(()),
    }
}

/// Whether `s` has a `break` or `continue` of the loop around it (not of a loop inside).
fn escapes(s: &Stmt) -> bool {
    match s {
        Stmt::Break | Stmt::Continue => true,
        Stmt::Block(v) => v.iter().any(escapes),
        Stmt::If(_, a, b) => escapes(a) || b.as_deref().is_some_and(escapes),
        Stmt::Unrolled(_, copies) => copies.iter().any(|(_, b)| escapes(b)),
        _ => false,
    }
}
