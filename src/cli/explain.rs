//! `warpscope explain --request N`: why one request hit or missed (the core's `explain`), as
//! the story in plain words with its evidence, or one JSON object.

use anyhow::{Context, Result};
use std::io::Write;
use warpscope::explain::{self, Explanation};
use warpscope::sim::Observer;

use super::args::ExplainArgs;
use super::output::Progress;

pub fn run(a: ExplainArgs) -> Result<()> {
    let cfg = super::options::config(&a.config)?;
    let (trace, source) = super::options::load_trace(&a.input)?;
    let mut progress = Progress::named(trace.total_accesses() as u64, "explaining");
    let e = explain::explain(&cfg, &trace.kernels, a.request, &mut |done, total| {
        progress.progress(done, total)
    })
    .with_context(|| format!("explaining request {} of {source}", a.request))?;
    progress.clear();
    let mut out = super::output::stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &e)?;
        writeln!(out)?;
    } else {
        write_story(&mut out, &e)?;
    }
    out.flush()?;
    Ok(())
}

/// The story, then the evidence as tables: the warp instruction's accesses and the set's lines
/// at the eviction.
fn write_story(out: &mut impl Write, e: &Explanation) -> Result<()> {
    writeln!(
        out,
        "Request {}: {} (SM {}, order {}{})\n",
        e.request.request,
        e.why.name(),
        e.request.sm,
        e.request.order,
        e.request
            .time
            .map_or(String::new(), |t| format!(", cycle {t}"))
    )?;
    for p in &e.story {
        writeln!(out, "{}\n", wrap(p, 100))?;
    }
    if !e.asked.accesses.is_empty() {
        writeln!(
            out,
            "The warp instruction's accesses (* = in this request's line):"
        )?;
        writeln!(
            out,
            "  {:>8} {:>18} {:>6}  kind",
            "thread", "address", "bytes"
        )?;
        for x in &e.asked.accesses {
            writeln!(
                out,
                "{} {:>8} {:>#18x} {:>6}  {}",
                if x.in_line { "*" } else { " " },
                x.thread,
                x.address,
                x.bytes,
                x.kind
            )?;
        }
        writeln!(out)?;
    }
    if let Some(ev) = e.eviction.as_ref().filter(|ev| !ev.residents.is_empty()) {
        writeln!(
            out,
            "Set {} just before request {} ({} replacement), least recently used first:",
            e.request.set, ev.by.request, e.cache.replacement
        )?;
        writeln!(
            out,
            "  {:>18} {:>10} {:>10} {:>6}",
            "line", "filled by", "last use", "uses"
        )?;
        for r in &ev.residents {
            writeln!(
                out,
                "{} {:>#18x} {:>10} {:>10} {:>6}",
                if r.line == e.request.line { ">" } else { " " },
                r.line * e.cache.line_bytes as u64,
                r.filled_by,
                r.last_use,
                r.uses
            )?;
        }
    }
    Ok(())
}

/// `text` broken at spaces into lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}
