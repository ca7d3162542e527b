//! `sweep --slurm` on a real Slurm: a one-node cluster on localhost (munged, slurmctld and
//! slurmd from Debian's packages, started here with a minimal configuration), the generated
//! job array submitted with `sbatch` and waited for with `squeue`, its shards merged: the
//! table equals the sweep run at once. Then one task's output is lost as a killed task would
//! lose it, that task alone is submitted again and the table is the same; a shard table cut
//! short is named by `merge`.
//!
//! It needs root and Slurm's packages (`.ci/run` installs them and sets WARPSCOPE_SLURM=1,
//! which makes a missing Slurm a failure); elsewhere it says why it did not run.
#![cfg(feature = "tables")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod run;
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

    /// Submits `script` (with `extra` sbatch options) and waits until its tasks have left
    /// the queue; returns the job id.
    fn submit_and_wait(&self, script: &str, extra: &[&str]) -> String {
        let mut args = vec!["--parsable"];
        args.extend(extra);
        args.push(script);
        let id = self.slurm("sbatch", &args).trim().to_string();
        assert!(
            !id.is_empty(),
            "sbatch gave no job id; see {}",
            self.dir.display()
        );
        wait_for("the job array to finish", Duration::from_secs(300), || {
            self.slurm("squeue", &["-h", "-j", &id]).trim().is_empty()
        });
        let states = self.slurm("scontrol", &["show", "job", &id]);
        let states: Vec<&str> = states
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("JobState="))
            .collect();
        assert!(
            !states.is_empty() && states.iter().all(|s| *s == "COMPLETED"),
            "job {id}: {states:?}"
        );
        id
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
    // Task 1 killed after its first point: its table and its second point's row are lost.
    // Submitted again alone, it runs that point only; the table is the same.
    std::fs::remove_file(sweep.join("shards/shard-1-of-3.parquet")).unwrap();
    let plan = std::fs::read_to_string(sweep.join("plan.csv")).unwrap();
    let second_of_task_1 = &plan.lines().nth(1 + 4).unwrap()[..16];
    std::fs::remove_file(sweep.join(format!("rows/{second_of_task_1}.csv"))).unwrap();
    cluster.submit_and_wait(script, &["--array=1"]);
    let log = std::fs::read_to_string(sweep.join("logs/shard-1.err")).unwrap();
    assert!(
        log.contains("shard 1/3: 2 points (1 run now, 1 done before)"),
        "{log}"
    );
    let (printed, _) = warpscope(&["sweep", "merge", d, "-o", m, "--print"]);
    assert_eq!(printed, local);
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
