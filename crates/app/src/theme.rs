//! Colours shared by every view, so a miss class looks the same everywhere.

use egui::Color32;

use super::data::Outcome;

/// Hit and miss-class colours (colour-blind friendly: Okabe-Ito).
pub fn outcome(o: Outcome) -> Color32 {
    match o {
        Outcome::Hit => Color32::from_rgb(0x00, 0x9E, 0x73),
        Outcome::Compulsory => Color32::from_rgb(0x56, 0xB4, 0xE9),
        Outcome::Capacity => Color32::from_rgb(0xE6, 0x9F, 0x00),
        Outcome::Conflict => Color32::from_rgb(0xD5, 0x5E, 0x00),
        // A timing-model miss (its class exists only in aggregate): distinct from LATENCY.
        Outcome::Miss => Color32::from_rgb(0xB2, 0x22, 0x3C),
    }
}

/// What a text calls the colours above (lessons, docs): the word for each outcome, then for
/// the timing model's latency and MSHR classes. A test holds the lessons to these words.
#[cfg(test)]
pub const COLOUR_NAMES: [(&str, &str); 7] = [
    ("hit", "green"),
    ("compulsory", "blue"),
    ("capacity", "yellow"),
    ("conflict", "orange"),
    ("miss", "red"),
    ("latency", "pink"),
    ("mshr", "purple"),
];

/// The timing model's extra classes.
pub const LATENCY: Color32 = Color32::from_rgb(0xCC, 0x79, 0xA7);
pub const MSHR: Color32 = Color32::from_rgb(0x99, 0x66, 0xCC);

/// A categorical palette for warps, CTAs, instructions and SMs.
const PALETTE: [Color32; 12] = [
    Color32::from_rgb(0x4E, 0x79, 0xA7),
    Color32::from_rgb(0xF2, 0x8E, 0x2B),
    Color32::from_rgb(0xE1, 0x57, 0x59),
    Color32::from_rgb(0x76, 0xB7, 0xB2),
    Color32::from_rgb(0x59, 0xA1, 0x4F),
    Color32::from_rgb(0xED, 0xC9, 0x48),
    Color32::from_rgb(0xB0, 0x7A, 0xA1),
    Color32::from_rgb(0xFF, 0x9D, 0xA7),
    Color32::from_rgb(0x9C, 0x75, 0x5F),
    Color32::from_rgb(0xBA, 0xB0, 0xAC),
    Color32::from_rgb(0x1F, 0x9E, 0x89),
    Color32::from_rgb(0x8C, 0x6D, 0xD7),
];

/// Colours in the categorical palette (ids further apart share a colour).
pub const PALETTE_LEN: usize = PALETTE.len();

pub fn category(i: u32) -> Color32 {
    PALETTE[i as usize % PALETTE.len()]
}

/// A sequential colour ramp (dark blue to yellow, viridis-like) for heatmaps; `t` in 0..=1.
pub fn ramp(t: f32) -> Color32 {
    const STOPS: [(f32, [u8; 3]); 5] = [
        (0.0, [0x44, 0x01, 0x54]),
        (0.25, [0x3B, 0x52, 0x8B]),
        (0.5, [0x21, 0x90, 0x8C]),
        (0.75, [0x5D, 0xC8, 0x63]),
        (1.0, [0xFD, 0xE7, 0x25]),
    ];
    let t = t.clamp(0.0, 1.0);
    let i = STOPS.iter().position(|s| s.0 >= t).unwrap_or(4).max(1);
    let (t0, a) = STOPS[i - 1];
    let (t1, b) = STOPS[i];
    let f = (t - t0) / (t1 - t0).max(1e-6);
    let mix = |x: u8, y: u8| (x as f32 + (y as f32 - x as f32) * f).round() as u8;
    Color32::from_rgb(mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2]))
}

/// A legend entry: a filled square in `colour`, then `text`.
/// The two stay together where a legend wraps.
pub fn swatch(ui: &mut egui::Ui, colour: Color32, text: &str) {
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        let (rect, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
        ui.painter().rect_filled(rect, 2.0, colour);
        ui.label(text);
    });
}

/// A legend entry for the density image's pixels that hold hits and misses: the hit colour
/// mixed with a miss class's colour at a few shares of misses, as `raster::miss_share_colour`
/// draws them.
pub fn blend_swatch(ui: &mut egui::Ui, text: &str) {
    let (hit, miss) = (outcome(Outcome::Hit), outcome(Outcome::Conflict));
    let shares = [0.0, 0.02, 0.3, 1.0];
    let (rect, _) = ui.allocate_exact_size(egui::vec2(28.0, 10.0), egui::Sense::hover());
    let w = rect.width() / shares.len() as f32;
    for (i, s) in shares.into_iter().enumerate() {
        let r = egui::Rect::from_min_size(
            rect.min + egui::vec2(i as f32 * w, 0.0),
            egui::vec2(w, rect.height()),
        );
        let c = crate::raster::miss_share_colour(hit, miss, s);
        ui.painter().rect_filled(r, 0.0, c);
    }
    ui.label(text);
}

/// A horizontal colour scale of [`ramp`] from `from` to 1 with its end labels, for heatmaps
/// and density maps.
pub fn colour_scale(ui: &mut egui::Ui, from: f32, low: &str, high: &str, what: &str) {
    ui.label(egui::RichText::new(low).small());
    let (rect, _) = ui.allocate_exact_size(egui::vec2(120.0, 10.0), egui::Sense::hover());
    let steps = 40;
    let w = rect.width() / steps as f32;
    for i in 0..steps {
        let x = rect.left() + i as f32 * w;
        ui.painter().rect_filled(
            egui::Rect::from_min_size(
                egui::pos2(x, rect.top()),
                egui::vec2(w + 0.5, rect.height()),
            ),
            0.0,
            ramp(from + (1.0 - from) * i as f32 / (steps - 1) as f32),
        );
    }
    ui.label(egui::RichText::new(high).small());
    ui.label(egui::RichText::new(what).small().weak());
}

/// Shows that work for the view goes on: a spinner on the desktop; in a page a still mark,
/// since a spinner asks for a frame every frame and there the frames take the time the work
/// runs in between them (`tasks.rs`).
pub fn working(ui: &mut egui::Ui) {
    if cfg!(target_arch = "wasm32") {
        ui.label(egui::RichText::new("…").weak());
    } else {
        ui.spinner();
    }
}

#[cfg(test)]
mod tests {
    use super::COLOUR_NAMES;

    /// A lesson that names a colour names, in the same sentence, the outcome drawn in it
    /// ("click an orange request (a conflict miss)"): "click a red request" where conflict
    /// misses are orange sent students looking for a colour that is not on screen.
    #[test]
    fn the_colours_lessons_name_are_the_colours_on_screen() {
        let colours = [
            "red", "orange", "yellow", "green", "blue", "pink", "purple", "violet",
        ];
        for (name, _) in warpscope_core::lesson::LESSONS {
            let text = warpscope_core::lesson::lesson(name)
                .unwrap()
                .text
                .to_lowercase();
            for sentence in text.split(['.', ':', ';']) {
                let words: Vec<&str> = sentence
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .collect();
                for colour in colours.iter().filter(|c| words.contains(c)) {
                    let drawn = COLOUR_NAMES
                        .iter()
                        .any(|(what, c)| c == colour && words.iter().any(|w| w.starts_with(what)));
                    assert!(
                        drawn,
                        "lesson {name} names {colour} in \"{}\" but no outcome drawn {colour}",
                        sentence.trim()
                    );
                }
            }
        }
    }
}
