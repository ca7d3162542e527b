//! The address-vs-time density raster: when more requests are in view than there are pixels,
//! they are binned into an image on a worker thread instead of drawn one marker each.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use egui::{Color32, ColorImage};

use super::data::SimData;
use super::theme;

/// What colours a request.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, Default,
)]
pub enum ColourBy {
    #[default]
    Outcome,
    Thread,
    Warp,
    Cta,
    Instruction,
    Sm,
    Kernel,
}

impl ColourBy {
    pub const ALL: [ColourBy; 7] = [
        ColourBy::Outcome,
        ColourBy::Thread,
        ColourBy::Warp,
        ColourBy::Cta,
        ColourBy::Instruction,
        ColourBy::Sm,
        ColourBy::Kernel,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ColourBy::Outcome => "hit / miss class",
            ColourBy::Thread => "thread",
            ColourBy::Warp => "warp",
            ColourBy::Cta => "CTA",
            ColourBy::Instruction => "instruction",
            ColourBy::Sm => "SM",
            ColourBy::Kernel => "kernel",
        }
    }
    /// The colour of request `i`.
    pub fn colour(self, d: &SimData, i: usize) -> Color32 {
        let p = &d.points;
        match self {
            ColourBy::Outcome => theme::outcome(p.outcome(i)),
            // The timing model has no thread per request: its warp colours instead.
            ColourBy::Thread => theme::category(p.thread(i).unwrap_or(p.warp[i])),
            ColourBy::Warp => theme::category(p.warp[i]),
            ColourBy::Cta => theme::category(p.cta[i]),
            ColourBy::Instruction => theme::category(p.inst[i]),
            ColourBy::Sm => theme::category(p.sm[i] as u32),
            ColourBy::Kernel => theme::category(p.kernel[i] as u32),
        }
    }
}

/// The plot window a raster covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub x: [f64; 2],
    pub y: [f64; 2],
    pub width: usize,
    pub height: usize,
    pub colour: ColourBy,
}

/// A raster request: which data (by pane and generation), which view.
pub struct RasterJob {
    pub pane: usize,
    /// The pane's result generation the raster is drawn from.
    pub generation: u64,
    pub view: View,
    pub data: Arc<SimData>,
}

pub struct Raster {
    pub pane: usize,
    pub generation: u64,
    pub view: View,
    pub image: ColorImage,
    /// Requests inside the view.
    pub in_view: u64,
}

/// Bins the requests of `data` inside `view` into pixels; a pixel's colour is that of the
/// last request drawn there, brighter the more requests it holds (log scale).
pub fn rasterize(data: &SimData, view: &View) -> (ColorImage, u64) {
    let (w, h) = (view.width.max(1), view.height.max(1));
    let mut count = vec![0u32; w * h];
    let mut colour = vec![Color32::TRANSPARENT; w * h];
    let sx = w as f64 / (view.x[1] - view.x[0]).max(1e-9);
    let sy = h as f64 / (view.y[1] - view.y[0]).max(1e-9);
    let mut in_view = 0u64;
    for i in data.visible(view.x[0], view.x[1]) {
        let px = (data.x(i) - view.x[0]) * sx;
        let py = (view.y[1] - data.y[i]) * sy;
        if !(px >= 0.0 && py >= 0.0 && px < w as f64 && py < h as f64) {
            continue;
        }
        // Non-negative, so truncation is the floor.
        let at = py as usize * w + px as usize;
        count[at] += 1;
        colour[at] = view.colour.colour(data, i);
        in_view += 1;
    }
    let max = count.iter().copied().max().unwrap_or(0).max(1) as f32;
    let pixels = count
        .iter()
        .zip(&colour)
        .map(|(&c, &col)| {
            if c == 0 {
                Color32::TRANSPARENT
            } else {
                let t = 0.45 + 0.55 * ((c as f32).ln_1p() / max.ln_1p());
                let [r, g, b, _] = col.to_array();
                Color32::from_rgba_unmultiplied(r, g, b, (t * 255.0) as u8)
            }
        })
        .collect();
    (
        ColorImage {
            size: [w, h],
            pixels,
            source_size: egui::vec2(w as f32, h as f32),
        },
        in_view,
    )
}

/// One thread that draws rasters; of the jobs queued for a pane only the newest is drawn
/// (every pane's newest is, so no pane waits for a raster that was skipped).
pub struct Rasterizer {
    tx: Sender<RasterJob>,
    rx: Receiver<Raster>,
}

impl Rasterizer {
    pub fn new(wake: Arc<dyn Fn() + Send + Sync>) -> Self {
        let (jtx, jrx) = channel::<RasterJob>();
        let (rtx, rrx) = channel::<Raster>();
        let spawned = std::thread::Builder::new()
            .name("warpscope-raster".into())
            .spawn(move || {
                while let Ok(first) = jrx.recv() {
                    let mut jobs = vec![first];
                    jobs.extend(jrx.try_iter());
                    for job in newest_per_pane(jobs, |j| j.pane) {
                        let (image, in_view) = rasterize(&job.data, &job.view);
                        let raster = Raster {
                            pane: job.pane,
                            generation: job.generation,
                            view: job.view,
                            image,
                            in_view,
                        };
                        if rtx.send(raster).is_err() {
                            return;
                        }
                        wake();
                    }
                }
            });
        // Without the thread, rasters are never answered and the plot keeps its markers.
        drop(spawned);
        Rasterizer { tx: jtx, rx: rrx }
    }
    pub fn request(&self, job: RasterJob) {
        let _ = self.tx.send(job);
    }
    pub fn poll(&self) -> Vec<Raster> {
        self.rx.try_iter().collect()
    }
}

/// Of queued jobs, the last one of each pane, in the order the panes first asked.
fn newest_per_pane<T>(jobs: Vec<T>, pane: impl Fn(&T) -> usize) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for job in jobs {
        match out.iter_mut().find(|j| pane(j) == pane(&job)) {
            Some(slot) => *slot = job,
            None => out.push(job),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_job_replaces_only_its_own_panes() {
        // (pane, generation): pane 0 asked twice, pane 1 once in between.
        let jobs = vec![(0, 1), (1, 1), (0, 2), (2, 5)];
        assert_eq!(newest_per_pane(jobs, |j| j.0), vec![(0, 2), (1, 1), (2, 5)]);
    }
}
