//! The event log (`session_events`) and the outbox.
//!
//! ADR 0048: the log is the memory — append-only, read by UIs and metrics —
//! and every fact in it has a real actor: the agent that proposed, the user
//! who decided, or berth itself for its own provisioning. The outbox
//! (`outbox.rs`) names the facts still to deliver to consumers that drain
//! it, by the event's id. Both rows are written in the caller's
//! transaction, with the state change they describe, so neither can exist
//! without the other.
//!
//! Each fact is stored once (issue 17): `proposed_action.created` does not
//! copy the action, its decision and its key, nor `action.executed` and
//! `action.failed` the summary of the result, which its action's row holds;
//! the reader joins them back, so a consumer reads the payload whole. Old
//! events can be archived to a file and deleted (`archive.rs`).

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{EngineError, Result};
use crate::ids::now_ms;
use crate::store::{StoreLock, Tx};

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
    /// The worker holding an agent runs an approval a person gave in
    /// another process (`actions/route.rs`).
    pub const ACTION_APPROVAL_RUN: &str = "proposed_action.approval_run";
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
    pub const AGENT_LEASE_TAKEN: &str = "agent.lease_taken";
    /// A worker took an agent over from one whose lease ran out (`worker.rs`).
    pub const AGENT_TAKEN_OVER: &str = "agent.taken_over";
    /// A takeover found a task's commit lost: its delivery starts again.
    pub const TASK_DELIVERY_RESTARTED: &str = "task.delivery_restarted";
    pub const PR_MERGED: &str = "pr.merged";
    pub const PR_CLOSED: &str = "pr.closed";
    /// A PR's branch or merge was fetched into a user's repository as a ref.
    pub const PR_EXPORTED: &str = "pr.exported";
    /// A comment on a PR (or a line of it): a new thread or a reply.
    pub const PR_COMMENT_ADDED: &str = "pr.comment_added";
    /// A PR's thread was marked resolved.
    pub const PR_THREAD_RESOLVED: &str = "pr.thread_resolved";
    /// A person approved a PR or requested changes (its task's gate stays).
    pub const PR_REVIEW_SUBMITTED: &str = "pr.review_submitted";
    /// A review of a PR was asked of a reviewer.
    pub const PR_REVIEW_REQUESTED: &str = "pr.review_requested";
    /// A `[[checks]]` entry is due on a PR's new head.
    pub const CHECK_QUEUED: &str = "check.queued";
    pub const CHECK_STARTED: &str = "check.started";
    pub const CHECK_PASSED: &str = "check.passed";
    pub const CHECK_FAILED: &str = "check.failed";
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
    /// A connection out of a berth went through the egress proxy.
    pub const NETWORK_CONNECTED: &str = "network.connected";
    /// A host was added to a project's network allow or deny list.
    pub const NETWORK_RULE_ADDED: &str = "project.network_rule_added";
    /// A host was removed from a project's network allow or deny list.
    pub const NETWORK_RULE_REMOVED: &str = "project.network_rule_removed";
    /// A `command` agent's program (its argv template) was set.
    pub const AGENT_COMMAND_SET: &str = "agent.command_set";
    /// A `command` agent's program started for a delivered prompt.
    pub const SESSION_TURN_STARTED: &str = "session.turn_started";
    /// A `command` agent's program ended: its exit code and output tail.
    pub const SESSION_TURN_ENDED: &str = "session.turn_ended";
    /// A session of an agent for its task was opened (idle).
    pub const SESSION_OPENED: &str = "session.opened";
    /// A session ended (a person, or its task archived or deleted).
    pub const SESSION_ENDED: &str = "session.ended";
    /// A prompt entered an agent's queue.
    pub const PROMPT_QUEUED: &str = "prompt.queued";
    /// The same observation was pending: counted into that prompt.
    pub const PROMPT_COALESCED: &str = "prompt.coalesced";
    /// A pending prompt of the same kind for the same PR was replaced.
    pub const PROMPT_REPLACED: &str = "prompt.replaced";
    /// A prompt was reserved and handed to its session's executor.
    pub const PROMPT_DELIVERED: &str = "prompt.delivered";
    /// The executor accepted a delivered prompt.
    pub const PROMPT_ACKNOWLEDGED: &str = "prompt.acknowledged";
    /// A reserved prompt went back to its place in the queue: its handoff
    /// failed, or the process that reserved it died.
    pub const PROMPT_REQUEUED: &str = "prompt.requeued";
    /// A task's pending prompts were purged (its archive or delete).
    pub const PROMPT_PURGED: &str = "prompt.purged";
    /// An auto-fix prompt for a task's PR was delivered: the task went
    /// back to work (`in_review → in_progress`).
    pub const TASK_BACK_TO_WORK: &str = "task.back_to_work";
    /// A person changed a PR's automation switches.
    pub const AUTOMATION_SWITCHED: &str = "automation.switched";
    /// Auto-fix sent (queued, or replaced a pending) prompt for a PR.
    pub const AUTOMATION_FIX_PROMPTED: &str = "automation.fix_prompted";
    /// A new auto-fix round would have been past the maximum: paused.
    pub const AUTOMATION_FIX_PAUSED: &str = "automation.fix_paused";
    /// Auto-merge proposed a PR's merge for a new readiness.
    pub const AUTOMATION_MERGE_PROPOSED: &str = "automation.merge_proposed";
    /// A lifecycle prompt (review requested, merged, closed) was queued.
    pub const AUTOMATION_LIFECYCLE_PROMPTED: &str = "automation.lifecycle_prompted";
    /// The reviewer identity changed: review-request baselines reset.
    pub const AUTOMATION_REVIEWER_REBOUND: &str = "automation.reviewer_rebound";
    /// A cycle of a PR's automation failed (a new error).
    pub const AUTOMATION_FAILED: &str = "automation.failed";
    /// A person edited (or reset) a project's prompt template.
    pub const PROMPT_TEMPLATE_EDITED: &str = "prompt_template.edited";
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

/// Writes the fact to the log, and its id to the outbox, in `tx`, holding
/// the log's lock from here to the transaction's end. Returns the log id. The payload is stored compact, without what the reader
/// restores ([`stored_payload`]). Public, hidden, for the store's tests,
/// which append in transactions of their own.
#[doc(hidden)]
pub async fn emit(tx: &mut Tx, ev: NewEvent<'_>) -> Result<i64> {
    let payload = stored_payload(ev.kind, ev.payload).to_string();
    // Ids commit in the order they are handed out (see the lock).
    tx.lock(StoreLock::EventLog).await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO session_events (at, type, actor_kind, actor_id, project, agent, task_id, action_id, payload) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(now_ms())
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
    // Its outbox row was written by the same statement (the store's
    // trigger, migration 15): one round trip per event.
    Ok(id)
}

/// The payload fields of an event type that are `null` more often than not:
/// the log stores them only when they hold something, and the reader puts
/// the `null` back, so a consumer sees every field the type documents.
const NULLABLE_FIELDS: &[(&str, &[&str])] = &[
    (kind::ACTION_PROPOSED, &["held", "resolved_path"]),
    (kind::ACTION_EXECUTED, &["diagnostic"]),
    (kind::ACTION_FAILED, &["diagnostic"]),
];

/// What the log stores of a payload: without the `null`s the reader
/// restores.
fn stored_payload(kind: &str, mut payload: serde_json::Value) -> serde_json::Value {
    if let serde_json::Value::Object(map) = &mut payload
        && let Some((_, fields)) = NULLABLE_FIELDS.iter().find(|(k, _)| *k == kind)
    {
        for field in *fields {
            if map.get(*field).is_some_and(serde_json::Value::is_null) {
                map.remove(*field);
            }
        }
    }
    payload
}

/// The columns an event is read with: its own, and for
/// `proposed_action.created` what its action's row holds of it (the
/// decision as proposed, the action, the key): from the log as `e`, joined
/// with [`EVENT_JOIN`].
pub(crate) const EVENT_COLUMNS: &str = "e.id, e.at, e.type, e.actor_kind, e.actor_id, e.project, e.agent, \
     e.task_id, e.action_id, e.payload, p.action AS ref_action, \
     COALESCE(p.decision_at_proposal, p.decision) AS ref_decision, \
     COALESCE(p.idempotency_key, p.id) AS ref_key, p.result AS ref_result";

/// The join [`EVENT_COLUMNS`] read through: the action a
/// `proposed_action.created`, `action.executed` or `action.failed` event
/// (`e`) is about.
pub(crate) const EVENT_JOIN: &str = "LEFT JOIN proposed_actions p \
     ON e.type IN ('proposed_action.created', 'action.executed', 'action.failed') \
     AND p.id = e.action_id";

/// `text`, stored JSON of a `T`, as `T` serializes.
fn typed<T: serde::de::DeserializeOwned + Serialize>(text: &str) -> Result<serde_json::Value> {
    let corrupt = |e: serde_json::Error| EngineError::corrupt("reading the event log", e);
    serde_json::to_value(serde_json::from_str::<T>(text).map_err(corrupt)?).map_err(corrupt)
}

/// The payload as a consumer reads it: for `proposed_action.created`, the
/// action, its decision as proposed and its key from the action's row (a
/// payload stored whole, before the store kept the decision once, has them);
/// the `null`s restored.
fn complete_payload(
    kind: &str,
    payload: &mut serde_json::Value,
    r: &sqlx::any::AnyRow,
) -> Result<()> {
    let serde_json::Value::Object(map) = payload else {
        return Ok(());
    };
    if kind == kind::ACTION_PROPOSED && !map.contains_key("decision") {
        for (field, column) in [
            ("action", "ref_action"),
            ("decision", "ref_decision"),
            ("idempotency_key", "ref_key"),
        ] {
            let text: Option<String> = r
                .try_get(column)
                .map_err(EngineError::store("reading the event log"))?;
            let value = match (field, text) {
                ("idempotency_key", Some(t)) => serde_json::Value::String(t),
                // Through their types: the row stores them without nulls.
                ("action", Some(t)) => typed::<berth_policy::Action>(&t)?,
                (_, Some(t)) => typed::<berth_policy::Decision>(&t)?,
                // The action is gone from the store: the event keeps what it has.
                (_, None) => serde_json::Value::Null,
            };
            map.insert(field.to_string(), value);
        }
    }
    if (kind == kind::ACTION_EXECUTED || kind == kind::ACTION_FAILED) && !map.contains_key("result")
    {
        // The summary of the result its action's row holds.
        let text: Option<String> = r
            .try_get("ref_result")
            .map_err(EngineError::store("reading the event log"))?;
        let summary = match text {
            Some(t) => serde_json::from_str::<crate::actions::ActionResult>(&t)
                .map_err(|e| EngineError::corrupt("reading the event log", e))?
                .summary(),
            None => serde_json::Value::Null,
        };
        map.insert("result".to_string(), summary);
    }
    if let Some((_, fields)) = NULLABLE_FIELDS.iter().find(|(k, _)| *k == kind) {
        for field in *fields {
            map.entry(field.to_string())
                .or_insert(serde_json::Value::Null);
        }
    }
    Ok(())
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

pub(crate) async fn list(pool: &crate::store::StorePool, f: &EventFilter) -> Result<Vec<Event>> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM session_events e {EVENT_JOIN} \
         WHERE (CAST($1 AS TEXT) IS NULL OR e.agent = $1) AND (CAST($2 AS TEXT) IS NULL OR e.type = $2) \
           AND (CAST($3 AS TEXT) IS NULL OR e.task_id = $3) AND (CAST($4 AS TEXT) IS NULL OR e.action_id = $4) \
           AND e.id > $5 \
         ORDER BY e.id LIMIT $6"
    ))
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
pub(crate) async fn latest_id(pool: &crate::store::StorePool) -> Result<i64> {
    let id: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM session_events")
        .fetch_one(pool)
        .await
        .map_err(EngineError::store("reading the event log's cursor"))?;
    Ok(id.unwrap_or(0))
}

/// An event read with [`EVENT_COLUMNS`].
pub(crate) fn event_from_row(r: &sqlx::any::AnyRow) -> Result<Event> {
    let get = |e: sqlx::Error| EngineError::Store {
        op: "reading the event log",
        source: e,
    };
    let kind: String = r.try_get("type").map_err(get)?;
    let text: String = r.try_get("payload").map_err(get)?;
    let mut payload = serde_json::from_str(&text)
        .map_err(|e| EngineError::corrupt("reading the event log", e))?;
    complete_payload(&kind, &mut payload, r)?;
    Ok(Event {
        id: r.try_get("id").map_err(get)?,
        at: r.try_get("at").map_err(get)?,
        kind,
        actor: Actor {
            kind: ActorKind::parse(&r.try_get::<String, _>("actor_kind").map_err(get)?)?,
            id: r.try_get("actor_id").map_err(get)?,
        },
        project: r.try_get("project").map_err(get)?,
        agent: r.try_get("agent").map_err(get)?,
        task: r.try_get("task_id").map_err(get)?,
        action: r.try_get("action_id").map_err(get)?,
        payload,
    })
}
