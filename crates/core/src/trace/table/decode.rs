//! A chunk of a table's rows, its columns looked up once, and each row read from it with the
//! checks that need no other row: what the whole read (`rows.rs`) and both passes of the
//! streamed read (`stream.rs`) share.

use super::columns::{codes, kind_of, numbers, Codes};
use super::*;

/// The columns of one chunk of rows.
pub(super) struct Chunk<'a> {
    file: &'a str,
    at: &'a dyn Fn(usize) -> Location,
    len: usize,
    addr: Vec<u64>,
    cta: [Option<Vec<u32>>; 3],
    tid: [Option<Vec<u32>>; 3],
    /// `warp` and `lane`, which stand for `thread_x`.
    warp_lane: Option<(Vec<u32>, Vec<u32>)>,
    block: [Option<Vec<u32>>; 3],
    sm: Option<Vec<u32>>,
    size: Option<Vec<u64>>,
    dyn_inst: Option<Vec<u32>>,
    pc: Option<Vec<u64>>,
    kernel: Option<Codes>,
    inst: Option<Codes>,
    kind: Option<(Codes, Vec<Option<AccessKind>>)>,
    space: Option<(Codes, Vec<Option<MemSpace>>)>,
}

/// One row, read and checked on its own.
pub(super) struct Row {
    pub cta: Dim3,
    pub thread: Dim3,
    /// The CTA size the row gives (`block_*` columns), if the table has one.
    pub block: Option<Dim3>,
    pub sm: Option<u32>,
    pub kind: AccessKind,
    pub space: MemSpace,
    /// The code of the row's `inst` value in this chunk ([`Chunk::inst_name`]).
    pub inst: Option<u32>,
    pub pc: Option<u64>,
    /// From the `dyn` column.
    pub dyn_inst: Option<u32>,
    /// 0 for a barrier.
    pub size: u16,
    /// 0 for a barrier.
    pub addr: u64,
}

impl Row {
    pub fn is_barrier(&self) -> bool {
        self.kind == AccessKind::Barrier
    }
}

impl<'a> Chunk<'a> {
    /// Looks up the columns of `df`; row `i` of it is at `at(i)` in `file`.
    pub fn new(
        df: &polars::prelude::DataFrame,
        file: &'a str,
        at: &'a dyn Fn(usize) -> Location,
    ) -> Result<Self, TraceError> {
        let err = |m: &str| TraceError::parse(file, at(0), m.to_string());
        let num = |name: &str| numbers::<u64>(df, name, at, file);
        let u32col = |name: &str| numbers::<u32>(df, name, at, file);
        let addr = num("address")?.ok_or_else(|| err("the table has no `address` column"))?;
        let tid = [
            u32col("thread_x")?,
            u32col("thread_y")?,
            u32col("thread_z")?,
        ];
        let warp_lane = match (u32col("warp")?, u32col("lane")?) {
            (Some(w), Some(l)) => Some((w, l)),
            (None, None) => None,
            _ => return Err(err("columns `warp` and `lane` go together")),
        };
        if warp_lane.is_some() && tid.iter().any(Option::is_some) {
            return Err(err(
                "give either `thread_x/y/z` or `warp` and `lane`, not both",
            ));
        }
        Ok(Chunk {
            file,
            at,
            len: df.height(),
            addr,
            cta: [u32col("cta_x")?, u32col("cta_y")?, u32col("cta_z")?],
            tid,
            warp_lane,
            block: [u32col("block_x")?, u32col("block_y")?, u32col("block_z")?],
            sm: u32col("sm")?,
            size: num("size")?,
            dyn_inst: u32col("dyn")?,
            pc: num("pc")?,
            kernel: codes(df, "kernel"),
            inst: codes(df, "inst"),
            // Kinds and spaces parsed once per distinct value (`None`: not a kind or space).
            kind: codes(df, "kind").map(|c| c.parsed(kind_of)),
            space: codes(df, "space").map(|c| {
                c.parsed(|v| {
                    if v.is_empty() {
                        Some(MemSpace::Global)
                    } else {
                        MemSpace::from_name(v)
                    }
                })
            }),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// An error at row `i`.
    pub fn err(&self, i: usize, message: String) -> TraceError {
        TraceError::parse(self.file, (self.at)(i), message)
    }

    /// Issue order with an `sm` column, else only each thread's order counts.
    pub fn order(&self) -> Order {
        if self.sm.is_some() {
            Order::Issued
        } else {
            Order::PerThread
        }
    }

    /// Without a `dyn` column, instances are each thread's occurrence count of its
    /// instruction.
    pub fn numbered(&self) -> bool {
        self.dyn_inst.is_none()
    }

    /// Distinct `inst` values in the chunk (codes run from 0 to this).
    pub fn inst_values(&self) -> usize {
        self.inst.as_ref().map_or(0, |c| c.values.len())
    }

    /// The instruction a row names (`access` where the table names none).
    pub fn inst_name(&self, code: Option<u32>) -> &str {
        match (&self.inst, code) {
            (Some(c), Some(code)) => match c.values[code as usize].as_str() {
                "" => "access",
                name => name,
            },
            _ => "access",
        }
    }

    /// The rows in runs of one `kernel` value (one run without a `kernel` column), as the
    /// value and the run's end.
    pub fn run_at(&self, start: usize) -> (&str, usize) {
        match &self.kernel {
            Some(k) => {
                let code = k.code[start];
                let len = k.code[start..].iter().take_while(|&&c| c == code).count();
                (k.values[code as usize].as_str(), start + len)
            }
            None => ("", self.len),
        }
    }

    /// Row `i`, with the checks that need no other row.
    pub fn row(&self, i: usize) -> Result<Row, TraceError> {
        let pick = |c: &Option<Vec<u32>>, one: u32| c.as_ref().map_or(one, |v| v[i]);
        let cta = Dim3::new(
            pick(&self.cta[0], 0),
            pick(&self.cta[1], 0),
            pick(&self.cta[2], 0),
        );
        let thread = match &self.warp_lane {
            Some((w, l)) => {
                if l[i] >= 32 {
                    return Err(self.err(i, format!("lane {} is not below 32", l[i])));
                }
                let x = w[i]
                    .checked_mul(32)
                    .and_then(|x| x.checked_add(l[i]))
                    .ok_or_else(|| self.err(i, "warp * 32 + lane overflows".into()))?;
                Dim3::new(x, 0, 0)
            }
            None => Dim3::new(
                pick(&self.tid[0], 0),
                pick(&self.tid[1], 0),
                pick(&self.tid[2], 0),
            ),
        };
        let block = self.block.iter().any(Option::is_some).then(|| {
            Dim3::new(
                pick(&self.block[0], 1),
                pick(&self.block[1], 1),
                pick(&self.block[2], 1),
            )
        });
        let kind = match &self.kind {
            Some((c, parsed)) => {
                let v = c.code[i] as usize;
                parsed[v].ok_or_else(|| self.err(i, format!("column `kind`: expected load, store, atomic, atom.OP or barrier, found `{}`", c.values[v])))?
            }
            None => AccessKind::Load,
        };
        let space = match &self.space {
            Some((c, parsed)) => {
                let v = c.code[i] as usize;
                parsed[v].ok_or_else(|| self.err(i, format!("column `space`: expected global, local, shared, const or tex, found `{}`", c.values[v])))?
            }
            None => MemSpace::Global,
        };
        let barrier = kind == AccessKind::Barrier;
        let size = match &self.size {
            _ if barrier => 0,
            Some(s) => u16::try_from(s[i]).ok().filter(|&z| z > 0).ok_or_else(|| {
                self.err(
                    i,
                    format!("column `size`: expected 1 to 65535 bytes, found {}", s[i]),
                )
            })?,
            None => 4,
        };
        Ok(Row {
            cta,
            thread,
            block,
            sm: self.sm.as_ref().map(|s| s[i]),
            kind,
            space,
            inst: self.inst.as_ref().map(|c| c.code[i]),
            pc: self.pc.as_ref().map(|p| p[i]),
            dyn_inst: self.dyn_inst.as_ref().map(|d| d[i]),
            size,
            addr: if barrier { 0 } else { self.addr[i] },
        })
    }
}
