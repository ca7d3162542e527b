//! `warpscope analyze`: the analytical model of the core's `analyze` on each kernel of a trace
//! or a built-in kernel, as a report or one JSON object (docs/analyzer.md).

use anyhow::{bail, Context, Result};
use serde_json::json;
use std::io::Write;
use warpscope::analyze::{self, Analysis, GpuModel, Measured, Source, WhatIf};

use super::args::AnalyzeArgs;

/// The GPU model with the flags' overrides.
fn gpu(a: &AnalyzeArgs) -> Result<GpuModel> {
    let Some(mut g) = analyze::gpu(&a.gpu) else {
        bail!(
            "--gpu: unknown GPU `{}` (expected one of: {})",
            a.gpu,
            analyze::GPUS.join(", ")
        );
    };
    if let Some(v) = a.clock_mhz {
        g.clock_mhz = v;
    }
    if let Some(v) = a.bandwidth {
        g.bandwidth_gb_s = v;
    }
    if let Some(v) = a.base_latency {
        g.base_latency = v;
    }
    if let Some(v) = a.vector_delay {
        g.departure_delay_vector = v;
    }
    if let Some(v) = a.sms {
        g.sms = v;
    }
    if let Some(d) = &a.departure_delay {
        let v: Vec<f64> = d
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| {
                format!("--departure-delay: expected three numbers like 37,37,58, found `{d}`")
            })?;
        let [a32, a64, a128] = v[..] else {
            bail!("--departure-delay: expected three numbers (32, 64 and 128-byte), found `{d}`");
        };
        g.departure_delay = [a32, a64, a128];
    }
    Ok(g)
}

/// One kernel's whole answer.
struct Answer {
    measured: Measured,
    analysis: Analysis,
    explanation: String,
    what_ifs: Vec<WhatIf>,
}

pub fn run(a: AnalyzeArgs) -> Result<()> {
    let g = gpu(&a)?;
    let (trace, source) = super::options::load_trace(&a.input)?;
    let given = analyze::Given {
        instructions: a.instructions,
        compute_per_memory: a.compute_per_memory,
        high_latency: a.high_latency,
        independent_loads: a.independent_loads,
        active_blocks: a.active_blocks,
    };
    let mut answers = Vec::new();
    for k in &trace.kernels {
        let mut measured = match analyze::measure(k, &g, &given) {
            Ok(m) => m,
            // A launch without global memory has nothing for this model; say so and go on.
            Err(e @ analyze::MeasureError::NoMemory { .. }) => {
                eprintln!("warning: {e}");
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("analyzing {source}")),
        };
        if let Some(d) = a.duplicate_loads {
            measured.inputs.duplicate_loads = d;
        }
        let analysis = analyze::analyze(&measured.inputs, &g)
            .with_context(|| format!("kernel `{}`", measured.kernel))?;
        let what_ifs = analyze::what_ifs(&measured.inputs, &g, &analysis)?;
        let explanation = analyze::explain(&measured.inputs, &analysis);
        answers.push(Answer {
            measured,
            analysis,
            explanation,
            what_ifs,
        });
    }
    if answers.is_empty() {
        bail!("{source}: no kernel with global memory accesses to analyze");
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let kernels: Vec<_> = answers
            .iter()
            .map(|x| {
                json!({
                    "kernel": x.measured.kernel,
                    "inputs": x.measured.inputs,
                    "sources": {
                        "instructions": x.measured.instructions_from,
                        "high_latency": x.measured.high_latency_from,
                        "independent_loads": x.measured.independent_loads_from,
                        "active_blocks": x.measured.active_blocks_from,
                    },
                    "duplicates": x.measured.duplicates,
                    "analysis": x.analysis,
                    "verdict": verdict(&x.analysis),
                    "explanation": x.explanation,
                    "what_ifs": x.what_ifs.iter().map(|w| json!({
                        "key": w.key,
                        "label": w.label,
                        "analysis": w.analysis,
                        "speedup": w.speedup,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_writer_pretty(
            &mut out,
            &json!({"source": source, "gpu": g, "kernels": kernels}),
        )?;
        writeln!(out)?;
    } else {
        for x in &answers {
            report(&mut out, &g, x)?;
        }
    }
    Ok(())
}

fn verdict(a: &Analysis) -> &'static str {
    if a.memory_bound {
        "memory-bound"
    } else {
        "compute-bound"
    }
}

fn from(s: Source) -> &'static str {
    match s {
        Source::Trace => "trace",
        Source::Given => "given",
        Source::Default => "default",
    }
}

fn report(out: &mut impl Write, g: &GpuModel, x: &Answer) -> Result<()> {
    let (k, a, m) = (&x.measured.inputs, &x.analysis, &x.measured);
    writeln!(out, "kernel `{}` on {}", m.kernel, g.name)?;
    writeln!(out, "\ninputs (per warp unless said)")?;
    let rows: [(&str, String, &str); 11] = [
        (
            "threads per block / blocks",
            format!("{} / {}", k.threads_per_block, k.blocks),
            "trace",
        ),
        (
            "active blocks per SM",
            k.active_blocks_per_sm.to_string(),
            from(m.active_blocks_from),
        ),
        (
            "instructions",
            format!("{:.1}", k.instructions),
            from(m.instructions_from),
        ),
        (
            "high-latency instructions",
            format!("{:.1}", k.high_latency),
            from(m.high_latency_from),
        ),
        (
            "load / store requests",
            format!("{:.2} / {:.2}", k.load_requests, k.store_requests),
            "trace",
        ),
        (
            "32 / 64 / 128 B transactions",
            format!(
                "{:.2} / {:.2} / {:.2}",
                k.transactions[0], k.transactions[1], k.transactions[2]
            ),
            "trace (gt200 coalescer)",
        ),
        ("synchronizations", format!("{:.2}", k.sync), "trace"),
        (
            "independent loads",
            format!("{:.2}", k.independent_loads),
            from(m.independent_loads_from),
        ),
        (
            "duplicate loads",
            format!("{:.3}", k.duplicate_loads),
            "trace (timing model: pieces found in flight)",
        ),
        (
            "vector memory operations",
            k.vector.to_string(),
            "trace (access size >= 8 B)",
        ),
        (
            "load pieces / found in flight",
            format!("{} / {}", m.duplicates.pieces, m.duplicates.in_flight),
            "timing model, SM 0",
        ),
    ];
    for (name, value, src) in rows {
        writeln!(out, "  {name:<32} {value:>22}   {src}")?;
    }
    writeln!(out, "\nmodel")?;
    let lines: [(&str, String); 12] = [
        ("N (active warps per SM)", format!("{:.0}", a.active_warps)),
        (
            "active SMs / repetitions",
            format!("{} / {:.2}", a.active_sms, a.repetitions),
        ),
        (
            "transactions per request (19)",
            format!("{:.3}", a.transactions_per_request),
        ),
        (
            "bytes per request (16)",
            format!("{:.1}", a.data_per_request),
        ),
        (
            "departure delay per transaction (23)",
            format!("{:.2}", a.departure_delay_per_transaction),
        ),
        ("memory latency (24)", format!("{:.1}", a.memory_latency)),
        (
            "MWP: peak bandwidth (18)",
            format!("{:.3}", a.mwp_peak_bandwidth),
        ),
        (
            "MWP: latency (26)",
            format!("{:.3}", a.mwp_without_bandwidth),
        ),
        (
            "MWP: active warps (27)",
            format!("{:.3}", a.active_warps_for_mwp),
        ),
        (
            "MWP (28)",
            format!("{:.3}  set by {}", a.mwp, a.mwp_limit.name()),
        ),
        (
            "compute / memory cycles per warp",
            format!("{:.0} / {:.0}", a.compute_cycles, a.memory_cycles),
        ),
        (
            "CWP (29-30)",
            format!("{:.3}  (uncapped {:.3})", a.cwp, a.cwp_full),
        ),
    ];
    for (name, value) in lines {
        writeln!(out, "  {name:<38} {value}")?;
    }
    writeln!(
        out,
        "\nprediction: {:.0} cycles ({:.0} execution + {:.0} synchronization) = {:.4} ms, case {:?}",
        a.cycles, a.exec_cycles, a.sync_cycles, a.milliseconds, a.case
    )?;
    writeln!(out, "verdict: {}\n{}", verdict(a), x.explanation)?;
    writeln!(out, "\nwhat if                                        MWP      CWP    verdict          ms   time")?;
    writeln!(
        out,
        "  {:<42} {:>7.2} {:>8.2}   {:<13} {:>9.4}   1.00",
        "as it is",
        a.mwp,
        a.cwp,
        verdict(a),
        a.milliseconds
    )?;
    for w in &x.what_ifs {
        writeln!(
            out,
            "  {:<42} {:>7.2} {:>8.2}   {:<13} {:>9.4}   {:.2}",
            w.label,
            w.analysis.mwp,
            w.analysis.cwp,
            verdict(&w.analysis),
            w.analysis.milliseconds,
            w.speedup
        )?;
    }
    writeln!(out)?;
    Ok(())
}
