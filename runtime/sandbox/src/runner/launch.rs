//! The two ways a runner exec starts, behind one handle: the shim, spawned
//! per exec with its spec framed on stdin, or the berth's resident, handed
//! the exec's descriptors over its socket ([`super::resident`]). Either way
//! berth reads the same pipes, waits for one wait status, and kills by the
//! exec's process group and cgroup.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use berth_confine::ExecSpec;
use berth_confine::cgroup::ExecCgroups;
use berth_confine::resident::wire::ExecOrder;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncWrite};

use super::resident::{NotStarted, Pipes, Place, ResidentExec};
use super::{Runner, blocking};

/// berth's ends of the exec's standard streams, and what goes on stdin
/// before the command's own input (the shim's spec).
pub(super) struct Stdio {
    pub stdin: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    pub stdout: Option<Box<dyn AsyncRead + Unpin + Send>>,
    pub stderr: Option<Box<dyn AsyncRead + Unpin + Send>>,
    pub first_input: Vec<u8>,
}

/// A started exec.
pub(super) enum Launched {
    /// The shim, and its pid (read once at the spawn: a reaped child has
    /// none, and a group of 0 would be berth's own).
    Shim(tokio::process::Child, i32),
    Resident(ResidentExec),
}

impl Launched {
    /// The exec's process group: the shim's, or the resident exec's PID 1.
    pub fn pid(&self) -> i32 {
        match self {
            Launched::Shim(_, pid) => *pid,
            Launched::Resident(exec) => exec.pid,
        }
    }

    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Launched::Shim(child, _) => child.wait().await,
            Launched::Resident(exec) => Ok(exec.wait().await),
        }
    }

    /// Deadline passed: SIGTERM to every process of the exec (the shim and
    /// PID 1 forward it), up to `grace` to exit, then SIGKILL to the group
    /// and `cgroup.kill`. PID 1's death ends its PID namespace either way.
    pub async fn kill(
        &mut self,
        pgid: i32,
        cgroups: &Arc<ExecCgroups>,
        grace: Duration,
    ) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Launched::Shim(..) => {
                let _ = nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            }
            Launched::Resident(exec) => exec.signal(libc::SIGTERM).await,
        }
        if let Ok(status) = tokio::time::timeout(grace, self.wait()).await {
            return status;
        }
        let _ = nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        let cgroups = Arc::clone(cgroups);
        if let Some(Err(e)) = blocking(move || cgroups.kill()).await {
            tracing::warn!(error = %e, "cgroup.kill failed; the PID namespace ends the exec");
        }
        self.wait().await
    }
}

/// Spawns the shim for one exec: its own process group, the spec first on
/// its stdin.
pub(super) fn launch_shim(
    shim: &Path,
    spec: &ExecSpec,
    argv: &[String],
    env: &BTreeMap<String, String>,
) -> std::io::Result<(Launched, Stdio)> {
    let first_input = berth_confine::spec::framed(spec)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let mut command = tokio::process::Command::new(shim);
    command
        .arg("--")
        .args(argv)
        .current_dir("/")
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return Err(std::io::Error::other(format!(
            "{} exited before its pid could be read",
            shim.display()
        )));
    };
    let stdio = Stdio {
        stdin: child
            .stdin
            .take()
            .map(|p| Box::new(p) as Box<dyn AsyncWrite + Unpin + Send>),
        stdout: child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn AsyncRead + Unpin + Send>),
        stderr: child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn AsyncRead + Unpin + Send>),
        first_input,
    };
    Ok((Launched::Shim(child, pid), stdio))
}

/// The berth's resident being reached ([`Runner::connect_resident`]).
pub(super) type ResidentStream =
    crate::blocking_work::BlockingWork<Result<std::os::unix::net::UnixStream, String>>;

/// Opens a cgroup2 directory for `CLONE_INTO_CGROUP`.
fn open_cgroup(dir: &Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)?;
    Ok(OwnedFd::from(file))
}

impl Runner {
    /// Reaches the berth's resident (started first when none runs) off the
    /// async threads ([`crate::blocking_work`]): where that is the blocking
    /// pool, the caller makes the exec's cgroup meanwhile; it hands the
    /// stream to [`Runner::launch_resident`].
    pub(super) fn connect_resident(&self, shim: &Path, spec: &ExecSpec) -> ResidentStream {
        // What every exec of the berth shares: the resident's key.
        let berth = ExecSpec {
            parent_pid: 0,
            cwd: berth_policy::frame::WORK.to_string(),
            work_read_only: false,
            rlimits: Vec::new(),
            cgroups: Vec::new(),
            egress: None,
            ..spec.clone()
        };
        let dir = self.config.confinement.resident.clone();
        let shim = shim.to_path_buf();
        let roots = self.config.confinement.cgroup_roots.clone();
        let (project, agent) = self.cgroup_name.clone();
        let limits = self.config.confinement.limits;
        let shared = Arc::clone(&self.resident_hash);
        crate::blocking_work::spawn(move || {
            let dir = dir.ok_or_else(|| "the berth has no resident directory".to_string())?;
            super::resident::connect(Place {
                dir: &dir,
                shim: &shim,
                berth,
                roots: &roots,
                names: (&project, &agent),
                limits,
                shared: &shared,
            })
        })
    }

    /// Hands the exec to the berth's resident, through `stream`
    /// ([`Runner::connect_resident`]). [`NotStarted::Never`] says why not,
    /// and the caller uses the shim; [`NotStarted::Unknown`] is the exec's
    /// error. `egress_handoff`: the end of an allow-list exec's socket pair
    /// ([`crate::egress_port`]).
    pub(super) async fn launch_resident(
        &self,
        stream: ResidentStream,
        spec: &ExecSpec,
        argv: &[String],
        env: &BTreeMap<String, String>,
        cgroups: &ExecCgroups,
        egress_handoff: Option<OwnedFd>,
    ) -> Result<(Launched, Stdio), NotStarted> {
        let stream = stream
            .await
            .map_err(|e| NotStarted::Never(e.to_string()))?
            .map_err(NotStarted::Never)?;
        let pipes =
            Pipes::new().map_err(|e| NotStarted::Never(format!("make the exec's pipes: {e}")))?;
        let mut fds: Vec<OwnedFd> = pipes.theirs.into();
        let mut cgroup = None;
        if let Some(unified) = &cgroups.unified {
            fds.push(
                open_cgroup(unified)
                    .map_err(|e| NotStarted::Never(format!("{}: {e}", unified.display())))?,
            );
            cgroup = unified
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
        }
        // PID 1 writes the command's status here too: berth hears of the
        // end straight from it, not through the resident's relay.
        let (status_r, status_w) = super::resident::pipe()
            .map_err(|e| NotStarted::Never(format!("make the exec's status pipe: {e}")))?;
        fds.push(status_w);
        // Last: the exec's PID 1 sends the proxy's listener back on it.
        let egress_port = egress_handoff.map(|end| {
            fds.push(end);
            crate::egress_port::EGRESS_PORT
        });
        let order = ExecOrder {
            argv: argv.to_vec(),
            env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            cwd: spec.cwd.clone(),
            rlimits: spec.rlimits.clone(),
            work_read_only: spec.work_read_only,
            cgroup,
            status_pipe: true,
            egress_port,
        };
        let exec = ResidentExec::start(stream, order, fds, status_r).await?;
        // The command has started: a pipe berth cannot read is its error.
        let wrap = |e: std::io::Error| NotStarted::Unknown(format!("the exec's pipes: {e}"));
        let stdio = Stdio {
            stdin: Some(Box::new(
                tokio::net::unix::pipe::Sender::from_owned_fd(pipes.stdin).map_err(wrap)?,
            )),
            stdout: Some(Box::new(
                tokio::net::unix::pipe::Receiver::from_owned_fd(pipes.stdout).map_err(wrap)?,
            )),
            stderr: Some(Box::new(
                tokio::net::unix::pipe::Receiver::from_owned_fd(pipes.stderr).map_err(wrap)?,
            )),
            first_input: Vec::new(),
        };
        Ok((Launched::Resident(exec), stdio))
    }

    /// The exec's cgroups, made off the async threads.
    pub(super) async fn exec_cgroups(
        &self,
        action: &str,
        limits: berth_confine::cgroup::CgroupLimits,
    ) -> ExecCgroups {
        let (project, agent) = self.cgroup_name.clone();
        let roots = self.config.confinement.cgroup_roots.clone();
        let action = action.to_string();
        let cgroups =
            blocking(move || ExecCgroups::create(&roots, &project, &agent, &action, limits))
                .await
                .unwrap_or_default();
        for missing in &cgroups.missing {
            tracing::debug!(%missing, "exec cgroup");
        }
        cgroups
    }
}
