//! The local runner: an agent's commands as processes on the host, in its
//! worktree, while the agent still sees `/work`.
//!
//! There is no container boundary here, so the runner does what a process can:
//! - **Paths.** Commands are decided in a host frame whose project root is
//!   `/work`; only after the decision are `/work` paths in the working
//!   directory, the command line or each argv element translated to the
//!   worktree ([`Sandbox::prepare`] shows both forms for the log). Judged paths
//!   are resolved on the host first ([`Sandbox::check_host_paths`]) so a symlink
//!   out of the worktree holds the action.
//! - **Environment.** Cleared, then an allow-list: `PATH`, `HOME`, `TERM=dumb`,
//!   `LANG`, `LANGUAGE`, `LC_*`, `TZ`, `USER`, `LOGNAME`, the configured extra
//!   names, then the request's own. The parent's tokens and keys never leak.
//! - **Process tree.** Each exec is its own process group, gets `SIGKILL` if
//!   berth dies (`PR_SET_PDEATHSIG`, with a parent-pid recheck for the race),
//!   and runs under rlimits. On the deadline the group *and* every descendant
//!   that left it get SIGTERM, then SIGKILL after the grace. When the main
//!   process exits, whatever it left running in the background is killed the
//!   same way, and a descendant that escaped the group but still holds the
//!   output pipe is found through `/proc` and killed, so the exec never hangs
//!   on an inherited pipe (see `process_tree`).
//! - **Read-only.** Landlock, applied in `pre_exec` (see `read_only`).
//!
//! What it cannot do is stated in [`NO_CONTAINER_BOUNDARY`].
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not
//! only the process: call `exec` from a runtime's worker threads (as berth
//! does), never from a short-lived thread.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_policy::frame::WORK;
use berth_policy::{Frame, PathMap};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::Signal;
use nix::unistd::{Pid, getppid};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::capture::{Stream, drain};
use crate::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use crate::exec::{
    ExecOutcome, ExecRequest, ExitStatus, Output, OutputChunk, OutputSink, PreparedExec, Program,
};
use crate::host_scope::{HostScope, ScopeFinding};
use crate::{
    AccessEnforcement, Sandbox, SandboxError, SandboxKind, WorkAccess, process_tree, read_only,
};

/// What runner mode cannot contain, for `berth up` and the docs.
pub const NO_CONTAINER_BOUNDARY: &str = "runner mode has no container boundary: \
commands run on this machine as your user, with your network; only paths, the \
environment, rlimits and (for read-only steps) Landlock are restricted. A process \
that daemonises (setsid and closes its output) escapes the kill on timeout; only \
a cgroup or a container contains it. Use mounted mode for untrusted agents.";

/// The `PATH` used when neither the configuration nor berth's own environment
/// has one.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Environment names passed from berth's environment when set. A trailing `*`
/// matches a prefix.
const INHERITED_ENV: &[&str] = &["LANG", "LANGUAGE", "LC_*", "TZ", "USER", "LOGNAME"];

/// How long to wait for output pipes to reach their end after the process
/// tree is gone, before looking for an escaped process that holds them (and
/// again after killing it, before giving up on them).
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How often to look whether a signalled tree is gone.
const POLL: Duration = Duration::from_millis(10);

/// Resource limits applied to each exec (soft and hard alike, never above the
/// hard limit berth itself has). `None` leaves berth's own limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rlimits {
    /// Core dump size; 0 keeps a crashing tool from writing a core into the worktree.
    pub core: Option<u64>,
    /// Open files.
    pub nofile: Option<u64>,
    /// Address space in bytes. Off by default: runtimes that reserve large
    /// virtual ranges (JVM, Go, sanitizers) fail under it.
    pub address_space: Option<u64>,
    /// Processes of the *user* (all of them, not only this exec's). Off by
    /// default; not enforced for root.
    pub nproc: Option<u64>,
    /// Largest file a process may write, in bytes.
    pub file_size: Option<u64>,
    /// CPU seconds per process.
    pub cpu_seconds: Option<u64>,
}

impl Default for Rlimits {
    fn default() -> Self {
        Rlimits {
            core: Some(0),
            nofile: Some(65536),
            address_space: None,
            nproc: None,
            file_size: None,
            cpu_seconds: None,
        }
    }
}

impl Rlimits {
    fn entries(&self) -> [(Resource, Option<u64>); 6] {
        [
            (Resource::RLIMIT_CORE, self.core),
            (Resource::RLIMIT_NOFILE, self.nofile),
            (Resource::RLIMIT_AS, self.address_space),
            (Resource::RLIMIT_NPROC, self.nproc),
            (Resource::RLIMIT_FSIZE, self.file_size),
            (Resource::RLIMIT_CPU, self.cpu_seconds),
        ]
    }

    /// The limits to set, each capped at berth's own hard limit (so a
    /// non-root berth never fails the spawn by asking for more).
    fn resolve(&self) -> Vec<(Resource, u64)> {
        self.entries()
            .into_iter()
            .filter_map(|(resource, limit)| {
                let limit = limit?;
                let hard = getrlimit(resource)
                    .map(|(_, hard)| hard)
                    .unwrap_or(u64::MAX);
                Some((resource, limit.min(hard)))
            })
            .collect()
    }
}

/// How a [`Runner`] is set up.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The agent's worktree on the host; the agent sees it as `/work`.
    pub worktree: PathBuf,
    /// `HOME` for commands (a host path).
    pub home: PathBuf,
    /// Further host directories in the agent's scope, seen at their own paths
    /// (the frame's extra roots).
    pub extra_roots: Vec<PathBuf>,
    /// Further names passed from berth's environment when set (trailing `*`
    /// for a prefix), beyond the built-in allow-list.
    pub inherit_env: Vec<String>,
    /// `PATH` for commands; `None` takes berth's own, or [`DEFAULT_PATH`].
    pub path: Option<String>,
    /// The shell for command lines (`SHELL -c LINE`).
    pub shell: PathBuf,
    pub rlimits: Rlimits,
    /// Between SIGTERM and SIGKILL when a tree is killed. An exec returns at
    /// most about this plus one second after its deadline.
    pub kill_grace: Duration,
    /// The largest output cap a request may ask for; larger ones are lowered
    /// to it, bounding memory per exec.
    pub max_output_cap: usize,
    /// Where commands may still write while `/work` is read-only (never the
    /// worktree itself; see `read_only`).
    pub writable_when_read_only: Vec<PathBuf>,
}

impl RunnerConfig {
    /// The defaults for a worktree and a home directory.
    pub fn new(worktree: impl Into<PathBuf>, home: impl Into<PathBuf>) -> Self {
        let home = home.into();
        RunnerConfig {
            worktree: worktree.into(),
            extra_roots: Vec::new(),
            inherit_env: Vec::new(),
            path: None,
            shell: PathBuf::from("/bin/sh"),
            rlimits: Rlimits::default(),
            kill_grace: Duration::from_secs(2),
            max_output_cap: 16 << 20,
            writable_when_read_only: vec![
                PathBuf::from("/dev"),
                PathBuf::from("/tmp"),
                PathBuf::from("/var/tmp"),
                home.clone(),
            ],
            home,
        }
    }
}

/// Write access for later execs: `None` is read-write, `Some` the Landlock
/// ruleset that makes `/work` read-only.
type AccessState = Option<Arc<OwnedFd>>;

/// The local runner backend. See the module docs.
#[derive(Debug)]
pub struct Runner {
    config: RunnerConfig,
    frame: Frame,
    path_map: PathMap,
    scope: HostScope,
    files: Arc<ConfinedFiles>,
    access: Mutex<AccessState>,
}

fn invalid_config(message: String) -> SandboxError {
    SandboxError::InvalidConfig(message)
}

/// Characters a worktree path may hold: it is spliced into command lines, so
/// nothing a shell would interpret.
fn shell_inert(path: &str) -> bool {
    path.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+@%,:~".contains(&b))
}

impl Runner {
    /// Checks the configuration and sets up the frame (`/work`) and the path
    /// map (`/work` → the canonical worktree).
    pub fn new(mut config: RunnerConfig) -> Result<Self, SandboxError> {
        let worktree = std::fs::canonicalize(&config.worktree).map_err(|e| {
            invalid_config(format!(
                "worktree {}: {e}: create the worktree before starting its runner",
                config.worktree.display()
            ))
        })?;
        if !worktree.is_dir() {
            return Err(invalid_config(format!(
                "worktree {} is not a directory",
                worktree.display()
            )));
        }
        let worktree_str = worktree.to_str().ok_or_else(|| {
            invalid_config(format!(
                "worktree {} is not UTF-8: choose a state directory with a plain path",
                worktree.display()
            ))
        })?;
        if !shell_inert(worktree_str) {
            return Err(invalid_config(format!(
                "worktree {worktree_str} has characters a shell would interpret (spaces, quotes, $...): \
                 runner mode writes it into command lines in place of /work, so choose a state \
                 directory with a plain path"
            )));
        }
        for (what, path) in [("home", &config.home), ("shell", &config.shell)] {
            if !path.is_absolute() {
                return Err(invalid_config(format!(
                    "{what} {} is not an absolute path",
                    path.display()
                )));
            }
        }
        let home = config
            .home
            .to_str()
            .ok_or_else(|| invalid_config(format!("home {} is not UTF-8", config.home.display())))?
            .to_string();
        let mut extra_roots = Vec::new();
        for root in &config.extra_roots {
            let s = root
                .to_str()
                .filter(|_| root.is_absolute())
                .ok_or_else(|| {
                    invalid_config(format!(
                        "extra root {} must be an absolute UTF-8 path",
                        root.display()
                    ))
                })?;
            extra_roots.push(s.to_string());
        }
        let scope = HostScope::new(
            std::iter::once(worktree.clone()).chain(config.extra_roots.iter().cloned()),
        )
        .map_err(|e| invalid_config(e.to_string()))?;
        // The file actions reach the worktree and the extra roots, each
        // beneath its own root; an absolute link target is a host path.
        let files = ConfinedFiles::new(
            std::iter::once(FileMount {
                frame: WORK.to_string(),
                host: worktree.clone(),
                writable: true,
            })
            .chain(config.extra_roots.iter().map(|r| FileMount {
                frame: r.to_string_lossy().into_owned(),
                host: r.clone(),
                writable: true,
            }))
            .collect(),
            LinkTargets::Host,
        );
        config.worktree = worktree;
        Ok(Runner {
            files: Arc::new(files),
            frame: Frame::Host {
                project_root: WORK.to_string(),
                extra_roots,
                home,
            },
            path_map: PathMap::new().with(WORK, &config.worktree),
            scope,
            config,
            access: Mutex::new(None),
        })
    }

    /// The canonical worktree.
    pub fn worktree(&self) -> &Path {
        &self.config.worktree
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The environment a command starts with, before the request's own.
    fn base_env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let path = self
            .config
            .path
            .clone()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_else(|| DEFAULT_PATH.to_string());
        env.insert("PATH".to_string(), path);
        env.insert("HOME".to_string(), self.frame.home().to_string());
        env.insert("TERM".to_string(), "dumb".to_string());
        let allowed = |name: &str| {
            INHERITED_ENV
                .iter()
                .copied()
                .chain(self.config.inherit_env.iter().map(String::as_str))
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == pattern,
                })
        };
        for (name, value) in std::env::vars_os() {
            if let (Some(name), Some(value)) = (name.to_str(), value.to_str())
                && allowed(name)
            {
                env.insert(name.to_string(), value.to_string());
            }
        }
        env
    }

    fn ruleset(&self) -> Option<Arc<OwnedFd>> {
        match self.access.lock() {
            Ok(state) => state.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_ruleset(&self, state: AccessState) {
        match self.access.lock() {
            Ok(mut guard) => *guard = state,
            Err(poisoned) => *poisoned.into_inner() = state,
        }
    }

    async fn run(
        &self,
        request: ExecRequest,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        let started = Instant::now();
        let prepared = self.prepare(&request)?;
        if !prepared.cwd.is_dir() {
            return Err(SandboxError::MissingCwd {
                cwd: request.cwd.clone(),
                host: Some(prepared.cwd),
            });
        }
        let cap = request.output_cap.min(self.config.max_output_cap);
        let mut env = self.base_env();
        for (name, value) in &request.env {
            env.insert(name.clone(), self.path_map.translate_command(value));
        }

        let (program, args): (String, Vec<String>) = match &prepared.program {
            Program::Shell(line) => (
                self.config.shell.to_string_lossy().into_owned(),
                vec!["-c".to_string(), line.clone()],
            ),
            Program::Argv(argv) => (argv[0].clone(), argv[1..].to_vec()),
        };
        let mut command = tokio::process::Command::new(&program);
        command
            .args(&args)
            .current_dir(&prepared.cwd)
            .env_clear()
            .envs(&env)
            .stdin(if request.stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let ruleset = self.ruleset();
        let child_setup = ChildSetup {
            parent: Pid::this(),
            limits: self.config.rlimits.resolve(),
            ruleset: ruleset.as_ref().map(|fd| fd.as_raw_fd()),
        };
        // SAFETY: `ChildSetup::apply` makes only async-signal-safe system calls
        // and does not allocate (its vector was built in the parent).
        unsafe {
            command.pre_exec(move || child_setup.apply());
        }

        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return self.spawn_failed(&request, &prepared, &program, e, sink, started),
        };
        drop(ruleset);
        let Some(pid) = child.id().map(|p| p as i32) else {
            return Err(SandboxError::Backend {
                op: "exec",
                message: format!("{program} exited before its pid could be read"),
            });
        };
        // Leader of its own group: the group id is the pid.
        let pgid = pid;
        let mut guard = GroupGuard {
            pgid,
            armed: true,
            readers: Vec::new(),
        };

        let mut pipe_inodes = Vec::new();
        let (stop_tx, stop_rx) = watch::channel(false);
        let stdout = child.stdout.take().map(|pipe| {
            pipe_inodes.extend(process_tree::pipe_inode(pipe.as_raw_fd()));
            tokio::spawn(drain(
                pipe,
                Stream::Stdout,
                cap,
                sink.clone(),
                stop_rx.clone(),
            ))
        });
        let stderr = child.stderr.take().map(|pipe| {
            pipe_inodes.extend(process_tree::pipe_inode(pipe.as_raw_fd()));
            tokio::spawn(drain(pipe, Stream::Stderr, cap, sink, stop_rx))
        });
        guard
            .readers
            .extend(stdout.iter().chain(stderr.iter()).map(|r| r.abort_handle()));
        let stdin_writer = match (child.stdin.take(), request.stdin) {
            (Some(mut pipe), Some(data)) => Some(tokio::spawn(async move {
                // A command that does not read its input closes the pipe:
                // that is its choice, not an error.
                let _ = pipe.write_all(&data).await;
                let _ = pipe.shutdown().await;
            })),
            _ => None,
        };

        // A timeout too large to add is as good as none (a century).
        let deadline = tokio::time::Instant::from_std(
            started
                .checked_add(request.timeout)
                .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 86_400)),
        );
        let grace = self.config.kill_grace;
        let (status, timed_out) = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(status) => (status, false),
            Err(_) => {
                tracing::debug!(pid, timeout = ?request.timeout, "deadline passed; killing the process tree");
                (kill_tree(&mut child, pgid, grace).await, true)
            }
        };
        let status = status.map_err(|source| SandboxError::Io {
            op: "wait for the command",
            source,
        })?;
        // Whatever the command left running in the background dies with it.
        if !timed_out && group_alive(pgid).await {
            tracing::debug!(pgid, "command left background processes; killing them");
            kill_leftovers(pgid, grace).await;
        }

        let outputs = collect_output(stdout, stderr, &stop_tx, &pipe_inodes).await;
        if let Some(writer) = stdin_writer {
            writer.abort();
        }
        guard.armed = false;
        let (stdout, stderr) = outputs;
        Ok(ExecOutcome {
            status: exit_status(status),
            stdout,
            stderr,
            timed_out,
            // rlimits end a runner command with an error, not an OOM kill.
            oom_killed: false,
            duration: started.elapsed(),
        })
    }

    /// A program that is missing or not executable is reported the way a
    /// shell reports it (127, 126, with a line on stderr), so argv and command
    /// lines read alike; anything else is an error.
    fn spawn_failed(
        &self,
        request: &ExecRequest,
        prepared: &PreparedExec,
        program: &str,
        error: std::io::Error,
        sink: Option<OutputSink>,
        started: Instant,
    ) -> Result<ExecOutcome, SandboxError> {
        if !prepared.cwd.is_dir() {
            return Err(SandboxError::MissingCwd {
                cwd: request.cwd.clone(),
                host: Some(prepared.cwd.clone()),
            });
        }
        let code = match (&request.program, error.raw_os_error()) {
            (Program::Argv(_), Some(libc::ENOENT)) => 127,
            (Program::Argv(_), Some(libc::EACCES | libc::ENOEXEC)) => 126,
            _ => {
                return Err(SandboxError::Spawn {
                    program: program.to_string(),
                    cwd: prepared.cwd.clone(),
                    source: error,
                });
            }
        };
        let message = format!("berth: {program}: {error}\n").into_bytes();
        if let Some(sink) = sink {
            // The exec's first chunk: a sink has room for it.
            let _ = sink.try_send(OutputChunk::Stderr(message.clone()));
        }
        let mut stderr = crate::TailBuffer::new(request.output_cap.min(self.config.max_output_cap));
        stderr.push(&message);
        Ok(ExecOutcome {
            status: ExitStatus::Exited(code),
            stdout: Output::default(),
            stderr: stderr.finish(),
            timed_out: false,
            oom_killed: false,
            duration: started.elapsed(),
        })
    }
}

/// What the child does between fork and exec.
struct ChildSetup {
    parent: Pid,
    limits: Vec<(Resource, u64)>,
    ruleset: Option<RawFd>,
}

impl ChildSetup {
    fn apply(&self) -> std::io::Result<()> {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
        // If berth died before the line above, the signal will never come.
        if getppid() != self.parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        for &(resource, limit) in &self.limits {
            setrlimit(resource, limit, limit).map_err(std::io::Error::from)?;
        }
        if let Some(fd) = self.ruleset {
            read_only::restrict_self(fd)?;
        }
        Ok(())
    }
}

/// Kills the exec's process group and stops its output readers if the exec
/// is dropped half-way (its caller cancelled), so nothing outlives it;
/// `kill_on_drop` covers only the main process.
struct GroupGuard {
    pgid: i32,
    armed: bool,
    readers: Vec<tokio::task::AbortHandle>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            for reader in &self.readers {
                reader.abort();
            }
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

async fn group_alive(pgid: i32) -> bool {
    // The usual answer, an empty group, costs one system call.
    if process_tree::group_empty(pgid) {
        return false;
    }
    blocking(move || process_tree::group_alive(pgid))
        .await
        .unwrap_or(true)
}

/// Deadline passed: SIGTERM to the group and every descendant (snapshot
/// first, while parent links still lead to processes that left the group),
/// wait up to `grace` for all of them, then SIGKILL.
async fn kill_tree(
    child: &mut tokio::process::Child,
    pgid: i32,
    grace: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    let tree = blocking(move || process_tree::tree(Some(pgid), pgid))
        .await
        .unwrap_or_default();
    let procs = tree.clone();
    blocking(move || process_tree::signal_tree(pgid, &procs, Signal::SIGTERM)).await;
    let until = tokio::time::Instant::now() + grace;
    let mut status = tokio::time::timeout_at(until, child.wait()).await.ok();
    while tokio::time::Instant::now() < until && tree_alive(pgid, &tree).await {
        tokio::time::sleep(POLL).await;
    }
    blocking(move || process_tree::signal_tree(pgid, &tree, Signal::SIGKILL)).await;
    match status.take() {
        Some(status) => status,
        None => child.wait().await,
    }
}

/// The main process exited but left some of its group running: the same
/// SIGTERM, grace, SIGKILL, for the group and what descends from it.
async fn kill_leftovers(pgid: i32, grace: Duration) {
    let tree = blocking(move || process_tree::tree(None, pgid))
        .await
        .unwrap_or_default();
    let procs = tree.clone();
    blocking(move || process_tree::signal_tree(pgid, &procs, Signal::SIGTERM)).await;
    let until = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < until && tree_alive(pgid, &tree).await {
        tokio::time::sleep(POLL).await;
    }
    if tree_alive(pgid, &tree).await {
        blocking(move || process_tree::signal_tree(pgid, &tree, Signal::SIGKILL)).await;
    }
}

async fn tree_alive(pgid: i32, tree: &[process_tree::ProcId]) -> bool {
    let tree = tree.to_vec();
    blocking(move || {
        process_tree::group_alive(pgid) || tree.iter().any(|p| process_tree::alive(*p))
    })
    .await
    .unwrap_or(false)
}

type Reader = tokio::task::JoinHandle<Output>;

/// Waits for both output readers; if a process that escaped the kill keeps a
/// pipe open, kills the holders, and if that does not end it either, stops
/// reading and keeps what was read.
async fn collect_output(
    stdout: Option<Reader>,
    stderr: Option<Reader>,
    stop: &watch::Sender<bool>,
    pipe_inodes: &[u64],
) -> (Output, Output) {
    let both = async {
        let out = match stdout {
            Some(r) => r.await.unwrap_or_default(),
            None => Output::default(),
        };
        let err = match stderr {
            Some(r) => r.await.unwrap_or_default(),
            None => Output::default(),
        };
        (out, err)
    };
    tokio::pin!(both);
    if let Ok(outputs) = tokio::time::timeout(DRAIN_GRACE, &mut both).await {
        return outputs;
    }
    let inodes = pipe_inodes.to_vec();
    let holders = blocking(move || process_tree::pipe_holders(&inodes))
        .await
        .unwrap_or_default();
    tracing::warn!(
        holders = ?holders.iter().map(|p| p.pid).collect::<Vec<_>>(),
        "processes outside the exec's group still hold its output; killing them"
    );
    blocking(move || {
        for p in &holders {
            if process_tree::alive(*p) {
                let _ = nix::sys::signal::kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            }
        }
    })
    .await;
    if let Ok(outputs) = tokio::time::timeout(DRAIN_GRACE, &mut both).await {
        return outputs;
    }
    tracing::warn!("output pipes still held open after the kill; returning what was read");
    let _ = stop.send(true);
    both.await
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Exited(code),
        (None, Some(signal)) => ExitStatus::Signaled(signal),
        // Neither code nor signal cannot happen for a waited child; report it
        // as the shell would see an unknown failure.
        (None, None) => ExitStatus::Exited(255),
    }
}

#[async_trait::async_trait]
impl Sandbox for Runner {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Runner
    }

    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn path_map(&self) -> &PathMap {
        &self.path_map
    }

    async fn exec(
        &self,
        request: ExecRequest,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        self.run(request, sink).await
    }

    async fn set_work_access(&self, access: WorkAccess) -> Result<AccessEnforcement, SandboxError> {
        match access {
            WorkAccess::ReadWrite => {
                self.set_ruleset(None);
                Ok(AccessEnforcement::Enforced)
            }
            WorkAccess::ReadOnly => {
                if let Err(message) = read_only::support(&read_only::kernel_abi()) {
                    tracing::warn!(%message, "read-only /work requested");
                    return Ok(AccessEnforcement::NotEnforced(message));
                }
                let worktree = self.config.worktree.clone();
                let candidates = self.config.writable_when_read_only.clone();
                let fd = tokio::task::spawn_blocking(move || {
                    let roots = read_only::writable_roots(&worktree, &candidates);
                    read_only::build_ruleset(&worktree, &roots)
                })
                .await
                .map_err(|e| SandboxError::Backend {
                    op: "set /work read-only",
                    message: e.to_string(),
                })??;
                self.set_ruleset(Some(Arc::new(fd)));
                Ok(AccessEnforcement::Enforced)
            }
        }
    }

    fn prepare(&self, request: &ExecRequest) -> Result<PreparedExec, SandboxError> {
        request.validate(self.frame.project_root())?;
        let cwd = self.path_map.to_host(&request.cwd).ok_or_else(|| {
            SandboxError::InvalidRequest(format!(
                "working directory {} has no host path",
                request.cwd
            ))
        })?;
        let program = match &request.program {
            Program::Shell(line) => Program::Shell(self.path_map.translate_command(line)),
            Program::Argv(argv) => Program::Argv(
                argv.iter()
                    .map(|arg| self.path_map.translate_command(arg))
                    .collect(),
            ),
        };
        Ok(PreparedExec { program, cwd })
    }

    fn check_host_paths(&self, frame_paths: &[String]) -> Vec<ScopeFinding> {
        self.scope.check(&self.path_map, frame_paths)
    }

    fn files(&self) -> Arc<ConfinedFiles> {
        Arc::clone(&self.files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_paths_must_be_shell_inert() {
        let cases = [
            ("/srv/berth/worktrees/p/dev-1", true),
            ("/home/u/.local/share/berth/wt/p_1/a-b+c@d", true),
            ("/home/u/my project", false),
            ("/tmp/a$b", false),
            ("/tmp/a'b", false),
            ("/tmp/a;b", false),
            ("/tmp/a*b", false),
        ];
        for (path, ok) in cases {
            assert_eq!(shell_inert(path), ok, "{path}");
        }
    }

    #[test]
    fn rlimits_never_exceed_the_hard_limit() {
        let limits = Rlimits {
            nofile: Some(u64::MAX),
            ..Rlimits::default()
        };
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let resolved = limits.resolve();
        assert!(
            resolved.contains(&(Resource::RLIMIT_CORE, 0)),
            "{resolved:?}"
        );
        assert!(
            resolved.contains(&(Resource::RLIMIT_NOFILE, hard)),
            "{resolved:?}"
        );
        assert_eq!(
            resolved.len(),
            2,
            "only configured limits are set: {resolved:?}"
        );
    }
}
