//! Runs kernel-language code: a kernel for one thread (its statements in order, each access
//! of a global array emitted with its instruction, its instance, the iteration of its
//! innermost loop, 0 outside loops, as the built-in generators count, and its address), or
//! the host code (the top-level statements: they fill arrays with known data, untraced, and
//! launch the kernels). Values loaded from memory the program never wrote are not known (a
//! trace has addresses, not data): they may be stored or added up, but an index, a condition
//! or a loop bound that depends on one is an error. Known values stored by a kernel are kept
//! for the threads and launches after it.

use rustc_hash::{FxHashMap, FxHashSet};

use super::ast::*;
use super::memory::{atomic, Memory};
use crate::gen::kernels::Emit;
use crate::gen::params::Layout;
use crate::rng::Rng;

/// What every thread of a launch (or the host code) shares.
pub(super) struct Env {
    pub params: FxHashMap<String, i64>,
    /// Shared-memory arrays: not traced.
    pub shared: FxHashSet<String>,
    pub grid: [i64; 3],
    pub block: [i64; 3],
}

/// A value: `None` is data not known (loaded from memory never written, or a float).
pub(super) type Val = Option<i64>;

/// An error at a byte offset of the source.
#[derive(Debug)]
pub(super) struct RunError {
    pub pos: usize,
    pub message: String,
}

pub(super) fn err<T>(pos: usize, message: impl Into<String>) -> Result<T, RunError> {
    Err(RunError {
        pos,
        message: message.into(),
    })
}

/// Iterations one loop may run before it is taken for an endless one.
const MAX_ITERATIONS: u32 = 1 << 24;

/// What the host code asks of the program around it.
pub(super) trait Launcher {
    /// Runs kernel `name` with the host's variables `vars` seen as params.
    fn launch(
        &mut self,
        name: &str,
        at: usize,
        vars: &[(&str, Val)],
        mem: &mut Memory,
    ) -> Result<(), RunError>;
    /// Called every so many host loop iterations: `Err` to stop (cancelled).
    fn tick(&mut self) -> Result<(), RunError>;
}

/// Where the code runs: a kernel's thread, or the host.
pub(super) enum Side<'a, 'b> {
    Device {
        cta: [i64; 3],
        tid: [i64; 3],
        emit: &'a mut Emit<'b>,
    },
    Host {
        /// The declarations of `Memory::arrays`, in the same order.
        decls: Vec<&'a ArrayDecl>,
        rng: Option<Rng>,
        launcher: &'a mut dyn Launcher,
        /// Until the arrays are laid out (at the first launch).
        layout: Option<Layout>,
        iterations: u32,
    },
}

#[derive(PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

pub(super) struct Thread<'a, 'b> {
    pub env: &'a Env,
    pub mem: &'a mut Memory,
    pub side: Side<'a, 'b>,
    vars: Vec<(&'a str, Val)>,
    iters: Vec<u32>,
}

impl<'a, 'b> Thread<'a, 'b> {
    pub fn new(env: &'a Env, mem: &'a mut Memory, side: Side<'a, 'b>) -> Self {
        Thread {
            env,
            mem,
            side,
            vars: Vec::new(),
            iters: Vec::new(),
        }
    }

    pub fn run(&mut self, body: &'a [Stmt]) -> Result<(), RunError> {
        for s in body {
            if self.stmt(s)? == Flow::Return {
                break;
            }
        }
        Ok(())
    }

    pub(super) fn host(&self) -> bool {
        matches!(self.side, Side::Host { .. })
    }

    /// Whether the arrays are laid out (always, in a kernel).
    pub fn laid_out(&self) -> bool {
        !matches!(
            self.side,
            Side::Host {
                layout: Some(_),
                ..
            }
        )
    }

    fn stmt(&mut self, s: &'a Stmt) -> Result<Flow, RunError> {
        match s {
            Stmt::Block(v) => {
                let mark = self.vars.len();
                for s in v {
                    let f = self.stmt(s)?;
                    if f != Flow::Next {
                        self.vars.truncate(mark);
                        return Ok(f);
                    }
                }
                self.vars.truncate(mark);
                Ok(Flow::Next)
            }
            Stmt::If(c, a, b) => {
                if self.cond(c)? {
                    self.stmt(a)
                } else if let Some(b) = b {
                    self.stmt(b)
                } else {
                    Ok(Flow::Next)
                }
            }
            Stmt::For {
                init,
                cond,
                step,
                body,
                at,
                ..
            } => {
                let mark = self.vars.len();
                if let Some(i) = init {
                    self.stmt(i)?;
                }
                let f = self.repeat(cond.as_ref(), step.as_deref(), body, *at)?;
                self.vars.truncate(mark);
                Ok(f)
            }
            Stmt::Unrolled(var, copies) => {
                for (value, body) in copies {
                    self.vars.push((var, Some(*value)));
                    let f = self.stmt(body)?;
                    self.vars.pop();
                    if f == Flow::Return {
                        return Ok(f);
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::While(c, body, at) => self.repeat(Some(c), None, body, *at),
            Stmt::Sync(at) => match &mut self.side {
                Side::Device { emit, .. } => {
                    emit.bar();
                    Ok(Flow::Next)
                }
                Side::Host { .. } => err(*at, "`__syncthreads()` belongs in a kernel"),
            },
            Stmt::Return => Ok(Flow::Return),
            Stmt::Break => Ok(Flow::Break),
            Stmt::Continue => Ok(Flow::Continue),
            Stmt::Decl(name, init, _) => {
                let v = match init {
                    Some(e) => self.eval(e)?,
                    None => Some(0),
                };
                self.vars.push((name, v));
                Ok(Flow::Next)
            }
            Stmt::Assign(place, op, value) => {
                self.assign(place, *op, value)?;
                Ok(Flow::Next)
            }
            Stmt::Expr(e) => {
                self.eval(e)?;
                Ok(Flow::Next)
            }
            Stmt::Shared(_) | Stmt::Nothing => Ok(Flow::Next),
            Stmt::Launch(name, at) => {
                if !self.laid_out() {
                    self.lay_out()?;
                }
                let Side::Host { launcher, .. } = &mut self.side else {
                    return err(*at, "`launch` belongs in the host code, outside kernels");
                };
                launcher.launch(name, *at, &self.vars, self.mem)?;
                Ok(Flow::Next)
            }
            Stmt::Seed(e, at) => {
                let seed = self.known(e, "the seed")?;
                let Side::Host { rng, .. } = &mut self.side else {
                    return err(*at, "`srand` belongs in the host code, outside kernels");
                };
                *rng = Some(Rng::new(seed as u64));
                Ok(Flow::Next)
            }
        }
    }

    /// A loop: the body while `cond` holds, then `step`; its iteration count is the
    /// instance of the accesses directly inside it.
    fn repeat(
        &mut self,
        cond: Option<&'a Expr>,
        step: Option<&'a Stmt>,
        body: &'a Stmt,
        at: usize,
    ) -> Result<Flow, RunError> {
        self.iters.push(0);
        let mut out = Flow::Next;
        loop {
            if let Some(c) = cond {
                if !self.cond(c)? {
                    break;
                }
            }
            match self.stmt(body)? {
                Flow::Break => break,
                Flow::Return => {
                    out = Flow::Return;
                    break;
                }
                _ => {}
            }
            if let Some(s) = step {
                self.stmt(s)?;
            }
            let n = self.iters.last_mut().map_or(0, |n| {
                *n += 1;
                *n
            });
            if n >= MAX_ITERATIONS {
                return err(
                    at,
                    format!("a loop ran {MAX_ITERATIONS} times: is it endless?"),
                );
            }
            if let Side::Host {
                launcher,
                iterations,
                ..
            } = &mut self.side
            {
                *iterations += 1;
                if *iterations % (1 << 16) == 0 {
                    launcher.tick()?;
                }
            }
        }
        self.iters.pop();
        Ok(out)
    }

    fn assign(&mut self, place: &'a Place, op: AssignOp, value: &'a Expr) -> Result<(), RunError> {
        match place {
            Place::Var(name, at) => {
                let v = self.eval(value)?;
                let slot = self.vars.iter().rposition(|(n, _)| n == name);
                let Some(slot) = slot else {
                    return err(*at, format!("`{name}` is not a variable declared before (write `int {name} = ...;`)"));
                };
                let new = match op {
                    AssignOp::Set => v,
                    AssignOp::With(b) => binop(b, self.vars[slot].1, v, *at)?,
                };
                self.vars[slot].1 = new;
            }
            Place::Elem(a) => {
                if let AssignOp::With(b) = op {
                    let index = self.eval(&a.index)?;
                    let old = self.read(a, index, a.load_inst)?;
                    let v = self.eval(value)?;
                    let new = binop(b, old, v, a.pos)?;
                    self.write(a, index, new)?;
                } else {
                    let v = self.eval(value)?;
                    let index = self.eval(&a.index)?;
                    self.write(a, index, v)?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn instance(&self) -> u32 {
        self.iters.last().copied().unwrap_or(0)
    }

    /// An expression whose value must be known.
    pub(super) fn known(&mut self, e: &'a Expr, what: &str) -> Result<i64, RunError> {
        match self.eval(e)? {
            Some(v) => Ok(v),
            None => err(
                expr_pos(e),
                format!("{what} depends on data loaded from memory that the program never wrote (a trace has addresses, not data)"),
            ),
        }
    }

    fn cond(&mut self, e: &'a Expr) -> Result<bool, RunError> {
        Ok(self.known(e, "this condition")? != 0)
    }

    pub(super) fn eval(&mut self, e: &'a Expr) -> Result<Val, RunError> {
        Ok(match e {
            Expr::Num(v) => Some(*v),
            Expr::Float => None,
            Expr::Var(name, at) => match self.vars.iter().rev().find(|(n, _)| n == name) {
                Some((_, v)) => *v,
                None => match self.env.params.get(name) {
                    Some(v) => Some(*v),
                    None => {
                        return err(
                            *at,
                            format!("unknown name `{name}`: not a variable or a param"),
                        )
                    }
                },
            },
            Expr::Builtin(b, axis, at) => match &self.side {
                Side::Device { cta, tid, .. } => Some(match b {
                    Builtin::ThreadIdx => tid[*axis],
                    Builtin::BlockIdx => cta[*axis],
                    Builtin::BlockDim => self.env.block[*axis],
                    Builtin::GridDim => self.env.grid[*axis],
                }),
                Side::Host { .. } => return err(
                    *at,
                    "`threadIdx`, `blockIdx`, `blockDim` and `gridDim` are known only in a kernel",
                ),
            },
            Expr::Load(a) => {
                let index = self.eval(&a.index)?;
                self.read(a, index, a.load_inst)?
            }
            Expr::Atomic(op, a, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for x in args {
                    vals.push(self.eval(x)?);
                }
                let index = self.eval(&a.index)?;
                let Some((k, i)) = self.locate(a, index, true)? else {
                    return Ok(None);
                };
                self.trace(k, i, a.load_inst, Some(*op), true);
                let slot = self.mem.arrays[k]
                    .values
                    .as_mut()
                    .and_then(|x| x.get_mut(i as usize));
                match slot {
                    Some(slot) => {
                        let old = *slot;
                        *slot = atomic(*op, old, &vals);
                        old
                    }
                    None => None,
                }
            }
            Expr::Random(bound, at) => {
                let bound = self.known(bound, "the bound")?;
                let Side::Host { rng, .. } = &mut self.side else {
                    return err(*at, "`random(BOUND)` draws in the host code only: kernels read what the host drew");
                };
                let Some(rng) = rng.as_mut() else {
                    return err(*at, "`random` before `srand(SEED);`: seed the stream first");
                };
                if bound < 1 {
                    return err(*at, format!("random({bound}): the bound is at least 1"));
                }
                Some(rng.below(bound as u64) as i64)
            }
            Expr::Unary(op, x) => self.eval(x)?.map(|v| match op {
                UnOp::Neg => v.wrapping_neg(),
                UnOp::Not => (v == 0) as i64,
                UnOp::BitNot => !v,
            }),
            Expr::Binary(BinOp::And, a, b, _) => match self.eval(a)? {
                Some(0) => Some(0),
                Some(_) => self.eval(b)?.map(|v| (v != 0) as i64),
                None => None,
            },
            Expr::Binary(BinOp::Or, a, b, _) => match self.eval(a)? {
                Some(0) => self.eval(b)?.map(|v| (v != 0) as i64),
                Some(_) => Some(1),
                None => None,
            },
            Expr::Binary(op, a, b, at) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                binop(*op, x, y, *at)?
            }
            Expr::Ternary(c, a, b) => {
                if self.cond(c)? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::MinMax(max, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                match (x, y) {
                    (Some(x), Some(y)) => Some(if *max { x.max(y) } else { x.min(y) }),
                    _ => None,
                }
            }
        })
    }
}

/// `x op y` on values (`None` if either is data).
pub(super) fn binop(op: BinOp, x: Val, y: Val, at: usize) -> Result<Val, RunError> {
    let (Some(x), Some(y)) = (x, y) else {
        return Ok(None);
    };
    let overflow = || RunError {
        pos: at,
        message: "the value overflows 64 bits".into(),
    };
    Ok(Some(match op {
        BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
        BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
        BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
        BinOp::Div | BinOp::Rem if y == 0 => return err(at, "division by zero"),
        BinOp::Div => x.wrapping_div(y),
        BinOp::Rem => x.wrapping_rem(y),
        BinOp::Shl => x.checked_shl(y.clamp(0, 64) as u32).ok_or_else(overflow)?,
        BinOp::Shr => x.checked_shr(y.clamp(0, 64) as u32).unwrap_or(0),
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Lt => (x < y) as i64,
        BinOp::Le => (x <= y) as i64,
        BinOp::Gt => (x > y) as i64,
        BinOp::Ge => (x >= y) as i64,
        BinOp::Eq => (x == y) as i64,
        BinOp::Ne => (x != y) as i64,
        BinOp::And => (x != 0 && y != 0) as i64,
        BinOp::Or => (x != 0 || y != 0) as i64,
    }))
}

/// Where an expression starts, as near as the tree knows.
pub(super) fn expr_pos(e: &Expr) -> usize {
    match e {
        Expr::Var(_, at) | Expr::Binary(_, _, _, at) => *at,
        Expr::Load(a) | Expr::Atomic(_, a, _) => a.pos,
        Expr::Unary(_, x) => expr_pos(x),
        Expr::Random(_, at) => *at,
        Expr::Ternary(c, _, _) => expr_pos(c),
        Expr::MinMax(_, a, _) => expr_pos(a),
        Expr::Builtin(_, _, at) => *at,
        Expr::Num(_) | Expr::Float => 0,
    }
}

/// A constant expression over the params (param values, grid, block, array sizes).
pub(super) fn constant(e: &Expr, params: &FxHashMap<String, i64>) -> Result<i64, RunError> {
    let v = match e {
        Expr::Num(v) => *v,
        Expr::Var(name, at) => match params.get(name) {
            Some(v) => *v,
            None => {
                return err(
                    *at,
                    format!("unknown param `{name}` (params are declared before use)"),
                )
            }
        },
        Expr::Unary(op, x) => {
            let v = constant(x, params)?;
            match op {
                UnOp::Neg => -v,
                UnOp::Not => (v == 0) as i64,
                UnOp::BitNot => !v,
            }
        }
        Expr::Binary(op, a, b, at) => {
            let (x, y) = (constant(a, params)?, constant(b, params)?);
            binop(*op, Some(x), Some(y), *at)?.unwrap_or(0)
        }
        Expr::Ternary(c, a, b) => {
            if constant(c, params)? != 0 {
                constant(a, params)?
            } else {
                constant(b, params)?
            }
        }
        Expr::MinMax(max, a, b) => {
            let (x, y) = (constant(a, params)?, constant(b, params)?);
            if *max {
                x.max(y)
            } else {
                x.min(y)
            }
        }
        other => {
            return err(
                expr_pos(other),
                "expected a constant: numbers and params only",
            )
        }
    };
    Ok(v)
}
