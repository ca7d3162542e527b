//! The web build's entry point: the page (`web/index.html`) loads this module, which starts
//! the app (`warpscope_app::run_web`) in the page's canvas; the page's worker
//! (`web/worker.js`) loads it too, to load and generate traces off the page's thread
//! (`worker_run`). It holds nothing else: the app is
//! the desktop app's code, built without what a browser cannot run (docs/web.md). On other
//! targets it is empty, so the workspace builds as before.

#[cfg(target_arch = "wasm32")]
mod page {
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    /// The id of the page's canvas.
    const CANVAS: &str = "warpscope";

    /// Runs when the module is loaded: finds the canvas and starts the app in it; a failure
    /// is written into the page, where the user sees it, and to the console.
    #[wasm_bindgen(start)]
    pub fn start() {
        // The page's worker (`web/worker.js`) loads this module too: it has no window, and
        // only answers what the page asks ([`worker_run`]).
        if web_sys::window().is_none() {
            return;
        }
        wasm_bindgen_futures::spawn_local(async {
            match run().await {
                Ok(()) => {
                    if let Some(el) = status() {
                        el.remove();
                    }
                }
                Err(e) => {
                    web_sys::console::error_1(&e.clone().into());
                    if let Some(el) = status() {
                        el.set_text_content(Some(&format!("Warpscope could not start: {e}")));
                    }
                }
            }
        });
    }

    async fn run() -> Result<(), String> {
        let canvas = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(CANVAS))
            .ok_or_else(|| format!("the page has no element with id `{CANVAS}`"))?
            .dyn_into::<web_sys::HtmlCanvasElement>()
            .map_err(|_| format!("`{CANVAS}` is not a canvas"))?;
        warpscope_app::run_web(canvas).await
    }

    /// The page's worker's entry: runs one request of the page (a load or a generation) and
    /// posts the answer (`warpscope_app::serve_worker`).
    #[wasm_bindgen]
    pub fn worker_run(message: JsValue) {
        warpscope_app::serve_worker(message);
    }

    /// The page's loading message.
    fn status() -> Option<web_sys::Element> {
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("status"))
    }
}
