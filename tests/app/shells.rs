//! The two shells over the core give the same report for the same trace and configuration:
//! the CLI (`warpscope sim --trace FILE --config C --json`, which streams a trace where it can) and
//! the app (a trace loaded by its job, simulated by its pane job). The configuration comes
//! from one file, read by each shell through `config::file`.
#![cfg(all(feature = "gui", feature = "cli"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use warpscope::app::job::{Job, Wake};
use warpscope::app::worker::{self, Loaded, Source};
use warpscope::config::{self, SimConfig};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
}

/// The CLI's JSON report of `trace` under the configuration file `cfg`.
fn cli(trace: &Path, cfg: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(["sim", "--trace"])
        .arg(trace)
        .arg("--config")
        .arg(cfg)
        .args(extra)
        .arg("--json")
        .output()
        .expect("run warpscope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// The app's report of `trace` under the configuration file `cfg`, as its jobs make it: the
/// file read whole, or with `streamed` read by the simulation as it runs (as the app does for
/// large files).
fn app(trace: &Path, cfg: &Path, streamed: bool) -> serde_json::Value {
    let wake: Wake = Arc::new(|| {});
    let source = Source::File {
        path: trace.to_path_buf(),
        format: None,
        allow_truncated: false,
        whole_up_to: if streamed { 0 } else { u64::MAX },
    };
    let mut load = Job::spawn("load", &wake, move |p| worker::load_source(source, p));
    let loaded = load
        .wait(Duration::from_secs(120))
        .expect("loaded in time")
        .unwrap_or_else(|e| panic!("loading {}: {e:?}", trace.display()));
    let Loaded::Trace(data) = loaded else {
        panic!("a file is never too large to load")
    };
    let config = config::file::load(cfg).expect("the configuration loads");
    let mut sim = Job::spawn("sim", &wake, move |p| worker::simulate(config, &data, p));
    let result = sim
        .wait(Duration::from_secs(120))
        .expect("simulated in time")
        .unwrap_or_else(|e| panic!("simulating: {e:?}"));
    serde_json::to_value(&result.report).expect("the report serializes")
}

fn config_file(dir: &Path, name: &str, cfg: &SimConfig) -> PathBuf {
    let path = dir.join(name);
    config::file::save(&path, cfg).expect("the configuration is written");
    path
}

#[test]
fn the_cli_and_the_app_report_the_same_for_the_same_trace_and_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let mut wbwa = config::preset("fermi-16k").unwrap();
    wbwa.cache.write_policy = config::WritePolicy::Wbwa;
    wbwa.cache.replacement = config::Replacement::Fifo;
    let timing = config::preset("gtx470-16k").unwrap();
    let cases = [
        // A Dinero IV trace: the CLI streams it in chunks of rows, the app loads it whole.
        (
            "dinero-small.din",
            config_file(dir.path(), "wbwa.toml", &wbwa),
        ),
        // cuda-memtrace and Accel-Sim: the CLI streams CTA by CTA, the app loads them whole.
        ("table2.trc", config_file(dir.path(), "fermi.json", &wbwa)),
        (
            "accelsim-matrixmul",
            config_file(
                dir.path(),
                "fermi.toml",
                &config::preset("fermi-16k").unwrap(),
            ),
        ),
        // The timing model.
        (
            "table2.trc",
            config_file(dir.path(), "timing.toml", &timing),
        ),
    ];
    for (trace, cfg) in &cases {
        let path = sample(trace);
        let (from_cli, from_app) = (cli(&path, cfg, &[]), app(&path, cfg, false));
        assert!(
            from_cli["requests"].as_u64().is_some_and(|n| n > 0),
            "{trace}: {from_cli}"
        );
        assert_eq!(
            from_cli,
            from_app,
            "{trace} under {}: the CLI and the app differ",
            cfg.display()
        );
        if from_cli.get("timing").is_none_or(|t| t.is_null()) {
            assert_eq!(
                from_cli,
                app(&path, cfg, true),
                "{trace} under {}: the CLI and the app streaming it differ",
                cfg.display()
            );
        }
    }
}
