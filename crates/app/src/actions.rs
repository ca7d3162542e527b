//! What menus, shortcuts and buttons ask for, carried out after drawing: file dialogs,
//! opening, saving and exporting.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::files::{Browser, BrowserAction, DialogPoll, NativeDialog, Purpose};
use super::job::{Job, JobError};

use super::*;

impl WarpscopeApp {
    pub(super) fn dialogs(&mut self, ctx: &egui::Context) {
        if let Some(d) = &self.dialog {
            match d.poll() {
                DialogPoll::Waiting => {
                    ctx.request_repaint_after(std::time::Duration::from_millis(100))
                }
                DialogPoll::Chosen(p) => {
                    let purpose = d.purpose;
                    self.dialog = None;
                    self.actions.push(Action::Chosen(purpose, p));
                }
                DialogPoll::Picked { name, bytes } => {
                    let purpose = d.purpose;
                    self.dialog = None;
                    self.actions.push(Action::Picked(purpose, name, bytes));
                }
                DialogPoll::Refused(why) => {
                    self.dialog = None;
                    self.status = Status::Error(why);
                }
                DialogPoll::Cancelled => self.dialog = None,
                DialogPoll::Unavailable => {
                    let purpose = d.purpose;
                    self.dialog = None;
                    self.in_app_dialogs = true;
                    self.browser = Some(Browser::new(purpose, self.start_dir(purpose)));
                }
            }
        }
        if let Some(b) = &mut self.browser {
            match b.show(ctx) {
                BrowserAction::None => {}
                BrowserAction::Closed => self.browser = None,
                BrowserAction::Chosen(p) => {
                    let purpose = b.purpose;
                    self.browser = None;
                    self.actions.push(Action::Chosen(purpose, p));
                }
            }
        }
    }

    /// The folder a file dialog opens in: the last one used; for saving, the first of the
    /// last folder, the current folder, the home folder and the temporary folder that can be
    /// written (a trace's folder is often read-only).
    pub(crate) fn start_dir(&self, purpose: Purpose) -> PathBuf {
        let last = self.settings.last_dir.clone().filter(|d| d.is_dir());
        let cwd = std::env::current_dir().ok();
        if !purpose.saves() {
            return last.or(cwd).unwrap_or_else(|| PathBuf::from("."));
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        [last, cwd, home, Some(std::env::temp_dir())]
            .into_iter()
            .flatten()
            .find(|d| files::writable(d))
            .unwrap_or_else(|| PathBuf::from("."))
    }

    pub(super) fn act(&mut self, a: Action, ctx: &egui::Context, now: f64) {
        match a {
            Action::Choose(purpose) => {
                if let Some(why) = purpose.unavailable() {
                    self.status = Status::Error(format!("{}: {why}", purpose.title()));
                } else if cfg!(target_arch = "wasm32") {
                    #[cfg(target_arch = "wasm32")]
                    self.choose_in_page(purpose, ctx);
                } else if self.in_app_dialogs {
                    self.browser = Some(Browser::new(purpose, self.start_dir(purpose)));
                } else if self.dialog.is_none() {
                    self.dialog = Some(NativeDialog::open(purpose, Some(&self.start_dir(purpose))));
                }
            }
            Action::Open(p) => self.open(p),
            Action::OpenTruncated(p) => self.load(p, true),
            Action::Generate => {
                let (k, p) = (
                    self.settings.generator.clone(),
                    self.settings.generator_params.clone(),
                );
                self.generate(k, p);
            }
            Action::GenerateInPane(i) => {
                let (k, p) = (
                    self.settings.generator.clone(),
                    self.settings.generator_params.clone(),
                );
                self.generate_in_pane(i, k, p);
            }
            Action::ShareTrace(i) => self.share_trace(i, now),
            Action::AddPane => self.add_pane(now),
            Action::Lesson(name) => self.open_lesson(&name, now),
            Action::RemovePane(i) => self.remove_pane(i),
            Action::Chosen(purpose, path) => {
                if let Some(d) = path.parent() {
                    if d.is_dir() {
                        self.settings.last_dir = Some(d.to_path_buf());
                    }
                }
                self.chosen(purpose, path, ctx, now);
            }
            Action::Picked(purpose, name, bytes) => self.picked(purpose, name, bytes, now),
            Action::View(c) => self.view_command(c),
            Action::Cancel(p) => p.cancel(),
            Action::GenerateAnyway(q) => match q.pane {
                Some(i) => self.generate_in_pane_limited(i, q.kernel, q.params, None),
                None => self.generate_limited(q.kernel, q.params, None, false),
            },
            Action::EditConfig(i, edit) => {
                let edit = *edit;
                let changed = edit.changed;
                self.settings.panes[i] = (edit.preset, edit.config);
                if changed {
                    self.panes[i].dirty_since = Some(now);
                    self.panes[i].stale = self.panes[i].result.is_some();
                }
            }
        }
    }

    pub(super) fn chosen(
        &mut self,
        purpose: Purpose,
        path: PathBuf,
        ctx: &egui::Context,
        now: f64,
    ) {
        let a = self.settings.active;
        match purpose {
            Purpose::OpenTrace => self.open(path),
            Purpose::OpenPaneTrace(i) => self.open_in_pane(i, path),
            Purpose::OpenSweep => self.sweep.open_file(&path),
            Purpose::LoadConfig => match config::file::load(&path) {
                Ok(c) => {
                    self.settings.panes[a] = (file_name(&path), c);
                    self.panes[a].dirty_since = Some(now - DEBOUNCE);
                    self.status = Status::Info(format!("Loaded {}", path.display()));
                }
                Err(e) => self.status = Status::Error(e.to_string()),
            },
            Purpose::SaveConfig => match config::file::save(&path, &self.settings.panes[a].1) {
                Ok(()) => self.status = Status::Info(format!("Saved {}", path.display())),
                Err(e) => self.status = Status::Error(e.to_string()),
            },
            Purpose::ExportView => {
                self.pending_png = Some(path);
                self.request_png(ctx);
            }
            Purpose::ExportReport => self.export_report(path),
            Purpose::ExportRequests => self.export_requests(path),
        }
    }

    /// A file the browser handed over (the web build): a trace to open, or a configuration.
    fn picked(&mut self, purpose: Purpose, name: String, bytes: Arc<[u8]>, now: f64) {
        let a = self.settings.active;
        match purpose {
            Purpose::OpenTrace => self.open_bytes(name, bytes),
            Purpose::OpenPaneTrace(i) => {
                let label = format!("Loading {name} for pane {}", i + 1);
                if self.start_pane_job(i, label, worker::Source::Bytes { name, bytes }) {
                    self.panes[i].trace_job = None;
                }
            }
            Purpose::LoadConfig => {
                let text = String::from_utf8_lossy(&bytes);
                match config::file::load_text(&text, Path::new(&name)) {
                    Ok(c) => {
                        self.settings.panes[a] = (name.clone(), c);
                        self.panes[a].dirty_since = Some(now - DEBOUNCE);
                        self.status = Status::Info(format!("Loaded {name}"));
                    }
                    Err(e) => self.status = Status::Error(e.to_string()),
                }
            }
            _ => {
                self.status = Status::Error(format!("{}: not from a file's bytes", purpose.title()))
            }
        }
    }

    /// Asks the backend for a screenshot and writes the view area of it to the pending path.
    pub(super) fn request_png(&mut self, ctx: &egui::Context) {
        let Some(path) = self.pending_png.take() else {
            return;
        };
        let rect = self.view_rect;
        let ppp = ctx.pixels_per_point();
        let (job, done) = Job::pending(format!("Exporting {}", path.display()), &self.wake);
        self.tasks.push(job);
        ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
            egui::ScreenshotCallback::new(move |img: Arc<egui::ColorImage>| {
                let png = png_bytes(&img, rect, ppp);
                // The web build offers the file as a download named as the path.
                #[cfg(target_arch = "wasm32")]
                let written = png.and_then(|b| {
                    super::download::offer(&path.display().to_string(), &b, "image/png")
                });
                #[cfg(not(target_arch = "wasm32"))]
                let written = png.and_then(|b| std::fs::write(&path, b).map_err(|e| e.to_string()));
                let wrote = if cfg!(target_arch = "wasm32") {
                    "Downloaded"
                } else {
                    "Wrote"
                };
                done.finish(match written {
                    Ok(()) => Ok(format!("{wrote} {}", path.display())),
                    Err(e) => Err(JobError::Failed(format!("{}: {e}", path.display()))),
                });
            }),
        ));
    }

    /// Writes the active pane's report with the exporter the file name picks, as
    /// `sim --export-summary` does (on a worker).
    pub fn export_report(&mut self, path: PathBuf) {
        let active = self.settings.active;
        let Some(r) = self.panes[active].result.clone() else {
            self.status = Status::Error("nothing to export yet: wait for the simulation".into());
            return;
        };
        let source = self
            .pane_trace(active)
            .map(|t| t.label.clone())
            .unwrap_or_default();
        let label = format!("Exporting {}", path.display());
        self.tasks.push(Job::spawn(label, &self.wake, move |_| {
            let files = warpscope_core::report::export(&r.report, &source, &path)
                .map_err(|e| JobError::Failed(format!("exporting {}: {e}", path.display())))?;
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            Ok(format!("Wrote {}", names.join(" and ")))
        }));
    }

    /// A build without polars writes no table to a path: the page offers the request table
    /// as a CSV download instead (`download.rs`).
    #[cfg(not(feature = "desktop"))]
    pub(crate) fn export_requests(&mut self, path: PathBuf) {
        self.status = Status::Error(format!(
            "{}: this build offers the request table as a CSV download only",
            path.display()
        ));
    }

    /// Re-runs the active pane while writing every request to a table (on a worker).
    #[cfg(feature = "desktop")]
    pub(crate) fn export_requests(&mut self, path: PathBuf) {
        let Some(trace) = self.pane_trace(self.settings.active) else {
            return;
        };
        let cfg = self.settings.panes[self.settings.active].1.clone();
        let label = format!("Exporting {}", path.display());
        self.tasks
            .push(Job::spawn(label, &self.wake, move |progress| {
                let failed =
                    |e: String| JobError::Failed(format!("exporting {}: {e}", path.display()));
                let mut ex =
                    warpscope_core::sim::RequestExporter::create(&path, worker::Relay(progress))
                        .map_err(|e| failed(e.to_string()))?;
                let run = warpscope_shell::timed::simulate(&cfg, &trace.trace.kernels, &mut ex, 0);
                if let Some(e) = ex.error() {
                    return Err(failed(e.to_string()));
                }
                match run {
                    Err(warpscope_core::sim::SimError::Cancelled) => {
                        return Err(JobError::Cancelled)
                    }
                    r => r.map_err(|e| failed(worker::error_chain(&e)))?,
                };
                let (rows, _) = ex.finish().map_err(|e| failed(e.to_string()))?;
                Ok(format!("Wrote {} ({rows} requests)", path.display()))
            }));
    }
}

/// Writes the part of a screenshot inside `rect` (points) as a PNG.
pub fn write_png(
    path: &Path,
    img: &egui::ColorImage,
    rect: egui::Rect,
    ppp: f32,
) -> Result<(), String> {
    let png = png_bytes(img, rect, ppp)?;
    std::fs::write(path, png).map_err(|e| e.to_string())
}

/// The part of a screenshot inside `rect` (points; all of it when `rect` is empty or not
/// finite), `ppp` pixels a point, encoded as a PNG.
pub fn png_bytes(img: &egui::ColorImage, rect: egui::Rect, ppp: f32) -> Result<Vec<u8>, String> {
    let [w, h] = img.size;
    let r = if rect.is_finite() && rect.width() > 0.0 {
        egui::Rect::from_min_max(
            (rect.min.to_vec2() * ppp).to_pos2(),
            (rect.max.to_vec2() * ppp).to_pos2(),
        )
    } else {
        egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(w as f32, h as f32))
    };
    let x0 = (r.min.x.max(0.0) as usize).min(w);
    let y0 = (r.min.y.max(0.0) as usize).min(h);
    let x1 = (r.max.x.max(0.0) as usize).min(w);
    let y1 = (r.max.y.max(0.0) as usize).min(h);
    if x1 <= x0 || y1 <= y0 {
        return Err("the view area is empty".into());
    }
    let mut rgba = Vec::with_capacity((x1 - x0) * (y1 - y0) * 4);
    for y in y0..y1 {
        for x in x0..x1 {
            rgba.extend_from_slice(&img.pixels[y * w + x].to_array());
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, (x1 - x0) as u32, (y1 - y0) as u32);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgba).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    Ok(out)
}
