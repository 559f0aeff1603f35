//! Berths: an agent's worktree and the sandbox its commands run in.
//!
//! The engine knows sandboxes only through the sandbox crate's
//! [`SandboxProvider`]: it builds a berth's spec once from the project's
//! settings ([`spec`]) and never asks which backend it holds. The local
//! provider opens the runner (processes on the host inside the worktree —
//! no container boundary) and answers "not available" for mounted mode; the
//! Docker provider opens both. A berth is durable in the
//! store (mode, worktree, branch), so any process can reopen it: the one that
//! approves an action is rarely the one that proposed it.
//!
//! In mounted mode the agent's repository and worktree belong to the
//! container's uid (chowned when provisioned, also when berth runs as root);
//! the engine's git2 keeps working on them because the worktrees crate turns
//! libgit2's owner check off for repositories it finds through its layout.

mod down;
mod reconcile;
mod spec;
mod up;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use berth_policy::{Action, Decision, Finding, Stage, Verdict};
use berth_sandbox::host_scope::judged_paths;
use berth_sandbox::{FileOp, Sandbox};
use serde::Serialize;

use crate::agents::Agent;
use crate::config::{BerthMode, ProjectConfig};
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::{AgentName, Engine, ProjectName};

pub use crate::agents::branch_for;
pub use berth_sandbox::provider::{
    BerthSpec, DockerProvider, LocalProvider, OpenedSandbox, OrphanContainer, ReconciledContainer,
    SandboxProvider, ci_requires_docker, instance_of,
};
pub(crate) use spec::OpenAs;
pub use spec::runner_frame;
pub use up::UpOptions;

/// The host-side checks of a decided action, which only ever tighten it.
///
/// A file action whose path leads out of the mount it is written under
/// through a link is refused: `decision` becomes a deny whose reason names
/// the link and where it leads (no approval makes berth follow it; execution
/// is confined anyway). An auto-approved action whose judged paths leave the
/// scope through a symlink on the host (runner) waits for a person: the
/// returned hold reason.
pub(crate) fn host_check(
    sandbox: &dyn Sandbox,
    action: &Action,
    decision: &mut Decision,
    cwd: &str,
) -> Option<String> {
    if let Some((path, op)) = file_target(action) {
        // The file check is the whole host check of a file action: its
        // execution is confined, whatever changes meanwhile.
        if decision.verdict == Verdict::Deny {
            return None;
        }
        let refusal = sandbox.check_file_path(&berth_policy::scope::normalize(cwd, path), op)?;
        let reason = refusal.to_string();
        decision.verdict = Verdict::Deny;
        decision.stage = Stage::Scope;
        decision.reason = reason.clone();
        decision.findings.push(Finding {
            stage: Stage::Scope,
            verdict: Verdict::Deny,
            reason,
            segment: None,
        });
        return None;
    }
    if decision.verdict != Verdict::AutoApprove {
        return None;
    }
    let findings = sandbox.check_host_paths(&judged_paths(decision, cwd));
    if findings.is_empty() {
        None
    } else {
        Some(
            findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// A file action's path and what it does to it.
fn file_target(action: &Action) -> Option<(&String, FileOp)> {
    match action {
        Action::FileRead { path } => Some((path, FileOp::Read)),
        Action::FileWrite { path } => Some((path, FileOp::Write)),
        _ => None,
    }
}

/// Where a file action's path leads on the host now — its links followed
/// within its mount, never out of it — for the person who decides on it;
/// where it leads instead when that is off its mount. `None` for an action
/// that is not a file action.
pub(crate) fn file_host_path(sandbox: &dyn Sandbox, action: &Action, cwd: &str) -> Option<String> {
    let (path, _) = file_target(action)?;
    let frame_path = berth_policy::scope::normalize(cwd, path);
    Some(match sandbox.files().host_path(&frame_path) {
        Ok(host) => host.to_string_lossy().into_owned(),
        Err(why) => why,
    })
}

/// A berth as `berth ls` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct BerthInfo {
    pub agent: String,
    pub project: String,
    #[serde(rename = "impl")]
    pub implementation: crate::agents::AgentImpl,
    pub status: crate::agents::AgentStatus,
    pub mode: Option<BerthMode>,
    /// The name of its Docker container while it is up in mounted mode.
    pub container: Option<String>,
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
    pub task: Option<String>,
    /// What a person should know about this berth's isolation.
    pub note: Option<String>,
    /// Work `down` saved into the forge before recycling the worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<SavedRef>,
    /// `up`: the project's devcontainer.json post commands, each a proposed
    /// action of the agent (executed, pending for a person, or refused).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devcontainer: Vec<crate::devcontainer::PostRun>,
}

/// Work saved into the forge before a worktree was recycled, and how to get
/// it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedRef {
    /// The forge's ref (`refs/berth/saved/<agent>/<stamp>`).
    pub refname: String,
    /// The commit it holds.
    pub commit: String,
    /// The forge (a bare repository).
    pub forge: PathBuf,
    /// Whether uncommitted changes were committed into it.
    pub committed_changes: bool,
}

/// One saved ref in a forge (`berth saved ls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedEntry {
    pub project: String,
    pub refname: String,
    pub commit: String,
    pub forge: PathBuf,
}

impl SavedRef {
    /// The command that fetches it into a repository of one's own.
    pub fn fetch_command(&self) -> String {
        let local = self.refname.trim_start_matches("refs/");
        format!(
            "git fetch {} {}:refs/{local}",
            self.forge.display(),
            self.refname
        )
    }
}

impl BerthInfo {
    /// `instance`: this state directory's ([`instance_of`]), which names
    /// its containers.
    fn of(a: &Agent, instance: &str) -> BerthInfo {
        BerthInfo {
            agent: a.name.clone(),
            project: a.project.clone(),
            implementation: a.implementation,
            status: a.status,
            mode: a.berth,
            container: (a.berth == Some(BerthMode::Mounted)).then(|| {
                berth_sandbox::docker::spec::container_name_in(instance, &a.project, &a.name)
            }),
            worktree: a.worktree.clone(),
            branch: a.branch.clone(),
            task: a.task.clone(),
            note: (a.berth == Some(BerthMode::Runner)).then(crate::confinement::runner_note),
            saved: None,
            devcontainer: Vec::new(),
        }
    }
}

/// Sandboxes opened by this process, by agent and worktree.
#[derive(Default)]
pub(crate) struct SandboxCache {
    open: Mutex<HashMap<(String, PathBuf), Arc<dyn Sandbox>>>,
}

impl SandboxCache {
    fn get(&self, key: &(String, PathBuf)) -> Option<Arc<dyn Sandbox>> {
        self.open.lock().ok().and_then(|m| m.get(key).cloned())
    }
    fn put(&self, key: (String, PathBuf), sb: Arc<dyn Sandbox>) {
        if let Ok(mut m) = self.open.lock() {
            m.insert(key, sb);
        }
    }
    pub(crate) fn drop_agent(&self, agent: &str) {
        if let Ok(mut m) = self.open.lock() {
            m.retain(|(a, _), _| a != agent);
        }
    }
}

impl Engine {
    /// The agent's sandbox when its berth is up; `NoBerth` when `required`
    /// and it is down.
    pub(crate) async fn sandbox_for(
        &self,
        agent: &Agent,
        config: &ProjectConfig,
        required: bool,
    ) -> Result<Option<Arc<dyn Sandbox>>> {
        let (Some(mode), Some(worktree)) = (agent.berth, agent.worktree.clone()) else {
            return if required {
                Err(EngineError::NoBerth {
                    agent: agent.name.clone(),
                    project: agent.project.clone(),
                })
            } else {
                Ok(None)
            };
        };
        let key = (agent.name.clone(), worktree.clone());
        if let Some(sb) = self.sandboxes.get(&key) {
            return Ok(Some(sb));
        }
        let open_as = OpenAs {
            uid: self.uid_for_open(agent, mode, config).await?,
            claim_home: false,
        };
        let spec = self.berth_spec(agent, mode, worktree, config, open_as);
        let sandbox = self.provider.attach(&spec).await?;
        self.sandboxes.put(key, sandbox.clone());
        Ok(Some(sandbox))
    }

    /// The work saved before recycles, in every project's forge (or
    /// `project`'s): the project, the ref and its commit.
    pub async fn saved_work(&self, project: Option<&str>) -> Result<Vec<SavedEntry>> {
        let mut out = Vec::new();
        for p in self.projects().await? {
            if project.is_some_and(|want| want != p.name) {
                continue;
            }
            for (refname, commit) in self.git().saved(&p.name).await? {
                out.push(SavedEntry {
                    project: p.name.clone(),
                    refname,
                    commit,
                    forge: p.forge.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Drops one saved ref from `project`'s forge; false when there was none.
    pub async fn drop_saved_work(&self, project: &str, refname: &str) -> Result<bool> {
        let loaded = self.load_project(project).await?;
        self.git().drop_saved(&loaded.project.name, refname).await
    }

    /// Every agent and its berth.
    pub async fn berths(&self) -> Result<Vec<BerthInfo>> {
        let instance = instance_of(self.state.root());
        Ok(self
            .agents()
            .await?
            .iter()
            .map(|a| BerthInfo::of(a, &instance))
            .collect())
    }
}
