//! The JSON requests and answers between berth and `berth-helper`.
//!
//! berth never opens an agent's repository as itself for a commit or a push:
//! `berth-helper` does that work as the berth's uid inside a Landlock ruleset
//! (see `runtime/helper`). This module holds what crosses the pipe — one JSON
//! request on the helper's stdin, one JSON answer line on its stdout (for a
//! pack, followed by the pack's bytes) — and the functions the helper runs
//! once confined, so both sides share one definition.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Op};

/// Where the helper may go, and as whom it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Switch to this uid (and gid) before opening anything; only when the
    /// helper runs as root.
    pub uid: Option<u32>,
    /// The gid to switch to with `uid`.
    pub gid: Option<u32>,
    /// Directories readable (besides the system directories the process needs).
    pub read: Vec<PathBuf>,
    /// Directories readable and writable.
    pub write: Vec<PathBuf>,
}

/// `git-commit`: stage the worktree and commit on its branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitJob {
    /// Where and as whom.
    pub confinement: Confinement,
    /// The state directory (canonical).
    pub state_dir: PathBuf,
    /// The project.
    pub project: String,
    /// The agent.
    pub agent: String,
    /// The commit message (trailers are added).
    pub message: String,
    /// The action id (`Berth-Action:` trailer).
    pub action_id: String,
    /// Author and committer `(name, email)`; `None` is the agent's identity.
    pub identity: Option<(String, String)>,
    /// The co-author `(name, email)`.
    pub co_author: Option<(String, String)>,
}

/// `git-pack`: pack what the forge lacks of an agent's branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackJob {
    /// Where and as whom.
    pub confinement: Confinement,
    /// The state directory (canonical).
    pub state_dir: PathBuf,
    /// The project.
    pub project: String,
    /// The agent.
    pub agent: String,
    /// The full ref to pack (`refs/heads/agent/<agent>/…`, checked by berth).
    pub refname: String,
    /// The forge's value of the ref (the push must contain it).
    pub previous: Option<String>,
    /// The commits of the forge's branches and tags (left out of the pack).
    pub forge_tips: Vec<String>,
    /// `[git] max_object_bytes`.
    pub max_object_bytes: u64,
    /// `[git] max_push_bytes`.
    pub max_push_bytes: u64,
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitDone {
    /// The commit.
    pub oid: String,
    /// Its branch (short name).
    pub branch: String,
    /// False when the action had committed before.
    pub created: bool,
}

/// The pack that follows this answer on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackReady {
    /// The branch tip in the agent repository.
    pub tip: String,
    /// How many objects the pack holds (0: no pack follows).
    pub objects: usize,
    /// Their total uncompressed size.
    pub object_bytes: u64,
}

/// One answer line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer<T> {
    /// It worked.
    Ok(T),
    /// It did not.
    Error(WireError),
}

/// An [`Error`] on the wire: the variants a caller acts on keep their data;
/// every other one travels as its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[allow(missing_docs)]
pub enum WireError {
    NothingToCommit {
        worktree: PathBuf,
        branch: String,
    },
    RefNotAllowed {
        agent: String,
        refname: String,
        allowed_prefix: String,
    },
    NonFastForward {
        refname: String,
        forge: PathBuf,
        forge_oid: String,
        local_oid: String,
    },
    UnknownBranch {
        repo: PathBuf,
        branch: String,
    },
    ObjectTooLarge {
        repo: PathBuf,
        oid: String,
        size: u64,
        limit: u64,
    },
    PushTooLarge {
        refname: String,
        bytes: u64,
        limit: u64,
    },
    CheckoutTooLarge {
        refname: String,
        size: u64,
        limit: u64,
    },
    Tampered {
        path: PathBuf,
        expected: String,
        found: String,
    },
    Locked {
        lock_file: PathBuf,
        message: String,
    },
    DirtyWorktree {
        worktree: PathBuf,
        changes: Vec<String>,
    },
    Missing {
        what: String,
        path: PathBuf,
        hint: String,
    },
    Git {
        repo: PathBuf,
        refname: Option<String>,
        code: String,
        class: String,
        message: String,
    },
    Other {
        message: String,
    },
}

impl From<&Error> for WireError {
    fn from(e: &Error) -> Self {
        match e {
            Error::NothingToCommit { worktree, branch } => WireError::NothingToCommit {
                worktree: worktree.clone(),
                branch: branch.clone(),
            },
            Error::RefNotAllowed {
                agent,
                refname,
                allowed_prefix,
                ..
            } => WireError::RefNotAllowed {
                agent: agent.clone(),
                refname: refname.clone(),
                allowed_prefix: allowed_prefix.clone(),
            },
            Error::NonFastForward {
                refname,
                forge,
                forge_oid,
                local_oid,
            } => WireError::NonFastForward {
                refname: refname.clone(),
                forge: forge.clone(),
                forge_oid: forge_oid.to_string(),
                local_oid: local_oid.to_string(),
            },
            Error::UnknownBranch { repo, branch, .. } => WireError::UnknownBranch {
                repo: repo.clone(),
                branch: branch.clone(),
            },
            Error::ObjectTooLarge {
                repo,
                oid,
                size,
                limit,
                ..
            } => WireError::ObjectTooLarge {
                repo: repo.clone(),
                oid: oid.to_string(),
                size: *size,
                limit: *limit,
            },
            Error::PushTooLarge {
                refname,
                bytes,
                limit,
            } => WireError::PushTooLarge {
                refname: refname.clone(),
                bytes: *bytes,
                limit: *limit,
            },
            Error::CheckoutTooLarge {
                refname,
                size,
                limit,
                ..
            } => WireError::CheckoutTooLarge {
                refname: refname.clone(),
                size: *size,
                limit: *limit,
            },
            Error::Tampered {
                path,
                expected,
                found,
                ..
            } => WireError::Tampered {
                path: path.clone(),
                expected: expected.clone(),
                found: found.clone(),
            },
            Error::Locked {
                lock_file, source, ..
            } => WireError::Locked {
                lock_file: lock_file.clone(),
                message: source.message().to_owned(),
            },
            Error::DirtyWorktree { worktree, changes } => WireError::DirtyWorktree {
                worktree: worktree.clone(),
                changes: changes.clone(),
            },
            Error::Missing {
                what, path, hint, ..
            } => WireError::Missing {
                what: (*what).to_owned(),
                path: path.clone(),
                hint: (*hint).to_owned(),
            },
            Error::Git {
                repo,
                refname,
                source,
                ..
            } => WireError::Git {
                repo: repo.clone(),
                refname: refname.clone(),
                code: format!("{:?}", source.code()),
                class: format!("{:?}", source.class()),
                message: source.message().to_owned(),
            },
            other => WireError::Other {
                message: other.to_string(),
            },
        }
    }
}

impl WireError {
    /// The typed error again, for an operation `op` run by `helper`.
    pub(crate) fn into_error(self, op: Op, helper: &std::path::Path) -> Error {
        let oid = |s: &str| git2::Oid::from_str(s).unwrap_or(git2::Oid::ZERO_SHA1);
        match self {
            WireError::NothingToCommit { worktree, branch } => {
                Error::NothingToCommit { worktree, branch }
            }
            WireError::RefNotAllowed {
                agent,
                refname,
                allowed_prefix,
            } => Error::RefNotAllowed {
                op,
                agent,
                refname,
                allowed_prefix,
            },
            WireError::NonFastForward {
                refname,
                forge,
                forge_oid,
                local_oid,
            } => Error::NonFastForward {
                refname,
                forge,
                forge_oid: oid(&forge_oid),
                local_oid: oid(&local_oid),
            },
            WireError::UnknownBranch { repo, branch } => Error::UnknownBranch { op, repo, branch },
            WireError::ObjectTooLarge {
                repo,
                oid: o,
                size,
                limit,
            } => Error::ObjectTooLarge {
                op,
                repo,
                oid: oid(&o),
                size,
                limit,
            },
            WireError::PushTooLarge {
                refname,
                bytes,
                limit,
            } => Error::PushTooLarge {
                refname,
                bytes,
                limit,
            },
            WireError::CheckoutTooLarge {
                refname,
                size,
                limit,
            } => Error::CheckoutTooLarge {
                op,
                refname,
                size,
                limit,
            },
            WireError::Tampered {
                path,
                expected,
                found,
            } => Error::Tampered {
                op,
                path,
                expected,
                found,
            },
            WireError::Locked { lock_file, message } => Error::Locked {
                op,
                lock_file,
                source: git2::Error::new(git2::ErrorCode::Locked, git2::ErrorClass::Index, message),
            },
            WireError::DirtyWorktree { worktree, changes } => {
                Error::DirtyWorktree { worktree, changes }
            }
            WireError::Missing { what, path, hint } => Error::Missing {
                op,
                what: static_text(&what),
                path,
                hint: static_text(&hint),
            },
            WireError::Git {
                repo,
                refname,
                code,
                class,
                message,
            } => Error::Git {
                op,
                repo,
                refname,
                source: git2::Error::new(error_code(&code), error_class(&class), message),
            },
            WireError::Other { message } => Error::Helper {
                op,
                helper: helper.to_path_buf(),
                message,
            },
        }
    }
}

/// Writes one answer line.
pub fn write_answer<T: Serialize>(out: &mut dyn Write, answer: &Answer<T>) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

fn error_code(name: &str) -> git2::ErrorCode {
    use git2::ErrorCode as C;
    [
        C::NotFound,
        C::Exists,
        C::Ambiguous,
        C::BufSize,
        C::User,
        C::BareRepo,
        C::UnbornBranch,
        C::Unmerged,
        C::NotFastForward,
        C::InvalidSpec,
        C::Conflict,
        C::Locked,
        C::Modified,
        C::Auth,
        C::Certificate,
        C::Applied,
        C::Peel,
        C::Eof,
        C::Invalid,
        C::Uncommitted,
        C::Directory,
        C::MergeConflict,
        C::HashsumMismatch,
        C::IndexDirty,
        C::ApplyFail,
        C::Owner,
        C::Timeout,
    ]
    .into_iter()
    .find(|c| format!("{c:?}") == name)
    .unwrap_or(C::GenericError)
}

fn error_class(name: &str) -> git2::ErrorClass {
    use git2::ErrorClass as C;
    [
        C::NoMemory,
        C::Os,
        C::Invalid,
        C::Reference,
        C::Zlib,
        C::Repository,
        C::Config,
        C::Regex,
        C::Odb,
        C::Index,
        C::Object,
        C::Net,
        C::Tag,
        C::Tree,
        C::Indexer,
        C::Ssl,
        C::Submodule,
        C::Thread,
        C::Stash,
        C::Checkout,
        C::FetchHead,
        C::Merge,
        C::Ssh,
        C::Filter,
        C::Revert,
        C::Callback,
        C::CherryPick,
        C::Describe,
        C::Rebase,
        C::Filesystem,
        C::Patch,
        C::Worktree,
        C::Sha1,
        C::Http,
    ]
    .into_iter()
    .find(|c| format!("{c:?}") == name)
    .unwrap_or(C::None)
}

/// `Error::Missing` holds `&'static str`s: the texts berth itself writes are
/// few and known; anything else is said generically.
fn static_text(s: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "agent repository",
        "worktree directory",
        "worktree admin directory",
        "forge repository",
        "provision the agent first",
        "provision the agent again",
        "add the project first (berth project add NAME --from PATH)",
    ];
    KNOWN
        .iter()
        .find(|k| **k == s)
        .copied()
        .unwrap_or("a path berth needs")
}
