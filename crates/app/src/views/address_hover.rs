//! What hovering and selecting in the address view shows: the request tooltip (its
//! instruction, line, set, outcome and why, timing), the note on stores under write-through,
//! and the summary of a box selection.

use egui::{RichText, Ui};

use super::*;
use crate::data::{Outcome, Selection, SimData, TraceData};
use crate::theme;

/// The summary of a box selection above the plot; returns whether Clear was pressed.
pub(super) fn selection_panel(ui: &mut Ui, trace: &TraceData, s: &Selection) -> bool {
    let mut clear = false;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("Selected {} requests", s.requests)).strong());
            if s.requests > 0 {
                let pct = |n: u64| 100.0 * n as f64 / s.requests as f64;
                for o in Outcome::ALL {
                    let n = s.outcomes[o as usize];
                    if n > 0 {
                        theme::swatch(
                            ui,
                            theme::outcome(o),
                            &format!("{} {:.1}%", o.name(), pct(n)),
                        );
                    }
                }
                ui.label(format!(
                    "· {} writes · {} lines ({} .. {}) · {} CTAs · {} warps",
                    s.writes,
                    s.lines,
                    hex(s.lowest),
                    hex(s.highest),
                    s.ctas,
                    s.warps
                ));
            }
            if ui
                .small_button("Clear")
                .on_hover_text("Clear the selection (Esc)")
                .clicked()
            {
                clear = true;
            }
        });
        if !s.instructions.is_empty() {
            let names: Vec<String> = s
                .instructions
                .iter()
                .take(4)
                .map(|&(k, i, n)| {
                    let name = trace
                        .trace
                        .kernels
                        .get(k as usize)
                        .and_then(|k| k.instructions.get(i as usize))
                        .map_or_else(|| i.to_string(), |x| x.name.clone());
                    format!("{name} ({n})")
                })
                .collect();
            let more = s.instructions.len().saturating_sub(4);
            let more = if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            };
            ui.label(RichText::new(format!("Instructions: {}{more}", names.join(", "))).weak());
        }
    });
    clear
}

/// The widest a value of the request tooltip is drawn before it wraps (points).
const HOVER_VALUE_WIDTH: f32 = 300.0;

pub(super) fn request_tooltip(ui: &mut Ui, d: &SimData, i: usize) {
    let p = &d.points;
    let kernel = d.kernels.get(p.kernel[i] as usize);
    let (inst, cta, thread) = (instruction(d, i), cta(d, i), thread(d, i));
    let timing = d.config.timing.is_some();
    let reuse = match p.reuse[i] {
        u32::MAX => "∞ (first use)".to_string(),
        r => format!("{r} lines"),
    };
    let line_addr = p.line[i] * d.line_bytes;
    egui::Grid::new("hover").num_columns(2).show(ui, |ui| {
        // A long value (a mangled C++ kernel name, the timing model's note) wraps instead of
        // widening the tooltip across the window.
        let mut kv = |k: &str, v: String| {
            ui.label(RichText::new(k).weak());
            ui.scope(|ui| {
                ui.set_max_width(HOVER_VALUE_WIDTH);
                ui.add(egui::Label::new(v).wrap());
            });
            ui.end_row();
        };
        kv("request", d.request_number(i).to_string());
        kv(
            "kind",
            if p.is_write(i) {
                "store".into()
            } else {
                "load".into()
            },
        );
        if timing {
            let distance = (p.reuse[i] != u32::MAX).then_some(p.reuse[i]);
            let ways = d.config.cache.ways_effective();
            kv(
                "result",
                timing_result(p.outcome(i) == Outcome::Hit, p.in_flight(i), distance, ways),
            );
            // A streamed run cannot be replayed to explain one request.
            let click = if d.streamed {
                ""
            } else {
                "; click for this request's"
            };
            kv(
                "classes",
                format!(
                    "counted over whole runs (Nugteren et al. 2014): see the Misses view{click}"
                ),
            );
        } else {
            kv("result", p.outcome(i).name().to_string());
        }
        if let Some(note) = store_note(p.is_write(i), p.outcome(i), d.config.cache.write_policy) {
            kv("why", note.into());
        }
        kv("kernel", kernel.map(|k| k.name.clone()).unwrap_or_default());
        kv("instruction", inst);
        kv("CTA", cta);
        kv("thread", thread);
        kv("warp", p.warp[i].to_string());
        kv("SM", p.sm[i].to_string());
        kv("line", hex(line_addr));
        kv("set", p.set[i].to_string());
        if timing {
            kv("set-stack distance", reuse);
        } else {
            kv("reuse distance", reuse);
        }
    });
    // Explaining replays the trace, which a streamed run does not hold.
    if !d.streamed {
        ui.label(
            RichText::new("Click to explain why it hit or missed")
                .weak()
                .italics(),
        );
    }
}

/// Request `i`'s instruction: its name and source line, else its number.
fn instruction(d: &SimData, i: usize) -> String {
    let p = &d.points;
    d.kernels
        .get(p.kernel[i] as usize)
        .and_then(|k| k.instructions.get(p.inst[i] as usize))
        .map(|s| match s.line {
            Some(l) => format!("{}, source line {l}", s.name),
            None => s.name.clone(),
        })
        .unwrap_or_else(|| p.inst[i].to_string())
}

/// Request `i`'s CTA as (x,y,z) in its grid, else its number.
fn cta(d: &SimData, i: usize) -> String {
    let p = &d.points;
    d.kernels
        .get(p.kernel[i] as usize)
        .map(|k| {
            let (gx, gy) = (k.grid.x.max(1) as u64, k.grid.y.max(1) as u64);
            let c = p.cta[i] as u64;
            format!("({},{},{})", c % gx, c / gx % gy, c / (gx * gy))
        })
        .unwrap_or_else(|| p.cta[i].to_string())
}

/// Request `i`'s thread, and where it lies in its CTA.
fn thread(d: &SimData, i: usize) -> String {
    let p = &d.points;
    match (p.thread(i), d.kernels.get(p.kernel[i] as usize)) {
        (Some(t), Some(k)) => {
            let (bx, by) = (k.block.x.max(1) as u64, k.block.y.max(1) as u64);
            let local = t as u64 % k.threads_per_cta().max(1) as u64;
            format!(
                "{t}, ({},{},{}) in its CTA",
                local % bx,
                local / bx % by,
                local / (bx * by)
            )
        }
        (Some(t), None) => t.to_string(),
        (None, _) => "not tracked in the timing model".into(),
    }
}

/// What a timing-model request's result means, from what it saw at issue: its set-stack
/// distance (`None`: not in the stack) and whether its line was already on its way.
pub fn timing_result(hit: bool, in_flight: bool, set_distance: Option<u32>, ways: u32) -> String {
    match (hit, in_flight, set_distance) {
        (true, _, Some(d)) => format!("hit ({d} other lines used in its set since, < {ways} ways)"),
        (true, _, None) => "hit".into(),
        (false, true, _) => {
            "miss: the line was requested earlier and had not arrived (a latency miss)".into()
        }
        (false, false, None) => "miss: the first use of this line on this SM".into(),
        (false, false, Some(d)) if d >= ways => format!(
            "miss: {d} other lines used in its set since, at least its {ways} ways (evicted)"
        ),
        (false, false, Some(d)) => format!(
            "miss: {d} other lines used in its set since, fewer than its {ways} ways, but the \
             line was gone when the request took effect"
        ),
    }
}

/// Reuse-distance histogram (log bins) with the capacity marked, and the miss-rate curve.
/// Why a store missed, where the reuse distance alone would mislead: under write-through,
/// no-allocate a store never brings its line in, so it misses whenever no load did.
pub fn store_note(
    write: bool,
    outcome: Outcome,
    policy: warpscope_core::config::WritePolicy,
) -> Option<&'static str> {
    (write && outcome != Outcome::Hit && policy == warpscope_core::config::WritePolicy::Wtna)
        .then_some(
            "a store never allocates (write-through, no-allocate): it misses unless a load \
         brought the line in, whatever its reuse distance; the class is Dinero IV's, from the \
         fully associative cache of the same size",
        )
}
