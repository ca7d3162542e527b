//! The set view's data: accesses and misses per cache set over time, and the heatmap image of
//! each measure, made on the worker so that the view only uploads a texture.

use std::sync::Arc;

use egui::{Color32, ColorImage};

use crate::theme;

/// What the set heatmap shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SetMetric {
    #[default]
    Accesses,
    Misses,
    MissRate,
}

impl SetMetric {
    pub const ALL: [SetMetric; 3] = [SetMetric::Accesses, SetMetric::Misses, SetMetric::MissRate];
    /// Its place in [`SetGrid::images`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Accesses and misses per set over time: `bins` time slices x `sets` rows.
#[derive(Clone, Debug, Default)]
pub struct SetGrid {
    pub bins: usize,
    pub sets: usize,
    /// Requests per time slice (the x extent of one bin).
    pub per_bin: u64,
    /// Row-major by set: `accesses[set * bins + bin]`.
    pub accesses: Vec<u32>,
    pub misses: Vec<u32>,
    /// The heatmap of each metric ([`SetMetric::index`]), set 0 at the bottom.
    pub images: [Arc<ColorImage>; 3],
}

impl SetGrid {
    /// Paints the heatmap of each measure (after the counts are in).
    pub fn paint(&mut self) {
        self.images = SetMetric::ALL.map(|m| Arc::new(self.image(m)));
    }

    /// The heatmap of `metric`: log scale for counts, linear for the miss rate, dark where
    /// a cell has none.
    fn image(&self, metric: SetMetric) -> ColorImage {
        let g = self;
        let values: Vec<f32> = match metric {
            SetMetric::Accesses => g.accesses.iter().map(|&v| v as f32).collect(),
            SetMetric::Misses => g.misses.iter().map(|&v| v as f32).collect(),
            SetMetric::MissRate => g
                .accesses
                .iter()
                .zip(&g.misses)
                .map(|(&a, &m)| if a == 0 { -1.0 } else { m as f32 / a as f32 })
                .collect(),
        };
        let max = values.iter().copied().fold(0.0f32, f32::max).max(1e-9);
        let log = metric != SetMetric::MissRate;
        let pixels: Vec<Color32> = (0..g.sets)
            .rev()
            .flat_map(|s| (0..g.bins).map(move |b| (s, b)))
            .map(|(s, b)| {
                let v = values[s * g.bins + b];
                if v <= 0.0 && log || v < 0.0 {
                    Color32::from_gray(20)
                } else if log {
                    theme::ramp(v.ln_1p() / max.ln_1p())
                } else {
                    theme::ramp(v / max)
                }
            })
            .collect();
        ColorImage::new([g.bins, g.sets], pixels)
    }

    /// The colour scale's ends and name for a set-heatmap metric.
    pub fn scale(&self, metric: SetMetric) -> (String, String, String) {
        let g = self;
        match metric {
            SetMetric::Accesses => (
                "1".into(),
                g.accesses.iter().max().copied().unwrap_or(0).to_string(),
                "accesses per cell (log scale)".into(),
            ),
            SetMetric::Misses => (
                "1".into(),
                g.misses.iter().max().copied().unwrap_or(0).to_string(),
                "misses per cell (log scale)".into(),
            ),
            SetMetric::MissRate => {
                let max = g
                    .accesses
                    .iter()
                    .zip(&g.misses)
                    .filter(|(&a, _)| a > 0)
                    .map(|(&a, &m)| m as f64 / a as f64)
                    .fold(0.0, f64::max);
                (
                    "0%".into(),
                    format!("{:.0}%", max * 100.0),
                    "misses / accesses per cell".into(),
                )
            }
        }
    }
}
