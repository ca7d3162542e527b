//! Carrying out what the views ask of the app ([`Command`]), after drawing: each choice into
//! the settings, a window of a streamed run to show in detail. And every frame, handing the
//! views the results of the jobs they started ([`WarpscopeApp::view_jobs`]).

use super::views::Command;
use super::*;

impl WarpscopeApp {
    pub(super) fn view_command(&mut self, c: Command) {
        match c {
            // Handled in the frame (`central`): hovering lasts one frame.
            Command::Hover { .. } => {}
            Command::Detail { pane, window } => self.detail(pane, window),
            Command::Only { pane, filter } => {
                self.only_trace = self.pane_trace(pane).as_ref().map(pane_trace::trace_id);
                self.only = filter;
            }
            Command::SetMetric(m) => self.settings.set_metric = m,
            Command::MissOptions(o) => self.settings.misses = o,
        }
    }

    /// Hands the views the results of the jobs they asked for. Called every frame.
    pub(super) fn view_jobs(&mut self) {
        for i in 0..self.panes.len() {
            let trace = self.pane_trace(i).as_ref().map(pane_trace::trace_id);
            let p = &mut self.panes[i];
            let pane = views::Polled {
                generation: p.generation,
                run: p.run,
                data: p.result.as_deref(),
                trace,
            };
            if let Some(e) = p.views.poll(&pane) {
                self.status = Status::Error(e);
            }
        }
    }
}
