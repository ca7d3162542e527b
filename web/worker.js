// Warpscope's worker: the same module as the page, started by the page to load or generate a
// trace so that the page keeps drawing meanwhile (crates/app/src/remote/page.rs). The page's
// first message brings the module it compiled, which the worker instantiates (no second
// compile); the next brings one request. The page ends the worker when the answer has come
// or the job is cancelled.
import init, { worker_run } from "./warpscope_web.js";

let ready = null;
self.onmessage = async (event) => {
  try {
    if (ready === null) {
      ready = init({ module_or_path: event.data.module });
    }
    await ready;
    if (event.data.request !== undefined) {
      worker_run(event.data);
    }
  } catch (e) {
    self.postMessage({ kind: "failed", message: String(e) });
  }
};
