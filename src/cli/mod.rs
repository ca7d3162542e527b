//! The CLI: argument definitions (`args`), configuration from flags (`options`), the
//! subcommands, and output formatting (`output`).

mod args;
mod options;
mod output;
mod sweep;

pub use args::Cli;

use anyhow::{Context, Result};
use args::{Command, ConvertArgs, GenArgs, SimArgs};
use std::io::Write;
use warpscope::{gen, sim, trace};

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => {
            // What `cargo run --release` shows until the desktop app exists.
            let args = SimArgs::parse_from_words(&["--kernel", "matmul", "--preset", "fermi-16k"])?;
            simulate(args)
        }
        Some(Command::Sim(a)) => simulate(a),
        Some(Command::Gen(a)) => generate(a),
        Some(Command::Convert(a)) => convert(a),
        Some(Command::Sweep(a)) => sweep::run(a),
    }
}

fn simulate(a: SimArgs) -> Result<()> {
    let (trace, source, format) = options::load_trace(&a.input)?;
    let cfg = options::config(&a.config, format)?;
    let mut progress = output::Progress::new(trace.total_accesses() as u64);
    let report =
        sim::run(&cfg, &trace, &mut progress).with_context(|| format!("simulating {source}"))?;
    progress.clear();
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        output::table(&mut out, &source, &report)?;
    }
    Ok(())
}

fn generate(a: GenArgs) -> Result<()> {
    if a.list {
        for k in gen::KERNELS {
            println!(
                "{:<16} {}\n{:<16} defaults: {}",
                k.name, k.description, "", k.params
            );
        }
        return Ok(());
    }
    let name = a
        .kernel
        .context("name a kernel (see `warpscope gen --list`)")?;
    let output = a
        .output
        .context("give an output file with -o FILE (.wst text, .wsb binary)")?;
    let pairs = gen::parse_pairs(&a.params).map_err(anyhow::Error::msg)?;
    let t = gen::generate(&name, &pairs)?;
    trace::write_file(&t, &output)?;
    eprintln!("wrote {} ({} rows)", output.display(), t.total_accesses());
    Ok(())
}

fn convert(a: ConvertArgs) -> Result<()> {
    let format = a.format.as_deref().map(options::format).transpose()?;
    let (t, f) = trace::read_file(&a.input, format)?;
    if format.is_none() {
        eprintln!("{}: detected format {f:?}", a.input.display());
    }
    trace::write_file(&t, &a.output)?;
    eprintln!("wrote {} ({} rows)", a.output.display(), t.total_accesses());
    Ok(())
}
