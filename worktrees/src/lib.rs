//! The forge, per-agent repositories and worktrees — git2 only.
//!
//! Each project has a bare *forge* that only berth writes. Each agent gets its
//! own small bare repository that borrows the forge's objects through
//! `objects/info/alternates` (cheap, and it cannot damage the forge) and one
//! linked worktree on `agent/<agent>/<task>`. The agent may do anything to its
//! own repository; only berth moves commits to the forge ([`Worktrees::push`]:
//! the agent's own branch prefix, never forced) and between forge branches
//! ([`Worktrees::merge`]).
//!
//! The forge may instead be a git server reached over smart HTTP
//! ([`Forge::Http`]): the forge directory is then this host's mirror of it,
//! refreshed before provisioning and pushes, and every ref berth writes goes
//! to the server first under the same rules (`forge_remote.rs`).
//!
//! # Trust
//!
//! berth runs as root (or the operator) on directories the agent writes. So:
//! - no `git` CLI: libgit2 runs no hooks, fsmonitor, pager or filter program;
//! - no path is ever taken from agent-writable files: the worktree is opened
//!   through its admin directory in the agent repository with the worktree
//!   path from [`Layout`] forced in, never via the worktree's `.git` file;
//!   `commondir` and `alternates` are checked against what berth wrote before
//!   every use ([`Error::Tampered`]);
//! - no remote of an agent repository is ever used (an agent's
//!   `url.*.pushInsteadOf` would redirect a root-privileged push): objects are
//!   copied from the agent repository into the forge in process;
//! - destructive file operations (recycle, reconcile, chown) never follow a
//!   symlink (`confined.rs`).
//!
//! - libgit2 follows links by path, so everything that reads or writes an
//!   agent's repository or worktree for a commit or a push (staging, refs,
//!   reflogs, packing) runs in `berth-helper` as the agent, inside a Landlock
//!   ruleset of the worktree, the agent repository and the forge's objects;
//!   berth indexes the helper's pack into the forge itself. A link the agent
//!   swaps in, in a loop or not, leads nowhere the agent could not go.
//! - objects entering the forge are bounded in size ([`GitLimits`]).
//!
//! # Concurrency
//!
//! All functions are synchronous (call them from `spawn_blocking`). [`Worktrees`]
//! holds only paths: it is `Send + Sync + Clone`, and no libgit2 handle outlives
//! a call. Writers of one repository are serialised across threads and
//! processes (`lock.rs`).

mod agent;
mod agent_git;
mod branch_file;
mod commit;
mod confined;
mod error;
mod exchange;
mod fence;
mod forge;
mod forge_remote;
mod forge_tls;
mod helper_process;
mod helper_protocol;
mod identity;
mod layout;
mod lock;
mod merge;
mod names;
mod object_bounds;
mod ownership;
mod pack_scan;
mod push;
mod reconcile;
mod recycle;
mod removal;
mod saved;
mod snapshot;
pub use snapshot::FileChange;
mod walk;

use std::path::Path;

pub use agent::WorktreeInfo;
pub use agent_git::{RefsDone, RefsJob, run_refs_job, skip_rehash_for_checkout};
pub use branch_file::{BranchDir, BranchFile};
pub use commit::{CommitOutcome, CommitRequest, run_commit_job};
pub use error::{Error, NameKind, Op, Result};
pub use exchange::{Exported, SyncStatus, Synced, pr_export_ref};
pub use fence::Fence;
pub use forge::ProjectInfo;
pub use forge_remote::Forge;
pub use forge_tls::tls_roots_loaded;
pub use git2::Oid;
pub use helper_process::{HELPER_NAME, locate_helper};
pub use helper_protocol::{
    Answer, CommitDone, CommitJob, Confinement, PackJob, PackReady, WireError, write_answer,
};
pub use identity::{ACTION_TRAILER, Identity};
pub use layout::{Layout, resolve_state_dir};
pub use merge::{ChangeKind, ChangedFile, DiffStat, MergeKind, MergeOutcome, MergeRequest};
pub use names::{AgentName, MAX_NAME_LEN, NAME_RULE, ProjectName, TaskName, is_valid_name};
pub use object_bounds::GitLimits;
pub use ownership::Owner;

/// Gives everything under `root/rel` (and `rel` itself) to `owner`, with
/// the fd-relative, no-follow walk berth uses on an agent's repository and
/// worktree: `root` must be a directory berth made and no agent can write
/// (`<state>/berths/<project>/<agent>`), `rel` plain names beneath it. A symlink is
/// re-owned as the link it is, never followed; a hard-linked file berth
/// does not already own for `owner` is skipped.
pub fn chown_beneath(root: &Path, rel: &Path, owner: Owner) -> std::io::Result<()> {
    confined::chown_tree(root, rel, owner.uid, owner.gid)
}
/// Removes whatever is at `root/rel` (a whole tree, a file, a symlink — not
/// its target) with the same fd-relative, no-follow walk: `root` a directory
/// berth made and no agent can write, `rel` plain names beneath it. Returns
/// whether something was there.
pub fn remove_beneath(root: &Path, rel: &Path) -> std::io::Result<bool> {
    confined::remove(root, rel)
}
pub use push::{PushOutcome, run_pack_job};
pub use reconcile::{ReconcileAction, ReconcileReport};
pub use recycle::{RecycleOptions, RecycleReport};
pub use removal::RemovedProject;
pub use saved::{SAVED_PREFIX, SavedWork};

/// berth's repositories in one state directory. Cheap to clone; holds no
/// libgit2 handle.
#[derive(Debug, Clone)]
pub struct Worktrees {
    layout: Layout,
}

impl Worktrees {
    /// Opens (creating it if needed) the state directory `state_dir` — see
    /// [`resolve_state_dir`] — and its top-level directories.
    ///
    /// Also turns off libgit2's repository owner check for this process (see
    /// `ownership.rs` for why and how berth narrows it): call it before other
    /// threads use git2.
    pub fn open(state_dir: impl AsRef<Path>) -> Result<Worktrees> {
        let op = Op::OpenState;
        let dir = state_dir.as_ref();
        std::fs::create_dir_all(dir).map_err(error::io(op, dir))?;
        let root = dir.canonicalize().map_err(error::io(op, dir))?;
        for sub in ["forge", "agents", "berths", "projects", "locks"] {
            let path = root.join(sub);
            std::fs::create_dir_all(&path).map_err(error::io(op, &path))?;
        }
        ownership::allow_agent_owned_repositories();
        forge_remote::prepare_network();
        Ok(Worktrees {
            layout: Layout::new(root),
        })
    }

    /// Where everything lives.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn handle_and_results_cross_threads() {
        assert_send_sync::<Worktrees>();
        assert_send_sync::<Error>();
        assert_send_sync::<WorktreeInfo>();
        assert_send_sync::<ReconcileReport>();
    }
}
