//! Loading and generating traces away from the page's UI thread. A browser page starts no
//! threads, and a trace's reader or generator pushes what it reads to its receiver to the end,
//! so it cannot be run a slice at a time between frames as a simulation is (`sliced.rs`);
//! in the web build it runs in a Web Worker instead (`page.rs`): a second instance of the same
//! module, in a memory of its own, spoken to through `wire.rs`. Elsewhere [`load_job`] runs
//! the load on a thread, as every job does.

use super::job::{Job, Wake};
use super::worker::{self, Loaded, Source};

#[cfg(target_arch = "wasm32")]
pub mod page;
#[cfg(any(test, target_arch = "wasm32"))]
pub mod wire;

/// A job that loads or generates the trace `source` names: in a page's worker in the web
/// build (a file there is only ever bytes), on a thread of its own elsewhere.
pub fn load_job(label: String, wake: &Wake, source: Source) -> Job<Loaded> {
    #[cfg(target_arch = "wasm32")]
    if let Some((request, bytes)) = wire::request(&source) {
        match page::start(&label, wake, request, bytes) {
            Ok(job) => return job,
            // No worker (a page opened from a file://, or a browser without module
            // workers): the work runs on the page's thread, as it did before.
            Err(e) => page::log(&format!(
                "Warpscope: no worker for this job ({e}); it runs on the page"
            )),
        }
    }
    Job::spawn(label, wake, move |p| worker::load_source(source, p))
}
