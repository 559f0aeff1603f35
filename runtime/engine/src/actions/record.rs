//! How the store holds a proposed action: its statuses, the row and how it
//! is read back, and the listings. Every other part of the pipeline reads
//! actions through here, so the columns are named once.

use berth_policy::{Action, Decision};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::{ActionParams, ActionResult, Outcome, ProposeStatus};
use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, ActorKind, NewEvent};

/// The status `proposed_action.created` records: what the decision (and the
/// host-side guard) made of the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedStatus {
    AutoApproved,
    Pending,
    Denied,
}

impl CreatedStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CreatedStatus::AutoApproved => "auto_approved",
            CreatedStatus::Pending => "pending",
            CreatedStatus::Denied => "denied",
        }
    }
}

/// Where an action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Waits for a person.
    Pending,
    /// A person approved it in a process that does not hold its agent: it
    /// waits for the worker holding the agent to run it (`route.rs`).
    Approved,
    /// Approved and running (in the process named by `executor`).
    Executing,
    Executed,
    Failed,
    /// Denied by the policy.
    Refused,
    /// Denied by a person.
    Denied,
    /// Was executing when its process died; never re-run on its own.
    Interrupted,
    /// Was executing when a person cancelled it (`berth cancel`): its
    /// command was killed; its output so far is kept.
    Cancelled,
}

impl ActionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Pending => "pending",
            ActionStatus::Approved => "approved",
            ActionStatus::Executing => "executing",
            ActionStatus::Executed => "executed",
            ActionStatus::Failed => "failed",
            ActionStatus::Refused => "refused",
            ActionStatus::Denied => "denied",
            ActionStatus::Interrupted => "interrupted",
            ActionStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<ActionStatus> {
        Some(match s {
            "pending" => ActionStatus::Pending,
            "approved" => ActionStatus::Approved,
            "executing" => ActionStatus::Executing,
            "executed" => ActionStatus::Executed,
            "failed" => ActionStatus::Failed,
            "refused" => ActionStatus::Refused,
            "denied" => ActionStatus::Denied,
            "interrupted" => ActionStatus::Interrupted,
            "cancelled" => ActionStatus::Cancelled,
            _ => return None,
        })
    }
}

/// A proposed action as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub id: String,
    pub idempotency_key: String,
    pub agent: String,
    pub project: String,
    pub task: Option<String>,
    pub action: Action,
    pub params: ActionParams,
    pub decision: Decision,
    pub created_status: CreatedStatus,
    pub status: ActionStatus,
    /// Why a host-side guard held an auto-approved action for a person.
    pub hold_reason: Option<String>,
    /// A file action: where its path leads on the host (its links followed
    /// within its mount), as found when it was proposed and again when a
    /// person approved it — what the person is shown; where it leads
    /// instead, and through which links, when that is out of its mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_path: Option<String>,
    pub proposer: Actor,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
    pub executor: Option<String>,
    pub result: Option<ActionResult>,
    pub diagnostic: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ActionRecord {
    /// An event about this action: its project, agent, task and id.
    pub(crate) fn event<'a>(&'a self, kind: &'a str, actor: &'a Actor) -> NewEvent<'a> {
        NewEvent::new(kind, actor)
            .project(&self.project)
            .agent(&self.agent)
            .task(self.task.as_deref())
            .action(&self.id)
    }

    /// The status a caller sees.
    pub fn propose_status(&self) -> ProposeStatus {
        match self.status {
            // Cancelled: it ran until a person stopped it; the outcome says
            // so and keeps its output.
            ActionStatus::Executed | ActionStatus::Failed | ActionStatus::Cancelled => {
                ProposeStatus::Executed {
                    outcome: Outcome {
                        succeeded: self.status == ActionStatus::Executed,
                        result: self.result.clone(),
                        diagnostic: self.diagnostic.clone(),
                    },
                }
            }
            ActionStatus::Pending => ProposeStatus::Pending {
                reason: self
                    .hold_reason
                    .clone()
                    .unwrap_or_else(|| self.decision.reason.clone()),
            },
            ActionStatus::Approved => ProposeStatus::Pending {
                reason: format!(
                    "approved by {}; it runs on the worker holding agent {}",
                    self.decided_by.as_deref().unwrap_or("a person"),
                    self.agent
                ),
            },
            ActionStatus::Executing => ProposeStatus::Pending {
                reason: format!(
                    "executing in {}",
                    self.executor.as_deref().unwrap_or("another process")
                ),
            },
            ActionStatus::Refused => ProposeStatus::Refused {
                reason: self.decision.reason.clone(),
            },
            ActionStatus::Denied => ProposeStatus::Refused {
                reason: format!(
                    "denied by {}{}",
                    self.decided_by.as_deref().unwrap_or("a person"),
                    self.diagnostic
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            },
            ActionStatus::Interrupted => ProposeStatus::Refused {
                reason: self
                    .diagnostic
                    .clone()
                    .unwrap_or_else(|| "interrupted; never re-run on its own".into()),
            },
        }
    }
}

/// The key is stored only when it is not the action's id (an action
/// proposed without one): read back whole.
pub(super) const ACTION_COLUMNS: &str = "id, COALESCE(idempotency_key, id) AS idempotency_key, agent, project, task_id, action, params, decision, \
     created_status, status, hold_reason, resolved_path, proposer_kind, proposer_id, decided_by, decided_at, executor, \
     result, diagnostic, created_at, updated_at";

fn json<T: serde::de::DeserializeOwned>(s: &str, what: &str) -> Result<T> {
    serde_json::from_str(s)
        .map_err(|e| EngineError::corrupt("reading an action", format!("{what}: {e}")))
}

pub(super) fn from_row(r: &sqlx::any::AnyRow) -> Result<ActionRecord> {
    let op = "reading an action";
    let s =
        |c: &str| -> Result<String> { r.try_get::<String, _>(c).map_err(EngineError::store(op)) };
    let o = |c: &str| -> Result<Option<String>> {
        r.try_get::<Option<String>, _>(c)
            .map_err(EngineError::store(op))
    };
    let created = s("created_status")?;
    let status = s("status")?;
    let proposer_kind = s("proposer_kind")?;
    Ok(ActionRecord {
        id: s("id")?,
        idempotency_key: s("idempotency_key")?,
        agent: s("agent")?,
        project: s("project")?,
        task: o("task_id")?,
        action: json(&s("action")?, "action")?,
        params: json(&s("params")?, "params")?,
        decision: json(&s("decision")?, "decision")?,
        created_status: match created.as_str() {
            "auto_approved" => CreatedStatus::AutoApproved,
            "pending" => CreatedStatus::Pending,
            "denied" => CreatedStatus::Denied,
            other => {
                return Err(EngineError::corrupt(
                    op,
                    format!("created status `{other}`"),
                ));
            }
        },
        status: ActionStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("status `{status}`")))?,
        hold_reason: o("hold_reason")?,
        resolved_path: o("resolved_path")?,
        proposer: Actor {
            kind: match proposer_kind.as_str() {
                "agent" => ActorKind::Agent,
                "user" => ActorKind::User,
                _ => ActorKind::System,
            },
            id: s("proposer_id")?,
        },
        decided_by: o("decided_by")?,
        decided_at: r.try_get("decided_at").map_err(EngineError::store(op))?,
        executor: o("executor")?,
        result: o("result")?.map(|j| json(&j, "result")).transpose()?,
        diagnostic: o("diagnostic")?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

/// Which actions to list, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ActionFilter {
    pub pending_only: bool,
    pub agent: Option<String>,
    pub task: Option<String>,
    /// Only actions after this one (its full id) in the listing's order:
    /// a cursor to page on with.
    pub after: Option<String>,
    /// At most this many (all when `None`).
    pub limit: Option<i64>,
}

impl Engine {
    /// An action by id or unique prefix.
    pub async fn action(&self, id: &str) -> Result<ActionRecord> {
        let full = if id.len() == 32 {
            id.to_string()
        } else {
            self.resolve_id("proposed_actions", "action", "berth actions", id)
                .await?
        };
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE id = $1"
        ))
        .bind(&full)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading an action"))?;
        match row {
            Some(row) => from_row(&row),
            None => Err(EngineError::UnknownId {
                what: "action",
                id: id.to_string(),
                list: "berth actions",
            }),
        }
    }

    pub async fn action_by_key(&self, key: &str) -> Result<Option<ActionRecord>> {
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions \
             WHERE idempotency_key = $1 OR (idempotency_key IS NULL AND id = $1)"
        ))
        .bind(key)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading an action"))?;
        row.as_ref().map(from_row).transpose()
    }

    pub async fn actions(&self, filter: &ActionFilter) -> Result<Vec<ActionRecord>> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions \
             WHERE ($1 = 0 OR status = 'pending') AND (CAST($2 AS TEXT) IS NULL OR agent = $2) \
               AND (CAST($3 AS TEXT) IS NULL OR task_id = $3) \
               AND (CAST($4 AS TEXT) IS NULL \
                    OR (created_at, id) > (SELECT created_at, id FROM proposed_actions WHERE id = $4)) \
             ORDER BY created_at, id LIMIT $5"
        ))
        .bind(i64::from(filter.pending_only))
        .bind(filter.agent.as_deref())
        .bind(filter.task.as_deref())
        .bind(filter.after.as_deref())
        .bind(filter.limit.unwrap_or(i64::MAX))
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing actions"))?;
        rows.iter().map(from_row).collect()
    }

    /// The actions executing now, oldest first (what `berth serve`'s page
    /// offers to stop).
    pub async fn executing_actions(&self) -> Result<Vec<ActionRecord>> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE status = 'executing' \
             ORDER BY created_at, id"
        ))
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing executing actions"))?;
        rows.iter().map(from_row).collect()
    }

    /// How many actions wait for a person.
    pub async fn pending_count(&self) -> Result<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM proposed_actions WHERE status = 'pending'")
            .fetch_one(self.store.pool())
            .await
            .map_err(EngineError::store("counting pending actions"))
    }
}

/// An action read inside a write transaction (never from the pool while
/// the transaction holds the write gate).
pub(super) async fn action_in_tx(
    tx: &mut crate::store::Tx,
    id: &str,
    op: &'static str,
) -> Result<ActionRecord> {
    let row = sqlx::query(&format!(
        "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    match row {
        Some(row) => from_row(&row),
        None => Err(EngineError::UnknownId {
            what: "action",
            id: id.to_string(),
            list: "berth actions",
        }),
    }
}

/// A value as the store keeps it: compact JSON without its `null` members
/// (every optional field of an action, its parameters, decision and result
/// reads back as `None` when absent).
pub(super) fn to_json<T: Serialize>(v: &T) -> Result<String> {
    let mut value = serde_json::to_value(v)
        .map_err(|e| EngineError::corrupt("encoding a value for the store", e))?;
    drop_nulls(&mut value);
    Ok(value.to_string())
}

fn drop_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|_, x| !x.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
