//! The CLI: argument definitions (`args`), configuration from flags (`options`), the
//! subcommands, and output formatting (`output`).

mod analyze;
mod args;
mod comm;
mod explain;
mod hwcheck;
mod lesson;
mod options;
mod output;
mod readahead;
mod stream;
mod sweep;

pub use args::Cli;

use anyhow::{Context, Result};
use args::{Command, ConvertArgs, GenArgs, SimArgs};
use warpscope::shell::policy;
use warpscope::{gen, sim, trace};

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => no_command(cli),
        Some(Command::Sim(a)) => simulate(a),
        Some(Command::Gen(a)) => generate(a),
        Some(Command::Convert(a)) => convert(a),
        Some(Command::Sweep(a)) => sweep::run(*a),
        Some(Command::Comm(a)) => comm::run(a),
        Some(Command::Hwcheck(a)) => hwcheck::run(a),
        Some(Command::Analyze(a)) => analyze::run(a),
        Some(Command::Explain(a)) => explain::run(a),
        Some(Command::Lesson(a)) => lesson::run(a),
    }
}

/// With the app: open the window. Without it: simulate the file, or the built-in example.
#[cfg(feature = "gui")]
fn no_command(cli: Cli) -> Result<()> {
    let Cli {
        file,
        screenshots,
        fresh,
        window,
        sweep,
        stream,
        shot_streamed,
        jobs,
        ..
    } = cli;
    if let Some(dir) = &screenshots {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    warpscope::app::run(
        warpscope::app::Startup {
            file,
            fresh,
            generator: None,
            window,
            sweep,
            stream,
            shot_streamed,
            jobs: jobs.unwrap_or(0),
        },
        screenshots,
    )
    .map_err(anyhow::Error::msg)
    .context(
        "the desktop app could not start (no display? the CLI still works: `warpscope sim --help`)",
    )
}

#[cfg(not(feature = "gui"))]
fn no_command(cli: Cli) -> Result<()> {
    let Cli {
        file,
        screenshots,
        sweep,
        jobs,
        ..
    } = cli;
    if screenshots.is_some() || sweep.is_some() {
        anyhow::bail!("this build has no desktop app (the `gui` feature is off)");
    }
    let mut words = vec!["--preset".to_string(), "fermi-16k".to_string()];
    match file {
        Some(f) => words.extend(["--trace".to_string(), f.display().to_string()]),
        None => words.extend(["--kernel".to_string(), "matmul".to_string()]),
    }
    if let Some(n) = jobs {
        words.extend(["--jobs".to_string(), n.to_string()]);
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    simulate(SimArgs::parse_from_words(&words)?)
}

fn simulate(a: SimArgs) -> Result<()> {
    let cfg = options::config(&a.config)?;
    let report = match streamed(&a, &cfg)? {
        Some(r) => r,
        None => simulate_loaded(&a, &cfg)?,
    };
    warn_if_nothing_ran(&report);
    print_report(&a, &options::source_name(&a.input), &report)
}

/// Says so on stderr when the trace has accesses but none ran on the simulated SMs (CTAs go
/// to SMs in order, so `--sm 3` of a one-CTA trace sees nothing): a report of zeros is
/// otherwise easy to take for a result.
fn warn_if_nothing_ran(report: &sim::Report) {
    let rows: u64 = report.kernels.iter().map(|k| k.rows).sum();
    if rows == 0 || report.totals.accesses > 0 || report.warp_instructions > 0 {
        return;
    }
    eprintln!(
        "warning: none of the trace's {rows} accesses ran on the simulated SM(s) {:?}: \
         its CTAs went to other SMs (try --sm 0 or --all-sms)",
        report.simulated_sms
    );
}

/// Simulates a trace file as it is read, or a built-in kernel CTA by CTA as it is generated,
/// when nothing needs the whole trace (no truncated trace); `None` otherwise. Memory holds
/// what is resident, whatever the size of the trace or the grid; under the timing model, the
/// warps' streams built from the CTAs as they are read ([`streamed_timed`]). A per-request
/// table is written as it goes.
///
/// An NVBit log or Accel-Sim trace is read once, its kernels' instructions taken as they are
/// found; where that read cannot go on (launches that interleave, thread blocks out of CTA
/// order) it stops, and the run starts again reading the file in two passes (a table, half
/// written by then, is dropped and written again).
fn streamed(a: &SimArgs, cfg: &warpscope::config::SimConfig) -> Result<Option<sim::Report>> {
    if a.input.allow_truncated {
        return Ok(None);
    }
    let run = if cfg.timing.is_some() {
        if let Some(path) = &a.input.trace {
            let format = a.input.format.as_deref().map(options::format).transpose()?;
            let timing = policy::Purpose::Report { timing: true };
            if policy::reading(path, format, timing) == policy::Reading::Whole {
                return Ok(None);
            }
        }
        streamed_timed
    } else {
        streamed_as
    };
    policy::once_else_twice(
        |as_found| run(a, cfg, as_found),
        warpscope::shell::lanes::must_read_again,
        |e| eprintln!("note: {}", e.root_cause()),
    )
}

/// [`streamed_as`] under the timing model: the warps' streams are built from the CTAs as
/// they are read (the trace is never held whole), then the model's runs go side by side.
/// Progress is the bytes read, then the model's accesses.
fn streamed_timed(
    a: &SimArgs,
    cfg: &warpscope::config::SimConfig,
    as_found: bool,
) -> Result<Option<sim::Report>> {
    let input = stream::input(&a.input, as_found)?;
    let jobs = a.jobs.unwrap_or(0);
    let (source, depth, mut reading) = (input.source, input.depth, input.progress);
    let run = |o: &mut dyn sim::Observer| -> Result<sim::Report> {
        let r =
            warpscope::shell::timed::run_streamed(cfg, source, depth, &mut reading, o, jobs, None);
        reading.clear();
        Ok(r?)
    };
    in_file(a, shown(a, output::Progress::new(1), run)).map(Some)
}

/// [`streamed`], taking instructions as they are found where `as_found`.
fn streamed_as(
    a: &SimArgs,
    cfg: &warpscope::config::SimConfig,
    as_found: bool,
) -> Result<Option<sim::Report>> {
    let input = stream::input(&a.input, as_found)?;
    let jobs = if input.splits { a.jobs.unwrap_or(0) } else { 1 };
    let held = match input.splits {
        true => stream::Held::Streamed,
        false => stream::Held::ReferenceStream,
    };
    let (source, depth) = (input.source, input.depth);
    let report = shown(a, input.progress, |p| {
        stream::simulate_parts(cfg, jobs, 0, depth, p, source, held)
    });
    in_file(a, report).map(Some)
}

/// `report` with the trace file it simulated named in its error, unless the reader's error
/// already begins with it.
fn in_file(a: &SimArgs, report: Result<sim::Report>) -> Result<sim::Report> {
    match &a.input.trace {
        Some(path) => report.map_err(|e| simulating(e, path.display())),
        None => report,
    }
}

/// `e` with the trace `source` it simulated named, unless a reader's error in its chain
/// already begins with the file.
fn simulating(e: anyhow::Error, source: impl std::fmt::Display) -> anyhow::Error {
    let named = e.chain().any(|c| {
        c.downcast_ref::<trace::TraceError>()
            .is_some_and(trace::TraceError::names_its_file)
    });
    match named {
        true => e,
        false => e.context(format!("simulating {source}")),
    }
}

/// Runs `simulate` with `progress` shown, writing every request it reports to the table
/// `--export` names where there is one ([`export_requests`]).
fn shown<P: sim::Observer + Clear>(
    a: &SimArgs,
    mut progress: P,
    simulate: impl FnOnce(&mut dyn sim::Observer) -> Result<sim::Report>,
) -> Result<sim::Report> {
    match &a.export {
        None => {
            let r = simulate(&mut progress);
            progress.clear();
            r
        }
        Some(table) => export_requests(table, progress, simulate),
    }
}

/// Loads the whole trace (one the reader may cut short: `--allow-truncated`), then simulates
/// it: under the timing model, or the kernels handed over one by one as a file is, with the
/// SMs split over cores.
fn simulate_loaded(a: &SimArgs, cfg: &warpscope::config::SimConfig) -> Result<sim::Report> {
    let (trace, source) = options::load_trace(&a.input)?;
    let total = trace.total_accesses() as u64;
    let progress = output::Progress::new(total);
    let jobs = a.jobs.unwrap_or(0);
    let run = move |o: &mut dyn sim::Observer| {
        if cfg.timing.is_some() {
            return Ok(warpscope::shell::timed::run(cfg, &trace.kernels, o, jobs)?);
        }
        let kernels = trace.kernels;
        stream::simulate_parts(
            cfg,
            jobs,
            total,
            1,
            o,
            Box::new(move |to| {
                for k in kernels {
                    to.send(warpscope::shell::lanes::Piece::Kernel(k))?;
                }
                Ok(())
            }),
            stream::Held::Whole,
        )
    };
    shown(a, progress, run).map_err(|e| simulating(e, source))
}

fn print_report(a: &SimArgs, source: &str, report: &sim::Report) -> Result<()> {
    if let Some(path) = &a.export_summary {
        let files = warpscope::report::export(report, source, path)?;
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        eprintln!("wrote {}", names.join(" and "));
    }
    let mut out = output::stdout();
    if a.json {
        warpscope::report::json::write(&mut out, report)?;
    } else {
        warpscope::report::text::write(&mut out, source, report)?;
    }
    std::io::Write::flush(&mut out)?;
    Ok(())
}

#[cfg(not(feature = "tables"))]
fn export_requests<P: sim::Observer>(
    _: &std::path::Path,
    _: P,
    _: impl FnOnce(&mut dyn sim::Observer) -> Result<sim::Report>,
) -> Result<sim::Report> {
    anyhow::bail!("this build has no table export (the `tables` feature is off)")
}

/// A progress display that can take itself off the terminal.
trait Clear {
    fn clear(&mut self);
}
impl Clear for output::Progress {
    fn clear(&mut self) {
        output::Progress::clear(self)
    }
}
impl Clear for stream::ByBytes {
    fn clear(&mut self) {
        stream::ByBytes::clear(self)
    }
}

/// Runs `simulate` while writing every request it reports to the table `path`, with
/// `progress` shown; the table is complete on disk only if the run succeeded.
#[cfg(feature = "tables")]
fn export_requests<P: sim::Observer + Clear>(
    path: &std::path::Path,
    progress: P,
    simulate: impl FnOnce(&mut dyn sim::Observer) -> Result<sim::Report>,
) -> Result<sim::Report> {
    let mut exporter = warpscope::sim::RequestExporter::create(path, progress)?;
    let result = simulate(&mut exporter);
    exporter.inner.clear();
    if let Some(e) = exporter.error() {
        anyhow::bail!("{e}");
    }
    let report = result?;
    let (rows, _) = exporter.finish()?;
    eprintln!("wrote {} ({rows} requests)", path.display());
    Ok(report)
}

fn generate(a: GenArgs) -> Result<()> {
    if a.list {
        for k in gen::BUILTINS {
            println!(
                "{:<16} {}\n{:<16} defaults: {}",
                k.name, k.description, "", k.params
            );
        }
        return Ok(());
    }
    let source = a.source.as_deref().map(options::read_source).transpose()?;
    let mut params = a.params;
    let name = match (&source, a.kernel) {
        // With --source every word is a parameter.
        (Some(_), Some(word)) if word.contains('=') => {
            params.insert(0, word);
            String::new()
        }
        (Some(_), Some(name)) => {
            anyhow::bail!("give a built-in kernel (`{name}`) or --source FILE, not both")
        }
        (Some(_), None) => String::new(),
        (None, name) => {
            name.context("name a kernel (see `warpscope gen --list`) or give --source FILE")?
        }
    };
    let output = a
        .output
        .context("give an output file with -o FILE (.wst text, .wsb binary)")?;
    let pairs = gen::parse_pairs(&params).map_err(anyhow::Error::msg)?;
    let format = write_format(&output, a.to.as_deref())?;
    if let Some((src, file)) = &source {
        gen::source::check(src, file)?;
    }
    // Each CTA is written as it is generated (gathered into its kernel for the text
    // formats): the trace is never held whole.
    let mut out = CountingRows {
        writer: trace::TraceWriter::create(with_folder(&output)?, format)?,
        rows: 0,
    };
    match &source {
        Some((src, file)) => gen::source::generate_by_cta(src, file, &pairs, None, &mut out)?,
        None => gen::generate_by_cta(&name, &pairs, None, &mut out)?,
    }
    let rows = out.rows;
    say_written(&out.writer.finish()?, rows);
    Ok(())
}

/// `path`, its folder made if it is not there (the released model of Nugteren et al. reads
/// `output/NAME/NAME_00.trc`, so `gen -o out/matmul/matmul_00.trc` is how users write one).
fn with_folder(path: &std::path::Path) -> Result<&std::path::Path> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    Ok(path)
}

/// Converts a kernel at a time, or a CTA at a time from and to our binary format: what is
/// read is written and dropped, so memory is bounded by the largest kernel (one CTA from a
/// binary file to a binary file), not the whole trace.
fn convert(a: ConvertArgs) -> Result<()> {
    let format = write_format(&a.output, a.to.as_deref())?;
    let opts = trace::ReadOptions {
        format: a.format.as_deref().map(options::format).transpose()?,
        allow_truncated: a.allow_truncated,
    };
    let (open, _) = stream::open(&a.input, opts)?;
    let mut out = CountingRows {
        writer: trace::TraceWriter::create(with_folder(&a.output)?, format)?,
        rows: 0,
    };
    if let Err(e) = open.stream(&readahead::wrap, &|s| s, &mut out) {
        if !a.allow_truncated || e.is_empty_trace() || out.writer.kernels() == 0 {
            // The writer, dropped, removes its unfinished files.
            return Err(e.into());
        }
        // Keep the complete kernels only.
        out.writer.abandon_kernel()?;
        eprintln!(
            "warning: {} is incomplete: converted the {} complete kernel(s) before this error: {e}",
            a.input.display(),
            out.writer.kernels()
        );
    }
    let rows = out.rows;
    say_written(&out.writer.finish()?, rows);
    Ok(())
}

/// A writer that counts the rows it is given.
struct CountingRows {
    writer: trace::TraceWriter,
    rows: u64,
}

impl trace::KernelSink for CountingRows {
    fn kernel(&mut self, k: trace::Kernel) -> Result<(), trace::TraceError> {
        self.rows += k.len() as u64;
        self.writer.write(&k)
    }
}

impl trace::CtaSink for CountingRows {
    fn begin_kernel(&mut self, header: &trace::Kernel) -> Result<(), trace::TraceError> {
        self.writer.begin_kernel(header)
    }
    fn cta(&mut self, cta: u32, rows: &trace::Columns) -> Result<(), trace::TraceError> {
        self.rows += rows.len() as u64;
        self.writer.cta(cta, rows)
    }
    fn issued(&mut self, rows: &trace::Columns) -> Result<(), trace::TraceError> {
        self.rows += rows.len() as u64;
        self.writer.issued(rows)
    }
    fn end_kernel(&mut self) -> Result<(), trace::TraceError> {
        self.writer.end_kernel()
    }
}

/// The output format `to` names, by default the one `path` implies.
fn write_format(path: &std::path::Path, to: Option<&str>) -> Result<trace::WriteFormat> {
    match to {
        None => Ok(trace::WriteFormat::for_path(path)),
        Some(name) => trace::WriteFormat::from_name(name).with_context(|| {
            format!("--to: unknown output format `{name}`: expected text, binary or nugteren")
        }),
    }
}

fn say_written(written: &[std::path::PathBuf], rows: u64) {
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    eprintln!("wrote {} ({rows} rows)", names.join(", "));
}
