//! Driving a run: each step proposed as a terminal action under a
//! deterministic key, so running again replays what executed; and where a
//! run stops — waiting for a person, blocked (a failure counts toward the
//! circuit breaker), or auto mode's one permission retry with write access.

use berth_policy::Action;

use super::{Fired, PipelineEnd, PipelineReport, Run, load_run};
use crate::actions::{ActionParams, ActionRecord, ActionResult, ActionStatus, Proposal};
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{now_ms, short};
use crate::tasks::{PipelineStep, Task, TaskStatus};
use crate::transitions::{self, TaskMove};
use crate::{AgentName, Engine, ProjectName};

/// Output that says a step failed for want of write access. Matched
/// case-insensitively against the failed step's stdout, stderr and diagnostic.
pub const PERMISSION_PATTERNS: [&str; 7] = [
    "permission denied",
    "read-only file system",
    "operation not permitted",
    "eacces",
    "erofs",
    "cannot write",
    "not writable",
];

/// Why a failed step looks like a permission error: the pattern found, or
/// `None` when it does not.
pub fn permission_error(record: &ActionRecord) -> Option<&'static str> {
    if record.status != ActionStatus::Failed {
        return None;
    }
    let mut text = record.diagnostic.clone().unwrap_or_default();
    if let Some(ActionResult::Terminal { stdout, stderr, .. }) = &record.result {
        text.push('\n');
        text.push_str(stdout);
        text.push('\n');
        text.push_str(stderr);
    }
    permission_pattern(&text)
}

/// The permission pattern `text` contains, if any.
pub fn permission_pattern(text: &str) -> Option<&'static str> {
    let text = text.to_lowercase();
    PERMISSION_PATTERNS.into_iter().find(|p| text.contains(p))
}

impl Engine {
    /// Runs the steps from where the run stands, then what follows success.
    pub(super) async fn drive(
        &self,
        task: &Task,
        steps: &[PipelineStep],
        mut run: Run,
        owner: &str,
        actor: &Actor,
    ) -> Result<PipelineReport> {
        let mut report = PipelineReport {
            task: task.id.clone(),
            agent: run.agent.clone(),
            run: run.run,
            mode: run.mode,
            end: PipelineEnd::Done,
            access_note: run.access_note.clone(),
            followups: Vec::new(),
        };
        while run.state == "running" && run.next_step < steps.len() {
            let i = run.next_step;
            let step = &steps[i];
            let write = task.write || step.write || run.write_granted;
            let key = format!("pipeline:{}:{}:{}:{}", task.id, run.run, i, run.attempt);
            let record = match self.action_by_key(&key).await? {
                Some(r) => r,
                None => {
                    self.renew_lease(&task.id, owner).await?;
                    let agent = self.ensure_berth(&run.agent, &task.project, actor).await?;
                    let proposal = Proposal::by_agent(
                        &agent,
                        Action::Terminal {
                            command: step.command.clone(),
                        },
                    )
                    .params(ActionParams {
                        read_only: !write,
                        ..ActionParams::default()
                    })
                    .task(Some(task.id.clone()))
                    .key(&key);
                    let proposed = self.propose(proposal, None).await?;
                    self.action(&proposed.id).await?
                }
            };
            if let Some(ActionResult::Terminal {
                access_note: Some(note),
                ..
            }) = &record.result
                && report.access_note.is_none()
            {
                report.access_note = Some(note.clone());
                self.note_access(&task.id, note).await?;
            }
            // A step that stops the run: why, and whether it counts toward
            // the agent's circuit breaker.
            let blocked: Option<(String, bool)> = match record.status {
                ActionStatus::Executed => {
                    run = self.advance(task, &run, i + 1).await?;
                    None
                }
                ActionStatus::Failed => {
                    let retry = run.mode == ExecutionMode::Auto && !write && run.attempt == 0;
                    match (retry, permission_error(&record)) {
                        (true, Some(pattern)) => {
                            run = self
                                .permission_retry(task, &run, i, step, &record, pattern)
                                .await?;
                            None
                        }
                        (_, perm) => {
                            let why = record.diagnostic.as_deref().unwrap_or("failed");
                            let diagnosis = match (perm, run.mode, write && run.attempt > 0) {
                                (Some(_), ExecutionMode::Auto, true) => format!(
                                    "step {} (`{}`) failed again with write access after a permission retry: {why}",
                                    i + 1,
                                    step.command
                                ),
                                _ => format!(
                                    "step {} (`{}`) failed in {} mode: {why}",
                                    i + 1,
                                    step.command,
                                    run.mode.as_str()
                                ),
                            };
                            Some((diagnosis, true))
                        }
                    }
                }
                ActionStatus::Pending | ActionStatus::Approved | ActionStatus::Executing => {
                    report.end = self.wait_pipeline(task, &run, i, &record).await?;
                    return Ok(report);
                }
                ActionStatus::Interrupted => Some((
                    format!(
                        "step {} (`{}`, action {}) was interrupted when its berth process died; it was not re-run: \
                         check its effect, then `berth retry {}` and `berth task run {}` to continue, \
                         or `berth task run {} --restart` to run the pipeline over",
                        i + 1,
                        step.command,
                        short(&record.id),
                        short(&record.id),
                        short(&task.id),
                        short(&task.id)
                    ),
                    false,
                )),
                // A person's call, like a denial: the run waits for them.
                ActionStatus::Refused | ActionStatus::Denied | ActionStatus::Cancelled => {
                    let reason = match record.propose_status() {
                        crate::actions::ProposeStatus::Refused { reason } => reason,
                        _ => record
                            .diagnostic
                            .clone()
                            .unwrap_or_else(|| "refused".into()),
                    };
                    Some((
                        format!(
                            "step {} (`{}`) was {}: {reason}",
                            i + 1,
                            step.command,
                            record.status.as_str()
                        ),
                        false,
                    ))
                }
            };
            if let Some((diagnosis, counts)) = blocked {
                report.end = self
                    .block_pipeline(task, &run, &diagnosis, Some(&record), counts)
                    .await?;
                return Ok(report);
            }
        }
        if run.state == "running" {
            run = self.succeed(task, &run).await?;
        }
        report.end = if run.mode == ExecutionMode::Review && run.phase.is_none() {
            PipelineEnd::InReview
        } else {
            PipelineEnd::Done
        };
        if run.state == "succeeded" {
            // Auto mode after `task_auto_approved` (or a review approval a
            // crash interrupted): followups, then `pipeline_completed` — the
            // ADR's order, so the generator sees what the hooks changed.
            report.followups = self.generate_followups(task, &run).await?;
            self.complete_run(task, &run, run.mode.as_str()).await?;
        }
        Ok(report)
    }

    /// Brings the agent's berth up when it is down; returns its name.
    async fn ensure_berth(&self, agent: &str, project: &str, actor: &Actor) -> Result<AgentName> {
        let a = self.agent(agent).await?;
        let agent = AgentName::new(agent)?;
        if a.berth.is_none() {
            self.up(&agent, &ProjectName::new(project)?, None, actor)
                .await?;
        }
        Ok(agent)
    }

    async fn note_access(&self, task: &str, note: &str) -> Result<()> {
        let mut tx = self.store.write("recording a pipeline's access").await?;
        sqlx::query("UPDATE pipeline_runs SET access_note = $1 WHERE task_id = $2")
            .bind(note)
            .bind(task)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("recording a pipeline's access"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording a pipeline's access"))
    }

    async fn advance(&self, task: &Task, run: &Run, next: usize) -> Result<Run> {
        let mut tx = self.store.write("advancing a pipeline").await?;
        sqlx::query(
            "UPDATE pipeline_runs SET next_step = $1, attempt = 0, updated_at = $2 WHERE task_id = $3 AND run = $4",
        )
        .bind(i64::try_from(next).unwrap_or(i64::MAX))
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("advancing a pipeline"))?;
        let r = load_run(&mut *tx, &task.id)
            .await?
            .ok_or_else(|| EngineError::corrupt("advancing a pipeline", "run vanished"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("advancing a pipeline"))?;
        Ok(r)
    }

    /// Auto mode's one retry of a step that failed for want of write access:
    /// write access from now on, for this step and every later one.
    async fn permission_retry(
        &self,
        task: &Task,
        run: &Run,
        step: usize,
        s: &PipelineStep,
        failed: &ActionRecord,
        pattern: &str,
    ) -> Result<Run> {
        let system = Actor::system();
        let mut tx = self
            .store
            .write("retrying a step with write access")
            .await?;
        sqlx::query(
            "UPDATE pipeline_runs SET write_granted = 1, attempt = 1, updated_at = $1 WHERE task_id = $2 AND run = $3",
        )
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("retrying a step with write access"))?;
        let id = emit(
            &mut tx,
            NewEvent::new(kind::TASK_PERMISSION_RETRY, &system)
                .project(&task.project)
                .agent(&run.agent)
                .task(Some(&task.id))
                .action(&failed.id)
                .payload(serde_json::json!({
                    "run": run.run,
                    "step": step + 1,
                    "command": s.command,
                    "matched": pattern,
                    "diagnostic": failed.diagnostic,
                })),
        )
        .await?;
        let r = load_run(&mut *tx, &task.id)
            .await?
            .ok_or_else(|| EngineError::corrupt("retrying a step", "run vanished"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("retrying a step with write access"))?;
        self.fire_hooks(&task.project, &[id]).await;
        Ok(r)
    }

    /// Blocks the task (`task.blocked`). A failure (not a refusal, a denial
    /// or an interruption) counts toward the agent's circuit breaker.
    async fn block_pipeline(
        &self,
        task: &Task,
        run: &Run,
        diagnosis: &str,
        record: Option<&ActionRecord>,
        counts: bool,
    ) -> Result<PipelineEnd> {
        let system = Actor::system();
        let mut fired = Fired::new();
        let mut tx = self.store.write("blocking a pipeline").await?;
        sqlx::query(
            "UPDATE pipeline_runs SET state = 'blocked', updated_at = $1 WHERE task_id = $2 AND run = $3",
        )
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("blocking a pipeline"))?;
        let mut ev = NewEvent::new(kind::TASK_BLOCKED, &system)
            .project(&task.project)
            .agent(&run.agent)
            .task(Some(&task.id))
            .payload(serde_json::json!({ "diagnosis": diagnosis, "run": run.run }));
        if let Some(r) = record {
            ev = ev.action(&r.id);
        }
        let block = TaskMove::to(TaskStatus::Blocked).diagnosis(Some(diagnosis));
        fired.extend(
            transitions::task(&mut tx, &task.id, block, Some(ev))
                .await?
                .event(),
        );
        if counts {
            fired.extend(
                crate::breaker::count_failure(&mut tx, self, &run.agent, &task.project, diagnosis)
                    .await?,
            );
        }
        tx.commit()
            .await
            .map_err(EngineError::store("blocking a pipeline"))?;
        self.fire_hooks(&task.project, &fired).await;
        Ok(PipelineEnd::Blocked {
            diagnosis: diagnosis.to_string(),
        })
    }

    async fn wait_pipeline(
        &self,
        task: &Task,
        run: &Run,
        step: usize,
        record: &ActionRecord,
    ) -> Result<PipelineEnd> {
        let agent = Actor::agent(&run.agent);
        let mut tx = self.store.write("pausing a pipeline for approval").await?;
        let n = sqlx::query(
            "UPDATE pipeline_runs SET state = 'waiting', updated_at = $1 WHERE task_id = $2 AND run = $3 AND state = 'running'",
        )
        .bind(now_ms())
        .bind(&task.id)
        .bind(run.run)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("pausing a pipeline for approval"))?
        .rows_affected();
        let mut fired = Fired::new();
        if n == 1 {
            let waiting = NewEvent::new(kind::PIPELINE_WAITING, &agent)
                .project(&task.project)
                .agent(&run.agent)
                .task(Some(&task.id))
                .action(&record.id)
                .payload(serde_json::json!({ "run": run.run, "step": step + 1 }));
            let wait = TaskMove::to(TaskStatus::AwaitingApproval);
            fired.extend(
                transitions::task(&mut tx, &task.id, wait, Some(waiting))
                    .await?
                    .event(),
            );
        }
        tx.commit()
            .await
            .map_err(EngineError::store("pausing a pipeline for approval"))?;
        self.fire_hooks(&task.project, &fired).await;
        Ok(PipelineEnd::Waiting {
            action: record.id.clone(),
            step: step + 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_are_recognised_by_their_words() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "sh: 1: cannot create /work/x: Permission denied",
                Some("permission denied"),
            ),
            (
                "touch: cannot touch '/work/x': Read-only file system",
                Some("read-only file system"),
            ),
            (
                "mkdir: Operation not permitted",
                Some("operation not permitted"),
            ),
            ("open failed: EACCES", Some("eacces")),
            ("error: EROFS", Some("erofs")),
            ("fatal: cannot write to the index", Some("cannot write")),
            ("target/ is not writable", Some("not writable")),
            ("exited with code 1: assertion failed", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(permission_pattern(text), *want, "{text:?}");
        }
    }
}
