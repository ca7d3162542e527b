//! A chunk's rows turned into kernels: kernels begun and ended as the `kernel` column changes,
//! CTAs and threads placed, instructions and instances numbered. The whole read keeps the rows;
//! the streamed read's first pass ([`State::scan`]) checks and counts them and keeps only each
//! kernel's [`Plan`].

use super::decode::{Chunk, Row};
use super::*;
use crate::trace::BuildError;

/// What the first pass of a streamed read learned of one kernel: all that its rows need to
/// be placed as they come again.
pub(super) struct Plan {
    /// The `kernel` value of its rows.
    pub key: String,
    /// Name, shape, order, instructions and CTA-to-SM table; no rows.
    pub header: super::super::Kernel,
    /// Instruction id by name.
    pub insts: FxHashMap<String, u32>,
    pub rows: u64,
    /// Instances are counted, not read from a `dyn` column.
    pub numbered: bool,
    /// The rows come in order of CTA and thread, so they need no sort.
    pub grouped: bool,
}

impl<'a> State<'a> {
    /// A whole read: each kernel kept, handed on at the end.
    pub(super) fn new(file: &'a str) -> Self {
        Self {
            file,
            keep: true,
            current: None,
            done_keys: Default::default(),
            kernels: Vec::new(),
            plans: Vec::new(),
        }
    }

    /// A first pass: rows checked and counted, not kept; each kernel's [`Plan`] at the end.
    pub(super) fn scan(file: &'a str) -> Self {
        Self {
            keep: false,
            ..Self::new(file)
        }
    }

    /// Adds a chunk of rows; about `rows_after` more rows follow in the input.
    pub(super) fn ingest(
        &mut self,
        df: &polars::prelude::DataFrame,
        rows_after: usize,
        at: &dyn Fn(usize) -> Location,
    ) -> Result<(), TraceError> {
        let chunk = Chunk::new(df, self.file, at)?;
        let n = chunk.len();
        // Instruction id of each distinct `inst` value in the current kernel (u32::MAX: not
        // looked up yet); cleared when a kernel starts.
        let mut inst_ids: Vec<u32> = vec![u32::MAX; chunk.inst_values()];
        let mut start = 0;
        while start < n {
            let (key, end) = chunk.run_at(start);
            if self.current.as_ref().is_none_or(|p| p.key != key) {
                if self.done_keys.contains(key) {
                    return Err(chunk.err(start, format!("kernel `{key}` appears again after other kernels: a kernel's rows must be contiguous")));
                }
                self.close()?;
                // Provisional shape: one CTA row per dense CTA id, threads dense within.
                let mut b = KernelBuilder::new(
                    if key.is_empty() { "kernel" } else { key },
                    Dim3::x(1 << 16),
                    Dim3::x((1 << 16) - 1),
                    chunk.order(),
                )
                .map_err(|e| chunk.err(start, e.to_string()))?;
                if chunk.numbered() {
                    b.number_instances();
                }
                self.current = Some(Pending {
                    key: key.to_string(),
                    b,
                    rows: 0,
                    block: None,
                    ctas: Default::default(),
                    cta_list: Vec::new(),
                    cta_sm: Vec::new(),
                    cta_rows: Vec::new(),
                    thread_list: Vec::new(),
                    max_tid: Dim3::new(0, 0, 0),
                    last_cta: None,
                    last_row: None,
                    grouped: true,
                });
                inst_ids.fill(u32::MAX);
            }
            let Some(p) = self.current.as_mut() else {
                break;
            };
            // Room for this run, and for the rest of the input if it might belong to this
            // kernel too (any excess is given back when the kernel is finished).
            if self.keep && p.b.spare_capacity() < end - start {
                let guess = (n - start + rows_after).max(p.b.len()).min(1 << 28);
                p.b.reserve(guess.max(end - start));
            }
            for i in start..end {
                let r = chunk.row(i)?;
                let thread = p.place(&r).map_err(|m| chunk.err(i, m))?;
                let inst = if r.is_barrier() {
                    0
                } else {
                    match r.inst {
                        Some(code) => {
                            let v = code as usize;
                            if inst_ids[v] == u32::MAX {
                                inst_ids[v] = p.b.instruction(chunk.inst_name(r.inst), r.pc);
                            }
                            inst_ids[v]
                        }
                        None => p.b.instruction("access", r.pc),
                    }
                };
                if !self.keep {
                    // As the whole read's builder refuses its 2^32-th row.
                    if p.rows >= u32::MAX as u64 {
                        return Err(chunk.err(i, BuildError::TooManyRows.to_string()));
                    }
                    p.rows += 1;
                    continue;
                }
                p.b.push(Access {
                    thread,
                    inst,
                    // Without a `dyn` column the builder numbers instances when finished.
                    dyn_inst: if r.is_barrier() {
                        0
                    } else {
                        r.dyn_inst.unwrap_or(0)
                    },
                    addr: r.addr,
                    size: r.size,
                    kind: r.kind,
                    space: r.space,
                })
                .map_err(|e| chunk.err(i, e.to_string()))?;
            }
            start = end;
        }
        Ok(())
    }

    /// Fixes the shape of the current kernel and keeps it (or its plan).
    pub(super) fn close(&mut self) -> Result<(), TraceError> {
        let Some(p) = self.current.take() else {
            return Ok(());
        };
        let file = self.file;
        let e = |m: String| TraceError::parse(file, Location::Line(0), m);
        let block = p
            .block
            .or_else(|| Dim3::holding(p.max_tid))
            .ok_or_else(|| {
                e(format!(
                    "kernel `{}`: thread index {} is too large",
                    p.key, p.max_tid
                ))
            })?;
        let mut max = Dim3::new(0, 0, 0);
        for c in &p.cta_list {
            max = Dim3::new(max.x.max(c.x), max.y.max(c.y), max.z.max(c.z));
        }
        let grid = Dim3::holding(max)
            .ok_or_else(|| e(format!("kernel `{}`: CTA index {max} is too large", p.key)))?;
        if grid.count().saturating_mul(block.count()) > u32::MAX as u64 {
            return Err(e(format!(
                "kernel `{}`: grid {grid} x block {block} holds more than 2^32 threads",
                p.key
            )));
        }
        let rows = if self.keep {
            p.b.len()
        } else {
            p.rows as usize
        };
        crate::trace::check_density(grid, block, rows, p.b.order())
            .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?;
        let map: Vec<u32> = p
            .thread_list
            .iter()
            .map(|&(ci, t)| {
                (grid.linear(p.cta_list[ci as usize]) * block.count() + block.linear(t)) as u32
            })
            .collect();
        let mut b = p.b;
        b.reshape(grid, block, &map)
            .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?;
        if b.order() == Order::Issued {
            let mut cta_sm = vec![0u32; grid.count() as usize];
            for (ci, c) in p.cta_list.iter().enumerate() {
                cta_sm[grid.linear(*c) as usize] = p.cta_sm[ci];
            }
            b.info_mut().cta_sm = cta_sm;
        }
        if self.keep {
            self.kernels.push(
                b.finish_checked()
                    .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?,
            );
        } else {
            let header = b.header();
            let insts = header
                .instructions
                .iter()
                .enumerate()
                .map(|(id, inst)| (inst.name.clone(), id as u32))
                .collect();
            self.plans.push(Plan {
                key: p.key.clone(),
                header,
                insts,
                rows: p.rows,
                numbered: b.numbers_instances(),
                grouped: p.grouped,
            });
        }
        self.done_keys.insert(p.key);
        Ok(())
    }

    /// Hands on the kernels of a whole read.
    pub(super) fn finish(self, out: &mut dyn KernelSink) -> Result<(), TraceError> {
        for k in self.end()?.0 {
            out.kernel(k)?;
        }
        Ok(())
    }

    /// The plans of a first pass's kernels ended so far, not taken before.
    pub(super) fn take_plans(&mut self) -> Vec<Plan> {
        std::mem::take(&mut self.plans)
    }

    /// The plans of a first pass not taken before, once the last kernel is ended.
    pub(super) fn plans(self) -> Result<Vec<Plan>, TraceError> {
        Ok(self.end()?.1)
    }

    fn end(mut self) -> Result<(Vec<super::super::Kernel>, Vec<Plan>), TraceError> {
        self.close()?;
        // Every kernel ended leaves its key (its plan may have been taken).
        if self.done_keys.is_empty() {
            return Err(TraceError::parse(
                self.file,
                Location::Line(1),
                "the table has no rows",
            ));
        }
        Ok((self.kernels, self.plans))
    }
}

impl Pending {
    /// Places a row's thread (its provisional id), checking its CTA size and SM against the
    /// kernel's other rows.
    #[inline]
    fn place(&mut self, r: &Row) -> Result<u32, String> {
        let (c, t) = (r.cta, r.thread);
        if let Some(bl) = r.block {
            match self.block {
                None => self.block = Some(bl),
                Some(prev) if prev != bl => {
                    return Err(format!(
                        "block size {bl} differs from {prev} earlier in the kernel"
                    ))
                }
                _ => {}
            }
            if !bl.contains(t) {
                return Err(format!("thread {t} is outside the block {bl}"));
            }
        }
        let m = self.max_tid;
        self.max_tid = Dim3::new(m.x.max(t.x), m.y.max(t.y), m.z.max(t.z));
        if self.grouped {
            if let Some((lc, lt)) = self.last_row {
                let key = |c: Dim3, t: Dim3| (c.z, c.y, c.x, t.z, t.y, t.x);
                self.grouped = key(lc, lt) <= key(c, t);
            }
            self.last_row = Some((c, t));
        }
        let ci = match self.last_cta {
            Some((lc, ci)) if lc == c => ci,
            _ => {
                let ci = match self.ctas.get(&c) {
                    Some(&ci) => ci,
                    None => {
                        let ci = self.cta_list.len() as u32;
                        if ci >= 1 << 16 {
                            return Err("more than 65536 CTAs in one kernel".into());
                        }
                        self.ctas.insert(c, ci);
                        self.cta_list.push(c);
                        // CTAs tend to be alike: sized like the previous one, the maps need
                        // not grow row by row.
                        let rows = self
                            .cta_rows
                            .last()
                            .map_or_else(CtaRows::default, CtaRows::alike);
                        self.cta_rows.push(rows);
                        self.cta_sm.push(r.sm.unwrap_or(0));
                        ci
                    }
                };
                self.last_cta = Some((c, ci));
                ci
            }
        };
        if let Some(s) = r.sm {
            let was = self.cta_sm[ci as usize];
            if was != s {
                return Err(format!("CTA {c} ran on SM {was} and on SM {s}"));
            }
        }
        let next = self.thread_list.len() as u32;
        let thread = self.cta_rows[ci as usize].thread(t, next);
        if thread == next {
            if next as u64 >= self.b.threads() {
                return Err("too many threads in one kernel".into());
            }
            self.thread_list.push((ci, t));
        }
        Ok(thread)
    }
}
