//! What a runner is given: its configuration ([`RunnerConfig`]), the
//! confinement every exec gets ([`Confinement`], [`Rlimits`]), where the exec
//! shim is, and what runner mode confines, in words for `berth up`.

use super::*;

/// What runner mode confines and what it does not, for `berth up` and the docs.
pub const CONFINEMENT: &str = "runner mode confines each command in its own user \
(when berth is not root), mount, PID and network namespaces: /work is the worktree, \
system directories are read-only, /tmp is private, the rest of this machine's files, \
berth's state and host sockets are not visible, the network holds only loopback; \
Landlock and seccomp (no io_uring, no unix or raw sockets, no namespace or keyring \
calls) stand behind them, and every process of an exec, daemons included, ends with \
it. It shares this machine's kernel: a kernel exploit escapes it, and CPU, memory \
and disk are bounded only by the configured limits. Use mounted mode for a second \
kernel boundary (Docker).";

/// The `PATH` used when neither the configuration nor berth's own environment
/// has one.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

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
    /// The limits for the shim to set (it caps each at its own hard limit, so
    /// a non-root berth never fails the spawn by asking for more).
    pub(super) fn spec_entries(&self) -> Vec<(Rlimit, u64)> {
        [
            (Rlimit::Core, self.core),
            (Rlimit::OpenFiles, self.nofile),
            (Rlimit::AddressSpace, self.address_space),
            (Rlimit::Processes, self.nproc),
            (Rlimit::FileSize, self.file_size),
            (Rlimit::CpuSeconds, self.cpu_seconds),
        ]
        .into_iter()
        .filter_map(|(limit, value)| Some((limit, value?)))
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
    /// Directories appended to `PATH` (declared toolchains' programs).
    pub path_append: Vec<String>,
    /// Variables every command gets (declared toolchains' and caches'),
    /// after the inherited ones; a request's own still win.
    pub env: BTreeMap<String, String>,
    /// The shell for command lines (`SHELL -c LINE`).
    pub shell: PathBuf,
    pub rlimits: Rlimits,
    /// Between SIGTERM and SIGKILL when a tree is killed. An exec returns at
    /// most about this plus one second after its deadline.
    pub kill_grace: Duration,
    /// The largest output cap a request may ask for; larger ones are lowered
    /// to it, bounding memory per exec.
    pub max_output_cap: usize,
    /// How each exec is confined.
    pub confinement: Confinement,
}

/// How the shim confines each exec of a runner.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The berth's uid and gid when berth runs as root. `None` keeps uid 0
    /// with every capability dropped (the mount tree, Landlock and seccomp
    /// still hold). Ignored when berth is not root: a user namespace maps
    /// the user's own uid.
    pub uid: Option<(u32, u32)>,
    /// The agent repository, read-write at its host path.
    pub agent_repo: Option<PathBuf>,
    /// Host directories readable at their own paths (declared toolchains,
    /// the forge's objects).
    pub readable: Vec<PathBuf>,
    /// Host directories writable at their own paths (declared caches).
    pub writable: Vec<PathBuf>,
    /// The per-berth directory at `/tmp`; `None`: a fresh tmpfs per exec.
    pub private_tmp: Option<PathBuf>,
    pub network: Network,
    /// `user.name`/`user.email` of the agent's own git commands (among the
    /// forced `GIT_CONFIG_*`); `None` sets none.
    pub git_identity: Option<GitIdentity>,
    /// Per-exec limits held by cgroups (v1 `pids`, `memory`).
    pub limits: CgroupLimits,
    /// `(project, agent)`: the exec cgroups are `berth/<project>/<agent>/<action>`.
    /// `None` names them after the worktree.
    pub cgroup_name: Option<(String, String)>,
    pub cgroup_roots: CgroupRoots,
    /// berth's private directory where an exec that runs an action records
    /// its process group, so another berth process can cancel it without
    /// cgroups ([`crate::action_execs`]); `None` records nothing.
    pub exec_records: Option<PathBuf>,
    /// The shim; `None` looks for it (see [`locate_shim`]).
    pub shim: Option<PathBuf>,
    /// berth's private directory for the berth's resident, which holds its
    /// cgroups, namespaces and tree and forks each exec
    /// (`berth_confine::resident`): the limits then bound the berth's execs
    /// together (an allow-list berth's too: each of its execs gets a network
    /// namespace of its own for the proxy's listener). `None` sets each exec
    /// up through the shim.
    pub resident: Option<PathBuf>,
    /// An allow-list berth's proxy, reached on the exec's loopback
    /// ([`crate::egress_port`]); only with [`Network::None`].
    pub egress: Option<crate::egress_port::EgressHook>,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            uid: None,
            agent_repo: None,
            readable: Vec::new(),
            writable: Vec::new(),
            private_tmp: None,
            network: Network::None,
            git_identity: None,
            limits: CgroupLimits {
                processes: Some(4096),
                memory: None,
            },
            cgroup_name: None,
            cgroup_roots: CgroupRoots::default(),
            exec_records: None,
            shim: None,
            resident: None,
            egress: None,
        }
    }
}

impl RunnerConfig {
    /// The defaults for a worktree and a home directory.
    pub fn new(worktree: impl Into<PathBuf>, home: impl Into<PathBuf>) -> Self {
        RunnerConfig {
            worktree: worktree.into(),
            home: home.into(),
            extra_roots: Vec::new(),
            inherit_env: Vec::new(),
            path: None,
            path_append: Vec::new(),
            env: BTreeMap::new(),
            shell: PathBuf::from("/bin/sh"),
            rlimits: Rlimits::default(),
            kill_grace: Duration::from_secs(2),
            max_output_cap: 16 << 20,
            confinement: Confinement::default(),
        }
    }
}

/// Where the shim is: `BERTH_EXEC_SHIM`, else beside berth's executable, else
/// in its parent directory (test binaries live in `target/<profile>/deps`).
/// The error says where it looked.
pub fn locate_shim() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(berth_confine::SHIM_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} names {}, which is not a file",
                berth_confine::SHIM_ENV,
                path.display()
            ))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("find berth's own executable: {e}"))?;
    let mut looked = Vec::new();
    for dir in exe.ancestors().skip(1).take(2) {
        let candidate = dir.join(berth_confine::SHIM_NAME);
        if candidate.is_file() {
            return Ok(candidate);
        }
        looked.push(candidate.display().to_string());
    }
    Err(format!(
        "{} not found (looked at {}): install it beside berth, set {}, or build it with `cargo build -p berth-confine`",
        berth_confine::SHIM_NAME,
        looked.join(", "),
        berth_confine::SHIM_ENV
    ))
}

/// Whether `project`/`agent` can name the berth's exec cgroups.
pub fn cgroup_name_valid(project: &str, agent: &str) -> bool {
    berth_confine::cgroup::valid_component(project) && berth_confine::cgroup::valid_component(agent)
}

/// Kills every exec cgroup of the berth `project`/`agent` (for `berth down`
/// and recovery, which may not hold the berth's [`Runner`]). Returns the
/// cgroups it killed; none when the berth never had any.
pub async fn kill_berth_execs(project: &str, agent: &str) -> Result<Vec<PathBuf>, SandboxError> {
    let (project, agent) = (project.to_string(), agent.to_string());
    let fail = |message: String| SandboxError::Backend {
        op: "kill the berth's execs",
        message,
    };
    tokio::task::spawn_blocking(move || {
        berth_confine::cgroup::kill_berth(
            &CgroupRoots::default(),
            &project,
            &agent,
            CGROUP_EMPTY_WAIT,
        )
    })
    .await
    .map_err(|e| fail(e.to_string()))?
    .map_err(|e| fail(e.to_string()))
}

/// Ends everything a runner berth runs, before its disk goes: its
/// residents (their sockets removed: one that no cgroup reaches leaves
/// within a second) and every process in its cgroups — a resident binds
/// the berth's directories in a mount namespace of its own, so it would
/// keep the disk's filesystem alive after the unmount. Blocking.
pub fn end_berth_processes(
    residents: &Path,
    project: &str,
    agent: &str,
) -> Result<Vec<PathBuf>, SandboxError> {
    super::resident::dismiss_all(residents);
    berth_confine::cgroup::kill_berth(&CgroupRoots::default(), project, agent, CGROUP_EMPTY_WAIT)
        .map_err(|e| SandboxError::Backend {
            op: "kill the berth's execs",
            message: e.to_string(),
        })
}
