//! `berth agent activate|auto-mode|run`, `berth autonomy set|show`,
//! `berth up|down|ls`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::{
    Agent, AgentImpl, AgentName, AutonomyReport, BerthInfo, BerthMode, ProjectName, RunReport,
};
use berth_policy::Approval;
use serde::Deserialize;

use super::{PathArgs, parse_name, required};
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

pub(crate) async fn list(State(app): State<AppState>) -> Result<Json<Vec<Agent>>, ApiError> {
    Ok(Json(app.engine.agents().await?))
}

pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(app.engine.agent(&name).await?))
}

/// Every agent with its berth (`berth ls`).
pub(crate) async fn berths(State(app): State<AppState>) -> Result<Json<Vec<BerthInfo>>, ApiError> {
    Ok(Json(app.engine.berths().await?))
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ImplArg {
    #[default]
    Real,
    Noop,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ActivateBody {
    name: Option<String>,
    project: Option<String>,
    #[serde(default, rename = "impl")]
    implementation: ImplArg,
}

/// Creates the agent (or changes its implementation) and seeds its autonomy.
pub(crate) async fn activate(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<ActivateBody>,
) -> Result<Json<Agent>, ApiError> {
    let example = r#"{"name": "dev-1", "project": "demo", "impl": "noop"}"#;
    let name: AgentName = parse_name(&required(b.name, "name", example)?)?;
    let project: ProjectName = parse_name(&required(b.project, "project", example)?)?;
    let implementation = match b.implementation {
        ImplArg::Real => AgentImpl::Real,
        ImplArg::Noop => AgentImpl::Noop,
    };
    Ok(Json(
        app.engine
            .activate_agent(&name, &project, implementation, &app.user)
            .await?,
    ))
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BerthModeArg {
    Runner,
    Mounted,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpBody {
    /// Default: the agent's own project.
    project: Option<String>,
    /// Default: the project's `sandbox.mode`.
    mode: Option<BerthModeArg>,
}

pub(crate) async fn up(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
    JsonBody(b): JsonBody<UpBody>,
) -> Result<Json<BerthInfo>, ApiError> {
    let agent: AgentName = parse_name(&agent)?;
    let project: ProjectName = match b.project {
        Some(p) => parse_name(&p)?,
        None => parse_name(&app.engine.agent(&agent).await?.project)?,
    };
    let mode = b.mode.map(|m| match m {
        BerthModeArg::Runner => BerthMode::Runner,
        BerthModeArg::Mounted => BerthMode::Mounted,
    });
    Ok(Json(
        app.engine.up(&agent, &project, mode, &app.user).await?,
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DownBody {
    #[serde(default)]
    keep_worktree: bool,
    /// Recycle without saving uncommitted changes and unpushed commits.
    #[serde(default)]
    discard: bool,
}

pub(crate) async fn down(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
    JsonBody(b): JsonBody<DownBody>,
) -> Result<Json<BerthInfo>, ApiError> {
    let agent: AgentName = parse_name(&agent)?;
    Ok(Json(
        app.engine
            .down_with(&agent, b.keep_worktree, b.discard, &app.user)
            .await?,
    ))
}

pub(crate) async fn autonomy(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<AutonomyReport>, ApiError> {
    Ok(Json(app.engine.autonomy_report(&agent).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AutoModeBody {
    on: Option<bool>,
}

/// The auto-mode switch (ADR 0167): answers with the report of what the
/// switch now lifts and what still asks.
pub(crate) async fn auto_mode(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
    JsonBody(b): JsonBody<AutoModeBody>,
) -> Result<Json<AutonomyReport>, ApiError> {
    let on = required(b.on, "on", r#"{"on": true}"#)?;
    app.engine.set_auto_mode(&agent, on, &app.user).await?;
    Ok(Json(app.engine.autonomy_report(&agent).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModeBody {
    mode: Option<String>,
}

pub(crate) async fn set_autonomy(
    State(app): State<AppState>,
    PathArgs((agent, action_type)): PathArgs<(String, String)>,
    JsonBody(b): JsonBody<ModeBody>,
) -> Result<Json<AutonomyReport>, ApiError> {
    let mode = required(b.mode, "mode", r#"{"mode": "require_approval"}"#)?;
    let m = Approval::parse(&mode).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            format!("invalid mode `{mode}`: use auto_approve, require_approval or deny"),
        )
    })?;
    app.engine
        .set_autonomy(&agent, &action_type, m, &app.user)
        .await?;
    Ok(Json(app.engine.autonomy_report(&agent).await?))
}

/// One pass of a noop agent's loop, until it cannot go on
/// (`berth agent run --until-idle`). The server also runs these on its own.
pub(crate) async fn run(
    State(app): State<AppState>,
    PathArgs(agent): PathArgs<String>,
) -> Result<Json<RunReport>, ApiError> {
    let agent: AgentName = parse_name(&agent)?;
    Ok(Json(app.engine.run_agent(&agent, true).await?))
}
