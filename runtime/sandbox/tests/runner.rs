//! What only the local runner does: the real `/work`, the clean environment,
//! rlimits, the parent-death signal, processes that leave the group, the
//! symlink check, configuration errors. The shared contract is in
//! `runner_contract.rs`; the confinement in `runner_confinement.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::host_procs;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_sandbox::{
    AccessEnforcement, ExecRequest, ExitStatus, Output, PreparedExec, Rlimits, Runner,
    RunnerConfig, Sandbox, SandboxError, ScopeFinding, WorkAccess,
};

struct Berth {
    dir: tempfile::TempDir,
    runner: Runner,
}

impl Berth {
    fn worktree(&self) -> &Path {
        self.runner.worktree()
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
}

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("berth-runner-")
        .tempdir()
        .unwrap();
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    (dir, worktree, home)
}

fn berth_with(configure: impl FnOnce(&mut RunnerConfig)) -> Berth {
    let (dir, worktree, home) = dirs();
    let mut config = RunnerConfig::new(&worktree, &home);
    config.kill_grace = Duration::from_secs(1);
    configure(&mut config);
    Berth {
        runner: Runner::new(config).unwrap(),
        dir,
    }
}

fn berth() -> Berth {
    berth_with(|_| {})
}

async fn run(runner: &Runner, request: ExecRequest) -> berth_sandbox::ExecOutcome {
    tokio::time::timeout(
        request.timeout + Duration::from_secs(60),
        runner.exec(request, None),
    )
    .await
    .expect("exec did not return")
    .expect("exec failed")
}

fn shell(line: &str) -> ExecRequest {
    let mut request = ExecRequest::shell(line);
    request.timeout = Duration::from_secs(120);
    request
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_an_allow_list() {
    // cargo runs tests with CARGO_* set: they stand in for berth's secrets.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let b = berth();
    let mut request = shell("env");
    request.env.insert("FROM_REQUEST".into(), "yes".into());
    let outcome = run(&b.runner, request).await;
    let env: Vec<(String, String)> = text(&outcome.stdout)
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let names: BTreeSet<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    let allowed = [
        "PATH",
        "HOME",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "USER",
        "LOGNAME",
        "FROM_REQUEST",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_COUNT",
        // set by the shell itself
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for name in &names {
        assert!(
            allowed.contains(name)
                || name.starts_with("LC_")
                || name.starts_with("GIT_CONFIG_KEY_")
                || name.starts_with("GIT_CONFIG_VALUE_"),
            "{name} leaked into the command's environment"
        );
    }
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("HOME"), b.home().to_str());
    assert_eq!(get("TERM"), Some("dumb"));
    assert_eq!(get("FROM_REQUEST"), Some("yes"));
    assert!(get("PATH").is_some_and(|p| !p.is_empty()));

    // Extra names are passed only when configured.
    let b = berth_with(|c| c.inherit_env = vec!["CARGO_PKG_*".into()]);
    let outcome = run(
        &b.runner,
        shell("printf %s \"$CARGO_PKG_NAME|$CARGO_MANIFEST_DIR\""),
    )
    .await;
    assert_eq!(text(&outcome.stdout), "berth-sandbox|");
}

/// A command run for another process (`berth exec` handed to a server)
/// starts from the environment the runner derives from that process's
/// variables (`Sandbox::environment_from`): the same allow-list, applied to
/// its values instead of berth's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_another_process_starts_from_its_environment() {
    use berth_sandbox::Sandbox as _;
    let b = berth_with(|c| c.inherit_env = vec!["CALLER_*".into()]);
    let caller: std::collections::BTreeMap<String, String> = [
        ("PATH", "/usr/bin:/bin:/opt/caller"),
        ("TZ", "Pacific/Chatham"),
        ("CALLER_SETTING", "theirs"),
        ("NOT_INHERITED", "secret"),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    let mut request =
        shell("printf '%s|' \"$PATH\" \"$TZ\" \"$CALLER_SETTING\" \"$NOT_INHERITED\" \"$HOME\"");
    request.base_env = b.runner.environment_from(&caller);
    let outcome = run(&b.runner, request).await;
    assert_eq!(
        text(&outcome.stdout),
        format!(
            "/usr/bin:/bin:/opt/caller|Pacific/Chatham|theirs||{}|",
            b.home().display()
        )
    );
    // Without one, berth's own environment, as ever.
    let outcome = run(&b.runner, shell("printf '%s' \"$CALLER_SETTING\"")).await;
    assert_eq!(text(&outcome.stdout), "");
}

/// `/work` is the worktree inside the exec: nothing is rewritten, and paths
/// in scripts, Makefiles and `pwd` agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_is_the_worktree_without_rewriting() {
    let b = berth();
    std::fs::create_dir_all(b.worktree().join("sub")).unwrap();
    std::fs::write(b.worktree().join("a.txt"), "alpha").unwrap();
    std::fs::write(
        b.worktree().join("copy.sh"),
        "#!/bin/sh\ncat /work/a.txt > /work/sub/b.txt\n",
    )
    .unwrap();

    let mut request = shell("sh /work/copy.sh && pwd");
    request.cwd = "/work/sub".into();
    let prepared = b.runner.prepare(&request).unwrap();
    assert_eq!(
        prepared,
        PreparedExec {
            program: request.program.clone(),
            cwd: b.worktree().join("sub"),
        }
    );
    // What was prepared (and logged) is what runs.
    let outcome = b
        .runner
        .exec_prepared(request, prepared, None)
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, text(&outcome.stdout)),
        (ExitStatus::Exited(0), "/work/sub\n".to_string()),
        "{}",
        text(&outcome.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(b.worktree().join("sub/b.txt")).unwrap(),
        "alpha"
    );
    let outcome = run(&b.runner, ExecRequest::argv(["cat", "/work/a.txt"])).await;
    assert_eq!(text(&outcome.stdout), "alpha");
    // The host path of the worktree is not visible inside.
    let wt = b.worktree().to_str().unwrap().to_string();
    let outcome = run(
        &b.runner,
        shell(&format!("test -e {wt}/a.txt && echo seen")),
    )
    .await;
    assert_eq!(text(&outcome.stdout), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rlimits_apply_to_each_exec() {
    let b = berth_with(|c| {
        c.rlimits = Rlimits {
            nofile: Some(512),
            address_space: Some(8 << 30),
            file_size: Some(1 << 20),
            ..Rlimits::default()
        }
    });
    let outcome = run(
        &b.runner,
        shell("ulimit -c; ulimit -n; ulimit -v; ulimit -f"),
    )
    .await;
    // dash reports -v in KiB and -f in 512-byte blocks.
    assert_eq!(
        text(&outcome.stdout),
        "0\n512\n8388608\n2048\n",
        "{}",
        text(&outcome.stderr)
    );

    // A write past the file size limit fails (SIGXFSZ kills the writer).
    let outcome = run(&b.runner, shell("head -c 2000000 /dev/zero > /work/big")).await;
    assert!(!outcome.status.success(), "{:?}", outcome.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_caps_are_bounded_by_the_configuration() {
    let b = berth_with(|c| c.max_output_cap = 100);
    let mut request = shell("seq 1 1000");
    request.output_cap = 10_000;
    let outcome = run(&b.runner, request).await;
    assert_eq!(
        (
            outcome.stdout.bytes.len(),
            outcome.stdout.truncated,
            outcome.stdout.total
        ),
        (100, true, 3893)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_that_leave_the_group_are_still_killed() {
    let b = berth();
    // On the deadline: a setsid'd child whose parent is still alive.
    let marker = host_procs::marker();
    let mut request = shell(&format!("setsid sleep {marker} & wait"));
    request.timeout = Duration::from_secs(2);
    let outcome = run(&b.runner, request).await;
    assert!(outcome.timed_out);
    assert!(
        host_procs::gone_marked(&marker).await,
        "setsid'd child survived the timeout"
    );

    // After a finished exec: one that left the group, was orphaned and
    // holds the output pipe.
    let marker = host_procs::marker();
    let outcome = run(
        &b.runner,
        shell(&format!("(setsid sleep {marker} &); echo done")),
    )
    .await;
    assert_eq!(
        (outcome.timed_out, text(&outcome.stdout)),
        (false, "done\n".to_string())
    );
    assert!(
        host_procs::gone_marked(&marker).await,
        "setsid'd orphan holding stdout survived"
    );
}

/// A daemon — left the group, orphaned, its output closed — dies with its
/// exec: the exec's PID namespace ends when the command does. (It escaped on
/// main.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_dies_with_its_exec() {
    let b = berth();
    let marker = host_procs::marker();
    let outcome = run(
        &b.runner,
        shell(&format!(
            "(setsid sleep {marker} </dev/null >/dev/null 2>&1 &); sleep 0.5; echo done"
        )),
    )
    .await;
    assert_eq!(text(&outcome.stdout), "done\n");
    assert!(
        host_procs::gone_marked(&marker).await,
        "the daemon outlived its exec"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_exec_kills_its_group() {
    let b = berth();
    let marker = host_procs::marker();
    let request = shell(&format!("sleep {marker} & echo started > /work/c.bg; wait"));
    let pids = b.worktree().join("c.bg");
    let exec = b.runner.exec(request, None);
    let waiter = async {
        for _ in 0..600 {
            if std::fs::read_to_string(&pids).is_ok_and(|s| s.ends_with('\n')) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the command never started");
    };
    tokio::select! {
        result = exec => panic!("exec returned on its own: {result:?}"),
        () = waiter => {} // drops the exec future: the caller gave up
    }
    assert!(
        host_procs::gone_marked(&marker).await,
        "the command outlived its cancelled exec"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_timeouts_are_accepted() {
    let b = berth();
    for timeout in [Duration::MAX, Duration::ZERO] {
        let mut request = ExecRequest::shell("sleep 5");
        request.timeout = timeout;
        let outcome = tokio::time::timeout(Duration::from_secs(60), b.runner.exec(request, None))
            .await
            .expect("exec did not return")
            .unwrap();
        assert_eq!(outcome.timed_out, timeout.is_zero(), "{timeout:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_sink_does_not_stop_the_exec() {
    let b = berth();
    let (tx, rx) = berth_sandbox::output_channel();
    drop(rx);
    let outcome = b
        .runner
        .exec(shell("seq 1 3; echo e >&2"), Some(tx))
        .await
        .unwrap();
    assert_eq!(
        (text(&outcome.stdout), text(&outcome.stderr)),
        ("1\n2\n3\n".into(), "e\n".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_failures_name_what_is_missing() {
    let b = berth_with(|c| c.shell = PathBuf::from("/nonexistent/sh"));
    let outcome = run(&b.runner, shell("true")).await;
    assert_eq!(outcome.status, ExitStatus::Exited(127));
    assert!(text(&outcome.stderr).contains("/nonexistent/sh"));

    // No shim: the command does not run, and the outcome says why.
    let b = berth_with(|c| c.confinement.shim = Some(PathBuf::from("/nonexistent/shim")));
    let outcome = run(&b.runner, shell("touch /work/ran")).await;
    assert_eq!(outcome.status, ExitStatus::Exited(125));
    let stderr = text(&outcome.stderr);
    assert!(
        stderr.contains("/nonexistent/shim") && stderr.contains("did not run"),
        "{stderr}"
    );
    assert!(!b.worktree().join("ran").exists());
    let b = berth();
    let outcome = run(&b.runner, ExecRequest::argv(["berth-no-such-program"])).await;
    assert_eq!(outcome.status, ExitStatus::Exited(127));
    assert!(text(&outcome.stderr).contains("berth-no-such-program"));
}

#[test]
fn bad_configurations_are_refused_with_the_reason() {
    let (dir, worktree, home) = dirs();
    let cases: Vec<(&str, RunnerConfig, &str)> = vec![
        (
            "missing worktree",
            RunnerConfig::new(dir.path().join("nope"), &home),
            "create the worktree",
        ),
        (
            "cgroup name that walks",
            RunnerConfig {
                confinement: berth_sandbox::Confinement {
                    cgroup_name: Some(("p".into(), "..".into())),
                    ..Default::default()
                },
                ..RunnerConfig::new(&worktree, &home)
            },
            "cgroup name",
        ),
        (
            "relative home",
            RunnerConfig::new(&worktree, "home"),
            "home",
        ),
        (
            "missing extra root",
            RunnerConfig {
                extra_roots: vec![dir.path().join("no-root")],
                ..RunnerConfig::new(&worktree, &home)
            },
            "no-root",
        ),
    ];
    for (name, config, needle) in cases {
        match Runner::new(config) {
            Err(e @ SandboxError::InvalidConfig(_)) => {
                assert!(e.to_string().contains(needle), "{name}: {e}")
            }
            other => panic!("{name}: expected InvalidConfig, got {other:?}"),
        }
    }
}

#[test]
fn judged_paths_that_escape_through_symlinks_are_reported() {
    let b = berth();
    std::os::unix::fs::symlink("/etc", b.worktree().join("etc-link")).unwrap();
    std::fs::create_dir_all(b.worktree().join("src")).unwrap();
    let found = b.runner.check_host_paths(&[
        "/work/src/main.rs".to_string(),
        "/work/etc-link/passwd".to_string(),
        "/etc/hosts".to_string(),
    ]);
    assert_eq!(
        found,
        vec![ScopeFinding::SymlinkEscape {
            frame_path: "/work/etc-link/passwd".into(),
            host_path: b.worktree().join("etc-link/passwd"),
            resolved: std::fs::canonicalize("/etc").unwrap().join("passwd"),
            links: vec![b.worktree().join("etc-link")],
        }]
    );
}

/// A worktree under /tmp: read-only holds for it, the home stays writable,
/// and the rest of the host's /tmp is not there at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_holds_for_a_worktree_under_tmp() {
    let dir = tempfile::Builder::new()
        .prefix("berth-ro-")
        .tempdir_in("/tmp")
        .unwrap();
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(dir.path().join("sibling"), "secret").unwrap();
    let runner = Runner::new(RunnerConfig::new(&worktree, &home)).unwrap();
    assert_eq!(
        runner.set_work_access(WorkAccess::ReadOnly).await.unwrap(),
        AccessEnforcement::Enforced
    );
    let parent = dir.path().to_str().unwrap();
    let cases = [
        ("echo x > /work/f".to_string(), false),
        ("mkdir /work/d".to_string(), false),
        ("echo x > \"$HOME/f\"".to_string(), true),
        ("echo x > /dev/null".to_string(), true),
        (format!("cat {parent}/sibling"), false),
        // Succeeds, in the exec's private /tmp: never on the host.
        (format!("echo x > {parent}/new-in-ancestor"), true),
    ];
    for (line, ok) in cases {
        let outcome = run(&runner, shell(&line)).await;
        assert_eq!(
            outcome.status.success(),
            ok,
            "{line}: {}",
            text(&outcome.stderr)
        );
    }
    assert!(home.join("f").exists());
    assert!(!worktree.join("f").exists());
    assert!(!dir.path().join("new-in-ancestor").exists());
}

/// Run by `the_main_process_dies_with_berth` in a child process: starts a
/// long exec and waits to be killed. Ignored: it tests nothing on its own,
/// its parent runs it by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by the_main_process_dies_with_berth in a child process"]
async fn pdeathsig_helper() {
    let dir = std::env::var("BERTH_PDEATHSIG_DIR")
        .expect("run by the_main_process_dies_with_berth, which sets BERTH_PDEATHSIG_DIR");
    let dir = PathBuf::from(dir);
    let mut config = RunnerConfig::new(dir.join("wt"), dir.join("home"));
    if std::env::var_os("BERTH_PDEATHSIG_RESIDENT").is_some() {
        config.confinement.resident = Some(dir.join("residents"));
    }
    let runner = Runner::new(config).unwrap();
    let marker = std::env::var("BERTH_PDEATHSIG_MARKER").unwrap();
    let mut request = ExecRequest::shell(format!(
        "echo started > /work/main.pid.tmp; mv /work/main.pid.tmp /work/main.pid; exec sleep {marker}"
    ));
    request.timeout = Duration::from_secs(600);
    let _ = runner.exec(request, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_process_dies_with_berth() {
    dies_with_berth(false).await;
}

/// With a resident, berth's end of the exec's connection closing is what
/// kills it (the resident outlives berth; the exec must not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_process_dies_with_berth_with_a_resident() {
    dies_with_berth(true).await;
}

async fn dies_with_berth(resident: bool) {
    let (dir, worktree, _home) = dirs();
    let marker = host_procs::marker();
    let mut helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            common::test_path(module_path!(), "pdeathsig_helper").as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BERTH_PDEATHSIG_DIR", dir.path())
        .env("BERTH_PDEATHSIG_MARKER", &marker)
        .env(
            if resident {
                "BERTH_PDEATHSIG_RESIDENT"
            } else {
                "BERTH_PDEATHSIG_NONE"
            },
            "1",
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = worktree.join("main.pid");
    let mut started = false;
    for _ in 0..600 {
        if pid_file.exists() && !host_procs::marked(&marker).is_empty() {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !started {
        let _ = helper.kill();
        panic!("the helper never started its exec");
    }
    helper.kill().unwrap(); // SIGKILL: no destructor, no kill_on_drop runs
    helper.wait().unwrap();
    assert!(
        host_procs::gone_marked(&marker).await,
        "the exec's command outlived berth"
    );
}
