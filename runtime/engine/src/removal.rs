//! Removal: `berth agent rm`, `berth project rm`, `berth task archive|rm`.
//!
//! Nothing the agent made is thrown away: an agent's berth is taken down
//! through `down` (its container, execs, worktree and disk go as they do
//! there), which first saves uncommitted work and an unpushed tip into the
//! forge under `refs/berth/saved/<agent>/<time>` unless `discard`. A project
//! is removed only when its forge holds no saved work, or with `discard`:
//! the saved refs live in the forge that goes with it.
//!
//! A removed project's directories go with it: its berths' disks and
//! identities, and its sessions' directories (the output of its agents'
//! turns; the events keep their tails).
//!
//! Rows that history needs stay: the event log is the audit trail, and
//! actions, PRs and events name agents, tasks and projects. A removed agent
//! is a status (`removed`, revived by `berth agent activate`), a removed
//! project a time (`removed_at`, revived by `berth project add`), an
//! archived task a time (`archived_at`). Only a task that never started
//! (no action, run, PR, choice or followup names it) is deleted.

use serde::Serialize;

use crate::Engine;
use crate::agents::{Agent, AgentStatus};
use crate::berths::SavedRef;
use crate::config::BerthMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{now_ms, short};
use crate::projects::Project;
use crate::store::StoreLock;
use crate::tasks::{Task, TaskStatus};
use crate::transitions::{self, AgentMove, AgentMoved};

/// What `berth agent rm` did.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRemoval {
    pub agent: String,
    pub project: String,
    /// The work saved into the forge before its worktree went; `None` when
    /// nothing needed saving or with `discard`.
    pub saved: Option<SavedRef>,
    /// Whether its work was discarded rather than saved.
    pub discarded: bool,
    /// The container removed with its berth (mounted mode).
    pub container: Option<String>,
    /// Its actions that were pending, now denied by berth.
    pub denied: Vec<String>,
    /// Tasks it was assigned that no longer name it (todo, returned,
    /// blocked): any agent can take them now.
    pub unassigned: Vec<String>,
}

/// What `berth project rm` did.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectRemoval {
    pub project: String,
    pub agents: Vec<AgentRemoval>,
    /// The forge that was removed.
    pub forge: std::path::PathBuf,
    /// Its tasks, archived with it.
    pub archived: Vec<String>,
    pub discarded: bool,
}

/// The statuses of a task that has ended: archived, never run again on its
/// own (`returned` and `blocked` run again only when a person says so).
const ENDED: [TaskStatus; 3] = [TaskStatus::Done, TaskStatus::Returned, TaskStatus::Blocked];

impl Engine {
    /// Removes agent `name` (in `project` when given): refuses while it
    /// holds a task, has an action executing or a pipeline running in its
    /// berth. First the agent is recorded `removed` (nothing claims, brings
    /// up or proposes as it from then on), its autonomy dropped and its
    /// todo, returned and blocked tasks unassigned; its pending actions are
    /// denied by berth. Then its berth is taken down as `down` does (its
    /// work saved into the forge unless `discard`) and its repositories,
    /// berth directory, identity files, disk and uid go (`agent.removed`).
    /// When that cleanup fails, the agent stays removed with what is left,
    /// and `remove_agent` again takes the cleanup up where it stopped.
    pub async fn remove_agent(
        &self,
        name: &str,
        project: Option<&str>,
        discard: bool,
        actor: &Actor,
    ) -> Result<AgentRemoval> {
        let a = self.agent_record(name).await?;
        if let Some(p) = project.filter(|p| *p != a.project) {
            return Err(EngineError::WrongProject {
                agent: a.name,
                actual: a.project,
                requested: p.to_string(),
            });
        }
        let unassigned = if a.status == AgentStatus::Removed {
            if !self.removal_left_over(&a).await? {
                return Err(EngineError::AgentRemoved {
                    agent: a.name,
                    project: a.project,
                });
            }
            Vec::new()
        } else {
            if let Some(why) = self.removal_blocker(&a).await? {
                return Err(EngineError::RemovalRefused { why });
            }
            self.record_removed(&a).await?
        };
        let system = Actor::system();
        let pending: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM proposed_actions WHERE agent = $1 AND status = 'pending' ORDER BY created_at",
        )
        .bind(&a.name)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("removing an agent"))?;
        let mut denied = Vec::new();
        for id in pending {
            match self
                .deny(
                    &id,
                    &system,
                    Some("its agent was removed (`berth agent rm`)"),
                )
                .await
            {
                Ok(_) => denied.push(id),
                // Decided meanwhile by someone else: nothing left to close.
                Err(EngineError::NotPending { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let container = (a.berth == Some(BerthMode::Mounted)).then(|| {
            berth_sandbox::docker::spec::container_name_in(
                &berth_sandbox::provider::instance_of(self.state.root()),
                &a.project,
                &a.name,
            )
        });
        let saved = self.clear_berth(&a, discard, actor).await?;

        let op = "removing an agent";
        let mut tx = self.store.write(op).await?;
        sqlx::query(
            "UPDATE agents SET berth_mode = NULL, worktree = NULL, branch = NULL, uid = NULL, \
             consecutive_failures = 0, updated_at = $1 WHERE name = $2",
        )
        .bind(now_ms())
        .bind(&a.name)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_REMOVED, actor)
                .project(&a.project)
                .agent(&a.name)
                .payload(serde_json::json!({
                    "saved": saved.as_ref().map(|s| &s.refname),
                    "discarded": discard,
                    "container": container,
                    "denied": denied,
                    "unassigned": unassigned,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(AgentRemoval {
            agent: a.name,
            project: a.project,
            saved,
            discarded: discard,
            container,
            denied,
            unassigned,
        })
    }

    /// The first step of a removal, in one transaction: the agent moves to
    /// `removed` (guarded: one that took a task meanwhile is not), its
    /// autonomy goes and its tasks no longer name it. Returns those tasks.
    async fn record_removed(&self, a: &Agent) -> Result<Vec<String>> {
        let op = "removing an agent";
        let mut tx = self.store.write(op).await?;
        match transitions::agent(&mut tx, &a.name, AgentMove::remove()).await? {
            AgentMoved::Moved | AgentMoved::Already => {}
            AgentMoved::NotHolding | AgentMoved::Paused => {
                return Err(EngineError::RemovalRefused {
                    why: format!(
                        "agent `{}` took a task while it was being removed: nothing was removed; resolve the task, then remove it",
                        a.name
                    ),
                });
            }
        }
        let unassigned: Vec<String> = sqlx::query_scalar(
            "UPDATE tasks SET agent = NULL, updated_at = $1 \
             WHERE agent = $2 AND status IN ('todo', 'returned', 'blocked') RETURNING id",
        )
        .bind(now_ms())
        .bind(&a.name)
        .fetch_all(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        sqlx::query("DELETE FROM autonomy WHERE agent = $1")
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(unassigned)
    }

    /// Takes a removed agent's berth down as `down` does — its container
    /// and execs, then its work saved (unless `discard`) and its worktree
    /// recycled — and removes its disk, repositories, berth directory and
    /// identity files. Every step is idempotent. Returns what was saved.
    async fn clear_berth(
        &self,
        a: &Agent,
        discard: bool,
        actor: &Actor,
    ) -> Result<Option<SavedRef>> {
        let loaded = self.load_project(&a.project).await?;
        self.close_berth(a, &loaded.config, false, actor).await?;
        let saved = match self
            .recycle_after_down(a, &loaded.project, None, discard)
            .await
        {
            Ok(saved) => saved,
            Err(EngineError::SaveFailed { source, .. }) => {
                return Err(EngineError::RemovalRefused {
                    why: format!(
                        "could not save what `{}`'s worktree holds that the forge does not: {source}; the agent is removed but its worktree is kept. Fix that and run `berth agent rm {}` again, or `berth agent rm {} --discard` to remove it without saving",
                        a.name, a.name, a.name
                    ),
                });
            }
            Err(e) => return Err(e),
        };
        // `down` released the disk; again here, failing now rather than
        // leaving a mount under a directory about to go.
        self.release_disk(&a.project, &a.name).await?;
        self.git().remove_agent(&a.project, &a.name).await?;
        let identities = self.identity_dir(a);
        let rel = std::path::PathBuf::from(&a.name);
        let parent = identities
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        tokio::task::spawn_blocking(move || berth_worktrees::remove_beneath(&parent, &rel))
            .await
            .map_err(EngineError::interrupted(
                "removing the agent's identity files",
            ))?
            .map_err(EngineError::io("removing", &identities))?;
        Ok(saved)
    }

    /// `<state>/identities/<project>/<agent>`: the container's passwd and
    /// group files.
    fn identity_dir(&self, a: &Agent) -> std::path::PathBuf {
        self.state
            .root()
            .join("identities")
            .join(&a.project)
            .join(&a.name)
    }

    /// Whether a removed agent's cleanup stopped half-way: a berth, a
    /// worktree or a uid still recorded, or its directories still there.
    async fn removal_left_over(&self, a: &Agent) -> Result<bool> {
        let uid: Option<i64> = sqlx::query_scalar("SELECT uid FROM agents WHERE name = $1")
            .bind(&a.name)
            .fetch_one(self.store.pool())
            .await
            .map_err(EngineError::store("reading a removed agent"))?;
        Ok(a.berth.is_some()
            || a.worktree.is_some()
            || uid.is_some()
            || crate::berth_disk::berth_dir(self.state.root(), &a.project, &a.name).exists()
            || self.identity_dir(a).exists())
    }

    /// Why `a` cannot be removed now, with what to do; `None` when it can.
    async fn removal_blocker(&self, a: &Agent) -> Result<Option<String>> {
        let op = "checking an agent's work";
        if let Some(task) = &a.task {
            return Ok(Some(format!(
                "agent `{}` holds task {} ({}): its worktree and branch must outlive the task; resolve it first (`berth task show {}`: approve or reject it, merge or close its PR, deny its pending action), then remove the agent",
                a.name,
                short(task),
                a.status.as_str(),
                short(task),
            )));
        }
        if !a.status.can_be_removed() {
            return Ok(Some(format!(
                "agent `{}` is {}: only an idle or paused agent is removed",
                a.name,
                a.status.as_str()
            )));
        }
        // An approved action waits for the worker holding the agent to run
        // it (`actions/route.rs`): the person's decision is kept, not
        // dropped with the agent.
        let executing: Option<(String, String)> = sqlx::query_as(
            "SELECT id, status FROM proposed_actions WHERE agent = $1 AND status IN ('executing', 'approved') \
             ORDER BY status DESC LIMIT 1",
        )
        .bind(&a.name)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store(op))?;
        if let Some((id, status)) = executing {
            let what = if status == "approved" {
                "approved, waiting for the worker holding the agent to run it"
            } else {
                "executing in its berth"
            };
            return Ok(Some(format!(
                "agent `{}` has action {} {what}: let it end (`berth actions --agent {}`), then remove the agent",
                a.name,
                short(&id),
                a.name
            )));
        }
        let run: Option<(String, String)> = sqlx::query_as(
            "SELECT task_id, state FROM pipeline_runs WHERE agent = $1 AND state IN ('running', 'waiting') LIMIT 1",
        )
        .bind(&a.name)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store(op))?;
        if let Some((task, state)) = run {
            return Ok(Some(format!(
                "pipeline task {} is {state} in agent `{}`'s berth: let it end (`berth task run {}`) or resolve its waiting step, then remove the agent",
                short(&task),
                a.name,
                short(&task)
            )));
        }
        Ok(None)
    }

    /// Removes project `name`: every agent as [`Engine::remove_agent`]
    /// does, then its forge and state directories; its tasks are archived
    /// and its row marked removed (`project.removed`). Without `discard`,
    /// refuses while its forge holds saved work (before anything, and again
    /// after its agents' work was saved): that work would go with the forge.
    /// The source repository it was imported from is never touched.
    pub async fn remove_project(
        &self,
        name: &str,
        discard: bool,
        actor: &Actor,
    ) -> Result<ProjectRemoval> {
        let project = self.project(name).await?;
        let agents: Vec<Agent> = self
            .agents()
            .await?
            .into_iter()
            .filter(|a| a.project == project.name)
            .collect();
        let mut blockers = Vec::new();
        for a in &agents {
            if let Some(why) = self.removal_blocker(a).await? {
                blockers.push(why);
            }
        }
        if !blockers.is_empty() {
            return Err(EngineError::RemovalRefused {
                why: format!(
                    "project `{name}` is not removed, nothing was: {}",
                    blockers.join("; ")
                ),
            });
        }
        if !discard {
            self.refuse_saved_work(name, "nothing was removed").await?;
        }
        // Its agents, and those whose removal stopped half-way.
        let mut names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
        let removed_rows: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM agents WHERE project = $1 AND status = 'removed' ORDER BY name",
        )
        .bind(name)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("removing a project"))?;
        for n in removed_rows {
            if self
                .removal_left_over(&self.agent_record(&n).await?)
                .await?
            {
                names.push(n);
            }
        }
        let mut removed = Vec::new();
        for a in &names {
            removed.push(self.remove_agent(a, Some(name), discard, actor).await?);
        }
        if !discard {
            self.refuse_saved_work(
                name,
                "its agents were removed and what they left is saved there",
            )
            .await?;
        }
        self.git().remove_project(name).await?;
        // Its sessions' directories (the output of its agents' turns) go
        // with its other directories; the sessions' rows stay, as history.
        let sessions: Vec<String> =
            sqlx::query_scalar("SELECT id FROM agent_sessions WHERE project = $1")
                .bind(name)
                .fetch_all(self.store.pool())
                .await
                .map_err(EngineError::store("removing a project"))?;
        let root = self.state.root().to_path_buf();
        let sessions_dir = self.state.sessions_dir();
        let project_name = project.name.clone();
        tokio::task::spawn_blocking(move || {
            for dir in ["identities", "disks"] {
                berth_worktrees::remove_beneath(
                    &root.join(dir),
                    std::path::Path::new(&project_name),
                )?;
            }
            for id in &sessions {
                berth_worktrees::remove_beneath(&sessions_dir, std::path::Path::new(id))?;
            }
            Ok::<(), std::io::Error>(())
        })
        .await
        .map_err(EngineError::interrupted(
            "removing the project's directories",
        ))?
        .map_err(EngineError::io(
            "removing the directories of",
            self.state.root(),
        ))?;

        let names: Vec<&str> = removed.iter().map(|r| r.agent.as_str()).collect();
        let archived = self
            .store
            .retrying("removing a project", || {
                self.archive_project_rows(&project, &names, discard, actor)
            })
            .await?;
        Ok(ProjectRemoval {
            project: project.name,
            agents: removed,
            forge: project.forge,
            archived,
            discarded: discard,
        })
    }

    /// The store's part of removing a project, in one write transaction
    /// (run again whole when PostgreSQL aborts it: [`crate::Store::retrying`]):
    /// its tasks archived and their prompts purged, the project marked
    /// removed, `project.removed`. Returns the tasks it archived.
    async fn archive_project_rows(
        &self,
        project: &Project,
        names: &[&str],
        discard: bool,
        actor: &Actor,
    ) -> Result<Vec<String>> {
        let name = project.name.as_str();
        let op = "removing a project";
        let mut tx = self.store.write(op).await?;
        // Before any row: a prompt's reservation in the project takes the
        // same lock first, so the two never hold each other's rows.
        tx.lock(StoreLock::Project(name)).await?;
        let archived: Vec<String> = sqlx::query_scalar(
            "UPDATE tasks SET archived_at = $1, updated_at = $1 \
             WHERE project = $2 AND archived_at IS NULL RETURNING id",
        )
        .bind(now_ms())
        .bind(name)
        .fetch_all(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        for task in &archived {
            crate::prompts::purge_task(&mut tx, task, name, actor, "its project was removed")
                .await?;
        }
        sqlx::query("UPDATE projects SET removed_at = $1 WHERE name = $2 AND removed_at IS NULL")
            .bind(now_ms())
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
        emit(
            &mut tx,
            NewEvent::new(kind::PROJECT_REMOVED, actor)
                .project(name)
                .payload(serde_json::json!({
                    "forge": project.forge,
                    "source": project.source,
                    "agents": names,
                    "archived": archived,
                    "discarded": discard,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(archived)
    }

    /// Refuses when `project`'s forge holds saved work, saying how to keep
    /// it or drop it.
    async fn refuse_saved_work(&self, project: &str, done: &str) -> Result<()> {
        let saved = self.saved_work(Some(project)).await?;
        let Some(first) = saved.first() else {
            return Ok(());
        };
        let refs: Vec<&str> = saved.iter().map(|s| s.refname.as_str()).collect();
        Err(EngineError::RemovalRefused {
            why: format!(
                "project `{project}`'s forge holds saved work ({}), which removing the forge would lose; {done}. \
             Keep what you want with `git fetch {} {}:{}` (one per ref; `berth saved ls --project {project}` lists them), \
             drop each with `berth saved drop {project} REF`, or remove the project with `--discard`",
                refs.join(", "),
                first.forge.display(),
                first.refname,
                first.refname,
            ),
        })
    }

    /// Archives task `id`, which has ended (done, returned or blocked) and
    /// no agent holds: it leaves `berth task ls` (still there with `--all`),
    /// its history stays (`task.archived`). Archiving it again changes nothing.
    pub async fn archive_task(&self, id: &str, actor: &Actor) -> Result<Task> {
        self.store
            .retrying("archiving a task", || self.archive_task_once(id, actor))
            .await
    }

    /// [`Engine::archive_task`], one attempt.
    async fn archive_task_once(&self, id: &str, actor: &Actor) -> Result<Task> {
        let t = self.task(id).await?;
        if t.archived_at.is_some() {
            return Ok(t);
        }
        if !ENDED.contains(&t.status) {
            let what = if t.status == TaskStatus::Todo {
                format!(
                    "it never started: `berth task rm {}` removes it",
                    short(&t.id)
                )
            } else {
                "it is being worked on: it ends first (done, returned or blocked)".to_string()
            };
            return Err(EngineError::RemovalRefused {
                why: format!(
                    "task {} is {}: only an ended task (done, returned, blocked) is archived; {what}",
                    short(&t.id),
                    t.status.as_str()
                ),
            });
        }
        let op = "archiving a task";
        let mut tx = self.store.write(op).await?;
        // Before any row: a prompt's reservation takes the project's lock
        // first too, then the task's session and prompt rows, which the
        // purge below updates in the other order; without it the two
        // deadlocked on PostgreSQL (issue 23).
        tx.lock(StoreLock::Project(&t.project)).await?;
        let held: Option<String> =
            sqlx::query_scalar("SELECT name FROM agents WHERE task_id = $1 LIMIT 1")
                .bind(&t.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(EngineError::store(op))?;
        if let Some(agent) = held {
            return Err(EngineError::RemovalRefused {
                why: format!(
                    "task {} is held by agent `{agent}`: it is archived once it leaves the agent",
                    short(&t.id)
                ),
            });
        }
        let statuses: Vec<String> = ENDED.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let n = sqlx::query(&format!(
            "UPDATE tasks SET archived_at = $1, updated_at = $1 WHERE id = $2 AND archived_at IS NULL \
             AND status IN ({})",
            statuses.join(", ")
        ))
        .bind(now_ms())
        .bind(&t.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if n == 1 {
            crate::prompts::purge_task(&mut tx, &t.id, &t.project, actor, "the task was archived")
                .await?;
            emit(
                &mut tx,
                NewEvent::new(kind::TASK_ARCHIVED, actor)
                    .project(&t.project)
                    .task(Some(&t.id))
                    .payload(serde_json::json!({ "status": t.status.as_str() })),
            )
            .await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        self.task(&t.id).await
    }

    /// Deletes task `id`, which never started: `todo`, and nothing names it
    /// (no action, pipeline run, PR, choice or followup). Any other task is
    /// refused with the way to archive it. Its events stay in the log, with
    /// `task.removed` after them. Returns the task as it was.
    pub async fn remove_task(&self, id: &str, actor: &Actor) -> Result<Task> {
        self.store
            .retrying("removing a task", || self.remove_task_once(id, actor))
            .await
    }

    /// [`Engine::remove_task`], one attempt.
    async fn remove_task_once(&self, id: &str, actor: &Actor) -> Result<Task> {
        let t = self.task(id).await?;
        let archive = |why: String| EngineError::RemovalRefused {
            why: format!(
                "task {} {why}: its history stays; `berth task archive {}` hides it from `berth task ls`{}",
                short(&t.id),
                short(&t.id),
                if ENDED.contains(&t.status) {
                    ""
                } else {
                    " once it has ended"
                }
            ),
        };
        if t.status != TaskStatus::Todo {
            return Err(archive(format!("is {}", t.status.as_str())));
        }
        let op = "removing a task";
        let mut tx = self.store.write(op).await?;
        // Its prompts are purged below: the project's lock first, as a
        // prompt's reservation takes it ([`Engine::archive_task`]).
        tx.lock(StoreLock::Project(&t.project)).await?;
        for (table, column, what) in [
            ("proposed_actions", "task_id", "actions"),
            ("pipeline_runs", "task_id", "a pipeline run"),
            ("prs", "task_id", "a PR"),
            ("pending_choices", "task_id", "choices"),
            ("tasks", "parent_task_id", "followups"),
        ] {
            let n: i64 =
                sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = $1"))
                    .bind(&t.id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(EngineError::store(op))?;
            if n > 0 {
                return Err(archive(format!("has {what}")));
            }
        }
        let n = sqlx::query("DELETE FROM tasks WHERE id = $1 AND status = 'todo'")
            .bind(&t.id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?
            .rows_affected();
        if n != 1 {
            return Err(archive("started meanwhile".into()));
        }
        crate::prompts::purge_task(&mut tx, &t.id, &t.project, actor, "the task was deleted")
            .await?;
        emit(
            &mut tx,
            NewEvent::new(kind::TASK_REMOVED, actor)
                .project(&t.project)
                .task(Some(&t.id))
                .payload(serde_json::json!({ "title": t.title })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(t)
    }
}
