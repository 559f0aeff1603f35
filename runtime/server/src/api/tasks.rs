//! `berth task create|ls`, a task by id, and claiming.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::Task;
use serde::{Deserialize, Serialize};

use super::{PathArgs, required};
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
) -> Result<Json<Vec<Task>>, ApiError> {
    Ok(Json(app.engine.tasks(q.project.as_deref()).await?))
}

pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<Task>, ApiError> {
    Ok(Json(app.engine.task(&id).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateBody {
    project: Option<String>,
    title: Option<String>,
}

pub(crate) async fn create(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<CreateBody>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let example = r#"{"project": "demo", "title": "fix the build"}"#;
    let project = required(b.project, "project", example)?;
    let title = required(b.title, "title", example)?;
    let t = app.engine.create_task(&project, &title, &app.user).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

#[derive(Debug, Serialize)]
pub(crate) struct Claimed {
    /// The task the agent now holds; null when there was none to claim.
    task: Option<Task>,
}

/// The agent claims the oldest `todo` task of its project.
pub(crate) async fn claim(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<Claimed>, ApiError> {
    Ok(Json(Claimed {
        task: app.engine.claim_task(&agent).await?,
    }))
}
