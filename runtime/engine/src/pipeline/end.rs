//! How a run ends: every step succeeded — auto mode's `done` with
//! `task_auto_approved`, review mode's `in_review` — then the followups
//! and `pipeline_completed` once; and a person's approval (`done`, then the
//! followups) or rejection (`returned`) of a task in review.

use super::lease::stray_delivery;
use super::{Fired, PipelineEnd, PipelineReport, Run, load_run};
use crate::Engine;
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{now_ms, short};
use crate::tasks::{Task, TaskStatus};
use crate::transitions::{self, TaskMove};

impl Engine {
    /// Every step succeeded: auto → `done` and `task_auto_approved`;
    /// review → `in_review` and `pipeline_completed`. One transaction.
    pub(super) async fn succeed(&self, task: &Task, run: &Run) -> Result<Run> {
        let system = Actor::system();
        let mut fired = Fired::new();
        let mut tx = self.store.write("completing a pipeline").await?;
        let won = sqlx::query(
            "UPDATE pipeline_runs SET state = $1, phase = $2, updated_at = $3 WHERE task_id = $4 AND run = $5 AND state = 'running'",
        )
        .bind(match run.mode {
            ExecutionMode::Auto => "succeeded",
            ExecutionMode::Review => "completed",
        })
        .bind(match run.mode {
            ExecutionMode::Auto => Some("auto_approved"),
            ExecutionMode::Review => None,
        })
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("completing a pipeline"))?
        .rows_affected();
        if won == 1 {
            // The agent's row before the task's move and its events: the
            // log's lock is the last a transaction takes (`Tx::lock`).
            crate::breaker::reset(&mut tx, &run.agent).await?;
            let base = |k| {
                NewEvent::new(k, &system)
                    .project(&task.project)
                    .agent(&run.agent)
                    .task(Some(&task.id))
            };
            match run.mode {
                ExecutionMode::Auto => {
                    let done = base(kind::TASK_DONE).payload(serde_json::json!({ "run": run.run }));
                    let mv = TaskMove::to(TaskStatus::Done);
                    fired.extend(
                        transitions::task(&mut tx, &task.id, mv, Some(done))
                            .await?
                            .event(),
                    );
                    fired.push(
                        emit(
                            &mut tx,
                            base(kind::TASK_AUTO_APPROVED).payload(serde_json::json!({
                                "run": run.run,
                                "write_granted": run.write_granted,
                            })),
                        )
                        .await?,
                    );
                }
                ExecutionMode::Review => {
                    let in_review =
                        base(kind::TASK_IN_REVIEW).payload(serde_json::json!({ "run": run.run }));
                    let mv = TaskMove::to(TaskStatus::InReview);
                    fired.extend(
                        transitions::task(&mut tx, &task.id, mv, Some(in_review))
                            .await?
                            .event(),
                    );
                    fired.push(
                        emit(
                            &mut tx,
                            base(kind::PIPELINE_COMPLETED).payload(serde_json::json!({
                                "run": run.run,
                                "mode": "review",
                            })),
                        )
                        .await?,
                    );
                }
            }
        }
        let r = load_run(&mut *tx, &task.id)
            .await?
            .ok_or_else(|| EngineError::corrupt("completing a pipeline", "run vanished"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("completing a pipeline"))?;
        self.fire_hooks(&task.project, &fired).await;
        Ok(r)
    }

    /// `pipeline_completed` once, with the run marked completed.
    pub(super) async fn complete_run(&self, task: &Task, run: &Run, mode: &str) -> Result<()> {
        let system = Actor::system();
        let mut fired = Fired::new();
        let mut tx = self.store.write("completing a pipeline").await?;
        let won = sqlx::query(
            "UPDATE pipeline_runs SET state = 'completed', phase = 'followups_done', updated_at = $1 \
             WHERE task_id = $2 AND run = $3 AND state = 'succeeded'",
        )
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("completing a pipeline"))?
        .rows_affected();
        if won == 1 && mode == "auto" {
            fired.push(
                emit(
                    &mut tx,
                    NewEvent::new(kind::PIPELINE_COMPLETED, &system)
                        .project(&task.project)
                        .agent(&run.agent)
                        .task(Some(&task.id))
                        .payload(serde_json::json!({ "run": run.run, "mode": mode })),
                )
                .await?,
            );
        }
        tx.commit()
            .await
            .map_err(EngineError::store("completing a pipeline"))?;
        self.fire_hooks(&task.project, &fired).await;
        Ok(())
    }

    /// A person approves a pipeline task in review: `done`, then its
    /// followups. Approving again after a crash in the followups finishes
    /// them; the approval itself is recorded once.
    pub async fn approve_task(&self, id: &str, user: &Actor) -> Result<PipelineReport> {
        let task = self.task(id).await?;
        if !task.is_pipeline() {
            return Err(EngineError::AgentTask {
                task: short(&task.id).to_string(),
                why: ": its gate is its PR (`berth pr merge` or `berth pr close`)",
            });
        }
        let mut fired = Fired::new();
        let mut tx = self.store.write("approving a task").await?;
        let Some(run) = load_run(&mut *tx, &task.id).await? else {
            if let Some(delivered) = stray_delivery(&mut tx, &task).await? {
                return Err(delivered);
            }
            return Err(EngineError::NotRun {
                task: short(&task.id).to_string(),
            });
        };
        let approve = TaskMove::to(TaskStatus::Done).only_from(&[TaskStatus::InReview]);
        if transitions::task(&mut tx, &task.id, approve, None)
            .await?
            .moved()
        {
            sqlx::query(
                "UPDATE pipeline_runs SET state = 'succeeded', phase = 'approved', updated_at = $1 WHERE task_id = $2",
            )
            .bind(now_ms())
            .bind(&task.id)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("approving a task"))?;
            for (k, payload) in [
                (
                    kind::TASK_APPROVED,
                    serde_json::json!({ "run": run.run, "by": user.id }),
                ),
                (kind::TASK_DONE, serde_json::json!({ "run": run.run })),
            ] {
                fired.push(
                    emit(
                        &mut tx,
                        NewEvent::new(k, user)
                            .project(&task.project)
                            .agent(&run.agent)
                            .task(Some(&task.id))
                            .payload(payload),
                    )
                    .await?,
                );
            }
        } else if run.phase.as_deref() != Some("approved") {
            // Done, and its followups were finished by an earlier approval.
            return Err(EngineError::WrongStatus {
                what: "task",
                id: short(&task.id).to_string(),
                status: "done".into(),
                rule: "only a pipeline task in review can be approved".into(),
            });
        }
        let run = load_run(&mut *tx, &task.id)
            .await?
            .ok_or_else(|| EngineError::corrupt("approving a task", "run vanished"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("approving a task"))?;
        self.fire_hooks(&task.project, &fired).await;
        let followups = self.generate_followups(&task, &run).await?;
        self.complete_run(&task, &run, "review").await?;
        Ok(PipelineReport {
            task: task.id.clone(),
            agent: run.agent.clone(),
            run: run.run,
            mode: run.mode,
            end: PipelineEnd::Done,
            access_note: run.access_note.clone(),
            followups,
        })
    }

    /// A person rejects a pipeline task in review: `returned`, with the reason.
    pub async fn reject_task(&self, id: &str, reason: &str, user: &Actor) -> Result<Task> {
        let task = self.task(id).await?;
        if reason.trim().is_empty() {
            return Err(EngineError::Invalid {
                what: "reason",
                value: String::new(),
                why: "say why the task goes back (`--reason R`)".into(),
            });
        }
        if !task.is_pipeline() {
            return Err(EngineError::AgentTask {
                task: short(&task.id).to_string(),
                why: ": its gate is its PR (`berth pr close`)",
            });
        }
        let mut tx = self.store.write("rejecting a task").await?;
        let returned = NewEvent::new(kind::TASK_RETURNED, user)
            .project(&task.project)
            .agent(task.agent.as_deref().unwrap_or_default())
            .task(Some(&task.id))
            .payload(serde_json::json!({ "reason": reason }));
        let reject = TaskMove::to(TaskStatus::Returned)
            .only_from(&[TaskStatus::InReview])
            .diagnosis(Some(reason));
        let Some(id) = transitions::task(&mut tx, &task.id, reject, Some(returned))
            .await?
            .event()
        else {
            return Err(EngineError::WrongStatus {
                what: "task",
                id: short(&task.id).to_string(),
                status: "returned already".into(),
                rule: "only a task in review can be rejected".into(),
            });
        };
        tx.commit()
            .await
            .map_err(EngineError::store("rejecting a task"))?;
        self.fire_hooks(&task.project, &[id]).await;
        self.task(&task.id).await
    }
}
