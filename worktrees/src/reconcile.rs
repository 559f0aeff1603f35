//! Repairing the state directory after a crash.
//!
//! A crash can leave: a worktree directory without berth's record (provisioning
//! died mid-checkout), a record or admin directory whose worktree directory is
//! gone, staging directories of an import or a repository creation, and
//! `*.lock` files of git operations that never finished. Reconcile removes
//! exactly those, and only what is provably dead:
//! - an agent whose writer lock another process holds is skipped (it is being
//!   worked on right now);
//! - lock files are cleared only for agents the caller says are not live (a
//!   live agent's container may be running git and own its `index.lock`), and
//!   in the forge, which only berth writes and whose writer lock reconcile holds;
//! - a complete worktree is left alone, live or not: it lives until its task's
//!   gate resolves, and only [`Worktrees::recycle`] removes it.
//!
//! Everything goes through `confined.rs`: nothing outside the state directory is
//! touched, and no symlink is followed.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::Worktrees;
use crate::agent::{admin_rel, read_record, remove_record};
use crate::confined::{self, Kind};
use crate::error::{self, Op, Result};
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName};

/// How long reconcile waits for a lock before calling its holder busy. A
/// lock is also held for a moment by a child process another thread of the
/// same program forks (its descriptor lives until the child's exec), and by
/// a helper that is still exiting; an instant's look would report such a
/// lock busy and leave stale files behind.
const BUSY_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The lock, waiting up to [`BUSY_GRACE`]; `None` when it stays held.
fn acquire_within_grace(path: &Path) -> Result<Option<RepoLock>> {
    let deadline = std::time::Instant::now() + BUSY_GRACE;
    loop {
        if let Some(lock) = RepoLock::try_acquire(path)? {
            return Ok(Some(lock));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One thing reconcile did (or declined to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconcileAction {
    /// A stale git lock file was removed.
    RemovedLockFile {
        /// The file.
        path: PathBuf,
    },
    /// A worktree directory without berth's record (a provisioning that did not
    /// finish) was removed.
    RemovedHalfCreatedWorktree {
        /// The project.
        project: ProjectName,
        /// The agent.
        agent: AgentName,
        /// The directory.
        path: PathBuf,
    },
    /// The admin directory of a worktree that is gone was removed.
    PrunedAdminDir {
        /// The project.
        project: ProjectName,
        /// The agent.
        agent: AgentName,
        /// The directory.
        path: PathBuf,
    },
    /// berth's record of a worktree that is gone was removed.
    RemovedStaleRecord {
        /// The project.
        project: ProjectName,
        /// The agent.
        agent: AgentName,
        /// The record file.
        path: PathBuf,
    },
    /// A staging directory of an interrupted import or repository creation was
    /// removed.
    RemovedStaging {
        /// The directory.
        path: PathBuf,
    },
    /// Another process holds the writer lock; nothing was touched.
    SkippedBusy {
        /// The lock file.
        lock: PathBuf,
    },
    /// Something looks wrong but is not provably dead; left for a person.
    LeftAlone {
        /// The path.
        path: PathBuf,
        /// Why it was not touched.
        reason: String,
    },
}

/// What reconcile did, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// The actions.
    pub actions: Vec<ReconcileAction>,
}

impl Worktrees {
    /// Repairs what a crash left behind. `live` lists the agents whose berths
    /// are running (their lock files are not touched).
    pub fn reconcile(&self, live: &[(ProjectName, AgentName)]) -> Result<ReconcileReport> {
        let layout = &self.layout;
        let live: HashSet<(&ProjectName, &AgentName)> = live.iter().map(|(p, a)| (p, a)).collect();
        let mut report = ReconcileReport::default();
        for project in projects(layout)? {
            for agent in agents(layout, &project)? {
                let is_live = live.contains(&(&project, &agent));
                reconcile_agent(layout, &project, &agent, is_live, &mut report)?;
            }
            reconcile_forge(layout, &project, &mut report)?;
        }
        Ok(report)
    }
}

/// Names in `dir` (empty when it does not exist).
fn names_in(dir: &Path) -> Result<Vec<String>> {
    let op = Op::Reconcile;
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error::io(op, dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(error::io(op, dir))?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

fn projects(layout: &Layout) -> Result<BTreeSet<ProjectName>> {
    let root = layout.state_dir();
    let mut set = BTreeSet::new();
    for name in names_in(&layout.forge_dir())? {
        let stem = name.strip_suffix(".git").unwrap_or(&name);
        let stem = stem.strip_prefix(".import-").unwrap_or(stem);
        set.extend(ProjectName::new(stem).ok());
    }
    for dir in ["agents", "berths"] {
        for name in names_in(&root.join(dir))? {
            set.extend(ProjectName::new(name).ok());
        }
    }
    Ok(set)
}

fn agents(layout: &Layout, project: &ProjectName) -> Result<BTreeSet<AgentName>> {
    let mut set = BTreeSet::new();
    for name in names_in(&layout.agents_dir(project))? {
        let stem = name.strip_suffix(".worktree").unwrap_or(&name);
        set.extend(AgentName::new(stem).ok());
    }
    for name in names_in(&layout.berths_dir(project))? {
        set.extend(AgentName::new(name).ok());
    }
    Ok(set)
}

fn reconcile_agent(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    is_live: bool,
    report: &mut ReconcileReport,
) -> Result<()> {
    let op = Op::Reconcile;
    let lock_path = layout.agent_lock(project, agent);
    let Some(_lock) = acquire_within_grace(&lock_path)? else {
        report
            .actions
            .push(ReconcileAction::SkippedBusy { lock: lock_path });
        return Ok(());
    };
    let berth_dir = layout.berth_dir(project, agent);

    let staging = format!(".init-{agent}.git");
    if confined::remove(&berth_dir, Path::new(&staging))
        .map_err(error::io(op, &berth_dir.join(&staging)))?
    {
        report.actions.push(ReconcileAction::RemovedStaging {
            path: berth_dir.join(&staging),
        });
    }

    let worktree = layout.worktree(project, agent);
    let admin = layout.worktree_admin(project, agent);
    let record = read_record(layout, project, agent, op)?;
    let worktree_present = confined::kind(&berth_dir, Path::new(agent.as_str()))
        .map_err(error::io(op, &worktree))?
        .is_some();
    let admin_present = confined::kind(&berth_dir, &admin_rel(agent))
        .map_err(error::io(op, &admin))?
        == Some(Kind::Dir);

    let remove_admin = |report: &mut ReconcileReport| -> Result<()> {
        if confined::remove(&berth_dir, &admin_rel(agent)).map_err(error::io(op, &admin))? {
            report.actions.push(ReconcileAction::PrunedAdminDir {
                project: project.clone(),
                agent: agent.clone(),
                path: admin.clone(),
            });
        }
        Ok(())
    };
    match (record.is_some(), worktree_present, admin_present) {
        // The worktree directory is gone: its record and admin directory are dead.
        (true, false, _) => {
            remove_record(layout, project, agent, op)?;
            report.actions.push(ReconcileAction::RemovedStaleRecord {
                project: project.clone(),
                agent: agent.clone(),
                path: layout.worktree_record(project, agent),
            });
            remove_admin(report)?;
        }
        // Never finished provisioning.
        (false, true, _) => {
            if confined::remove(&berth_dir, Path::new(agent.as_str())).map_err(error::io(op, &worktree))? {
                report.actions.push(ReconcileAction::RemovedHalfCreatedWorktree {
                    project: project.clone(),
                    agent: agent.clone(),
                    path: worktree.clone(),
                });
            }
            remove_admin(report)?;
        }
        (false, false, true) => remove_admin(report)?,
        (true, true, false) => report.actions.push(ReconcileAction::LeftAlone {
            path: worktree.clone(),
            reason: "the worktree's admin directory is gone (deleted from inside the berth?); recycle or provision the agent again".to_owned(),
        }),
        _ => {}
    }

    let repo_rel = PathBuf::from(Layout::agent_repo_name(agent));
    if !is_live
        && confined::kind(&berth_dir, &repo_rel)
            .map_err(error::io(op, &berth_dir.join(&repo_rel)))?
            == Some(Kind::Dir)
    {
        for path in confined::remove_lock_files(&berth_dir, &repo_rel, &["objects"])
            .map_err(error::io(op, &berth_dir.join(&repo_rel)))?
        {
            report
                .actions
                .push(ReconcileAction::RemovedLockFile { path });
        }
    }
    Ok(())
}

fn reconcile_forge(
    layout: &Layout,
    project: &ProjectName,
    report: &mut ReconcileReport,
) -> Result<()> {
    let op = Op::Reconcile;
    let lock_path = layout.forge_lock(project);
    let Some(_lock) = acquire_within_grace(&lock_path)? else {
        report
            .actions
            .push(ReconcileAction::SkippedBusy { lock: lock_path });
        return Ok(());
    };
    let forge_dir = layout.forge_dir();
    let staging = format!(".import-{project}.git");
    if confined::remove(&forge_dir, Path::new(&staging))
        .map_err(error::io(op, &forge_dir.join(&staging)))?
    {
        report.actions.push(ReconcileAction::RemovedStaging {
            path: forge_dir.join(&staging),
        });
    }
    let forge_rel = format!("{project}.git");
    if confined::kind(&forge_dir, Path::new(&forge_rel))
        .map_err(error::io(op, &layout.forge(project)))?
        == Some(Kind::Dir)
    {
        for path in confined::remove_lock_files(&forge_dir, Path::new(&forge_rel), &["objects"])
            .map_err(error::io(op, &layout.forge(project)))?
        {
            report
                .actions
                .push(ReconcileAction::RemovedLockFile { path });
        }
    }
    Ok(())
}
