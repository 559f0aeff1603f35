//! What an executed action produced and how it ended: the result of each
//! kind of action, the copy of it small enough for the store, and the
//! summary the log keeps.

use serde::{Deserialize, Serialize};

/// What an executed action produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionResult {
    Terminal {
        /// The command as decided (frame) and as run (host).
        command: String,
        host_command: String,
        cwd: String,
        host_cwd: String,
        exit_code: i32,
        timed_out: bool,
        stdout: String,
        stderr: String,
        stdout_truncated: bool,
        stderr_truncated: bool,
        duration_ms: u64,
        /// Said when the command ran with `/work` writable although read-only
        /// was asked: the backend could not enforce it here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        access_note: Option<String>,
        /// The berth's memory limit killed a process of this command
        /// (whatever the command's own exit code).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        oom_killed: bool,
        /// The berth's container was restarted while this command ran, which
        /// killed every command in it (berth does that to end a timed-out
        /// command that outlived its kill).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        container_restarted: bool,
    },
    FileRead {
        path: String,
        host_path: String,
        /// The file's text, or for a directory its listing: one entry a line,
        /// sorted, `/` after a directory and `@` after a symlink.
        content: String,
        bytes: u64,
    },
    FileWrite {
        path: String,
        host_path: String,
        bytes: u64,
    },
    GitCommit {
        branch: String,
        commit: String,
        /// False when a commit for this action already existed (a retry).
        created: bool,
    },
    GitPush {
        branch: String,
        commit: String,
    },
    PrOpen {
        pr: String,
        number: i64,
        branch: String,
        base: String,
        head: String,
        /// True when a PR was already open for this branch at this head: it
        /// is the one returned, and no second PR was opened.
        #[serde(default)]
        already_open: bool,
    },
    GitMerge {
        pr: String,
        target: String,
        commit: String,
    },
    /// A comment an agent wrote on a PR (a new thread, or a reply in one).
    PrComment {
        pr: String,
        number: i64,
        comment: String,
        thread: String,
    },
    /// A PR thread an agent resolved.
    PrResolveThread {
        pr: String,
        number: i64,
        thread: String,
        /// True when it was resolved already (by whom the thread says).
        #[serde(default)]
        already_resolved: bool,
    },
    /// The agent's container, removed (none when there was none to remove).
    ContainerRemove {
        container: Option<String>,
    },
    /// A held `network_connect` approved: the egress proxy lets the
    /// connection through (each one is then a `network.connected` event).
    NetworkConnect {
        host: String,
        port: u16,
    },
    /// A second agent beside `of`, with its implementation and autonomy.
    Parallelize {
        agent: String,
        of: String,
        implementation: String,
        autonomy_rows: u64,
    },
    RaiseMaxParallel {
        project: String,
        from: u32,
        to: u32,
    },
    InstructionPatch {
        agent: String,
        path: String,
        bytes_before: Option<u64>,
        bytes: u64,
    },
}

impl ActionResult {
    /// A copy small enough for the store: output kept to its last 64 KiB.
    pub(super) fn for_store(&self) -> ActionResult {
        const KEEP: usize = 64 * 1024;
        let mut r = self.clone();
        match &mut r {
            ActionResult::Terminal {
                stdout,
                stderr,
                stdout_truncated,
                stderr_truncated,
                ..
            } => {
                *stdout_truncated |= keep_tail(stdout, KEEP);
                *stderr_truncated |= keep_tail(stderr, KEEP);
            }
            ActionResult::FileRead { content, .. } => {
                keep_tail(content, KEEP);
            }
            _ => {}
        }
        r
    }

    /// The fields the log keeps (no output: that stays with the action).
    pub(crate) fn summary(&self) -> serde_json::Value {
        match self {
            ActionResult::Terminal {
                command,
                host_command,
                cwd,
                host_cwd,
                exit_code,
                timed_out,
                stdout,
                stderr,
                duration_ms,
                access_note,
                ..
            } => serde_json::json!({
                "command": command, "host_command": host_command, "cwd": cwd, "host_cwd": host_cwd,
                "exit_code": exit_code, "timed_out": timed_out, "duration_ms": duration_ms,
                "stdout_bytes": stdout.len(), "stderr_bytes": stderr.len(),
                "access_note": access_note,
            }),
            ActionResult::FileRead {
                path,
                host_path,
                bytes,
                ..
            } => {
                serde_json::json!({ "path": path, "host_path": host_path, "bytes": bytes })
            }
            other => serde_json::to_value(other).unwrap_or_default(),
        }
    }
}

fn keep_tail(s: &mut String, keep: usize) -> bool {
    if s.len() <= keep {
        return false;
    }
    let mut cut = s.len() - keep;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    s.drain(..cut);
    true
}

/// How an executed action ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub succeeded: bool,
    pub result: Option<ActionResult>,
    /// Why it failed: never empty when `succeeded` is false.
    pub diagnostic: Option<String>,
}

impl Outcome {
    pub(crate) fn ok(result: ActionResult) -> Outcome {
        Outcome {
            succeeded: true,
            result: Some(result),
            diagnostic: None,
        }
    }

    pub(crate) fn failed(diagnostic: impl Into<String>, result: Option<ActionResult>) -> Outcome {
        let mut d: String = diagnostic.into();
        if d.trim().is_empty() {
            d = "failed with no diagnostic from the executor".into();
        }
        Outcome {
            succeeded: false,
            result,
            diagnostic: Some(d),
        }
    }
}
