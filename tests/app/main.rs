//! The desktop app driven through egui_kittest without a window, and the two shells (app and
//! CLI) against each other. One test binary (each file a module).
#![cfg(feature = "gui")]

mod editor;
mod explain;
mod flows;
mod panes;
#[path = "../common/run.rs"]
mod run;
mod shells;
mod streamed;
mod support;
mod sweep;
#[path = "../common/traces.rs"]
mod traces;
mod views;
