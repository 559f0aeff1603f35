//! A person stops one executing action (`berth cancel`, the Stop button of
//! `berth serve`), from any berth process, without taking the berth down.
//!
//! The order makes it safe across processes: first the request is recorded
//! (`cancel_requested_by`, `action.cancel_requested`) in a conditional
//! UPDATE that only an `executing` action takes; then the command's whole
//! process tree is killed through the sandbox, found by the action id alone
//! ([`berth_sandbox::Sandbox::cancel`]). The process executing the action
//! reads the request in the transaction that records the end
//! (`finish.rs`), so the action ends `cancelled` with its output so far — a
//! command that ended on its own just before the request was recorded ends
//! as it ended, and the request is refused as too late. When the executing
//! process is gone, the end is recorded here (or by recovery) as
//! `cancelled`, not `interrupted`.

use std::time::Duration;

use berth_policy::Action;
use serde::Serialize;

use super::record::{ACTION_COLUMNS, action_in_tx, from_row};
use super::{ActionRecord, ActionStatus, Outcome};
use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, emit, kind};

/// How long `cancel_action` waits for the executing process to record the
/// end after the kill (a runner exec returns within about a second of its
/// shim's death; a Docker exec within its stream's close).
const END_WAIT: Duration = Duration::from_secs(20);

/// What a cancel did.
#[derive(Debug, Clone, Serialize)]
pub struct Cancelled {
    /// The action as it stands after the cancel: `cancelled` once the
    /// process executing it recorded the end; still `executing` when it had
    /// not yet within the wait.
    #[serde(flatten)]
    pub action: ActionRecord,
    /// Whether a running command of it was found and killed.
    pub killed: bool,
}

impl Engine {
    /// Cancels the executing action `id` as `user`: records the request,
    /// kills its command's process tree, and waits (bounded) for the end
    /// to be recorded. Only an executing terminal command can be cancelled:
    /// a pending action is denied instead, an ended one has nothing to stop.
    pub async fn cancel_action(&self, id: &str, user: &Actor) -> Result<Cancelled> {
        let record = self.action(id).await?;
        if record.status != ActionStatus::Executing {
            return Err(not_executing(&record));
        }
        if !matches!(record.action, Action::Terminal { .. }) {
            return Err(EngineError::NotCancellable {
                id: record.id.clone(),
                kind: record.action.kind().to_string(),
            });
        }
        let op = "requesting an action's cancel";
        let mut tx = self.store.write(op).await?;
        let requested = sqlx::query(&format!(
            "UPDATE proposed_actions SET cancel_requested_by = COALESCE(cancel_requested_by, $1) \
             WHERE id = $2 AND status = 'executing' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(&user.id)
        .bind(&record.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let Some(requested) = requested else {
            // It ended meanwhile, in another process.
            return Err(not_executing(&action_in_tx(&mut tx, &record.id, op).await?));
        };
        let record = from_row(&requested)?;
        emit(
            &mut tx,
            record
                .event(kind::ACTION_CANCEL_REQUESTED, user)
                .payload(serde_json::json!({
                    "action_type": record.action.kind(),
                    "executor": record.executor,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;

        let mut killed =
            self.kill_action_exec(&record)
                .await
                .map_err(|e| EngineError::CancelNotKilled {
                    id: record.id.clone(),
                    short: crate::ids::short(&record.id).to_string(),
                    why: e.to_string(),
                })?;
        let deadline = tokio::time::Instant::now() + END_WAIT;
        let mut round = 0u32;
        loop {
            // Its executor died before it could record the end: nobody else will.
            if record
                .executor
                .as_deref()
                .is_some_and(crate::recovery::executor_is_dead)
            {
                self.cancel_orphan(&record, &user.id).await?;
            }
            let now = self.action(&record.id).await?;
            if now.status != ActionStatus::Executing || tokio::time::Instant::now() >= deadline {
                return Ok(Cancelled {
                    action: now,
                    killed,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            round = round.wrapping_add(1);
            // A command whose berth was still setting it up when the kill
            // came (no exec to find yet) is killed once it runs.
            if round.is_multiple_of(10) {
                match self.kill_action_exec(&record).await {
                    Ok(found) => killed |= found,
                    Err(e) => {
                        tracing::warn!(action = %record.id, error = %e, "killing a cancelled command again failed")
                    }
                }
            }
        }
    }

    /// Who asked to cancel the executing action `id`, if anyone did: its
    /// command then does not start.
    pub(crate) async fn cancel_requested_by(&self, id: &str) -> Result<Option<String>> {
        let by: Option<Option<String>> =
            sqlx::query_scalar("SELECT cancel_requested_by FROM proposed_actions WHERE id = $1")
                .bind(id)
                .fetch_optional(self.store.pool())
                .await
                .map_err(EngineError::store("reading a cancel request"))?;
        Ok(by.flatten())
    }

    /// Kills the command of `record` in its agent's berth; whether one was
    /// running. A berth that is down runs nothing (`down` killed it all).
    async fn kill_action_exec(&self, record: &ActionRecord) -> Result<bool> {
        let agent = self.agent(&record.agent).await?;
        let project = self.load_project(&record.project).await?;
        let Some(sandbox) = self.sandbox_for(&agent, &project.config, false).await? else {
            return Ok(false);
        };
        Ok(sandbox.cancel(&record.id).await?)
    }

    /// Records `cancelled` for an action whose executing process is gone
    /// (crashed after the request): its output was never recorded.
    pub(crate) async fn cancel_orphan(&self, record: &ActionRecord, by: &str) -> Result<bool> {
        let outcome = Outcome::failed(
            format!(
                "cancelled by {by}; the berth process that was executing it ({}) stopped before recording its output",
                record.executor.as_deref().unwrap_or("unknown")
            ),
            None,
        );
        let op = "recording a cancelled action";
        let mut tx = self.store.write(op).await?;
        let recorded = self
            .record_cancelled(&mut tx, record, record.executor.as_deref(), &outcome, by)
            .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(recorded)
    }
}

/// Why `record` cannot be cancelled, and what to do instead.
fn not_executing(record: &ActionRecord) -> EngineError {
    let short = crate::ids::short(&record.id);
    let hint = match record.status {
        ActionStatus::Pending => {
            format!("it has not started: deny it instead with `berth deny {short}`")
        }
        ActionStatus::Interrupted => format!(
            "its berth process died and nothing of it runs; `berth retry {short}` runs it again"
        ),
        ActionStatus::Approved => {
            "it is approved and waits for the worker holding its agent to run it; \
             once it runs it can be cancelled"
                .to_string()
        }
        _ => "it has already ended, so nothing runs to cancel".to_string(),
    };
    EngineError::NotExecuting {
        id: record.id.clone(),
        status: record.status.as_str().to_string(),
        hint,
    }
}
