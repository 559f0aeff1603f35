//! The runner's confinement, tried as an attacker would: each case is
//! something a command could do on the host before the exec shim (and must
//! not do now). Real processes, real git, a real loopback server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod host_procs;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_sandbox::{ExecRequest, ExitStatus, Output, Rlimits, Runner, RunnerConfig, Sandbox};

struct Berth {
    dir: tempfile::TempDir,
    runner: Runner,
}

impl Berth {
    fn worktree(&self) -> &Path {
        self.runner.worktree()
    }
}

fn berth_with(configure: impl FnOnce(&mut RunnerConfig)) -> Berth {
    let dir = tempfile::Builder::new()
        .prefix("berth-confine-")
        .tempdir()
        .unwrap();
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let mut config = RunnerConfig::new(&worktree, &home);
    config.kill_grace = Duration::from_secs(1);
    if std::env::var_os("BERTH_TEST_RESIDENT").is_some() {
        config.confinement.resident = Some(dir.path().join("residents"));
    }
    configure(&mut config);
    Berth {
        runner: Runner::new(config).unwrap(),
        dir,
    }
}

fn berth() -> Berth {
    berth_with(|_| {})
}

fn shell(line: &str) -> ExecRequest {
    let mut request = ExecRequest::shell(line);
    request.timeout = Duration::from_secs(120);
    request
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

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.bytes).into_owned()
}

fn is_root() -> bool {
    nix_geteuid() == 0
}

fn nix_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc_geteuid() }
}

unsafe extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

const PYTHON: &str = "/usr/bin/python3";

/// A user's home with a private key readable by anyone (0644 in a 0755
/// directory): only the confinement stands between a command and it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readable_ssh_key_elsewhere_on_the_host_is_not_visible() {
    let b = berth();
    let user_home = b.dir.path().join("user-home");
    let ssh = user_home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ssh.join("id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    std::fs::set_permissions(ssh.join("id_rsa"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let key = ssh.join("id_rsa");
    let line = format!(
        "cat {key}; cat /root/.bash_history /root/.ssh/id_rsa; ls {parent}; echo end",
        key = key.display(),
        parent = b.dir.path().display()
    );
    let outcome = run(&b.runner, shell(&line)).await;
    let stdout = text(&outcome.stdout);
    assert!(
        stdout.ends_with("end\n") && !stdout.contains("KEY") && !stdout.contains("user-home"),
        "{stdout}"
    );
    assert!(text(&outcome.stderr).contains("No such file"));
}

/// Secrets inside the system directories read as empty, also for a command
/// that keeps uid 0 (no capabilities, but the owner of /etc/shadow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_secrets_are_masked() {
    let b = berth();
    let outcome = run(
        &b.runner,
        shell("cat /etc/shadow /etc/gshadow 2>/dev/null; ls /etc/ssh 2>/dev/null; echo end"),
    )
    .await;
    assert_eq!(text(&outcome.stdout), "end\n", "{}", text(&outcome.stderr));
    // Host-wide knobs under /proc cannot be written (0 is not a valid
    // drop_caches value: harmless if it ever got through).
    let outcome = run(&b.runner, shell("echo 0 > /proc/sys/vm/drop_caches")).await;
    let stderr = text(&outcome.stderr);
    assert!(
        stderr.contains("Read-only file system") || stderr.contains("Permission denied"),
        "{stderr}"
    );
    // The rest of /etc is there.
    let outcome = run(&b.runner, shell("test -s /etc/passwd && echo passwd")).await;
    assert_eq!(text(&outcome.stdout), "passwd\n");
}

/// Writes land in the worktree, the home and the private tmp only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_worktree_fail() {
    let b = berth();
    let state = b.dir.path().join("state-file");
    for line in [
        "touch /etc/berth-pwned".to_string(),
        "touch /usr/berth-pwned".to_string(),
        "touch /berth-pwned".to_string(),
        "mkdir /proc/x".to_string(),
    ] {
        let outcome = run(&b.runner, shell(&line)).await;
        assert!(!outcome.status.success(), "{line} succeeded");
    }
    assert!(!Path::new("/etc/berth-pwned").exists());
    assert!(!Path::new("/usr/berth-pwned").exists());
    // A host path under /tmp lands in the exec's private /tmp, never on the
    // host.
    run(&b.runner, shell(&format!("touch {}", state.display()))).await;
    assert!(!state.exists());
    let outcome = run(
        &b.runner,
        shell("touch /work/ok \"$HOME/ok\" /tmp/ok && echo ok"),
    )
    .await;
    assert_eq!(text(&outcome.stdout), "ok\n", "{}", text(&outcome.stderr));
    assert!(b.worktree().join("ok").exists());
}

/// A server on the host's loopback is out of reach: the exec's network
/// namespace holds only its own `lo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_socket_reaches_the_hosts_loopback() {
    let b = berth();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket\n\
         for host in ('127.0.0.1', 'localhost'):\n\
         \x20   try:\n\
         \x20       socket.create_connection((host, {port}), timeout=3); print('connected')\n\
         \x20   except OSError as e: print('refused', e.errno)\n"
    );
    let outcome = run(
        &b.runner,
        ExecRequest::argv([PYTHON, "-c", script.as_str()]),
    )
    .await;
    let stdout = text(&outcome.stdout);
    assert!(!stdout.contains("connected"), "{stdout}");
    assert!(
        stdout.contains("refused"),
        "{stdout} {}",
        text(&outcome.stderr)
    );
    assert!(listener.accept().is_err(), "the server saw a connection");
    // Only lo, and it is up.
    let outcome = run(
        &b.runner,
        shell("cat /proc/net/dev | tail -n +3 | cut -d: -f1"),
    )
    .await;
    assert_eq!(text(&outcome.stdout).trim(), "lo");
}

/// A double-forked `setsid` daemon dies at the exec's deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_dies_at_the_deadline() {
    let b = berth();
    let marker = host_procs::marker();
    let mut request = shell(&format!(
        "(setsid sleep {marker} </dev/null >/dev/null 2>&1 &); sleep 1000"
    ));
    request.timeout = Duration::from_secs(2);
    let outcome = run(&b.runner, request).await;
    assert!(outcome.timed_out);
    assert!(
        host_procs::gone_marked(&marker).await,
        "the daemon outlived the deadline"
    );
}

/// `kill_all` ends every exec of the berth, daemons included — also from a
/// second runner (a later berth process), through the exec's cgroup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_ends_every_exec_of_the_berth() {
    let b = berth_with(|c| {
        c.confinement.cgroup_name = Some(("killall".into(), host_procs::marker().replace('.', "-")))
    });
    let marker = host_procs::marker();
    let mut request = shell(&format!(
        "(setsid sleep {marker} </dev/null >/dev/null 2>&1 &); sleep 1000"
    ));
    request.timeout = Duration::from_secs(300);
    let exec = b.runner.exec(request.clone(), None);
    let killer = async {
        assert!(
            host_procs::appears(&marker).await,
            "the daemon never started"
        );
        let report = b.runner.kill_all().await.unwrap();
        assert_eq!(report.execs, 1, "{report:?}");
        if is_root() {
            assert_eq!(report.cgroups.len(), 1, "{report:?}");
        }
    };
    let (outcome, ()) = tokio::join!(exec, killer);
    let outcome = outcome.unwrap();
    assert!(!outcome.timed_out);
    assert_eq!(outcome.status, ExitStatus::Signaled(9));
    assert!(
        host_procs::gone_marked(&marker).await,
        "the daemon outlived kill_all"
    );

    if !is_root() {
        return;
    }
    // A second runner for the same berth finds the exec by its cgroup alone.
    let config = b.runner.config().clone();
    let second = Runner::new(config).unwrap();
    let marker = host_procs::marker();
    let request = shell(&format!(
        "(setsid sleep {marker} </dev/null >/dev/null 2>&1 &); sleep 1000"
    ));
    let exec = b.runner.exec(request, None);
    let killer = async {
        assert!(
            host_procs::appears(&marker).await,
            "the daemon never started"
        );
        let report = second.kill_all().await.unwrap();
        assert_eq!((report.execs, report.cgroups.len()), (0, 1), "{report:?}");
    };
    let (outcome, ()) = tokio::join!(exec, killer);
    assert!(!outcome.unwrap().timed_out);
    assert!(
        host_procs::gone_marked(&marker).await,
        "the daemon outlived kill_all"
    );
}

/// `git status` in a nested repository whose config names an fsmonitor
/// program does not run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_repository_config_starts_no_program() {
    let b = berth();
    let sub = b.worktree().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&sub)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(sub.join("f"), "x").unwrap();
    let pwned = format!("pwned-{}", host_procs::marker());
    git(&["config", "core.fsmonitor", &format!("touch {pwned}; false")]);
    git(&["config", "core.pager", &format!("touch {pwned}-pager; cat")]);
    let mut request = shell("git status --short && git -c core.pager=cat log -1 2>/dev/null; true");
    request.cwd = "/work/sub".into();
    let outcome = run(&b.runner, request).await;
    assert!(
        text(&outcome.stdout).contains("?? f"),
        "{} {}",
        text(&outcome.stdout),
        text(&outcome.stderr)
    );
    let left: Vec<PathBuf> = std::fs::read_dir(&sub)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("pwned"))
        .collect();
    assert!(left.is_empty(), "repository config ran a program: {left:?}");
}

/// A fork loop stops at the process limit (the v1 `pids` cgroup as root,
/// `RLIMIT_NPROC` in the user namespace otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_loop_stops_at_the_process_limit() {
    let b = berth_with(|c| {
        c.confinement.limits.processes = Some(32);
        c.rlimits.nproc = Some(32);
    });
    let mut request = shell(
        "( i=0; while [ $i -lt 200 ]; do sleep 30 & echo x >> /work/forks; i=$((i+1)); done ) 2>/dev/null; true",
    );
    request.timeout = Duration::from_secs(60);
    let outcome = run(&b.runner, request).await;
    assert!(!outcome.timed_out);
    let forks = std::fs::read_to_string(b.worktree().join("forks"))
        .unwrap_or_default()
        .lines()
        .count();
    assert!(
        (1..=32).contains(&forks),
        "{forks} processes started under a limit of 32"
    );
}

/// A write past the file-size limit fails and the file stops at the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_the_file_size_limit_fails() {
    let limit = 64u64 << 20;
    let b = berth_with(|c| {
        c.rlimits = Rlimits {
            file_size: Some(limit),
            ..Rlimits::default()
        }
    });
    let outcome = run(&b.runner, shell("head -c 70000000 /dev/zero > /work/big")).await;
    assert!(!outcome.status.success(), "{:?}", outcome.status);
    let size = std::fs::metadata(b.worktree().join("big")).unwrap().len();
    assert!(
        size <= limit,
        "{size} bytes written past a {limit}-byte limit"
    );
}

/// seccomp refuses io_uring and unix sockets (socketpair stays), with EPERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_uring_and_unix_sockets_are_refused() {
    let b = berth();
    let script = "import ctypes, socket\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        params = ctypes.create_string_buffer(120)\n\
        r = libc.syscall(425, 4, params)\n\
        print('io_uring_setup', r, ctypes.get_errno())\n\
        for family, kind in ((socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_DGRAM), (socket.AF_INET, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW)):\n\
        \x20   try:\n\
        \x20       socket.socket(family, kind); print('socket', int(family), 'allowed')\n\
        \x20   except OSError as e: print('socket', int(family), 'refused', e.errno)\n\
        a, c = socket.socketpair(); a.send(b'x'); print('socketpair', c.recv(1))\n\
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('inet ok')\n";
    let outcome = run(&b.runner, ExecRequest::argv([PYTHON, "-c", script])).await;
    let stdout = text(&outcome.stdout);
    assert_eq!(
        stdout,
        "io_uring_setup -1 1\n\
         socket 1 refused 1\n\
         socket 1 refused 1\n\
         socket 2 refused 1\n\
         socket 17 refused 1\n\
         socketpair b'x'\n\
         inet ok\n",
        "{}",
        text(&outcome.stderr)
    );
}

/// berth and the shim are out of reach: no host process is visible, PID 1
/// (the shim) is not dumpable, and the command holds no capability and can
/// gain none by exec (its bounding set is empty: emptied by the command
/// under the shim, by the resident once for all its execs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_and_the_shim_are_out_of_reach() {
    let b = berth();
    let outcome = run(
        &b.runner,
        shell(
            "cat /proc/1/environ >/dev/null 2>&1 && echo environ-read; \
             kill -0 1 2>/dev/null && echo signalled; \
             grep CapEff /proc/self/status; \
             grep CapBnd /proc/self/status; \
             echo $PPID; ls /proc | grep -c '^[0-9]'",
        ),
    )
    .await;
    let stdout = text(&outcome.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "CapEff:\t0000000000000000", "{stdout}");
    assert_eq!(lines[1], "CapBnd:\t0000000000000000", "{stdout}");
    assert_eq!(
        lines[2], "1",
        "the command's parent is the shim, PID 1: {stdout}"
    );
    let visible: usize = lines[3].parse().unwrap();
    assert!(visible <= 6, "{visible} processes visible: {stdout}");
}

/// As root, the command runs as the berth's uid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_root_the_command_has_the_berths_uid() {
    if !is_root() {
        let b = berth();
        let outcome = run(&b.runner, shell("id -u")).await;
        assert_eq!(text(&outcome.stdout).trim(), nix_geteuid().to_string());
        return;
    }
    let b = berth_with(|c| c.confinement.uid = Some((65534, 65534)));
    for dir in [b.worktree().to_path_buf(), b.dir.path().join("home")] {
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    }
    let outcome = run(
        &b.runner,
        shell("id -u; id -g; touch /work/mine && stat -c %u /work/mine"),
    )
    .await;
    assert_eq!(
        text(&outcome.stdout),
        "65534\n65534\n65534\n",
        "{}",
        text(&outcome.stderr)
    );
}

/// The cases that hold as an unprivileged user too.
const AS_USER: &[&str] = &[
    "a_readable_ssh_key_elsewhere_on_the_host_is_not_visible",
    "writes_outside_the_worktree_fail",
    "no_socket_reaches_the_hosts_loopback",
    "a_daemon_dies_at_the_deadline",
    "kill_all_ends_every_exec_of_the_berth",
    "nested_repository_config_starts_no_program",
    "a_fork_loop_stops_at_the_process_limit",
    "io_uring_and_unix_sockets_are_refused",
    "berth_and_the_shim_are_out_of_reach",
    "as_root_the_command_has_the_berths_uid",
];

/// Every case made through `berth_with`, which a resident then serves.
const WITH_RESIDENT: &[&str] = &[
    "a_readable_ssh_key_elsewhere_on_the_host_is_not_visible",
    "system_secrets_are_masked",
    "writes_outside_the_worktree_fail",
    "no_socket_reaches_the_hosts_loopback",
    "a_daemon_dies_at_the_deadline",
    "kill_all_ends_every_exec_of_the_berth",
    "nested_repository_config_starts_no_program",
    "a_fork_loop_stops_at_the_process_limit",
    "a_write_past_the_file_size_limit_fails",
    "io_uring_and_unix_sockets_are_refused",
    "berth_and_the_shim_are_out_of_reach",
    "as_root_the_command_has_the_berths_uid",
];

/// Whether this process runs cases for a parent (which then does not
/// start children of its own).
fn in_child() -> bool {
    std::env::var_os("BERTH_TEST_AS_USER").is_some()
        || std::env::var_os("BERTH_TEST_RESIDENT").is_some()
}

/// Runs `cases` of this binary in a child test process, each filtered by
/// its exact name: as `nobody` (`setpriv`) or as root, with or without a
/// resident serving the berth's execs.
async fn run_cases_in_child(as_user: bool, resident: bool, cases: &[&str]) {
    // nobody must reach both binaries wherever the clone lies (a target
    // directory under /root is closed to it): run copies from a fresh 0755
    // directory, the shim named explicitly.
    let shim = berth_sandbox::runner::locate_shim().unwrap();
    let bin_dir = tempfile::Builder::new()
        .prefix("berth-as-nobody-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = bin_dir.path().join("cases");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    let shim_copy = bin_dir.path().join("berth-exec-shim");
    std::fs::copy(&shim, &shim_copy).unwrap();
    let mut args: Vec<String> = Vec::new();
    if as_user {
        args.extend(["--reuid=65534", "--regid=65534", "--clear-groups", "--"].map(String::from));
    }
    args.extend([
        exe.display().to_string(),
        "--exact".into(),
        "--test-threads=2".into(),
    ]);
    args.extend(cases.iter().map(|c| c.to_string()));
    let mut command = if as_user {
        tokio::process::Command::new("setpriv")
    } else {
        tokio::process::Command::new(args.remove(0))
    };
    command
        .args(&args)
        .env("BERTH_EXEC_SHIM", &shim_copy)
        .env("TMPDIR", "/tmp");
    if as_user {
        command.env("BERTH_TEST_AS_USER", "1").env("HOME", "/tmp");
    }
    if resident {
        command.env("BERTH_TEST_RESIDENT", "1");
    }
    let out = command
        .output()
        .await
        .expect("setpriv (util-linux) runs the cases as nobody");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "as_user {as_user}, resident {resident}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("{} passed", cases.len())),
        "{stdout}"
    );
}

/// The same cases with berth as an unprivileged user (`setpriv` to nobody):
/// the user-namespace path. Runs when the tests run as root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_an_unprivileged_user_the_confinement_holds() {
    if !is_root() || in_child() {
        return;
    }
    run_cases_in_child(true, false, AS_USER).await;
}

/// The cases again with a resident serving the berth's execs (one process
/// holding its namespaces and tree, forking each exec), as berth runs a
/// runner berth: everything the shim holds per exec holds here too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_resident_the_confinement_holds() {
    if in_child() {
        return;
    }
    run_cases_in_child(false, true, WITH_RESIDENT).await;
}

/// A resident started by an unprivileged berth: in its user namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_resident_as_an_unprivileged_user_the_confinement_holds() {
    if !is_root() || in_child() {
        return;
    }
    run_cases_in_child(true, true, AS_USER).await;
}

/// A mountpoint under the berth's private `/tmp` (a home under the host's
/// /tmp) is made without following symlinks: a symlink a command planted
/// there cannot lead the next exec's setup to create directories elsewhere
/// on the host. The exec is refused instead, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_symlink_does_not_lead_the_setup_out() {
    let dir = tempfile::Builder::new()
        .prefix("berth-plant-")
        .tempdir_in("/tmp")
        .unwrap();
    let (worktree, home, tmp, victim) = (
        dir.path().join("wt"),
        dir.path().join("home"),
        dir.path().join("private-tmp"),
        dir.path().join("victim"),
    );
    for d in [&worktree, &home, &tmp, &victim] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.private_tmp = Some(tmp.clone());
    let runner = Runner::new(config).unwrap();
    let top = dir
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let plant = format!(
        "mv /tmp/{top} /tmp/moved && ln -s {} /tmp/{top} && echo planted",
        victim.display()
    );
    let outcome = run(&runner, shell(&plant)).await;
    assert_eq!(
        text(&outcome.stdout),
        "planted\n",
        "{}",
        text(&outcome.stderr)
    );
    let outcome = run(&runner, shell("echo ran")).await;
    assert_eq!(
        outcome.status,
        ExitStatus::Exited(125),
        "{}",
        text(&outcome.stdout)
    );
    assert!(
        text(&outcome.stderr).contains("no symlinks"),
        "{}",
        text(&outcome.stderr)
    );
    assert!(
        std::fs::read_dir(&victim).unwrap().next().is_none(),
        "the setup created something through the planted symlink"
    );
}

/// The same, raced: one exec keeps flipping the directory on the way to the
/// home's mountpoint between a directory and a symlink out, while other execs
/// of the berth start. Each start either works or is refused; nothing is ever
/// made through the symlink. `BERTH_RACE_ROUNDS` sets the rounds (CI: 30).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipping_symlink_never_leads_the_setup_out() {
    let rounds: usize = std::env::var("BERTH_RACE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::Builder::new()
        .prefix("berth-flip-")
        .tempdir_in("/tmp")
        .unwrap();
    let (worktree, home, tmp, victim) = (
        dir.path().join("wt"),
        dir.path().join("home"),
        dir.path().join("private-tmp"),
        dir.path().join("victim"),
    );
    for d in [&worktree, &home, &tmp, &victim] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.private_tmp = Some(tmp.clone());
    let runner = Runner::new(config).unwrap();
    let top = dir
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // Flips the host-side private tmp's entry directly (as a concurrent exec
    // would through its /tmp), for the length of the rounds.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, entry, victim) = (stop.clone(), tmp.join(&top), victim.clone());
        std::thread::spawn(move || {
            let aside = entry.with_extension("aside");
            let mut flips = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(&entry);
                let _ = std::fs::rename(&aside, &entry);
                let _ = std::fs::create_dir_all(&entry);
                let _ = std::fs::rename(&entry, &aside);
                let _ = std::os::unix::fs::symlink(&victim, &entry);
                flips += 1;
            }
            flips
        })
    };
    let (mut ran, mut refused) = (0, 0);
    for _ in 0..rounds {
        let outcome = run(&runner, shell("echo ran")).await;
        match outcome.status {
            ExitStatus::Exited(0) => ran += 1,
            ExitStatus::Exited(125) => refused += 1,
            other => panic!("{other:?}: {}", text(&outcome.stderr)),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 0);
    let escaped: Vec<_> = std::fs::read_dir(&victim).unwrap().collect();
    assert!(
        escaped.is_empty(),
        "{} of {rounds} setups made something through the symlink ({ran} ran, {refused} refused)",
        escaped.len()
    );
}
