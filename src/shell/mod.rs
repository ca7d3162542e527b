//! What the two shells (the CLI and the app) share to run the core on several threads. Not
//! part of the core: it is built only with the `cli` or `gui` feature, and the core's
//! modules never use it.
//!
//! - [`lanes`]: a reader thread that decodes a trace file or runs a generator, feeding
//!   sessions side by side on other threads.

pub mod lanes;
