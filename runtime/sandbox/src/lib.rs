//! Sandboxes: where an approved action runs.
//!
//! One trait, [`Sandbox`], and one exec contract ([`exec`]), with two real
//! backends: the local runner (processes on the host inside the worktree) and
//! Docker berths (one container per agent, the worktree at `/work`). The engine
//! decides an action in the sandbox's [`frame`](Sandbox::frame) and translates
//! paths with its [`path_map`](Sandbox::path_map) only after the decision.

pub mod docker;
pub mod exec;
pub mod image;

use std::time::Duration;

use berth_policy::{Frame, PathMap};

pub use exec::{ExecOutcome, ExecRequest, ExitStatus, Output, OutputChunk, Program};

/// Which backend a sandbox is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxKind {
    /// Processes on the host, in the worktree. No container boundary.
    Runner,
    /// A Docker container per agent.
    Docker,
}

impl SandboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::Runner => "runner",
            SandboxKind::Docker => "mounted",
        }
    }
}

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
}

/// Where an agent's approved actions execute.
#[async_trait::async_trait]
pub trait Sandbox: Send + Sync {
    fn kind(&self) -> SandboxKind;

    /// The frame commands are decided in.
    fn frame(&self) -> &Frame;

    /// Frame paths → host paths, for use only after a decision.
    fn path_map(&self) -> &PathMap;

    /// Runs one request to completion (or its deadline). Output chunks are sent
    /// to `sink` as they arrive, stdout and stderr separately, when given.
    async fn exec(
        &self,
        request: ExecRequest,
        sink: Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>>,
    ) -> Result<ExecOutcome, SandboxError>;

    /// Sets write access to `/work` for later execs.
    async fn set_work_access(&self, access: WorkAccess) -> Result<AccessEnforcement, SandboxError>;
}

/// The default deadline of one exec.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The default cap of captured output per stream.
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;
