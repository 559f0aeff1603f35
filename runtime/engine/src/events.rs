//! The event log (`session_events`) and the outbox.
//!
//! ADR 0048: the log is the memory — append-only, read by UIs and metrics —
//! and every fact in it has a real actor: the agent that proposed, the user
//! who decided, or berth itself for its own provisioning. The outbox carries
//! the same facts as separate rows, for consumers that drain it; it is a
//! transport, so it is marked processed and pruned, and the log never is.
//! Both rows are written in the caller's transaction, with the state change
//! they describe, so neither can exist without the other.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{EngineError, Result};
use crate::ids::now_ms;
use crate::store::Tx;

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// An agent (`dev-1`).
    Agent,
    /// A person (their login name).
    User,
    /// berth itself: provisioning, recovery, the gate.
    System,
}

impl ActorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Agent => "agent",
            ActorKind::User => "user",
            ActorKind::System => "system",
        }
    }

    fn parse(s: &str) -> Result<ActorKind> {
        match s {
            "agent" => Ok(ActorKind::Agent),
            "user" => Ok(ActorKind::User),
            "system" => Ok(ActorKind::System),
            other => Err(EngineError::corrupt(
                "reading an actor",
                format!("actor kind `{other}`"),
            )),
        }
    }
}

impl Actor {
    pub fn agent(name: &str) -> Actor {
        Actor {
            kind: ActorKind::Agent,
            id: name.to_string(),
        }
    }

    pub fn user(name: &str) -> Actor {
        Actor {
            kind: ActorKind::User,
            id: name.to_string(),
        }
    }

    pub fn system() -> Actor {
        Actor {
            kind: ActorKind::System,
            id: "berth".to_string(),
        }
    }

    /// The person running this process: `$USER`, else `uid:N`.
    pub fn current_user() -> Actor {
        let name = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "user".to_string());
        Actor::user(&name)
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

/// The event types berth writes. ARCHITECTURE.md, Events.
pub mod kind {
    pub const ACTION_PROPOSED: &str = "proposed_action.created";
    pub const ACTION_APPROVED: &str = "proposed_action.approved";
    pub const ACTION_DENIED: &str = "proposed_action.denied";
    /// A pending file action refused when a person approved it: its path
    /// had come to lead out of its mount through a link.
    pub const ACTION_REFUSED_AT_APPROVAL: &str = "proposed_action.refused_at_approval";
    pub const ACTION_EXECUTED: &str = "action.executed";
    pub const ACTION_FAILED: &str = "action.failed";
    pub const ACTION_INTERRUPTED: &str = "action.interrupted";
    /// A person asked to cancel an executing action (`berth cancel`),
    /// recorded before its command is killed.
    pub const ACTION_CANCEL_REQUESTED: &str = "action.cancel_requested";
    /// An action ended cancelled, with the output its command wrote so far.
    pub const ACTION_CANCELLED: &str = "action.cancelled";
    pub const PROJECT_ADDED: &str = "project.added";
    /// The forge's base branch was fast-forwarded from the source repository.
    pub const PROJECT_SYNCED: &str = "project.synced";
    pub const AGENT_ACTIVATED: &str = "agent.activated";
    pub const AGENT_AUTONOMY: &str = "agent.autonomy_set";
    pub const AGENT_AWAITING: &str = "agent.awaiting_approval";
    pub const AGENT_PAUSED: &str = "agent.paused";
    pub const BERTH_UP: &str = "berth.up";
    pub const BERTH_DOWN: &str = "berth.down";
    pub const TASK_CREATED: &str = "task.created";
    pub const TASK_CLAIMED: &str = "task.claimed";
    pub const TASK_PR_SETTLED: &str = "task.pr_settled";
    pub const TASK_IN_REVIEW: &str = "task.in_review";
    pub const TASK_DONE: &str = "task.done";
    pub const TASK_RETURNED: &str = "task.returned";
    pub const TASK_BLOCKED: &str = "task.blocked";
    pub const TASK_MODE_SET: &str = "task.mode_set";
    pub const PROJECT_MODE_SET: &str = "project.mode_set";
    pub const PIPELINE_STARTED: &str = "pipeline.started";
    pub const PIPELINE_WAITING: &str = "pipeline.waiting";
    /// Kin's names, kept as they are: hooks are written against them.
    pub const TASK_AUTO_APPROVED: &str = "task_auto_approved";
    pub const PIPELINE_COMPLETED: &str = "pipeline_completed";
    pub const TASK_PERMISSION_RETRY: &str = "task_permission_retry";
    pub const TASK_APPROVED: &str = "task.approved";
    pub const FOLLOWUPS_GENERATED: &str = "followups.generated";
    pub const FOLLOWUPS_FAILED: &str = "followups.failed";
    pub const CHOICE_CREATED: &str = "choice.created";
    pub const CHOICE_RESOLVED: &str = "choice.resolved";
    pub const HOOK_FAILED: &str = "hook.failed";
    pub const AGENT_RESUMED: &str = "agent.resumed";
    pub const PR_MERGED: &str = "pr.merged";
    pub const PR_CLOSED: &str = "pr.closed";
    /// A PR's branch or merge was fetched into a user's repository as a ref.
    pub const PR_EXPORTED: &str = "pr.exported";
    pub const WORKTREE_CREATED: &str = "worktree.created";
    pub const WORKTREE_RECYCLED: &str = "worktree.recycled";
    pub const WORKTREE_RECYCLE_FAILED: &str = "worktree.recycle_failed";
    pub const CONTAINER_CREATED: &str = "container.created";
    pub const CONTAINER_REMOVED: &str = "container.removed";
    /// Reconcile found an up berth's container running and kept it.
    pub const CONTAINER_ADOPTED: &str = "container.adopted";
    /// berth restarted a berth's container to end a timed-out command that
    /// outlived its kill: every other command running in it died too.
    pub const CONTAINER_RESTARTED: &str = "container.restarted";
    /// The berth's memory limit killed a process of a command.
    pub const COMMAND_OOM_KILLED: &str = "command.oom_killed";
    /// A berth was given its uid (allocated, moved, or recorded as made).
    pub const BERTH_UID_SET: &str = "berth.uid_set";
    /// `berth agent rm`: its berth down (its work saved unless discarded),
    /// its repositories, container, disk and identity records gone.
    pub const AGENT_REMOVED: &str = "agent.removed";
    /// `berth project rm`: its agents, forge and state directories gone.
    pub const PROJECT_REMOVED: &str = "project.removed";
    /// `berth task archive`: an ended task left out of `berth task ls`.
    pub const TASK_ARCHIVED: &str = "task.archived";
    /// `berth task rm`: a task that never started, deleted.
    pub const TASK_REMOVED: &str = "task.removed";
}

/// A fact to record.
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
    pub kind: &'a str,
    pub actor: &'a Actor,
    pub project: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub task: Option<&'a str>,
    pub action: Option<&'a str>,
    pub payload: serde_json::Value,
}

impl<'a> NewEvent<'a> {
    pub fn new(kind: &'a str, actor: &'a Actor) -> Self {
        NewEvent {
            kind,
            actor,
            project: None,
            agent: None,
            task: None,
            action: None,
            payload: serde_json::Value::Object(Default::default()),
        }
    }
    pub fn project(mut self, p: &'a str) -> Self {
        self.project = Some(p);
        self
    }
    pub fn agent(mut self, a: &'a str) -> Self {
        self.agent = Some(a);
        self
    }
    pub fn task(mut self, t: Option<&'a str>) -> Self {
        self.task = t;
        self
    }
    pub fn action(mut self, a: &'a str) -> Self {
        self.action = Some(a);
        self
    }
    pub fn payload(mut self, p: serde_json::Value) -> Self {
        self.payload = p;
        self
    }
}

/// Writes the fact to the log and to the outbox, in `tx`. Returns the log id.
pub(crate) async fn emit(tx: &mut Tx, ev: NewEvent<'_>) -> Result<i64> {
    let at = now_ms();
    let payload = ev.payload.to_string();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO session_events (at, type, actor_kind, actor_id, project, agent, task_id, action_id, payload) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(at)
    .bind(ev.kind)
    .bind(ev.actor.kind.as_str())
    .bind(&ev.actor.id)
    .bind(ev.project)
    .bind(ev.agent)
    .bind(ev.task)
    .bind(ev.action)
    .bind(&payload)
    .fetch_one(&mut **tx)
    .await
    .map_err(EngineError::store("appending to the event log"))?;

    // The aggregate a consumer routes by: the task when there is one (ADR
    // 0048: pr_settled wakes the task's agent), else the action, agent, project.
    let (agg_type, agg_id) = match (ev.task, ev.action, ev.agent, ev.project) {
        (Some(t), ..) => ("task", t),
        (None, Some(a), ..) => ("action", a),
        (None, None, Some(a), _) => ("agent", a),
        (None, None, None, Some(p)) => ("project", p),
        (None, None, None, None) => ("berth", "berth"),
    };
    let envelope = serde_json::json!({
        "event_id": id,
        "type": ev.kind,
        "actor": ev.actor,
        "project": ev.project,
        "agent": ev.agent,
        "task": ev.task,
        "action": ev.action,
        "payload": ev.payload,
    });
    sqlx::query(
        "INSERT INTO outbox (at, type, aggregate_type, aggregate_id, payload) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(at)
    .bind(ev.kind)
    .bind(agg_type)
    .bind(agg_id)
    .bind(envelope.to_string())
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("appending to the outbox"))?;
    Ok(id)
}

/// One fact of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: i64,
    pub at: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub actor: Actor,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub action: Option<String>,
    pub payload: serde_json::Value,
}

/// Which events to read.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub agent: Option<String>,
    pub kind: Option<String>,
    pub task: Option<String>,
    pub action: Option<String>,
    /// Only events with an id greater than this (a cursor for followers).
    pub after: Option<i64>,
    pub limit: Option<i64>,
}

pub(crate) async fn list(pool: &sqlx::SqlitePool, f: &EventFilter) -> Result<Vec<Event>> {
    let rows = sqlx::query(
        "SELECT id, at, type, actor_kind, actor_id, project, agent, task_id, action_id, payload \
         FROM session_events \
         WHERE (CAST($1 AS TEXT) IS NULL OR agent = $1) AND (CAST($2 AS TEXT) IS NULL OR type = $2) \
           AND (CAST($3 AS TEXT) IS NULL OR task_id = $3) AND (CAST($4 AS TEXT) IS NULL OR action_id = $4) AND id > $5 \
         ORDER BY id LIMIT $6",
    )
    .bind(f.agent.as_deref())
    .bind(f.kind.as_deref())
    .bind(f.task.as_deref())
    .bind(f.action.as_deref())
    .bind(f.after.unwrap_or(0))
    .bind(f.limit.unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await
    .map_err(EngineError::store("reading the event log"))?;
    rows.iter().map(event_from_row).collect()
}

/// The id of the newest event (0 when the log is empty): where a follower
/// that only wants what comes next starts its `after` cursor.
pub(crate) async fn latest_id(pool: &sqlx::SqlitePool) -> Result<i64> {
    let id: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM session_events")
        .fetch_one(pool)
        .await
        .map_err(EngineError::store("reading the event log's cursor"))?;
    Ok(id.unwrap_or(0))
}

fn event_from_row(r: &sqlx::sqlite::SqliteRow) -> Result<Event> {
    let get = |e: sqlx::Error| EngineError::Store {
        op: "reading the event log",
        source: e,
    };
    let payload: String = r.try_get("payload").map_err(get)?;
    Ok(Event {
        id: r.try_get("id").map_err(get)?,
        at: r.try_get("at").map_err(get)?,
        kind: r.try_get("type").map_err(get)?,
        actor: Actor {
            kind: ActorKind::parse(&r.try_get::<String, _>("actor_kind").map_err(get)?)?,
            id: r.try_get("actor_id").map_err(get)?,
        },
        project: r.try_get("project").map_err(get)?,
        agent: r.try_get("agent").map_err(get)?,
        task: r.try_get("task_id").map_err(get)?,
        action: r.try_get("action_id").map_err(get)?,
        payload: serde_json::from_str(&payload)
            .map_err(|e| EngineError::corrupt("reading the event log", e))?,
    })
}

/// One outbox row, as a consumer receives it.
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

/// How long processed outbox rows are kept before they are pruned.
pub const OUTBOX_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Takes every unprocessed outbox row, marks it processed, and prunes rows
/// processed longer than `retention_ms` ago. Two drainers never get one row
/// twice: the rows are read and marked in one write transaction. For a
/// consumer that answers at once (the HTTP API); the CLI delivers first and
/// marks after ([`pending`], [`mark_processed`]).
pub(crate) async fn drain(
    store: &crate::store::Store,
    retention_ms: i64,
) -> Result<(Vec<OutboxMessage>, u64)> {
    let mut tx = store.write("draining the outbox").await?;
    let out = read_unprocessed(&mut tx).await?;
    let pruned = match out.last() {
        Some(last) => mark_and_prune(&mut tx, last.id, retention_ms).await?,
        None => mark_and_prune(&mut tx, 0, retention_ms).await?,
    };
    tx.commit()
        .await
        .map_err(EngineError::store("draining the outbox"))?;
    Ok((out, pruned))
}

/// Every unprocessed outbox row, oldest first, left unprocessed: the caller
/// delivers them, then marks them with [`mark_processed`] (at least once: a
/// crash between the two delivers them again).
pub(crate) async fn pending(store: &crate::store::Store) -> Result<Vec<OutboxMessage>> {
    let mut conn = store
        .pool()
        .acquire()
        .await
        .map_err(EngineError::store("reading the outbox"))?;
    read_unprocessed(&mut conn).await
}

/// Marks unprocessed rows up to `up_to` (an id [`pending`] returned)
/// processed, and prunes rows processed longer than `retention_ms` ago.
/// Returns how many were pruned.
pub(crate) async fn mark_processed(
    store: &crate::store::Store,
    up_to: i64,
    retention_ms: i64,
) -> Result<u64> {
    let mut tx = store.write("marking the outbox processed").await?;
    let pruned = mark_and_prune(&mut tx, up_to, retention_ms).await?;
    tx.commit()
        .await
        .map_err(EngineError::store("marking the outbox processed"))?;
    Ok(pruned)
}

async fn read_unprocessed(conn: &mut sqlx::SqliteConnection) -> Result<Vec<OutboxMessage>> {
    let rows = sqlx::query(
        "SELECT id, at, type, aggregate_type, aggregate_id, payload FROM outbox \
         WHERE processed_at IS NULL ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(EngineError::store("reading the outbox"))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let get = || EngineError::store("reading the outbox");
        let payload: String = r.try_get("payload").map_err(get())?;
        out.push(OutboxMessage {
            id: r.try_get("id").map_err(get())?,
            at: r.try_get("at").map_err(get())?,
            kind: r.try_get("type").map_err(get())?,
            aggregate_type: r.try_get("aggregate_type").map_err(get())?,
            aggregate_id: r.try_get("aggregate_id").map_err(get())?,
            payload: serde_json::from_str(&payload)
                .map_err(|e| EngineError::corrupt("reading the outbox", e))?,
        });
    }
    Ok(out)
}

async fn mark_and_prune(
    conn: &mut sqlx::SqliteConnection,
    up_to: i64,
    retention_ms: i64,
) -> Result<u64> {
    let now = now_ms();
    sqlx::query("UPDATE outbox SET processed_at = $1 WHERE processed_at IS NULL AND id <= $2")
        .bind(now)
        .bind(up_to)
        .execute(&mut *conn)
        .await
        .map_err(EngineError::store("marking the outbox processed"))?;
    let pruned =
        sqlx::query("DELETE FROM outbox WHERE processed_at IS NOT NULL AND processed_at < $1")
            .bind(now - retention_ms)
            .execute(&mut *conn)
            .await
            .map_err(EngineError::store("pruning the outbox"))?
            .rows_affected();
    Ok(pruned)
}
