//! What a view asks of the app, and what it is handed. Views draw and return [`Command`]s
//! for what is the app's (its settings, the other panes); the app carries them out after
//! drawing, so no draw function touches the app's settings. A view's own work off the UI
//! thread is its own: it starts its jobs while drawing (with [`PaneCx::wake`]) and takes
//! their results in [`PaneView::poll`]. What every pane view is handed is one [`PaneCx`].

use std::sync::Arc;

use super::misses::MissOptions;
use super::SetMetric;
use crate::data::{InstFilter, SimData, TraceData};
use crate::job::{Progress, Wake};
use crate::raster::ColourBy;

/// A view's request, applied by the app after the frame is drawn.
pub enum Command {
    /// Show every request of a window of pane `pane`'s streamed run (request numbers), or
    /// (`None`) the whole run's sample again.
    Detail {
        pane: usize,
        window: Option<std::ops::Range<u64>>,
    },
    /// Request `request` of the pane's result `generation` is hovered (its linked panes mark
    /// the same access). A frame without one means nothing is hovered.
    Hover {
        pane: usize,
        generation: u64,
        request: usize,
    },
    /// Limit the address views of the pane's trace to one instruction, or (`None`) show all.
    Only {
        pane: usize,
        filter: Option<InstFilter>,
    },
    /// The set view's measure.
    SetMetric(SetMetric),
    /// The miss view's table and order.
    MissOptions(MissOptions),
}

/// A linked lookup's identity: source pane, source generation, source request, this pane's
/// generation.
pub type LinkKey = (usize, u64, usize, u64);

/// A request hovered in one pane, to follow into the others.
#[derive(Clone)]
pub struct LinkedHover {
    pub pane: usize,
    pub generation: u64,
    pub request: usize,
    pub data: Arc<SimData>,
}

/// What a pane's view draws: the pane's result and trace, and the choices the views share.
pub struct PaneCx<'a> {
    pub pane: usize,
    /// The result's generation ([`crate::Pane::generation`]).
    pub generation: u64,
    /// The run it comes from ([`crate::Pane::run`]).
    pub run: u64,
    pub data: &'a Arc<SimData>,
    pub trace: &'a Arc<TraceData>,
    /// Panes showing the same trace share zoom and cursor through this id.
    pub link: egui::Id,
    pub colour: ColourBy,
    pub set_metric: SetMetric,
    pub miss: MissOptions,
    /// The request hovered in another pane of the same trace in the last frame.
    pub linked_hover: Option<LinkedHover>,
    /// The instruction the address view is limited to (chosen in the miss table).
    pub only: Option<InstFilter>,
    /// Asks the UI for a frame: what a view's jobs call when they finish.
    pub wake: &'a Wake,
}

/// What a view's finished jobs are checked against: the pane's newest result and its trace.
pub struct Polled<'a> {
    /// The result's generation ([`crate::Pane::generation`]).
    pub generation: u64,
    /// The run it comes from ([`crate::Pane::run`]).
    pub run: u64,
    pub data: Option<&'a SimData>,
    /// The pane's trace, by identity ([`crate::pane_trace::trace_id`]); `None` before one.
    pub trace: Option<usize>,
}

/// A view of one pane's result. A pane holds one of each ([`super::ENTRIES`]); the app
/// reaches a view of a known type with [`crate::Pane::view`].
pub trait PaneView: std::any::Any {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &PaneCx) -> Vec<Command>;
    /// Takes the results of this view's finished jobs (called every frame, the view shown
    /// or not); returns an error for the status bar, if one failed.
    fn poll(&mut self, _pane: &Polled) -> Option<String> {
        None
    }
    /// Whether a job this view started still runs.
    fn busy(&self) -> bool {
        false
    }
    /// The jobs of this view that the status bar shows while they run (label and progress,
    /// whose `cancel` stops it): the long ones.
    fn running(&self) -> Vec<(&str, &Arc<Progress>)> {
        Vec::new()
    }
}
