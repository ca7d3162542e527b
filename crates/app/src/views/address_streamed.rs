//! What the address view adds for a streamed run (a trace file too large to hold): which of
//! the run's requests it draws, and the buttons to see every request of the range in view or
//! to go back to the whole run's sample.

use egui::Ui;

use super::command::Command;
use crate::data::{SimData, XAxis};

/// The legend's note on the `n` requests drawn: all of them, a sample of a streamed run or of
/// a window of it, or the first ones of a run too long to keep.
pub(super) fn drawn_note(data: &SimData, n: usize) -> String {
    let total = data.report.totals.requests;
    match (&data.x, &data.window) {
        (XAxis::Sampled { stride: 1, .. }, Some(w)) => format!(
            " drawn: every one of requests {} to {} of the streamed run",
            w.start, w.end
        ),
        (XAxis::Sampled { stride, .. }, Some(w)) => format!(
            " drawn: 1 in {stride} of requests {} to {} of the streamed run",
            w.start, w.end
        ),
        (XAxis::Sampled { stride: 1, .. }, None) => {
            " drawn: every request of the streamed run".into()
        }
        (XAxis::Sampled { stride, .. }, None) => {
            format!(" drawn: 1 in {stride} of the {total} requests of the streamed run")
        }
        (XAxis::Time { stride: 1, .. }, Some(w)) => format!(
            " drawn: every one of requests {} to {} of the streamed run, each at its issue cycle",
            w.start, w.end
        ),
        (XAxis::Time { stride, .. }, Some(w)) => format!(
            " drawn: 1 in {stride} of requests {} to {} of the streamed run, each at its issue cycle",
            w.start, w.end
        ),
        (XAxis::Time { stride: 1, .. }, None) if data.streamed => {
            " drawn: every request of the streamed run, at its issue cycle".into()
        }
        (XAxis::Time { stride, .. }, None) if data.streamed => format!(
            " drawn: 1 in {stride} of the {total} requests of the streamed run, each at its issue cycle"
        ),
        _ if data.points.dropped > 0 => format!(
            " (first {n} of {} requests)",
            n as u64 + data.points.dropped
        ),
        _ => String::new(),
    }
}

/// For a streamed run: a button that shows every request of the range in view (the file read
/// again up to its end), or, on such a detail, one back to the whole run's sample.
pub(super) fn detail_buttons(
    ui: &mut Ui,
    shown_x: Option<(f64, f64)>,
    data: &SimData,
    stride: u64,
    total: u64,
    pane: usize,
    out: &mut Vec<Command>,
) {
    if data.window.is_some() {
        if ui
            .button("Back to the whole run")
            .on_hover_text("The regular sample of the whole run, as it was")
            .clicked()
        {
            out.push(Command::Detail { pane, window: None });
        }
        return;
    }
    let Some((x0, x1)) = shown_x.filter(|_| stride > 1) else {
        return;
    };
    let Some((lo, hi)) = data.requests_in_view(x0, x1, total) else {
        return;
    };
    if hi <= lo || hi - lo >= total {
        return;
    }
    let from = if data.checkpoints.kept.is_empty() {
        "from its start (this run kept no copy of itself to read on from: it was short, or \
         its file cannot be read on from, a .wsb file older than version 4 or an NVBit log \
         whose launches interleave; `warpscope convert FILE F.wsb` makes a file that zooms \
         from copies)"
    } else {
        "on from the latest copy of the run before the view"
    };
    if ui
        .button(format!("Every request from {lo} to {hi}"))
        .on_hover_text(format!(
            "Read the file again up to the end of the view, {from}, and keep every request in \
             it (a regular sample if they are more than 2^21); the counts stay the whole run's"
        ))
        .clicked()
    {
        out.push(Command::Detail {
            pane,
            window: Some(lo..hi),
        });
    }
}
