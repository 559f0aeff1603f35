//! Recycling an agent's worktree once its task's gate resolves.
//!
//! Only that agent's worktree and its admin directory are removed, by name, and
//! never with `git worktree prune` or libgit2's prune: both look at every
//! worktree of a repository, and libgit2's deletes the directory named in the
//! agent-writable `gitdir` file. Removal goes through `confined.rs`, so a
//! symlink the agent planted is removed as a link, never followed.

use std::path::Path;

use git2::{Status, StatusOptions};

use crate::Worktrees;
use crate::agent::{admin_rel, open_worktree_repo, read_record, remove_record};
use crate::agent_git::{RefsJobParts, refs_in_helper};
use crate::confined;
use crate::error::{self, Error, Op, Result};
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName, agent_ref_prefix};

/// How far to go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecycleOptions {
    /// Recycle even with uncommitted changes (or a worktree berth cannot read).
    pub force: bool,
    /// Also delete the worktree's branch from the agent repository (the forge
    /// keeps whatever was pushed).
    pub delete_branch: bool,
    /// Also delete the agent repository itself (for example after
    /// [`Error::Tampered`]); its next provisioning starts fresh from the forge.
    pub remove_repository: bool,
}

/// What `recycle` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecycleReport {
    /// The worktree directory was removed.
    pub worktree_removed: bool,
    /// The worktree's admin directory was removed.
    pub admin_removed: bool,
    /// The branch that was deleted, if asked and there was one.
    pub branch_deleted: Option<String>,
    /// The agent repository was removed.
    pub repository_removed: bool,
}

impl Worktrees {
    /// Removes the agent's worktree and its admin directory. Refuses a worktree
    /// with uncommitted changes ([`Error::DirtyWorktree`]) unless `force`.
    /// Recycling an agent that has no worktree does nothing and reports so.
    pub fn recycle(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        options: RecycleOptions,
    ) -> Result<RecycleReport> {
        let op = Op::Recycle;
        let layout = &self.layout;
        let _lock = RepoLock::acquire(&layout.agent_lock(project, agent))?;
        let worktree = layout.worktree(project, agent);
        let berth_dir = layout.berth_dir(project, agent);
        let repo_present = confined::kind(&berth_dir, Path::new(&Layout::agent_repo_name(agent)))
            .map_err(error::io(op, &layout.agent_repo(project, agent)))?
            .is_some();
        let worktree_present = confined::kind(&berth_dir, Path::new(agent.as_str()))
            .map_err(error::io(op, &worktree))?
            .is_some();

        let record = read_record(layout, project, agent, op)?;
        if !options.force && worktree_present && repo_present {
            // Read as the agent, confined: the status reads every file.
            let refname = record.as_deref().map_or_else(
                || format!("{}none", agent_ref_prefix(agent)),
                |b| format!("refs/heads/{b}"),
            );
            let check = RefsJobParts {
                op,
                base_mirror: None,
                refname,
                create_at: None,
                checkout: false,
                max_checkout_bytes: crate::GitLimits::DEFAULT_MAX_CHECKOUT_BYTES,
                check_clean: true,
                delete_branch: false,
            };
            match refs_in_helper(layout, project, agent, check) {
                // No admin directory: a half-created worktree, nothing
                // committed there.
                Ok(_) | Err(Error::Missing { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let branch = match record {
            Some(b) if options.delete_branch => Some(b),
            _ => None,
        };

        let mut report = RecycleReport::default();
        remove_record(layout, project, agent, op)?;
        report.worktree_removed = confined::remove(&berth_dir, Path::new(agent.as_str()))
            .map_err(error::io(op, &worktree))?;
        report.admin_removed = confined::remove(&berth_dir, &admin_rel(agent))
            .map_err(error::io(op, &layout.worktree_admin(project, agent)))?;

        if options.remove_repository {
            report.repository_removed =
                confined::remove(&berth_dir, Path::new(&Layout::agent_repo_name(agent)))
                    .map_err(error::io(op, &layout.agent_repo(project, agent)))?;
        } else if let (Some(branch), true) = (branch, repo_present) {
            let refname = format!("refs/heads/{branch}");
            if refname.starts_with(&agent_ref_prefix(agent)) {
                // The ref and its reflog are deleted as the agent, confined:
                // a reflog directory swapped for a link leads nowhere.
                let delete = RefsJobParts {
                    op,
                    base_mirror: None,
                    refname,
                    create_at: None,
                    checkout: false,
                    max_checkout_bytes: crate::GitLimits::DEFAULT_MAX_CHECKOUT_BYTES,
                    check_clean: false,
                    delete_branch: true,
                };
                if refs_in_helper(layout, project, agent, delete)?.1 {
                    report.branch_deleted = Some(branch);
                }
            }
        }
        tracing::info!(project = %project, agent = %agent, ?report, "recycled");
        Ok(report)
    }
}

const MAX_LISTED: usize = 20;

/// Refuses a worktree with changes a commit would record (ignored files do not
/// count). Run by `berth-helper` (`agent_git.rs`).
pub(crate) fn check_clean(layout: &Layout, project: &ProjectName, agent: &AgentName) -> Result<()> {
    let op = Op::Recycle;
    let repo = match open_worktree_repo(layout, project, agent, op) {
        Ok(repo) => repo,
        // No admin directory: a half-created worktree, nothing committed there.
        Err(Error::Missing { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(error::git(op, repo.path(), None))?;
    let changes: Vec<String> = statuses
        .iter()
        .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    let mut listed: Vec<String> = changes.iter().take(MAX_LISTED).cloned().collect();
    if changes.len() > MAX_LISTED {
        listed.push(format!("and {} more", changes.len() - MAX_LISTED));
    }
    Err(Error::DirtyWorktree {
        worktree: layout.worktree(project, agent),
        changes: listed,
    })
}
