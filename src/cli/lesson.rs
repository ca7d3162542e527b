//! `warpscope lesson [NAME]`: the lessons (the core's `lesson`), listed, or one of them: its
//! text and each pane's kernel, settings and results side by side, as a table or JSON.

use anyhow::{Context, Result};
use serde_json::json;
use std::io::Write;
use warpscope::cache::Counters;
use warpscope::lesson::{self, Lesson};

use super::args::LessonArgs;

pub fn run(a: LessonArgs) -> Result<()> {
    let mut out = super::output::stdout();
    let Some(name) = a.name else {
        for (name, _) in lesson::LESSONS {
            let l = lesson::lesson(name).map_err(anyhow::Error::msg)?;
            writeln!(out, "{name:<20} {}", l.title)?;
        }
        out.flush()?;
        return Ok(());
    };
    let l = lesson::lesson(&name).map_err(anyhow::Error::msg)?;
    let results = simulate(&l)?;
    if a.json {
        let panes: Vec<_> = l
            .panes
            .iter()
            .zip(&results)
            .map(|(p, r)| {
                json!({
                    "label": p.label,
                    "source": p.source_name,
                    "params": p.params,
                    "preset": p.preset,
                    "config": p.config,
                    "totals": r,
                    "miss_rate": rate(r),
                })
            })
            .collect();
        let v = json!({"lesson": l.name, "title": l.title, "text": l.text, "panes": panes});
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    writeln!(out, "{}\n", l.title)?;
    for para in l.text.split("\n\n") {
        writeln!(out, "{}\n", para.trim())?;
    }
    writeln!(
        out,
        "{:<34} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "pane", "requests", "misses", "rate", "compuls.", "capacity", "conflict", "latency", "MSHR"
    )?;
    for (p, r) in l.panes.iter().zip(&results) {
        let c = &r.miss_classes;
        writeln!(
            out,
            "{:<34} {:>9} {:>9} {:>6.2}% {:>9} {:>9} {:>9} {:>9} {:>9}",
            p.label,
            r.requests,
            r.misses,
            100.0 * rate(r),
            c.compulsory,
            c.capacity,
            c.conflict,
            c.latency,
            c.mshr
        )?;
    }
    writeln!(out)?;
    for p in &l.panes {
        writeln!(
            out,
            "{}: kernels/{} {} on {}",
            p.label, p.source_name, p.params, p.preset
        )?;
    }
    out.flush()?;
    Ok(())
}

fn rate(c: &Counters) -> f64 {
    c.misses as f64 / c.requests.max(1) as f64
}

/// Each pane's totals: its kernel generated with its params, simulated with its settings.
fn simulate(l: &Lesson) -> Result<Vec<Counters>> {
    l.panes
        .iter()
        .map(|p| {
            let words: Vec<String> = p.params.split_whitespace().map(String::from).collect();
            let pairs = warpscope::gen::parse_pairs(&words).map_err(anyhow::Error::msg)?;
            let t = warpscope::gen::source::generate(p.source, &p.source_name, &pairs, None)?;
            let r = warpscope::sim::run(&p.config, &t, &mut warpscope::sim::NoObserver)
                .with_context(|| format!("lesson {}, pane `{}`", l.name, p.label))?;
            Ok(r.totals)
        })
        .collect()
}
