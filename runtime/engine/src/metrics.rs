//! Metrics read from the log, never guessed (ADR 0048): a human approval is
//! a `proposed_action.approved` event; an automatic one is a
//! `proposed_action.created` whose status is `auto_approved`, never a click.

use serde::Serialize;

use crate::Engine;
use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    pub proposed: i64,
    pub auto_approved: i64,
    pub pending_at_proposal: i64,
    pub refused_by_policy: i64,
    pub human_approvals: i64,
    pub human_denials: i64,
    pub executed: i64,
    pub failed: i64,
    pub interrupted: i64,
    /// Executing commands a person stopped (`berth cancel`).
    pub cancelled: i64,
    /// Proposals still waiting for a person now.
    pub pending_now: i64,
}

impl Engine {
    pub async fn metrics(&self, agent: Option<&str>) -> Result<Metrics> {
        let count = |sql: &'static str| async move {
            sqlx::query_scalar::<_, i64>(sql)
                .bind(agent)
                .fetch_one(self.store.pool())
                .await
                .map_err(EngineError::store("computing metrics"))
        };
        Ok(Metrics {
            proposed: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.created' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            auto_approved: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.created' AND payload LIKE '%\"status\":\"auto_approved\"%' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            pending_at_proposal: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.created' AND payload LIKE '%\"status\":\"pending\"%' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            refused_by_policy: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.created' AND payload LIKE '%\"status\":\"denied\"%' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            human_approvals: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.approved' AND actor_kind = 'user' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            human_denials: count("SELECT COUNT(*) FROM session_events WHERE type = 'proposed_action.denied' AND actor_kind = 'user' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            executed: count("SELECT COUNT(*) FROM session_events WHERE type = 'action.executed' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            failed: count("SELECT COUNT(*) FROM session_events WHERE type = 'action.failed' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            interrupted: count("SELECT COUNT(*) FROM session_events WHERE type = 'action.interrupted' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            cancelled: count("SELECT COUNT(*) FROM session_events WHERE type = 'action.cancelled' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
            pending_now: count("SELECT COUNT(*) FROM proposed_actions WHERE status = 'pending' AND (CAST($1 AS TEXT) IS NULL OR agent = $1)").await?,
        })
    }
}
