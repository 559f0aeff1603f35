//! The outbox: the facts of the log still to be delivered to consumers that
//! drain it (ADR 0048: a transport, beside the log that is the memory).
//!
//! A row is only the id of its event: the message a consumer receives is
//! built from the log when it is read, so a fact is stored once (issue 17:
//! the outbox was 36 % of the store, a copy of every payload). A row is
//! deleted once its message is delivered, by whichever process delivers it
//! — `berth outbox drain`, or the HTTP API's drain — so the outbox holds
//! only what no consumer has taken yet.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::events::{EVENT_COLUMNS, EVENT_JOIN, Event, event_from_row};
use crate::store::{Store, StoreLock};

/// One outbox message, as a consumer receives it: its event's id, time and
/// type, the aggregate it is routed by, and the whole event as `payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxMessage {
    pub id: i64,
    pub at: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub aggregate_type: String,
    pub aggregate_id: String,
    pub payload: serde_json::Value,
}

impl OutboxMessage {
    fn from_event(e: Event) -> OutboxMessage {
        // The aggregate a consumer routes by: the task when there is one
        // (ADR 0048: pr_settled wakes the task's agent), else the action,
        // agent, project.
        let (aggregate_type, aggregate_id) = match (&e.task, &e.action, &e.agent, &e.project) {
            (Some(t), ..) => ("task", t.clone()),
            (None, Some(a), ..) => ("action", a.clone()),
            (None, None, Some(a), _) => ("agent", a.clone()),
            (None, None, None, Some(p)) => ("project", p.clone()),
            (None, None, None, None) => ("berth", "berth".to_string()),
        };
        let payload = serde_json::json!({
            "event_id": e.id,
            "type": e.kind,
            "actor": e.actor,
            "project": e.project,
            "agent": e.agent,
            "task": e.task,
            "action": e.action,
            "payload": e.payload,
        });
        OutboxMessage {
            id: e.id,
            at: e.at,
            kind: e.kind,
            aggregate_type: aggregate_type.to_string(),
            aggregate_id,
            payload,
        }
    }
}

/// Takes every undelivered message and deletes its row, in one write
/// transaction: two drainers never get one message twice. For a consumer
/// that answers at once (the HTTP API); the CLI delivers first and deletes
/// after ([`pending`], [`delivered`]). Returns the messages and how many
/// rows were deleted.
pub(crate) async fn drain(store: &Store) -> Result<(Vec<OutboxMessage>, u64)> {
    let op = "draining the outbox";
    let mut tx = store.write(op).await?;
    tx.lock(StoreLock::OutboxDrain).await?;
    let out = read_undelivered(&mut *tx).await?;
    let deleted = delete_up_to(&mut *tx, out.last().map_or(0, |m| m.id)).await?;
    tx.commit().await.map_err(EngineError::store(op))?;
    Ok((out, deleted))
}

/// Every undelivered message, oldest first, left in the outbox: the caller
/// delivers them, then deletes them with [`delivered`] (at least once: a
/// crash between the two delivers them again).
pub(crate) async fn pending(store: &Store) -> Result<Vec<OutboxMessage>> {
    read_undelivered(store.pool()).await
}

/// Deletes the rows up to `up_to` (an id [`pending`] returned), delivered.
/// Returns how many were deleted.
pub(crate) async fn delivered(store: &Store, up_to: i64) -> Result<u64> {
    let op = "deleting delivered outbox rows";
    let mut tx = store.write(op).await?;
    let deleted = delete_up_to(&mut *tx, up_to).await?;
    tx.commit().await.map_err(EngineError::store(op))?;
    Ok(deleted)
}

async fn read_undelivered<'e>(
    conn: impl sqlx::Executor<'e, Database = sqlx::Any>,
) -> Result<Vec<OutboxMessage>> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM outbox o JOIN session_events e ON e.id = o.event_id \
         {EVENT_JOIN} ORDER BY o.event_id"
    ))
    .fetch_all(conn)
    .await
    .map_err(EngineError::store("reading the outbox"))?;
    rows.iter()
        .map(|r| event_from_row(r).map(OutboxMessage::from_event))
        .collect()
}

async fn delete_up_to<'e>(
    conn: impl sqlx::Executor<'e, Database = sqlx::Any>,
    up_to: i64,
) -> Result<u64> {
    Ok(sqlx::query("DELETE FROM outbox WHERE event_id <= $1")
        .bind(up_to)
        .execute(conn)
        .await
        .map_err(EngineError::store("deleting delivered outbox rows"))?
        .rows_affected())
}
