//! Tasks and their statuses: `todo → in_progress → (awaiting_approval ⇄
//! in_progress) → in_review → done | returned`, and `blocked`.
//!
//! Claiming is one conditional UPDATE (`… WHERE status = 'todo'`) checked by
//! the rows it touched, together with a conditional UPDATE of the agent
//! (`… WHERE task_id IS NULL`), in one write transaction: two processes can
//! never both win one task, and an agent never holds two.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms};
use crate::store::Tx;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Todo,
    InProgress,
    AwaitingApproval,
    InReview,
    Done,
    Returned,
    Blocked,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Todo => "todo",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::AwaitingApproval => "awaiting_approval",
            TaskStatus::InReview => "in_review",
            TaskStatus::Done => "done",
            TaskStatus::Returned => "returned",
            TaskStatus::Blocked => "blocked",
        }
    }

    pub fn parse(s: &str) -> Option<TaskStatus> {
        Some(match s {
            "todo" => TaskStatus::Todo,
            "in_progress" => TaskStatus::InProgress,
            "awaiting_approval" => TaskStatus::AwaitingApproval,
            "in_review" => TaskStatus::InReview,
            "done" => TaskStatus::Done,
            "returned" => TaskStatus::Returned,
            "blocked" => TaskStatus::Blocked,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub project: String,
    pub title: String,
    pub status: TaskStatus,
    pub agent: Option<String>,
    /// Why it was returned or blocked.
    pub diagnosis: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const TASK_COLUMNS: &str = "id, project, title, status, agent, diagnosis, created_at, updated_at";

fn from_row(r: &sqlx::sqlite::SqliteRow) -> Result<Task> {
    let op = "reading a task";
    let status: String = r.try_get("status").map_err(EngineError::store(op))?;
    Ok(Task {
        id: r.try_get("id").map_err(EngineError::store(op))?,
        project: r.try_get("project").map_err(EngineError::store(op))?,
        title: r.try_get("title").map_err(EngineError::store(op))?,
        status: TaskStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("task status `{status}`")))?,
        agent: r.try_get("agent").map_err(EngineError::store(op))?,
        diagnosis: r.try_get("diagnosis").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

impl Engine {
    pub async fn create_task(&self, project: &str, title: &str, actor: &Actor) -> Result<Task> {
        self.project(project).await?;
        if title.trim().is_empty() {
            return Err(EngineError::Invalid {
                what: "task title",
                value: title.to_string(),
                why: "give the task a title".into(),
            });
        }
        let id = new_id();
        let now = now_ms();
        let mut tx = self.store.write("creating a task").await?;
        sqlx::query(
            "INSERT INTO tasks (id, project, title, status, created_at, updated_at) VALUES ($1, $2, $3, 'todo', $4, $4)",
        )
        .bind(&id)
        .bind(project)
        .bind(title)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("creating a task"))?;
        emit(
            &mut tx,
            NewEvent::new(kind::TASK_CREATED, actor)
                .project(project)
                .task(Some(&id))
                .payload(serde_json::json!({ "title": title })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("creating a task"))?;
        self.task(&id).await
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

    /// Claims the oldest `todo` task of the agent's project for the agent.
    /// `None` when there is none, or another process won every candidate.
    pub async fn claim_task(&self, agent: &str) -> Result<Option<Task>> {
        let a = self.agent(agent).await?;
        for _attempt in 0..8 {
            let mut tx = self.store.write("claiming a task").await?;
            let candidate: Option<String> = sqlx::query_scalar(
                "SELECT id FROM tasks WHERE project = $1 AND status = 'todo' ORDER BY created_at, id LIMIT 1",
            )
            .bind(&a.project)
            .fetch_optional(&mut *tx)
            .await
            .map_err(EngineError::store("claiming a task"))?;
            let Some(task_id) = candidate else {
                return Ok(None);
            };
            let now = now_ms();
            let won = sqlx::query(
                "UPDATE tasks SET status = 'in_progress', agent = $1, updated_at = $2 WHERE id = $3 AND status = 'todo'",
            )
            .bind(agent)
            .bind(now)
            .bind(&task_id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("claiming a task"))?
            .rows_affected();
            if won != 1 {
                continue;
            }
            let free = sqlx::query(
                "UPDATE agents SET task_id = $1, status = 'working', updated_at = $2 \
                 WHERE name = $3 AND task_id IS NULL AND status = 'idle'",
            )
            .bind(&task_id)
            .bind(now)
            .bind(agent)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("claiming a task"))?
            .rows_affected();
            if free != 1 {
                // The agent already holds a task (another process claimed for
                // it): leave this one to the others.
                return Ok(None);
            }
            let actor = Actor::agent(agent);
            emit(
                &mut tx,
                NewEvent::new(kind::TASK_CLAIMED, &actor)
                    .project(&a.project)
                    .agent(agent)
                    .task(Some(&task_id)),
            )
            .await?;
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

/// Moves a task to `to` (and records `diagnosis` when given), in `tx`.
pub(crate) async fn set_status(
    tx: &mut Tx,
    task: &str,
    to: TaskStatus,
    diagnosis: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "UPDATE tasks SET status = $1, diagnosis = COALESCE($2, diagnosis), updated_at = $3 WHERE id = $4",
    )
    .bind(to.as_str())
    .bind(diagnosis)
    .bind(now_ms())
    .bind(task)
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("moving a task"))?;
    Ok(())
}
