//! A chunk's rows turned into accesses: kernels begun and ended as the `kernel` column changes,
//! CTAs and threads placed, instructions and instances numbered.

use super::columns::{codes, kind_of, numbers};
use super::*;

impl<'a> State<'a> {
    pub(super) fn new(file: &'a str) -> Self {
        Self {
            file,
            current: None,
            done_keys: Default::default(),
            kernels: Vec::new(),
        }
    }

    /// Adds a chunk of rows; about `rows_after` more rows follow in the input.
    pub(super) fn ingest(
        &mut self,
        df: &polars::prelude::DataFrame,
        rows_after: usize,
        at: impl Fn(usize) -> Location,
    ) -> Result<(), TraceError> {
        let file = self.file;
        let n = df.height();
        let at: &dyn Fn(usize) -> Location = &at;
        let err = |i: usize, m: String| TraceError::parse(file, at(i), m);
        let num = |name: &str| numbers::<u64>(df, name, at, file);
        let addr =
            num("address")?.ok_or_else(|| err(0, "the table has no `address` column".into()))?;
        let u32col = |name: &str| numbers::<u32>(df, name, at, file);
        let cta: Vec<Option<Vec<u32>>> = vec![u32col("cta_x")?, u32col("cta_y")?, u32col("cta_z")?];
        let tid: Vec<Option<Vec<u32>>> = vec![
            u32col("thread_x")?,
            u32col("thread_y")?,
            u32col("thread_z")?,
        ];
        let (warp, lane) = (u32col("warp")?, u32col("lane")?);
        if warp.is_some() != lane.is_some() {
            return Err(err(0, "columns `warp` and `lane` go together".into()));
        }
        if warp.is_some() && tid.iter().any(Option::is_some) {
            return Err(err(
                0,
                "give either `thread_x/y/z` or `warp` and `lane`, not both".into(),
            ));
        }
        let block: Vec<Option<Vec<u32>>> =
            vec![u32col("block_x")?, u32col("block_y")?, u32col("block_z")?];
        let sm = u32col("sm")?;
        let size = num("size")?;
        let dyn_col = u32col("dyn")?;
        let pc = num("pc")?;
        let kernel = codes(df, "kernel");
        let inst = codes(df, "inst");
        // Kinds and spaces parsed once per distinct value (`None`: not a kind or space).
        let kind = codes(df, "kind").map(|c| c.parsed(kind_of));
        let space = codes(df, "space").map(|c| {
            c.parsed(|v| {
                if v.is_empty() {
                    Some(MemSpace::Global)
                } else {
                    MemSpace::from_name(v)
                }
            })
        });
        // Instruction id of each distinct `inst` value in the current kernel (u32::MAX: not
        // looked up yet); cleared when a kernel starts.
        let mut inst_ids: Vec<u32> = vec![u32::MAX; inst.as_ref().map_or(0, |c| c.values.len())];
        let pick = |c: &Option<Vec<u32>>, i: usize| c.as_ref().map_or(0, |v| v[i]);
        let has_block = block.iter().any(Option::is_some);
        let order = if sm.is_some() {
            Order::Issued
        } else {
            Order::PerThread
        };
        // The rows in runs of one kernel value (one run without a kernel column).
        let mut start = 0;
        while start < n {
            let (key, end) = match &kernel {
                Some(k) => {
                    let code = k.code[start];
                    let len = k.code[start..].iter().take_while(|&&c| c == code).count();
                    (k.values[code as usize].as_str(), start + len)
                }
                None => ("", n),
            };
            if self.current.as_ref().is_none_or(|p| p.key != key) {
                if self.done_keys.contains(key) {
                    return Err(err(start, format!("kernel `{key}` appears again after other kernels: a kernel's rows must be contiguous")));
                }
                self.close()?;
                // Provisional shape: one CTA row per dense CTA id, threads dense within.
                let mut b = KernelBuilder::new(
                    if key.is_empty() { "kernel" } else { key },
                    Dim3::x(1 << 16),
                    Dim3::x((1 << 16) - 1),
                    order,
                )
                .map_err(|e| err(start, e.to_string()))?;
                if dyn_col.is_none() {
                    b.number_instances();
                }
                self.current = Some(Pending {
                    key: key.to_string(),
                    b,
                    block: None,
                    ctas: Default::default(),
                    cta_list: Vec::new(),
                    cta_sm: Vec::new(),
                    cta_rows: Vec::new(),
                    thread_list: Vec::new(),
                    max_tid: Dim3::new(0, 0, 0),
                    last_cta: None,
                });
                inst_ids.fill(u32::MAX);
            }
            let Some(p) = self.current.as_mut() else {
                break;
            };
            // Room for this run, and for the rest of the input if it might belong to this
            // kernel too (any excess is given back when the kernel is finished).
            if p.b.spare_capacity() < end - start {
                let guess = (n - start + rows_after).max(p.b.len()).min(1 << 28);
                p.b.reserve(guess.max(end - start));
            }
            // Kept in locals while the run lasts (written back after it).
            let mut max_tid = p.max_tid;
            let mut last_cta = p.last_cta;
            for i in start..end {
                let c = Dim3::new(pick(&cta[0], i), pick(&cta[1], i), pick(&cta[2], i));
                let t = match (&warp, &lane) {
                    (Some(w), Some(l)) => {
                        if l[i] >= 32 {
                            return Err(err(i, format!("lane {} is not below 32", l[i])));
                        }
                        let x = w[i]
                            .checked_mul(32)
                            .and_then(|x| x.checked_add(l[i]))
                            .ok_or_else(|| err(i, "warp * 32 + lane overflows".into()))?;
                        Dim3::new(x, 0, 0)
                    }
                    _ => Dim3::new(pick(&tid[0], i), pick(&tid[1], i), pick(&tid[2], i)),
                };
                if has_block {
                    let bl = Dim3::new(
                        block[0].as_ref().map_or(1, |v| v[i]),
                        block[1].as_ref().map_or(1, |v| v[i]),
                        block[2].as_ref().map_or(1, |v| v[i]),
                    );
                    match p.block {
                        None => p.block = Some(bl),
                        Some(prev) if prev != bl => {
                            return Err(err(
                                i,
                                format!(
                                    "block size {bl} differs from {prev} earlier in the kernel"
                                ),
                            ))
                        }
                        _ => {}
                    }
                    if !bl.contains(t) {
                        return Err(err(i, format!("thread {t} is outside the block {bl}")));
                    }
                }
                max_tid = Dim3::new(max_tid.x.max(t.x), max_tid.y.max(t.y), max_tid.z.max(t.z));
                let ci = match last_cta {
                    Some((lc, ci)) if lc == c => ci,
                    _ => {
                        let ci = match p.ctas.get(&c) {
                            Some(&ci) => ci,
                            None => {
                                let ci = p.cta_list.len() as u32;
                                if ci >= 1 << 16 {
                                    return Err(err(
                                        i,
                                        "more than 65536 CTAs in one kernel".into(),
                                    ));
                                }
                                p.ctas.insert(c, ci);
                                p.cta_list.push(c);
                                // CTAs tend to be alike: sized like the previous one, the maps
                                // need not grow row by row.
                                let rows = p
                                    .cta_rows
                                    .last()
                                    .map_or_else(CtaRows::default, CtaRows::alike);
                                p.cta_rows.push(rows);
                                p.cta_sm.push(sm.as_ref().map_or(0, |s| s[i]));
                                ci
                            }
                        };
                        last_cta = Some((c, ci));
                        ci
                    }
                };
                if let Some(s) = &sm {
                    if p.cta_sm[ci as usize] != s[i] {
                        return Err(err(
                            i,
                            format!(
                                "CTA {c} ran on SM {} and on SM {}",
                                p.cta_sm[ci as usize], s[i]
                            ),
                        ));
                    }
                }
                let next = p.thread_list.len() as u32;
                let thread = p.cta_rows[ci as usize].thread(t, next);
                if thread == next {
                    if next as u64 >= p.b.threads() {
                        return Err(err(i, "too many threads in one kernel".into()));
                    }
                    p.thread_list.push((ci, t));
                }
                let k = match &kind {
                    Some((c, parsed)) => {
                        let v = c.code[i] as usize;
                        parsed[v].ok_or_else(|| err(i, format!("column `kind`: expected load, store, atomic, atom.OP or barrier, found `{}`", c.values[v])))?
                    }
                    None => AccessKind::Load,
                };
                let sp = match &space {
                    Some((c, parsed)) => {
                        let v = c.code[i] as usize;
                        parsed[v].ok_or_else(|| err(i, format!("column `space`: expected global, local, shared, const or tex, found `{}`", c.values[v])))?
                    }
                    None => MemSpace::Global,
                };
                let (inst_id, dyn_inst, sz) =
                    if k == AccessKind::Barrier {
                        (0, 0, 0)
                    } else {
                        let id = match &inst {
                            Some(c) => {
                                let v = c.code[i] as usize;
                                if inst_ids[v] == u32::MAX {
                                    let name = c.values[v].as_str();
                                    let name = if name.is_empty() { "access" } else { name };
                                    inst_ids[v] = p.b.instruction(name, pc.as_ref().map(|x| x[i]));
                                }
                                inst_ids[v]
                            }
                            None => p.b.instruction("access", pc.as_ref().map(|x| x[i])),
                        };
                        // Without a `dyn` column the builder numbers instances when finished.
                        let d = dyn_col.as_ref().map_or(0, |d| d[i]);
                        let sz =
                            match &size {
                                Some(s) => u16::try_from(s[i]).ok().filter(|&z| z > 0).ok_or_else(
                                    || {
                                        err(
                                i,
                                format!("column `size`: expected 1 to 65535 bytes, found {}", s[i]),
                            )
                                    },
                                )?,
                                None => 4,
                            };
                        (id, d, sz)
                    };
                p.b.push(Access {
                    thread,
                    inst: inst_id,
                    dyn_inst,
                    addr: if k == AccessKind::Barrier { 0 } else { addr[i] },
                    size: sz,
                    kind: k,
                    space: sp,
                })
                .map_err(|e| err(i, e.to_string()))?;
            }
            p.max_tid = max_tid;
            p.last_cta = last_cta;
            start = end;
        }
        Ok(())
    }

    /// Fixes the shape of the current kernel and keeps it.
    pub(super) fn close(&mut self) -> Result<(), TraceError> {
        let Some(mut p) = self.current.take() else {
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
        crate::trace::check_density(grid, block, p.b.len(), p.b.order())
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
        p.cta_sm.clear();
        self.kernels.push(
            b.finish_checked()
                .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?,
        );
        self.done_keys.insert(p.key);
        Ok(())
    }

    pub(super) fn finish(mut self, out: &mut dyn KernelSink) -> Result<(), TraceError> {
        self.close()?;
        if self.kernels.is_empty() {
            return Err(TraceError::parse(
                self.file,
                Location::Line(1),
                "the table has no rows",
            ));
        }
        for k in self.kernels.drain(..) {
            out.kernel(k)?;
        }
        Ok(())
    }
}
