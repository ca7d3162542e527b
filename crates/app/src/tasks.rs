//! Work in slices on a page, run between the browser's own tasks rather than inside frames:
//! how the web build runs a [`crate::job::Job::stepped`] job. Run inside frames, a slice gets
//! only a part of each frame's period (the slice, the frame's drawing, the wait for the next
//! vsync): on this machine's software rendering a sweep of nine runs of the example showed
//! its heatmap after about 10 s that way, after about 4 s in turns (its work: 1.0 s, the same
//! as the sweep run whole). Here each turn is a message the page posts to itself (a
//! `MessageChannel`, which the browser does not slow down as it does nested timers): a turn
//! runs the waiting jobs' slices for up to [`TURN`], under the 50 ms a browser counts as a long
//! task, and posts the next turn; between turns the browser handles input and draws the frames
//! the app asks for. A job asks for a frame when it finishes and every [`FRAME_EVERY`]
//! meanwhile (its progress), not after each slice. Only the web build has this module.

use std::cell::RefCell;
use std::time::Duration;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// One job's slices: given when its slice must end, says whether the job is over.
pub type Task = Box<dyn FnMut(web_time::Instant) -> bool>;

/// The longest one turn runs, all its jobs' slices together.
const TURN: Duration = Duration::from_millis(40);
/// How long one job's slice runs at most within a turn (the turn's other jobs get theirs).
pub const SLICE: Duration = Duration::from_millis(20);
/// How often a running job asks for a frame to show its progress.
pub const FRAME_EVERY: Duration = Duration::from_millis(200);

/// The page's runner: the jobs waiting for a turn, and the channel that brings turns.
struct Runner {
    tasks: Vec<Task>,
    port: web_sys::MessagePort,
    /// A turn has been posted and has not come yet.
    posted: bool,
    /// What runs a turn when its message comes (kept for as long as the page lives).
    _on_message: Closure<dyn FnMut()>,
}

thread_local! {
    static RUNNER: RefCell<Option<Runner>> = const { RefCell::new(None) };
}

/// Runs `task` a slice per turn until it says it is over; `Err` (and nothing started) when
/// the page offers no message channel.
pub fn start(task: Task) -> Result<(), String> {
    RUNNER.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            *r = Some(Runner::new()?);
        }
        let runner = r.as_mut().ok_or("no runner")?;
        runner.tasks.push(task);
        runner.post();
        Ok(())
    })
}

/// Whether the page can run tasks ([`start`] would not fail for want of a channel).
pub fn available() -> bool {
    RUNNER.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            *r = Runner::new().ok();
        }
        r.is_some()
    })
}

impl Runner {
    fn new() -> Result<Self, String> {
        let channel = web_sys::MessageChannel::new().map_err(|e| format!("{e:?}"))?;
        let on_message = Closure::<dyn FnMut()>::new(turn);
        channel
            .port1()
            .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        Ok(Runner {
            tasks: Vec::new(),
            port: channel.port2(),
            posted: false,
            _on_message: on_message,
        })
    }

    fn post(&mut self) {
        if !self.posted && !self.tasks.is_empty() {
            self.posted = self.port.post_message(&JsValue::NULL).is_ok();
        }
    }
}

/// One turn: a slice of each waiting job while the turn lasts (those left out go first next
/// time), then the next turn if any job goes on.
fn turn() {
    let tasks = RUNNER.with(|r| {
        r.borrow_mut().as_mut().map_or(Vec::new(), |r| {
            r.posted = false;
            std::mem::take(&mut r.tasks)
        })
    });
    let end = web_time::Instant::now() + TURN;
    let (mut left_out, mut ran) = (Vec::new(), Vec::new());
    for mut task in tasks {
        let now = web_time::Instant::now();
        if now >= end {
            left_out.push(task);
        } else if !task((now + SLICE).min(end)) {
            ran.push(task);
        }
    }
    RUNNER.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            // Jobs started during the turn are in `r.tasks` already: after these.
            left_out.append(&mut ran);
            left_out.append(&mut r.tasks);
            r.tasks = left_out;
            r.post();
        }
    });
}
