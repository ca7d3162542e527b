//! The app driven through egui_kittest without a window: its flows (open, generate, edit,
//! panes side by side, lessons, streamed traces) and its views' drawing, checked against the
//! state they leave. They live in the crate because they read that state; the end-to-end
//! tests of the app beside the CLI (`tests/app` at the top level) use its public API only.

mod editor;
mod explain;
mod flows;
mod panes;
mod streamed;
mod support;
mod sweep;
#[path = "../../../../tests/common/traces.rs"]
mod traces;
mod views;
mod web;
