//! Cancelling a runner exec by the action it runs, from a second `Runner`
//! that shares nothing with the one running it but the berth's names (as
//! `berth cancel` in another process does): through the exec's cgroup, and
//! without cgroups through the process group the exec recorded in berth's
//! private directory. The command's whole tree ends, a `setsid` daemon
//! too; the exec returns with the output so far.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::host_procs;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use berth_sandbox::runner::CgroupRoots;
use berth_sandbox::{ExecRequest, ExitStatus, OutputChunk, Runner, RunnerConfig, Sandbox};

fn config(dir: &tempfile::TempDir) -> RunnerConfig {
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.exec_records = Some(dir.path().join("execs"));
    config
}

/// What the exec's record must be while the command runs.
enum Record {
    /// Not looked at.
    Any,
    /// Written: the exec has no cgroup to be found by.
    Present(PathBuf),
    /// Not written: the exec's cgroup finds it.
    Absent(PathBuf),
}

/// Runs `sh -c 'echo before; …'` as `action` in `runner`, cancels it from
/// `canceller` once "before" arrived, and checks what is left.
async fn cancel_from_another_runner(
    runner: Runner,
    canceller: Runner,
    action: &str,
    record: Record,
) {
    let marker = host_procs::marker();
    let daemon = host_procs::marker();
    let mut request = ExecRequest::shell(format!(
        "echo before; (setsid sleep {daemon} &); sleep {marker}; echo never"
    ));
    request.timeout = Duration::from_secs(120);
    request.action = Some(action.to_string());
    let (sink, mut chunks) = berth_sandbox::output_channel();
    let running = tokio::spawn(async move { runner.exec(request, Some(sink)).await });
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, chunks.recv()).await {
            Ok(Some(OutputChunk::Stdout(b))) if b.starts_with(b"before") => break,
            Ok(Some(_)) => {}
            other => panic!("no output from the command: {other:?}"),
        }
    }
    assert!(host_procs::appears(&marker).await);
    assert!(host_procs::appears(&daemon).await);
    match &record {
        Record::Any => {}
        Record::Present(path) => assert!(path.exists(), "no record at {}", path.display()),
        Record::Absent(path) => assert!(!path.exists(), "a record at {}", path.display()),
    }
    assert!(
        !canceller.cancel("0000ffff").await.unwrap(),
        "an action that runs nothing here"
    );
    let asked = Instant::now();
    assert!(canceller.cancel(action).await.unwrap(), "found and killed");
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the exec returns promptly")
        .unwrap()
        .unwrap();
    eprintln!("cancel to the exec's return: {:?}", asked.elapsed());
    assert_eq!(outcome.status, ExitStatus::Signaled(9), "{outcome:?}");
    assert_eq!(String::from_utf8_lossy(&outcome.stdout.bytes), "before\n");
    assert!(!outcome.timed_out);
    assert!(
        host_procs::gone_marked(&marker).await,
        "the command survived"
    );
    assert!(
        host_procs::gone_marked(&daemon).await,
        "its daemon survived"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_is_cancelled_through_its_cgroup_named_after_its_action() {
    if berth_sandbox::identity::current_uid() != 0 {
        eprintln!("skipping: exec cgroups need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir);
    // No record: only the cgroup can find it.
    config.confinement.exec_records = None;
    let runner = Runner::new(config.clone()).unwrap();
    let canceller = Runner::new(config).unwrap();
    cancel_from_another_runner(runner, canceller, "c0ffee01", Record::Any).await;
}

/// With a resident the exec's cgroup2 directory is the one it was cloned
/// into: the cancel finds it there the same way. A berth's records
/// directory is configured, as the engine configures it: an exec with a
/// cgroup to kill through writes no record there (a file made and removed
/// per exec, for nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_residents_exec_is_cancelled_through_its_cgroup() {
    if berth_sandbox::identity::current_uid() != 0 {
        eprintln!("skipping: exec cgroups need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir);
    let records = dir.path().join("execs");
    config.confinement.resident = Some(dir.path().join("residents"));
    let runner = Runner::new(config.clone()).unwrap();
    let canceller = Runner::new(config).unwrap();
    let record = Record::Absent(records.join("c0ffee04"));
    cancel_from_another_runner(runner, canceller, "c0ffee04", record).await;
}

/// Without cgroups the record holds the resident exec's PID 1 (its own
/// process group), whose death ends the exec's PID namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cgroups_a_residents_exec_is_cancelled_through_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir);
    let none = PathBuf::from("/proc/berth-no-cgroups");
    config.confinement.cgroup_roots = CgroupRoots {
        unified: none.clone(),
        pids: none.clone(),
        memory: none,
    };
    config.confinement.resident = Some(dir.path().join("residents"));
    let runner = Runner::new(config.clone()).unwrap();
    let canceller = Runner::new(config).unwrap();
    let record = Record::Present(dir.path().join("execs").join("c0ffee05"));
    cancel_from_another_runner(runner, canceller, "c0ffee05", record).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cgroups_an_exec_is_cancelled_through_its_recorded_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir);
    // Nothing can be made there: no cgroup at all, as for a berth not root.
    let none = PathBuf::from("/proc/berth-no-cgroups");
    config.confinement.cgroup_roots = CgroupRoots {
        unified: none.clone(),
        pids: none.clone(),
        memory: none,
    };
    let records: PathBuf = dir.path().join("execs");
    let runner = Runner::new(config.clone()).unwrap();
    let canceller = Runner::new(config).unwrap();
    let record = Record::Present(records.join("c0ffee02"));
    cancel_from_another_runner(runner, canceller, "c0ffee02", record).await;
    assert!(
        !records.join("c0ffee02").exists(),
        "the record goes with its exec"
    );
    // A stale record (its process gone, its pid perhaps reused) kills nothing.
    std::fs::write(
        records.join("c0ffee03"),
        format!("{} 1\n", std::process::id()),
    )
    .unwrap();
    let config = {
        let mut c = RunnerConfig::new(dir.path().join("wt"), dir.path().join("home"));
        c.confinement.exec_records = Some(records);
        let none = PathBuf::from("/proc/berth-no-cgroups");
        c.confinement.cgroup_roots = CgroupRoots {
            unified: none.clone(),
            pids: none.clone(),
            memory: none,
        };
        c
    };
    assert!(
        !Runner::new(config)
            .unwrap()
            .cancel("c0ffee03")
            .await
            .unwrap()
    );
}
