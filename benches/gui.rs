//! The app's own CPU time per frame (UI code and tessellation; no rasterizer) with 10^6 and
//! 10^7 requests in the address view, and the time from a parameter change to the new result
//! on screen for a 10^6-access trace (issue 5's targets: 16 ms, 33 ms, 150 ms).
//!
//!     cargo bench --features gui-bench --bench gui
//!
//! The address view draws a density raster above 50 000 requests in view, built on a worker;
//! the frame time measured here is with the raster ready, as a user sees it when panning or
//! hovering. The change-to-screen time excludes the 50 ms debounce that waits for the user to
//! stop editing (it advances with the harness's virtual clock), so add 50 ms to it.
//!
//! `streamed_open_to_first_preview_10M_din`: a trace file opened streamed (as files over
//! 256 MiB are), from the open to the first preview of its pane's run (issue 26's "first
//! picture within 1 s"); the run is cancelled then. `..._matmul128_nvbit`: the same for an
//! NVBit log of matmul n=128 (4.2 M accesses, 82 MB), read once as it is simulated: its run
//! on one SM can end before a preview is due, and its result is then the first picture.
//!
//! `..._memtrace_one_kernel`: the same for a cuda-memtrace file of one kernel of 4x10^5
//! CTAs (3.8x10^7 accesses in run records of 32): its first picture waits for the kernel's
//! first read, the scan that learns its grid and CTAs' SMs.
//!
//! `streamed_window_at_90pc_10M_din_*`: the detail of 1000 requests at 90% of that run
//! ("Every request from A to B"), read again from the file's start, and read on from the
//! latest copy of the session the whole run kept before the window; `..._din_zst_*`: the same
//! with the file compressed by zstd (decompressed again up to the copy's place);
//! `streamed_window_at_90pc_matmul128_wsb_*`: the same for a binary file of matmul n=128 in
//! CTAs of 8x8 threads (4.2 M accesses, 256 CTAs; copies between CTAs, their resident CTAs'
//! rows read again through the index); `..._matmul128_wsb_zst_*`: the same file compressed by
//! zstd (no index to seek by: decompressed again from its start, the records before the
//! copy's place stepped over, the resident CTAs' chunks decoded); `..._matmul128_accelsim_*`: the same kernel as an
//! Accel-Sim trace (63 MB of text; its kernel file read again from its start, the blocks of
//! the CTAs done skimmed, the resident CTAs' decoded); `..._matmul128_nvbit_*`: the NVBit
//! log above (read on from the line where its reader gave the copy's place, with a copy of
//! its tables).

//! The benchmarks themselves live in the app's crate (`crates/app/src/bench.rs`, its feature
//! `bench`, which the feature `gui-bench` turns on), where they can drive its jobs.

use criterion::{criterion_group, criterion_main};
use warpscope::app::bench::{frames, streamed};

criterion_group!(benches, frames, streamed);
criterion_main!(benches);
