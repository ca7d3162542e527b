//! The kernel language's syntax tree. Positions are byte offsets into the source (turned into
//! line and column for errors).

use crate::trace::AtomicOp;

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// `param NAME = EXPR;`, in order (a later one may use an earlier one).
    pub params: Vec<(String, Expr, usize)>,
    pub grid: Option<(Vec<Expr>, usize)>,
    pub block: Option<(Vec<Expr>, usize)>,
    pub arrays: Vec<ArrayDecl>,
    pub kernels: Vec<KernelDef>,
    /// The host code: the top-level statements, run once in order. They fill arrays with
    /// known data (`srand`, `random(BOUND)`, element writes, which are not traced) and
    /// launch the kernels (`launch NAME;`, in loops if need be; the host's variables are
    /// seen by the kernels as params). Without any `launch`, each kernel is launched once,
    /// in order, after the host code.
    pub host: Vec<Stmt>,
}

/// `float A[n * n];`, `__shared__ float tile[256];`, `int hist[bins] @ 0x2000;`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    pub name: String,
    /// Element size in bytes: from the type, or `bytes(EXPR)`.
    pub elem: Expr,
    /// `None` for `TYPE NAME[]`: as long as the host code makes it.
    pub len: Option<Expr>,
    /// A fixed first address; otherwise the arrays are laid out one after another.
    pub base: Option<Expr>,
    /// Shared memory is not an L1 access: its accesses are not traced.
    pub shared: bool,
    /// `= random(SEED, BOUND)`: known contents, each element drawn in order from the
    /// simulator's seeded generator below BOUND (as the built-in kernels draw their data).
    pub random: Option<(Expr, Expr)>,
    pub pos: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KernelDef {
    pub name: String,
    pub body: Vec<Stmt>,
    pub pos: usize,
    /// `kernel NAME<<<GRID, BLOCK>>>`: its own launch shape instead of the program's.
    pub launch: Option<(Vec<Expr>, Vec<Expr>, usize)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Block(Vec<Stmt>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        step: Option<Box<Stmt>>,
        body: Box<Stmt>,
        /// After `#pragma unroll`: each iteration's accesses are instructions of their own.
        unroll: bool,
        /// Where the loop is written.
        at: usize,
    },
    /// An unrolled loop (made from a `#pragma unroll` loop once the params are known): its
    /// variable and each iteration's value and body.
    Unrolled(String, Vec<(i64, Stmt)>),
    /// `while (COND) BODY`, and where it is written.
    While(Expr, Box<Stmt>, usize),
    /// `__syncthreads();` (where).
    Sync(usize),
    Return,
    Break,
    Continue,
    /// `int x = e;` (a shared array declared inside the kernel is an `ArrayDecl` instead).
    Decl(String, Option<Expr>, usize),
    Assign(Place, AssignOp, Expr),
    Expr(Expr),
    /// `__shared__ float tile[..];` inside a kernel: its accesses are not traced.
    Shared(Box<ArrayDecl>),
    /// `launch NAME;` (host code only).
    Launch(String, usize),
    /// `srand(SEED);` (host code only): seeds the stream `random(BOUND)` draws from.
    Seed(Expr, usize),
    /// `;`
    Nothing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    /// `+=`, `-=`, ...: the place is read, then written.
    With(BinOp),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    Var(String, usize),
    Elem(Access),
}

/// An array element named in the source: one instruction of the trace per site and kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub array: String,
    pub index: Box<Expr>,
    /// `A[i] @ "ld_up"`: the instruction's name instead of `ld_A`.
    pub label: Option<String>,
    pub pos: usize,
    /// Instruction ids of this site's load and store (set after parsing, in evaluation order).
    pub load_inst: u32,
    pub store_inst: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    ThreadIdx,
    BlockIdx,
    BlockDim,
    GridDim,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(i64),
    /// A floating-point literal: a data value, never an index.
    Float,
    Var(String, usize),
    /// `threadIdx.x` and the like: (which, axis 0..3, where).
    Builtin(Builtin, usize, usize),
    Load(Access),
    /// `atomicAdd(&A[i], v)`: the access, then the other arguments.
    Atomic(AtomicOp, Access, Vec<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>, usize),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `min(a, b)`, `max(a, b)`.
    MinMax(bool, Box<Expr>, Box<Expr>),
    /// `random(BOUND)` (host code only): the next draw of the seeded stream, below BOUND.
    Random(Box<Expr>, usize),
}
