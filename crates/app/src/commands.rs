//! Carrying out what the views ask for ([`Command`]), after drawing: each job a view asks
//! for goes into its owner's slot (replacing, and so cancelling, an older one), and each
//! choice into the settings. Finished jobs come back through [`WarpscopeApp::view_jobs`].

use super::data::Selection;
use super::job::{take_finished, Job, JobError};
use super::views::command::LinkKey;
use super::views::{linked_request, Command};
use super::*;

/// The jobs a pane's views asked for.
#[derive(Default)]
pub struct PaneJobs {
    /// Drawing the address view's raster (a newer request replaces, and so stops, it).
    pub raster: Option<Job<raster::Raster>>,
    /// Summarizing the address view's box selection.
    pub select: Option<Job<(Selection, u64)>>,
    /// Finding the request linked to one hovered in another pane.
    pub link: Option<Job<(LinkKey, Option<usize>)>>,
    /// Measuring the performance model's inputs of the pane's trace (its `Arc`'s address).
    pub measure: Option<Job<(usize, views::performance::Measurements)>>,
    /// Explaining a request: (result generation, request, explanation).
    pub explain: Option<Job<views::address_explain::Explained>>,
    /// The step-through view's state at a step.
    pub snapshot: Option<Job<views::step::Shown>>,
}

impl PaneJobs {
    /// No job of the pane's views runs.
    pub fn is_empty(&self) -> bool {
        self.raster.is_none()
            && self.select.is_none()
            && self.link.is_none()
            && self.measure.is_none()
            && self.explain.is_none()
            && self.snapshot.is_none()
    }
}

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
            Command::Raster { pane, request } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    p.jobs.raster = Some(Job::spawn(
                        format!("Drawing pane {}", pane + 1),
                        &self.wake,
                        move |progress| raster::draw(request, progress),
                    ));
                }
            }
            Command::Select {
                pane,
                generation,
                x,
                y,
                data,
            } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    p.jobs.select = Some(Job::spawn(
                        format!("Summarizing the selection of pane {}", pane + 1),
                        &self.wake,
                        move |_| Ok((data.select(x, y), generation)),
                    ));
                }
            }
            Command::Link { pane, lookup } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    p.jobs.link = Some(Job::spawn(
                        "Finding the linked request",
                        &self.wake,
                        move |_| {
                            let found = linked_request(&lookup.src, lookup.request, &lookup.dst);
                            Ok((lookup.key, found))
                        },
                    ));
                }
            }
            Command::Explain {
                pane,
                generation,
                request,
                trace,
                config,
            } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    p.jobs.explain = Some(Job::spawn(
                        format!("Explaining request {request} of pane {}", pane + 1),
                        &self.wake,
                        move |progress| {
                            views::address_explain::explain(
                                &trace, &config, generation, request, progress,
                            )
                        },
                    ));
                }
            }
            Command::Snapshot {
                pane,
                generation,
                request,
                trace,
                config,
            } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    p.jobs.snapshot = Some(Job::spawn(
                        format!("Stepping to request {request} in pane {}", pane + 1),
                        &self.wake,
                        move |progress| {
                            views::step::snapshot(&trace, &config, generation, request, progress)
                        },
                    ));
                }
            }
            Command::Measure { pane, trace, gpu } => {
                if let Some(p) = self.panes.get_mut(pane) {
                    let id = Arc::as_ptr(&trace) as usize;
                    p.jobs.measure = Some(Job::spawn(
                        format!("Measuring the model's inputs of pane {}", pane + 1),
                        &self.wake,
                        move |p| Ok((id, views::performance::measure(&trace, &gpu, p)?)),
                    ));
                }
            }
            Command::SetMetric(m) => self.settings.set_metric = m,
            Command::MissOptions(o) => self.settings.misses = o,
            Command::Analyze => {
                if let Some(t) = self.trace.clone() {
                    self.comm.cancelled = false;
                    self.comm.failed = None;
                    self.comm_job = Some(Job::spawn(
                        "Analyzing communication",
                        &self.wake,
                        move |p| worker::communicate(&t, p),
                    ));
                }
            }
            Command::CancelAnalysis => {
                if let Some(j) = &self.comm_job {
                    j.cancel();
                }
            }
            Command::Density(want) => {
                // Replaces (and so cancels) the map of an earlier selection.
                self.density_job = Some(Job::spawn(
                    "Preparing the density map",
                    &self.wake,
                    move |_| {
                        Ok(Box::new(views::comm::density(
                            &want.report,
                            want.launches,
                            want.counts,
                        )))
                    },
                ));
            }
        }
    }

    /// Hands the views the results of the jobs they asked for. Called every frame.
    pub(super) fn view_jobs(&mut self) {
        if let Some(r) = take_finished(&mut self.comm_job) {
            match r {
                Ok(a) => self.comm.analyzed(a),
                Err(JobError::Cancelled) => self.comm.cancelled = true,
                Err(JobError::Failed(e)) => {
                    // Shown in the view, which does not start it again until asked.
                    self.comm.failed = Some(e.clone());
                    self.status = Status::Error(e);
                }
            }
        }
        match take_finished(&mut self.density_job) {
            Some(Ok(d)) => self.comm.density_arrived(d),
            Some(Err(JobError::Failed(e))) => self.status = Status::Error(e),
            _ => {}
        }
        for p in self.panes.iter_mut() {
            // A summary of an older result is of no use, a raster only of an earlier preview
            // of the same run (a failed raster keeps the markers).
            if let Some(Ok(r)) = take_finished(&mut p.jobs.raster) {
                let data = p.result.as_deref();
                p.address.raster_arrived(r, p.generation, p.run, data);
            }
            if let Some(Ok((s, generation))) = take_finished(&mut p.jobs.select) {
                if p.generation == generation {
                    p.address.selection_arrived(s, generation);
                }
            }
            if let Some(Ok((key, found))) = take_finished(&mut p.jobs.link) {
                p.address.link_arrived(key, found);
            }
            match take_finished(&mut p.jobs.explain) {
                Some(Ok(e)) if e.generation == p.generation => p.address.explained(e),
                Some(Err(JobError::Failed(why))) => p.address.explain_failed(why),
                _ => {}
            }
            if let Some(Ok(s)) = take_finished(&mut p.jobs.snapshot) {
                p.step.arrived(s);
            }
            if let Some(Ok((trace, m))) = take_finished(&mut p.jobs.measure) {
                p.performance.measured(trace, m);
            }
        }
    }
}
