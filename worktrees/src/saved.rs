//! Saving what recycling a worktree would throw away.
//!
//! Recycling deletes the worktree and its branch in the agent's repository;
//! the forge keeps only what was pushed. Before that, the dirty tree is
//! committed on the branch (by `berth-helper`, as the agent, like any commit
//! of berth's: `commit.rs`) and the branch's tip, when the forge does not hold
//! it yet, is copied into the forge under `refs/berth/saved/<agent>/<stamp>`.
//! That namespace is outside every agent's push prefix (`refs/heads/agent/…`),
//! so only berth writes it, and it is kept until a person drops it.

use git2::Oid;

use crate::Worktrees;
use crate::agent::read_record;
use crate::commit::CommitRequest;
use crate::error::{self, Error, Op, Result};
use crate::forge::open_forge;
use crate::forge_remote::{Forge, RefUpdate};
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName};
use crate::object_bounds::GitLimits;

/// Where saved work lives in a forge.
pub const SAVED_PREFIX: &str = "refs/berth/saved/";

/// Work saved from a worktree about to be recycled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedWork {
    /// The forge's ref (`refs/berth/saved/<agent>/<stamp>`).
    pub refname: String,
    /// The commit it holds.
    pub oid: Oid,
    /// Whether uncommitted changes were committed into it.
    pub committed_changes: bool,
}

impl Worktrees {
    /// Saves the agent's uncommitted changes and unpushed commits into the
    /// forge under `refs/berth/saved/<agent>/<stamp>`; `None` when there was
    /// nothing to save (no worktree or branch, a clean tree whose tip the
    /// forge already holds). `stamp` names the save (ASCII letters, digits
    /// and `-`).
    pub fn save_unpushed(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        stamp: &str,
    ) -> Result<Option<SavedWork>> {
        let op = Op::Recycle;
        if stamp.is_empty()
            || stamp.len() > 64
            || !stamp.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(Error::InvalidInput {
                op,
                field: "save stamp",
                value: stamp.to_owned(),
                reason: "use 1 to 64 ASCII letters, digits or `-`".to_owned(),
            });
        }
        let Some(branch) = ({
            let _lock = RepoLock::acquire(&self.layout.agent_lock(project, agent))?;
            read_record(&self.layout, project, agent, op)?
        }) else {
            return Ok(None);
        };
        let request = CommitRequest {
            message: "berth: uncommitted work saved before recycling the worktree".to_owned(),
            action_id: format!("berth-save-{stamp}"),
            identity: None,
            co_author: None,
        };
        let committed_changes = match self.commit(project, agent, &request) {
            Ok(outcome) => outcome.created,
            // A clean tree, or a worktree half-created or gone.
            Err(Error::NothingToCommit { .. } | Error::Missing { .. }) => false,
            Err(e) => return Err(e),
        };
        let refname = format!("refs/heads/{branch}");
        let forge_ref = format!("{SAVED_PREFIX}{agent}/{stamp}");
        let limits = GitLimits::default();
        match self.push_into(project, agent, &refname, &forge_ref, &limits, true, None) {
            Ok(pushed) if pushed.updated => {
                tracing::info!(project = %project, agent = %agent, refname = %forge_ref, oid = %pushed.oid, "saved unpushed work");
                Ok(Some(SavedWork {
                    refname: forge_ref,
                    oid: pushed.oid,
                    committed_changes,
                }))
            }
            Ok(_) => Ok(None),
            // No branch (or no agent repository): nothing of it to save.
            Err(Error::UnknownBranch { .. } | Error::Missing { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The saved work in the project's forge: each ref and its commit.
    pub fn saved(&self, project: &ProjectName) -> Result<Vec<(String, Oid)>> {
        let op = Op::ListProjects;
        let forge = open_forge(&self.layout, project, op)?;
        let git = |e| error::git(op, forge.path(), Some(SAVED_PREFIX))(e);
        let mut out = Vec::new();
        for r in forge
            .references_glob(&format!("{SAVED_PREFIX}*"))
            .map_err(git)?
        {
            let r = r.map_err(git)?;
            if let (Ok(name), Some(oid)) = (r.name(), r.target()) {
                out.push((name.to_owned(), oid));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Drops one saved ref from the project's forge (`refname` in full, or
    /// without `refs/berth/saved/`); false when there was none. Its commits
    /// stay in the forge's objects until git collects them.
    pub fn drop_saved(&self, project: &ProjectName, refname: &str) -> Result<bool> {
        let op = Op::Push;
        let full = if refname.starts_with(SAVED_PREFIX) {
            refname.to_owned()
        } else {
            format!("{SAVED_PREFIX}{refname}")
        };
        if full.len() == SAVED_PREFIX.len() || full.contains("..") {
            return Err(Error::InvalidInput {
                op,
                field: "saved ref",
                value: refname.to_owned(),
                reason: format!("name one ref under `{SAVED_PREFIX}` (see `berth saved ls`)"),
            });
        }
        let _lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
        let forge = open_forge(&self.layout, project, op)?;
        match forge.find_reference(&full) {
            Ok(mut r) => {
                let location = Forge::of(&forge, op)?;
                if let (Forge::Http { .. }, Some(previous)) = (&location, r.target()) {
                    // A server forge drops it there first, from the value it
                    // holds here; one the server never had is dropped here
                    // only.
                    let update = RefUpdate {
                        refname: &full,
                        previous: Some(previous),
                        new: None,
                        log: "berth: drop saved work",
                        fence: None,
                    };
                    match location.publish(&forge, update, op) {
                        Err(Error::ForgeRefStale { found: None, .. }) => {}
                        other => return other.map(|()| true),
                    }
                }
                r.delete()
                    .map_err(error::git(op, forge.path(), Some(&full)))?;
                Ok(true)
            }
            Err(e)
                if e.code() == git2::ErrorCode::NotFound
                    || e.code() == git2::ErrorCode::InvalidSpec =>
            {
                Ok(false)
            }
            Err(e) => Err(error::git(op, forge.path(), Some(&full))(e)),
        }
    }
}
