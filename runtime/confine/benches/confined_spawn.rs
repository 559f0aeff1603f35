//! The cost of confinement per exec: `true` through the shim (namespaces,
//! mount tree, Landlock, seccomp) against a plain spawn of `true`.
//! `cargo bench -p berth-confine --bench confined_spawn` (a release build of
//! the shim beside the bench binary). `BERTH_BENCH_ROUNDS` sets the rounds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use berth_confine::{ExecSpec, Network};

fn median(mut samples: Vec<Duration>) -> Duration {
    // The middle sample: robust to the odd slow round.
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("BERTH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let shim = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join(berth_confine::SHIM_NAME);
    assert!(
        shim.is_file(),
        "{} missing: cargo build --release -p berth-confine",
        shim.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = ExecSpec {
        parent_pid: std::process::id() as i32,
        worktree: dir.path().to_path_buf(),
        work_read_only: false,
        cwd: "/work".into(),
        writable: vec![],
        readable: vec![],
        private_tmp: None,
        system_dirs: vec![],
        network: Network::None,
        uid: None,
        gid: None,
        rlimits: vec![],
        cgroups: vec![],
        egress: None,
    };
    let framed = berth_confine::spec::framed(&spec).unwrap();

    // Interleaved, so a change in the machine's load hits both alike.
    let (mut plain, mut confined) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let status = Command::new("/usr/bin/true")
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        plain.push(start.elapsed());

        let start = Instant::now();
        let mut child = Command::new(&shim)
            .args(["--", "/usr/bin/true"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&framed).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success());
        confined.push(start.elapsed());
    }
    let least = |samples: &[Duration]| samples.iter().min().copied().unwrap_or_default();
    println!(
        "spawn `true` x{rounds}, least: plain {:?}, confined {:?}, extra {:?}",
        least(&plain),
        least(&confined),
        least(&confined).saturating_sub(least(&plain))
    );
    let (plain, confined) = (median(plain), median(confined));
    println!(
        "spawn `true` x{rounds}, median: plain {plain:?}, confined {confined:?}, extra {:?}",
        confined.saturating_sub(plain)
    );
}
