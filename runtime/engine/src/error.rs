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

    /// PostgreSQL aborted a write as a deadlock or serialization failure
    /// against concurrent writers on every attempt
    /// ([`crate::store::Store::retrying`]).
    #[error(
        "store: {op}: PostgreSQL aborted this write {attempts} times against concurrent writers \
         (SQLSTATE {code}: deadlock or serialization failure); nothing of it was written: run it again; \
         if it keeps happening, set BERTH_STORE_LOCKS=single on every process of the store \
         (one writer at a time) and report the write named here"
    )]
    StoreConflict {
        op: &'static str,
        attempts: u32,
        code: &'static str,
    },

    #[error(
        "store: {store} was migrated by a newer berth (it holds migration {found}; this berth knows up to {known}): run that berth or a newer one (a store is never migrated down)"
    )]
    StoreNewer {
        store: String,
        found: i64,
        known: i64,
    },

    #[error("store: migrating {store}: {source}")]
    Migrate {
        store: String,
        #[source]
        source: sqlx::migrate::MigrateError,
    },

    #[error("store: {url:?} is not a store URL: give postgres://USER@HOST/DATABASE or sqlite:PATH")]
    StoreUrl { url: String },

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

    #[error(
        "action {id} is a {kind}, which berth performs itself and which ends on its own: \
         only a terminal command can be cancelled"
    )]
    NotCancellable { id: String, kind: String },

    #[error(
        "the cancel of action {id} is recorded, but its command could not be killed ({why}): \
         run `berth cancel {short}` again; it ends `cancelled` whenever it ends"
    )]
    CancelNotKilled {
        id: String,
        short: String,
        why: String,
    },

    /// A removal or an archive the state forbids now: `why` says what
    /// holds it and what to do.
    #[error("{why}")]
    RemovalRefused { why: String },

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

    #[error(transparent)]
    Devcontainer(#[from] crate::devcontainer::DevcontainerError),
    /// A project's Dockerfile image not built, or its context not on the
    /// base branch (`project_image`).
    #[error(transparent)]
    ProjectImage(#[from] crate::project_image::ProjectImageError),
    /// A PR comment, thread, review or review request the engine will not
    /// record (`pr_review.rs`).
    #[error(transparent)]
    Review(#[from] crate::pr_review::ReviewError),

    // What was `State(String)`: a state that forbids the call now, each
    // case with what it is about (the API answers them 409 `invalid_state`).
    /// A record's status forbids the call: a PR not open, a choice not
    /// pending, an action not interrupted, a task past the step asked for.
    #[error("{what} {id} is {status}: {rule}")]
    WrongStatus {
        what: &'static str,
        id: String,
        status: String,
        rule: String,
    },

    #[error("action {id} is a {kind}: only berth's own effects are resumed after a crash")]
    NotOwnEffect { id: String, kind: String },

    #[error(
        "task {task} is {owner}'s in project `{project}`, not agent `{agent}`'s: an agent proposes only for its own task"
    )]
    NotOwnTask {
        task: String,
        /// The agent holding it, or `no agent`.
        owner: String,
        project: String,
        agent: String,
    },

    /// An agent task asked to do what only a pipeline task does.
    #[error("task {task} is an agent task{why}")]
    AgentTask { task: String, why: &'static str },

    #[error("task {task} has not run yet: `berth task run {task}`")]
    NotRun { task: String },

    /// A pipeline task that an agent's loop delivered as a PR instead.
    #[error(
        "task {task} is a pipeline task an agent's loop delivered as PR #{pr}: its steps never ran. \
         Close the PR to run them (`berth pr close {pr} --reason 'run the pipeline'`, then `berth task run {task}`), \
         or merge it to keep the agent's change (`berth pr merge {pr}`)"
    )]
    DeliveredAsPr { task: String, pr: i64 },

    #[error(
        "task {task} is in_review without a pipeline run: a person decides (`berth task reject {task} --reason R` returns it)"
    )]
    ReviewWithoutRun { task: String },

    #[error(
        "project `{project}` has no agent to run task {task}: `berth agent activate AGENT --project {project}`"
    )]
    NoAgent { project: String, task: String },

    #[error(
        "project `{project}` has several agents ({agents}): say which runs task {task} with `--agent`"
    )]
    SeveralAgents {
        project: String,
        agents: String,
        task: String,
    },

    #[error(
        "agent `{agent}` is paused by the circuit breaker: look at its last failures (`berth events --agent {agent}`), \
         then `berth agent resume {agent}`"
    )]
    Paused { agent: String },

    #[error("agent `{agent}` is {status}, not paused: nothing to resume")]
    NotPaused { agent: String, status: &'static str },

    #[error(
        "agent `{agent}` is a real agent: its model drives it (through the API or `berth mcp`); \
         `berth agent run` drives noop agents — activate one with `--impl noop`"
    )]
    NotNoop { agent: String },

    /// Another berth process holds the task's pipeline lease.
    #[error(
        "task {task}'s pipeline is being run by another berth process ({owner}): wait for it to finish; \
         two processes never run one task's pipeline at once"
    )]
    LeaseHeld { task: String, owner: String },

    #[error("task {task}'s pipeline lease was taken by another process; this one stops")]
    LeaseLost { task: String },

    /// A driver's lease on an agent ran out or was taken over: it stops
    /// before its next effect.
    #[error(
        "agent `{agent}`'s lease is no longer {owner}'s{}: this driver stops; the holder drives the agent",
        now_held_by.as_deref().map(|h| format!(" (now {h}'s)")).unwrap_or_default()
    )]
    AgentLeaseLost {
        agent: String,
        owner: String,
        now_held_by: Option<String>,
    },

    #[error(
        "agent `{agent}` is already up in {mode} mode: run `berth down {agent} --keep-worktree` first"
    )]
    AlreadyUp { agent: String, mode: &'static str },

    #[error(
        "agent `{agent}` holds task {task} ({status}): its worktree must outlive it — {kept}; `berth down {agent} --keep-worktree` takes the berth down and keeps them, or resolve the task first"
    )]
    HoldsTask {
        agent: String,
        task: String,
        status: &'static str,
        /// What the task still needs the worktree for.
        kept: String,
    },

    #[error("--new-uid re-owns the berth's files, which only root can do; berth runs as uid {uid}")]
    NeedsRoot { uid: u32 },

    #[error(
        "no free uid in [host] uid_range {from}..={to} of project `{project}`: each is another berth's or the host's (passwd, group, /etc/subuid, /etc/subgid); widen the range in berth.toml"
    )]
    NoFreeUid { project: String, from: u32, to: u32 },

    #[error("could not set the mode in {}: edit `[execution] mode` by hand", path.display())]
    ModeNotSet { path: PathBuf },

    #[error("{} is not a berth directory under the state directory", path.display())]
    NotBerthDir { path: PathBuf },

    /// A step run off the async threads panicked or was cancelled.
    #[error("{op}: {source}")]
    Interrupted {
        op: &'static str,
        #[source]
        source: berth_sandbox::blocking_work::BlockingWorkError,
    },

    /// The berth's own disk: attaching, finding or releasing it.
    #[error("{op}: {source}")]
    Disk {
        op: &'static str,
        #[source]
        source: berth_sandbox::disk::DiskError,
    },

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
    /// A `command` agent's program takes `{mcp_config}`, and this process
    /// could not serve the agent's MCP tools for the turn.
    #[error("agent `{agent}`'s program takes `{{mcp_config}}`, but {why}")]
    ToolEndpoint { agent: String, why: String },
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

    /// For a `spawn_blocking` that did not complete.
    pub(crate) fn interrupted(
        op: &'static str,
    ) -> impl FnOnce(tokio::task::JoinError) -> EngineError {
        move |source| EngineError::Interrupted {
            op,
            source: source.into(),
        }
    }

    pub(crate) fn disk(
        op: &'static str,
    ) -> impl FnOnce(berth_sandbox::disk::DiskError) -> EngineError {
        move |source| EngineError::Disk { op, source }
    }

    pub(crate) fn corrupt(op: &'static str, detail: impl std::fmt::Display) -> EngineError {
        EngineError::Corrupt {
            op,
            detail: detail.to_string(),
        }
    }
}

/// What kind of failure an engine error is: what an interface needs to
/// answer it (the API's HTTP status) without knowing the crates below the
/// engine. With [`EngineError::code`], a stable snake_case name a client
/// can branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A name or id the caller gave is not there.
    NotFound,
    /// An id prefix the caller gave matches several.
    Ambiguous,
    /// A value the engine will not take.
    Invalid,
    /// A state that forbids the call now.
    Conflict,
    /// Something this host must bring back (the Docker engine, the store
    /// held by another write): a person acts, or a retry passes.
    Unavailable,
    /// The disk holding berth's state is full; the write was rolled back.
    StorageFull,
    /// berth's own trouble: the store, the disk, a broken configuration
    /// file a person must fix.
    Internal,
}

impl EngineError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.class().0
    }

    /// Its stable code (`unknown_agent`, `invalid_state`, `docker_unavailable`…).
    pub fn code(&self) -> &'static str {
        self.class().1
    }

    /// Not-found is a name or id the caller gave; conflict is a state that
    /// forbids the call now; invalid is a value the engine will not take;
    /// internal is berth's own trouble. Every variant is listed: a new one is
    /// classified where it is added.
    fn class(&self) -> (ErrorKind, &'static str) {
        use ErrorKind as K;
        match self {
            EngineError::UnknownProject(_) => (K::NotFound, "unknown_project"),
            EngineError::UnknownAgent(_) => (K::NotFound, "unknown_agent"),
            EngineError::AgentRemoved { .. } => (K::NotFound, "agent_removed"),
            EngineError::UnknownId { what, .. } => (
                K::NotFound,
                match *what {
                    "action" => "unknown_action",
                    "task" => "unknown_task",
                    "PR" => "unknown_pr",
                    _ => "unknown_id",
                },
            ),
            EngineError::AmbiguousId { .. } => (K::Ambiguous, "ambiguous_id"),
            EngineError::AlreadyExists { .. } => (K::Conflict, "already_exists"),
            EngineError::Invalid { .. } => (K::Invalid, "invalid_value"),
            EngineError::NotPending { .. } => (K::Conflict, "not_pending"),
            EngineError::NotExecuting { .. } => (K::Conflict, "not_executing"),
            EngineError::NotCancellable { .. }
            | EngineError::CancelNotKilled { .. }
            | EngineError::RemovalRefused { .. } => (K::Conflict, "invalid_state"),
            EngineError::RefusedAtApproval { .. } => (K::Conflict, "refused_at_approval"),
            EngineError::KeyConflict { .. } => (K::Conflict, "idempotency_key_conflict"),
            EngineError::NoBerth { .. } => (K::Conflict, "no_berth"),
            EngineError::WrongProject { .. } => (K::Conflict, "wrong_project"),
            EngineError::ModeUnavailable { .. } => (K::Conflict, "mode_unavailable"),
            EngineError::Unconfined { .. } => (K::Conflict, "unconfined"),
            EngineError::WrongStatus { .. }
            | EngineError::NotOwnEffect { .. }
            | EngineError::NotOwnTask { .. }
            | EngineError::AgentTask { .. }
            | EngineError::NotRun { .. }
            | EngineError::DeliveredAsPr { .. }
            | EngineError::ReviewWithoutRun { .. }
            | EngineError::NoAgent { .. }
            | EngineError::SeveralAgents { .. }
            | EngineError::Paused { .. }
            | EngineError::NotPaused { .. }
            | EngineError::NotNoop { .. }
            | EngineError::LeaseHeld { .. }
            | EngineError::LeaseLost { .. }
            | EngineError::AgentLeaseLost { .. }
            | EngineError::AlreadyUp { .. }
            | EngineError::HoldsTask { .. }
            | EngineError::NeedsRoot { .. }
            | EngineError::NoFreeUid { .. }
            | EngineError::ModeNotSet { .. } => (K::Conflict, "invalid_state"),
            EngineError::IllegalTransition { .. } => (K::Conflict, "illegal_transition"),
            EngineError::SaveFailed { .. } => (K::Conflict, "save_failed"),
            EngineError::DiskTooSmall { .. } => (K::Conflict, "disk_too_small"),
            EngineError::DiskUnavailable { .. } => (K::Conflict, "disk_unavailable"),
            EngineError::Config { .. }
            | EngineError::StoreUrl { .. }
            | EngineError::Rules(_)
            | EngineError::Devcontainer(_) => (K::Internal, "config_invalid"),
            EngineError::ProjectImage(
                crate::project_image::ProjectImageError::NotBuilt { .. }
                | crate::project_image::ProjectImageError::Unusable { .. },
            ) => (K::Conflict, "image_not_built"),
            EngineError::ProjectImage(_) => (K::Internal, "config_invalid"),
            EngineError::Worktrees(w) => worktrees_class(w),
            EngineError::Review(r) => r.class(),
            EngineError::Sandbox(berth_sandbox::SandboxError::Docker(d))
            | EngineError::Docker(d) => docker_class(d),
            EngineError::Sandbox(_) => (K::Internal, "sandbox_error"),
            EngineError::StoreFull { .. } => (K::StorageFull, "disk_full"),
            EngineError::StoreBusy { .. } => (K::Unavailable, "store_busy"),
            EngineError::StoreConflict { .. } => (K::Unavailable, "store_conflict"),
            EngineError::StateMissing { .. }
            | EngineError::Store { .. }
            | EngineError::Migrate { .. }
            | EngineError::StoreNewer { .. }
            | EngineError::Corrupt { .. }
            | EngineError::Io { .. }
            | EngineError::RepositoryGone { .. }
            | EngineError::RecycleFailed { .. }
            | EngineError::NotBerthDir { .. }
            | EngineError::Interrupted { .. }
            | EngineError::ToolEndpoint { .. }
            | EngineError::Disk { .. } => (K::Internal, "internal"),
        }
    }
}

/// The Docker engine down, an image missing: a person must act on this
/// host; a foreign container in the way is a conflict.
fn docker_class(e: &berth_sandbox::docker::DockerError) -> (ErrorKind, &'static str) {
    use berth_sandbox::docker::DockerError as D;
    match e {
        D::EngineUnavailable { .. } => (ErrorKind::Unavailable, "docker_unavailable"),
        D::Image(_) => (ErrorKind::Conflict, "image_unavailable"),
        D::Foreign { .. } => (ErrorKind::Conflict, "container_conflict"),
        _ => (ErrorKind::Internal, "docker_error"),
    }
}

fn worktrees_class(e: &berth_worktrees::Error) -> (ErrorKind, &'static str) {
    use berth_worktrees::Error as W;
    match e {
        W::InvalidName { .. } | W::InvalidInput { .. } => (ErrorKind::Invalid, "invalid_value"),
        W::Missing { .. }
        | W::NotARepository { .. }
        | W::UnknownBranch { .. }
        | W::NoBaseBranch { .. }
        | W::UntrustedOwner { .. } => (ErrorKind::Invalid, "repository_unusable"),
        W::ProjectExists { .. } => (ErrorKind::Conflict, "already_exists"),
        W::AgentBusy { .. } | W::NothingToCommit { .. } => (ErrorKind::Conflict, "invalid_state"),
        W::ForgeUnreachable { .. } => (ErrorKind::Unavailable, "forge_unreachable"),
        W::ForgeCertificate { .. } => (ErrorKind::Unavailable, "forge_certificate"),
        W::ForgeRefStale { .. } | W::ForgeRefused { .. } => {
            (ErrorKind::Conflict, "forge_ref_moved")
        }
        W::ForgeFenced { .. } => (ErrorKind::Conflict, "forge_fenced"),
        W::ForgeUnfenced { .. } => (ErrorKind::Unavailable, "forge_unfenced"),
        _ => (ErrorKind::Internal, "git_error"),
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

/// A provider's errors are the engine's own cases, so the API classifies
/// them as it always did (`mode_unavailable`, Docker's codes, I/O).
impl From<berth_sandbox::ProviderError> for EngineError {
    fn from(e: berth_sandbox::ProviderError) -> EngineError {
        use berth_sandbox::ProviderError as P;
        match e {
            P::ModeUnavailable { mode, why } => EngineError::ModeUnavailable { mode, why },
            P::Io { op, path, source } => EngineError::Io { op, path, source },
            P::NotBerthDir { path } => EngineError::NotBerthDir { path },
            P::Interrupted { op, source } => EngineError::Interrupted { op, source },
            P::Sandbox(e) => EngineError::Sandbox(e),
            P::Docker(e) => EngineError::Docker(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classification the API answers with, one row per kind: a Docker
    /// failure is classified the same whether it came straight from the
    /// backend or through the sandbox's error.
    #[test]
    fn errors_are_classified_in_the_engine() {
        let foreign = || berth_sandbox::docker::DockerError::Foreign { name: "c".into() };
        let table: Vec<(EngineError, ErrorKind, &str)> = vec![
            (
                EngineError::UnknownAgent("a".into()),
                ErrorKind::NotFound,
                "unknown_agent",
            ),
            (
                EngineError::AmbiguousId {
                    what: "task",
                    id: "1".into(),
                    count: 2,
                },
                ErrorKind::Ambiguous,
                "ambiguous_id",
            ),
            (
                berth_worktrees::ProjectName::new("a.b").unwrap_err().into(),
                ErrorKind::Invalid,
                "invalid_value",
            ),
            (
                EngineError::LeaseLost { task: "t".into() },
                ErrorKind::Conflict,
                "invalid_state",
            ),
            (
                EngineError::Docker(foreign()),
                ErrorKind::Conflict,
                "container_conflict",
            ),
            (
                EngineError::Sandbox(berth_sandbox::SandboxError::Docker(foreign())),
                ErrorKind::Conflict,
                "container_conflict",
            ),
            (
                EngineError::StoreBusy { op: "x", secs: 1 },
                ErrorKind::Unavailable,
                "store_busy",
            ),
            (
                EngineError::StoreConflict {
                    op: "x",
                    attempts: 5,
                    code: "40P01",
                },
                ErrorKind::Unavailable,
                "store_conflict",
            ),
            (
                EngineError::corrupt("reading", "x"),
                ErrorKind::Internal,
                "internal",
            ),
            (
                berth_worktrees::Error::ForgeUnreachable {
                    op: berth_worktrees::Op::Push,
                    url: "http://127.0.0.1:9/r.git".into(),
                    message: "connection refused".into(),
                }
                .into(),
                ErrorKind::Unavailable,
                "forge_unreachable",
            ),
            (
                berth_worktrees::Error::ForgeCertificate {
                    op: berth_worktrees::Op::ImportProject,
                    url: "https://127.0.0.1:9/r.git".into(),
                    message: "the SSL certificate is invalid".into(),
                }
                .into(),
                ErrorKind::Unavailable,
                "forge_certificate",
            ),
            (
                berth_worktrees::Error::ForgeRefused {
                    url: "http://127.0.0.1:9/r.git".into(),
                    refname: "refs/heads/agent/a/t".into(),
                    status: "failed to update ref".into(),
                }
                .into(),
                ErrorKind::Conflict,
                "forge_ref_moved",
            ),
            (
                berth_worktrees::Error::ForgeFenced {
                    agent: "a".into(),
                    token: 1,
                    current: 2,
                    forge: "http://127.0.0.1:9/r.git".into(),
                }
                .into(),
                ErrorKind::Conflict,
                "forge_fenced",
            ),
            (
                berth_worktrees::Error::ForgeUnfenced {
                    op: berth_worktrees::Op::RaiseFence,
                    url: "http://127.0.0.1:9/r.git".into(),
                    reason: "no hook".into(),
                }
                .into(),
                ErrorKind::Unavailable,
                "forge_unfenced",
            ),
        ];
        for (e, kind, code) in table {
            assert_eq!((e.kind(), e.code()), (kind, code), "{e}");
        }
    }
}
