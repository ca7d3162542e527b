//! The address-vs-time density raster: when more requests are in view than there are pixels,
//! they are binned into an image off the UI thread (a job per request, [`draw`]) instead of
//! drawn one marker each.

use std::sync::Arc;

use egui::{Color32, ColorImage};

use super::data::{Outcome, SimData};
use super::job::{Finished, JobError, Progress};
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
    /// Only this instruction's requests (clicked in the miss table).
    pub only: Option<(u16, u32)>,
}

/// A raster a pane's address view asks for: which data (by its result generation), which
/// view. The app draws it off the UI thread ([`draw`]).
pub struct RasterRequest {
    /// The pane's result generation the raster is drawn from.
    pub generation: u64,
    pub view: View,
    pub data: Arc<SimData>,
}

pub struct Raster {
    pub generation: u64,
    pub view: View,
    pub image: ColorImage,
    /// Requests inside the view.
    pub in_view: u64,
}

/// Bins the requests of `data` inside `view` into pixels, brighter the more requests a pixel
/// holds (log scale). Coloured by outcome, a pixel shows its miss share: from the hit colour
/// (no misses) to the colour of its most recent miss class (all misses), so misses never
/// vanish under hits. Otherwise a pixel takes its last request's colour.
pub fn rasterize(data: &SimData, view: &View) -> (ColorImage, u64) {
    let drawn = rasterize_until(data, view, &|| true);
    drawn.unwrap_or_else(|| (ColorImage::new([1, 1], vec![Color32::TRANSPARENT]), 0))
}

/// Draws the raster `req` asks for as a job: a newer request drops this one, which stops it.
pub fn draw(req: RasterRequest, progress: &Progress) -> Finished<Raster> {
    let (image, in_view) = rasterize_until(&req.data, &req.view, &|| !progress.cancelled())
        .ok_or(JobError::Cancelled)?;
    Ok(Raster {
        generation: req.generation,
        view: req.view,
        image,
        in_view,
    })
}

/// [`rasterize`], asking `go_on` every 2^16 requests and giving up (`None`) when it says no.
fn rasterize_until(
    data: &SimData,
    view: &View,
    go_on: &dyn Fn() -> bool,
) -> Option<(ColorImage, u64)> {
    let (w, h) = (view.width.max(1), view.height.max(1));
    let mut count = vec![0u32; w * h];
    let mut misses = vec![0u32; w * h];
    let mut colour = vec![Color32::TRANSPARENT; w * h];
    let by_outcome = view.colour == ColourBy::Outcome;
    let sx = w as f64 / (view.x[1] - view.x[0]).max(1e-9);
    let sy = h as f64 / (view.y[1] - view.y[0]).max(1e-9);
    let mut in_view = 0u64;
    for (k, i) in data.visible(view.x[0], view.x[1]).enumerate() {
        if k % (1 << 16) == 0 && !go_on() {
            return None;
        }
        if !data.points.of_inst(i, view.only) {
            continue;
        }
        let px = (data.x(i) - view.x[0]) * sx;
        let py = (view.y[1] - data.y[i]) * sy;
        if !(px >= 0.0 && py >= 0.0 && px < w as f64 && py < h as f64) {
            continue;
        }
        // Non-negative, so truncation is the floor.
        let at = py as usize * w + px as usize;
        count[at] += 1;
        in_view += 1;
        if by_outcome {
            let o = data.points.outcome(i);
            if o != Outcome::Hit {
                misses[at] += 1;
                colour[at] = theme::outcome(o);
            }
        } else {
            colour[at] = view.colour.colour(data, i);
        }
    }
    let max = count.iter().copied().max().unwrap_or(0).max(1) as f32;
    let hit = theme::outcome(Outcome::Hit);
    let pixels = (0..w * h)
        .map(|at| {
            let c = count[at];
            if c == 0 {
                return Color32::TRANSPARENT;
            }
            let col = if by_outcome {
                miss_share_colour(hit, colour[at], misses[at] as f32 / c as f32)
            } else {
                colour[at]
            };
            let t = 0.45 + 0.55 * ((c as f32).ln_1p() / max.ln_1p());
            let [r, g, b, _] = col.to_array();
            Color32::from_rgba_unmultiplied(r, g, b, (t * 255.0) as u8)
        })
        .collect();
    Some((
        ColorImage {
            size: [w, h],
            pixels,
            source_size: egui::vec2(w as f32, h as f32),
        },
        in_view,
    ))
}

/// The colour of a pixel whose requests are `share` misses (0..=1): the hit colour mixed
/// with the miss colour. Any miss at all moves it at least a quarter of the way, so a few
/// misses among many hits stay visible.
pub fn miss_share_colour(hit: Color32, miss: Color32, share: f32) -> Color32 {
    if share <= 0.0 {
        return hit;
    }
    let t = 0.25 + 0.75 * share.clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (a as f32 + (b as f32 - a as f32) * t).round() as u8;
    let ([r0, g0, b0, _], [r1, g1, b1, _]) = (hit.to_array(), miss.to_array());
    Color32::from_rgb(mix(r0, r1), mix(g0, g1), mix(b0, b1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pixel_shows_its_miss_share() {
        let (hit, miss) = (Color32::from_rgb(0, 200, 0), Color32::from_rgb(200, 0, 0));
        assert_eq!(miss_share_colour(hit, miss, 0.0), hit);
        assert_eq!(miss_share_colour(hit, miss, 1.0), miss);
        // One miss in a hundred still shows; more misses, more of the miss colour.
        let few = miss_share_colour(hit, miss, 0.01);
        let half = miss_share_colour(hit, miss, 0.5);
        assert!(
            few.r() >= 50 && few.r() < half.r() && half.r() < 200,
            "{few:?} {half:?}"
        );
    }
}
