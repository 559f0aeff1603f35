//! The delivery chain's consequences for its task, and the gate.
//!
//! ADR 0048: the gate opens only after the PR is open. `task.pr_settled`
//! follows the `pr_open` action's outcome — whoever executed it, the agent's
//! loop or a person's `berth approve` — `opened: true` moves the task to
//! `in_review`; a PR that was refused or failed, or a commit or push that
//! was, returns the task with a diagnosis instead of leaving its agent
//! waiting for a gate nobody will open. The worktree is recycled only when
//! the task leaves the agent (returned, merged, closed): no pending action
//! ever outlives its worktree.

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, ActionStatus, Outcome};
use crate::agents::AgentStatus;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::store::Tx;
use crate::tasks::TaskStatus;
use crate::transitions::{self, AgentMove, AgentMoved, TaskMove};

/// Work that follows a settled transaction (git, outside the store's lock).
#[derive(Debug, Default)]
#[must_use]
pub(crate) struct AfterSettle {
    /// `(project, agent, task)`: the worktree to recycle, and the task it served.
    recycle: Option<(String, String, String)>,
}

pub(crate) fn is_chain(kind: &str) -> bool {
    matches!(kind, "git_commit" | "git_push" | "pr_open")
}

impl Engine {
    /// What an executed (or failed) action means for its task, in `tx`.
    pub(crate) async fn settle_in_tx(
        &self,
        tx: &mut Tx,
        record: &ActionRecord,
        outcome: &Outcome,
    ) -> Result<AfterSettle> {
        let kind = record.action.kind();
        // A merge settles its PR whether or not a task is behind it (an
        // agent may open one on its own, over MCP).
        if kind == "git_merge" && outcome.succeeded {
            return self.resolve_merged(tx, record, outcome).await;
        }
        let Some(task) = record.task.as_deref() else {
            return Ok(AfterSettle::default());
        };
        if kind == "pr_open" {
            return if outcome.succeeded {
                let pr = match &outcome.result {
                    Some(ActionResult::PrOpen { pr, number, .. }) => {
                        serde_json::json!({ "id": pr, "number": number })
                    }
                    _ => serde_json::Value::Null,
                };
                let system = Actor::system();
                emit(
                    tx,
                    NewEvent::new(kind::TASK_PR_SETTLED, &system)
                        .project(&record.project)
                        .agent(&record.agent)
                        .task(Some(task))
                        .action(&record.id)
                        .payload(serde_json::json!({ "opened": true, "pr": pr })),
                )
                .await?;
                // A PR opened again while the gate is open (an auto-fix
                // round's) moves nothing and logs no second `task.in_review`.
                let in_review = NewEvent::new(kind::TASK_IN_REVIEW, &system)
                    .project(&record.project)
                    .agent(&record.agent)
                    .task(Some(task))
                    .payload(serde_json::json!({ "pr": pr }));
                let _ = transitions::task(
                    tx,
                    task,
                    TaskMove::to(TaskStatus::InReview),
                    Some(in_review),
                )
                .await?;
                let _ = transitions::agent(
                    tx,
                    &record.agent,
                    AgentMove::follow(task, AgentStatus::InReview),
                )
                .await?;
                crate::breaker::reset(tx, &record.agent).await?;
                Ok(AfterSettle::default())
            } else {
                let why = format!(
                    "the PR could not be opened: {}",
                    outcome.diagnostic.as_deref().unwrap_or("failed")
                );
                // A failure (not a refusal: a person's call never counts).
                crate::breaker::count_failure(tx, self, &record.agent, &record.project, &why)
                    .await?;
                self.return_task(tx, record, &why).await
            };
        }
        if is_chain(kind) && !outcome.succeeded {
            let why = format!(
                "{kind} failed, so no PR can be opened: {}",
                outcome.diagnostic.as_deref().unwrap_or("failed")
            );
            crate::breaker::count_failure(tx, self, &record.agent, &record.project, &why).await?;
            return self.return_task(tx, record, &why).await;
        }
        Ok(AfterSettle::default())
    }

    /// What a refusal (by the policy or a person) means for its task.
    pub(crate) async fn after_refusal(&self, record: &ActionRecord) -> Result<()> {
        if record.task.is_none() || !is_chain(record.action.kind()) {
            return Ok(());
        }
        let who = match record.status {
            ActionStatus::Denied => format!(
                "denied by {}",
                record.decided_by.as_deref().unwrap_or("a person")
            ),
            _ => format!(
                "refused by the policy ({}: {})",
                record.decision.stage.as_str(),
                record.decision.reason
            ),
        };
        let why = match &record.diagnostic {
            Some(r) if record.status == ActionStatus::Denied => {
                format!("{} {who}: {r}", record.action.kind())
            }
            _ => format!("{} {who}", record.action.kind()),
        };
        let mut tx = self.store.write("returning a task").await?;
        let after = self.return_task(&mut tx, record, &why).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("returning a task"))?;
        self.after_settle(after).await
    }

    /// `pr_settled {opened: false}` and the task returned with `why`; the
    /// agent is released.
    async fn return_task(
        &self,
        tx: &mut Tx,
        record: &ActionRecord,
        why: &str,
    ) -> Result<AfterSettle> {
        let Some(task) = record.task.as_deref() else {
            return Ok(AfterSettle::default());
        };
        let system = Actor::system();
        emit(
            tx,
            NewEvent::new(kind::TASK_PR_SETTLED, &system)
                .project(&record.project)
                .agent(&record.agent)
                .task(Some(task))
                .action(&record.id)
                .payload(serde_json::json!({ "opened": false, "diagnosis": why })),
        )
        .await?;
        self.release(
            tx,
            &record.project,
            &record.agent,
            task,
            TaskStatus::Returned,
            why,
            kind::TASK_RETURNED,
        )
        .await
    }

    /// Ends the agent's hold on `task`: the task moves to `to`, the agent is
    /// idle again and its worktree is recycled after the transaction.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn release(
        &self,
        tx: &mut Tx,
        project: &str,
        agent: &str,
        task: &str,
        to: TaskStatus,
        why: &str,
        event: &str,
    ) -> Result<AfterSettle> {
        let system = Actor::system();
        let ended = NewEvent::new(event, &system)
            .project(project)
            .agent(agent)
            .task(Some(task))
            .payload(serde_json::json!({ "reason": why }));
        let mv = TaskMove::to(to).diagnosis((to != TaskStatus::Done).then_some(why));
        let _ = transitions::task(tx, task, mv, Some(ended)).await?;
        // A paused agent stays paused (the breaker may have just tripped).
        let released = transitions::agent(tx, agent, AgentMove::release(task)).await?;
        Ok(AfterSettle {
            recycle: (released != AgentMoved::NotHolding)
                .then(|| (project.to_string(), agent.to_string(), task.to_string())),
        })
    }

    /// Recycles the released agent's worktree (`worktree.recycled`).
    pub(crate) async fn after_settle(&self, after: AfterSettle) -> Result<()> {
        let Some((project, agent, task)) = after.recycle else {
            return Ok(());
        };
        let a = self.agent(&agent).await?;
        if a.task.is_some() {
            // It claimed another task meanwhile (another process): its
            // worktree is that task's now.
            return Ok(());
        }
        // Its container goes first and the berth is recorded down before
        // the worktree is touched (as `down` does): no container runs on a
        // removed worktree, and a failed recycle is retried by `down`/`up`.
        let loaded = self.load_project(&project).await?;
        self.close_berth(&a, &loaded.config, false, &Actor::system())
            .await?;
        match self
            .recycle_after_down(&a, &loaded.project, Some(&task), false)
            .await
        {
            Ok(Some(saved)) => {
                tracing::info!(agent = %agent, refname = %saved.refname, "saved the agent's unpushed work before recycling");
                Ok(())
            }
            Ok(None) => Ok(()),
            // The outcome is recorded; the worktree stays for the next
            // `down`, which says why.
            Err(e @ EngineError::SaveFailed { .. }) => {
                tracing::warn!(agent = %agent, error = %e, "kept the worktree: its work could not be saved");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
