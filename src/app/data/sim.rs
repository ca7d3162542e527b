//! A simulation's result as the views draw it: the report, the requests, set grids, selections.

use super::*;

impl SimData {
    /// Keeps a run's report and requests, and derives the per-set grid and the read/write
    /// class splits from the requests.
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
        // Rows of the report's instruction and CTA tables, found through dense tables indexed
        // by each kernel's first slot plus the instruction or serialized CTA id.
        let kernels = &trace.trace.kernels;
        let mut inst_base = Vec::with_capacity(kernels.len() + 1);
        let mut cta_base = Vec::with_capacity(kernels.len() + 1);
        let (mut ib, mut cb) = (0usize, 0usize);
        for k in kernels {
            inst_base.push(ib);
            cta_base.push(cb);
            ib += k.instructions.len();
            cb += k.num_ctas() as usize;
        }
        let mut inst_row = vec![usize::MAX; ib];
        for (row, r) in report.instructions.iter().enumerate() {
            if let Some(slot) = inst_base
                .get(r.kernel as usize)
                .map(|b| b + r.inst as usize)
            {
                if let Some(v) = inst_row.get_mut(slot) {
                    *v = row;
                }
            }
        }
        let mut cta_row = vec![usize::MAX; cb];
        for (row, r) in report.ctas.iter().enumerate() {
            if let Some(k) = kernels.get(r.kernel as usize) {
                let id = (r.cta.z as usize * k.grid.y as usize + r.cta.y as usize)
                    * k.grid.x as usize
                    + r.cta.x as usize;
                if let Some(v) = cta_row.get_mut(cta_base[r.kernel as usize] + id) {
                    *v = row;
                }
            }
        }
        let mut per_inst = vec![ClassSplit::default(); report.instructions.len()];
        let mut per_cta = vec![ClassSplit::default(); report.ctas.len()];
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
            if let Some(&b) = inst_base.get(k) {
                if let Some(s) = inst_row
                    .get(b + p.inst[i] as usize)
                    .and_then(|&r| per_inst.get_mut(r))
                {
                    s.add(write, o);
                }
            }
            if let Some(&b) = cta_base.get(k) {
                if let Some(s) = cta_row
                    .get(b + p.cta[i] as usize)
                    .and_then(|&r| per_cta.get_mut(r))
                {
                    s.add(write, o);
                }
            }
        }
        grid.paint();
        let line_bytes = config.cache.line_bytes as u64;
        let y = points
            .line
            .iter()
            .map(|&l| trace.segments.y(l.saturating_mul(line_bytes)))
            .collect();
        let x = XAxis::new(&points);
        let name = |k: u16, i: u32| {
            let inst = kernels
                .get(k as usize)
                .and_then(|kk| kk.instructions.get(i as usize))
                .map_or_else(|| format!("instruction {i}"), |x| x.name.clone());
            inst_label(kernels.len() > 1, k as u32, &inst)
        };
        let inst_over_time =
            crate::app::over_time::OverTime::build(&points, OVER_TIME_SLICES, false, &name);
        let sm_over_time =
            crate::app::over_time::OverTime::build(&points, OVER_TIME_SLICES, true, &name);
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
            per_cta,
            inst_over_time,
            sm_over_time,
            miss_tables: MissTables::default(),
            ids,
        };
        d.miss_tables = MissTables::new(&d, trace);
        d
    }

    /// Request `i`'s position on the x axis.
    #[inline]
    pub fn x(&self, i: usize) -> f64 {
        match &self.x {
            XAxis::Order => i as f64,
            XAxis::Time { x, .. } => x[i] as f64,
        }
    }
    /// One past the largest x.
    pub fn x_end(&self) -> f64 {
        match &self.x {
            XAxis::Order => self.points.len() as f64,
            XAxis::Time { end, .. } => *end as f64,
        }
    }
    /// What the x axis counts.
    pub fn x_label(&self) -> &'static str {
        match &self.x {
            XAxis::Order => "request (issue order)",
            XAxis::Time { .. } => "cycle (timing model; kernels one after another)",
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
    /// bounds included).
    pub fn select(&self, x: [f64; 2], y: [f64; 2]) -> Selection {
        let p = &self.points;
        let mut s = Selection {
            x,
            y,
            ..Selection::default()
        };
        let mut lines = rustc_hash::FxHashSet::default();
        let mut ctas = rustc_hash::FxHashSet::default();
        let mut warps = rustc_hash::FxHashSet::default();
        let mut insts: rustc_hash::FxHashMap<(u16, u32), u64> = Default::default();
        for i in self.visible(x[0], x[1]) {
            let yi = self.y[i];
            if !(yi >= y[0] && yi <= y[1]) {
                continue;
            }
            s.requests += 1;
            s.outcomes[p.outcome(i) as usize] += 1;
            s.writes += p.is_write(i) as u64;
            let line = p.line[i].saturating_mul(self.line_bytes);
            s.lowest = s.lowest.min(line);
            s.highest = s.highest.max(line);
            lines.insert(p.line[i]);
            ctas.insert((p.kernel[i], p.cta[i]));
            warps.insert((p.kernel[i], p.cta[i], p.warp[i]));
            *insts.entry((p.kernel[i], p.inst[i])).or_default() += 1;
        }
        s.lines = lines.len() as u64;
        s.ctas = ctas.len() as u64;
        s.warps = warps.len() as u64;
        s.instructions = insts
            .into_iter()
            .map(|((k, i), n)| (k as u32, i, n))
            .collect();
        s.instructions
            .sort_unstable_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        s
    }

    /// The miss rate in percent.
    pub fn miss_percent(&self) -> f64 {
        self.report.miss_rate * 100.0
    }
}
