//! `berth pr list|show|merge|close|checks`.

use axum::Json;
use axum::extract::State;
use berth_engine::{PrFeedback, Proposed, PullRequest};
use serde::Deserialize;

use super::PathArgs;
use crate::AppState;
use crate::body::{JsonBody, QueryArgs};
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    project: Option<String>,
}

pub(crate) async fn list(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<ListQuery>,
) -> Result<Json<Vec<PullRequest>>, ApiError> {
    Ok(Json(app.engine.prs(q.project.as_deref()).await?))
}

pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PullRequest>, ApiError> {
    Ok(Json(app.engine.pr(&id).await?))
}

/// The PR's checks on its current head and its conflicts; runs nothing.
pub(crate) async fn checks(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PrFeedback>, ApiError> {
    Ok(Json(app.engine.pr_feedback(&id).await?))
}

/// Runs the checks due on the PR's current head, then answers as `checks`.
pub(crate) async fn run_checks(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PrFeedback>, ApiError> {
    Ok(Json(app.engine.run_pr_checks(&id).await?))
}

/// Proposes merging the PR (a `git_merge` action): into a protected branch
/// the answer is `pending` until a person approves it.
pub(crate) async fn merge(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<Proposed>, ApiError> {
    Ok(Json(app.engine.merge_pr(&id, &app.user).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CloseBody {
    reason: Option<String>,
}

pub(crate) async fn close(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<CloseBody>,
) -> Result<Json<PullRequest>, ApiError> {
    Ok(Json(
        app.engine
            .close_pr(&id, &app.user, b.reason.as_deref())
            .await?,
    ))
}
