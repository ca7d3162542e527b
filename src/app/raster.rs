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
    pub key: u64,
    pub view: View,
    pub data: Arc<SimData>,
}

pub struct Raster {
    pub key: u64,
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

/// One thread that draws rasters; only the newest queued job is drawn.
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
                while let Ok(mut job) = jrx.recv() {
                    // Skip to the newest request.
                    while let Ok(newer) = jrx.try_recv() {
                        job = newer;
                    }
                    let (image, in_view) = rasterize(&job.data, &job.view);
                    if rtx
                        .send(Raster {
                            key: job.key,
                            view: job.view,
                            image,
                            in_view,
                        })
                        .is_err()
                    {
                        return;
                    }
                    wake();
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
