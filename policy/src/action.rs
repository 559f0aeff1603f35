//! The actions an agent can propose, and the names they go by.

use serde::{Deserialize, Serialize};

/// A proposed action: what the agent asks berth to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// A shell command line, run in the agent's berth.
    Terminal { command: String },
    /// Read a file (a path in the frame).
    FileRead { path: String },
    /// Write a file (a path in the frame).
    FileWrite { path: String },
    /// Commit the worktree's changes under the agent's identity.
    GitCommit,
    /// Push the agent's own branch to the local forge.
    GitPush { branch: String },
    /// Open a pull request from the agent's branch.
    PrOpen,
    /// Comment on a PR (or a line of it), or reply to one of its threads.
    PrComment,
    /// Mark one of a PR's review threads resolved.
    PrResolveThread,
    /// Merge a forge branch into `target`.
    GitMerge { target: String },
    /// Change an agent's instructions.
    InstructionPatch,
    /// Start a second agent beside this one.
    Parallelize,
    /// Raise a project's limit of parallel agents.
    RaiseMaxParallel,
    /// Remove an agent's container.
    ContainerRemove,
    /// Open a connection out of the berth (through berth's egress proxy).
    NetworkConnect { host: String, port: u16 },
    /// Any action type berth does not know: never auto-approved.
    #[serde(untagged)]
    Other { kind: String },
}

impl Action {
    /// The action type's name, as autonomy maps and the store spell it.
    pub fn kind(&self) -> &str {
        match self {
            Action::Terminal { .. } => "terminal",
            Action::FileRead { .. } => "file_read",
            Action::FileWrite { .. } => "file_write",
            Action::GitCommit => "git_commit",
            Action::GitPush { .. } => "git_push",
            Action::PrOpen => "pr_open",
            Action::PrComment => "pr_comment",
            Action::PrResolveThread => "pr_resolve_thread",
            Action::GitMerge { .. } => "git_merge",
            Action::InstructionPatch => "instruction_patch",
            Action::Parallelize => "parallelize",
            Action::RaiseMaxParallel => "raise_max_parallel",
            Action::ContainerRemove => "container_remove",
            Action::NetworkConnect { .. } => "network_connect",
            Action::Other { kind } => kind,
        }
    }

    /// Builds an action from its type name and the payload fields the
    /// policy-case format uses. A type that needs a field it lacks becomes
    /// `Other`, which is never auto-approved.
    pub fn from_parts(
        kind: &str,
        command: Option<&str>,
        path: Option<&str>,
        branch: Option<&str>,
    ) -> Action {
        match (kind, command, path, branch) {
            ("terminal", Some(c), _, _) => Action::Terminal {
                command: c.to_string(),
            },
            ("file_read", _, Some(p), _) => Action::FileRead {
                path: p.to_string(),
            },
            ("file_write", _, Some(p), _) => Action::FileWrite {
                path: p.to_string(),
            },
            ("git_commit", ..) => Action::GitCommit,
            ("git_push", _, _, Some(b)) => Action::GitPush {
                branch: b.to_string(),
            },
            ("pr_open", ..) => Action::PrOpen,
            ("pr_comment", ..) => Action::PrComment,
            ("pr_resolve_thread", ..) => Action::PrResolveThread,
            ("git_merge", _, _, Some(b)) => Action::GitMerge {
                target: b.to_string(),
            },
            ("instruction_patch", ..) => Action::InstructionPatch,
            ("parallelize", ..) => Action::Parallelize,
            ("raise_max_parallel", ..) => Action::RaiseMaxParallel,
            ("container_remove", ..) => Action::ContainerRemove,
            (other, ..) => Action::Other {
                kind: other.to_string(),
            },
        }
    }

    /// Every action type berth knows, in a stable order.
    pub const KNOWN_KINDS: [&'static str; 14] = [
        "terminal",
        "file_read",
        "file_write",
        "git_commit",
        "git_push",
        "pr_open",
        "git_merge",
        "instruction_patch",
        "parallelize",
        "raise_max_parallel",
        "container_remove",
        "network_connect",
        "pr_comment",
        "pr_resolve_thread",
    ];
}
