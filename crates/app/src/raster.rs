//! The address-vs-time density raster: when more requests are in view than there are pixels,
//! they are binned into an image off the UI thread (a job per request, [`draw`], a part of the
//! requests at a time) instead of drawn one marker each.

use std::sync::Arc;

use egui::{Color32, ColorImage};

use super::data::{Outcome, Segments, SimData, XAxis};
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
    /// Where the raster's requests lie on the plot ([`Placement::of`] the run and `data`).
    pub placement: Placement,
}

pub struct Raster {
    pub generation: u64,
    pub view: View,
    pub image: ColorImage,
    pub placement: Placement,
}

/// Where a raster's requests lie on the plot: the run they come from, the start of its
/// request numbers (the x axis of a streamed run's sample) and the address axis's segments.
///
/// A streamed run's next preview (or its result) holds every request an earlier one held,
/// with the same outcome, at the same request number; only the address axis may have grown
/// (pages touched since), which moves each segment of the earlier axis as a whole. So the
/// earlier preview's raster, each segment's band moved to its new place ([`Placement::bands`]),
/// is a true picture of part of the new result while the new result's own raster is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The run ([`crate::Pane::run`]) the result came from.
    pub run: u64,
    /// The first request number of a sampled axis ([`XAxis::Sampled`]); `None` for the other
    /// axes, whose x of a request depends on the whole result.
    pub x_start: Option<u64>,
    pub segments: Segments,
}

/// One horizontal band of a raster placed over a later result: the part of the image
/// (`uv`, 0..1 from its top left) and where it goes on the plot (centre and size, in plot units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    pub uv: egui::Rect,
    pub centre: [f64; 2],
    pub size: [f64; 2],
}

impl Band {
    /// The whole raster of `view`, where it was drawn.
    pub fn whole(view: &View) -> Band {
        Band::of(view, view.y[0], view.y[1], 0.0)
    }
    /// The part of the raster of `view` from `a` to `b` on the address axis, moved by `shift`.
    fn of(view: &View, a: f64, b: f64, shift: f64) -> Band {
        let ([x0, x1], [y0, y1]) = (view.x, view.y);
        let span = (y1 - y0).max(1e-9);
        Band {
            uv: egui::Rect::from_min_max(
                egui::pos2(0.0, ((y1 - b) / span) as f32),
                egui::pos2(1.0, ((y1 - a) / span) as f32),
            ),
            centre: [(x0 + x1) / 2.0, (a + b) / 2.0 + shift],
            size: [x1 - x0, b - a],
        }
    }
}

/// More segments in a raster's view than this: it is not drawn over a later result (one image
/// per segment each frame would cost more than the moment it stands in for).
const MOST_BANDS: usize = 256;

impl Placement {
    pub fn of(run: u64, data: &SimData) -> Self {
        Placement {
            run,
            x_start: Self::x_start(data),
            segments: data.segments.clone(),
        }
    }

    /// The first request number of `data`'s axis if it is a whole run's sample.
    fn x_start(data: &SimData) -> Option<u64> {
        match (&data.x, &data.window) {
            (XAxis::Sampled { start, .. }, None) => Some(*start),
            _ => None,
        }
    }

    /// Whether a raster placed so can stand in for one of `data`, a result of `run`: the same
    /// run, both on a sampled axis from the same request number. (Asked each frame while a
    /// raster stands in, so nothing is copied.)
    pub fn fits(&self, run: u64, data: &SimData) -> bool {
        self.run == run && self.x_start.is_some() && self.x_start == Self::x_start(data)
    }

    /// The bands of a raster of `view` (drawn with these segments) moved to their places on
    /// the address axis `now`: one per segment in view, each shifted by how far its first
    /// address moved. Empty when a segment is no longer whole in one of `now`'s (the axis was
    /// not grown from this one) or there are more than [`MOST_BANDS`].
    pub fn bands(&self, view: &View, now: &Segments) -> Vec<Band> {
        let [y0, y1] = view.y;
        let whole = |a: f64, b: f64, shift: f64| Band::of(view, a, b, shift);
        if self.segments == *now {
            return vec![whole(y0, y1, 0.0)];
        }
        let mut out = Vec::new();
        for &(lo, hi, y) in &self.segments.ranges {
            let (a, b) = (y.max(y0), (y + (hi - lo) as f64).min(y1));
            if a >= b {
                continue;
            }
            let at = now.ranges.partition_point(|r| r.0 <= lo);
            let Some(&(nlo, _, ny)) = at
                .checked_sub(1)
                .and_then(|i| now.ranges.get(i))
                .filter(|r| hi <= r.1)
            else {
                return Vec::new();
            };
            if out.len() == MOST_BANDS {
                return Vec::new();
            }
            out.push(whole(a, b, ny + (lo - nlo) as f64 - y));
        }
        out
    }
}

/// The raster of `data` inside `view` and the requests in it, drawn at once (tests).
#[cfg(test)]
pub fn rasterize(data: &SimData, view: &View) -> (ColorImage, u64) {
    rasterize_in_parts(data, view, usize::MAX)
}

/// [`rasterize`], `part` requests at a time (tests: the job's parts change nothing).
#[cfg(test)]
pub fn rasterize_in_parts(data: &SimData, view: &View, part: usize) -> (ColorImage, u64) {
    let mut bins = Bins::new(view);
    let mut from = 0;
    while bins.add(data, view, from, part) > 0 {
        from = from.saturating_add(part);
    }
    bins.image(view)
}

/// Requests binned in one piece of a raster's job (a few milliseconds in a page).
const PART: usize = 1 << 16;

/// The job's pieces: the raster `req` asks for, [`PART`] requests at a time (a newer request
/// drops the job, which stops it; [`crate::sliced::Slices::job`]).
pub fn draw(req: RasterRequest) -> impl FnMut(&Progress) -> Option<Finished<Raster>> + Send {
    let mut bins = Some(Bins::new(&req.view));
    let mut from = 0;
    move |progress| {
        if progress.cancelled() {
            return Some(Err(JobError::Cancelled));
        }
        let b = bins.as_mut()?;
        if b.add(&req.data, &req.view, from, PART) > 0 {
            from += PART;
            return None;
        }
        let (image, _) = bins.take()?.image(&req.view);
        Some(Ok(Raster {
            generation: req.generation,
            view: req.view,
            image,
            placement: req.placement.clone(),
        }))
    }
}

/// The requests of a raster binned so far: per pixel, how many, how many missed, and the
/// colour; and how many were in the view.
struct Bins {
    count: Vec<u32>,
    misses: Vec<u32>,
    colour: Vec<Color32>,
    in_view: u64,
}

impl Bins {
    fn new(view: &View) -> Self {
        let n = view.width.max(1) * view.height.max(1);
        Bins {
            count: vec![0; n],
            misses: vec![0; n],
            colour: vec![Color32::TRANSPARENT; n],
            in_view: 0,
        }
    }

    /// Bins the requests `from..from + n` of those of `data` whose x is inside `view`; how
    /// many there were (0: none left).
    fn add(&mut self, data: &SimData, view: &View, from: usize, n: usize) -> usize {
        let (w, h) = (view.width.max(1), view.height.max(1));
        let by_outcome = view.colour == ColourBy::Outcome;
        let sx = w as f64 / (view.x[1] - view.x[0]).max(1e-9);
        let sy = h as f64 / (view.y[1] - view.y[0]).max(1e-9);
        let part = data.visible(view.x[0], view.x[1]).part(from, n);
        let taken = part.len();
        for i in part {
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
            self.count[at] += 1;
            self.in_view += 1;
            if by_outcome {
                let o = data.points.outcome(i);
                if o != Outcome::Hit {
                    self.misses[at] += 1;
                    self.colour[at] = theme::outcome(o);
                }
            } else {
                self.colour[at] = view.colour.colour(data, i);
            }
        }
        taken
    }

    /// The image of the requests binned, brighter the more requests a pixel holds (log
    /// scale), and how many there were. Coloured by outcome, a pixel shows its miss share:
    /// from the hit colour (no misses) to the colour of its most recent miss class (all
    /// misses), so misses never vanish under hits. Otherwise a pixel takes its last request's
    /// colour.
    fn image(self, view: &View) -> (ColorImage, u64) {
        let (w, h) = (view.width.max(1), view.height.max(1));
        let by_outcome = view.colour == ColourBy::Outcome;
        let max = self.count.iter().copied().max().unwrap_or(0).max(1) as f32;
        let hit = theme::outcome(Outcome::Hit);
        let pixels = (0..w * h)
            .map(|at| {
                let c = self.count[at];
                if c == 0 {
                    return Color32::TRANSPARENT;
                }
                let col = if by_outcome {
                    miss_share_colour(hit, self.colour[at], self.misses[at] as f32 / c as f32)
                } else {
                    self.colour[at]
                };
                let t = 0.45 + 0.55 * ((c as f32).ln_1p() / max.ln_1p());
                let [r, g, b, _] = col.to_array();
                Color32::from_rgba_unmultiplied(r, g, b, (t * 255.0) as u8)
            })
            .collect();
        let image = ColorImage {
            size: [w, h],
            pixels,
            source_size: egui::vec2(w as f32, h as f32),
        };
        (image, self.in_view)
    }
}

/// The colour of a pixel whose requests are `share` misses (0..=1): the hit colour mixed
/// with the miss colour. Any miss at all moves it at least half of the way, so a few misses
/// among many hits stay visible (a quarter of the way looked all but green).
pub fn miss_share_colour(hit: Color32, miss: Color32, share: f32) -> Color32 {
    if share <= 0.0 {
        return hit;
    }
    let t = 0.5 + 0.5 * share.clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (a as f32 + (b as f32 - a as f32) * t).round() as u8;
    let ([r0, g0, b0, _], [r1, g1, b1, _]) = (hit.to_array(), miss.to_array());
    Color32::from_rgb(mix(r0, r1), mix(g0, g1), mix(b0, b1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(y: [f64; 2]) -> View {
        View {
            x: [100.0, 900.0],
            y,
            width: 64,
            height: 64,
            colour: ColourBy::Outcome,
            only: None,
        }
    }

    /// The old y of a band's top and bottom edges (the inverse of its `uv`).
    fn old_span(b: &Band, v: &View) -> (f64, f64) {
        let span = v.y[1] - v.y[0];
        let bottom = v.y[1] - b.uv.max.y as f64 * span;
        let top = v.y[1] - b.uv.min.y as f64 * span;
        (bottom, top)
    }

    #[test]
    fn an_earlier_rasters_bands_move_each_address_to_its_new_place() {
        // Three arrays; the later axis has pages touched since: inside the first array's
        // span, before the second array, and a new array between the second and third.
        let before: Vec<u64> = (0..40u64)
            .map(|i| 0x1000_0000 + i * 0x1000)
            .chain((0..8).map(|i| 0x2000_0000 + i * 0x1000))
            .chain((0..16).map(|i| 0x7000_0000 + i * 0x1000))
            .collect();
        let added = [0x1002_8000u64, 0x1ffc_0000, 0x4000_0000, 0x4000_1000];
        let old = Segments::from_addresses(before.iter().copied());
        let now = Segments::from_addresses(before.iter().chain(&added).copied());
        assert_ne!(old, now, "the axis grew");
        let placed = Placement {
            run: 1,
            x_start: Some(0),
            segments: old.clone(),
        };
        let v = view([0.0, old.height()]);
        let bands = placed.bands(&v, &now);
        assert_eq!(bands.len(), old.ranges.len());
        // The image's coordinates are f32: exact to well within a pixel's share of the axis.
        let tol = old.height() * 1e-6;
        for &a in &before {
            let y = old.y(a);
            let holding: Vec<&Band> = bands
                .iter()
                .filter(|b| {
                    let (lo, hi) = old_span(b, &v);
                    lo - tol <= y && y <= hi + tol
                })
                .collect();
            assert_eq!(holding.len(), 1, "address {a:#x}");
            let b = holding[0];
            let (lo, hi) = old_span(b, &v);
            let moved = y + b.centre[1] - (lo + hi) / 2.0;
            assert!(
                (moved - now.y(a)).abs() < tol,
                "{a:#x}: {moved} vs {}",
                now.y(a)
            );
            assert!((hi - lo - b.size[1]).abs() < tol);
            assert_eq!((b.centre[0], b.size[0]), (500.0, 800.0));
        }
        // A view of part of the axis: only the segments in it, cut to it.
        let first = old.ranges[1].2;
        let v = view([first + 10.0, first + 20.0]);
        let bands = placed.bands(&v, &now);
        assert_eq!(bands.len(), 1);
        let (lo, hi) = old_span(&bands[0], &v);
        assert!((lo - first - 10.0).abs() < 1e-3 && (hi - first - 20.0).abs() < 1e-3);
        // The same axis: the whole image where it was.
        let same = placed.bands(&v, &old);
        assert_eq!(same.len(), 1);
        assert_eq!(
            same[0].uv,
            egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0))
        );
        assert_eq!(same[0].centre[1], first + 15.0);
        // An axis that was not grown from this one (an address of it is gone): nothing.
        let other = Segments::from_addresses(before[1..].iter().copied());
        assert!(placed.bands(&view([0.0, old.height()]), &other).is_empty());
    }

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
