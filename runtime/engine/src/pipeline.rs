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

use berth_policy::Action;
use serde::Serialize;
use sqlx::Row;

use crate::Engine;
use crate::actions::{ActionParams, ActionRecord, ActionResult, ActionStatus, Proposal};
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{now_ms, short};
use crate::store::Tx;
use crate::tasks::{PipelineStep, Task, TaskStatus};
use crate::transitions::{self, TaskMove};

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

async fn load_run(ex: impl sqlx::SqliteExecutor<'_>, task: &str) -> Result<Option<Run>> {
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
        let steps = task.steps.clone().ok_or_else(|| {
            EngineError::State(format!(
                "task {} is an agent task (it has no steps): its agent's loop delivers it (`berth agent run AGENT`); \
                 a pipeline task is created with `berth task create --step 'CMD'`",
                short(&task.id)
            ))
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
                        return Err(EngineError::State(format!(
                            "project `{}` has no agent to run task {}: `berth agent activate AGENT --project {}`",
                            task.project,
                            short(&task.id),
                            task.project
                        )));
                    }
                    _ => {
                        return Err(EngineError::State(format!(
                            "project `{}` has several agents ({}): say which runs task {} with `--agent`",
                            task.project,
                            of_project.join(", "),
                            short(&task.id)
                        )));
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
            return Err(EngineError::State(format!(
                "agent `{name}` is paused by the circuit breaker: look at its last failures (`berth events --agent {name}`), \
                 then `berth agent resume {name}`"
            )));
        }
        Ok(name)
    }

    /// Takes the task's lease and returns the run to drive: the current one
    /// when it is under way (or finishing), else a new one.
    async fn take_lease(
        &self,
        task: &Task,
        agent: &str,
        me: &str,
        restart: bool,
        actor: &Actor,
    ) -> Result<Run> {
        let (config, _) = self.load_project_files(&task.project)?;
        let ttl = i64::try_from(config.sandbox.timeout_secs)
            .unwrap_or(i64::MAX / 4_000)
            .saturating_mul(1000)
            .saturating_add(LEASE_MARGIN_MS);
        let now = now_ms();
        let mut fired = Fired::new();
        let mut tx = self.store.write("taking a pipeline's lease").await?;
        let current = load_run(&mut *tx, &task.id).await?;
        // Re-read the task under the write lock.
        let task = task_in_tx(&mut tx, &task.id).await?;
        if let Some(run) = &current
            && let Some(owner) = &run.lease_owner
            && owner != me
            && !crate::recovery::executor_is_dead(owner.split('#').next().unwrap_or(owner))
            && run.lease_until.is_some_and(|u| u > now)
        {
            return Err(EngineError::State(format!(
                "task {}'s pipeline is being run by another berth process ({owner}): wait for it to finish; \
                 two processes never run one task's pipeline at once",
                short(&task.id)
            )));
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
                    return Err(EngineError::State(format!(
                        "task {} is blocked: {}; `berth task run {} --restart` runs the pipeline over from its first step",
                        short(&task.id),
                        task.diagnosis.as_deref().unwrap_or("no diagnosis"),
                        short(&task.id)
                    )));
                }
                other => {
                    return Err(EngineError::State(format!(
                        "task {} is {}: nothing to run{}",
                        short(&task.id),
                        other.as_str(),
                        match other {
                            TaskStatus::InReview => {
                                "; a person decides: `berth task approve ID` or `berth task reject ID --reason R`"
                            }
                            TaskStatus::Done => "; it is done",
                            _ => "",
                        }
                    )));
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

    async fn release_lease(&self, task: &str, owner: &str) -> Result<()> {
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

    /// Runs the steps from where the run stands, then what follows success.
    async fn drive(
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
                    self.ensure_berth(&run.agent, &task.project, actor).await?;
                    let proposal = Proposal::by_agent(
                        &run.agent,
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
                ActionStatus::Pending | ActionStatus::Executing => {
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
                ActionStatus::Refused | ActionStatus::Denied => {
                    let reason = match record.propose_status() {
                        crate::actions::ProposeStatus::Refused { reason } => reason,
                        _ => "refused".into(),
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

    async fn renew_lease(&self, task: &str, owner: &str) -> Result<()> {
        let t = self.task(task).await?;
        let (config, _) = self.load_project_files(&t.project)?;
        let ttl = i64::try_from(config.sandbox.timeout_secs)
            .unwrap_or(i64::MAX / 4_000)
            .saturating_mul(1000)
            .saturating_add(LEASE_MARGIN_MS);
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
            return Err(EngineError::State(format!(
                "task {}'s pipeline lease was taken by another process; this one stops",
                short(task)
            )));
        }
        Ok(())
    }

    /// Brings the agent's berth up when it is down.
    async fn ensure_berth(&self, agent: &str, project: &str, actor: &Actor) -> Result<()> {
        let a = self.agent(agent).await?;
        if a.berth.is_none() {
            self.up(agent, project, None, actor).await?;
        }
        Ok(())
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

    /// Every step succeeded: auto → `done` and `task_auto_approved`;
    /// review → `in_review` and `pipeline_completed`. One transaction.
    async fn succeed(&self, task: &Task, run: &Run) -> Result<Run> {
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
            crate::breaker::reset(&mut tx, &run.agent).await?;
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
    async fn complete_run(&self, task: &Task, run: &Run, mode: &str) -> Result<()> {
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
            return Err(EngineError::State(format!(
                "task {} is an agent task: its gate is its PR (`berth pr merge` or `berth pr close`)",
                short(&task.id)
            )));
        }
        let mut fired = Fired::new();
        let mut tx = self.store.write("approving a task").await?;
        let run = load_run(&mut *tx, &task.id).await?.ok_or_else(|| {
            EngineError::State(format!(
                "task {} has not run yet: `berth task run {}`",
                short(&task.id),
                short(&task.id)
            ))
        })?;
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
            return Err(EngineError::State(format!(
                "task {} is done: only a pipeline task in review can be approved",
                short(&task.id),
            )));
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
            return Err(EngineError::State(format!(
                "task {} is an agent task: its gate is its PR (`berth pr close`)",
                short(&task.id)
            )));
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
            return Err(EngineError::State(format!(
                "task {} is returned already: only a task in review can be rejected",
                short(&task.id),
            )));
        };
        tx.commit()
            .await
            .map_err(EngineError::store("rejecting a task"))?;
        self.fire_hooks(&task.project, &[id]).await;
        self.task(&task.id).await
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

async fn task_in_tx(tx: &mut Tx, id: &str) -> Result<Task> {
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
