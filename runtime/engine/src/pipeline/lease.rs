//! The run a pipeline task is at, and the lease that keeps two processes
//! from running one task's pipeline at once: the owner's executor id and,
//! for owners on other hosts, a deadline renewed before each step. Taking
//! the lease decides whether a call resumes the run under way or starts a
//! new one.

use sqlx::Row;

use super::Fired;
use crate::Engine;
use crate::config::{ExecutionMode, ProjectConfig};
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, kind};
use crate::ids::{now_ms, short};
use crate::store::{StoreLock, Tx};
use crate::tasks::{Task, TaskStatus};
use crate::transitions::{self, TaskMove};

/// The run row.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub run: i64,
    pub agent: String,
    pub mode: ExecutionMode,
    pub write_granted: bool,
    pub next_step: usize,
    pub attempt: i64,
    pub state: String,
    pub phase: Option<String>,
    pub access_note: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
}

pub(super) async fn load_run(ex: impl sqlx::AnyExecutor<'_>, task: &str) -> Result<Option<Run>> {
    let op = "reading a pipeline run";
    let row = sqlx::query(
        "SELECT run, agent, mode, write_granted, next_step, attempt, state, phase, access_note, \
         lease_owner, lease_until FROM pipeline_runs WHERE task_id = $1",
    )
    .bind(task)
    .fetch_optional(ex)
    .await
    .map_err(EngineError::store(op))?;
    let Some(r) = row else { return Ok(None) };
    let mode: String = r.try_get("mode").map_err(EngineError::store(op))?;
    let write: i64 = r.try_get("write_granted").map_err(EngineError::store(op))?;
    let next: i64 = r.try_get("next_step").map_err(EngineError::store(op))?;
    Ok(Some(Run {
        run: r.try_get("run").map_err(EngineError::store(op))?,
        agent: r.try_get("agent").map_err(EngineError::store(op))?,
        mode: ExecutionMode::parse(&mode)
            .ok_or_else(|| EngineError::corrupt(op, format!("mode `{mode}`")))?,
        write_granted: write != 0,
        next_step: usize::try_from(next).unwrap_or(0),
        attempt: r.try_get("attempt").map_err(EngineError::store(op))?,
        state: r.try_get("state").map_err(EngineError::store(op))?,
        phase: r.try_get("phase").map_err(EngineError::store(op))?,
        access_note: r.try_get("access_note").map_err(EngineError::store(op))?,
        lease_owner: r.try_get("lease_owner").map_err(EngineError::store(op))?,
        lease_until: r.try_get("lease_until").map_err(EngineError::store(op))?,
    }))
}

/// How long a lease holds for an owner berth cannot check (another host)
/// beyond the longest step.
const LEASE_MARGIN_MS: i64 = 60_000;

/// How long a lease holds: the longest step, and the margin.
fn lease_ttl(config: &ProjectConfig) -> i64 {
    i64::try_from(config.sandbox.timeout_secs)
        .unwrap_or(i64::MAX / 4_000)
        .saturating_mul(1000)
        .saturating_add(LEASE_MARGIN_MS)
}

impl Engine {
    /// Takes the task's lease and returns the run to drive: the current one
    /// when it is under way (or finishing), else a new one.
    pub(super) async fn take_lease(
        &self,
        task: &Task,
        agent: &str,
        me: &str,
        restart: bool,
        actor: &Actor,
    ) -> Result<Run> {
        let (config, _) = self.load_project_files(&task.project)?;
        let ttl = lease_ttl(&config);
        let now = now_ms();
        let mut fired = Fired::new();
        let mut tx = self.store.write("taking a pipeline's lease").await?;
        // Takers of this task's lease queue here, and the task's row is
        // held until commit: what is decided below from the run and the
        // task still holds when it commits.
        tx.lock(StoreLock::Task(&task.id)).await?;
        sqlx::query(&format!(
            "SELECT id FROM tasks WHERE id = $1{}",
            tx.backend().for_update()
        ))
        .bind(&task.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store("taking a pipeline's lease"))?;
        let current = load_run(&mut *tx, &task.id).await?;
        // Re-read the task under the write lock.
        let task = task_in_tx(&mut tx, &task.id).await?;
        if let Some(run) = &current
            && let Some(owner) = &run.lease_owner
            && owner != me
            && !crate::recovery::executor_is_dead(owner.split('#').next().unwrap_or(owner))
            && run.lease_until.is_some_and(|u| u > now)
        {
            return Err(EngineError::LeaseHeld {
                task: short(&task.id).to_string(),
                owner: owner.clone(),
            });
        }
        let resume = match (&current, task.status) {
            (Some(r), _) if r.state == "succeeded" => true,
            (Some(r), TaskStatus::InProgress | TaskStatus::AwaitingApproval)
                if r.state != "completed" =>
            {
                true
            }
            _ => false,
        };
        if resume {
            sqlx::query(
                "UPDATE pipeline_runs SET lease_owner = $1, lease_until = $2, \
                 state = CASE WHEN state IN ('waiting', 'blocked') THEN 'running' ELSE state END, \
                 updated_at = $3 WHERE task_id = $4",
            )
            .bind(me)
            .bind(now + ttl)
            .bind(now)
            .bind(&task.id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("taking a pipeline's lease"))?;
            if task.status == TaskStatus::AwaitingApproval {
                let back =
                    TaskMove::to(TaskStatus::InProgress).only_from(&[TaskStatus::AwaitingApproval]);
                let _ = transitions::task(&mut tx, &task.id, back, None).await?;
            }
        } else {
            match task.status {
                TaskStatus::Todo | TaskStatus::Returned => {}
                TaskStatus::Blocked if restart => {}
                TaskStatus::Blocked => {
                    return Err(EngineError::WrongStatus {
                        what: "task",
                        id: short(&task.id).to_string(),
                        status: "blocked".into(),
                        rule: format!(
                            "{}; `berth task run {} --restart` runs the pipeline over from its first step",
                            task.diagnosis.as_deref().unwrap_or("no diagnosis"),
                            short(&task.id)
                        ),
                    });
                }
                TaskStatus::InReview if current.is_none() => {
                    if let Some(delivered) = stray_delivery(&mut tx, &task).await? {
                        return Err(delivered);
                    }
                    return Err(EngineError::ReviewWithoutRun {
                        task: short(&task.id).to_string(),
                    });
                }
                other => {
                    return Err(EngineError::WrongStatus {
                        what: "task",
                        id: short(&task.id).to_string(),
                        status: other.as_str().to_string(),
                        rule: format!(
                            "nothing to run{}",
                            match other {
                                TaskStatus::InReview => {
                                    "; a person decides: `berth task approve ID` or `berth task reject ID --reason R`"
                                }
                                TaskStatus::Done => "; it is done",
                                _ => "",
                            }
                        ),
                    });
                }
            }
            let mode = task.execution_mode.unwrap_or(config.execution.mode);
            let number = current.as_ref().map_or(1, |r| r.run + 1);
            sqlx::query(
                "INSERT INTO pipeline_runs (task_id, run, agent, mode, write_granted, next_step, attempt, state, phase, \
                 access_note, lease_owner, lease_until, started_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 0, 0, 0, 'running', NULL, NULL, $5, $6, $7, $7) \
                 ON CONFLICT (task_id) DO UPDATE SET run = excluded.run, agent = excluded.agent, mode = excluded.mode, \
                 write_granted = 0, next_step = 0, attempt = 0, state = 'running', phase = NULL, access_note = NULL, \
                 lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, \
                 started_at = excluded.started_at, updated_at = excluded.updated_at",
            )
            .bind(&task.id)
            .bind(number)
            .bind(agent)
            .bind(mode.as_str())
            .bind(me)
            .bind(now + ttl)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("starting a pipeline run"))?;
            let started = NewEvent::new(kind::PIPELINE_STARTED, actor)
                .project(&task.project)
                .agent(agent)
                .task(Some(&task.id))
                .payload(serde_json::json!({
                    "run": number,
                    "mode": mode.as_str(),
                    "mode_from": if task.execution_mode.is_some() { "task" } else { "project" },
                    "steps": task.steps.as_ref().map(Vec::len),
                }));
            let start = TaskMove::to(TaskStatus::InProgress)
                .only_from(&[TaskStatus::Todo, TaskStatus::Returned, TaskStatus::Blocked])
                .agent(agent)
                .clear_diagnosis();
            let started = transitions::task(&mut tx, &task.id, start, Some(started)).await?;
            fired.extend(started.event());
        }
        let run = load_run(&mut *tx, &task.id)
            .await?
            .ok_or_else(|| EngineError::corrupt("taking a pipeline's lease", "run vanished"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("taking a pipeline's lease"))?;
        self.fire_hooks(&task.project, &fired).await;
        Ok(run)
    }

    pub(super) async fn release_lease(&self, task: &str, owner: &str) -> Result<()> {
        let mut tx = self.store.write("releasing a pipeline's lease").await?;
        sqlx::query(
            "UPDATE pipeline_runs SET lease_owner = NULL, lease_until = NULL WHERE task_id = $1 AND lease_owner = $2",
        )
        .bind(task)
        .bind(owner)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("releasing a pipeline's lease"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("releasing a pipeline's lease"))
    }

    pub(super) async fn renew_lease(&self, task: &str, owner: &str) -> Result<()> {
        let t = self.task(task).await?;
        let (config, _) = self.load_project_files(&t.project)?;
        let ttl = lease_ttl(&config);
        let mut tx = self.store.write("renewing a pipeline's lease").await?;
        let n = sqlx::query(
            "UPDATE pipeline_runs SET lease_until = $1 WHERE task_id = $2 AND lease_owner = $3",
        )
        .bind(now_ms() + ttl)
        .bind(task)
        .bind(owner)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("renewing a pipeline's lease"))?
        .rows_affected();
        tx.commit()
            .await
            .map_err(EngineError::store("renewing a pipeline's lease"))?;
        if n != 1 {
            return Err(EngineError::LeaseLost {
                task: short(task).to_string(),
            });
        }
        Ok(())
    }
}

/// A pipeline task an agent's loop delivered as a PR (berth before task
/// kinds let the noop loop claim any `todo` task): its steps never ran, and
/// its gate is that PR, not `task approve`. The way out, for a person: the
/// PR's number and what to run. `None` when the task has no open PR.
pub(super) async fn stray_delivery(tx: &mut Tx, task: &Task) -> Result<Option<EngineError>> {
    let number: Option<i64> = sqlx::query_scalar(
        "SELECT number FROM prs WHERE task_id = $1 AND status = 'open' ORDER BY number DESC LIMIT 1",
    )
    .bind(&task.id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store("reading a task's PR"))?;
    Ok(number.map(|pr| EngineError::DeliveredAsPr {
        task: short(&task.id).to_string(),
        pr,
    }))
}

pub(super) async fn task_in_tx(tx: &mut Tx, id: &str) -> Result<Task> {
    let row = sqlx::query(&format!(
        "SELECT {} FROM tasks WHERE id = $1",
        crate::tasks::TASK_COLUMNS
    ))
    .bind(id)
    .fetch_one(&mut **tx)
    .await
    .map_err(EngineError::store("reading a task"))?;
    crate::tasks::from_row(&row)
}
