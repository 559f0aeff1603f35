//! The engine's errors. Each names what failed and, where a person can act,
//! what to do about it: the CLI prints them as they are.

use std::path::PathBuf;

/// Every way an engine call can fail.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(
        "no berth state at {}: run `berth init` first (the state directory comes from --state, then $BERTH_HOME, then ~/.local/share/berth)",
        path.display()
    )]
    StateMissing { path: PathBuf },

    #[error("store: {op}: {source}")]
    Store {
        op: &'static str,
        #[source]
        source: sqlx::Error,
    },

    #[error(
        "store: {op}: the disk holding berth's state directory is full ({source}): free space there and retry; \
         this write was rolled back and nothing it would have started ran"
    )]
    StoreFull {
        op: &'static str,
        #[source]
        source: sqlx::Error,
    },

    #[error(
        "store: {op}: another write in this process held the store for {secs} s: retry; if it keeps \
         happening, look for a stuck `berth` process with `berth doctor`"
    )]
    StoreBusy { op: &'static str, secs: u64 },

    #[error("store: migrating {}: {source}", path.display())]
    Migrate {
        path: PathBuf,
        #[source]
        source: sqlx::migrate::MigrateError,
    },

    #[error("store: {op}: a stored value is corrupt: {detail}")]
    Corrupt { op: &'static str, detail: String },

    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{file}:{line}:{column}: {message}")]
    Config {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },

    #[error(transparent)]
    Rules(#[from] berth_policy::RulesError),

    #[error(
        "unknown project `{0}`: list them with `berth project ls`, add one with `berth project add NAME --from PATH`"
    )]
    UnknownProject(String),

    #[error(
        "{what} {} of project `{project}` is not there any more: {hint}",
        path.display()
    )]
    RepositoryGone {
        what: &'static str,
        project: String,
        path: PathBuf,
        hint: &'static str,
    },

    #[error(
        "unknown agent `{0}`: list them with `berth ls`, create one with `berth agent activate AGENT --project P`"
    )]
    UnknownAgent(String),

    #[error(
        "agent `{agent}` was removed (`berth agent rm`): `berth agent activate {agent} --project {project}` makes it again, with a fresh berth"
    )]
    AgentRemoved { agent: String, project: String },

    #[error("unknown {what} `{id}`: list them with `{list}`")]
    UnknownId {
        what: &'static str,
        id: String,
        list: &'static str,
    },

    #[error("{what} id `{id}` is ambiguous ({count} match): give more characters")]
    AmbiguousId {
        what: &'static str,
        id: String,
        count: usize,
    },

    #[error("{what} `{name}` already exists")]
    AlreadyExists { what: &'static str, name: String },

    #[error("invalid {what} `{value}`: {why}")]
    Invalid {
        what: &'static str,
        value: String,
        why: String,
    },

    #[error(
        "action {id} is {status}, not pending{decided}: only a pending action can be approved or denied"
    )]
    NotPending {
        id: String,
        status: String,
        /// Who decided it, as ` (approved by ada)`, or empty.
        decided: String,
    },

    #[error("action {id} is {status}, not executing: {hint}")]
    NotExecuting {
        id: String,
        status: String,
        /// What to do instead (deny a pending one; nothing for one that ended).
        hint: String,
    },

    /// A status move the state machine forbids (`transitions.rs`); nothing
    /// was written.
    #[error("{what} {id} is {from}: it cannot move to {to}")]
    IllegalTransition {
        what: &'static str,
        id: String,
        from: String,
        to: &'static str,
    },

    #[error(
        "action {id} was not executed: {reason}. It is now refused (recorded); the agent can propose it again once the path stays in the worktree"
    )]
    RefusedAtApproval { id: String, reason: String },

    #[error(
        "idempotency key `{key}` was already used by action {id} for a different action ({existing}); use a new key"
    )]
    KeyConflict {
        key: String,
        id: String,
        existing: String,
    },

    #[error("agent `{agent}` has no berth: run `berth up {agent} --project {project}`")]
    NoBerth { agent: String, project: String },

    #[error("agent `{agent}` belongs to project `{actual}`, not `{requested}`")]
    WrongProject {
        agent: String,
        actual: String,
        requested: String,
    },

    #[error("{mode} mode is not available: {why}")]
    ModeUnavailable { mode: &'static str, why: String },

    #[error(
        "auto mode refused for `{agent}`: its berth runs on this host (runner mode), where auto mode lifts the path scope on the host itself, and the runner's confinement is not available here ({missing}); use a container (`berth down {agent}`, then `berth up {agent} --mode mounted`), or accept it with `allow_unconfined = true` under `[sandbox]` in {}",
        config.display()
    )]
    Unconfined {
        agent: String,
        missing: String,
        config: PathBuf,
    },

    #[error(transparent)]
    Sandbox(#[from] berth_sandbox::SandboxError),

    #[error(transparent)]
    Docker(#[from] berth_sandbox::docker::DockerError),

    #[error(transparent)]
    Worktrees(#[from] berth_worktrees::Error),

    #[error("{0}")]
    State(String),

    /// `why` names `[sandbox] disk`, the room on it and the size needed.
    #[error(
        "agent `{agent}`: the berth's own disk is too small for its checkout: {why}; nothing was checked out and nothing was lost"
    )]
    DiskTooSmall { agent: String, why: String },

    #[error(
        "agent `{agent}`: [sandbox] disk_required = true, and this berth cannot get a disk of its own: {why}; nothing was provisioned"
    )]
    DiskUnavailable { agent: String, why: String },

    #[error(
        "agent `{agent}` is down (its container is gone), but its worktree {} could not be recycled: {source}; remove the cause and run `berth down {agent}` again (`berth up {agent}` also clears it first)",
        worktree.display()
    )]
    RecycleFailed {
        agent: String,
        worktree: PathBuf,
        #[source]
        source: Box<EngineError>,
    },
    /// What recycling a worktree would lose could not be saved into the
    /// forge, so the worktree was kept.
    #[error(
        "could not save what recycling `{agent}`'s worktree would lose (uncommitted changes, unpushed commits): {source}; nothing was removed. Fix that and run `berth down {agent}` again, or `berth down {agent} --discard` to recycle without saving"
    )]
    SaveFailed {
        agent: String,
        #[source]
        source: Box<EngineError>,
    },
}

impl EngineError {
    pub(crate) fn store(op: &'static str) -> impl FnOnce(sqlx::Error) -> EngineError {
        move |source| {
            if disk_full(&source) {
                EngineError::StoreFull { op, source }
            } else {
                EngineError::Store { op, source }
            }
        }
    }

    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> EngineError {
        let path = path.into();
        move |source| EngineError::Io { op, path, source }
    }

    pub(crate) fn corrupt(op: &'static str, detail: impl std::fmt::Display) -> EngineError {
        EngineError::Corrupt {
            op,
            detail: detail.to_string(),
        }
    }
}

/// SQLite's `SQLITE_FULL` (13, in the low byte of an extended code), or
/// the OS saying so.
fn disk_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == 13),
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::StorageFull,
        _ => false,
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
