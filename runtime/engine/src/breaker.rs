//! The circuit breaker (ADR 0048): an agent whose work fails N times in a
//! row (`[agents] circuit_breaker`, default 3) is paused — `agent.paused`,
//! no more claims, no pipeline runs — until a person runs `berth agent
//! resume`. Only failures count: a PR or an action a person refused is the
//! person's decision, and an action interrupted by a restart is no failure
//! of the agent's. A success resets the count.

use crate::Engine;
use crate::agents::AgentStatus;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::store::Tx;
use crate::transitions::{self, AgentMove, AgentMoved};

/// Counts one failure of `agent` in `tx`; pauses it at the threshold.
/// Returns the events written.
pub(crate) async fn count_failure(
    tx: &mut Tx,
    engine: &Engine,
    agent: &str,
    project: &str,
    diagnosis: &str,
) -> Result<Vec<i64>> {
    let threshold = engine
        .load_project_files(project)
        .map(|(c, _)| c.agents.circuit_breaker)
        .unwrap_or(3);
    let op = "counting an agent's failure";
    let failures: i64 = sqlx::query_scalar(
        "UPDATE agents SET consecutive_failures = consecutive_failures + 1, updated_at = $1 \
         WHERE name = $2 RETURNING consecutive_failures",
    )
    .bind(now_ms())
    .bind(agent)
    .fetch_one(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    if failures < i64::from(threshold) {
        return Ok(Vec::new());
    }
    let paused = transitions::agent(tx, agent, AgentMove::itself(AgentStatus::Paused)).await?;
    if paused != AgentMoved::Moved {
        return Ok(Vec::new());
    }
    let system = Actor::system();
    let id = emit(
        tx,
        NewEvent::new(kind::AGENT_PAUSED, &system)
            .project(project)
            .agent(agent)
            .payload(serde_json::json!({
                "consecutive_failures": failures,
                "threshold": threshold,
                "last": diagnosis,
            })),
    )
    .await?;
    Ok(vec![id])
}

/// A success: the count starts again.
pub(crate) async fn reset(tx: &mut Tx, agent: &str) -> Result<()> {
    sqlx::query("UPDATE agents SET consecutive_failures = 0 WHERE name = $1")
        .bind(agent)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store("resetting an agent's failures"))?;
    Ok(())
}

impl Engine {
    /// Resumes a paused agent (`agent.resumed`): back to work on the task it
    /// holds, or idle; its failure count starts again.
    pub async fn resume_agent(&self, agent: &str, user: &Actor) -> Result<crate::Agent> {
        let a = self.agent(agent).await?;
        if a.status != AgentStatus::Paused {
            return Err(EngineError::NotPaused {
                agent: agent.to_string(),
                status: a.status.as_str(),
            });
        }
        let mut tx = self.store.write("resuming an agent").await?;
        // The task it holds, read under the write lock.
        let held: Option<String> = sqlx::query_scalar("SELECT task_id FROM agents WHERE name = $1")
            .bind(agent)
            .fetch_one(&mut *tx)
            .await
            .map_err(EngineError::store("resuming an agent"))?;
        if transitions::agent(&mut tx, agent, AgentMove::resume(held.as_deref())).await?
            != AgentMoved::Moved
        {
            // Another process resumed it first.
            drop(tx);
            return self.agent(agent).await;
        }
        reset(&mut tx, agent).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_RESUMED, user)
                .project(&a.project)
                .agent(agent),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("resuming an agent"))?;
        self.agent(agent).await
    }

    /// Failures in a row of `agent`, as the breaker counts them.
    pub async fn consecutive_failures(&self, agent: &str) -> Result<i64> {
        sqlx::query_scalar("SELECT consecutive_failures FROM agents WHERE name = $1")
            .bind(agent)
            .fetch_optional(self.store.pool())
            .await
            .map_err(EngineError::store("reading an agent's failures"))?
            .ok_or_else(|| EngineError::UnknownAgent(agent.to_string()))
    }
}
