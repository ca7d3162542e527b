//! Every `warpscope` command that README.md and docs/*.md show runs, as written, and
//! succeeds: a documented command that fails is a bug of the docs or of the tool, and this
//! test is how CI finds it.
//!
//! The commands are the lines of fenced code blocks that start with `warpscope` (with their
//! `\` continuations), run by `sh` in a scratch folder that holds the repository's
//! `sample-traces/`, `kernels/` and `hw/`, one document's commands in order (a command may
//! read what an earlier one wrote). A block whose info string is `text` shows a synopsis,
//! not commands. A file the user brings (`kernel.trc`, `run.log`, `TRACE`, ...) is replaced
//! by a stand-in of the same kind, written here ([`STAND_INS`]); a line naming a file with no
//! stand-in fails, so a new example needs its stand-in here. Lines that start with `sbatch`
//! run too: this test's `sbatch` runs the job array's tasks one after the other (a stand-in
//! for Slurm, which tests/cli/slurm.rs starts for real). Lines that start with another program
//! (`cargo`, `hw/run.sh`) are not run here: the README's two commands are CI itself, and
//! `hw/run.sh` needs a GPU.
//!
//! The docs describe the default build, so this runs with the `tables` feature (Parquet
//! output, sweep merge); the CLI-only build skips it.
#![cfg(feature = "tables")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::traces;

/// The documents whose commands run.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// A placeholder or user's file in the docs, and what stands in for it here.
const STAND_INS: &[(&str, &str)] = &[
    // docs/kernel-language.md's synopsis of the flags a line may add.
    (" [config flags]", ""),
    // A Nugteren et al. trace (README: `--compat gpu-cache-model`, `--format nugteren`).
    ("kernel.trc", "stand-in/kernel.trc"),
    // An NVBit mem_trace log.
    ("run.log", "stand-in/run.log"),
    // An Accel-Sim kernel file compressed by xz: the sample's.
    (
        "kernel-1.traceg.xz",
        "sample-traces/accelsim-matrixmul/kernel-1.traceg.xz",
    ),
    // A cuda-memtrace file cut short in its second kernel, compressed by zstd.
    ("big.trc.zst", "stand-in/big.trc.zst"),
    // A Dinero IV trace on a cluster's file system (docs/cluster.md).
    ("/data/run.din", "sample-traces/dinero-small.din"),
    // Any trace (docs/communication.md).
    ("TRACE", "sample-traces/accelsim-matrixmul"),
    // hw/run.sh's output folder (docs/hardware.md): the H100's.
    ("OUT_DIR/", "hw/h100/"),
    // docs/hardware.md's own kernel: Nsight Compute's report of it and its trace.
    ("report.csv", "sample-traces/h100-matmul/ncu.csv"),
    ("app.trace", "sample-traces/h100-matmul/matmul.wsb"),
    // An Accel-Sim GPU configuration: the QV100's options we read.
    ("gpgpusim.config", "stand-in/gpgpusim.config"),
];

/// Slurm's `sbatch` as this test stands it in: each task of the script's `--array=A-B` in
/// turn, with its `SLURM_ARRAY_TASK_ID`; fails if one fails.
const SBATCH: &str = r#"#!/bin/sh
set -e
range=$(sed -n 's/^#SBATCH --array=\([0-9]*\)-\([0-9]*\).*/\1 \2/p' "$1")
[ -n "$range" ] || { echo "sbatch stand-in: no --array in $1" >&2; exit 1; }
set -- "$1" $range
for i in $(seq "$2" "$3"); do SLURM_ARRAY_TASK_ID=$i bash "$1"; done
"#;

/// Writes the stand-ins into `dir/stand-in/` and `sbatch` into `dir/bin/`.
fn write_stand_ins(dir: &Path, warpscope: &Path) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("sbatch"), SBATCH).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let s = dir.join("stand-in");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accelsim/qv100.config"),
        s.join("gpgpusim.config"),
    )
    .unwrap();
    let gen = Command::new(warpscope)
        .args(["gen", "matmul", "n=32", "--to", "nugteren", "-o"])
        .arg(s.join("kernel.trc"))
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    traces::nvbit_file(&s.join("run.log"), false);
    let whole = s.join("whole.trc");
    traces::memtrace_file(&whole);
    let mut bytes = std::fs::read(&whole).unwrap();
    bytes.truncate(bytes.len() * 3 / 4 + 5);
    std::fs::write(
        s.join("big.trc.zst"),
        zstd::encode_all(&bytes[..], 3).unwrap(),
    )
    .unwrap();
}

/// The commands of the fenced blocks of `md`, with their line numbers.
fn commands(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in md.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                None => Some(info.trim().to_string()),
                Some(_) => None,
            };
            continue;
        }
        let Some(info) = &fence else { continue };
        if info == "text" {
            continue;
        }
        if let Some((n, mut cmd)) = pending.take() {
            cmd.push_str(trimmed.trim_end_matches('\\'));
            if trimmed.ends_with('\\') {
                pending = Some((n, cmd));
            } else {
                out.push((n, cmd));
            }
            continue;
        }
        if ["warpscope ", "sbatch "]
            .iter()
            .any(|p| trimmed.starts_with(p))
        {
            let cmd = trimmed.trim_end_matches('\\').to_string();
            if trimmed.ends_with('\\') {
                pending = Some((i + 1, cmd));
            } else {
                out.push((i + 1, cmd));
            }
        }
    }
    out
}

fn stand_in(cmd: &str) -> String {
    let mut c = cmd.to_string();
    for (from, to) in STAND_INS {
        c = c.replace(from, to);
    }
    c
}

#[cfg(unix)]
fn link(from: &Path, to: &Path) {
    std::os::unix::fs::symlink(from, to).unwrap();
}

#[test]
fn the_extraction_finds_commands_and_skips_synopses() {
    let md = "text\n```sh\n# a comment\nwarpscope sim --kernel a \\\n    --json\ncargo run\nsbatch s\n```\n\
              ```text\nwarpscope sim (--trace FILE | --kernel K)\n```\n```\nwarpscope gen --list\n```\n";
    assert_eq!(
        commands(md),
        vec![
            (4, "warpscope sim --kernel a --json".to_string()),
            (7, "sbatch s".to_string()),
            (13, "warpscope gen --list".to_string())
        ]
    );
    assert_eq!(
        stand_in("warpscope sim --trace kernel.trc [config flags]"),
        "warpscope sim --trace stand-in/kernel.trc"
    );
}

#[cfg(unix)]
#[test]
fn every_documented_command_runs() {
    let warpscope = PathBuf::from(env!("CARGO_BIN_EXE_warpscope"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = format!(
        "{}:{}",
        warpscope.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in documents() {
        let md = std::fs::read_to_string(&doc).unwrap();
        let cmds = commands(&md);
        if cmds.is_empty() {
            continue;
        }
        let name = doc.file_name().unwrap().to_string_lossy().to_string();
        let dir = std::env::temp_dir().join(format!(
            "warpscope-doc-{}-{}",
            name.trim_end_matches(".md"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for d in ["sample-traces", "kernels", "hw"] {
            link(&root.join(d), &dir.join(d));
        }
        write_stand_ins(&dir, &warpscope);
        for (line, cmd) in cmds {
            let run = stand_in(&cmd);
            let out = Command::new("sh")
                .arg("-c")
                .arg(&run)
                .current_dir(&dir)
                .env("PATH", format!("{}:{path}", dir.join("bin").display()))
                // The app's entry point: a command that would open a window prints instead.
                .env_remove("DISPLAY")
                .env_remove("WAYLAND_DISPLAY")
                .output()
                .unwrap();
            ran += 1;
            if !out.status.success() {
                failures.push(format!(
                    "{name}:{line}: `{cmd}`{}\n{}",
                    if run != cmd {
                        format!(" (run as `{run}`)")
                    } else {
                        String::new()
                    },
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .filter(|l| !l.contains("% of"))
                        .take(6)
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(ran >= 40, "only {ran} documented commands found");
    assert!(
        failures.is_empty(),
        "{} of {ran} documented commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
