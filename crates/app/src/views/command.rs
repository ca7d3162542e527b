//! What a view asks of the app. Views draw and return [`Command`]s; the app carries them out
//! after drawing (it starts the jobs, stores the choices), so no draw function touches a job,
//! the worker or the app's settings. What every pane view is handed is one [`PaneCx`].

use std::sync::Arc;

use super::comm::DensityRequest;
use super::misses::MissOptions;
use super::SetMetric;
use crate::data::{InstFilter, SimData, TraceData};
use crate::raster::{ColourBy, RasterRequest};

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
    /// Draw a density raster of the address view off the UI thread.
    Raster { pane: usize, request: RasterRequest },
    /// Summarize the requests inside a box of the address view off the UI thread.
    Select {
        pane: usize,
        generation: u64,
        x: [f64; 2],
        y: [f64; 2],
        data: Arc<SimData>,
    },
    /// Find, off the UI thread, the request of this pane's result serving the same access as
    /// a request hovered in another pane.
    Link { pane: usize, lookup: LinkLookup },
    /// The set view's measure.
    SetMetric(SetMetric),
    /// The miss view's table and order.
    MissOptions(MissOptions),
    /// Start the communication analysis of the shared trace.
    Analyze,
    /// Stop the communication analysis.
    CancelAnalysis,
    /// Prepare the communication view's density map of a selection off the UI thread.
    Density(DensityRequest),
    /// Explain why request `request` of the pane's result `generation` hit or missed, off
    /// the UI thread (the core's `explain` re-runs the pane's simulation).
    Explain {
        pane: usize,
        generation: u64,
        request: usize,
        trace: Arc<TraceData>,
        config: warpscope_core::config::SimConfig,
    },
    /// The step-through view's state at request `request` of the pane's result `generation`,
    /// off the UI thread (the core's `explain::step::snapshot`).
    Snapshot {
        pane: usize,
        generation: u64,
        request: usize,
        trace: Arc<TraceData>,
        config: warpscope_core::config::SimConfig,
    },
    /// Measure the performance model's inputs of a pane's trace off the UI thread.
    Measure {
        pane: usize,
        trace: Arc<TraceData>,
        gpu: warpscope_core::analyze::GpuModel,
    },
}

/// A linked-hover lookup: which access, and in which result to find it.
pub struct LinkLookup {
    pub key: LinkKey,
    pub src: Arc<SimData>,
    pub request: usize,
    pub dst: Arc<SimData>,
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
}

/// A view of one pane's result.
pub trait PaneView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &PaneCx) -> Vec<Command>;
}
