//! One error type for the crate.
//!
//! Every variant names the operation that failed and the repository or path it
//! was working on, and carries libgit2's own message when libgit2 failed, so a
//! diagnostic is never empty (ADR 0048: a failed action with `{"", 2}` cost a
//! task its commit). Variants a caller acts on (a non-fast-forward push, a merge
//! conflict, a dirty worktree, an agent that is busy) are their own variants with
//! the data needed to act, not strings.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use git2::Oid;

/// What the crate was doing when an error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Finding the state directory.
    ResolveStateDir,
    /// Preparing the state directory.
    OpenState,
    /// Importing a project into the forge.
    ImportProject,
    /// Reading the projects in the forge.
    ListProjects,
    /// Creating (or returning) an agent's repository and worktree.
    Provision,
    /// Committing an agent's worktree.
    Commit,
    /// Pushing an agent's branch to the forge.
    Push,
    /// Checking that the forge holds a commit.
    ForgeHas,
    /// Merging a forge branch into another.
    Merge,
    /// Computing the changes of a branch against its base.
    DiffStat,
    /// Removing an agent's worktree.
    Recycle,
    /// Repairing the state directory after a crash.
    Reconcile,
    /// Taking a repository's writer lock.
    Lock,
    /// Running `berth-helper`, the confined process that does git work on
    /// an agent's repository.
    Helper,
    /// Fast-forwarding a forge's base branch from its source repository.
    SyncProject,
    /// Fetching a forge commit into a user's repository as a ref.
    ExportCommit,
    /// Removing an agent's repository or a project's forge for good.
    Remove,
    /// Reading a PR on berth's own: a commit's throwaway checkout, or
    /// whether a branch would merge.
    Snapshot,
    /// Reading a file or a directory of a forge branch's tip (berth's
    /// configuration from the base branch, never from a worktree).
    BranchFile,
    /// Bringing a forge server's branches into this host's mirror.
    RefreshForge,
    /// Raising an agent's fencing token at the forge (a takeover).
    RaiseFence,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::ResolveStateDir => "resolve state directory",
            Op::OpenState => "open state directory",
            Op::ImportProject => "import project",
            Op::ListProjects => "list projects",
            Op::Provision => "provision",
            Op::Commit => "commit",
            Op::Push => "push",
            Op::ForgeHas => "check forge",
            Op::Merge => "merge",
            Op::DiffStat => "diff stat",
            Op::Recycle => "recycle",
            Op::Reconcile => "reconcile",
            Op::Lock => "lock",
            Op::Helper => "berth-helper",
            Op::SyncProject => "sync project",
            Op::ExportCommit => "export",
            Op::Remove => "remove",
            Op::Snapshot => "read a PR from the forge",
            Op::BranchFile => "read from a forge branch",
            Op::RefreshForge => "refresh the forge mirror",
            Op::RaiseFence => "raise the fence at the forge",
        })
    }
}

/// Which kind of name failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A project name (a path component of the forge and config directory).
    Project,
    /// An agent name (a path component and a ref component).
    Agent,
    /// A task name (a ref component).
    Task,
    /// A branch name given by a caller.
    Branch,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Project => "project",
            NameKind::Agent => "agent",
            NameKind::Task => "task",
            NameKind::Branch => "branch",
        })
    }
}

/// Every failure of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A project, agent, task or branch name that cannot be used.
    #[error("invalid {kind} name `{}`: {reason}", name.escape_debug())]
    InvalidName {
        /// What the name was for.
        kind: NameKind,
        /// The rejected name.
        name: String,
        /// Why, and what is allowed.
        reason: String,
    },

    /// A field of a request that cannot be used (identity, message, action id).
    #[error("{op}: invalid {field} {value:?}: {reason}")]
    InvalidInput {
        /// The operation.
        op: Op,
        /// Which field.
        field: &'static str,
        /// The rejected value.
        value: String,
        /// Why, and what is allowed.
        reason: String,
    },

    /// No state directory could be determined.
    #[error("{op}: {reason}")]
    StateDir {
        /// The operation.
        op: Op,
        /// What was missing and what to set.
        reason: String,
    },

    /// A directory, repository or file berth needs does not exist.
    #[error("{op}: {what} {} is missing; {hint}", path.display())]
    Missing {
        /// The operation.
        op: Op,
        /// What the path should have been ("forge repository", "worktree directory").
        what: &'static str,
        /// The missing path.
        path: PathBuf,
        /// What to do about it.
        hint: &'static str,
    },

    /// A path given as a source repository is not one.
    #[error("{op}: {} is not a git repository: {message}", path.display())]
    NotARepository {
        /// The operation.
        op: Op,
        /// The path.
        path: PathBuf,
        /// libgit2's message.
        message: String,
    },

    /// libgit2 failed.
    #[error("{op} in {}{}: {source}", repo.display(), RefSuffix(refname.as_deref()))]
    Git {
        /// The operation.
        op: Op,
        /// The repository being worked on.
        repo: PathBuf,
        /// The ref involved, when there is one.
        refname: Option<String>,
        /// libgit2's error (message, class and code).
        #[source]
        source: git2::Error,
    },

    /// A git lock file blocks the operation.
    #[error("{op}: {} exists: another git process is working in this repository, or one crashed; if none is running, reconcile (or removing the file) clears it ({source})", lock_file.display())]
    Locked {
        /// The operation.
        op: Op,
        /// The lock file.
        lock_file: PathBuf,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },

    /// A filesystem call failed.
    #[error("{op}: {}: {source}", path.display())]
    Io {
        /// The operation.
        op: Op,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// `import` was asked for a project name that is taken.
    #[error("import project: project {name:?} already exists at {}; choose another name", forge.display())]
    ProjectExists {
        /// The project name.
        name: String,
        /// The existing forge repository.
        forge: PathBuf,
    },

    /// A branch the operation needs does not exist.
    #[error("{op}: branch {branch:?} does not exist in {}", repo.display())]
    UnknownBranch {
        /// The operation.
        op: Op,
        /// The repository.
        repo: PathBuf,
        /// The branch (short name).
        branch: String,
    },

    /// The import source has no branch checked out and no base was given.
    #[error("import project: {} has no current branch (HEAD is {head}); pass the base branch explicitly", source_repo.display())]
    NoBaseBranch {
        /// The source repository.
        source_repo: PathBuf,
        /// What HEAD is instead.
        head: String,
    },

    /// A path outside the state directory is owned by another user.
    #[error("{op}: {} is owned by uid {owner}, not by uid {current} running berth; libgit2 (like git) refuses repositories of other users — chown it or import a copy", path.display())]
    UntrustedOwner {
        /// The operation.
        op: Op,
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The effective uid of this process.
        current: u32,
    },

    /// The agent already has a live worktree for another task.
    #[error("provision: agent {agent:?} of project {project:?} already has a live worktree on {live_branch} at {}; recycle it before provisioning {requested_branch}", worktree.display())]
    AgentBusy {
        /// The project.
        project: String,
        /// The agent.
        agent: String,
        /// The worktree directory.
        worktree: PathBuf,
        /// The branch it is on.
        live_branch: String,
        /// The branch that was asked for.
        requested_branch: String,
    },

    /// `commit` found nothing to commit.
    #[error("commit: nothing to commit in {} on {branch}: the worktree matches its last commit", worktree.display())]
    NothingToCommit {
        /// The worktree directory.
        worktree: PathBuf,
        /// The branch.
        branch: String,
    },

    /// A ref outside the agent's own namespace.
    #[error(
        "{op}: {refname} is not a branch of agent {agent:?}; only {allowed_prefix}* is allowed"
    )]
    RefNotAllowed {
        /// The operation.
        op: Op,
        /// The agent.
        agent: String,
        /// The ref that was refused (or HEAD's target).
        refname: String,
        /// The prefix the agent may use.
        allowed_prefix: String,
    },

    /// A push that would not be a fast-forward.
    #[error("push: {refname} rejected by {}: not a fast-forward (the forge has {forge_oid}, the agent has {local_oid} which does not contain it); berth never force-pushes — rebase onto the forge's branch or push to a new branch", forge.display())]
    NonFastForward {
        /// The ref.
        refname: String,
        /// The forge repository.
        forge: PathBuf,
        /// What the forge has.
        forge_oid: Oid,
        /// What the agent tried to push.
        local_oid: Oid,
    },

    /// The forge server's TLS certificate is not one this host trusts.
    #[error(
        "{op}: the forge server at {url} offered a certificate this host does not trust: {message}; nothing was changed. Add the server's CA to the system's trust store (or point SSL_CERT_FILE at a file holding it, for the berth processes) and retry"
    )]
    ForgeCertificate {
        /// The operation.
        op: Op,
        /// The server's URL.
        url: String,
        /// libgit2's message.
        message: String,
    },

    /// The forge's server did not answer, the connection broke, or it did
    /// not serve git over HTTP (a 403 on receive-pack, say).
    #[error(
        "{op}: the forge server at {url} did not answer: {message}; nothing was changed — the agent's work stays in its own repository. Start the server again (or fix the project's forge URL, or let it serve smart HTTP with receive-pack enabled) and retry"
    )]
    ForgeUnreachable {
        /// The operation.
        op: Op,
        /// The server's URL.
        url: String,
        /// libgit2's message.
        message: String,
    },

    /// The server's ref is not at the value berth's compare-and-swap expects:
    /// someone else updated it.
    #[error("push: {refname} on the forge server {url} is at {}, not at {} as berth expected: someone else updated it; berth never overwrites — nothing was changed, retry to push on top of the new value", oid_text(*found), oid_text(*expected))]
    ForgeRefStale {
        /// The server's URL.
        url: String,
        /// The ref.
        refname: String,
        /// The value berth expected (`None`: absent).
        expected: Option<Oid>,
        /// The value the server has (`None`: absent).
        found: Option<Oid>,
    },

    /// The server refused berth's ref update (its own old-value check under
    /// the ref's lock, or a rule of its own).
    #[error(
        "push: the forge server {url} refused {refname} ({status}); nothing was changed on this host — if someone else updated the ref meanwhile, retry"
    )]
    ForgeRefused {
        /// The server's URL.
        url: String,
        /// The ref.
        refname: String,
        /// The server's per-ref status.
        status: String,
    },

    /// The forge has seen a higher fencing token for the agent than the one
    /// this write carries: another driver took the agent's lease over, and
    /// this one is stale (`fence.rs`).
    #[error(
        "the forge {forge} refused a write for agent {agent}: its lease's fencing token {token} is stale (the forge has seen {current}: another driver took the agent over); nothing was changed — this driver no longer holds the agent"
    )]
    ForgeFenced {
        /// The agent.
        agent: String,
        /// The token the write carried.
        token: u64,
        /// The highest token the forge has seen.
        current: u64,
        /// The forge (its directory, or the server's URL).
        forge: String,
    },

    /// A forge server that cannot fence a stale lease holder: it takes no
    /// push options, or runs no berth fence hook (`fence.rs`).
    #[error(
        "{op}: the forge server {url} cannot refuse a stale lease holder's push ({reason}); berth does not push or take an agent over there under a lease. On the server: install scripts/berth-fence-hook.sh as the repository's pre-receive and reference-transaction hooks and run `git config receive.advertisePushOptions true` (see the README's forge server set-up)"
    )]
    ForgeUnfenced {
        /// The operation.
        op: Op,
        /// The server's URL.
        url: String,
        /// What is missing.
        reason: String,
    },

    /// A merge with conflicts; the forge is unchanged.
    #[error("merge: {source_branch} into {target_branch} in {} conflicts in {}: {}; the forge is unchanged", forge.display(), plural(paths.len(), "path"), paths.join(", "))]
    MergeConflict {
        /// The forge repository.
        forge: PathBuf,
        /// The branch being merged.
        source_branch: String,
        /// The branch merged into.
        target_branch: String,
        /// The conflicting paths.
        paths: Vec<String>,
    },

    /// A worktree with uncommitted changes that was not force-recycled.
    #[error("recycle: worktree {} has uncommitted changes: {}; commit them or recycle with force", worktree.display(), changes.join(", "))]
    DirtyWorktree {
        /// The worktree directory.
        worktree: PathBuf,
        /// The changed paths (at most a few dozen).
        changes: Vec<String>,
    },

    /// An object over `[git] max_object_bytes` (read from its header, never
    /// inflated).
    #[error("{op}: object {oid} in {} is {size} bytes, over the limit of {limit} bytes ([git] max_object_bytes); remove it from the history (e.g. `git filter-repo --strip-blobs-bigger-than`) or raise the limit in the project's berth.toml", repo.display())]
    ObjectTooLarge {
        /// The operation.
        op: Op,
        /// The repository holding it.
        repo: PathBuf,
        /// The object.
        oid: Oid,
        /// Its size, from its header.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// A tree whose checkout would write more than `[git] max_checkout_bytes`
    /// (blob sizes read from their headers, each counted at every path).
    #[error(
        "{op}: checking out {refname} would write {size} bytes (every file counted at each path it is written to), over the limit of {limit} bytes ([git] max_checkout_bytes); nothing was checked out: remove the large or repeated files from the branch, or raise max_checkout_bytes in the project's berth.toml"
    )]
    CheckoutTooLarge {
        /// The operation.
        op: Op,
        /// The branch being checked out.
        refname: String,
        /// What the checkout would write (at least; counting stops past the
        /// limit).
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// A push whose new objects add up to more than `[git] max_push_bytes`.
    #[error(
        "push: {refname} would add {bytes} bytes of new objects to the forge, over the limit of {limit} bytes ([git] max_push_bytes); push in smaller steps or raise the limit in the project's berth.toml"
    )]
    PushTooLarge {
        /// The ref.
        refname: String,
        /// The new objects' total size (or the pack bytes read so far).
        bytes: u64,
        /// The limit.
        limit: u64,
    },

    /// The pack berth-helper sent failed berth's own measure before indexing.
    #[error(
        "push: the pack for {refname} was refused before indexing: {reason} (the limit is {limit} bytes, [git] max_object_bytes); the forge is unchanged"
    )]
    PackRefused {
        /// The ref.
        refname: String,
        /// What was wrong with it.
        reason: String,
        /// `max_object_bytes`.
        limit: u64,
    },

    /// The import source is a shallow clone: its history is incomplete.
    #[error("import project: {} is a shallow clone (its history stops at a grafted commit), and a forge made from it would fail with \"object not found\"; run `git fetch --unshallow` in it (or clone the repository whole) and add it again", source_repo.display())]
    ShallowSource {
        /// The source repository.
        source_repo: PathBuf,
    },

    /// The forge's base branch and the source's have each moved where the
    /// other has not: a fast-forward either way would drop commits.
    #[error("sync project: {branch} has diverged: the forge is at {forge_oid} and {} is at {source_oid}, and neither contains the other; nothing was changed. Bring the forge's commits (merged PRs) to the source first — `berth pr export PR` each one and merge `refs/berth/pr/N` into {branch} there — then run the sync again", source_repo.display())]
    Diverged {
        /// The source repository.
        source_repo: PathBuf,
        /// The base branch.
        branch: String,
        /// The forge's tip.
        forge_oid: Oid,
        /// The source's tip.
        source_oid: Oid,
    },

    /// The source repository has no branch of the base branch's name.
    #[error("sync project: {} has no branch {branch:?}, the project's base branch; nothing was changed. Create or restore that branch there (sync reads only it) and run the sync again", source_repo.display())]
    SourceLacksBase {
        /// The source repository.
        source_repo: PathBuf,
        /// The base branch.
        branch: String,
    },

    /// The commit to export is not (or no longer) in the forge.
    #[error("export: commit {oid} is not in the forge {}; {hint}", forge.display())]
    CommitMissing {
        /// The forge repository.
        forge: PathBuf,
        /// The commit.
        oid: Oid,
        /// What to do.
        hint: &'static str,
    },

    /// A path at a forge branch's tip that cannot be read as asked: not
    /// there as a file (or a directory), too large, or not a plain path.
    #[error("{op}: {path:?} at {branch} in {}: {reason}", forge.display())]
    BranchPath {
        /// The operation.
        op: Op,
        /// The forge repository.
        forge: PathBuf,
        /// The branch (short name) and its tip: `main (<commit>)`.
        branch: String,
        /// The path inside the tree.
        path: String,
        /// What is wrong, and what to do.
        reason: String,
    },

    /// `berth-helper` was not found.
    #[error("berth-helper not found (looked at {}); build it with `cargo build -p berth-helper` (it must sit beside the berth binary) or set BERTH_HELPER to its path", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    HelperMissing {
        /// Where it was looked for.
        searched: Vec<PathBuf>,
    },

    /// `berth-helper` failed without a usable answer, or its answer says so.
    #[error("{op}: berth-helper {}: {message}", helper.display())]
    Helper {
        /// The operation it ran for.
        op: Op,
        /// The helper binary.
        helper: PathBuf,
        /// What went wrong (its own message, or its exit status and stderr).
        message: String,
    },

    /// Berth's own structure inside an agent repository was changed by the agent.
    #[error("{op}: {} was changed from inside the berth (expected {expected}, found {found}); berth will not operate on it — recycle the agent with force and remove its repository, then provision again", path.display())]
    Tampered {
        /// The operation.
        op: Op,
        /// The path.
        path: PathBuf,
        /// What berth wrote.
        expected: String,
        /// What is there now.
        found: String,
    },
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

struct RefSuffix<'a>(Option<&'a str>);

impl fmt::Display for RefSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(name) => write!(f, " ({name})"),
            None => Ok(()),
        }
    }
}

fn oid_text(oid: Option<Oid>) -> String {
    oid.map_or_else(|| "absent".to_owned(), |o| o.to_string())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Builds `Error::Git` from a libgit2 error, keeping the context.
pub(crate) fn git(
    op: Op,
    repo: &Path,
    refname: Option<&str>,
) -> impl FnOnce(git2::Error) -> Error + use<> {
    let repo = repo.to_path_buf();
    let refname = refname.map(str::to_owned);
    move |source| Error::Git {
        op,
        repo,
        refname,
        source,
    }
}

/// Builds `Error::Io`, naming a missing path as missing.
pub(crate) fn io(op: Op, path: &Path) -> impl FnOnce(io::Error) -> Error + use<> {
    let path = path.to_path_buf();
    move |source| Error::Io { op, path, source }
}
