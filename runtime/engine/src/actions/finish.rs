//! Running a claimed (`executing`) action and recording how it ended:
//! `action.executed` or `action.failed`, and what that means for its task
//! (`gate.rs`), in one transaction. Every path that runs an action —
//! propose, approve, retry — ends here. A cancel request (`berth cancel`,
//! recorded before the command was killed) is read in that same
//! transaction: then the action ends `cancelled` (`action.cancelled`) with
//! the output so far, whatever the killed command's exit said.

use std::sync::Arc;

use berth_sandbox::Sandbox;

use super::record::to_json;
use super::{ActionRecord, ActionResult, ActionStatus, CallerEnv, Outcome, OutputSink};
use crate::Engine;
use crate::agents::Agent;
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, emit, kind};
use crate::ids::now_ms;

impl Engine {
    /// Executes a claimed (`executing`) action and records how it ended.
    /// `config` is the project's, as loaded for the decision: execution
    /// reads it, never the file again.
    pub(super) async fn run_and_finish(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        config: &ProjectConfig,
        sandbox: Option<Arc<dyn Sandbox>>,
        sink: Option<OutputSink>,
        caller_env: Option<&CallerEnv>,
    ) -> Result<Outcome> {
        let outcome = self
            .execute(record, agent, config, sandbox, sink, caller_env)
            .await;
        match self.finish(record, &outcome).await {
            Ok(ended) => Ok(ended),
            Err(e) => {
                // It ran, and the store would not take how it ended (a full
                // disk): the action stays `executing` until `berth serve` or a
                // recovery marks it interrupted; the log keeps what happened.
                tracing::error!(
                    action = %record.id,
                    succeeded = outcome.succeeded,
                    diagnostic = outcome.diagnostic.as_deref().unwrap_or(""),
                    "the outcome of an action that ran could not be recorded: {e}"
                );
                Err(e)
            }
        }
    }

    /// Records the end of an executing action: `action.executed` or
    /// `action.failed`, and what follows for its task — or, when a person
    /// asked to cancel it, `action.cancelled` and the outcome rewritten to
    /// say so (returned).
    pub(crate) async fn finish(&self, record: &ActionRecord, outcome: &Outcome) -> Result<Outcome> {
        // Its transaction logs the action's end before it moves the task
        // and the agent, so on PostgreSQL it can deadlock with a writer of
        // those rows: run again whole then ([`crate::Store::retrying`]).
        // The worktree is recycled once, after the commit.
        let (ended, after) = self
            .store
            .retrying("recording an action's outcome", || {
                self.finish_once(record, outcome)
            })
            .await?;
        if let Some(after) = after {
            self.after_settle(after).await?;
        }
        Ok(ended)
    }

    /// [`Engine::finish`]'s transaction, one attempt: the outcome, and what
    /// to do after its commit.
    async fn finish_once(
        &self,
        record: &ActionRecord,
        outcome: &Outcome,
    ) -> Result<(Outcome, Option<crate::gate::AfterSettle>)> {
        let mut tx = self.store.write("recording an action's outcome").await?;
        let status = if outcome.succeeded {
            ActionStatus::Executed
        } else {
            ActionStatus::Failed
        };
        let stored = outcome.result.as_ref().map(|r| r.for_store());
        // The usual case first, in one statement: still executing, no
        // cancel asked for. Only when that moves nothing is the row read,
        // in this same transaction (nothing changes it meanwhile), to say
        // why: a cancel request, or a recovery that marked it interrupted.
        let n = sqlx::query(
            "UPDATE proposed_actions SET status = $1, result = $2, diagnostic = $3, updated_at = $4 \
             WHERE id = $5 AND status = 'executing' AND cancel_requested_by IS NULL",
        )
        .bind(status.as_str())
        .bind(stored.as_ref().map(to_json).transpose()?)
        .bind(outcome.diagnostic.as_deref())
        .bind(now_ms())
        .bind(&record.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("recording an action's outcome"))?
        .rows_affected();
        if n != 1 {
            let cancel: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT cancel_requested_by, executor FROM proposed_actions WHERE id = $1 AND status = 'executing'",
            )
            .bind(&record.id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(EngineError::store("recording an action's outcome"))?;
            if let Some((Some(by), executor)) = cancel {
                let ended = cancelled_outcome(outcome, &by);
                self.record_cancelled(&mut tx, record, executor.as_deref(), &ended, &by)
                    .await?;
                tx.commit()
                    .await
                    .map_err(EngineError::store("recording an action's outcome"))?;
                return Ok((ended, None));
            }
            // Recovery marked it interrupted while we ran (we were thought
            // dead): the log already says so; say what really happened too.
            tracing::warn!(action = %record.id, "outcome of an action no longer executing");
        }
        let event = if outcome.succeeded {
            kind::ACTION_EXECUTED
        } else {
            kind::ACTION_FAILED
        };
        let actor = Actor::system();
        let summary = outcome.result.as_ref().map(ActionResult::summary);
        let mut payload = serde_json::json!({
            "action_type": record.action.kind(),
            "result": summary,
            "diagnostic": outcome.diagnostic,
        });
        // The row holds this result, and its summary is this one (no output
        // cut): the log's reader joins it back instead of a copy.
        if n == 1
            && stored.as_ref().map(ActionResult::summary) == summary
            && let serde_json::Value::Object(map) = &mut payload
        {
            map.remove("result");
        }
        emit(&mut tx, record.event(event, &actor).payload(payload)).await?;
        let after = self.settle_in_tx(&mut tx, record, outcome).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording an action's outcome"))?;
        Ok((outcome.clone(), Some(after)))
    }

    /// Records an executing action `cancelled` by `by` with `outcome` (its
    /// output so far), in `tx`, when it is still the run of `executor` and
    /// the request stands; whether it did. Only a terminal command can be
    /// cancelled, and like a person's denial of one it changes nothing for
    /// its task: the agent is told and goes on; the circuit breaker does
    /// not count it.
    pub(crate) async fn record_cancelled(
        &self,
        tx: &mut crate::store::Tx,
        record: &ActionRecord,
        executor: Option<&str>,
        outcome: &Outcome,
        by: &str,
    ) -> Result<bool> {
        let op = "recording a cancelled action";
        let stored = outcome.result.as_ref().map(|r| r.for_store());
        let n = sqlx::query(
            "UPDATE proposed_actions SET status = 'cancelled', result = COALESCE($1, result), diagnostic = $2, \
             updated_at = $3 WHERE id = $4 AND status = 'executing' AND executor IS NOT DISTINCT FROM $5 \
             AND cancel_requested_by IS NOT NULL",
        )
        .bind(stored.as_ref().map(to_json).transpose()?)
        .bind(outcome.diagnostic.as_deref())
        .bind(now_ms())
        .bind(&record.id)
        // The run the request was for: a retry since (another executor, the
        // request cleared) is not cancelled by it.
        .bind(executor)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if n != 1 {
            return Ok(false);
        }
        emit(
            tx,
            record
                .event(kind::ACTION_CANCELLED, &Actor::system())
                .payload(serde_json::json!({
                    "action_type": record.action.kind(),
                    "cancelled_by": by,
                    "result": outcome.result.as_ref().map(ActionResult::summary),
                    "diagnostic": outcome.diagnostic,
                })),
        )
        .await?;
        Ok(true)
    }
}

/// The outcome of a command a person cancelled: failed, its result (the
/// output so far) kept, the diagnostic saying who stopped it.
fn cancelled_outcome(outcome: &Outcome, by: &str) -> Outcome {
    let what = match &outcome.result {
        Some(_) => format!(
            "cancelled by {by} while it ran; its whole process tree was killed and its output so far is kept"
        ),
        None => format!("cancelled by {by} before its command started; nothing ran"),
    };
    Outcome::failed(what, outcome.result.clone())
}
