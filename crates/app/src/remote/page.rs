//! The web build's worker (`web/worker.js`, the same module started in a Web Worker): the
//! page gives each load or generation to a worker ([`start`]: the one kept from the last job,
//! or a new one), sends it the request and a file's bytes, and takes its progress and answer
//! as they come; a job cancelled or dropped ends its worker, so Cancel stops the work at once.
//! A worker that answered is kept for the next job if it holds little memory (its code is
//! then compiled to its fastest, and it starts at once), ended otherwise (a WebAssembly
//! memory does not shrink). In the worker, [`serve`] runs the request as the desktop's
//! thread would (`worker::load_source`) and sends back the answer, each kernel's columns as
//! bytes whose buffers are handed over, not copied; the page copies them into its memory and
//! checks them a piece at a time between frames ([`receive`]).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use js_sys::{Array, Object, Reflect, Uint8Array};
use warpscope_core::trace::{Columns, KernelParts};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, ErrorEvent, MessageEvent, Worker, WorkerOptions};

use super::wire::{answer, result, source, Answer, Rows};
use crate::job::{Completion, Job, JobError, Progress, Wake};
use crate::worker::{self, Loaded};

/// The worker's script, beside the page (`web/build.sh` puts it there).
const SCRIPT: &str = "./worker.js";
/// The most memory a worker may hold to be kept for the next job once it has answered (it
/// starts that one at once, its code already compiled to its fastest): a worker that loaded a
/// large trace holds that memory until it ends.
const KEEP_BYTES: f64 = 256.0 * 1024.0 * 1024.0;
/// The least time between two progress messages of a worker.
const PROGRESS_MS: u64 = 100;

/// A worker at work, and what answers its messages (kept as long as it may send any).
struct Running {
    worker: Worker,
    /// Where it stands once its answer has come.
    after: Cell<After>,
    _message: Closure<dyn FnMut(MessageEvent)>,
    _error: Closure<dyn FnMut(ErrorEvent)>,
}

/// What becomes of a worker that has answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// It has not answered.
    Working,
    /// It holds little memory: the next job takes it once its job lets go of it.
    Kept,
    /// It has been ended (it held much memory).
    Ended,
}

thread_local! {
    static RUNNING: RefCell<HashMap<u64, Running>> = RefCell::new(HashMap::new());
    static NEXT: Cell<u64> = const { Cell::new(0) };
    static IDLE: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// Ends its worker when dropped (with its job, or when the job is cancelled).
struct Ends(u64);

impl Drop for Ends {
    fn drop(&mut self) {
        let Some(r) = RUNNING.with(|m| m.borrow_mut().remove(&self.0)) else {
            return;
        };
        match r.after.get() {
            After::Working => r.worker.terminate(),
            After::Ended => {}
            After::Kept => {
                r.worker.set_onmessage(None);
                r.worker.set_onerror(None);
                if let Some(old) = IDLE.with(|i| i.borrow_mut().replace(r.worker)) {
                    old.terminate();
                }
            }
        }
    }
}

/// A new worker, the module on its way to it.
fn new_worker() -> Result<Worker, String> {
    let options = WorkerOptions::new();
    options.set_type(web_sys::WorkerType::Module);
    let worker = Worker::new_with_options(SCRIPT, &options).map_err(|e| text(&e))?;
    let msg = Object::new();
    // The module this page compiled: the worker instantiates it without compiling it again.
    set(&msg, "module", &wasm_bindgen::module());
    worker.post_message(&msg).map_err(|e| text(&e))?;
    Ok(worker)
}

/// Writes to the page's console.
pub fn log(message: &str) {
    web_sys::console::log_1(&message.into());
}

fn text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Starts a worker on `request` (with a file's `bytes`): the job that takes its answer.
pub fn start(
    label: &str,
    wake: &Wake,
    request: String,
    bytes: Option<Arc<[u8]>>,
) -> Result<Job<Loaded>, String> {
    let worker = match IDLE.with(|i| i.borrow_mut().take()) {
        Some(w) => w,
        None => new_worker()?,
    };
    let id = NEXT.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    let (job, done) = Job::pending(label, wake);
    let progress = job.progress().clone();
    // Its progress messages ask for a frame each (at most every PROGRESS_MS).
    progress.set_wakes();
    let done: Rc<RefCell<Option<Completion<Loaded>>>> = Rc::new(RefCell::new(Some(done)));
    let finish = {
        let done = done.clone();
        move |r| {
            if let Some(d) = done.borrow_mut().take() {
                d.finish(r);
            }
        }
    };
    let message = {
        let (wake, finish) = (wake.clone(), finish.clone());
        Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            let data = e.data();
            let kind = Reflect::get(&data, &"kind".into())
                .ok()
                .and_then(|k| k.as_string());
            match kind.as_deref() {
                Some("progress") => {
                    let at = |key: &str| {
                        Reflect::get(&data, &key.into())
                            .ok()
                            .and_then(|v| v.as_f64())
                            .unwrap_or(0.0) as u64
                    };
                    progress.report(at("done"), at("total"));
                    wake();
                }
                Some("answer") => {
                    // Its work is done: a worker that holds much memory lets go of it now, not
                    // when the rows are in; one that holds little is kept for the next job.
                    let memory = Reflect::get(&data, &"memory".into())
                        .ok()
                        .and_then(|m| m.as_f64())
                        .unwrap_or(f64::INFINITY);
                    RUNNING.with(|m| {
                        if let Some(r) = m.borrow().get(&id) {
                            if memory <= KEEP_BYTES {
                                r.after.set(After::Kept);
                            } else {
                                r.worker.terminate();
                                r.after.set(After::Ended);
                            }
                        }
                    });
                    let (finish, progress, wake) = (finish.clone(), progress.clone(), wake.clone());
                    wasm_bindgen_futures::spawn_local(async move {
                        finish(receive(&data, &progress, &wake).await);
                    });
                }
                _ => finish(Err(JobError::Failed(format!(
                    "the page's worker failed: {}",
                    Reflect::get(&data, &"message".into())
                        .ok()
                        .and_then(|m| m.as_string())
                        .unwrap_or_else(|| "it said nothing".into())
                )))),
            }
        })
    };
    let error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
        finish(Err(JobError::Failed(format!(
            "the page's worker failed: {}",
            e.message()
        ))))
    });
    worker.set_onmessage(Some(message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(error.as_ref().unchecked_ref()));
    let msg = Object::new();
    set(&msg, "request", &request.into());
    let transfer = Array::new();
    if let Some(b) = bytes {
        let array = Uint8Array::from(&b[..]);
        transfer.push(&array.buffer());
        set(&msg, "bytes", &array);
    }
    worker
        .post_message_with_transfer(&msg, &transfer)
        .map_err(|e| text(&e))?;
    RUNNING.with(|m| {
        m.borrow_mut().insert(
            id,
            Running {
                worker,
                after: Cell::new(After::Working),
                _message: message,
                _error: error,
            },
        )
    });
    Ok(job.guarded(Box::new(Ends(id))))
}

fn set(o: &Object, key: &str, value: &JsValue) {
    // Setting a property of a plain object does not fail.
    let _ = Reflect::set(o, &key.into(), value);
}

/// How long the page copies or checks an answer's rows before it lets the browser draw.
const PIECE_MS: f64 = 12.0;
/// Rows copied or checked between two looks at the clock.
const ROWS: u32 = 1 << 18;

/// Lets the browser draw a frame and answer input before the work goes on.
async fn yield_to_page() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let set = web_sys::window().map(|w| w.set_timeout_with_callback(&resolve));
        if !matches!(set, Some(Ok(_))) {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// Work done in pieces of [`PIECE_MS`], the page drawing (and the progress shown) between.
struct Pieces<'a> {
    since: f64,
    done: u64,
    total: u64,
    progress: &'a Progress,
    wake: &'a Wake,
}

impl Pieces<'_> {
    /// Counts `n` more done; lets the page draw if the piece has run its time. Cancelled, the
    /// work stops here.
    async fn done(&mut self, n: u64) -> Result<(), JobError> {
        self.done += n;
        if js_sys::Date::now() - self.since > PIECE_MS {
            self.progress.report(self.done, self.total);
            (self.wake)();
            yield_to_page().await;
            self.since = js_sys::Date::now();
        }
        match self.progress.cancelled() {
            true => Err(JobError::Cancelled),
            false => Ok(()),
        }
    }

    /// Makes room for `bytes` in the page's memory a piece at a time: growing the memory
    /// by a column's size at once holds the page for a tenth of a second or more (half a
    /// millisecond a megabyte here). The pieces, taken one after another and let go together,
    /// become one free block that the column's allocation then takes without growing it.
    async fn room(&mut self, bytes: usize) -> Result<(), JobError> {
        const PIECE: usize = 8 << 20;
        let mut held: Vec<Vec<u8>> = Vec::new();
        let mut left = bytes;
        while left > PIECE {
            held.push(Vec::with_capacity(PIECE));
            left -= PIECE;
            self.done(0).await?;
        }
        Ok(())
    }

    /// The column in `value` (its bytes) copied into the page's memory, a part at a time.
    async fn column<T: bytemuck::Pod>(&mut self, value: JsValue) -> Result<Vec<T>, JobError> {
        let broken = || JobError::Failed("the page's worker gave a broken column".into());
        let bytes: Uint8Array = value.dyn_into().map_err(|_| broken())?;
        let size = std::mem::size_of::<T>();
        let n = bytes.length() as usize;
        if n % size != 0 {
            return Err(broken());
        }
        self.room(n).await?;
        let mut out: Vec<T> = Vec::with_capacity(n / size);
        let mut at = 0;
        while at < n / size {
            let to = (at + ROWS as usize).min(n / size);
            out.resize(to, T::zeroed());
            let into: &mut [u8] = bytemuck::cast_slice_mut(&mut out[at..to]);
            bytes
                .subarray((at * size) as u32, (to * size) as u32)
                .copy_to(into);
            self.done((to - at) as u64).await?;
            at = to;
        }
        Ok(out)
    }
}

/// The result a worker's answer message gives: its rows copied into the page's memory and
/// checked a piece at a time, the page drawing between (a trace of 10^7 rows takes seconds
/// here, which must not hold the page).
async fn receive(data: &JsValue, progress: &Progress, wake: &Wake) -> Result<Loaded, JobError> {
    let head = Reflect::get(data, &"head".into())
        .ok()
        .and_then(|h| h.as_string())
        .unwrap_or_default();
    let answer: Answer = serde_json::from_str(&head)
        .map_err(|e| JobError::Failed(format!("the page's worker gave a broken answer: {e}")))?;
    let arrays: Array = Reflect::get(data, &"rows".into())
        .ok()
        .and_then(|r| r.dyn_into().ok())
        .unwrap_or_default();
    let Answer::Trace { kernels, .. } = &answer else {
        return result(answer, Vec::new(), true);
    };
    // Each row is copied (its six columns) and checked.
    let total_rows: u64 = (0..arrays.length() / 7)
        .map(|k| {
            let addr = arrays.get(k * 7).dyn_into::<Uint8Array>();
            addr.map_or(0, |a| a.length() as u64 / 8)
        })
        .sum();
    let mut pieces = Pieces {
        since: js_sys::Date::now(),
        done: 0,
        total: total_rows * 7,
        progress,
        wake,
    };
    let mut rows = Vec::new();
    for k in 0..arrays.length() / 7 {
        let get = |i: u32| arrays.get(k * 7 + i);
        let columns = Columns {
            addr: pieces.column(get(0)).await?,
            thread: pieces.column(get(1)).await?,
            inst: pieces.column(get(2)).await?,
            dyn_inst: pieces.column(get(3)).await?,
            size: pieces.column(get(4)).await?,
            flags: pieces.column(get(5)).await?,
        };
        let starts = pieces.column(get(6)).await?;
        pieces.done(0).await?;
        rows.push((columns, starts));
    }
    // Every row checked, a piece at a time, before the kernels are made of them.
    for (k, ((columns, starts), header)) in rows.iter_mut().zip(kernels).enumerate() {
        let parts = KernelParts {
            header: header.clone(),
            columns: std::mem::take(columns),
            cta_starts: std::mem::take(starts),
        };
        let n = parts.columns.len();
        let mut at = 0;
        while at < n {
            let to = at.saturating_add(ROWS as usize).min(n);
            parts.check_rows(at..to).map_err(|e| {
                JobError::Failed(format!(
                    "the page's worker gave a broken trace: kernel {k}: {e}"
                ))
            })?;
            pieces.done((to - at) as u64).await?;
            at = to;
        }
        *columns = parts.columns;
        *starts = parts.cta_starts;
    }
    result(answer, rows, true)
}

/// The worker's side: runs the request in `message` and posts its progress and answer.
pub fn serve(message: JsValue) {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let request = Reflect::get(&message, &"request".into())
        .ok()
        .and_then(|r| r.as_string())
        .unwrap_or_default();
    let bytes = Reflect::get(&message, &"bytes".into())
        .ok()
        .and_then(|b| b.dyn_into::<Uint8Array>().ok())
        .map(|b| b.to_vec());
    let source = match source(&request, bytes) {
        Ok(s) => s,
        Err(e) => {
            let (head, rows) = answer(Err(JobError::Failed(e)));
            return post(&scope, head, rows);
        }
    };
    let last = AtomicU64::new(0);
    let progress = Arc::new(Progress::told(Box::new(move |done, total| {
        let now = js_sys::Date::now() as u64;
        if now.saturating_sub(last.load(Ordering::Relaxed)) < PROGRESS_MS {
            return;
        }
        last.store(now, Ordering::Relaxed);
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let msg = Object::new();
        set(&msg, "kind", &"progress".into());
        set(&msg, "done", &(done as f64).into());
        set(&msg, "total", &(total as f64).into());
        let _ = scope.post_message(&msg);
    })));
    let (head, rows) = answer(worker::load_source(source, &progress));
    post(&scope, head, rows)
}

/// Posts an answer, its rows' buffers handed over.
fn post(scope: &DedicatedWorkerGlobalScope, head: Answer, rows: Vec<Rows>) {
    let msg = Object::new();
    let head = serde_json::to_string(&head).unwrap_or_else(|e| {
        serde_json::to_string(&Answer::Failed(format!(
            "the answer could not be written: {e}"
        )))
        .unwrap_or_default()
    });
    set(&msg, "kind", &"answer".into());
    // How much memory the worker holds now (it keeps it: a WebAssembly memory does not
    // shrink), for the page to decide whether to keep the worker for the next job.
    let memory = wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map_or(0.0, |m| {
            m.buffer()
                .unchecked_into::<js_sys::ArrayBuffer>()
                .byte_length() as f64
        });
    set(&msg, "memory", &memory.into());
    set(&msg, "head", &head.into());
    let arrays = Array::new();
    let transfer = Array::new();
    for (c, starts) in rows {
        // Each column's bytes (typed arrays of wider elements are slower to make).
        let parts: [Uint8Array; 7] = [
            Uint8Array::from(bytemuck::cast_slice::<u64, u8>(&c.addr)),
            Uint8Array::from(bytemuck::cast_slice::<u32, u8>(&c.thread)),
            Uint8Array::from(bytemuck::cast_slice::<u32, u8>(&c.inst)),
            Uint8Array::from(bytemuck::cast_slice::<u32, u8>(&c.dyn_inst)),
            Uint8Array::from(bytemuck::cast_slice::<u16, u8>(&c.size)),
            Uint8Array::from(&c.flags[..]),
            Uint8Array::from(bytemuck::cast_slice::<u32, u8>(&starts)),
        ];
        for p in parts {
            transfer.push(&p.buffer());
            arrays.push(&p);
        }
    }
    set(&msg, "rows", &arrays);
    if let Err(e) = scope.post_message_with_transfer(&msg, &transfer) {
        let failed = Object::new();
        set(&failed, "kind", &"failed".into());
        set(&failed, "message", &text(&e).into());
        let _ = scope.post_message(&failed);
    }
}
