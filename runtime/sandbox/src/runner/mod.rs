//! The local runner: an agent's commands as processes on the host, each
//! confined in bubblewrap's model by the exec shim (`berth-confine`), in the
//! child — berth's own process gets no `pre_exec`.
//!
//! - **Frame.** The shim binds the worktree at `/work` in the exec's own mount
//!   namespace, so commands, scripts and Makefiles see `/work` and no text is
//!   rewritten. Judged paths are still resolved on the host first
//!   ([`Sandbox::check_host_paths`]) so a symlink out of the worktree holds
//!   the action.
//! - **Confinement.** user (when not root), mount, PID, IPC, UTS and network
//!   namespaces; a fresh root with system directories read-only, the home,
//!   the agent repository and extra roots at their paths, a private `/tmp`;
//!   Landlock; seccomp; rlimits; the berth's uid when berth is root (see
//!   [`CONFINEMENT`]).
//! - **Environment.** Cleared, then an allow-list: `PATH`, `HOME`, `TERM=dumb`,
//!   `LANG`, `LANGUAGE`, `LC_*`, `TZ`, `USER`, `LOGNAME`, the configured extra
//!   names, the request's own, then the git settings that keep repository
//!   configuration from starting programs (`berth_confine::git_env`).
//! - **Process tree.** Each exec has its own cgroup (`cgroup.kill`) and its own
//!   PID namespace whose first process is the shim: when the command exits or
//!   the shim is killed, the kernel kills everything left in it, `setsid`
//!   daemons included. On the deadline the exec's group gets SIGTERM (the shim
//!   forwards it to every process of the namespace), then SIGKILL and
//!   `cgroup.kill` after the grace. [`Runner::kill_all`] ends every exec of
//!   the berth.
//! - **Read-only.** `/work` bound read-only (and no Landlock write right).
//! - **Egress.** An allow-list berth's exec finds its proxy on its own
//!   loopback: PID 1 binds `127.0.0.1:3128` in the exec's network namespace
//!   and hands the listener to berth, which serves it for the exec's
//!   duration ([`crate::egress_port`]).
//!
//! A missing mechanism (no shim, no user namespace) ends the exec with
//! status 125 and a line on stderr saying so; the command never runs
//! unconfined.

mod config;
mod environment;
mod launch;
mod lifetime;
mod resident;

pub use environment::append_path;

pub use resident::dismiss_all as dismiss_residents;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use berth_confine::Network;
use berth_confine::cgroup::ExecCgroups;
pub use berth_confine::cgroup::{CgroupLimits, CgroupRoots, exec_cgroup_in};
pub use berth_confine::git_env::GitIdentity;
pub use berth_confine::spec::DEFAULT_SYSTEM_DIRS;
use berth_confine::{ExecSpec, Rlimit};
use berth_policy::frame::WORK;
use berth_policy::{Frame, PathMap};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use launch::launch_shim;

use crate::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use crate::exec::{
    ExecOutcome, ExecRequest, ExitStatus, Output, OutputChunk, OutputSink, PreparedExec, Program,
};
use crate::host_scope::{HostScope, ScopeFinding};
use crate::{AccessEnforcement, BerthMode, Sandbox, SandboxError, WorkAccess};

pub use config::*;

/// What [`Runner::kill_all`] killed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillAll {
    /// Exec cgroups ended through `cgroup.kill`.
    pub cgroups: Vec<PathBuf>,
    /// Running execs of this runner whose process group (the shim's or a
    /// resident exec's PID 1, and so its PID namespace) got SIGKILL, or was
    /// already gone with its cgroup.
    pub execs: usize,
}

/// The local runner backend. See the module docs.
#[derive(Debug)]
pub struct Runner {
    files: Arc<ConfinedFiles>,
    config: RunnerConfig,
    frame: Frame,
    path_map: PathMap,
    scope: HostScope,
    /// `/work` read-only for later execs.
    read_only: Mutex<bool>,
    /// The shim, or why there is none.
    shim: Result<PathBuf, String>,
    /// `(project, agent)` of the exec cgroups.
    cgroup_name: (String, String),
    /// Process groups (the shims' pids) of running execs.
    running: Arc<Mutex<BTreeSet<i32>>>,
    /// The environment every command starts with ([`base_env`]), derived
    /// once: reading the whole process environment per exec was a twentieth
    /// of an action in process.
    base_env: BTreeMap<String, String>,
    /// The hash of what its execs share, for its resident's fingerprint.
    resident_hash: Arc<resident::SharedHash>,
}

/// Numbers the execs of this process, for their cgroup names.
static EXEC_COUNTER: AtomicU64 = AtomicU64::new(0);

fn invalid_config(message: String) -> SandboxError {
    SandboxError::InvalidConfig(message)
}

/// How long a killed exec's cgroup may take to empty before it is left for a
/// later `kill_all`.
const CGROUP_EMPTY_WAIT: Duration = Duration::from_secs(2);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A cgroup name for a runner configured without one: a hash of the
/// worktree's path (FNV-1a, stable across processes).
fn worktree_tag(worktree: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in worktree.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("wt-{h:016x}")
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
        worktree.to_str().ok_or_else(|| {
            invalid_config(format!(
                "worktree {} is not UTF-8: choose a state directory with a plain path",
                worktree.display()
            ))
        })?;
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
        let cgroup_name = match &config.confinement.cgroup_name {
            Some((project, agent)) => {
                for part in [project, agent] {
                    if !berth_confine::cgroup::valid_component(part) {
                        return Err(invalid_config(format!(
                            "cgroup name part {part:?} must be letters, digits and ._-+@ only"
                        )));
                    }
                }
                (project.clone(), agent.clone())
            }
            None => ("runner".to_string(), worktree_tag(&worktree)),
        };
        let shim = match &config.confinement.shim {
            Some(path) if path.is_file() => Ok(path.clone()),
            Some(path) => Err(format!(
                "the exec shim {} is not a file: install berth-exec-shim there",
                path.display()
            )),
            None => locate_shim(),
        };
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
        // What a file action creates belongs to the berth's uid, as what its
        // commands create does (only root runs as another uid).
        let files = match config.confinement.uid {
            Some((uid, gid)) if crate::identity::current_uid() == 0 => files.with_owner(uid, gid),
            _ => files,
        };
        config.worktree = worktree;
        let base_env = environment::base_env(&config, &home);
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
            read_only: Mutex::new(false),
            shim,
            cgroup_name,
            running: Arc::new(Mutex::new(BTreeSet::new())),
            base_env,
            resident_hash: Arc::default(),
        })
    }

    /// Kills every running exec of this berth: each exec cgroup under
    /// `berth/<project>/<agent>/` (also those another berth process left),
    /// the berth's resident, and the process group of each exec this runner
    /// started (the shim's, or a resident exec's PID 1), which ends its PID
    /// namespace. The cgroups go first: a resident removes an exec's cgroup
    /// as soon as its PID 1 is gone. Reports only the kills it made.
    pub async fn kill_all(&self) -> Result<KillAll, SandboxError> {
        let groups: Vec<i32> = lock(&self.running).iter().copied().collect();
        if let Some(dir) = self.config.confinement.resident.clone() {
            // The resident leaves (and its execs die) once its socket is
            // gone; its cgroup, where there is one, is killed below.
            blocking(move || resident::dismiss_all(&dir)).await;
        }
        let roots = self.config.confinement.cgroup_roots.clone();
        let (project, agent) = self.cgroup_name.clone();
        let cgroups = blocking_step("kill the berth's execs", move || {
            berth_confine::cgroup::kill_berth(&roots, &project, &agent, CGROUP_EMPTY_WAIT)
        })
        .await?;
        // Each group gets SIGKILL; one its cgroup already ended counts too.
        let mut execs = 0;
        for pgid in groups {
            match nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => execs += 1,
                Err(_) => {}
            }
        }
        // A resident's cgroup was killed too (the resident with it), but
        // it ran no command of its own: only execs are reported.
        let cgroups = cgroups
            .into_iter()
            .filter(|dir| {
                !dir.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(resident::CGROUP_PREFIX))
            })
            .collect();
        Ok(KillAll { cgroups, execs })
    }

    /// The canonical worktree.
    pub fn worktree(&self) -> &Path {
        &self.config.worktree
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The spec of one exec for the shim.
    fn spec(&self, cwd: &str, cgroups: &ExecCgroups) -> ExecSpec {
        let confinement = &self.config.confinement;
        let mut writable = vec![self.config.home.clone()];
        writable.extend(confinement.agent_repo.iter().cloned());
        writable.extend(self.config.extra_roots.iter().cloned());
        writable.extend(confinement.writable.iter().cloned());
        ExecSpec {
            parent_pid: std::process::id() as i32,
            worktree: self.config.worktree.clone(),
            work_read_only: *lock(&self.read_only),
            cwd: cwd.to_string(),
            writable,
            readable: confinement.readable.clone(),
            private_tmp: confinement.private_tmp.clone(),
            system_dirs: Vec::new(),
            network: confinement.network,
            uid: confinement.uid.map(|(uid, _)| uid),
            gid: confinement.uid.map(|(_, gid)| gid),
            rlimits: self.config.rlimits.spec_entries(),
            cgroups: cgroups.paths(),
            egress: None,
        }
    }

    /// The outcome of an exec that could not be confined: status 125 and
    /// why, on stderr — the command did not run.
    fn not_confined(
        &self,
        request: &ExecRequest,
        why: &str,
        sink: Option<OutputSink>,
        started: Instant,
    ) -> ExecOutcome {
        let message = format!("berth: confinement: {why}; the command did not run\n").into_bytes();
        if let Some(sink) = sink {
            // The exec's first chunk: a sink has room for it.
            let _ = sink.try_send(OutputChunk::Stderr(message.clone()));
        }
        let mut stderr = crate::TailBuffer::new(request.output_cap.min(self.config.max_output_cap));
        stderr.push(&message);
        ExecOutcome {
            status: ExitStatus::Exited(i32::from(berth_confine::SETUP_FAILED)),
            stdout: Output::default(),
            stderr: stderr.finish(),
            timed_out: false,
            oom_killed: false,
            container_restarted: false,
            duration: started.elapsed(),
        }
    }

    /// Runs `request` as [`prepare`](Sandbox::prepare) translated it.
    async fn run(
        &self,
        request: ExecRequest,
        prepared: PreparedExec,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        let started = Instant::now();
        if !prepared.cwd.is_dir() {
            return Err(SandboxError::MissingCwd {
                cwd: request.cwd.clone(),
                host: Some(prepared.cwd),
            });
        }
        let shim = match &self.shim {
            Ok(shim) => shim.clone(),
            Err(why) => return Ok(self.not_confined(&request, why, sink, started)),
        };
        let mut env = match &request.base_env {
            Some(theirs) => theirs.clone(),
            None => self.base_env.clone(),
        };
        for (name, value) in &request.env {
            env.insert(name.clone(), value.clone());
        }
        // After the request's own: these win.
        env.extend(berth_confine::git_env::git_environment(
            self.config.confinement.git_identity.as_ref(),
        ));

        let (program, args): (String, Vec<String>) = match &prepared.program {
            Program::Shell(line) => (
                self.config.shell.to_string_lossy().into_owned(),
                vec!["-c".to_string(), line.clone()],
            ),
            Program::Argv(argv) => (argv[0].clone(), argv[1..].to_vec()),
        };
        // Named by its action, when it runs one: any berth process can
        // then find it (`berth cancel`).
        let action = match &request.action {
            Some(id) => crate::action_execs::cgroup_component(id),
            None => format!(
                "exec-{}-{}",
                std::process::id(),
                EXEC_COUNTER.fetch_add(1, Ordering::Relaxed)
            ),
        };
        // An allow-list berth's proxy (only where the exec has no network
        // of its own to reach out on).
        let egress = (self.config.confinement.network == Network::None)
            .then_some(self.config.confinement.egress.as_ref())
            .flatten();
        let resident = self.config.confinement.resident.is_some();
        // With a resident the limits are its cgroups' (the berth's); the
        // exec's own cgroup is the cgroup2 one it is cloned into.
        let limits = match resident {
            true => CgroupLimits::default(),
            false => self.config.confinement.limits,
        };
        // The resident is reached while the exec's cgroup is made: two
        // trips to the blocking pool at once, not one after the other (in
        // a one-shot process, both on its thread: `blocking_work`).
        let stream = resident.then(|| {
            self.connect_resident(&shim, &self.spec(&request.cwd, &ExecCgroups::default()))
        });
        let mut cgroups = self.exec_cgroups(&action, limits).await;
        let mut spec = self.spec(&request.cwd, &cgroups);
        let mut argv = vec![program];
        argv.extend(args);

        // An allow-list berth: PID 1 hands berth the proxy's listener in
        // the exec's namespace; served until `_egress` drops (the exec ended).
        let mut _egress = None;
        let launched = match stream {
            Some(stream) => {
                let door = match egress.map(crate::egress_port::RunnerDoor::paired) {
                    Some(Err(e)) => {
                        remove_cgroups(Arc::new(cgroups)).await;
                        return Err(e);
                    }
                    door => door.and_then(Result::ok),
                };
                let (door, handoff) = door.unzip();
                match self
                    .launch_resident(stream, &spec, &argv, &env, &cgroups, handoff)
                    .await
                {
                    Ok(launched) => {
                        _egress = door;
                        Some(launched)
                    }
                    Err(resident::NotStarted::Never(why)) => {
                        tracing::warn!(%why, "no resident for this exec; the shim sets it up");
                        None
                    }
                    Err(resident::NotStarted::Unknown(why)) => {
                        remove_cgroups(Arc::new(cgroups)).await;
                        return Err(SandboxError::Backend {
                            op: "exec",
                            message: format!(
                                "the berth's resident took the command and gave no answer ({why}); it may have begun, so it is not run again"
                            ),
                        });
                    }
                }
            }
            None => None,
        };
        let (launched, stdio) = match launched {
            Some(launched) => launched,
            None => {
                if resident {
                    // The shim joins the exec's cgroups: the limits too.
                    cgroups = self
                        .exec_cgroups(&action, self.config.confinement.limits)
                        .await;
                    spec.cgroups = cgroups.paths();
                }
                if let Some(hook) = egress {
                    match crate::egress_port::RunnerDoor::open(hook) {
                        Ok((door, handoff)) => {
                            spec.egress = Some(handoff);
                            _egress = Some(door);
                        }
                        Err(e) => {
                            remove_cgroups(Arc::new(cgroups)).await;
                            return Err(e);
                        }
                    }
                }
                match launch_shim(&shim, &spec, &argv, &env) {
                    Ok(launched) => launched,
                    Err(source) => {
                        remove_cgroups(Arc::new(cgroups)).await;
                        return Err(SandboxError::Spawn {
                            program: shim.display().to_string(),
                            cwd: prepared.cwd,
                            source,
                        });
                    }
                }
            }
        };
        self.supervise(launched, stdio, cgroups, request, sink, started)
            .await
    }
}

async fn remove_cgroups(cgroups: Arc<ExecCgroups>) {
    blocking(move || cgroups.remove(CGROUP_EMPTY_WAIT)).await;
}

/// Runs `f` off the async threads ([`crate::blocking_work`]); its error, or
/// its panic, is `op`'s.
async fn blocking_step<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, SandboxError> {
    let fail = |message: String| SandboxError::Backend { op, message };
    crate::blocking_work::spawn(f)
        .await
        .map_err(|e| fail(e.to_string()))?
        .map_err(|e| fail(e.to_string()))
}

/// Runs `f` off the async threads ([`crate::blocking_work`]); `None` when
/// it panicked.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    crate::blocking_work::spawn(f).await.ok()
}

#[async_trait::async_trait]
impl Sandbox for Runner {
    fn kind(&self) -> BerthMode {
        BerthMode::Runner
    }

    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn path_map(&self) -> &PathMap {
        &self.path_map
    }

    fn environment_from(
        &self,
        vars: &BTreeMap<String, String>,
    ) -> Option<BTreeMap<String, String>> {
        Some(environment::base_env_from(
            &self.config,
            self.frame.home(),
            vars.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        ))
    }

    async fn exec(
        &self,
        request: ExecRequest,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        let prepared = self.prepare(&request)?;
        self.run(request, prepared, sink).await
    }

    async fn exec_prepared(
        &self,
        request: ExecRequest,
        prepared: PreparedExec,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        self.run(request, prepared, sink).await
    }

    async fn cancel(&self, action: &str) -> Result<bool, SandboxError> {
        if !crate::valid_action_id(action) {
            return Err(SandboxError::InvalidRequest(format!(
                "action id {action:?} names no exec"
            )));
        }
        let roots = self.config.confinement.cgroup_roots.clone();
        let (project, agent) = self.cgroup_name.clone();
        let records = self.config.confinement.exec_records.clone();
        let action = action.to_string();
        let killed = blocking_step("cancel an exec", move || {
            crate::action_execs::kill_action(&roots, &project, &agent, records.as_deref(), &action)
        })
        .await?;
        Ok(killed.found())
    }

    async fn set_work_access(&self, access: WorkAccess) -> Result<AccessEnforcement, SandboxError> {
        // A read-only bind of /work in each later exec's mount tree (and no
        // Landlock write right): enforced wherever the shim runs at all.
        *lock(&self.read_only) = access == WorkAccess::ReadOnly;
        Ok(AccessEnforcement::Enforced)
    }

    /// The program is what runs (`/work` is real inside the exec); the
    /// working directory is shown as its host path for the log.
    fn prepare(&self, request: &ExecRequest) -> Result<PreparedExec, SandboxError> {
        request.validate(self.frame.project_root())?;
        let cwd = self.path_map.to_host(&request.cwd).ok_or_else(|| {
            SandboxError::InvalidRequest(format!(
                "working directory {} has no host path",
                request.cwd
            ))
        })?;
        Ok(PreparedExec {
            program: request.program.clone(),
            cwd,
        })
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
    fn rlimits_reach_the_spec_only_when_set() {
        let limits = Rlimits {
            nofile: Some(512),
            file_size: Some(64 << 20),
            ..Rlimits::default()
        };
        assert_eq!(
            limits.spec_entries(),
            vec![
                (Rlimit::Core, 0),
                (Rlimit::OpenFiles, 512),
                (Rlimit::FileSize, 64 << 20)
            ]
        );
    }

    #[test]
    fn worktree_tags_are_cgroup_names() {
        let tag = worktree_tag(Path::new("/srv/berth/worktrees/p/dev 1"));
        assert!(berth_confine::cgroup::valid_component(&tag), "{tag}");
        assert_ne!(tag, worktree_tag(Path::new("/srv/berth/worktrees/p/dev 2")));
    }
}
