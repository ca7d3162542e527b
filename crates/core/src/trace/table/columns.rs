//! Reading one column of a chunk: whole numbers (decimal or `0x` hex), and names coded once
//! per distinct value (instructions, kinds, spaces, kernels).

use super::*;

/// A column as whole numbers of type `T` (from integers or decimal/`0x` strings), or `None`
/// when absent.
pub(super) fn numbers<T: TryFrom<u64>>(
    df: &polars::prelude::DataFrame,
    name: &str,
    at: &dyn Fn(usize) -> Location,
    file: &str,
) -> Result<Option<Vec<T>>, TraceError> {
    use polars::prelude::*;
    let Ok(col) = df.column(name) else {
        return Ok(None);
    };
    let bad = |i: usize, v: &str| {
        TraceError::parse(
            file,
            at(i),
            format!("column `{name}`: expected a whole number (decimal or 0x hex), found `{v}`"),
        )
    };
    let narrow = |i: usize, x: u64| {
        T::try_from(x).map_err(|_| {
            TraceError::parse(
                file,
                at(i),
                format!(
                    "column `{name}`: {x} does not fit in {} bits",
                    8 * std::mem::size_of::<T>()
                ),
            )
        })
    };
    let s = col.as_materialized_series();
    let perr = |e: PolarsError| TraceError::parse(file, at(0), format!("column `{name}`: {e}"));
    let mut out: Vec<T> = Vec::with_capacity(s.len());
    if s.dtype() == &DataType::UInt64 {
        for arr in s.u64().map_err(perr)?.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = v.copied().ok_or_else(|| bad(i, ""))?;
                out.push(narrow(i, v)?);
            }
        }
    } else if s.dtype().is_integer() {
        let c = s.cast(&DataType::Int64).map_err(perr)?;
        for arr in c.i64().map_err(perr)?.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = v.copied().ok_or_else(|| bad(i, ""))?;
                let v = u64::try_from(v).map_err(|_| bad(i, &v.to_string()))?;
                out.push(narrow(i, v)?);
            }
        }
    } else {
        let c = s
            .cast(&DataType::String)
            .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
        let c = c
            .str()
            .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
        for arr in c.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = trimmed(v.unwrap_or(""));
                let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => lex::hex(h.as_bytes()),
                    None => lex::dec(v.as_bytes()),
                };
                out.push(narrow(i, parsed.ok_or_else(|| bad(i, v))?)?);
            }
        }
    }
    Ok(Some(out))
}

/// `s` without surrounding white space (most values have none, which is checked first).
pub(super) fn trimmed(s: &str) -> &str {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(a), Some(b)) if a.is_ascii_graphic() && b.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

/// A text column as one code per row and its distinct (trimmed) values, so that work per
/// value (parsing a kind, looking up an instruction) is done once per distinct value.
pub(super) struct Codes {
    /// Each row's value, as an index into `values`.
    pub code: Vec<u32>,
    pub values: Vec<String>,
}

/// A column as codes of its text, or `None` when absent.
pub(super) fn codes(df: &polars::prelude::DataFrame, name: &str) -> Option<Codes> {
    use polars::prelude::*;
    let s = df
        .column(name)
        .ok()?
        .as_materialized_series()
        .cast(&DataType::String)
        .ok()?;
    let c = s.str().ok()?;
    let mut index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut values = Vec::new();
    let mut code_of = |v| -> u32 {
        let v = trimmed(v);
        *index.entry(v).or_insert_with(|| {
            values.push(v.to_string());
            values.len() as u32 - 1
        })
    };
    // Values of up to 12 bytes are held whole in their 16-byte view (zero-padded), so equal
    // views are equal values: such rows are coded by their view, without hashing text. The
    // previous row's view is tried first (runs of a kernel name or a space).
    let mut by_view: FxHashMap<u128, u32> = FxHashMap::default();
    let mut last: Option<(u128, u32)> = None;
    let mut code = Vec::with_capacity(c.len());
    for arr in c.downcast_iter() {
        for (view, v) in arr.views().iter().zip(arr.iter()) {
            let Some(v) = v.filter(|_| view.is_inline()) else {
                code.push(code_of(v.unwrap_or("")));
                continue;
            };
            let key = view.as_u128();
            let c = match last {
                Some((l, c)) if l == key => c,
                _ => *by_view.entry(key).or_insert_with(|| code_of(v)),
            };
            last = Some((key, c));
            code.push(c);
        }
    }
    Some(Codes { code, values })
}

impl Codes {
    /// The codes with `parse` applied once to each distinct value.
    pub(super) fn parsed<T>(self, parse: impl Fn(&str) -> Option<T>) -> (Codes, Vec<Option<T>>) {
        let parsed = self.values.iter().map(|v| parse(v)).collect();
        (self, parsed)
    }
}

pub(super) fn kind_of(s: &str) -> Option<AccessKind> {
    match s.to_ascii_lowercase().as_str() {
        "" | "load" | "ld" | "read" | "r" => Some(AccessKind::Load),
        "store" | "st" | "write" | "w" => Some(AccessKind::Store),
        "atomic" | "atom" => Some(AccessKind::Atomic(AtomicOp::Add)),
        "barrier" | "bar" => Some(AccessKind::Barrier),
        other => other
            .strip_prefix("atom.")
            .and_then(AtomicOp::from_name)
            .map(AccessKind::Atomic),
    }
}
