//! A streamed run's requests, summarized as they come, for a trace too large to hold: the app
//! keeps what the views draw, in memory bounded by the trace's shape (instructions, CTAs,
//! sets, pages touched), never by its length.
//!
//! - A systematic sample of the requests, in issue order: every `stride`-th request, the
//!   stride doubling (and every other kept request dropped) whenever [`SAMPLE_POINTS`] are
//!   kept. The address view draws it, each request at its place in the whole order.
//! - Exact counts: the set heatmap (its time slices doubling in width as the run grows), the
//!   read/write split of every instruction, every CTA's misses by class, and the 4 KiB pages
//!   touched (the address axis's segments, as [`Segments::from_addresses`] makes them from
//!   every address).

use std::sync::{Arc, Mutex};
use std::time::Duration;
use web_time::Instant;

use rustc_hash::FxHashSet;

use super::{ClassSplit, CtaClasses, Outcome, Points, Segments, SimData, SET_BINS};
use crate::job::{Progress, Wake};
use warpscope_core::cache::Counters;
use warpscope_core::config::SimConfig;
use warpscope_core::report::Report;
use warpscope_core::sim::{Observer, RequestEvent};
use warpscope_core::trace::Kernel;

/// Requests kept for the address view of a streamed run (about 45 bytes each).
pub const SAMPLE_POINTS: usize = 1 << 21;
/// Requests drawn in a preview of a streamed run still going.
const PREVIEW_POINTS: usize = 1 << 18;
/// When the first preview is shown, and how often the next ones are.
const FIRST_PREVIEW: Duration = Duration::from_millis(100);
const PREVIEW_EVERY: Duration = Duration::from_secs(1);

/// Where a streamed run leaves its newest preview for the UI thread to take.
pub type PreviewSlot = Arc<Mutex<Option<Arc<SimData>>>>;

/// How a streamed run shows itself while it goes.
pub struct Preview {
    pub slot: PreviewSlot,
    /// Asks the UI for a frame (it then takes the preview).
    pub wake: Wake,
    next: Instant,
}

impl Preview {
    pub fn new(slot: PreviewSlot, wake: Wake) -> Self {
        Preview {
            slot,
            wake,
            next: Instant::now() + FIRST_PREVIEW,
        }
    }
}

/// The dense slot of each (kernel, instruction) and (kernel, CTA): every kernel's first slot
/// plus the instruction id or the kernel-linear CTA id.
#[derive(Clone, Debug, Default)]
pub struct Slots {
    pub inst_base: Vec<usize>,
    pub cta_base: Vec<usize>,
    pub insts: usize,
    pub ctas: usize,
}

impl Slots {
    /// Adds the next kernel's slots.
    pub fn add(&mut self, k: &Kernel) {
        self.inst_base.push(self.insts);
        self.cta_base.push(self.ctas);
        self.insts += k.instructions.len();
        self.ctas += k.num_ctas() as usize;
    }
    /// Adds `n` instruction slots to the last kernel added (a streamed kernel's instructions
    /// found after it began: its slots are the last).
    pub fn more_instructions(&mut self, n: usize) {
        if !self.inst_base.is_empty() {
            self.insts += n;
        }
    }
    pub fn of(kernels: &[Kernel]) -> Slots {
        let mut s = Slots::default();
        for k in kernels {
            s.add(k);
        }
        s
    }
    #[inline]
    pub fn inst(&self, kernel: usize, inst: u32) -> Option<usize> {
        let s = self.inst_base.get(kernel)? + inst as usize;
        (s < self.insts).then_some(s)
    }
    #[inline]
    pub fn cta(&self, kernel: usize, cta: u32) -> Option<usize> {
        let s = self.cta_base.get(kernel)? + cta as usize;
        (s < self.ctas).then_some(s)
    }
}

/// Accesses and misses per set in time slices of `per_bin` requests; when the requests
/// outgrow [`SET_BINS`] slices, neighbouring slices merge and `per_bin` doubles.
#[derive(Clone, Debug)]
pub struct GrowingGrid {
    pub sets: usize,
    pub per_bin: u64,
    /// `[set * SET_BINS + bin]`.
    pub accesses: Vec<u32>,
    pub misses: Vec<u32>,
    /// Requests counted.
    pub requests: u64,
}

impl GrowingGrid {
    pub fn new(sets: usize) -> Self {
        let sets = sets.max(1);
        GrowingGrid {
            sets,
            per_bin: 1,
            accesses: vec![0; sets * SET_BINS],
            misses: vec![0; sets * SET_BINS],
            requests: 0,
        }
    }
    #[inline]
    pub fn add(&mut self, set: u32, miss: bool) {
        let mut bin = (self.requests / self.per_bin) as usize;
        if bin >= SET_BINS {
            self.widen();
            bin = (self.requests / self.per_bin) as usize;
        }
        let cell = (set as usize).min(self.sets - 1) * SET_BINS + bin;
        self.accesses[cell] = self.accesses[cell].saturating_add(1);
        self.misses[cell] = self.misses[cell].saturating_add(miss as u32);
        self.requests += 1;
    }
    #[cold]
    fn widen(&mut self) {
        for v in [&mut self.accesses, &mut self.misses] {
            for row in v.chunks_mut(SET_BINS) {
                for b in 0..SET_BINS / 2 {
                    row[b] = row[2 * b].saturating_add(row[2 * b + 1]);
                }
                row[SET_BINS / 2..].fill(0);
            }
        }
        self.per_bin *= 2;
    }
    /// The slices that hold requests, as the set view's grid (not yet painted).
    pub fn into_grid(self) -> super::SetGrid {
        let bins = (self.requests.div_ceil(self.per_bin) as usize).clamp(1, SET_BINS);
        let cut = |v: Vec<u32>| -> Vec<u32> {
            v.chunks(SET_BINS)
                .flat_map(|row| row[..bins].iter().copied())
                .collect()
        };
        super::SetGrid {
            bins,
            sets: self.sets,
            per_bin: self.per_bin,
            accesses: cut(self.accesses),
            misses: cut(self.misses),
            images: Default::default(),
        }
    }
}

/// The observer of a streamed run in the app.
pub struct Gather<'a> {
    /// Every `stride`-th request, in issue order (`stride` is a power of two).
    pub points: Points,
    pub stride: u64,
    /// The most requests kept ([`SAMPLE_POINTS`]; tests lower it).
    pub cap: usize,
    /// Keep only the requests numbered in this range (the detail of a window: the whole
    /// run's counts are known already), and stop once past it.
    pub window: Option<std::ops::Range<u64>>,
    /// The run went past its window: it stopped there on purpose.
    pub past_window: bool,
    /// Requests seen.
    pub requests: u64,
    /// The kernels' headers, in launch order, without their per-CTA and per-warp facts
    /// ([`Kernel::shape_only`]): each preview copies them.
    pub kernels: Vec<Kernel>,
    /// Timing model: per kernel, one past the latest issue cycle of any of its requests
    /// (where each kernel sits on the time axis, however thin the sample).
    pub spans: Vec<u64>,
    pub slots: Slots,
    /// By [`Slots`]: each instruction's requests by read/write and outcome, and each CTA's
    /// misses by read/write and class.
    pub inst_split: Vec<ClassSplit>,
    /// By [`Slots`]: each instruction's lines, as (first byte, one past the last), for the
    /// arrays' labels on the address axis.
    inst_spans: Vec<(u64, u64)>,
    pub cta_classes: CtaClasses,
    pub grid: GrowingGrid,
    pages: FxHashSet<u64>,
    last_page: u64,
    line_bytes: u64,
    /// The requests' totals so far, for previews (the final report is the session's).
    totals: Counters,
    /// Copies of the session to zoom from (whole runs of a reference stream only).
    pub checkpoints: super::checkpoints::Checkpoints,
    config: SimConfig,
    preview: Option<Preview>,
    progress: &'a Progress,
}

impl<'a> Gather<'a> {
    pub fn new(config: &SimConfig, progress: &'a Progress) -> Self {
        Gather {
            points: Points::default(),
            stride: 1,
            cap: SAMPLE_POINTS,
            window: None,
            past_window: false,
            requests: 0,
            kernels: Vec::new(),
            spans: Vec::new(),
            slots: Slots::default(),
            inst_split: Vec::new(),
            inst_spans: Vec::new(),
            cta_classes: CtaClasses::default(),
            grid: GrowingGrid::new(config.cache.sets() as usize),
            pages: FxHashSet::default(),
            last_page: u64::MAX,
            line_bytes: (config.cache.line_bytes as u64).max(1),
            totals: Counters::default(),
            checkpoints: Default::default(),
            config: config.clone(),
            preview: None,
            progress,
        }
    }

    /// Also shows previews while the run goes, in `preview`.
    pub fn with_preview(self, preview: Preview) -> Self {
        Gather {
            preview: Some(preview),
            ..self
        }
    }

    /// Forgets what the run gathered, keeping what it was asked to gather (window, sample
    /// size, previews, how often to copy): the run starts again from the file's start.
    pub fn start_again(&mut self) {
        let mut fresh = Gather::new(&self.config, self.progress);
        fresh.cap = self.cap;
        fresh.window = self.window.take();
        fresh.preview = self.preview.take();
        fresh.checkpoints = super::checkpoints::Checkpoints::every(self.checkpoints.every);
        // The files' stamp when the run began: a detail of the run is refused once they change.
        fresh.checkpoints.stamp = self.checkpoints.stamp.take();
        *self = fresh;
    }

    /// The address axis: the segments of every page the requests touched, and the arrays'
    /// labels from the lines each instruction asked for.
    pub fn segments(&self) -> Segments {
        let mut s = Segments::from_addresses(self.pages.iter().map(|&p| p << 12));
        let mut ranges = Vec::new();
        for (k, kernel) in self.kernels.iter().enumerate() {
            for (i, inst) in kernel.instructions.iter().enumerate() {
                let span = self
                    .slots
                    .inst(k, i as u32)
                    .and_then(|slot| self.inst_spans.get(slot));
                if let Some(&(lo, hi)) = span.filter(|s| s.0 < s.1) {
                    ranges.push((lo, hi, inst.name.as_str()));
                }
            }
        }
        s.labels = super::segments::labels_of_ranges(ranges);
        s
    }

    /// The sample thinned to at most `most` requests (a power-of-two step), and the stride of
    /// what is left.
    pub fn sample(&self, most: usize) -> (Points, u64) {
        let mut step = 1usize;
        while self.points.len().div_ceil(step) > most.max(1) {
            step *= 2;
        }
        let mut p = self.points.clone();
        let mut left = step;
        while left > 1 {
            p.keep_every_other();
            left /= 2;
        }
        (p, self.stride * step as u64)
    }

    /// Leaves a preview of the run so far in the slot, and asks for a frame.
    #[cold]
    fn publish(&mut self, preview: &Preview) {
        let report = Report::in_progress(
            &self.config,
            &warpscope_core::sim::selected_sms(&self.config),
            self.totals,
        );
        let d = SimData::streamed(self.config.clone(), report, self, Some(PREVIEW_POINTS));
        if let Ok(mut slot) = preview.slot.lock() {
            *slot = Some(Arc::new(d));
        }
        (preview.wake)();
    }

    /// Keeps request `e`, number `at` in the sampled range, if the stride takes it; halves
    /// the sample and doubles the stride first when the sample is full.
    #[inline]
    fn sample_request(&mut self, at: u64, e: &RequestEvent) {
        if at & (self.stride - 1) != 0 {
            return;
        }
        if self.points.len() >= self.cap {
            self.points.keep_every_other();
            self.stride *= 2;
        }
        if at & (self.stride - 1) == 0 {
            self.points.push(e);
        }
    }
}

impl Observer for Gather<'_> {
    fn on_kernel(&mut self, _kernel: u32, header: &Kernel) {
        self.slots.add(header);
        self.kernels.push(header.shape_only());
        self.inst_split
            .resize(self.slots.insts, ClassSplit::default());
        self.inst_spans.resize(self.slots.insts, (u64::MAX, 0));
        self.cta_classes.resize(self.slots.ctas);
    }

    /// The open kernel, the last begun, found more instructions.
    fn on_instructions(&mut self, _kernel: u32, added: &[warpscope_core::trace::Instruction]) {
        let Some(k) = self.kernels.last_mut() else {
            return;
        };
        k.instructions.extend_from_slice(added);
        self.slots.more_instructions(added.len());
        self.inst_split
            .resize(self.slots.insts, ClassSplit::default());
        self.inst_spans.resize(self.slots.insts, (u64::MAX, 0));
    }

    fn on_request(&mut self, e: &RequestEvent) {
        if let Some(w) = &self.window {
            self.past_window |= self.requests >= w.end;
            if w.contains(&self.requests) {
                // Numbered from the window's start, so the stride applies within it.
                let at = self.requests - w.start;
                self.sample_request(at, e);
            }
            self.requests += 1;
            return;
        }
        self.sample_request(self.requests, e);
        self.requests += 1;
        if let Some(t) = e.time {
            super::stretch(&mut self.spans, e.kernel, t);
        }
        self.totals.count(e.write, e.hit, e.class);
        let o = Outcome::of(e.hit, e.class);
        self.grid.add(e.set, o != Outcome::Hit);
        let k = e.kernel as usize;
        if let Some(s) = self.slots.inst(k, e.inst) {
            self.inst_split[s].add(e.write, o);
            let lo = e.line.saturating_mul(self.line_bytes);
            let span = &mut self.inst_spans[s];
            *span = (
                span.0.min(lo),
                span.1.max(lo.saturating_add(self.line_bytes)),
            );
        }
        if let Some(s) = self.slots.cta(k, e.cta) {
            self.cta_classes.add(s, e.write, o);
        }
        let page = e.line.saturating_mul(self.line_bytes) >> 12;
        if page != self.last_page {
            self.last_page = page;
            self.pages.insert(page);
        }
    }

    fn checkpoint_due(&self, accesses: u64) -> bool {
        self.window.is_none() && self.checkpoints.due(accesses)
    }

    fn checkpoint(
        &mut self,
        session: warpscope_core::sim::Session,
        at: warpscope_core::trace::ResumePoint,
    ) {
        let accesses = session.accesses_done();
        self.checkpoints.add(session, at, self.requests, accesses);
    }

    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        // The bytes read are counted as the file is read; the cancel is checked here, and a
        // preview is left when one is due.
        if let Some(p) = self.preview.take() {
            if Instant::now() >= p.next {
                self.publish(&p);
                self.preview = Some(Preview {
                    next: Instant::now() + PREVIEW_EVERY,
                    ..p
                });
            } else {
                self.preview = Some(p);
            }
        }
        !self.progress.cancelled() && !self.past_window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64) -> RequestEvent {
        RequestEvent {
            order: i,
            sm: 0,
            kernel: 0,
            cta: 0,
            warp: 0,
            inst: 0,
            line: i * 3,
            set: (i % 4) as u32,
            write: i % 5 == 0,
            hit: i % 2 == 0,
            class: (i % 2 == 1).then_some(warpscope_core::cache::MissClass::Capacity),
            reuse_distance: None,
            time: None,
            thread: Some(i as u32),
            in_flight: false,
            set_distance: None,
            sectors: 1,
            evicted: None,
            effect_at: None,
            refused: 0,
            first: true,
        }
    }

    #[test]
    fn the_sample_is_every_stride_th_request_and_never_outgrows_its_cap() {
        let progress = Progress::default();
        for (cap, n) in [(8, 7u64), (8, 8), (8, 9), (8, 100), (16, 1000), (10, 999)] {
            let mut g = Gather::new(&SimConfig::default(), &progress);
            g.cap = cap;
            for i in 0..n {
                g.on_request(&event(i));
                assert!(g.points.len() <= cap, "cap {cap}, after {i}");
            }
            let want: Vec<u64> = (0..n).step_by(g.stride as usize).map(|i| i * 3).collect();
            assert_eq!(g.points.line, want, "cap {cap}, {n} requests");
            let threads: Vec<u32> = (0..n)
                .step_by(g.stride as usize)
                .map(|i| i as u32)
                .collect();
            assert_eq!(g.points.thread, threads);
            // The stride is the least power of two that fits the cap.
            assert!(n.div_ceil(g.stride) as usize <= cap);
            assert!(g.stride == 1 || n.div_ceil(g.stride / 2) as usize > cap);
            assert_eq!(g.requests, n);
            assert_eq!(g.grid.requests, n);
        }
    }

    /// A run started again (its file read in two passes) forgets what it gathered and its
    /// copies, but keeps what it was asked for and the files' stamp, so that a detail of it
    /// is still refused once the file changes.
    #[test]
    fn a_run_started_again_keeps_its_window_and_the_files_stamp() {
        let progress = Progress::default();
        let mut g = Gather::new(&SimConfig::default(), &progress);
        g.window = Some(5..9);
        g.checkpoints = super::super::checkpoints::Checkpoints::every(64);
        let stamp = warpscope_shell::TraceStamp {
            bytes: 12,
            modified: None,
        };
        g.checkpoints.stamp = Some(stamp);
        g.on_request(&event(6));
        g.start_again();
        assert_eq!(g.requests, 0);
        assert_eq!(g.window, Some(5..9));
        assert_eq!(g.checkpoints.every, 64);
        assert_eq!(g.checkpoints.stamp, Some(stamp));
    }

    #[test]
    fn a_growing_grid_counts_as_fixed_slices_of_its_final_width() {
        let sets = 3;
        let n = 1000 + SET_BINS as u64 * 5;
        let mut g = GrowingGrid::new(sets);
        let event = |i: u64| ((i * 7 % sets as u64) as u32, i % 3 == 0);
        for i in 0..n {
            let (s, m) = event(i);
            g.add(s, m);
        }
        let per_bin = g.per_bin;
        assert!(per_bin > 1 && n.div_ceil(per_bin) <= SET_BINS as u64);
        let grid = g.into_grid();
        let bins = grid.bins;
        let mut want = vec![0u32; sets * bins];
        let mut want_m = vec![0u32; sets * bins];
        for i in 0..n {
            let (s, m) = event(i);
            let b = (i / per_bin) as usize;
            want[s as usize * bins + b] += 1;
            want_m[s as usize * bins + b] += m as u32;
        }
        assert_eq!(grid.accesses, want);
        assert_eq!(grid.misses, want_m);
    }
}
