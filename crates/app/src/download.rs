//! Saving in the web build: what the desktop writes to a path chosen in a dialog (the
//! configuration, the report, the PNG of the view) the page offers as a download of the same
//! bytes, named as the desktop's dialog names it (`files::Purpose::default_name`); the
//! browser puts it in the user's downloads or asks where. Opening goes through the browser's
//! picker (`files.rs`). Only the web build has this module.

use std::path::{Path, PathBuf};

use wasm_bindgen::JsCast;

use super::files::Purpose;
use super::*;

/// Offers `bytes` as a download named `name`, of type `mime`.
pub fn offer(name: &str, bytes: &[u8], mime: &str) -> Result<(), String> {
    let js = |e: wasm_bindgen::JsValue| format!("{name}: the browser refused the download ({e:?})");
    let parts = js_sys::Array::new();
    parts.push(&js_sys::Uint8Array::from(bytes));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob =
        web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(js)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| format!("{name}: the page has no document"))?;
    let link: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(js)?
        .dyn_into()
        .map_err(|_| format!("{name}: the page made no link"))?;
    link.set_href(&url);
    link.set_download(name);
    link.click();
    // The click has started the download, which holds the blob until it is done.
    web_sys::Url::revoke_object_url(&url).map_err(js)
}

impl WarpscopeApp {
    /// A menu's file choice in the page: opening shows the browser's picker (a picker left
    /// open without an answer is replaced), saving offers a download.
    pub(super) fn choose_in_page(&mut self, purpose: Purpose, ctx: &egui::Context) {
        if !purpose.saves() {
            self.dialog = Some(files::NativeDialog::open(purpose, None));
            return;
        }
        let name = purpose.default_name();
        let a = self.settings.active;
        let bytes = match purpose {
            Purpose::SaveConfig => {
                let format = config::file::ConfigFormat::of(Path::new(name));
                config::file::to_text(&self.settings.panes[a].1, format)
                    .map(String::into_bytes)
                    .map_err(|e| format!("{name}: {e}"))
            }
            Purpose::ExportReport => match &self.panes[a].result {
                Some(r) => {
                    let mut out = Vec::new();
                    warpscope_core::report::json::write(&mut out, &r.report)
                        .map(|()| out)
                        .map_err(|e| format!("{name}: {e}"))
                }
                None => Err("nothing to export yet: wait for the simulation".into()),
            },
            Purpose::ExportView => {
                // The screenshot comes in a later frame; its callback offers the PNG.
                self.pending_png = Some(PathBuf::from(name));
                self.request_png(ctx);
                return;
            }
            // The pane's run again, writing every request (as the desktop's export does), in
            // pieces between frames; the last offers the download.
            Purpose::ExportRequests => match self.pane_trace(a) {
                Some(t) => {
                    let cfg = self.settings.panes[a].1.clone();
                    let mut pieces = crate::requests_csv::requests_csv(cfg, t);
                    let job = crate::sliced::Slices::job(
                        format!("Exporting {name}"),
                        &self.wake,
                        move |p: &crate::job::Progress| {
                            let bytes = pieces(p)?;
                            Some(bytes.and_then(|b| {
                                offer(name, &b, "text/csv")
                                    .map(|()| format!("Downloaded {name}"))
                                    .map_err(crate::job::JobError::Failed)
                            }))
                        },
                    );
                    self.tasks.push(job);
                    return;
                }
                None => Err("nothing to export yet: no trace".into()),
            },
            _ => Err(format!("{}: not in the web page", purpose.title())),
        };
        let mime = match purpose {
            Purpose::ExportReport => "application/json",
            Purpose::ExportRequests => "text/csv",
            _ => "text/plain",
        };
        self.status = match bytes.and_then(|b| offer(name, &b, mime)) {
            Ok(()) => Status::Info(format!("Downloaded {name}")),
            Err(e) => Status::Error(e),
        };
    }
}
