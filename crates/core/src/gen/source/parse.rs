//! The kernel language's grammar (winnow): C/CUDA expressions and statements, plus the
//! declarations a trace needs (`param`, `grid`, `block`, global arrays).

use winnow::combinator::{
    alt, cut_err, delimited, not, opt, preceded, repeat, separated, terminated,
};
use winnow::error::{ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::{Location, Stream};
use winnow::token::{any, literal, one_of, take_until, take_while};
use winnow::LocatingSlice;

use super::ast::*;
use crate::trace::AtomicOp;

type In<'a> = LocatingSlice<&'a str>;
type R<T> = ModalResult<T>;

fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

/// Spaces and comments.
fn ws(i: &mut In) -> R<()> {
    repeat(
        0..,
        alt((
            take_while(1.., char::is_whitespace).void(),
            ("//", take_while(0.., |c| c != '\n')).void(),
            ("/*", take_until(0.., "*/"), "*/").void(),
        )),
    )
    .parse_next(i)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The source offset of the next token.
fn pos(i: &mut In) -> R<usize> {
    ws(i)?;
    Ok(i.current_token_start())
}

/// Punctuation `s`, after spaces.
fn p<'a>(s: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    preceded(ws, literal(s)).void()
}

/// Punctuation `s`, required: a missing one is an error here, not another alternative.
fn need<'a>(s: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    cut_err(p(s)).context(StrContext::Expected(StrContextValue::StringLiteral(s)))
}

/// Keyword `s` (not the start of a longer name).
fn kw<'a>(s: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    preceded(ws, terminated(literal(s), not(one_of(is_ident)))).void()
}

const KEYWORDS: &[&str] = &[
    "if",
    "else",
    "for",
    "while",
    "return",
    "break",
    "continue",
    "param",
    "grid",
    "block",
    "kernel",
    "__syncthreads",
    "__shared__",
    "__global__",
];

fn ident(i: &mut In) -> R<String> {
    let start = i.checkpoint();
    ws(i)?;
    let name: &str = (
        one_of(|c: char| c.is_alphabetic() || c == '_'),
        take_while(0.., is_ident),
    )
        .take()
        .parse_next(i)?;
    if KEYWORDS.contains(&name) {
        i.reset(&start);
        return Err(ErrMode::Backtrack(ContextError::new()));
    }
    Ok(name.to_string())
}

/// Scalar and element types, with their sizes in bytes.
fn type_name(i: &mut In) -> R<u64> {
    let _ = opt(kw("const")).parse_next(i)?;
    let words: Vec<u64> = repeat(
        1..,
        alt((
            kw("unsigned").value(0),
            kw("signed").value(0),
            kw("char").value(1),
            kw("bool").value(1),
            kw("short").value(2),
            kw("int").value(4),
            kw("float").value(4),
            kw("long").value(8),
            kw("double").value(8),
            kw("size_t").value(8),
            kw("auto").value(8),
            kw("int64_t").value(8),
            kw("uint64_t").value(8),
            kw("int32_t").value(4),
            kw("uint32_t").value(4),
            alt((
                kw("float2").value(8),
                kw("float4").value(16),
                kw("int2").value(8),
                kw("int4").value(16),
                kw("double2").value(16),
            )),
        )),
    )
    .parse_next(i)?;
    // `unsigned` alone is an int; `long long` is 8 like `long`.
    Ok(words.iter().copied().max().filter(|&w| w > 0).unwrap_or(4))
}

fn number(i: &mut In) -> R<Expr> {
    ws(i)?;
    let text: &str = (
        take_while(1.., |c: char| c.is_ascii_digit() || c == '.'),
        take_while(0.., |c: char| c.is_ascii_alphanumeric() || c == '.'),
    )
        .take()
        .parse_next(i)?;
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let digits = hex.trim_end_matches(['u', 'l']);
        return i64::from_str_radix(digits, 16)
            .map(Expr::Num)
            .map_err(|_| ErrMode::Cut(ContextError::new().add_context_static("a number")));
    }
    let digits = lower.trim_end_matches(['u', 'l']);
    if let Ok(v) = digits.parse::<i64>() {
        return Ok(Expr::Num(v));
    }
    let float = lower.trim_end_matches('f');
    if float.parse::<f64>().is_ok() {
        return Ok(Expr::Float);
    }
    Err(ErrMode::Cut(
        ContextError::new().add_context_static("a number"),
    ))
}

trait Ctx {
    fn add_context_static(self, what: &'static str) -> Self;
}
impl Ctx for ContextError {
    fn add_context_static(mut self, what: &'static str) -> Self {
        self.push(expected(what));
        self
    }
}

fn string(i: &mut In) -> R<String> {
    preceded(
        ws,
        delimited('"', take_while(0.., |c| c != '"' && c != '\n'), '"'),
    )
    .map(str::to_string)
    .parse_next(i)
}

/// `A[index]`, with an optional `@ "name"` for its instruction.
fn access_after_name(i: &mut In, array: String, at: usize) -> R<Access> {
    let index = delimited(p("["), cut_err(expr), need("]")).parse_next(i)?;
    let label = opt(preceded(
        p("@"),
        cut_err(string).context(expected("an instruction name in quotes")),
    ))
    .parse_next(i)?;
    Ok(Access {
        array,
        index: Box::new(index),
        label,
        pos: at,
        load_inst: u32::MAX,
        store_inst: u32::MAX,
    })
}

fn builtin(i: &mut In) -> R<Expr> {
    let at = pos(i)?;
    let which = alt((
        kw("threadIdx").value(Builtin::ThreadIdx),
        kw("blockIdx").value(Builtin::BlockIdx),
        kw("blockDim").value(Builtin::BlockDim),
        kw("gridDim").value(Builtin::GridDim),
    ))
    .parse_next(i)?;
    need(".").parse_next(i)?;
    let axis = cut_err(alt((kw("x").value(0), kw("y").value(1), kw("z").value(2))))
        .context(expected("x, y or z"))
        .parse_next(i)?;
    Ok(Expr::Builtin(which, axis, at))
}

fn atomic(i: &mut In) -> R<Expr> {
    let op = alt((
        kw("atomicAdd").value(AtomicOp::Add),
        kw("atomicSub").value(AtomicOp::Sub),
        kw("atomicMin").value(AtomicOp::Min),
        kw("atomicMax").value(AtomicOp::Max),
        kw("atomicInc").value(AtomicOp::Inc),
        kw("atomicDec").value(AtomicOp::Dec),
        kw("atomicExch").value(AtomicOp::Exch),
        kw("atomicCAS").value(AtomicOp::Cas),
        kw("atomicAnd").value(AtomicOp::And),
        kw("atomicOr").value(AtomicOp::Or),
        kw("atomicXor").value(AtomicOp::Xor),
    ))
    .parse_next(i)?;
    need("(").parse_next(i)?;
    need("&").parse_next(i)?;
    let at = pos(i)?;
    let array = cut_err(ident).context(expected("an array")).parse_next(i)?;
    let a = access_after_name(i, array, at)?;
    let rest: Vec<Expr> = repeat(0.., preceded(p(","), cut_err(expr))).parse_next(i)?;
    need(")").parse_next(i)?;
    Ok(Expr::Atomic(op, a, rest))
}

fn primary(i: &mut In) -> R<Expr> {
    ws(i)?;
    if let Some(e) = opt(alt((number, builtin, atomic))).parse_next(i)? {
        return Ok(e);
    }
    if opt(p("(")).parse_next(i)?.is_some() {
        let e = cut_err(expr).parse_next(i)?;
        need(")").parse_next(i)?;
        return Ok(e);
    }
    let at = pos(i)?;
    let name = ident.context(expected("a value")).parse_next(i)?;
    if name == "random" && peek_is(i, "(")? {
        need("(").parse_next(i)?;
        let bound = cut_err(expr).parse_next(i)?;
        need(")").parse_next(i)?;
        return Ok(Expr::Random(Box::new(bound), at));
    }
    if name == "min" || name == "max" {
        need("(").parse_next(i)?;
        let a = cut_err(expr).parse_next(i)?;
        need(",").parse_next(i)?;
        let b = cut_err(expr).parse_next(i)?;
        need(")").parse_next(i)?;
        return Ok(Expr::MinMax(name == "max", Box::new(a), Box::new(b)));
    }
    if peek_is(i, "[")? {
        return Ok(Expr::Load(access_after_name(i, name, at)?));
    }
    Ok(Expr::Var(name, at))
}

/// Whether the next token is `s` (nothing consumed).
fn peek_is(i: &mut In, s: &'static str) -> R<bool> {
    let start = i.checkpoint();
    let yes = opt(p(s)).parse_next(i)?.is_some();
    i.reset(&start);
    Ok(yes)
}

fn unary(i: &mut In) -> R<Expr> {
    ws(i)?;
    // A cast, `(int)x`: the type changes nothing here.
    let start = i.checkpoint();
    if opt((p("("), type_name, p(")"))).parse_next(i)?.is_some() {
        return unary(i);
    }
    i.reset(&start);
    let op = opt(alt((
        terminated(p("-"), not(one_of(['-', '=']))).value(Some(UnOp::Neg)),
        terminated(p("+"), not(one_of(['+', '=']))).value(None),
        terminated(p("!"), not('=')).value(Some(UnOp::Not)),
        p("~").value(Some(UnOp::BitNot)),
    )))
    .parse_next(i)?;
    match op {
        Some(Some(op)) => Ok(Expr::Unary(op, Box::new(cut_err(unary).parse_next(i)?))),
        Some(None) => cut_err(unary).parse_next(i),
        None => primary(i),
    }
}

type Level = fn(&mut In) -> R<Expr>;

/// One level of binary operators, left-associative: each operator with the characters that
/// must not follow it (so `<` is not the start of `<<` or `<=`).
fn binary(i: &mut In, next: Level, ops: &[(&'static str, &'static [char], BinOp)]) -> R<Expr> {
    let mut left = next(i)?;
    'more: loop {
        for &(text, not_after, op) in ops {
            let start = i.checkpoint();
            let at = pos(i)?;
            if opt(terminated(literal(text), not(one_of(not_after))))
                .parse_next(i)?
                .is_some()
            {
                let right = cut_err(next).parse_next(i)?;
                left = Expr::Binary(op, Box::new(left), Box::new(right), at);
                continue 'more;
            }
            i.reset(&start);
        }
        return Ok(left);
    }
}

fn mul(i: &mut In) -> R<Expr> {
    binary(
        i,
        unary,
        &[
            ("*", &['='], BinOp::Mul),
            ("/", &['=', '/', '*'], BinOp::Div),
            ("%", &['='], BinOp::Rem),
        ],
    )
}
fn add(i: &mut In) -> R<Expr> {
    binary(
        i,
        mul,
        &[
            ("+", &['+', '='], BinOp::Add),
            ("-", &['-', '='], BinOp::Sub),
        ],
    )
}
fn shift(i: &mut In) -> R<Expr> {
    binary(
        i,
        add,
        &[
            ("<<", &['=', '<'], BinOp::Shl),
            (">>", &['=', '>'], BinOp::Shr),
        ],
    )
}
fn compare(i: &mut In) -> R<Expr> {
    binary(
        i,
        shift,
        &[
            ("<=", &[], BinOp::Le),
            (">=", &[], BinOp::Ge),
            ("<", &['<', '='], BinOp::Lt),
            (">", &['>', '='], BinOp::Gt),
        ],
    )
}
fn equal(i: &mut In) -> R<Expr> {
    binary(
        i,
        compare,
        &[("==", &[], BinOp::Eq), ("!=", &[], BinOp::Ne)],
    )
}
fn bit_and(i: &mut In) -> R<Expr> {
    binary(i, equal, &[("&", &['&', '='], BinOp::BitAnd)])
}
fn bit_xor(i: &mut In) -> R<Expr> {
    binary(i, bit_and, &[("^", &['='], BinOp::BitXor)])
}
fn bit_or(i: &mut In) -> R<Expr> {
    binary(i, bit_xor, &[("|", &['|', '='], BinOp::BitOr)])
}
fn and(i: &mut In) -> R<Expr> {
    binary(i, bit_or, &[("&&", &[], BinOp::And)])
}
fn or(i: &mut In) -> R<Expr> {
    binary(i, and, &[("||", &[], BinOp::Or)])
}

pub(super) fn expr(i: &mut In) -> R<Expr> {
    let c = or(i)?;
    if opt(p("?")).parse_next(i)?.is_some() {
        let a = cut_err(expr).parse_next(i)?;
        need(":").parse_next(i)?;
        let b = cut_err(expr).parse_next(i)?;
        return Ok(Expr::Ternary(Box::new(c), Box::new(a), Box::new(b)));
    }
    Ok(c)
}

fn place(i: &mut In) -> R<Place> {
    let at = pos(i)?;
    let name = ident(i)?;
    if peek_is(i, "[")? {
        Ok(Place::Elem(access_after_name(i, name, at)?))
    } else {
        Ok(Place::Var(name, at))
    }
}

fn assign_op(i: &mut In) -> R<AssignOp> {
    alt((
        terminated(p("="), not('=')).value(AssignOp::Set),
        p("+=").value(AssignOp::With(BinOp::Add)),
        p("-=").value(AssignOp::With(BinOp::Sub)),
        p("*=").value(AssignOp::With(BinOp::Mul)),
        p("/=").value(AssignOp::With(BinOp::Div)),
        p("%=").value(AssignOp::With(BinOp::Rem)),
        p("<<=").value(AssignOp::With(BinOp::Shl)),
        p(">>=").value(AssignOp::With(BinOp::Shr)),
        p("&=").value(AssignOp::With(BinOp::BitAnd)),
        p("|=").value(AssignOp::With(BinOp::BitOr)),
        p("^=").value(AssignOp::With(BinOp::BitXor)),
    ))
    .parse_next(i)
}

/// A declaration, an assignment, an increment or an expression (no `;`).
fn simple(i: &mut In) -> R<Stmt> {
    let start = i.checkpoint();
    if type_name(i).is_ok() {
        let decls: Vec<Stmt> = separated(
            1..,
            |i: &mut In| {
                let at = pos(i)?;
                let name = cut_err(ident)
                    .context(expected("a variable name"))
                    .parse_next(i)?;
                let init =
                    opt(preceded(terminated(p("="), not('=')), cut_err(expr))).parse_next(i)?;
                Ok(Stmt::Decl(name, init, at))
            },
            p(","),
        )
        .parse_next(i)?;
        return Ok(if decls.len() == 1 {
            decls.into_iter().next().unwrap_or(Stmt::Nothing)
        } else {
            Stmt::Block(decls)
        });
    }
    i.reset(&start);
    // ++x, --x
    if let Some(op) =
        opt(alt((p("++").value(BinOp::Add), p("--").value(BinOp::Sub)))).parse_next(i)?
    {
        let pl = cut_err(place).parse_next(i)?;
        return Ok(Stmt::Assign(pl, AssignOp::With(op), Expr::Num(1)));
    }
    if let Ok(pl) = place(i) {
        if let Some(op) =
            opt(alt((p("++").value(BinOp::Add), p("--").value(BinOp::Sub)))).parse_next(i)?
        {
            return Ok(Stmt::Assign(pl, AssignOp::With(op), Expr::Num(1)));
        }
        if let Some(op) = opt(assign_op).parse_next(i)? {
            let value = cut_err(expr).parse_next(i)?;
            return Ok(Stmt::Assign(pl, op, value));
        }
    }
    i.reset(&start);
    Ok(Stmt::Expr(expr(i)?))
}

fn shared(i: &mut In) -> R<ArrayDecl> {
    let at = pos(i)?;
    kw("__shared__").parse_next(i)?;
    let mut a = cut_err(array_decl).parse_next(i)?;
    a.shared = true;
    a.pos = at;
    Ok(a)
}

fn stmt(i: &mut In) -> R<Stmt> {
    ws(i)?;
    if opt(p("{")).parse_next(i)?.is_some() {
        let body: Vec<Stmt> = repeat(0.., stmt).parse_next(i)?;
        need("}").parse_next(i)?;
        return Ok(Stmt::Block(body));
    }
    if opt(p(";")).parse_next(i)?.is_some() {
        return Ok(Stmt::Nothing);
    }
    if opt(kw("if")).parse_next(i)?.is_some() {
        need("(").parse_next(i)?;
        let c = cut_err(expr).parse_next(i)?;
        need(")").parse_next(i)?;
        let then = cut_err(stmt).parse_next(i)?;
        let other = opt(preceded(kw("else"), cut_err(stmt))).parse_next(i)?;
        return Ok(Stmt::If(c, Box::new(then), other.map(Box::new)));
    }
    if opt((p("#"), kw("pragma"))).parse_next(i)?.is_some() {
        cut_err(kw("unroll"))
            .context(expected("`unroll` (the only pragma the language knows)"))
            .parse_next(i)?;
        let mut s = cut_err(stmt).parse_next(i)?;
        return match &mut s {
            Stmt::For { unroll, .. } => {
                *unroll = true;
                Ok(s)
            }
            _ => Err(ErrMode::Cut(
                ContextError::new().add_context_static("a `for` loop after `#pragma unroll`"),
            )),
        };
    }
    let at = pos(i)?;
    if opt(kw("for")).parse_next(i)?.is_some() {
        need("(").parse_next(i)?;
        let init = opt(simple).parse_next(i)?;
        need(";").parse_next(i)?;
        let cond = opt(expr).parse_next(i)?;
        need(";").parse_next(i)?;
        let step = opt(simple).parse_next(i)?;
        need(")").parse_next(i)?;
        let body = cut_err(stmt).parse_next(i)?;
        return Ok(Stmt::For {
            init: init.map(Box::new),
            cond,
            step: step.map(Box::new),
            body: Box::new(body),
            unroll: false,
            at,
        });
    }
    if opt(kw("while")).parse_next(i)?.is_some() {
        need("(").parse_next(i)?;
        let c = cut_err(expr).parse_next(i)?;
        need(")").parse_next(i)?;
        let body = cut_err(stmt).parse_next(i)?;
        return Ok(Stmt::While(c, Box::new(body), at));
    }
    let s = alt((
        |i: &mut In| {
            let at = pos(i)?;
            (kw("__syncthreads"), need("("), need(")")).parse_next(i)?;
            Ok(Stmt::Sync(at))
        },
        |i: &mut In| {
            let at = pos(i)?;
            kw("launch").parse_next(i)?;
            let name = cut_err(alt((string, ident)))
                .context(expected("a kernel name"))
                .parse_next(i)?;
            Ok(Stmt::Launch(name, at))
        },
        |i: &mut In| {
            let at = pos(i)?;
            kw("srand").parse_next(i)?;
            let seed = delimited(need("("), cut_err(expr), need(")")).parse_next(i)?;
            Ok(Stmt::Seed(seed, at))
        },
        kw("return").value(Stmt::Return),
        kw("break").value(Stmt::Break),
        kw("continue").value(Stmt::Continue),
        shared.map(|a| Stmt::Shared(Box::new(a))),
        simple,
    ))
    .context(expected("a statement"))
    .parse_next(i)?;
    need(";").parse_next(i)?;
    Ok(s)
}

/// An array's element type: a type name, or `bytes(EXPR)` for a size given by the params.
fn elem_type(i: &mut In) -> R<Expr> {
    if opt(kw("bytes")).parse_next(i)?.is_some() {
        return delimited(need("("), cut_err(expr), need(")")).parse_next(i);
    }
    type_name.map(|b| Expr::Num(b as i64)).parse_next(i)
}

/// `float A[n * n] [@ base];` after any qualifier (`int A[];`: as long as the host code
/// makes it). Not an array (no `[` after the name) is a backtrack: a host variable.
fn array_decl(i: &mut In) -> R<ArrayDecl> {
    let at = pos(i)?;
    let elem = elem_type(i)?;
    let name = ident(i)?;
    p("[").parse_next(i)?;
    let len = opt(expr).parse_next(i)?;
    need("]").parse_next(i)?;
    let base = opt(preceded(p("@"), cut_err(expr))).parse_next(i)?;
    let random = opt(preceded(
        (terminated(p("="), not('=')), kw("random"), need("(")),
        cut_err(terminated((expr, preceded(need(","), expr)), need(")"))),
    ))
    .parse_next(i)?;
    Ok(ArrayDecl {
        name,
        elem,
        len,
        base,
        shared: false,
        random,
        pos: at,
    })
}

fn dims(i: &mut In) -> R<(Vec<Expr>, usize)> {
    let at = pos(i)?;
    need("(").parse_next(i)?;
    let v: Vec<Expr> = separated(1..=3, cut_err(expr), p(",")).parse_next(i)?;
    need(")").parse_next(i)?;
    need(";").parse_next(i)?;
    Ok((v, at))
}

/// `(...)` with anything inside, nested parentheses included: a CUDA kernel's parameter list,
/// which the language does not need (arrays are declared at the top).
fn skip_parens(i: &mut In) -> R<()> {
    p("(").parse_next(i)?;
    let mut depth = 1;
    while depth > 0 {
        match any.parse_next(i)? {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
    }
    Ok(())
}

/// A launch dimension: `EXPR` or `(X, Y[, Z])`.
fn dim(i: &mut In) -> R<Vec<Expr>> {
    let start = i.checkpoint();
    let list: Option<Vec<Expr>> =
        opt(delimited(p("("), separated(1..=3, expr, p(",")), p(")"))).parse_next(i)?;
    if let Some(v) = list {
        if peek_is(i, ",")? || peek_is(i, ">>>")? {
            return Ok(v);
        }
    }
    i.reset(&start);
    Ok(vec![expr(i)?])
}

/// `<<<GRID, BLOCK>>>` after a kernel's name.
fn launch_shape(i: &mut In) -> R<(Vec<Expr>, Vec<Expr>, usize)> {
    let at = pos(i)?;
    p("<<<").parse_next(i)?;
    let g = cut_err(dim).parse_next(i)?;
    need(",").parse_next(i)?;
    let b = cut_err(dim).parse_next(i)?;
    need(">>>").parse_next(i)?;
    Ok((g, b, at))
}

fn kernel(i: &mut In) -> R<KernelDef> {
    let at = pos(i)?;
    let name = alt((
        preceded(kw("kernel"), cut_err(alt((string, ident)))),
        preceded((kw("__global__"), kw("void")), cut_err(ident)),
    ))
    .parse_next(i)?;
    let launch = opt(launch_shape).parse_next(i)?;
    if peek_is(i, "(")? {
        skip_parens(i)?;
    }
    need("{").parse_next(i)?;
    let body: Vec<Stmt> = repeat(0.., stmt).parse_next(i)?;
    need("}").parse_next(i)?;
    Ok(KernelDef {
        name,
        body,
        pos: at,
        launch,
    })
}

enum Item {
    Run(Stmt),
    Param(String, Expr, usize),
    Grid((Vec<Expr>, usize)),
    Block((Vec<Expr>, usize)),
    Array(Box<ArrayDecl>),
    Kernel(KernelDef),
}

fn item(i: &mut In) -> R<Item> {
    alt((
        |i: &mut In| {
            let at = pos(i)?;
            kw("param").parse_next(i)?;
            let name = cut_err(ident)
                .context(expected("a parameter name"))
                .parse_next(i)?;
            need("=").parse_next(i)?;
            let v = cut_err(expr).parse_next(i)?;
            need(";").parse_next(i)?;
            Ok(Item::Param(name, v, at))
        },
        preceded(kw("grid"), cut_err(dims)).map(Item::Grid),
        preceded(kw("block"), cut_err(dims)).map(Item::Block),
        kernel.map(Item::Kernel),
        shared.map(|a| Item::Array(Box::new(a))),
        terminated(preceded(opt(kw("__device__")), array_decl), need(";"))
            .map(|a| Item::Array(Box::new(a))),
        stmt.map(Item::Run),
    ))
    .context(expected(
        "param, grid, block, an array, a kernel or a host statement",
    ))
    .parse_next(i)
}

/// Deepest nesting of brackets the parser takes (it recurses once per level).
const MAX_NESTING: usize = 200;

/// Where brackets first nest deeper than [`MAX_NESTING`], if they do.
fn too_deep(src: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in src.char_indices() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(at);
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Parses a whole program; the error is (byte offset, message).
pub fn program(src: &str) -> Result<Program, (usize, String)> {
    if let Some(at) = too_deep(src) {
        return Err((at, format!("brackets nest more than {MAX_NESTING} deep")));
    }
    let mut prog = Program {
        params: Vec::new(),
        grid: None,
        block: None,
        arrays: Vec::new(),
        kernels: Vec::new(),
        host: Vec::new(),
    };
    let items = terminated(repeat(0.., item), (ws, winnow::combinator::eof))
        .parse(LocatingSlice::new(src))
        .map_err(|e| {
            let what = e.inner().to_string();
            let what = if what.is_empty() {
                "this is not a declaration or statement of the kernel language".to_string()
            } else {
                what.replace('\n', "; ")
            };
            (e.offset(), what)
        })?;
    let items: Vec<Item> = items;
    for it in items {
        match it {
            Item::Param(n, e, at) => prog.params.push((n, e, at)),
            Item::Grid(g) => prog.grid = Some(g),
            Item::Block(b) => prog.block = Some(b),
            Item::Array(a) => prog.arrays.push(*a),
            Item::Kernel(k) => prog.kernels.push(k),
            Item::Run(s) => prog.host.push(s),
        }
    }
    Ok(prog)
}
