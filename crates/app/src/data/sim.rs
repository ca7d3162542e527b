//! A simulation's result as the views draw it: the report, the requests, set grids, selections.

use super::*;

/// What a run counted, exactly, whether from every request or as they streamed by.
pub struct Counted<'a> {
    pub grid: SetGrid,
    pub slots: Slots,
    /// By [`Slots`].
    pub inst_split: Vec<ClassSplit>,
    /// By [`Slots`]; only the CTA table's rows read it, so it is lent, not copied.
    pub cta_classes: &'a CtaClasses,
    /// The kernels' headers.
    pub kernels: Vec<Kernel>,
    pub segments: Segments,
}

impl SimData {
    /// Keeps a run's report and every request, and derives the per-set grid and the
    /// read/write class splits from the requests.
    pub fn new(config: SimConfig, report: Report, points: Points, trace: &TraceData) -> Self {
        let p = &points;
        let sets = config.cache.sets().max(1) as usize;
        let n = p.len();
        let per_bin = (n as u64).div_ceil(SET_BINS as u64).max(1);
        let mut grid = SetGrid {
            bins: SET_BINS,
            sets,
            per_bin,
            accesses: vec![0; sets * SET_BINS],
            misses: vec![0; sets * SET_BINS],
            images: Default::default(),
        };
        let slots = Slots::of(&trace.trace.kernels);
        let mut inst_split = vec![ClassSplit::default(); slots.insts];
        let mut cta_classes = CtaClasses::default();
        cta_classes.resize(slots.ctas);
        for i in 0..n {
            let set = (p.set[i] as usize).min(sets - 1);
            let bin = ((i as u64 / per_bin) as usize).min(SET_BINS - 1);
            let o = p.outcome(i);
            grid.accesses[set * SET_BINS + bin] += 1;
            if o != Outcome::Hit {
                grid.misses[set * SET_BINS + bin] += 1;
            }
            let k = p.kernel[i] as usize;
            let write = p.is_write(i);
            if let Some(s) = slots.inst(k, p.inst[i]) {
                inst_split[s].add(write, o);
            }
            if let Some(s) = slots.cta(k, p.cta[i]) {
                cta_classes.add(s, write, o);
            }
        }
        let counted = Counted {
            grid,
            slots,
            inst_split,
            cta_classes: &cta_classes,
            kernels: trace.trace.kernels.iter().map(Kernel::shape_only).collect(),
            segments: trace.segments.clone(),
        };
        let x = XAxis::new(&points);
        Self::assemble(config, report, points, x, counted)
    }

    /// A streamed run: its report, the sample of its requests (thinned to `most` when given)
    /// and what was counted as it ran.
    ///
    /// A finished run whose requests have their issue cycles (the timing model's) is drawn
    /// at their cycles, as a run read whole is, every request or a regular sample of them
    /// (each kernel spanning the cycles of all its requests); the others in issue order.
    pub fn streamed(config: SimConfig, report: Report, g: &Gather, most: Option<usize>) -> Self {
        let (points, stride) = g.sample(most.unwrap_or(usize::MAX));
        let start = 0;
        let timed = most.is_none() && points.time.len() == points.len();
        let x = if timed && !points.is_empty() {
            XAxis::timed(&points, &g.spans, start, stride)
        } else {
            XAxis::Sampled { start, stride }
        };
        let counted = Counted {
            grid: g.grid.clone().into_grid(),
            slots: g.slots.clone(),
            inst_split: g.inst_split.clone(),
            cta_classes: &g.cta_classes,
            kernels: g.kernels.clone(),
            segments: g.segments(),
        };
        let mut d = Self::assemble(config, report, points, x, counted);
        d.inst_over_time.per_slice *= stride;
        d.sm_over_time.per_slice *= stride;
        d.preview = most.is_some();
        d.streamed = true;
        d
    }

    /// The requests of a window of a streamed run, every one or a regular sample of them,
    /// drawn over what the whole run `whole` counted (its report, set grid, tables, axis):
    /// what the detail of a zoomed address view shows.
    pub fn window_of(whole: &SimData, g: &Gather) -> Self {
        let (points, stride) = g.sample(usize::MAX);
        let start = g.window.as_ref().map_or(0, |w| w.start);
        // A detail of a run drawn at its cycles is drawn at the same ones.
        let x = match &whole.x {
            XAxis::Time { bases, .. } if points.time.len() == points.len() => {
                XAxis::at_bases(&points, bases.clone(), start, stride)
            }
            _ => XAxis::Sampled { start, stride },
        };
        let y = points
            .line
            .iter()
            .map(|&l| whole.segments.y(l.saturating_mul(whole.line_bytes)))
            .collect();
        SimData {
            config: whole.config.clone(),
            report: whole.report.clone(),
            ids: IdCounts::new(&points),
            points,
            y,
            x,
            line_bytes: whole.line_bytes,
            sets: whole.sets.clone(),
            per_inst: whole.per_inst.clone(),
            inst_over_time: whole.inst_over_time.clone(),
            sm_over_time: whole.sm_over_time.clone(),
            miss_tables: whole.miss_tables.clone(),
            kernels: whole.kernels.clone(),
            segments: whole.segments.clone(),
            preview: false,
            streamed: true,
            window: Some(start..g.window.as_ref().map_or(start, |w| w.end)),
            checkpoints: whole.checkpoints.clone(),
        }
    }

    fn assemble(config: SimConfig, report: Report, points: Points, x: XAxis, c: Counted) -> Self {
        let mut grid = c.grid;
        grid.paint();
        // The report's instruction and CTA rows, each given its slot's split.
        let kernels = &c.kernels;
        let per_inst = report
            .instructions
            .iter()
            .map(|r| {
                c.slots
                    .inst(r.kernel as usize, r.inst)
                    .map_or_else(ClassSplit::default, |s| c.inst_split[s])
            })
            .collect();
        let line_bytes = config.cache.line_bytes as u64;
        let y = points
            .line
            .iter()
            .map(|&l| c.segments.y(l.saturating_mul(line_bytes)))
            .collect();
        let name = |k: u16, i: u32| {
            let inst = kernels
                .get(k as usize)
                .and_then(|kk| kk.instructions.get(i as usize))
                .map_or_else(|| format!("instruction {i}"), |x| x.name.clone());
            inst_label(kernels.len() > 1, k as u32, &inst)
        };
        let inst_over_time =
            crate::over_time::OverTime::build(&points, OVER_TIME_SLICES, false, &name);
        let sm_over_time =
            crate::over_time::OverTime::build(&points, OVER_TIME_SLICES, true, &name);
        let ids = IdCounts::new(&points);
        let mut d = SimData {
            y,
            x,
            line_bytes,
            config,
            report,
            points,
            sets: grid,
            per_inst,
            inst_over_time,
            sm_over_time,
            miss_tables: Default::default(),
            ids,
            kernels: c.kernels,
            segments: c.segments,
            preview: false,
            streamed: false,
            window: None,
            checkpoints: Default::default(),
        };
        // A CTA row's classes: its slot's, looked up as the rows are made.
        let (slots, classes) = (&c.slots, c.cta_classes);
        let tables = MissTables::new(&d, &|r| {
            let id = d
                .kernels
                .get(r.kernel as usize)
                .map(|k| k.grid.linear(r.cta));
            id.and_then(|id| slots.cta(r.kernel as usize, id.min(u32::MAX as u64) as u32))
                .map_or([[0; 3]; 2], |s| classes.get(s))
        });
        d.miss_tables = std::sync::Arc::new(tables);
        d
    }

    /// Request `i`'s position on the x axis.
    #[inline]
    pub fn x(&self, i: usize) -> f64 {
        match &self.x {
            XAxis::Order => i as f64,
            XAxis::Sampled { start, stride } => (start + i as u64 * stride) as f64,
            XAxis::Time { x, .. } => x[i] as f64,
        }
    }
    /// Kept request `i`'s number in the run's issue order.
    pub fn request_number(&self, i: usize) -> u64 {
        match &self.x {
            XAxis::Sampled { start, stride } | XAxis::Time { start, stride, .. } => {
                start + i as u64 * stride
            }
            XAxis::Order => i as u64,
        }
    }
    /// The smallest x: 0, or the first request of a window's detail (its earliest cycle on
    /// the time axis).
    pub fn x_start(&self) -> f64 {
        match &self.x {
            XAxis::Sampled { start, .. } => *start as f64,
            XAxis::Time { x, by_x, .. } if self.window.is_some() => {
                by_x.first().map_or(0.0, |&i| x[i as usize] as f64)
            }
            _ => 0.0,
        }
    }
    /// One past the largest x.
    pub fn x_end(&self) -> f64 {
        match &self.x {
            XAxis::Order => self.points.len() as f64,
            XAxis::Sampled { start, stride } => (start + self.points.len() as u64 * stride) as f64,
            XAxis::Time { end, .. } => *end as f64,
        }
    }
    /// The requests, in issue order, that the detail of the view from `x0` to `x1` reads
    /// (of `total`): those whose number the view spans; on the time axis, those from the
    /// earliest to the latest drawn in the view, widened by the sample's stride on each side
    /// to hold the requests between those drawn (each SM issues in cycle order). `None` when
    /// the view draws none.
    pub fn requests_in_view(&self, x0: f64, x1: f64, total: u64) -> Option<(u64, u64)> {
        let XAxis::Time { stride, .. } = &self.x else {
            return Some((x0.max(0.0) as u64, (x1.max(0.0) as u64).min(total)));
        };
        let drawn = self.visible(x0, x1).map(|i| self.request_number(i));
        let (lo, hi) = drawn.fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r)));
        (lo <= hi).then(|| {
            let more = stride.saturating_sub(1);
            (
                lo.saturating_sub(more),
                hi.saturating_add(1 + more).min(total),
            )
        })
    }
    /// What the x axis counts.
    pub fn x_label(&self) -> &'static str {
        match &self.x {
            XAxis::Order => "request (issue order)",
            XAxis::Sampled { stride: 1, .. } => "request (issue order; every request drawn)",
            XAxis::Sampled { .. } => "request (issue order; a regular sample drawn)",
            XAxis::Time { stride: 1, .. } => "cycle (timing model; kernels one after another)",
            XAxis::Time { .. } => {
                "cycle (timing model; kernels one after another; a regular sample drawn)"
            }
        }
    }
    /// The requests with `x0 <= x <= x1`, by increasing x.
    pub fn visible(&self, x0: f64, x1: f64) -> Visible<'_> {
        let n = self.points.len();
        if x1.is_nan() || x0.is_nan() || x1 < x0 || x1 < 0.0 {
            return Visible::Range(0..0);
        }
        match &self.x {
            XAxis::Order => {
                let first = (x0.max(0.0).ceil() as usize).min(n);
                let last = ((x1.floor() as usize).saturating_add(1)).min(n).max(first);
                Visible::Range(first..last)
            }
            XAxis::Sampled { start, stride } => {
                let (s, at) = (*stride as f64, *start as f64);
                if x1 < at {
                    return Visible::Range(0..0);
                }
                let first = (((x0 - at).max(0.0) / s).ceil() as usize).min(n);
                let last = ((((x1 - at) / s).floor() as usize).saturating_add(1))
                    .min(n)
                    .max(first);
                Visible::Range(first..last)
            }
            XAxis::Time { x, by_x, .. } => {
                let lo = by_x.partition_point(|&i| (x[i as usize] as f64) < x0);
                let hi = by_x
                    .partition_point(|&i| (x[i as usize] as f64) <= x1)
                    .max(lo);
                Visible::Sorted(by_x[lo..hi].iter())
            }
        }
    }

    /// Summarizes the requests inside a box of the address view (`x` and `y` in plot units,
    /// bounds included), at once (the tests); the app makes it a part of the requests at a
    /// time ([`Selecting`]).
    #[cfg(test)]
    pub fn select(&self, x: [f64; 2], y: [f64; 2]) -> Selection {
        let mut s = Selecting::new(x, y);
        while s.add(self, usize::MAX) {}
        s.finish()
    }

    /// The miss rate in percent.
    pub fn miss_percent(&self) -> f64 {
        self.report.miss_rate * 100.0
    }
}

/// A box's summary (`SimData::select` in the tests) being made, a part of the requests in
/// view at a time (how a page's job takes them).
pub struct Selecting {
    s: Selection,
    lines: rustc_hash::FxHashSet<u64>,
    ctas: rustc_hash::FxHashSet<(u16, u32)>,
    warps: rustc_hash::FxHashSet<(u16, u32, u32)>,
    insts: rustc_hash::FxHashMap<(u16, u32), u64>,
    /// The requests in view taken so far.
    from: usize,
}

impl Selecting {
    pub fn new(x: [f64; 2], y: [f64; 2]) -> Self {
        Selecting {
            s: Selection {
                x,
                y,
                ..Selection::default()
            },
            lines: Default::default(),
            ctas: Default::default(),
            warps: Default::default(),
            insts: Default::default(),
            from: 0,
        }
    }

    /// Takes the next `n` requests in the box's x range of `data` (the same data each time);
    /// `false` when none were left.
    pub fn add(&mut self, data: &SimData, n: usize) -> bool {
        let (p, s) = (&data.points, &mut self.s);
        let part = data.visible(s.x[0], s.x[1]).part(self.from, n);
        let taken = part.len();
        self.from = self.from.saturating_add(taken);
        for i in part {
            let yi = data.y[i];
            if !(yi >= s.y[0] && yi <= s.y[1]) {
                continue;
            }
            s.requests += 1;
            s.outcomes[p.outcome(i) as usize] += 1;
            s.writes += p.is_write(i) as u64;
            let line = p.line[i].saturating_mul(data.line_bytes);
            s.lowest = s.lowest.min(line);
            s.highest = s.highest.max(line);
            self.lines.insert(p.line[i]);
            self.ctas.insert((p.kernel[i], p.cta[i]));
            self.warps.insert((p.kernel[i], p.cta[i], p.warp[i]));
            *self.insts.entry((p.kernel[i], p.inst[i])).or_default() += 1;
        }
        taken > 0
    }

    /// The summary of the requests taken.
    pub fn finish(self) -> Selection {
        let mut s = self.s;
        s.lines = self.lines.len() as u64;
        s.ctas = self.ctas.len() as u64;
        s.warps = self.warps.len() as u64;
        s.instructions = self
            .insts
            .into_iter()
            .map(|((k, i), n)| (k as u32, i, n))
            .collect();
        s.instructions
            .sort_unstable_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        s
    }
}
