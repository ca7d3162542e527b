//! GPUs with the model's parameters, each value sourced (docs/analyzer.md has the table).

use super::GpuModel;

/// The GPU names [`gpu`] knows.
pub const GPUS: [&str; 1] = ["gt200"];

/// Dasgupta 2011's tuned Tesla C1060 (GT200, compute capability 1.3).
pub fn gt200() -> GpuModel {
    GpuModel {
        name: "gt200 (Tesla C1060, Dasgupta 2011 §3.2.6)".into(),
        // §3.2.6.1: tuned to 1312 MHz (the C1060's shader clock is 1296 MHz).
        clock_mhz: 1312.0,
        // Tesla C1060: 30 SMs; 512-bit GDDR3 at 800 MHz, 102.4 GB/s.
        sms: 30,
        bandwidth_gb_s: 102.4,
        // §3.2.6.2: assumed 450 cycles (NVIDIA gives 400 to 600 for GT200).
        base_latency: 450.0,
        // §3.2.6.3-3.2.6.5, tables 8-10: 37, 37 and 58 cycles; table 11: 57 for vector.
        departure_delay: [37.0, 37.0, 58.0],
        departure_delay_vector: 57.0,
        // §3.2.3: four cycles per instruction (a warp of 32 threads on 8 cores).
        issue_cycles: 4.0,
        // §4.2.4: square root 32 cycles (division 36, reciprocal square root 16).
        high_latency_cycles: 32.0,
        // CUDA programming guide 2.3, appendix A (compute capability 1.3).
        max_blocks_per_sm: 8,
        max_warps_per_sm: 32,
        max_threads_per_sm: 1024,
        warp_size: 32,
    }
}

/// The named GPU.
pub fn gpu(name: &str) -> Option<GpuModel> {
    match name {
        "gt200" => Some(gt200()),
        _ => None,
    }
}
