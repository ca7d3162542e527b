//! Command-line arguments (clap derive).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use warpscope::config::choice::Choice;
use warpscope::config::{Coalescing, IssuePolicy, Replacement, ReuseMode, SetIndex, WritePolicy};
use warpscope::trace::Format;

/// `--help` for a choice: what it is, then every option with what it does, from its registry.
fn choices<T: Choice>(what: &str) -> String {
    let options: Vec<String> = T::ENTRIES
        .iter()
        .map(|e| format!("  {:<12} {}", e.usage(), e.description))
        .collect();
    format!("{what}:\n{}", options.join("\n"))
}

#[derive(Parser, Debug)]
#[command(
    name = "warpscope",
    version,
    about = "How GPU kernels use the L1 cache: trace -> scheduler -> coalescer -> cache -> statistics"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A trace to open in the app (without the app: to simulate on the Fermi 16 KB preset).
    pub file: Option<PathBuf>,
    /// Write one PNG per main view and one of the side-by-side mode into DIR, then exit
    /// (used by screenshots/take.sh).
    #[arg(long, value_name = "DIR", hide = true)]
    pub screenshots: Option<PathBuf>,
    /// Start the app with default settings instead of the saved ones.
    #[arg(long)]
    pub fresh: bool,
    /// The app window's size, as WIDTHxHEIGHT (for example 1280x800).
    #[arg(long, value_name = "WxH", value_parser = parse_window)]
    pub window: Option<[f32; 2]>,
    /// Open a sweep table (`sweep -o`'s .csv, .parquet or .json, a shard, `sweep merge`'s) in the app, as a heatmap.
    #[arg(long, value_name = "FILE")]
    pub sweep: Option<PathBuf>,
    /// Read the trace file in the app as each simulation runs instead of loading it whole
    /// (what the app does by itself for files over 256 MiB): memory stays bounded, and the
    /// address view draws a regular sample of the requests.
    #[arg(long)]
    pub stream: bool,
    /// A large trace file the screenshot plan opens streamed for its last shot (take.sh).
    #[arg(long, value_name = "FILE", hide = true)]
    pub shot_streamed: Option<PathBuf>,
    /// Threads for the app's sweeps and timing-model runs (default: all cores; without the
    /// app: for the simulation, as `sim --jobs`).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

/// Parses `WIDTHxHEIGHT`.
fn parse_window(s: &str) -> Result<[f32; 2], String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, for example 1280x800, found `{s}`"))?;
    let num = |v: &str| {
        v.trim()
            .parse::<u16>()
            .ok()
            .filter(|&n| n >= 100)
            .map(f32::from)
            .ok_or_else(|| format!("`{v}` is not a size in pixels of at least 100"))
    };
    Ok([num(w)?, num(h)?])
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate a trace file or a built-in kernel and report cache statistics.
    Sim(SimArgs),
    /// Write the trace of a built-in kernel to a file.
    Gen(GenArgs),
    /// Convert a trace between formats (.wst text, .wsb binary; reads din too).
    Convert(ConvertArgs),
    /// Run a grid of configurations in parallel and write one row per configuration; or plan
    /// it, run one shard of it, write it as a Slurm job array, and merge the shards
    /// (docs/cluster.md).
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Sweep(Box<SweepArgs>),
    /// Inter-CTA communication across kernel launches (Rieber 2017): volumes, pairs, degrees,
    /// bisection, strides, per-launch evolution.
    Comm(CommArgs),
    /// Compare the L1 counters measured on a GPU (hw/run.sh's counters.csv) with the
    /// simulation of the same kernels: requests and sectors must be equal, hit rates are
    /// compared (docs/hardware.md).
    Hwcheck(HwcheckArgs),
    /// Is each kernel memory-bound or compute-bound, how long does it take and what would
    /// change that: the MWP/CWP model of Hong and Kim 2009 as Dasgupta 2011 extends it
    /// (docs/analyzer.md).
    Analyze(AnalyzeArgs),
    /// Why did request N hit or miss: what it asked for, its line's previous use, the
    /// distinct lines since, who evicted it and by which rule of the policy, its class and
    /// what would have changed it (docs/explain.md). Takes the same flags as `sim`.
    Explain(ExplainArgs),
    /// The lessons (docs/lessons.md): list them, or run one: its text and its panes'
    /// kernels, settings and results side by side.
    Lesson(LessonArgs),
}

/// Where the trace comes from.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Trace file to simulate.
    #[arg(long, conflicts_with = "kernel")]
    pub trace: Option<PathBuf>,
    #[arg(long, requires = "trace", help = choices::<Format>(
        "Trace format (detected from the content when omitted; compressed input, .gz, .zst or .xz, is undone on the fly)"
    ))]
    pub format: Option<String>,
    /// Load a truncated or damaged trace up to its last complete kernel (and say so).
    #[arg(long, requires = "trace")]
    pub allow_truncated: bool,
    /// Built-in kernel to simulate (see `warpscope gen --list`).
    #[arg(long)]
    pub kernel: Option<String>,
    /// A kernel written in the kernel language (docs/kernel-language.md; examples in
    /// kernels/), its params set with KEY=VALUE.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["trace", "kernel"])]
    pub source: Option<PathBuf>,
    /// Kernel parameters as key=value.
    #[arg(value_name = "KEY=VALUE")]
    pub params: Vec<String>,
}

/// Model configuration flags; every flag overrides the preset.
#[derive(Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// Start from a preset: fermi-16k, fermi-48k, gtx470-16k, gtx470-48k (timing model),
    /// kepler, volta, ampere, hopper.
    #[arg(long)]
    pub preset: Option<String>,
    /// Load a configuration file: TOML for a `.toml` name, JSON otherwise (as printed under
    /// "config" by --json). Flags given as well change it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Cache size, e.g. 16K, 48K, 1M or bytes.
    #[arg(long)]
    pub cache_size: Option<String>,
    /// Line size in bytes.
    #[arg(long)]
    pub line_size: Option<String>,
    /// Ways per set, or `full` for fully associative.
    #[arg(long)]
    pub ways: Option<String>,
    /// Sector size in bytes (defaults to the line size: no sectors).
    #[arg(long)]
    pub sector_size: Option<String>,
    #[arg(long, help = choices::<Replacement>("Victim choice"))]
    pub replacement: Option<String>,
    #[arg(long, help = choices::<WritePolicy>("What stores do"))]
    pub write_policy: Option<String>,
    #[arg(long, help = choices::<SetIndex>("Set index function"))]
    pub set_index: Option<String>,
    /// on: global loads and stores skip the L1 and go to the L2 (GPGPU-Sim's
    /// -gpgpu_gmem_skip_L1D, nvcc -Xptxas -dlcm=cg); off (default): the L1 caches them.
    #[arg(long, value_name = "on|off")]
    pub l1_bypass: Option<String>,
    #[arg(long, help = choices::<Coalescing>("How a warp instruction becomes requests"))]
    pub coalescing: Option<String>,
    #[arg(long, help = choices::<IssuePolicy>("Warp issue policy"))]
    pub schedule: Option<String>,
    /// Threads per warp (1 = per-thread scheduling as in Crawford 2014 §5.2).
    #[arg(long)]
    pub warp_size: Option<String>,
    /// Warps per fetch group (two-level policy).
    #[arg(long)]
    pub fetch_group: Option<String>,
    /// Number of SMs the CTAs are spread over.
    #[arg(long)]
    pub sms: Option<String>,
    /// Simulate this SM's L1 (default 0).
    #[arg(long, conflicts_with_all = ["sample_sms", "all_sms"])]
    pub sm: Option<String>,
    /// Simulate a seeded random sample of this many SMs.
    #[arg(long, conflicts_with = "all_sms")]
    pub sample_sms: Option<String>,
    /// Simulate every SM with its own L1.
    #[arg(long)]
    pub all_sms: bool,
    /// Resident CTAs per SM.
    #[arg(long)]
    pub max_ctas: Option<String>,
    /// Resident threads per SM.
    #[arg(long)]
    pub max_threads: Option<String>,
    /// Resident warps per SM.
    #[arg(long)]
    pub max_warps: Option<String>,
    /// Model only the CTAs whose threads all have ids below N (0 = all; the gtx470 presets
    /// use 8192, the first threads the tracer of Nugteren et al. 2014 records).
    #[arg(long, value_name = "N")]
    pub thread_limit: Option<String>,
    /// Seed for random scheduling, replacement and SM sampling.
    #[arg(long)]
    pub seed: Option<String>,
    #[arg(long, help = choices::<ReuseMode>("How reuse distances are measured"))]
    pub reuse: Option<String>,
    /// Skip reuse-distance analysis (faster): `--reuse off`.
    #[arg(long, conflicts_with = "reuse")]
    pub no_reuse: bool,
    /// Use the GPU timing model (Nugteren et al. 2014 §4.2-4.7: latencies, MSHRs, warp queue).
    #[arg(long)]
    pub timing: bool,
    /// Timing: steps from issue to effect for a hit.
    #[arg(long)]
    pub hit_latency: Option<String>,
    /// Timing: minimum miss latency λmin (with a simulated L2: of a fill the L2 misses).
    #[arg(long)]
    pub miss_latency: Option<String>,
    /// Timing: minimum latency of a fill the simulated L2 hits.
    #[arg(long)]
    pub l2_latency: Option<String>,
    /// Timing: σ of the half-normal part of the miss latency (0 = fixed latency).
    #[arg(long)]
    pub miss_latency_stddev: Option<String>,
    /// Timing: MSHRs per SM (0 = unlimited).
    #[arg(long)]
    pub mshrs: Option<String>,
    /// Timing: MSHRs one warp may hold (0 = no limit).
    #[arg(long)]
    pub mshrs_per_warp: Option<String>,
    /// Timing: on|off, requests for a line in flight take effect when it arrives.
    #[arg(long)]
    pub clip: Option<String>,
    /// Timing: on|off, warps wait for their requests' latency before issuing again.
    #[arg(long)]
    pub warp_delay: Option<String>,
    /// Timing: on|off, run the comparison models that give the five miss classes.
    #[arg(long)]
    pub classify: Option<String>,
    /// Reproduce another tool exactly: gpu-cache-model (the released model of Nugteren et
    /// al. 2014; keeps the cache size, line size, ways, MSHRs and miss latency given).
    #[arg(long, value_name = "MODE")]
    pub compat: Option<String>,
    /// The shared L2 behind the L1s, simulated with --all-sms: `on` (the preset's, or Fermi
    /// GTX480's), `off`, or KEY=VALUE to change it: channels, slices-per-channel, slice-hash
    /// (linear, xor, ipoly), address-map, slice-size, ways, line-size, sector-size,
    /// set-index, replacement (docs/model.md, "The L2"). Repeatable.
    #[arg(long, value_name = "on|off|KEY=VALUE")]
    pub l2: Vec<String>,
    /// Read the SMs, the L1 and the L2 from an Accel-Sim / GPGPU-Sim configuration file
    /// (gpgpusim.config); flags given as well change it.
    #[arg(long, value_name = "FILE")]
    pub accelsim_config: Option<PathBuf>,
    /// Timing: set one behaviour where our model and the released one differ, KEY=VALUE
    /// (cta-launch, issue, mshr-check, arrivals, effect-order, warp-return, finished-warps,
    /// stores, kernels, hit-rule, classes, merging; see docs/model.md). Repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub rule: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Print one JSON object (schema in docs/cli.md) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write every cache request (issue order, SM, CTA, warp, instruction, line, set, hit,
    /// miss class, reuse distance) to FILE.csv or FILE.parquet.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Write the report to FILE, in the form its extension picks: .txt (the readable
    /// report), .json (as --json prints it), .csv or .parquet (the per-instruction and
    /// per-CTA tables, to STEM.instructions.EXT and STEM.ctas.EXT for FILE = STEM.EXT).
    #[arg(long, value_name = "FILE")]
    pub export_summary: Option<PathBuf>,
    /// Threads that simulate: with several SMs simulated (--all-sms, --sample-sms), they
    /// are split among this many (default: one per core); under the timing model, its four
    /// runs and its SMs are; the result is the same.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

impl SimArgs {
    #[cfg_attr(feature = "gui", allow(dead_code))]
    pub fn parse_from_words(words: &[&str]) -> anyhow::Result<SimArgs> {
        let cli = Cli::try_parse_from(
            std::iter::once("warpscope")
                .chain(std::iter::once("sim"))
                .chain(words.iter().copied()),
        )?;
        match cli.command {
            Some(Command::Sim(a)) => Ok(a),
            _ => anyhow::bail!("internal: expected sim arguments"),
        }
    }
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Kernel name.
    pub kernel: Option<String>,
    /// A kernel written in the kernel language instead of a built-in one (its params set
    /// with KEY=VALUE).
    #[arg(long, value_name = "FILE")]
    pub source: Option<PathBuf>,
    /// Parameters as key=value.
    #[arg(value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Output file (.wsb binary, anything else text, unless --to says otherwise).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Output format: text, binary or nugteren (the .trc files of Nugteren et al.'s released
    /// model, one per kernel); by default from the file name.
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<String>,
    /// List the built-in kernels and their parameters.
    #[arg(long)]
    pub list: bool,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The trace to convert, in any format `sim --trace` reads (compressed too).
    pub input: PathBuf,
    /// Output file (.wsb binary, anything else text, unless --to says otherwise).
    pub output: PathBuf,
    /// Output format: text, binary or nugteren (the .trc files of Nugteren et al.'s released
    /// model, one per kernel); by default from the file name.
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<String>,
    #[arg(long, help = choices::<Format>("Input format (detected when omitted)"))]
    pub format: Option<String>,
    /// Convert a truncated trace up to its last complete kernel (and say so).
    #[arg(long)]
    pub allow_truncated: bool,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub action: Option<SweepAction>,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// A parameter and its values, e.g. ways=1,2,4,8 (repeatable; the grid is their product;
    /// `preset=fermi-16k,volta` varies the preset, first).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Another input of the plan, written as sweep's own input flags in one string
    /// (`--input '--kernel matmul n=64'`, `--input '--trace run.din'`); repeatable. The plan's
    /// points are its inputs times the --vary grid.
    #[arg(long = "input", value_name = "FLAGS", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    /// Write the plan into DIR (plan.csv: each point with a stable id; base.json: the
    /// configuration the --vary keys change) and stop. With --shard: run a shard of the plan
    /// in DIR instead.
    #[arg(long, value_name = "DIR")]
    pub plan: Option<PathBuf>,
    /// K/N: run shard K (0 to N-1) of the plan in --plan DIR. Each finished point's row is
    /// written at once (DIR/rows/), so a restarted shard skips it; the shard's table goes to
    /// DIR/shards/.
    #[arg(long, value_name = "K/N", requires = "plan")]
    pub shard: Option<String>,
    /// Format of the shard tables: parquet or csv.
    #[arg(long, default_value = "parquet", value_name = "FORMAT")]
    pub shard_format: String,
    /// Write the plan and a Slurm job array that runs it (DIR/sweep.sbatch, one task per
    /// shard) into DIR, and print the sbatch command.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["plan", "shard"])]
    pub slurm: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: SlurmArgs,
    /// Write the table here (.csv, .json or .parquet: the app opens each); CSV on stdout when omitted.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Worker threads (default: all cores; with --slurm, each task's CPUs, default 2).
    #[arg(long)]
    pub jobs: Option<usize>,
}

#[derive(Subcommand, Debug)]
pub enum SweepAction {
    /// Check that every point of the plan in DIR is in its shard tables exactly once, and
    /// concatenate them into one table.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The sweep's directory (written by --slurm or --plan).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The merged table (.parquet or .csv).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Also print the table `sweep` prints (CSV: the varied keys and the counters).
    #[arg(long)]
    pub print: bool,
}

/// The job array `sweep --slurm` writes.
#[derive(Args, Debug, Default)]
pub struct SlurmArgs {
    /// Shards (array tasks); default: one per point, at most 64.
    #[arg(long, requires = "slurm")]
    pub shards: Option<usize>,
    /// Array tasks running at once (`--array=...%N`).
    #[arg(long, default_value_t = 8, requires = "slurm")]
    pub max_running: usize,
    /// Slurm partition.
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// Time limit of each task (Slurm's format, e.g. 2:00:00).
    #[arg(long, requires = "slurm")]
    pub time: Option<String>,
    /// Account to charge.
    #[arg(long, requires = "slurm")]
    pub account: Option<String>,
    /// Memory of each task in MiB (default: estimated from the plan).
    #[arg(long, value_name = "MIB", requires = "slurm")]
    pub mem: Option<u64>,
    /// An extra `#SBATCH` option, e.g. `--qos=short` (repeatable).
    #[arg(long = "sbatch", value_name = "OPTION", requires = "slurm")]
    pub extra: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CommArgs {
    /// The trace file; with --kernel, the kernel's parameters as key=value instead.
    #[arg(value_name = "TRACE | KEY=VALUE")]
    pub args: Vec<String>,
    /// Trace format (detected from the content when omitted); see `warpscope sim --help`.
    #[arg(long, conflicts_with = "kernel")]
    pub format: Option<String>,
    /// Load a truncated trace up to its last complete kernel (and say so).
    #[arg(long, conflicts_with = "kernel")]
    pub allow_truncated: bool,
    /// Built-in kernel, e.g. hotspot, histogram2, nbody, bfs-levels (see `warpscope gen --list`).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Print one JSON object (schema in docs/communication.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Rows of the pair table in the text output.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

#[derive(Args, Debug)]
pub struct HwcheckArgs {
    /// The counters.csv that hw/run.sh wrote (a committed one: hw/h100/counters.csv).
    #[arg(required_unless_present = "ncu", conflicts_with = "ncu")]
    pub csv: Option<PathBuf>,
    /// Your own kernels instead: Nsight Compute's raw CSV of them (`ncu --csv --page raw`),
    /// beside --trace, the trace of the same launches (docs/hardware.md, "Your own kernels").
    #[arg(long, value_name = "REPORT", requires = "trace")]
    pub ncu: Option<PathBuf>,
    /// The trace of the launches of --ncu's report (any format `sim` reads).
    #[arg(long, value_name = "TRACE", requires = "ncu")]
    pub trace: Option<PathBuf>,
    /// The trace's format (detected when omitted).
    #[arg(long, requires = "trace")]
    pub format: Option<String>,
    /// The configuration to simulate with (default: --preset hopper); every SM is simulated.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LessonArgs {
    /// The lesson (without one: the list).
    pub name: Option<String>,
    /// Print one JSON object instead of the text and table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The request to explain: its number in the run's request order, from 0 (the app shows
    /// it in the request's tooltip).
    #[arg(long, value_name = "N")]
    pub request: u64,
    /// Print one JSON object (schema in docs/explain.md) instead of the story.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The GPU model: gt200 (Dasgupta 2011's tuned Tesla C1060). `--preset` is the same.
    #[arg(long, visible_alias = "preset", default_value = "gt200")]
    pub gpu: String,
    /// Dynamic instructions per warp (Accel-Sim traces count them; otherwise
    /// --compute-per-memory or the kernel's default is used).
    #[arg(long)]
    pub instructions: Option<f64>,
    /// Compute instructions per memory instruction, for traces without instruction counts.
    #[arg(long)]
    pub compute_per_memory: Option<f64>,
    /// High-latency instructions (square root, division, transcendental) per warp.
    #[arg(long)]
    pub high_latency: Option<f64>,
    /// Loads a thread can have in flight at once (Accel-Sim traces say; default 1).
    #[arg(long)]
    pub independent_loads: Option<f64>,
    /// Requests per fetch, instead of the measured merging of duplicate loads.
    #[arg(long)]
    pub duplicate_loads: Option<f64>,
    /// Active blocks per SM, instead of the GPU's residency limits.
    #[arg(long)]
    pub active_blocks: Option<u32>,
    /// SM clock in MHz.
    #[arg(long)]
    pub clock_mhz: Option<f64>,
    /// Peak memory bandwidth in GB/s.
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// Base memory latency in cycles.
    #[arg(long)]
    pub base_latency: Option<f64>,
    /// Departure delays of 32, 64 and 128-byte transactions in cycles, e.g. 37,37,58.
    #[arg(long)]
    pub departure_delay: Option<String>,
    /// Departure delay of vector transactions in cycles.
    #[arg(long)]
    pub vector_delay: Option<f64>,
    /// SMs of the GPU.
    #[arg(long)]
    pub sms: Option<u32>,
    /// Print one JSON object (schema in docs/analyzer.md) instead of the report.
    #[arg(long)]
    pub json: bool,
}
