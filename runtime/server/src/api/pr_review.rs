//! `berth pr comment|resolve|review|request-review|threads`: a PR's review
//! feedback, as the user the server runs for (`app.user`).

use axum::Json;
use axum::extract::State;
use berth_engine::{
    NewComment, PrComment, PrConversation, PrReview, PrThread, ReviewRequest, ReviewState,
};
use serde::Deserialize;

use super::{PathArgs, required};
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

/// The PR's threads with their comments, its reviews and review requests.
pub(crate) async fn threads(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PrConversation>, ApiError> {
    Ok(Json(app.engine.pr_threads(&id).await?))
}

/// A comment on the PR or a line of it, or a reply in a thread.
pub(crate) async fn comment(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<NewComment>,
) -> Result<Json<PrComment>, ApiError> {
    Ok(Json(app.engine.comment_pr(&id, &b, &app.user).await?))
}

/// Marks a thread resolved.
pub(crate) async fn resolve(
    State(app): State<AppState>,
    PathArgs((id, thread)): PathArgs<(String, String)>,
) -> Result<Json<PrThread>, ApiError> {
    Ok(Json(
        app.engine
            .resolve_pr_thread(&id, &thread, &app.user)
            .await?,
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReviewBody {
    state: Option<String>,
    body: Option<String>,
}

/// An approval or a request for changes, recorded on the PR (the task's
/// gate stays).
pub(crate) async fn review(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<ReviewBody>,
) -> Result<Json<PrReview>, ApiError> {
    let state = required(b.state, "state", r#"{"state": "approve"}"#)?;
    let state = ReviewState::parse(&state).map_err(berth_engine::EngineError::from)?;
    Ok(Json(
        app.engine
            .review_pr(&id, state, b.body.as_deref(), &app.user)
            .await?,
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestBody {
    reviewer: Option<String>,
}

/// Asks a reviewer for a review.
pub(crate) async fn request_review(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<RequestBody>,
) -> Result<Json<ReviewRequest>, ApiError> {
    let reviewer = required(b.reviewer, "reviewer", r#"{"reviewer": "alice"}"#)?;
    Ok(Json(
        app.engine
            .request_pr_review(&id, &reviewer, &app.user)
            .await?,
    ))
}
