//! Sandboxes: where an approved action runs.
//!
//! One trait, [`Sandbox`], and one exec contract ([`exec`]), with two real
//! backends: the local runner (processes on the host inside the worktree) and
//! Docker berths (one container per agent, the worktree at `/work`). The engine
//! decides an action in the sandbox's [`frame`](Sandbox::frame) and translates
//! paths with its [`path_map`](Sandbox::path_map) only after the decision.

pub mod action_execs;
pub mod blocking_work;
pub mod capture;
pub mod confined_files;
#[cfg(feature = "contract")]
pub mod contract;
pub mod disk;
pub mod docker;
pub mod egress_port;
pub mod exec;
pub mod frame_links;
pub mod host_scope;
pub mod identity;
pub mod image;
pub mod provider;
pub mod runner;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use berth_policy::{Frame, PathMap};

pub use capture::TailBuffer;
pub use confined_files::{
    ConfinedFiles, FileActionError, FileContent, FileOp, FileRead, FileWritten,
};
pub use exec::{
    ExecOutcome, ExecRequest, ExitStatus, OUTPUT_CHANNEL_CHUNKS, Output, OutputChunk, OutputSink,
    PreparedExec, Program, output_channel, valid_action_id,
};
pub use host_scope::{HostScope, ScopeFinding};
pub use provider::{
    BerthBackend, BerthMode, BerthSpec, DockerProvider, LocalProvider, OpenedSandbox,
    OrphanContainer, ProviderError, ReconciledContainer, RunnerBerth, SandboxProvider,
};
pub use runner::{CONFINEMENT, Confinement, KillAll, Rlimits, Runner, RunnerConfig, locate_shim};

/// Whether commands may write the project mount (`/work`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkAccess {
    ReadWrite,
    ReadOnly,
}

/// What a backend could do about a requested [`WorkAccess`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessEnforcement {
    /// The access holds for every later exec.
    Enforced,
    /// The backend cannot enforce it here; the string says why, for the user.
    NotEnforced(String),
}

/// Errors of a sandbox operation. Each names the operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{op}: {message}")]
    Backend { op: &'static str, message: String },
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid exec request: {0}")]
    InvalidRequest(String),
    /// The request's working directory does not exist; `host` is where it was
    /// looked for when the backend translates paths.
    #[error("{}", missing_cwd_message(cwd, host.as_deref()))]
    MissingCwd { cwd: String, host: Option<PathBuf> },
    /// The process could not be started (not a missing or non-executable
    /// program: those are exit codes 127 and 126, as a shell reports them).
    #[error("start {program} in {}: {source}", cwd.display())]
    Spawn {
        program: String,
        cwd: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A backend was configured with something it cannot use.
    #[error("invalid sandbox configuration: {0}")]
    InvalidConfig(String),
    /// A file action refused or failed (see [`confined_files`]).
    #[error(transparent)]
    File(#[from] FileActionError),
    /// The Docker backend failed (its own error, kept typed).
    #[error(transparent)]
    Docker(#[from] docker::DockerError),
}

fn missing_cwd_message(cwd: &str, host: Option<&std::path::Path>) -> String {
    match host {
        Some(host) => format!(
            "working directory {cwd} does not exist (host path {}): create it first or run from an existing directory inside /work",
            host.display()
        ),
        None => format!(
            "working directory {cwd} does not exist: create it first or run from an existing directory inside /work"
        ),
    }
}

/// Where an agent's approved actions execute.
#[async_trait::async_trait]
pub trait Sandbox: Send + Sync {
    fn kind(&self) -> BerthMode;

    /// The frame commands are decided in.
    fn frame(&self) -> &Frame;

    /// Frame paths → host paths, for use only after a decision.
    fn path_map(&self) -> &PathMap;

    /// Runs one request to completion (or its deadline). Output chunks are sent
    /// to `sink` as they arrive, stdout and stderr separately, when given; a
    /// full sink holds the command's output back until its reader catches up.
    async fn exec(
        &self,
        request: ExecRequest,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError>;

    /// Runs `request` as [`prepare`](Sandbox::prepare) made it into
    /// `prepared`: what the caller logged is what runs, and it is not
    /// translated again. Backends whose frame is what runs (a container)
    /// run the request as [`exec`](Sandbox::exec) does.
    async fn exec_prepared(
        &self,
        request: ExecRequest,
        prepared: PreparedExec,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        let _ = prepared;
        self.exec(request, sink).await
    }

    /// Ends the whole process tree of the exec that runs `action` (its
    /// [`ExecRequest::action`]), whichever berth process started it: found by
    /// the action id alone. `Ok(true)` when one was found and killed,
    /// `Ok(false)` when none of this berth runs it.
    async fn cancel(&self, action: &str) -> Result<bool, SandboxError>;

    /// Sets write access to `/work` for later execs.
    async fn set_work_access(&self, access: WorkAccess) -> Result<AccessEnforcement, SandboxError>;

    /// The request as it will run, after the frame → host translation, so the
    /// caller can log both forms. Validates the request like `exec` does.
    /// Backends whose frame is what runs (a container) return it unchanged.
    fn prepare(&self, request: &ExecRequest) -> Result<PreparedExec, SandboxError> {
        request.validate(self.frame().project_root())?;
        Ok(PreparedExec {
            program: request.program.clone(),
            cwd: PathBuf::from(&request.cwd),
        })
    }

    /// Judged frame paths that leave the scope on the host through a symlink
    /// (see [`host_scope`]). Only backends without a mount boundary (the runner)
    /// can have any; the engine holds such an action for approval.
    fn check_host_paths(&self, _frame_paths: &[String]) -> Vec<ScopeFinding> {
        Vec::new()
    }

    /// The environment this berth's commands would start with had berth
    /// itself been started with `vars` as its environment (for
    /// [`ExecRequest::base_env`]): a server runs a `berth exec` handed to it
    /// as the handing process would have run it. `None` for a backend whose
    /// commands take nothing from berth's environment (a container).
    fn environment_from(
        &self,
        _vars: &std::collections::BTreeMap<String, String>,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        None
    }

    /// The berth's file actions: its mounts, confined (see [`confined_files`]).
    /// The engine never opens a path under a worktree itself.
    fn files(&self) -> Arc<ConfinedFiles>;

    /// Reads a file, or lists a directory, at an absolute frame path.
    async fn read_file(&self, frame_path: &str) -> Result<FileRead, SandboxError> {
        let path = frame_path.to_string();
        off_the_runtime("file_read", self.files(), move |f| f.read(&path)).await
    }

    /// Writes a file at an absolute frame path, creating missing parents.
    async fn write_file(
        &self,
        frame_path: &str,
        content: Vec<u8>,
    ) -> Result<FileWritten, SandboxError> {
        let path = frame_path.to_string();
        off_the_runtime("file_write", self.files(), move |f| {
            f.write(&path, &content)
        })
        .await
    }

    /// Decision time: why a file action on `frame_path` must be refused —
    /// its links lead out of the mount it is written under — if it must.
    fn check_file_path(&self, frame_path: &str, op: FileOp) -> Option<FileActionError> {
        self.files().check(frame_path, op)
    }
}

/// Runs a blocking file action on tokio's blocking pool.
async fn off_the_runtime<T: Send + 'static>(
    op: &'static str,
    files: Arc<ConfinedFiles>,
    action: impl FnOnce(&ConfinedFiles) -> Result<T, FileActionError> + Send + 'static,
) -> Result<T, SandboxError> {
    tokio::task::spawn_blocking(move || action(&files))
        .await
        .map_err(|e| SandboxError::Backend {
            op,
            message: e.to_string(),
        })?
        .map_err(SandboxError::from)
}

/// The default deadline of one exec.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The default cap of captured output per stream.
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;
