//! Running a claimed (`executing`) action and recording how it ended:
//! `action.executed` or `action.failed`, and what that means for its task
//! (`gate.rs`), in one transaction. Every path that runs an action —
//! propose, approve, retry — ends here.

use std::sync::Arc;

use berth_sandbox::Sandbox;

use super::record::to_json;
use super::{ActionRecord, ActionResult, ActionStatus, Outcome, OutputSink};
use crate::Engine;
use crate::agents::Agent;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;

impl Engine {
    /// Executes a claimed (`executing`) action and records how it ended.
    pub(super) async fn run_and_finish(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        sandbox: Option<Arc<dyn Sandbox>>,
        sink: Option<OutputSink>,
    ) -> Result<Outcome> {
        let outcome = self.execute(record, agent, sandbox, sink).await;
        if let Err(e) = self.finish(record, &outcome).await {
            // It ran, and the store would not take how it ended (a full
            // disk): the action stays `executing` until `berth serve` or a
            // recovery marks it interrupted; the log keeps what happened.
            tracing::error!(
                action = %record.id,
                succeeded = outcome.succeeded,
                diagnostic = outcome.diagnostic.as_deref().unwrap_or(""),
                "the outcome of an action that ran could not be recorded: {e}"
            );
            return Err(e);
        }
        Ok(outcome)
    }

    /// Records the end of an executing action: `action.executed` or
    /// `action.failed`, and what follows for its task.
    pub(crate) async fn finish(&self, record: &ActionRecord, outcome: &Outcome) -> Result<()> {
        let status = if outcome.succeeded {
            ActionStatus::Executed
        } else {
            ActionStatus::Failed
        };
        let stored = outcome.result.as_ref().map(|r| r.for_store());
        let mut tx = self.store.write("recording an action's outcome").await?;
        let n = sqlx::query(
            "UPDATE proposed_actions SET status = $1, result = $2, diagnostic = $3, updated_at = $4 \
             WHERE id = $5 AND status = 'executing'",
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
        emit(
            &mut tx,
            NewEvent::new(event, &actor)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(payload),
        )
        .await?;
        let after = self.settle_in_tx(&mut tx, record, outcome).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording an action's outcome"))?;
        self.after_settle(after).await
    }
}
