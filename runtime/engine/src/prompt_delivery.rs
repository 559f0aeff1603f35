//! Delivering the durable prompt queue (issue 18; `prompts.rs` sends and
//! lists): reserve the head row for this process, acknowledge it once the
//! executor accepted it, or release it when the handoff failed.
//!
//! A reservation never deletes the row: its session moves to `running`
//! and the row to `reserved` under a fresh token, naming this process
//! (`host:pid:start`), in one write transaction. A process that dies
//! before acknowledging leaves the row reserved by a dead process: the
//! next reservation of the agent's queue puts it back at its place (and
//! idles the session whose turn that process ran), so it is delivered
//! again — at least once, never lost. A row whose task was archived or
//! deleted, or whose generation is behind its task's, is purged instead
//! of delivered; a token whose row was purged acknowledges nothing.

use crate::Engine;
use crate::agents::AgentStatus;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms, short};
use crate::prompts::{
    PROMPT_COLUMNS, Prompt, Reservation, generation, prompt_from_row, read_prompt, readiness,
    task_is_active,
};
use crate::recovery::{executor_id, executor_is_dead};
use crate::sessions::{SessionStatus, move_session};
use crate::store::{StoreLock, Tx};
use crate::tasks::TaskStatus;
use crate::transitions;

/// Queued rows looked at per reservation.
const SCAN: i64 = 64;

/// Puts back the reservations of dead processes in `agent`'s queue (they
/// are delivered again, at their place) and idles the sessions whose turn
/// a dead process was running, in `tx`.
async fn reclaim_dead(tx: &mut Tx, agent: &str) -> Result<()> {
    let op = "reclaiming prompts of a dead process";
    // The sessions' rows first, the requeued prompts' events after: the
    // event log's lock is the last a transaction takes (`Tx::lock`).
    let running: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT id, runner FROM agent_sessions WHERE agent = $1 AND status = 'running'",
    )
    .bind(agent)
    .fetch_all(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    for (id, runner) in running {
        if runner.as_deref().is_none_or(executor_is_dead) {
            let _ = move_session(
                tx,
                &id,
                SessionStatus::Idle,
                Some(SessionStatus::Running),
                None,
            )
            .await?;
        }
    }
    let reserved: Vec<(String, Option<String>, Option<String>, String)> = sqlx::query_as(
        "SELECT id, reserved_by, task_id, project FROM prompts WHERE agent = $1 AND status = 'reserved'",
    )
    .bind(agent)
    .fetch_all(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    let system = Actor::system();
    for (id, by, task, project) in reserved {
        let Some(by) = by.filter(|b| executor_is_dead(b)) else {
            continue;
        };
        let reason = format!(
            "the process that reserved it ({by}) stopped before acknowledging it: delivered again"
        );
        let n = sqlx::query(
            "UPDATE prompts SET status = 'queued', token = NULL, reason = $1, updated_at = $2 \
             WHERE id = $3 AND status = 'reserved' AND reserved_by = $4",
        )
        .bind(&reason)
        .bind(now_ms())
        .bind(&id)
        .bind(&by)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if n == 1 {
            emit(
                tx,
                NewEvent::new(kind::PROMPT_REQUEUED, &system)
                    .project(&project)
                    .agent(agent)
                    .task(task.as_deref())
                    .payload(serde_json::json!({ "prompt": id, "reason": reason })),
            )
            .await?;
        }
    }
    Ok(())
}

/// An auto-fix prompt for the task's PR was delivered: a task in review
/// goes back to work (`in_review → in_progress`), and back to review when
/// the PR's head moves (`pr_automation`), in `tx`.
async fn back_to_work(
    tx: &mut Tx,
    project: &str,
    agent: &str,
    task: &str,
    prompt: &str,
) -> Result<()> {
    let system = Actor::system();
    let event = NewEvent::new(kind::TASK_BACK_TO_WORK, &system)
        .project(project)
        .agent(agent)
        .task(Some(task))
        .payload(serde_json::json!({ "prompt": prompt }));
    let statuses = (TaskStatus::InReview, TaskStatus::InProgress);
    transitions::task_from(tx, task, agent, statuses, AgentStatus::Working, event).await?;
    Ok(())
}

impl Engine {
    /// Reserves the first deliverable prompt of `agent`'s queue for this
    /// process: its session moves to `running` and the row to `reserved`
    /// under a new token (`prompt.delivered`), in one transaction. The
    /// reservations of dead processes go back to the queue first. None:
    /// nothing is deliverable now (each waiting row's reason is updated).
    pub async fn reserve_prompt(&self, agent: &str) -> Result<Option<Reservation>> {
        self.store
            .retrying("reserving a prompt", || self.reserve_prompt_once(agent))
            .await
    }

    /// [`Engine::reserve_prompt`], one attempt: run again whole when
    /// PostgreSQL aborts it ([`crate::Store::retrying`]).
    async fn reserve_prompt_once(&self, agent: &str) -> Result<Option<Reservation>> {
        let a = self.agent(agent).await?;
        let me = executor_id();
        let max_sessions = self
            .load_project_files(&a.project)
            .map(|(c, _)| c.agent.max_sessions)?;
        let op = "reserving a prompt";
        let mut tx = self.store.write(op).await?;
        // Reservations in the project queue here: the count of its running
        // turns below, and the agent's queued rows, hold until commit.
        tx.lock(StoreLock::Project(&a.project)).await?;
        reclaim_dead(&mut tx, &a.name).await?;
        // The project's turns running at once: none more past its maximum.
        let running: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM agent_sessions WHERE project = $1 AND status = 'running'",
        )
        .bind(&a.project)
        .fetch_one(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        if running >= i64::from(max_sessions) {
            let why = format!(
                "busy: project `{}` runs {running} turns, its maximum (`[agent] max_sessions`)",
                a.project
            );
            sqlx::query(
                "UPDATE prompts SET reason = $1 WHERE agent = $2 AND status = 'queued' \
                 AND (reason IS NULL OR reason <> $1)",
            )
            .bind(&why)
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
            tx.commit().await.map_err(EngineError::store(op))?;
            return Ok(None);
        }
        let rows = sqlx::query(&format!(
            "SELECT {PROMPT_COLUMNS} FROM prompts WHERE agent = $1 AND status = 'queued' \
             ORDER BY seq LIMIT $2"
        ))
        .bind(&a.name)
        .bind(SCAN)
        .fetch_all(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let system = Actor::system();
        for row in &rows {
            let p = prompt_from_row(row)?;
            if let Some(task) = &p.task
                && (!task_is_active(&mut tx, task).await?
                    || generation(&mut tx, task).await? != p.generation)
            {
                // Stale: its task was archived or deleted since. Never delivered.
                purge_row(&mut tx, &p, &system).await?;
                continue;
            }
            let (session, why) = readiness(&mut tx, &a.name, p.task.as_deref()).await?;
            let session = match (session, why) {
                (Some(s), None) => s,
                (_, why) => {
                    if why != p.reason {
                        set_reason(&mut tx, &p.id, why.as_deref()).await?;
                    }
                    continue;
                }
            };
            if !move_session(
                &mut tx,
                &session.id,
                SessionStatus::Running,
                None,
                Some(&me),
            )
            .await?
            {
                continue;
            }
            let token = new_id();
            let n = sqlx::query(
                "UPDATE prompts SET status = 'reserved', token = $1, reserved_by = $2, claimed_from = $3, \
                 session_id = $4, task_id = $5, attempts = attempts + 1, reason = NULL, updated_at = $6 \
                 WHERE id = $7 AND status = 'queued'",
            )
            .bind(&token)
            .bind(&me)
            .bind(session.status.as_str())
            .bind(&session.id)
            .bind(&session.task)
            .bind(now_ms())
            .bind(&p.id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?
            .rows_affected();
            if n != 1 {
                return Err(EngineError::corrupt(
                    op,
                    "a queued row changed under the write lock",
                ));
            }
            let prompt = read_prompt(&mut tx, &p.id).await?;
            if prompt.kind == "auto_fix" {
                back_to_work(&mut tx, &a.project, &a.name, &session.task, &p.id).await?;
            }
            emit(
                &mut tx,
                NewEvent::new(kind::PROMPT_DELIVERED, &system)
                    .project(&a.project)
                    .agent(&a.name)
                    .task(Some(&session.task))
                    .payload(serde_json::json!({
                        "prompt": p.id,
                        "session": session.id,
                        "attempt": prompt.attempts,
                    })),
            )
            .await?;
            tx.commit().await.map_err(EngineError::store(op))?;
            let session = self.session(&session.id).await?;
            return Ok(Some(Reservation {
                token,
                attempt: prompt.attempts,
                prompt,
                session,
            }));
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(None)
    }

    /// The executor accepted the reserved prompt: `acknowledged`
    /// (`prompt.acknowledged`). Refused when the reservation lost to an
    /// archive or delete of its task (the row was purged).
    pub async fn acknowledge_prompt(&self, token: &str) -> Result<Prompt> {
        self.store
            .retrying("acknowledging a prompt", || {
                self.acknowledge_prompt_once(token)
            })
            .await
    }

    /// [`Engine::acknowledge_prompt`], one attempt.
    async fn acknowledge_prompt_once(&self, token: &str) -> Result<Prompt> {
        let op = "acknowledging a prompt";
        let mut tx = self.store.write(op).await?;
        let id: Option<String> = sqlx::query_scalar(
            "UPDATE prompts SET status = 'acknowledged', updated_at = $1 \
             WHERE token = $2 AND status = 'reserved' RETURNING id",
        )
        .bind(now_ms())
        .bind(token)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let Some(id) = id else {
            return Err(stale_token(&mut tx, token).await?);
        };
        let p = read_prompt(&mut tx, &id).await?;
        let system = Actor::system();
        emit(
            &mut tx,
            NewEvent::new(kind::PROMPT_ACKNOWLEDGED, &system)
                .project(&p.project)
                .agent(&p.agent)
                .task(p.task.as_deref())
                .payload(serde_json::json!({
                    "prompt": p.id,
                    "session": p.session,
                    "attempt": p.attempts,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(p)
    }

    /// The handoff of a reserved prompt failed before the executor accepted
    /// it: the row goes back to its place in the queue with `why`, its
    /// session back to the status it had (`prompt.requeued`).
    pub async fn release_prompt(&self, token: &str, why: &str) -> Result<Prompt> {
        self.store
            .retrying("releasing a prompt", || {
                self.release_prompt_once(token, why)
            })
            .await
    }

    /// [`Engine::release_prompt`], one attempt.
    async fn release_prompt_once(&self, token: &str, why: &str) -> Result<Prompt> {
        let op = "releasing a prompt";
        let mut tx = self.store.write(op).await?;
        let row: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "UPDATE prompts SET status = 'queued', token = NULL, reason = $1, updated_at = $2 \
             WHERE token = $3 AND status = 'reserved' RETURNING id, session_id, claimed_from",
        )
        .bind(format!("not accepted: {why}"))
        .bind(now_ms())
        .bind(token)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let Some((id, session, from)) = row else {
            return Err(stale_token(&mut tx, token).await?);
        };
        if let Some(session) = &session {
            let back = from
                .as_deref()
                .and_then(SessionStatus::parse)
                .filter(|s| s.is_promptable())
                .unwrap_or(SessionStatus::Idle);
            let _ =
                move_session(&mut tx, session, back, Some(SessionStatus::Running), None).await?;
        }
        let p = read_prompt(&mut tx, &id).await?;
        let system = Actor::system();
        emit(
            &mut tx,
            NewEvent::new(kind::PROMPT_REQUEUED, &system)
                .project(&p.project)
                .agent(&p.agent)
                .task(p.task.as_deref())
                .payload(serde_json::json!({ "prompt": p.id, "reason": p.reason })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(p)
    }
}

async fn set_reason(tx: &mut Tx, id: &str, reason: Option<&str>) -> Result<()> {
    sqlx::query("UPDATE prompts SET reason = $1, updated_at = $2 WHERE id = $3")
        .bind(reason)
        .bind(now_ms())
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store("recording why a prompt waits"))?;
    Ok(())
}

/// Purges one stale row (its task archived or deleted, or its generation
/// behind the task's).
async fn purge_row(tx: &mut Tx, p: &Prompt, actor: &Actor) -> Result<()> {
    let why = "its task was archived or deleted after it was queued";
    let n = sqlx::query(
        "UPDATE prompts SET status = 'purged', reason = $1, updated_at = $2 \
         WHERE id = $3 AND status = 'queued'",
    )
    .bind(format!("purged: {why}"))
    .bind(now_ms())
    .bind(&p.id)
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("purging a stale prompt"))?
    .rows_affected();
    if n == 1 {
        emit(
            tx,
            NewEvent::new(kind::PROMPT_PURGED, actor)
                .project(&p.project)
                .agent(&p.agent)
                .task(p.task.as_deref())
                .payload(serde_json::json!({
                    "prompts": [p.id],
                    "sessions": [],
                    "generation": p.generation,
                    "reason": why,
                })),
        )
        .await?;
    }
    Ok(())
}

/// Why `token` names no reserved prompt.
async fn stale_token(tx: &mut Tx, token: &str) -> Result<EngineError> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT id, status FROM prompts WHERE token = $1")
            .bind(token)
            .fetch_optional(&mut **tx)
            .await
            .map_err(EngineError::store("reading a prompt reservation"))?;
    Ok(match row {
        None => EngineError::UnknownId {
            what: "prompt reservation",
            id: token.to_string(),
            list: "berth queue",
        },
        Some((id, status)) => EngineError::WrongStatus {
            what: "prompt",
            id: short(&id).to_string(),
            status,
            rule: "only a reserved prompt is acknowledged or released \
                   (a purged one lost to its task's archive or delete)"
                .into(),
        },
    })
}
