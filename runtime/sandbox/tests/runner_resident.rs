//! A runner berth with a resident: the process that holds the berth's
//! namespaces, tree and cgroups and forks each exec. The exec contract runs
//! against it (as root and with the berth's uid); the cases here are what
//! only a long-lived process can get wrong — sharing, concurrency, a setting
//! that changes between execs, its end, and berth's fallback to the shim.
//! `runner_confinement` runs its attacker's cases against it too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::host_procs;

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_sandbox::contract::ContractFixture;
use berth_sandbox::runner::Network;
use berth_sandbox::{ExecRequest, ExitStatus, Runner, RunnerConfig, Sandbox, WorkAccess};

struct ResidentFixture {
    runner: Runner,
    dir: tempfile::TempDir,
}

impl ContractFixture for ResidentFixture {
    fn sandbox(&self) -> &dyn Sandbox {
        &self.runner
    }
}

impl ResidentFixture {
    fn worktree(&self) -> &Path {
        self.runner.worktree()
    }

    fn residents(&self) -> PathBuf {
        self.dir.path().join("residents")
    }
}

fn config_in(dir: &Path, uid: Option<u32>) -> RunnerConfig {
    let worktree = dir.join("wt");
    let home = dir.join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let root = berth_sandbox::identity::current_uid() == 0;
    if let (Some(uid), true) = (uid, root) {
        for dir in [&worktree, &home] {
            std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
        }
    }
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.uid = uid.map(|u| (u, u));
    config.confinement.resident = Some(dir.join("residents"));
    config.kill_grace = Duration::from_secs(1);
    config
}

fn fixture_with(uid: Option<u32>, configure: impl FnOnce(&mut RunnerConfig)) -> ResidentFixture {
    let dir = tempfile::Builder::new()
        .prefix("berth-resident-")
        .tempdir()
        .unwrap();
    let mut config = config_in(dir.path(), uid);
    configure(&mut config);
    ResidentFixture {
        runner: Runner::new(config).unwrap(),
        dir,
    }
}

async fn resident_fixture() -> ResidentFixture {
    fixture_with(None, |_| {})
}

berth_sandbox::exec_contract_tests!(resident_fixture);

/// The same contract with the berth's uid.
mod as_berth_uid {
    use super::*;

    async fn resident_fixture_as_uid() -> ResidentFixture {
        fixture_with(Some(0x7000_FFF1), |_| {})
    }

    berth_sandbox::exec_contract_tests!(resident_fixture_as_uid);
}

fn shell(line: &str) -> ExecRequest {
    let mut request = ExecRequest::shell(line);
    request.timeout = Duration::from_secs(60);
    request
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The sockets in a residents directory.
fn sockets(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    name.starts_with("exec-") && name.ends_with(".sock")
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The pid of the process listening on `socket` (its peer credentials).
fn listener_pid(socket: &Path) -> Option<i32> {
    let stream = UnixStream::connect(socket).ok()?;
    // SAFETY: getsockopt into a zeroed local of the right size.
    unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        (libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        ) == 0)
            .then_some(cred.pid)
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        !s.lines()
            .any(|l| l.starts_with("State:") && (l.contains('Z') || l.contains('X')))
    })
}

async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..200 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_resident_serves_every_exec_of_the_berth() {
    let f = resident_fixture().await;
    let first = f.runner.exec(shell("echo one"), None).await.unwrap();
    assert_eq!(text(&first.stdout.bytes), "one\n", "{first:?}");
    let socks = sockets(&f.residents());
    assert_eq!(socks.len(), 1, "{socks:?}");
    let pid = listener_pid(&socks[0]).expect("a resident listens");
    // Each exec has its own PID namespace and /proc: the resident is not
    // in it, and the exec's PID 1 is.
    let second = f
        .runner
        .exec(shell("echo two; ls /proc | grep -c '^[0-9]'"), None)
        .await
        .unwrap();
    let out = text(&second.stdout.bytes);
    assert!(out.starts_with("two\n"), "{second:?}");
    let procs: usize = out.lines().nth(1).unwrap().trim().parse().unwrap();
    assert!(procs <= 6, "the exec sees {procs} processes: {out}");
    assert_eq!(sockets(&f.residents()), socks, "no second resident");
    assert_eq!(listener_pid(&socks[0]), Some(pid), "the same resident");
    if berth_sandbox::identity::current_uid() == 0 {
        // Its limits are the berth's: the exec is in the resident's pids
        // cgroup, not one of its own.
        let cgroup = f
            .runner
            .exec(shell("cat /proc/self/cgroup"), None)
            .await
            .unwrap();
        let cgroup = text(&cgroup.stdout.bytes);
        let pids = cgroup
            .lines()
            .find(|l| l.contains(":pids:"))
            .unwrap_or_default();
        assert!(pids.contains("/resident-"), "{cgroup}");
        let unified = cgroup
            .lines()
            .find(|l| l.starts_with("0::"))
            .unwrap_or_default();
        assert!(
            unified.contains("/exec-"),
            "its own cgroup2 directory: {cgroup}"
        );
    }
}

/// A process's start time, in clock ticks since boot, from the text of its
/// `/proc/PID/stat` (field 22; the name before it may hold spaces).
fn start_ticks(stat: &str) -> u64 {
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    after_name
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// What an exec prints to show who cloned its PID 1 and when.
const STATS: &str = "cat /proc/1/stat /proc/self/stat";

/// How many clock ticks the exec's PID 1 started before its command, from
/// [`STATS`]'s two lines in `out` (its other lines hold no `) `).
fn pid1_lead(out: &str) -> u64 {
    let mut stats = out.lines().filter(|l| l.contains(") ")).map(start_ticks);
    let (pid1, command) = (stats.next().unwrap(), stats.next().unwrap());
    command.saturating_sub(pid1)
}

/// The next exec's PID 1 is cloned while the berth is idle, before its
/// order exists — so it is older than the command it starts — and still
/// the command is born in the exec's own cgroup (not PID 1's), and gets
/// the order's `/work` access.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_execs_pid_1_stands_by_before_its_order() {
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let probe = format!("{STATS}; grep '^0::' /proc/1/cgroup; grep '^0::' /proc/self/cgroup");
    let out = f.runner.exec(shell(&probe), None).await.unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0), "{out:?}");
    let out = text(&out.stdout.bytes);
    let lines: Vec<&str> = out.lines().collect();
    // 500 ms is 50 ticks at the usual 100 Hz; a PID 1 cloned for its
    // order starts within a tick of its command.
    assert!(pid1_lead(&out) >= 20, "not cloned ahead:\n{out}");
    if berth_sandbox::identity::current_uid() == 0 {
        assert!(
            lines[3].contains("/exec-") && !lines[2].contains("/exec-"),
            "the command in the exec's cgroup2 directory, PID 1 in the resident's:\n{out}"
        );
    }
    f.runner
        .set_work_access(WorkAccess::ReadOnly)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = f
        .runner
        .exec(shell(&format!("{STATS}; echo y > /work/g")), None)
        .await
        .unwrap();
    let listed = text(&refused.stdout.bytes);
    assert!(pid1_lead(&listed) >= 10, "a standby ran it: {listed}");
    assert_ne!(refused.status, ExitStatus::Exited(0), "{refused:?}");
    assert!(!f.worktree().join("g").exists());
}

/// The children of `pid` (`/proc/PID/task/PID/children`).
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A standby PID 1 killed before its order (by anyone who may) costs
/// nothing but its time: the order goes to a PID 1 cloned for it, and
/// the one after finds a new standby. (An order handed over in the
/// moment between such a kill and the standby's death ends as the exec of
/// a PID 1 killed then would: `Signaled(9)`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_whose_standby_died_is_cloned_for() {
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    let resident = listener_pid(&sockets(&f.residents())[0]).expect("a resident listens");
    until("a standby PID 1", || !children(resident).is_empty()).await;
    let standbys = children(resident);
    for pid in &standbys {
        // SAFETY: signalling a process of this test's own berth.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    until("the killed standby gone", || {
        children(resident).iter().all(|p| !standbys.contains(p))
    })
    .await;
    let out = f
        .runner
        .exec(shell(&format!("echo after; {STATS}")), None)
        .await
        .unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0), "{out:?}");
    let listed = text(&out.stdout.bytes);
    assert!(listed.starts_with("after\n"), "{listed}");
    until("a new standby PID 1", || {
        children(resident).iter().any(|p| !standbys.contains(p))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = f.runner.exec(shell(STATS), None).await.unwrap();
    let stats = text(&again.stdout.bytes);
    assert!(
        pid1_lead(&stats) >= 10,
        "the exec after found a standby again: {stats}"
    );
}

/// Two execs at once in one resident: the second one ends the first's wait,
/// so neither could finish if the resident served one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execs_run_at_once() {
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    let waiter = shell(
        "for i in $(seq 200); do [ -e /work/flag ] && echo seen && exit 0; sleep 0.05; done; exit 1",
    );
    let setter = shell("sleep 0.2; touch /work/flag; echo set");
    let (a, b) = tokio::join!(f.runner.exec(waiter, None), f.runner.exec(setter, None));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.status, ExitStatus::Exited(0), "{a:?}");
    assert_eq!(text(&a.stdout.bytes), "seen\n");
    assert_eq!(text(&b.stdout.bytes), "set\n", "{b:?}");
    assert_eq!(sockets(&f.residents()).len(), 1);
}

/// `/work` read-only is each exec's own: the resident's tree stays
/// writable, and a later exec writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_work_is_each_execs_own() {
    let f = resident_fixture().await;
    let write = || shell("echo x > /work/f && echo wrote");
    assert_eq!(
        text(&f.runner.exec(write(), None).await.unwrap().stdout.bytes),
        "wrote\n"
    );
    f.runner
        .set_work_access(WorkAccess::ReadOnly)
        .await
        .unwrap();
    let refused = f
        .runner
        .exec(shell("echo y > /work/f"), None)
        .await
        .unwrap();
    assert_ne!(refused.status, ExitStatus::Exited(0), "{refused:?}");
    assert_eq!(
        std::fs::read_to_string(f.worktree().join("f")).unwrap(),
        "x\n"
    );
    f.runner
        .set_work_access(WorkAccess::ReadWrite)
        .await
        .unwrap();
    let again = f
        .runner
        .exec(shell("echo z > /work/f && echo wrote"), None)
        .await
        .unwrap();
    assert_eq!(text(&again.stdout.bytes), "wrote\n", "{again:?}");
    assert_eq!(sockets(&f.residents()).len(), 1, "one resident throughout");
}

/// A berth whose shared setting changed (here its network) gets a resident
/// of its own; the old one is left to leave when idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_confinement_gets_its_own_resident() {
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    let mut config = f.runner.config().clone();
    config.confinement.network = Network::Open;
    let open = Runner::new(config).unwrap();
    let out = open.exec(shell("echo open"), None).await.unwrap();
    assert_eq!(text(&out.stdout.bytes), "open\n", "{out:?}");
    let socks = sockets(&f.residents());
    assert_eq!(socks.len(), 2, "{socks:?}");
    let pids: Vec<_> = socks.iter().map(|s| listener_pid(s).unwrap()).collect();
    assert_ne!(pids[0], pids[1]);
}

/// `kill_all` (berth down) ends the resident and every exec it runs; the
/// next exec starts a new resident.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_ends_the_resident_and_its_execs() {
    let f = resident_fixture().await;
    let marker = host_procs::marker();
    let runner = std::sync::Arc::new(f.runner);
    let running = {
        let runner = std::sync::Arc::clone(&runner);
        let line = format!("(setsid sleep {marker} &); sleep {marker}");
        tokio::spawn(async move { runner.exec(shell(&line), None).await })
    };
    assert!(host_procs::appears(&marker).await);
    let residents = f.dir.path().join("residents");
    let socks = sockets(&residents);
    let pid = listener_pid(&socks[0]).unwrap();
    runner.kill_all().await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the exec returns once killed")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, ExitStatus::Signaled(9), "{outcome:?}");
    assert!(
        host_procs::gone_marked(&marker).await,
        "an exec outlived kill_all"
    );
    until("the resident's exit", || !alive(pid)).await;
    let next = runner.exec(shell("echo next"), None).await.unwrap();
    assert_eq!(text(&next.stdout.bytes), "next\n", "{next:?}");
    let socks = sockets(&residents);
    assert_eq!(socks.len(), 1);
    assert_ne!(listener_pid(&socks[0]), Some(pid), "a new resident");
}

/// A removed socket (the berth's state gone) ends the resident within a
/// second or so, and the exec it ran with it; it removes its own cgroups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resident_whose_socket_is_gone_leaves() {
    let f = resident_fixture().await;
    let marker = host_procs::marker();
    let runner = std::sync::Arc::new(f.runner);
    let running = {
        let runner = std::sync::Arc::clone(&runner);
        let line = format!("sleep {marker}");
        tokio::spawn(async move { runner.exec(shell(&line), None).await })
    };
    assert!(host_procs::appears(&marker).await);
    let socks = sockets(&f.dir.path().join("residents"));
    let pid = listener_pid(&socks[0]).unwrap();
    // Its own cgroups (as root), which it removes as it leaves.
    let own: Vec<PathBuf> = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let root = match controllers {
                "" => "/sys/fs/cgroup/unified",
                "pids" => "/sys/fs/cgroup/pids",
                "memory" => "/sys/fs/cgroup/memory",
                _ => return None,
            };
            path.contains("/resident-")
                .then(|| PathBuf::from(format!("{root}{path}")))
        })
        .collect();
    if berth_sandbox::identity::current_uid() == 0 {
        assert!(!own.is_empty(), "a resident of root has cgroups");
        assert!(own.iter().all(|d| d.is_dir()), "{own:?}");
    }
    std::fs::remove_file(&socks[0]).unwrap();
    until("the resident's exit", || !alive(pid)).await;
    for dir in &own {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the exec returns")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, ExitStatus::Signaled(9), "{outcome:?}");
    assert!(host_procs::gone_marked(&marker).await);
}

/// A resident that cannot start (its directory is a file) leaves the exec
/// to the shim: the command runs, confined as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_resident_the_shim_runs_the_exec() {
    let f = fixture_with(None, |c| {
        let blocked = c.worktree.parent().unwrap().join("not-a-dir");
        std::fs::write(&blocked, "").unwrap();
        c.confinement.resident = Some(blocked);
    });
    let out = f
        .runner
        .exec(shell("echo fine; ls /proc | grep -c '^[0-9]'"), None)
        .await
        .unwrap();
    let text = text(&out.stdout.bytes);
    assert!(text.starts_with("fine\n"), "{out:?}");
}

/// A berth whose resident ran one exec and then gave its socket to a
/// stand-in listening in its place (the real resident leaves once its
/// socket is replaced).
async fn stand_in_resident() -> (ResidentFixture, std::os::unix::net::UnixListener) {
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    let socks = sockets(&f.residents());
    let pid = listener_pid(&socks[0]).unwrap();
    std::fs::remove_file(&socks[0]).unwrap();
    until("the resident's exit", || !alive(pid)).await;
    let stand_in = std::os::unix::net::UnixListener::bind(&socks[0]).unwrap();
    (f, stand_in)
}

/// A resident that takes the order and answers nothing (it died between
/// the two; a fault only a stand-in on its socket can cause on demand):
/// the command may have begun, so the exec is an error and the shim does
/// not run it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_without_an_answer_is_not_run_again() {
    let (f, stand_in) = stand_in_resident().await;
    // The stand-in reads whatever comes and hangs up.
    let taker = std::thread::spawn(move || {
        use std::io::Read as _;
        let (mut conn, _) = stand_in.accept().unwrap();
        // The whole order (its length line, then its body), then hang up.
        let mut header = Vec::new();
        let mut byte = [0u8; 1];
        while conn.read_exact(&mut byte).is_ok() && byte[0] != b'\n' {
            header.push(byte[0]);
        }
        let len: usize = String::from_utf8(header).unwrap().parse().unwrap();
        let mut body = vec![0u8; len];
        conn.read_exact(&mut body).unwrap();
    });
    let result = f
        .runner
        .exec(shell("touch /work/ran; echo ran"), None)
        .await;
    taker.join().unwrap();
    let err = result.expect_err("an exec whose start is unknown is an error");
    assert!(err.to_string().contains("not run again"), "{err}");
    assert!(!f.worktree().join("ran").exists(), "the shim ran it again");
}

/// berth takes the command's status from PID 1's own pipe (sent with the
/// order), not from the resident's `status` line, which it reads only when
/// the pipe ended without one (PID 1 killed before it wrote). A stand-in on
/// the resident's socket answers two orders: the first with a status on
/// the pipe and another on its line, the second with the pipe closed empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_comes_from_pid_1s_pipe_and_else_from_the_residents_line() {
    let (f, stand_in) = stand_in_resident().await;
    // A process of its own group for the exec's "PID 1" (berth signals it
    // only on a deadline or a cancel, neither of which comes here).
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let group = sleeper.id();
    let taker = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut statuses = Vec::new();
        for (pipe, line) in [(Some(7 << 8), 0), (None, 3 << 8)] {
            let (mut conn, _) = stand_in.accept().unwrap();
            let (order, mut fds) = berth_confine::resident::wire::recv_order(&mut conn).unwrap();
            statuses.push(order.status_pipe);
            let status = fds.remove(3 + usize::from(order.cgroup.is_some()));
            drop(fds);
            conn.write_all(format!("started {group}\n").as_bytes())
                .unwrap();
            if let Some(code) = pipe {
                std::fs::File::from(status)
                    .write_all(&i32::to_ne_bytes(code))
                    .unwrap();
            } else {
                drop(status);
            }
            conn.write_all(format!("status {line}\n").as_bytes())
                .unwrap();
        }
        statuses
    });
    let from_pipe = f.runner.exec(shell("exit 5"), None).await.unwrap();
    let from_line = f.runner.exec(shell("exit 5"), None).await.unwrap();
    assert_eq!(
        taker.join().unwrap(),
        [true, true],
        "orders with a status pipe"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(from_pipe.status, ExitStatus::Exited(7), "{from_pipe:?}");
    assert_eq!(from_line.status, ExitStatus::Exited(3), "{from_line:?}");
}

/// Serves each listener berth is handed as its own door: every connection
/// to it reads `door N`, N counting the listeners served.
#[derive(Debug, Default)]
struct Doors {
    served: std::sync::atomic::AtomicUsize,
}

impl berth_sandbox::egress_port::EgressPort for Doors {
    fn serve(
        &self,
        listener: std::net::TcpListener,
    ) -> Result<berth_sandbox::egress_port::EgressServing, String> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let n = self.served.fetch_add(1, Ordering::SeqCst) + 1;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            use std::io::Write as _;
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let _ = conn.write_all(format!("door {n}\n").as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        struct Stop(std::sync::Arc<AtomicBool>);
        impl Drop for Stop {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        Ok(berth_sandbox::egress_port::EgressServing(Box::new(Stop(
            stop,
        ))))
    }
}

/// An allow-list berth's execs go through its resident too: each is
/// cloned into a network namespace of its own, whose `127.0.0.1:3128` is
/// the listener its PID 1 handed berth over the socket pair sent with the
/// order. The handoff directory cannot be made here (it lies under a
/// file), so an exec that the shim set up instead would fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_list_berths_execs_each_get_their_own_proxy_port() {
    let doors = std::sync::Arc::new(Doors::default());
    let hook_doors = std::sync::Arc::clone(&doors);
    let f = fixture_with(None, move |c| {
        let blocked = c.worktree.parent().unwrap().join("a-file");
        std::fs::write(&blocked, "").unwrap();
        c.confinement.egress = Some(berth_sandbox::egress_port::EgressHook {
            port: hook_doors,
            handoff_dir: blocked.join("handoff"),
            container_door: berth_sandbox::egress_port::ContainerDoor::default(),
        });
    });
    let knock =
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128 && head -n 1 <&3'; readlink /proc/self/ns/net";
    let mut seen = Vec::new();
    for _ in 0..2 {
        let out = f.runner.exec(shell(knock), None).await.unwrap();
        assert_eq!(out.status, ExitStatus::Exited(0), "{out:?}");
        let got = text(&out.stdout.bytes);
        let mut lines = got.lines();
        let (door, net) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
        assert!(net.starts_with("net:["), "{out:?}");
        seen.push((door.to_string(), net.to_string()));
    }
    assert_eq!(seen[0].0, "door 1", "{seen:?}");
    assert_eq!(
        seen[1].0, "door 2",
        "each exec is served its own listener: {seen:?}"
    );
    assert_ne!(
        seen[0].1, seen[1].1,
        "each exec has its own network: {seen:?}"
    );
    let socks = sockets(&f.residents());
    assert_eq!(socks.len(), 1, "one resident ran both: {socks:?}");
    // Once the exec is over, its port is closed: nothing serves it.
    let out = f
        .runner
        .exec(
            shell("sleep 0.2; bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128 && head -n 1 <&3'"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(text(&out.stdout.bytes), "door 3\n", "{out:?}");
    assert_eq!(doors.served.load(std::sync::atomic::Ordering::SeqCst), 3);
}

/// A peer that connects and sends nothing, or half an order (stopped, or
/// dying between its connect and its order), holds up no other exec: the
/// resident reads each connection as its bytes arrive, so the exec after
/// them runs while they still wait, and each is refused once its order
/// has not come within the resident's deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_holds_up_no_exec() {
    use std::io::{BufRead as _, Read as _, Write as _};
    let f = resident_fixture().await;
    f.runner.exec(shell("true"), None).await.unwrap();
    let socks = sockets(&f.residents());
    let silent = UnixStream::connect(&socks[0]).unwrap();
    let mut half = UnixStream::connect(&socks[0]).unwrap();
    half.write_all(b"12").unwrap();
    let out = f.runner.exec(shell("echo served"), None).await.unwrap();
    assert_eq!(text(&out.stdout.bytes), "served\n", "{out:?}");
    for conn in [&silent, &half] {
        conn.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let early = (&*conn).read(&mut byte);
        assert_eq!(
            early.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "nothing is said to a waiting connection before its deadline"
        );
    }
    for conn in [&silent, &half] {
        conn.set_nonblocking(false).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(conn).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("refused ") && line.contains("did not arrive"),
            "{line:?}"
        );
    }
}
