//! Tasks and their statuses: `todo → in_progress → (awaiting_approval ⇄
//! in_progress) → in_review → done | returned`, and `blocked` (the moves
//! between them are `transitions.rs`'s table).
//!
//! Claiming is one guarded move of the task (`… WHERE status IN ('todo')`)
//! checked by the rows it touched, together with a guarded move of the
//! agent (`… WHERE task_id IS NULL AND status IN ('idle')`), in one write
//! transaction: two processes can never both win one task, and an agent
//! never holds two.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms};
use crate::store::Tx;
pub use crate::transitions::TaskStatus;
use crate::transitions::{self, AgentMove, AgentMoved, TaskMove};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub project: String,
    pub title: String,
    pub status: TaskStatus,
    pub agent: Option<String>,
    /// Why it was returned or blocked.
    pub diagnosis: Option<String>,
    /// Its own execution mode; `None`: the project's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ExecutionMode>,
    /// A pipeline task's steps; `None` for an agent task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<PipelineStep>>,
    /// Every step may write `/work`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
    /// The task whose followup generator created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub source: TaskSource,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// When `berth task archive` (or `berth project rm`) archived it: left
    /// out of `berth task ls` unless `--all`, its history kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Task {
    /// Whether it runs steps (a pipeline task) rather than an agent's loop.
    pub fn is_pipeline(&self) -> bool {
        self.steps.is_some()
    }

    /// What kind of work it is, so each worker takes only its own.
    pub fn kind(&self) -> TaskKind {
        if self.steps.is_some() {
            TaskKind::Pipeline
        } else if self.source == TaskSource::Manual {
            TaskKind::Manual
        } else {
            TaskKind::Delivery
        }
    }
}

/// What kind of work a task is; each worker claims only its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// An agent delivers it: commit, push, PR (`berth agent run`).
    Delivery,
    /// Its steps run in a berth (`berth task run`).
    Pipeline,
    /// A person does it by hand (an escalation); no worker claims it.
    Manual,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Delivery => "delivery",
            TaskKind::Pipeline => "pipeline",
            TaskKind::Manual => "manual",
        }
    }
}

/// One step of a pipeline task: a terminal command in the agent's berth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineStep {
    pub command: String,
    /// This step may write `/work` (otherwise it runs read-only, unless the
    /// task asks for write or a permission retry granted it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
}

/// Where a task came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSource {
    /// A person (or a client) created it.
    User,
    /// A followup generator created it; it generates no followups itself.
    Followup,
    /// berth created it for a person to do by hand (an escalation).
    Manual,
}

impl TaskSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSource::User => "user",
            TaskSource::Followup => "followup",
            TaskSource::Manual => "manual",
        }
    }

    fn parse(s: &str) -> Option<TaskSource> {
        match s {
            "user" => Some(TaskSource::User),
            "followup" => Some(TaskSource::Followup),
            "manual" => Some(TaskSource::Manual),
            _ => None,
        }
    }
}

/// What a new task is.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub project: String,
    pub title: String,
    pub execution_mode: Option<ExecutionMode>,
    /// `Some` makes it a pipeline task (at least one step).
    pub steps: Option<Vec<PipelineStep>>,
    pub write: bool,
    pub parent: Option<String>,
    pub source: TaskSource,
    pub tags: Vec<String>,
    /// Set by berth for what it creates itself: a second attempt finds the
    /// first task instead of creating another.
    pub origin_key: Option<String>,
}

impl NewTask {
    /// A plain task for an agent's loop.
    pub fn new(project: &str, title: &str) -> NewTask {
        NewTask {
            project: project.to_string(),
            title: title.to_string(),
            execution_mode: None,
            steps: None,
            write: false,
            parent: None,
            source: TaskSource::User,
            tags: Vec::new(),
            origin_key: None,
        }
    }
}

pub(crate) const TASK_COLUMNS: &str = "id, project, title, status, agent, diagnosis, execution_mode, steps, \
     write_access, parent_task_id, source, tags, archived_at, created_at, updated_at";

pub(crate) fn from_row(r: &sqlx::any::AnyRow) -> Result<Task> {
    let op = "reading a task";
    let status: String = r.try_get("status").map_err(EngineError::store(op))?;
    let mode: Option<String> = r
        .try_get("execution_mode")
        .map_err(EngineError::store(op))?;
    let steps: Option<String> = r.try_get("steps").map_err(EngineError::store(op))?;
    let source: String = r.try_get("source").map_err(EngineError::store(op))?;
    let tags: String = r.try_get("tags").map_err(EngineError::store(op))?;
    let write: i64 = r.try_get("write_access").map_err(EngineError::store(op))?;
    Ok(Task {
        execution_mode: match mode {
            None => None,
            Some(m) => Some(
                ExecutionMode::parse(&m)
                    .ok_or_else(|| EngineError::corrupt(op, format!("execution mode `{m}`")))?,
            ),
        },
        steps: steps
            .map(|j| serde_json::from_str(&j).map_err(|e| EngineError::corrupt(op, e)))
            .transpose()?,
        write: write != 0,
        parent: r
            .try_get("parent_task_id")
            .map_err(EngineError::store(op))?,
        source: TaskSource::parse(&source)
            .ok_or_else(|| EngineError::corrupt(op, format!("task source `{source}`")))?,
        tags: serde_json::from_str(&tags).map_err(|e| EngineError::corrupt(op, e))?,
        id: r.try_get("id").map_err(EngineError::store(op))?,
        project: r.try_get("project").map_err(EngineError::store(op))?,
        title: r.try_get("title").map_err(EngineError::store(op))?,
        status: TaskStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("task status `{status}`")))?,
        agent: r.try_get("agent").map_err(EngineError::store(op))?,
        diagnosis: r.try_get("diagnosis").map_err(EngineError::store(op))?,
        archived_at: r.try_get("archived_at").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

impl Engine {
    pub async fn create_task(&self, project: &str, title: &str, actor: &Actor) -> Result<Task> {
        self.create_task_with(NewTask::new(project, title), actor)
            .await
    }

    /// Creates a task: an agent task, or a pipeline task when it has steps.
    pub async fn create_task_with(&self, new: NewTask, actor: &Actor) -> Result<Task> {
        self.project(&new.project).await?;
        check_new_task(&new)?;
        let mut tx = self.store.write("creating a task").await?;
        let (id, _) = insert_task(&mut tx, &new, actor).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("creating a task"))?;
        if new.steps.is_none() {
            // More claimable work than agents: ask a person about a second one.
            if let Err(e) = self.consider_parallelize(&new.project).await {
                tracing::warn!(project = %new.project, error = %e, "parallelize was not proposed");
            }
        }
        self.task(&id).await
    }

    /// Sets (or with `None` clears) a task's own execution mode.
    pub async fn set_task_mode(
        &self,
        id: &str,
        mode: Option<ExecutionMode>,
        actor: &Actor,
    ) -> Result<Task> {
        let task = self.task(id).await?;
        let mut tx = self.store.write("setting a task's mode").await?;
        sqlx::query("UPDATE tasks SET execution_mode = $1, updated_at = $2 WHERE id = $3")
            .bind(mode.map(ExecutionMode::as_str))
            .bind(now_ms())
            .bind(&task.id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("setting a task's mode"))?;
        emit(
            &mut tx,
            NewEvent::new(kind::TASK_MODE_SET, actor)
                .project(&task.project)
                .task(Some(&task.id))
                .payload(serde_json::json!({
                    "mode": mode.map(ExecutionMode::as_str).unwrap_or("inherit"),
                })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("setting a task's mode"))?;
        self.task(&task.id).await
    }

    pub async fn tasks(&self, project: Option<&str>) -> Result<Vec<Task>> {
        let rows = sqlx::query(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE (CAST($1 AS TEXT) IS NULL OR project = $1) ORDER BY created_at, id"
        ))
        .bind(project)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing tasks"))?;
        rows.iter().map(from_row).collect()
    }

    /// A task by id or unique id prefix.
    pub async fn task(&self, id: &str) -> Result<Task> {
        let full = self
            .resolve_id("tasks", "task", "berth task ls", id)
            .await?;
        let row = sqlx::query(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"))
            .bind(&full)
            .fetch_one(self.store.pool())
            .await
            .map_err(EngineError::store("reading a task"))?;
        from_row(&row)
    }

    /// Claims the oldest `todo` delivery task of the agent's project for the
    /// agent — never a pipeline task (`berth task run` runs those) nor a
    /// manual one (a person's). `None` when there is none, or another process
    /// won every candidate.
    pub async fn claim_task(&self, agent: &str) -> Result<Option<Task>> {
        self.store
            .retrying("claiming a task", || self.claim_task_once(agent))
            .await
    }

    /// [`Engine::claim_task`], one attempt: run again whole when
    /// PostgreSQL aborts it ([`crate::Store::retrying`]).
    async fn claim_task_once(&self, agent: &str) -> Result<Option<Task>> {
        let a = self.agent(agent).await?;
        for _attempt in 0..8 {
            let mut tx = self.store.write("claiming a task").await?;
            // On PostgreSQL the candidate's row is locked as it is read,
            // and rows other claimers hold are passed over: concurrent
            // claimers take different tasks instead of all racing for the
            // oldest. The move below stays conditional either way.
            let skip_locked = tx.backend().for_update_skip_locked();
            let candidate: Option<String> = sqlx::query_scalar(&format!(
                "SELECT id FROM tasks WHERE project = $1 AND status = 'todo' AND archived_at IS NULL \
                 AND steps IS NULL AND source <> 'manual' ORDER BY created_at, id LIMIT 1{skip_locked}",
            ))
            .bind(&a.project)
            .fetch_optional(&mut *tx)
            .await
            .map_err(EngineError::store("claiming a task"))?;
            let Some(task_id) = candidate else {
                return Ok(None);
            };
            let actor = Actor::agent(agent);
            let claimed = NewEvent::new(kind::TASK_CLAIMED, &actor)
                .project(&a.project)
                .agent(agent)
                .task(Some(&task_id));
            let mv = TaskMove::to(TaskStatus::InProgress)
                .only_from(&[TaskStatus::Todo])
                .agent(agent);
            if !transitions::task(&mut tx, &task_id, mv, None)
                .await?
                .moved()
            {
                continue;
            }
            match transitions::agent(&mut tx, agent, AgentMove::claim(&task_id)).await {
                Ok(AgentMoved::Moved) => {}
                // The agent already holds a task (another process claimed
                // for it), or is paused: leave this one to the others.
                Ok(_) | Err(EngineError::IllegalTransition { .. }) => return Ok(None),
                Err(e) => return Err(e),
            }
            // The event last: its lock is the last one a transaction takes.
            emit(&mut tx, claimed).await?;
            tx.commit()
                .await
                .map_err(EngineError::store("claiming a task"))?;
            return Ok(Some(self.task(&task_id).await?));
        }
        Ok(None)
    }

    /// Resolves an id or a unique prefix of one (at least 4 characters) in `table`.
    pub(crate) async fn resolve_id(
        &self,
        table: &'static str,
        what: &'static str,
        list: &'static str,
        id: &str,
    ) -> Result<String> {
        let unknown = || EngineError::UnknownId {
            what,
            id: id.to_string(),
            list,
        };
        if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(unknown());
        }
        // A prefix range instead of LIKE, so the primary key's index serves it.
        let low = id.to_ascii_lowercase();
        let high = format!("{low}g");
        let ids: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT id FROM {table} WHERE id >= $1 AND id < $2 ORDER BY id LIMIT 2"
        ))
        .bind(&low)
        .bind(&high)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("looking up an id"))?;
        match ids.len() {
            0 => Err(unknown()),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            n => Err(EngineError::AmbiguousId {
                what,
                id: id.to_string(),
                count: n,
            }),
        }
    }
}

fn check_new_task(new: &NewTask) -> Result<()> {
    if new.title.trim().is_empty() {
        return Err(EngineError::Invalid {
            what: "task title",
            value: new.title.clone(),
            why: "give the task a title".into(),
        });
    }
    if let Some(steps) = &new.steps {
        if steps.is_empty() {
            return Err(EngineError::Invalid {
                what: "pipeline",
                value: String::new(),
                why: "a pipeline task needs at least one step (`--step 'CMD'`)".into(),
            });
        }
        if let Some(s) = steps.iter().find(|s| s.command.trim().is_empty()) {
            return Err(EngineError::Invalid {
                what: "step",
                value: s.command.clone(),
                why: "a step is a command line; this one is empty".into(),
            });
        }
    } else if new.write {
        return Err(EngineError::Invalid {
            what: "task",
            value: new.title.clone(),
            why: "`--write` applies to pipeline steps: give at least one `--step 'CMD'`".into(),
        });
    }
    Ok(())
}

/// Inserts a task in `tx` (`task.created`). With an origin key already used,
/// returns the existing task's id and `false`, and records nothing.
pub(crate) async fn insert_task(
    tx: &mut Tx,
    new: &NewTask,
    actor: &Actor,
) -> Result<(String, bool)> {
    check_new_task(new)?;
    let op = "creating a task";
    if let Some(key) = &new.origin_key {
        let existing: Option<String> =
            sqlx::query_scalar("SELECT id FROM tasks WHERE origin_key = $1")
                .bind(key)
                .fetch_optional(&mut **tx)
                .await
                .map_err(EngineError::store(op))?;
        if let Some(id) = existing {
            return Ok((id, false));
        }
    }
    let id = new_id();
    let now = now_ms();
    let steps = new
        .steps
        .as_ref()
        .map(|s| serde_json::to_string(s).map_err(|e| EngineError::corrupt(op, e)))
        .transpose()?;
    let tags = serde_json::to_string(&new.tags).map_err(|e| EngineError::corrupt(op, e))?;
    sqlx::query(
        "INSERT INTO tasks (id, project, title, status, execution_mode, steps, write_access, parent_task_id, \
         source, tags, origin_key, created_at, updated_at) \
         VALUES ($1, $2, $3, 'todo', $4, $5, $6, $7, $8, $9, $10, $11, $11)",
    )
    .bind(&id)
    .bind(&new.project)
    .bind(&new.title)
    .bind(new.execution_mode.map(ExecutionMode::as_str))
    .bind(steps)
    .bind(i64::from(new.write))
    .bind(new.parent.as_deref())
    .bind(new.source.as_str())
    .bind(tags)
    .bind(new.origin_key.as_deref())
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    emit(
        tx,
        NewEvent::new(kind::TASK_CREATED, actor)
            .project(&new.project)
            .task(Some(&id))
            .payload(serde_json::json!({
                "title": new.title,
                "mode": new.execution_mode.map(ExecutionMode::as_str),
                "steps": new.steps.as_ref().map(Vec::len),
                "write": new.write,
                "parent": new.parent,
                "source": new.source.as_str(),
                "tags": new.tags,
            })),
    )
    .await?;
    Ok((id, true))
}
