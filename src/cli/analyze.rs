//! `warpscope analyze`: the analytical model of the core's `analyze` on each kernel of a trace
//! or a built-in kernel, as a report or one JSON object (docs/analyzer.md).

use anyhow::{bail, Context, Result};
use serde_json::json;
use std::io::Write;
use warpscope::analyze::{self, Analysis, GpuModel, Measured, WhatIf};

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
    let mut out = super::output::stdout();
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
    out.flush()?;
    Ok(())
}

fn verdict(a: &Analysis) -> &'static str {
    if a.memory_bound {
        "memory-bound"
    } else {
        "compute-bound"
    }
}

fn report(out: &mut impl Write, g: &GpuModel, x: &Answer) -> Result<()> {
    let (k, a, m) = (&x.measured.inputs, &x.analysis, &x.measured);
    writeln!(out, "kernel `{}` on {}", m.kernel, g.name)?;
    writeln!(out, "\ninputs")?;
    for r in analyze::input_rows(m, k) {
        writeln!(out, "  {:<38} {:>24}   {}", r.name, r.value, r.from)?;
    }
    writeln!(out, "\nmodel")?;
    for (name, value) in analyze::model_rows(a) {
        writeln!(out, "  {name:<42} {value}")?;
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
