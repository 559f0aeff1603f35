//! Removing an agent's repositories, or a project's forge, for good
//! (`berth agent rm`, `berth project rm`).
//!
//! The engine takes the berth down first (saving what a recycle would lose
//! into the forge, unless told to discard it); what is left here is the
//! agent's repository and its berth directory, or the project's forge and
//! the directories berth keeps for it. Everything goes through `confined.rs`
//! under the repository's writer lock: a link an agent planted is removed as
//! the link it is, never followed, and no writer is half-way through. The
//! project's source repository is never touched: only paths of [`Layout`].

use std::path::Path;

use crate::Worktrees;
use crate::confined;
use crate::error::{self, Op, Result};
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName};
use crate::recycle::RecycleOptions;

/// What removing a project found and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovedProject {
    /// The forge was there and is gone.
    pub forge_removed: bool,
    /// The configuration directory (`berth.toml`, `permissions.json`) was
    /// there and is gone.
    pub config_removed: bool,
}

impl Worktrees {
    /// Removes the agent's worktree (if one is left), its repository and its
    /// berth directory, then the record and the lock file. Whatever was in
    /// them is lost: save it first ([`Worktrees::save_unpushed`]). Removing
    /// an agent that has none of them does nothing. The berth's own disk,
    /// when it has one, must be released first (its mount point is the
    /// berth directory).
    pub fn remove_agent(&self, project: &ProjectName, agent: &AgentName) -> Result<bool> {
        let op = Op::Remove;
        let layout = &self.layout;
        let report = self.recycle(
            project,
            agent,
            RecycleOptions {
                force: true,
                delete_branch: false,
                remove_repository: true,
            },
        )?;
        let dir = {
            let _lock = RepoLock::acquire(&layout.agent_lock(project, agent))?;
            confined::remove(&layout.berths_dir(project), Path::new(agent.as_str()))
                .map_err(error::io(op, &layout.berth_dir(project, agent)))?
        };
        let lock = layout.agent_lock(project, agent);
        if let Some(parent) = lock.parent() {
            let name = format!("{agent}.lock");
            confined::remove(parent, Path::new(&name)).map_err(error::io(op, &lock))?;
        }
        let removed =
            report.worktree_removed || report.admin_removed || report.repository_removed || dir;
        tracing::info!(project = %project, agent = %agent, removed, "agent's repositories removed");
        Ok(removed)
    }

    /// Removes the project's forge (under its writer lock), its
    /// configuration directory and what berth keeps for it (the worktree
    /// records, the berths' parent directory, the lock files). Remove its
    /// agents first ([`Worktrees::remove_agent`]): a berth directory left
    /// under it goes too. Saved work (`refs/berth/saved/*`) goes with the
    /// forge: the caller checks there is none it must keep.
    pub fn remove_project(&self, project: &ProjectName) -> Result<RemovedProject> {
        let op = Op::Remove;
        let layout = &self.layout;
        let root = layout.state_dir();
        let forge_removed = {
            let _lock = RepoLock::acquire(&layout.forge_lock(project))?;
            confined::remove(&layout.forge_dir(), Path::new(&format!("{project}.git")))
                .map_err(error::io(op, &layout.forge(project)))?
        };
        let config_removed = confined::remove(&root.join("projects"), Path::new(project.as_str()))
            .map_err(error::io(op, &layout.project_config_dir(project)))?;
        for (parent, name) in [
            (root.join("agents"), project.to_string()),
            (root.join("berths"), project.to_string()),
            (root.join("locks").join("agents"), project.to_string()),
            (root.join("locks").join("forge"), format!("{project}.lock")),
        ] {
            confined::remove(&parent, Path::new(&name))
                .map_err(error::io(op, &parent.join(&name)))?;
        }
        tracing::info!(project = %project, forge_removed, config_removed, "project removed");
        Ok(RemovedProject {
            forge_removed,
            config_removed,
        })
    }
}
