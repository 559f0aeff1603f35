//! Pipeline tasks and their execution modes (the Kin ADR).
//!
//! A pipeline task's steps are terminal commands, proposed one after the
//! other by the task's agent in its berth, so each is decided, executed and
//! logged like any action. Steps run with `/work` read-only unless the task
//! or the step asks to write. The execution mode — the task's, else the
//! project's, else `review` — is computed once when a run starts and kept
//! with the run, so changing it later never changes a run under way.
//!
//! - auto: success → `done`, `task_auto_approved`, the followup generator,
//!   `pipeline_completed`. A step that fails on a permission error
//!   (`task_permission_retry`) is retried once with write access, which then
//!   holds for the rest of the run; a second failure, or any other, blocks.
//! - review: success → `in_review` and `pipeline_completed`; `berth task
//!   approve` runs the followups; any failure blocks.
//!
//! Durability: the run's position (step, attempt, write access, phase) is a
//! row in the store, each step's action has a deterministic idempotency key
//! (`pipeline:<task>:<run>:<step>:<attempt>`), and every transition is one
//! write transaction with the events it causes. Running a task again after a
//! crash replays what executed and continues; a step that was executing is
//! `interrupted` and never re-run on its own (the task blocks). A lease in the
//! run's row (the owner's executor id, and a deadline for owners on other
//! hosts) keeps two processes from running one task's pipeline at once.
//!
//! One concern a file: `lease` (which process runs a task's pipeline, and
//! the run it takes up), `drive` (the steps, one action each, and where a
//! run stops: waiting, blocked, the permission retry), `end` (what
//! success means in each mode, and a person's approval or rejection).

mod drive;
mod end;
mod lease;

use serde::Serialize;
use sqlx::Row;

pub use drive::{PERMISSION_PATTERNS, permission_error, permission_pattern};
pub(crate) use lease::Run;
use lease::load_run;

use crate::Engine;
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::Actor;
use crate::ids::short;
use crate::tasks::Task;

/// Where a run of a pipeline stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PipelineEnd {
    /// Auto mode: every step succeeded; the task is done.
    Done,
    /// Review mode: every step succeeded; the task waits for a person.
    InReview,
    /// A step waits for a person's approval (`berth approve ID`, then run
    /// the task again).
    Waiting { action: String, step: usize },
    /// A step failed, was refused or was interrupted.
    Blocked { diagnosis: String },
}

/// What `run_pipeline` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PipelineReport {
    pub task: String,
    pub agent: String,
    pub run: i64,
    pub mode: ExecutionMode,
    pub end: PipelineEnd,
    /// Said plainly when read-only steps ran with `/work` writable.
    pub access_note: Option<String>,
    /// Followup tasks created (auto mode) in this call.
    pub followups: Vec<String>,
}

/// Events written in a transaction, for the hooks to run after it commits.
pub(crate) type Fired = Vec<i64>;

impl Engine {
    /// Runs (or resumes) a pipeline task's run as far as it can go now. The
    /// agent is `agent`, else the task's, else the project's only agent.
    pub async fn run_pipeline(
        &self,
        task: &str,
        agent: Option<&str>,
        actor: &Actor,
    ) -> Result<PipelineReport> {
        self.run_pipeline_with(task, agent, false, actor).await
    }

    /// `run_pipeline`, and with `restart` a blocked task starts a new run
    /// from its first step. Never on its own: a blocked step may have been
    /// interrupted half-done, and only a person knows whether running the
    /// pipeline over is safe.
    pub async fn run_pipeline_with(
        &self,
        task: &str,
        agent: Option<&str>,
        restart: bool,
        actor: &Actor,
    ) -> Result<PipelineReport> {
        let task = self.task(task).await?;
        let steps = task.steps.clone().ok_or_else(|| EngineError::AgentTask {
            task: short(&task.id).to_string(),
            why: " (it has no steps): its agent's loop delivers it (`berth agent run AGENT`); \
                  a pipeline task is created with `berth task create --step 'CMD'`",
        })?;
        let agent = self.pipeline_agent(&task, agent).await?;
        // The owner: this process, and this call within it (a server runs
        // many pipelines in one process).
        let owner = format!(
            "{}#{}",
            crate::recovery::executor_id(),
            crate::ids::new_id()
        );
        let run = self
            .take_lease(&task, &agent, &owner, restart, actor)
            .await?;
        let result = self.drive(&task, &steps, run, &owner, actor).await;
        let released = self.release_lease(&task.id, &owner).await;
        let report = result?;
        released?;
        Ok(report)
    }

    /// The agent that runs a task's steps.
    async fn pipeline_agent(&self, task: &Task, asked: Option<&str>) -> Result<String> {
        let name = match (asked, &task.agent) {
            (Some(a), _) => a.to_string(),
            (None, Some(a)) => a.clone(),
            (None, None) => {
                let mut of_project: Vec<String> = self
                    .agents()
                    .await?
                    .into_iter()
                    .filter(|a| a.project == task.project)
                    .map(|a| a.name)
                    .collect();
                match of_project.len() {
                    1 => of_project.remove(0),
                    0 => {
                        return Err(EngineError::NoAgent {
                            project: task.project.clone(),
                            task: short(&task.id).to_string(),
                        });
                    }
                    _ => {
                        return Err(EngineError::SeveralAgents {
                            project: task.project.clone(),
                            agents: of_project.join(", "),
                            task: short(&task.id).to_string(),
                        });
                    }
                }
            }
        };
        let a = self.agent(&name).await?;
        if a.project != task.project {
            return Err(EngineError::WrongProject {
                agent: name,
                actual: a.project,
                requested: task.project.clone(),
            });
        }
        if a.status == crate::agents::AgentStatus::Paused {
            return Err(EngineError::Paused { agent: name });
        }
        Ok(name)
    }

    /// Pipeline tasks waiting for a person whose actions are all decided
    /// now (approved, denied or done): a run of each goes on from where it
    /// stopped. `berth serve` resumes them in the background; in a terminal
    /// it is `berth task run T` again.
    pub async fn pipelines_to_resume(&self) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT r.task_id FROM pipeline_runs r \
             WHERE r.state = 'waiting' \
               AND NOT EXISTS (SELECT 1 FROM proposed_actions a \
                               WHERE a.task_id = r.task_id AND a.status = 'pending') \
             ORDER BY r.updated_at, r.task_id",
        )
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing pipelines to resume"))?;
        rows.iter()
            .map(|r| {
                r.try_get("task_id")
                    .map_err(EngineError::store("listing pipelines to resume"))
            })
            .collect()
    }

    /// The run of a pipeline task, as the store holds it (for `task show`).
    pub async fn pipeline_state(&self, task: &str) -> Result<Option<serde_json::Value>> {
        let t = self.task(task).await?;
        let run = load_run(self.store.pool(), &t.id).await?;
        Ok(run.map(|r| {
            serde_json::json!({
                "run": r.run,
                "agent": r.agent,
                "mode": r.mode.as_str(),
                "write_granted": r.write_granted,
                "next_step": r.next_step + 1,
                "attempt": r.attempt,
                "state": r.state,
                "phase": r.phase,
                "access_note": r.access_note,
                "lease_owner": r.lease_owner,
            })
        }))
    }
}
