//! `berth task create|ls|run|approve|reject|set-mode`, a task by id,
//! claiming, and the choices berth leaves to a person (`berth resolve`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::{Agent, Choice, ExecutionMode, NewTask, PipelineReport, PipelineStep, Task};
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
    /// `auto` or `review`; absent: the project's.
    mode: Option<String>,
    /// Pipeline steps (commands run in the agent's berth, in order).
    #[serde(default)]
    steps: Vec<String>,
    /// The steps may write `/work` (otherwise they run read-only).
    #[serde(default)]
    write: bool,
}

/// `auto` or `review`, else a 422 that says which values there are.
fn execution_mode(mode: &str) -> Result<ExecutionMode, ApiError> {
    ExecutionMode::parse(mode).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            format!("invalid mode `{mode}`: use auto or review"),
        )
    })
}

pub(crate) async fn create(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<CreateBody>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let example = r#"{"project": "demo", "title": "fix the build"}"#;
    let project = required(b.project, "project", example)?;
    let title = required(b.title, "title", example)?;
    let mut new = NewTask::new(&project, &title);
    new.execution_mode = b.mode.as_deref().map(execution_mode).transpose()?;
    if !b.steps.is_empty() {
        new.steps = Some(
            b.steps
                .into_iter()
                .map(|command| PipelineStep {
                    command,
                    write: false,
                })
                .collect(),
        );
    }
    new.write = b.write;
    let t = app.engine.create_task_with(new, &app.user).await?;
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunBody {
    /// The agent whose berth runs the steps (default: the task's, else the
    /// project's only agent).
    agent: Option<String>,
    /// Run a blocked task's pipeline over from its first step.
    #[serde(default)]
    restart: bool,
}

/// Runs (or resumes) a pipeline task as far as it can go now
/// (`berth task run`): answers when it is done, in review, waiting for a
/// person's approval (the server resumes it once that is given) or blocked.
pub(crate) async fn run(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<RunBody>,
) -> Result<Json<PipelineReport>, ApiError> {
    Ok(Json(
        app.engine
            .run_pipeline_with(&id, b.agent.as_deref(), b.restart, &app.user)
            .await?,
    ))
}

/// A person approves a pipeline task in review: done, then its followups
/// (`berth task approve`).
pub(crate) async fn approve(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PipelineReport>, ApiError> {
    Ok(Json(app.engine.approve_task(&id, &app.user).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    reason: Option<String>,
}

/// A person returns a pipeline task in review (`berth task reject`).
pub(crate) async fn reject(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<RejectBody>,
) -> Result<Json<Task>, ApiError> {
    let reason = required(
        b.reason,
        "reason",
        r#"{"reason": "the tests do not cover X"}"#,
    )?;
    Ok(Json(app.engine.reject_task(&id, &reason, &app.user).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModeBody {
    mode: Option<String>,
}

/// A task's own execution mode, or `inherit` the project's
/// (`berth task set-mode`).
pub(crate) async fn set_mode(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<ModeBody>,
) -> Result<Json<Task>, ApiError> {
    let mode = required(b.mode, "mode", r#"{"mode": "auto"}"#)?;
    let m = match mode.as_str() {
        "inherit" => None,
        other => Some(ExecutionMode::parse(other).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_value",
                format!("invalid mode `{other}`: use auto, review or inherit"),
            )
        })?),
    };
    Ok(Json(app.engine.set_task_mode(&id, m, &app.user).await?))
}

/// A project's execution mode, written into its `berth.toml`
/// (`berth project set-mode`).
pub(crate) async fn set_project_mode(
    State(app): State<AppState>,
    PathArgs(project): PathArgs<String>,
    JsonBody(b): JsonBody<ModeBody>,
) -> Result<Json<berth_engine::Project>, ApiError> {
    let mode = required(b.mode, "mode", r#"{"mode": "review"}"#)?;
    let m = execution_mode(&mode)?;
    app.engine.set_project_mode(&project, m, &app.user).await?;
    Ok(Json(app.engine.project(&project).await?))
}

/// A paused agent back to work (`berth agent resume`).
pub(crate) async fn resume_agent(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(app.engine.resume_agent(&agent, &app.user).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChoicesQuery {
    /// Only the choices still waiting for a person.
    #[serde(default, deserialize_with = "crate::body::flag")]
    pending: bool,
}

/// Choices berth leaves to a person (followup items blocked by
/// permissions), oldest first.
pub(crate) async fn choices(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<ChoicesQuery>,
) -> Result<Json<Vec<Choice>>, ApiError> {
    Ok(Json(app.engine.choices(q.pending).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveBody {
    choice: Option<String>,
}

/// A person takes one of a choice's options (`berth resolve ID CHOICE`).
pub(crate) async fn resolve_choice(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<ResolveBody>,
) -> Result<Json<Choice>, ApiError> {
    let choice = required(b.choice, "choice", r#"{"choice": "rerun"}"#)?;
    Ok(Json(
        app.engine.resolve_choice(&id, &choice, &app.user).await?,
    ))
}
