//! The frame a command runs in: the host (runner) or a container (mounted).
//!
//! Scope is judged in this frame, never in the host's view of it (ADR 0167:
//! 47 of 51 auto-mode prompts came from comparing `/work` with a host root).

use serde::{Deserialize, Serialize};

/// One mount of a container frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// The mount point inside the container.
    pub target: String,
    pub kind: MountKind,
}

/// What backs a mount, and whether its paths are in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountKind {
    /// The project worktree (`/work`): in scope.
    Project,
    /// A host directory; in scope only when declared so (the agent's own git
    /// directory is, a shared cache or a socket is not).
    Host { in_scope: bool },
}

/// Where a command runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub enum Frame {
    /// The local runner: the project root and extra roots are in scope,
    /// everything else on the host is outside.
    Host {
        project_root: String,
        extra_roots: Vec<String>,
        home: String,
    },
    /// A container: the project mount, declared mounts and every
    /// container-private path are in scope.
    Container {
        project_root: String,
        mounts: Vec<Mount>,
        home: String,
    },
}

/// The default home directory of an agent in either frame.
pub const DEFAULT_HOME: &str = "/home/agent";
/// The project root agents see.
pub const WORK: &str = "/work";

impl Frame {
    /// A host frame with no extra roots.
    pub fn host(project_root: &str) -> Frame {
        Frame::Host {
            project_root: project_root.to_string(),
            extra_roots: Vec::new(),
            home: DEFAULT_HOME.to_string(),
        }
    }

    /// A container frame whose only mount is the project at `project_root`.
    pub fn container(project_root: &str) -> Frame {
        Frame::Container {
            project_root: project_root.to_string(),
            mounts: vec![Mount {
                target: project_root.to_string(),
                kind: MountKind::Project,
            }],
            home: DEFAULT_HOME.to_string(),
        }
    }

    pub fn project_root(&self) -> &str {
        match self {
            Frame::Host { project_root, .. } | Frame::Container { project_root, .. } => {
                project_root
            }
        }
    }

    pub fn home(&self) -> &str {
        match self {
            Frame::Host { home, .. } | Frame::Container { home, .. } => home,
        }
    }

    pub fn is_container(&self) -> bool {
        matches!(self, Frame::Container { .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Frame::Host { .. } => "host",
            Frame::Container { .. } => "container",
        }
    }
}
