//! Runs a kernel-language kernel for one thread: its statements in order, each access of a
//! global array emitted with its instruction, its instance (the iteration of its innermost
//! loop, 0 outside loops, as the built-in generators count) and its address. Values loaded
//! from memory are not known (a trace has addresses, not data): they may be stored or
//! added up, but an index, a condition or a loop bound that depends on one is an error.

use rustc_hash::{FxHashMap, FxHashSet};

use super::ast::*;
use crate::gen::kernels::Emit;

/// An array's place in memory.
#[derive(Clone, Debug)]
pub(super) struct Array {
    pub base: u64,
    pub elem: u64,
    pub len: u64,
    /// Known contents (`= random(...)`), read by loads.
    pub values: Option<std::sync::Arc<Vec<i64>>>,
}

/// What every thread of a launch shares.
pub(super) struct Env {
    pub params: FxHashMap<String, i64>,
    pub arrays: FxHashMap<String, Array>,
    /// Shared-memory arrays: not traced.
    pub shared: FxHashSet<String>,
    pub grid: [i64; 3],
    pub block: [i64; 3],
}

/// A value: `None` is data loaded from memory (or a floating-point literal).
type Val = Option<i64>;

/// An error at a byte offset of the source.
#[derive(Debug)]
pub(super) struct RunError {
    pub pos: usize,
    pub message: String,
}

fn err<T>(pos: usize, message: impl Into<String>) -> Result<T, RunError> {
    Err(RunError {
        pos,
        message: message.into(),
    })
}

/// Iterations one loop may run before it is taken for an endless one.
const MAX_ITERATIONS: u32 = 1 << 24;

#[derive(PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

pub(super) struct Thread<'a, 'b> {
    pub env: &'a Env,
    pub cta: [i64; 3],
    pub tid: [i64; 3],
    pub emit: &'a mut Emit<'b>,
    vars: Vec<(&'a str, Val)>,
    iters: Vec<u32>,
}

impl<'a, 'b> Thread<'a, 'b> {
    pub fn new(env: &'a Env, cta: [i64; 3], tid: [i64; 3], emit: &'a mut Emit<'b>) -> Self {
        Thread {
            env,
            cta,
            tid,
            emit,
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
            } => {
                let mark = self.vars.len();
                if let Some(i) = init {
                    self.stmt(i)?;
                }
                let f = self.repeat(cond.as_ref(), step.as_deref(), body)?;
                self.vars.truncate(mark);
                Ok(f)
            }
            Stmt::While(c, body) => self.repeat(Some(c), None, body),
            Stmt::Sync => {
                self.emit.bar();
                Ok(Flow::Next)
            }
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
            Stmt::Launch(_, at) => err(*at, "`launch` belongs at the top level, outside kernels"),
        }
    }

    /// A loop: the body while `cond` holds, then `step`; its iteration count is the
    /// instance of the accesses directly inside it.
    fn repeat(
        &mut self,
        cond: Option<&'a Expr>,
        step: Option<&'a Stmt>,
        body: &'a Stmt,
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
                let at = cond.map_or(0, expr_pos);
                return err(
                    at,
                    format!("a loop ran {MAX_ITERATIONS} times: is it endless?"),
                );
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
                    AssignOp::With(b) => self.binop(b, self.vars[slot].1, v, *at)?,
                };
                self.vars[slot].1 = new;
            }
            Place::Elem(a) => {
                if let AssignOp::With(_) = op {
                    let addr = self.address(a)?;
                    self.load(a, addr);
                    self.eval(value)?;
                    self.store(a, addr);
                } else {
                    self.eval(value)?;
                    let addr = self.address(a)?;
                    self.store(a, addr);
                }
            }
        }
        Ok(())
    }

    fn instance(&self) -> u32 {
        self.iters.last().copied().unwrap_or(0)
    }

    /// The address of an access (`None` for a shared-memory array).
    fn address(&mut self, a: &'a Access) -> Result<Option<(u64, u64)>, RunError> {
        let index = self.eval(&a.index)?;
        self.address_of(a, index)
    }

    /// The address of element `index` of an access's array (`None` for shared memory).
    fn address_of(&self, a: &Access, index: Val) -> Result<Option<(u64, u64)>, RunError> {
        if self.env.shared.contains(&a.array) {
            return Ok(None);
        }
        let Some(arr) = self.env.arrays.get(&a.array) else {
            return err(
                a.pos,
                format!(
                    "`{}` is not an array declared at the top (write `float {}[N];`)",
                    a.array, a.array
                ),
            );
        };
        let Some(i) = index else {
            return err(expr_pos(&a.index), format!("the index into `{}` depends on data loaded from memory, which a trace does not have", a.array));
        };
        if i < 0 || i as u64 >= arr.len {
            return err(
                expr_pos(&a.index),
                format!("index {i} is outside `{}` ({} elements)", a.array, arr.len),
            );
        }
        Ok(Some((arr.base + i as u64 * arr.elem, arr.elem)))
    }

    fn load(&mut self, a: &Access, addr: Option<(u64, u64)>) {
        if let Some((at, size)) = addr {
            let dyn_inst = self.instance();
            self.emit.ld_sized(a.load_inst, dyn_inst, at, size as u16);
        }
    }

    fn store(&mut self, a: &Access, addr: Option<(u64, u64)>) {
        if let Some((at, size)) = addr {
            let dyn_inst = self.instance();
            self.emit.st_sized(a.store_inst, dyn_inst, at, size as u16);
        }
    }

    fn cond(&mut self, e: &'a Expr) -> Result<bool, RunError> {
        match self.eval(e)? {
            Some(v) => Ok(v != 0),
            None => err(
                expr_pos(e),
                "this condition depends on data loaded from memory, which a trace does not have",
            ),
        }
    }

    fn eval(&mut self, e: &'a Expr) -> Result<Val, RunError> {
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
            Expr::Builtin(b, axis) => Some(match b {
                Builtin::ThreadIdx => self.tid[*axis],
                Builtin::BlockIdx => self.cta[*axis],
                Builtin::BlockDim => self.env.block[*axis],
                Builtin::GridDim => self.env.grid[*axis],
            }),
            Expr::Load(a) => {
                let index = self.eval(&a.index)?;
                let addr = self.address_of(a, index)?;
                self.load(a, addr);
                let values = self
                    .env
                    .arrays
                    .get(&a.array)
                    .and_then(|x| x.values.as_ref());
                match (values, index) {
                    (Some(v), Some(i)) => v.get(i as usize).copied(),
                    _ => None,
                }
            }
            Expr::Atomic(op, a, args) => {
                for x in args {
                    self.eval(x)?;
                }
                if let Some((at, size)) = self.address(a)? {
                    let dyn_inst = self.instance();
                    self.emit
                        .atomic_at(a.load_inst, dyn_inst, *op, at, size as u16);
                }
                None
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
                self.binop(*op, x, y, *at)?
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

    fn binop(&self, op: BinOp, x: Val, y: Val, at: usize) -> Result<Val, RunError> {
        binop(op, x, y, at)
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
        Expr::Ternary(c, _, _) => expr_pos(c),
        Expr::MinMax(_, a, _) => expr_pos(a),
        Expr::Num(_) | Expr::Float | Expr::Builtin(..) => 0,
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
