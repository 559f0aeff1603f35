//! `berth prompt`, `berth sessions`, `berth queue` over HTTP (issue 18):
//! a person's message for an agent's session, the sessions, and the
//! pending prompts of the durable queue.

use axum::Json;
use axum::extract::State;
use berth_engine::{NewPrompt, Prompt, PromptSent, Session};
use serde::Deserialize;

use super::{PathArgs, required};
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptBody {
    text: Option<String>,
    /// The task whose session it is for (default: the agent's current one).
    task: Option<String>,
}

/// Sends a message to the agent's session (`berth prompt`).
pub(crate) async fn send(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
    JsonBody(b): JsonBody<PromptBody>,
) -> Result<Json<PromptSent>, ApiError> {
    let text = required(b.text, "text", r#"{"text": "run the tests"}"#)?;
    let new = NewPrompt {
        task: b.task,
        ..NewPrompt::message(&agent, &text)
    };
    Ok(Json(app.engine.send_prompt(new, &app.user).await?))
}

/// The agent's sessions (`berth sessions AGENT`).
pub(crate) async fn agent_sessions(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<Vec<Session>>, ApiError> {
    Ok(Json(app.engine.sessions(Some(&agent)).await?))
}

/// Every agent's sessions (`berth sessions`).
pub(crate) async fn sessions(State(app): State<AppState>) -> Result<Json<Vec<Session>>, ApiError> {
    Ok(Json(app.engine.sessions(None).await?))
}

/// The agent's pending prompts (`berth queue AGENT`).
pub(crate) async fn agent_queue(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<Vec<Prompt>>, ApiError> {
    Ok(Json(app.engine.prompt_queue(Some(&agent)).await?))
}

/// Every agent's pending prompts (`berth queue`).
pub(crate) async fn queue(State(app): State<AppState>) -> Result<Json<Vec<Prompt>>, ApiError> {
    Ok(Json(app.engine.prompt_queue(None).await?))
}
