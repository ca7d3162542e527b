//! The two shells over the core give the same report for the same trace and configuration:
//! the CLI (`warpscope sim --trace FILE --config C --json`, which streams a trace where it can) and
//! the app (opened on the file, its report exported as JSON), both through their public faces.
//! The configuration comes from one file, read by each shell through `config::file`.
#![cfg(all(feature = "gui", feature = "cli"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use warpscope::app::{Settings, Startup, WarpscopeApp};
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

/// The app's report of `trace` under the configuration file `cfg`, as a user gets it: the app
/// opened on the file with that configuration in its pane, the report exported as JSON once the
/// pane shows its result. With `streamed` the app streams the file (read by the simulation as it
/// runs, as it does for large files) instead of loading it whole.
fn app(trace: &Path, cfg: &Path, streamed: bool) -> serde_json::Value {
    let mut settings = Settings::default();
    let config = config::file::load(cfg).expect("the configuration loads");
    settings.panes = vec![(cfg.display().to_string(), config)];
    let startup = Startup {
        file: Some(trace.to_path_buf()),
        stream: streamed,
        ..Startup::default()
    };
    let app = WarpscopeApp::new(settings, startup, Arc::new(|| {}));
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut WarpscopeApp| app.ui(ui), app);
    let until = |h: &mut Harness<'static, WarpscopeApp>,
                 what: &str,
                 done: &dyn Fn(&WarpscopeApp) -> bool| {
        let start = Instant::now();
        while !done(h.state()) {
            h.step();
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{}: {what}",
                trace.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    until(&mut h, "the pane's result", &|a| a.settled());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    h.state_mut().export_report(out.clone());
    until(&mut h, "the export", &|a| a.idle());
    let text = std::fs::read_to_string(&out).expect("the app wrote its report");
    serde_json::from_str(&text).expect("one JSON object")
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
