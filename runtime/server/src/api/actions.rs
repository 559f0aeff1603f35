//! Proposing (`berth exec` and every other proposer), listing, approving,
//! denying, retrying and cancelling actions.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::{
    ActionFilter, ActionParams, ActionRecord, AgentName, Approval, Approved, Cancelled, Proposal,
    Proposed,
};
use berth_policy::Action;
use serde::Deserialize;

use super::{PathArgs, page_limit, parse_name, required, resolve_task, within_page_bytes};
use crate::AppState;
use crate::body::{JsonBody, QueryArgs, flag};
use crate::error::ApiError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProposeBody {
    agent: Option<String>,
    action: Option<Action>,
    #[serde(default)]
    params: ActionParams,
    /// The task the action serves (id or prefix).
    task: Option<String>,
    /// Makes a retried request safe: the same key answers with the first
    /// proposal's state and never runs the action twice.
    idempotency_key: Option<String>,
}

/// Proposes an action as the agent. The answer's `status` is `executed`,
/// `pending` or `refused`; the caller must look at it.
pub(crate) async fn propose(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<ProposeBody>,
) -> Result<Json<Proposed>, ApiError> {
    let example = r#"{"agent": "dev-1", "action": {"type": "terminal", "command": "cargo test"}}"#;
    let agent: AgentName = parse_name(&required(b.agent, "agent", example)?)?;
    let action = required(b.action, "action", example)?;
    let task = resolve_task(&app.engine, b.task).await?;
    let mut proposal = Proposal::by_agent(&agent, action)
        .params(b.params)
        .task(task);
    if let Some(key) = b.idempotency_key {
        proposal = proposal.key(key);
    }
    Ok(Json(app.engine.propose(proposal, None).await?))
}

/// The most actions one list answer holds; page on with `after`.
pub(crate) const MAX_LIMIT: i64 = 200;
const DEFAULT_LIMIT: i64 = 50;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Only the actions waiting for a person.
    #[serde(default, deserialize_with = "flag")]
    pending: bool,
    agent: Option<String>,
    task: Option<String>,
    /// The last action of the previous page (id or prefix).
    after: Option<String>,
    limit: Option<i64>,
}

/// Actions, oldest first, a page at a time.
pub(crate) async fn list(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<ListQuery>,
) -> Result<Json<Vec<ActionRecord>>, ApiError> {
    let limit = page_limit(q.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let task = resolve_task(&app.engine, q.task).await?;
    let after = match q.after {
        Some(a) => Some(app.engine.action(&a).await?.id),
        None => None,
    };
    let page = app
        .engine
        .actions(&ActionFilter {
            pending_only: q.pending,
            agent: q.agent,
            task,
            after,
            limit: Some(limit),
        })
        .await?;
    Ok(Json(within_page_bytes(page)))
}

pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<ActionRecord>, ApiError> {
    Ok(Json(app.engine.action(&id).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApproveBody {
    /// Also add an allow rule per segment to the project's rules (never for
    /// shells, interpreters, wrappers or privileged commands).
    #[serde(default)]
    always: bool,
}

/// Approves a pending action as the person running the server, and
/// executes it (200, the answer holds the outcome) — or, when another
/// worker holds the action's agent, records the approval for that worker
/// to run (202, the answer names it: the engine's `actions/route.rs`).
pub(crate) async fn approve(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<ApproveBody>,
) -> Result<(StatusCode, Json<Approval>), ApiError> {
    let approval = app
        .engine
        .approve_anywhere(&id, &app.user, b.always, None)
        .await?;
    let status = match approval {
        Approval::Executed(_) => StatusCode::OK,
        Approval::Routed(_) => StatusCode::ACCEPTED,
    };
    Ok((status, Json(approval)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DenyBody {
    reason: Option<String>,
}

pub(crate) async fn deny(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<DenyBody>,
) -> Result<Json<ActionRecord>, ApiError> {
    Ok(Json(
        app.engine.deny(&id, &app.user, b.reason.as_deref()).await?,
    ))
}

/// Stops an executing command (`berth cancel`): the answer is the action
/// after the cancel, `cancelled` once the process running it recorded the
/// end.
pub(crate) async fn cancel(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<Cancelled>, ApiError> {
    Ok(Json(app.engine.cancel_action(&id, &app.user).await?))
}

/// Re-executes an action a crash interrupted (never done on its own).
pub(crate) async fn retry(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<Approved>, ApiError> {
    Ok(Json(app.engine.retry(&id, &app.user, None).await?))
}
