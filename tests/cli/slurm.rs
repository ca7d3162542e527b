//! `sweep --slurm` on a real Slurm: a one-node cluster on localhost (munged, slurmctld and
//! slurmd from Debian's packages, started here with a minimal configuration), the generated
//! job array submitted with `sbatch` and waited for with `squeue`, its shards merged: the
//! table equals the sweep run at once. A task killed (`scancel`) while it runs and submitted
//! again runs only the points it had not finished, and the table is again the sweep's; a
//! shard table cut short is named by `merge`.
//!
//! It needs root and Slurm's packages (`.ci/run` installs them and sets WARPSCOPE_SLURM=1,
//! which makes a missing Slurm a failure); elsewhere it says why it did not run.
#![cfg(feature = "tables")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run;
use run::ok as warpscope;

/// A one-node Slurm cluster in a temporary folder; stopped when dropped.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

fn found(program: &str) -> bool {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(program).exists())
}

impl Cluster {
    /// `None` (with the reason) where Slurm or root is missing and CI did not ask for it.
    fn start() -> Option<Cluster> {
        let required = std::env::var("WARPSCOPE_SLURM").is_ok_and(|v| v == "1");
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let missing: Vec<&str> = [
            "munged",
            "mungekey",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
        ]
        .into_iter()
        .filter(|p| !found(p))
        .collect();
        if !root || !missing.is_empty() {
            let why = format!(
                "not run: needs root ({}) and Slurm (missing: {missing:?}); .ci/run installs it",
                if root { "yes" } else { "no" }
            );
            assert!(!required, "WARPSCOPE_SLURM=1 but {why}");
            eprintln!("{why}");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("warpscope-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["state", "spool", "munge"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let munge = dir.join("munge");
        let key = munge.join("munge.key");
        let socket = munge.join("munge.socket");
        run("mungekey", &["-c", "-k", key.to_str().unwrap()]);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o711)).unwrap();
        let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let port = 20000 + (std::process::id() % 20000) as u16 * 2;
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=warpscope\nSlurmctldHost={host}(127.0.0.1)\nAuthType=auth/munge\n\
                 AuthInfo=socket={}\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n\
                 SlurmctldPort={port}\nSlurmdPort={}\nStateSaveLocation={d}/state\n\
                 SlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
                 SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/slurmctld.log\n\
                 SlurmdLogFile={d}/slurmd.log\nProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\nSchedulerType=sched/backfill\nSelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_CPU_Memory\nReturnToService=2\n\
                 JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
                 MpiDefault=none\nNodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
                 PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
                socket.display(),
                port + 1
            ),
        )
        .unwrap();
        let mut c = Cluster {
            dir: dir.clone(),
            conf: conf.clone(),
            daemons: Vec::new(),
        };
        c.daemons.push(daemon(
            "munged",
            &[
                "-F",
                "-f",
                &format!("--socket={}", socket.display()),
                &format!("--key-file={}", key.display()),
                &format!("--log-file={}/munged.log", munge.display()),
                &format!("--pid-file={}/munged.pid", munge.display()),
                &format!("--seed-file={}/seed", munge.display()),
            ],
        ));
        wait_for("munged's socket", Duration::from_secs(20), || {
            socket.exists()
        });
        let conf_s = conf.to_str().unwrap();
        c.daemons.push(daemon("slurmctld", &["-D", "-f", conf_s]));
        c.daemons.push(daemon("slurmd", &["-D", "-f", conf_s]));
        wait_for("the node to be idle", Duration::from_secs(60), || {
            c.slurm("sinfo", &["-h", "-o", "%T"]).trim() == "idle"
        });
        Some(c)
    }

    /// A Slurm client command's standard output.
    fn slurm(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .expect(program);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits `script` (with `extra` sbatch options); returns the job id.
    fn submit(&self, script: &str, extra: &[&str]) -> String {
        let mut args = vec!["--parsable"];
        args.extend(extra);
        args.push(script);
        let id = self.slurm("sbatch", &args).trim().to_string();
        assert!(
            !id.is_empty(),
            "sbatch gave no job id; see {}",
            self.dir.display()
        );
        id
    }

    /// Waits until job `id`'s tasks have left the queue; returns their states.
    fn wait(&self, id: &str) -> Vec<String> {
        wait_for("the job array to finish", Duration::from_secs(300), || {
            self.slurm("squeue", &["-h", "-j", id]).trim().is_empty()
        });
        self.slurm("scontrol", &["show", "job", id])
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("JobState="))
            .map(str::to_string)
            .collect()
    }

    /// Submits `script` and waits for every task to complete.
    fn submit_and_wait(&self, script: &str, extra: &[&str]) {
        let id = self.submit(script, extra);
        let states = self.wait(&id);
        assert!(
            !states.is_empty() && states.iter().all(|s| s == "COMPLETED"),
            "job {id}: {states:?}"
        );
    }
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().expect(program);
    assert!(status.success(), "{program} {args:?}");
}

fn daemon(program: &str, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(program)
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_sweep_run_as_a_slurm_job_array_and_merged_equals_the_sweep_run_at_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let sweep = cluster.dir.join("sweep");
    let d = sweep.to_str().unwrap();
    let grid = [
        "--kernel",
        "matmul",
        "n=32",
        "--vary",
        "ways=1,2,4",
        "--vary",
        "line-size=64,128",
    ];
    let (local, _) = warpscope(&[&["sweep"][..], &grid].concat());
    let mut args = vec!["sweep"];
    args.extend(grid);
    args.extend([
        "--slurm",
        d,
        "--shards",
        "3",
        "--jobs",
        "1",
        "--max-running",
        "2",
    ]);
    let (command, _) = warpscope(&args);
    let script = sweep.join("sweep.sbatch");
    assert_eq!(command.trim(), format!("sbatch '{}'", script.display()));
    let text = std::fs::read_to_string(&script).unwrap();
    for line in [
        "#SBATCH --array=0-2%2",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --mem=",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    let script = script.to_str().unwrap();
    cluster.submit_and_wait(script, &[]);
    for k in 0..3 {
        let log = std::fs::read_to_string(sweep.join(format!("logs/shard-{k}.err"))).unwrap();
        assert!(
            log.contains(&format!("shard {k}/3: 2 points (2 run now")),
            "{log}"
        );
    }
    let merged = sweep.join("results.parquet");
    let m = merged.to_str().unwrap();
    let (printed, _) = warpscope(&["sweep", "merge", d, "-o", m, "--print"]);
    assert_eq!(printed, local);
    // A task killed while it runs: one shard over two inputs, killed (scancel) once the
    // first input's rows are written, while the second, larger one runs. Submitted again,
    // it runs the second input's points only, and the table is the same as the sweep's.
    let killed = cluster.dir.join("killed");
    let k = killed.to_str().unwrap();
    let big = "--kernel matmul n=192";
    let mut args = vec!["sweep", "--kernel", "matmul", "n=32", "--input", big];
    args.extend([
        "--vary", "ways=1,2", "--slurm", k, "--shards", "1", "--jobs", "1",
    ]);
    warpscope(&args);
    let script = killed.join("sweep.sbatch");
    let script = script.to_str().unwrap();
    let id = cluster.submit(script, &[]);
    let rows = killed.join("rows");
    let written = || std::fs::read_dir(&rows).map_or(0, |d| d.count());
    wait_for("the first input's rows", Duration::from_secs(120), || {
        written() >= 2
    });
    cluster.slurm("scancel", &[&id]);
    let states = cluster.wait(&id);
    assert_eq!(
        states,
        ["CANCELLED"],
        "the task was to be killed while it ran"
    );
    assert_eq!(written(), 2, "the second input's rows came before the kill");
    assert!(!killed.join("shards/shard-0-of-1.parquet").exists());
    cluster.submit_and_wait(script, &[]);
    let log = std::fs::read_to_string(killed.join("logs/shard-0.err")).unwrap();
    assert!(
        log.contains("shard 0/1: 4 points (2 run now, 2 done before)"),
        "{log}"
    );
    let merged_k = killed.join("results.csv");
    let (printed, _) = warpscope(&[
        "sweep",
        "merge",
        k,
        "-o",
        merged_k.to_str().unwrap(),
        "--print",
    ]);
    let one =
        |input: &[&str]| warpscope(&[&["sweep"][..], input, &["--vary", "ways=1,2"]].concat()).0;
    let small = one(&["--kernel", "matmul", "n=32"]);
    let large = one(&["--kernel", "matmul", "n=192"]);
    assert_eq!(
        printed,
        format!("{small}{}", large.split_once('\n').unwrap().1)
    );
    // A shard table cut short by a crash is named.
    let shard = sweep.join("shards/shard-2-of-3.parquet");
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() - 10]).unwrap();
    let e = run::fails(&["sweep", "merge", d, "-o", m]);
    assert!(e.contains("shard-2-of-3.parquet"), "{e}");
    let dir = cluster.dir.clone();
    drop(cluster);
    let _ = std::fs::remove_dir_all(dir);
}
