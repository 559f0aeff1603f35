//! The engine's view of the repositories — the forge, the agents' own
//! repositories and worktrees — through `berth-worktrees` (git2 only, never
//! the `git` CLI against anything an agent can write). libgit2 is
//! synchronous, so every call runs in `spawn_blocking`; writers of one
//! repository are serialised across processes by that crate's file locks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use berth_worktrees::{
    AgentName, CommitRequest, Fence, Forge, Identity, MergeRequest, ProjectName, RecycleOptions,
    TaskName, Worktrees,
};

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, Outcome};
use crate::agents::Agent;
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::projects::Project;

/// A project imported into its forge.
#[derive(Debug, Clone)]
pub struct Imported {
    pub forge: PathBuf,
    pub base_branch: String,
    /// `Name <email>` of the person importing, for the default `git.co_author`.
    pub co_author: String,
}

/// A provisioned worktree.
#[derive(Debug, Clone)]
pub struct Provisioned {
    pub worktree: PathBuf,
    pub branch: String,
    pub base: String,
    pub created: bool,
}

/// The repositories of one state directory.
#[derive(Debug, Clone)]
pub struct Git {
    wt: Worktrees,
    /// The fencing token of each agent lease this process took
    /// (`agent_lease.rs`), by agent: what its pushes carry to the forge
    /// (`berth_worktrees::Fence`). Shared with the engine's siblings.
    fences: Arc<Mutex<HashMap<String, u64>>>,
}

fn project_name(p: &str) -> Result<ProjectName> {
    Ok(ProjectName::new(p)?)
}

fn agent_name(a: &str) -> Result<AgentName> {
    Ok(AgentName::new(a)?)
}

/// The task part of an agent's branch: the task's short id, or `scratch`.
pub fn task_part(task: Option<&str>) -> String {
    task.map(|t| crate::ids::short(t).to_string())
        .unwrap_or_else(|| "scratch".into())
}

/// The identity of the agent's own git commands inside its berth (set in
/// every exec's environment, never in its repository config): the one
/// berth's commits for the agent use, `<agent>[bot] <agent@berth.local>`.
pub(crate) fn agent_git_identity(agent: &str) -> Option<berth_sandbox::runner::GitIdentity> {
    let identity = Identity::for_agent(&AgentName::new(agent).ok()?);
    Some(berth_sandbox::runner::GitIdentity {
        name: identity.name().to_string(),
        email: identity.email().to_string(),
    })
}

/// `Name <email>` parsed into an identity.
pub fn parse_identity(s: &str) -> Option<Identity> {
    let (name, rest) = s.split_once('<')?;
    let email = rest.trim().strip_suffix('>')?;
    Identity::new(name.trim(), email.trim()).ok()
}

impl Git {
    pub fn open(state_root: &Path) -> Result<Git> {
        Ok(Git {
            wt: Worktrees::open(state_root)?,
            fences: Arc::default(),
        })
    }

    /// Notes that this process took `agent`'s lease with `token`: its
    /// pushes of the agent's work carry it from now on.
    pub(crate) fn hold_fence(&self, agent: &str, token: i64) {
        let Ok(token) = u64::try_from(token) else {
            return;
        };
        let mut held = self.fences.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = held.entry(agent.to_string()).or_insert(token);
        *entry = (*entry).max(token);
    }

    /// The token this process's pushes of `agent`'s work carry, if it ever
    /// took the agent's lease (a stale one when another driver took it
    /// since: the forge refuses it then).
    fn held_fence(&self, agent: &str) -> Option<Fence> {
        let held = self.fences.lock().unwrap_or_else(PoisonError::into_inner);
        let token = *held.get(agent)?;
        Some(Fence {
            agent: AgentName::new(agent).ok()?,
            token,
        })
    }

    /// Raises `agent`'s fencing token at `project`'s forge to `token` (a
    /// takeover, before it reads the forge: `worker.rs`); this process's
    /// pushes of the agent carry it from now on.
    pub async fn raise_fence(&self, project: &str, agent: &str, token: i64) -> Result<()> {
        self.hold_fence(agent, token);
        let p = project_name(project)?;
        let fence = Fence {
            agent: agent_name(agent)?,
            token: u64::try_from(token).unwrap_or_default(),
        };
        self.blocking(move |wt| Ok(wt.raise_fence(&p, &fence).map(drop)?))
            .await
    }

    pub(crate) async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Worktrees) -> Result<T> + Send + 'static,
    {
        let wt = self.wt.clone();
        tokio::task::spawn_blocking(move || f(&wt))
            .await
            .map_err(EngineError::interrupted("a git operation did not complete"))?
    }

    /// Repairs what a crash left in the repositories (stale `*.lock` files
    /// of a git write that died half-way, half-created worktrees), leaving
    /// alone the agents in `live` and any repository another process holds.
    /// Returns what it did, one line each.
    pub async fn reconcile(&self, live: Vec<(String, String)>) -> Result<Vec<String>> {
        let live = live
            .iter()
            .filter_map(|(p, a)| Some((ProjectName::new(p).ok()?, AgentName::new(a).ok()?)))
            .collect::<Vec<_>>();
        self.blocking(move |wt| {
            let report = wt.reconcile(&live)?;
            Ok(report.actions.iter().map(|a| format!("{a:?}")).collect())
        })
        .await
    }

    pub fn agent_repo(&self, project: &str, agent: &str) -> PathBuf {
        match (ProjectName::new(project), AgentName::new(agent)) {
            (Ok(p), Ok(a)) => self.wt.layout().agent_repo(&p, &a),
            _ => self
                .wt
                .layout()
                .state_dir()
                .join("berths")
                .join(project)
                .join(agent)
                .join(format!("{agent}.git")),
        }
    }

    pub async fn import_project(
        &self,
        name: &str,
        from: &Path,
        base: Option<&str>,
    ) -> Result<Imported> {
        let name = project_name(name)?;
        let from = from.to_path_buf();
        let base = base.map(str::to_string);
        self.blocking(move |wt| {
            let info = wt.import_project(&name, &from, base.as_deref())?;
            Ok(Imported {
                forge: info.forge,
                base_branch: info.base_branch,
                co_author: default_co_author(&from),
            })
        })
        .await
    }

    /// Imports project `name` from the git server at `url` (see
    /// `berth_worktrees::Worktrees::import_project_from_server`): the forge
    /// directory becomes this host's mirror of it.
    pub async fn import_project_from_server(
        &self,
        name: &str,
        url: &str,
        base: Option<&str>,
    ) -> Result<Imported> {
        let name = project_name(name)?;
        let url = url.to_string();
        let base = base.map(str::to_string);
        self.blocking(move |wt| {
            let info = wt.import_project_from_server(
                &name,
                &url,
                base.as_deref(),
                &berth_worktrees::GitLimits::default(),
            )?;
            Ok(Imported {
                forge: info.forge,
                base_branch: info.base_branch,
                co_author: default_co_author(Path::new("")),
            })
        })
        .await
    }

    /// Fast-forwards the project's base branch from `source` (see
    /// `berth_worktrees::Worktrees::sync_project`).
    pub async fn sync_project(
        &self,
        project: &str,
        source: &Path,
        limits: berth_worktrees::GitLimits,
    ) -> Result<berth_worktrees::Synced> {
        let p = project_name(project)?;
        let source = source.to_path_buf();
        self.blocking(move |wt| Ok(wt.sync_project(&p, &source, &limits)?))
            .await
    }

    /// For a project on a forge server: its mirror follows the server, and
    /// the base branch's move is reported (`None` for a directory forge).
    pub async fn sync_from_server(&self, project: &str) -> Result<Option<berth_worktrees::Synced>> {
        let p = project_name(project)?;
        self.blocking(move |wt| Ok(wt.sync_from_server(&p)?)).await
    }

    /// Fetches forge `commit` (reachable from `via_branch`) into `target` as
    /// `refname`.
    pub async fn export_commit(
        &self,
        project: &str,
        commit: &str,
        via_branch: &str,
        target: &Path,
        refname: &str,
    ) -> Result<berth_worktrees::Exported> {
        let p = project_name(project)?;
        let oid = berth_worktrees::Oid::from_str(commit)
            .map_err(|_| EngineError::corrupt("exporting a PR", format!("commit id `{commit}`")))?;
        let via = via_branch.to_string();
        let target = target.to_path_buf();
        let refname = refname.to_string();
        self.blocking(move |wt| Ok(wt.export_commit(&p, oid, &via, &target, &refname)?))
            .await
    }

    /// Brings this host's mirror of `project`'s forge server up to date
    /// (branches, tags, saved work); nothing for a directory forge.
    pub async fn refresh_forge(&self, project: &str) -> Result<()> {
        let p = project_name(project)?;
        self.blocking(move |wt| Ok(wt.refresh_forge(&p).map(drop)?))
            .await
    }

    /// Whether this state directory holds project `project`'s forge (or
    /// its mirror of the project's forge server).
    pub fn has_forge(&self, project: &str) -> bool {
        project_name(project).is_ok_and(|p| self.wt.layout().forge(&p).is_dir())
    }

    /// The forge's object directory, mounted read-only into container berths.
    pub fn forge_objects(&self, project: &str) -> Result<PathBuf> {
        Ok(self.wt.layout().forge_objects(&project_name(project)?))
    }

    /// The agent's worktree for `task` (its short id, or `scratch`). With
    /// `owner` (mounted mode), the agent's repository and worktree are
    /// chowned to it, so the container's uid can write them. A checkout that
    /// would write more than `max_checkout_bytes` is refused.
    pub async fn provision(
        &self,
        project: &Project,
        agent: &str,
        task: &str,
        owner: Option<berth_worktrees::Owner>,
        max_checkout_bytes: u64,
    ) -> Result<Provisioned> {
        self.provision_announcing(project, agent, task, owner, max_checkout_bytes, None)
            .await
    }

    /// [`Git::provision`], sending the worktree's path on `ready` once its
    /// directories exist, before the checkout fills them
    /// (`Worktrees::provision_announcing`): `berth up` creates a mounted
    /// berth's container meanwhile. `ready` is dropped unsent when
    /// provisioning fails first.
    pub async fn provision_announcing(
        &self,
        project: &Project,
        agent: &str,
        task: &str,
        owner: Option<berth_worktrees::Owner>,
        max_checkout_bytes: u64,
        ready: Option<tokio::sync::oneshot::Sender<PathBuf>>,
    ) -> Result<Provisioned> {
        let p = project_name(&project.name)?;
        let a = agent_name(agent)?;
        let t = TaskName::new(task)?;
        self.blocking(move |wt| {
            let announce = |worktree: &std::path::Path| {
                if let Some(ready) = ready {
                    // Nobody waiting (the caller gave up): nothing to do.
                    let _ = ready.send(worktree.to_path_buf());
                }
            };
            let info = wt.provision_announcing(&p, &a, &t, owner, max_checkout_bytes, announce)?;
            Ok(Provisioned {
                worktree: info.path,
                branch: info.branch,
                base: info.base_branch,
                created: info.created,
            })
        })
        .await
    }

    /// Removes the agent's worktree (and its local branch; the forge keeps
    /// what was pushed). Whatever was left uncommitted is discarded: this runs
    /// only once the task has left the agent, or for a scratch worktree.
    pub async fn recycle(&self, project: &Project, agent: &str) -> Result<bool> {
        let p = project_name(&project.name)?;
        let a = agent_name(agent)?;
        self.blocking(move |wt| {
            let r = wt.recycle(
                &p,
                &a,
                RecycleOptions {
                    force: true,
                    delete_branch: true,
                    remove_repository: false,
                },
            )?;
            Ok(r.worktree_removed || r.admin_removed)
        })
        .await
    }

    /// Removes the agent's repositories and berth directory for good
    /// (`berth agent rm`, after its berth is down and its work saved).
    pub async fn remove_agent(&self, project: &str, agent: &str) -> Result<bool> {
        let p = project_name(project)?;
        let a = agent_name(agent)?;
        self.blocking(move |wt| Ok(wt.remove_agent(&p, &a)?)).await
    }

    /// Removes the project's forge and the directories berth keeps for it
    /// (`berth project rm`, after its agents are removed).
    pub async fn remove_project(&self, project: &str) -> Result<berth_worktrees::RemovedProject> {
        let p = project_name(project)?;
        self.blocking(move |wt| Ok(wt.remove_project(&p)?)).await
    }

    /// Saves what recycling the agent's worktree would lose (its
    /// uncommitted changes, committed by the helper as the agent, and a tip
    /// the forge does not hold) under `refs/berth/saved/<agent>/<stamp>` in
    /// the forge; `None` when there is nothing to save.
    pub async fn save_unpushed(
        &self,
        project: &Project,
        agent: &str,
        stamp: &str,
    ) -> Result<Option<berth_worktrees::SavedWork>> {
        let p = project_name(&project.name)?;
        let a = agent_name(agent)?;
        let stamp = stamp.to_string();
        self.blocking(move |wt| Ok(wt.save_unpushed(&p, &a, &stamp)?))
            .await
    }

    /// The saved work in `project`'s forge: each ref and its commit.
    pub async fn saved(&self, project: &str) -> Result<Vec<(String, String)>> {
        let p = project_name(project)?;
        self.blocking(move |wt| {
            Ok(wt
                .saved(&p)?
                .into_iter()
                .map(|(r, o)| (r, o.to_string()))
                .collect())
        })
        .await
    }

    /// Drops one saved ref from `project`'s forge; false when there was none.
    pub async fn drop_saved(&self, project: &str, refname: &str) -> Result<bool> {
        let p = project_name(project)?;
        let refname = refname.to_string();
        self.blocking(move |wt| Ok(wt.drop_saved(&p, &refname)?))
            .await
    }

    /// The tip of `branch` in the forge, if it is there.
    pub async fn forge_head(&self, project: &Project, branch: &str) -> Result<Option<String>> {
        let p = project_name(&project.name)?;
        let branch = branch.to_string();
        let base = project.base_branch.clone();
        self.blocking(move |wt| match wt.branch_diff_stat(&p, &branch, &base) {
            Ok(stat) => Ok(Some(stat.head.to_string())),
            Err(berth_worktrees::Error::UnknownBranch { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        })
        .await
    }

    /// Writes forge commit `commit`'s tree into `dest` (empty, berth's own),
    /// bounded by `max_bytes`.
    pub async fn check_out_commit(
        &self,
        project: &str,
        commit: &str,
        dest: PathBuf,
        max_bytes: u64,
    ) -> Result<()> {
        let p = project_name(project)?;
        let oid = berth_worktrees::Oid::from_str(commit).map_err(|_| EngineError::Invalid {
            what: "commit",
            value: commit.to_string(),
            why: "it must be a full commit id".into(),
        })?;
        self.blocking(move |wt| Ok(wt.check_out_commit(&p, oid, &dest, max_bytes)?))
            .await
    }

    /// The paths that would conflict if forge `branch` merged into `base`
    /// now (empty: it merges cleanly).
    pub async fn merge_conflicts(
        &self,
        project: &str,
        branch: &str,
        base: &str,
    ) -> Result<Vec<String>> {
        let p = project_name(project)?;
        let (branch, base) = (branch.to_string(), base.to_string());
        self.blocking(move |wt| Ok(wt.merge_conflicts(&p, &branch, &base)?))
            .await
    }

    /// The files forge `branch` changes since it left `base` (a PR's
    /// diff), bounded.
    pub async fn branch_changes(
        &self,
        project: &str,
        branch: &str,
        base: &str,
        max_files: usize,
        max_bytes: usize,
    ) -> Result<Vec<berth_worktrees::FileChange>> {
        let p = project_name(project)?;
        let (branch, base) = (branch.to_string(), base.to_string());
        self.blocking(move |wt| Ok(wt.branch_changes(&p, &branch, &base, max_files, max_bytes)?))
            .await
    }

    /// Whether the forge's `branch` contains `commit`.
    pub async fn forge_has(&self, project: &Project, branch: &str, commit: &str) -> Result<bool> {
        let p = project_name(&project.name)?;
        let branch = branch.to_string();
        let Ok(oid) = berth_worktrees::Oid::from_str(commit) else {
            return Ok(false);
        };
        self.blocking(move |wt| match wt.forge_has(&p, &branch, oid) {
            Ok(b) => Ok(b),
            Err(berth_worktrees::Error::UnknownBranch { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        })
        .await
    }

    /// Merges forge `branch` into `target`: `Ok(commit)`, or the conflicting paths.
    pub async fn merge(
        &self,
        project: &Project,
        branch: &str,
        target: &str,
        message: &str,
        merger: &str,
    ) -> Result<std::result::Result<String, Vec<String>>> {
        let p = project_name(&project.name)?;
        let identity = parse_identity(merger).ok_or_else(|| EngineError::Invalid {
            what: "git.co_author",
            value: merger.to_string(),
            why: "it must look like `Name <email@host>`".into(),
        })?;
        let request = MergeRequest {
            source: branch.to_string(),
            target: target.to_string(),
            identity,
            message: Some(message.to_string()),
        };
        self.blocking(move |wt| match wt.merge(&p, &request) {
            Ok(o) => Ok(Ok(o.oid.to_string())),
            Err(berth_worktrees::Error::MergeConflict { paths, .. }) => Ok(Err(paths)),
            Err(e) => Err(e.into()),
        })
        .await
    }
}

/// The importing person's git identity (`user.name`/`user.email` of the
/// source repository's configuration, which includes the global one), else
/// `$USER <$USER@localhost>`.
fn default_co_author(source: &Path) -> String {
    let from_git = git2_identity(source);
    from_git.unwrap_or_else(|| {
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "berth-user".into());
        format!("{user} <{user}@localhost>")
    })
}

fn git2_identity(source: &Path) -> Option<String> {
    let repo = git2::Repository::open(source).ok()?;
    let cfg = repo.config().ok()?;
    let name = cfg.get_string("user.name").ok()?;
    let email = cfg.get_string("user.email").ok()?;
    Identity::new(name.trim(), email.trim()).ok()?;
    Some(format!("{} <{}>", name.trim(), email.trim()))
}

impl Engine {
    /// `git_commit`: every change of the agent's worktree, under
    /// `<agent>[bot]`, with the co-author and the action-id trailers. A retry
    /// of the same action finds its earlier commit instead of making another.
    pub(crate) async fn exec_commit(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        config: &ProjectConfig,
    ) -> Result<Outcome> {
        let p = project_name(&record.project)?;
        let a = agent_name(&agent.name)?;
        let request = CommitRequest {
            message: record
                .params
                .message
                .clone()
                .unwrap_or_else(|| format!("Work of {}", agent.identity())),
            action_id: record.id.clone(),
            identity: None,
            co_author: parse_identity(&config.git.co_author),
        };
        let result = self
            .git
            .blocking(move |wt| Ok(wt.commit(&p, &a, &request)))
            .await?;
        match result {
            Ok(c) => Ok(Outcome::ok(ActionResult::GitCommit {
                branch: c.branch,
                commit: c.oid.to_string(),
                created: c.created,
            })),
            Err(e) => Ok(Outcome::failed(e.to_string(), None)),
        }
    }

    /// `git_push`: the agent's own branch to the forge, fast-forward only,
    /// within `[git] max_object_bytes` and `max_push_bytes`.
    pub(crate) async fn exec_push(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        config: &ProjectConfig,
        branch: &str,
    ) -> Result<Outcome> {
        let limits = config.git.limits();
        let p = project_name(&record.project)?;
        let a = agent_name(&agent.name)?;
        let b = branch.to_string();
        // Under a lease this process took, the push carries its token: to a
        // directory forge always, to a forge server from a worker (whose
        // server must run berth's fence hook: `fence.rs` in berth-worktrees).
        let fence = self.git.held_fence(&agent.name);
        let worker = self.worker().is_some();
        let result = self
            .git
            .blocking(move |wt| {
                let fence = fence.filter(|_| {
                    worker || wt.project(&p).is_ok_and(|i| i.location == Forge::Directory)
                });
                Ok(match &fence {
                    Some(f) => wt.push_fenced(&p, &a, &b, &limits, f),
                    None => wt.push_bounded(&p, &a, &b, &limits),
                })
            })
            .await?;
        match result {
            Ok(o) => Ok(Outcome::ok(ActionResult::GitPush {
                branch: branch.to_string(),
                commit: o.oid.to_string(),
            })),
            Err(e) => Ok(Outcome::failed(e.to_string(), None)),
        }
    }
}
