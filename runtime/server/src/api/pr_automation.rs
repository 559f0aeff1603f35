//! `berth pr auto` and `berth pr auto-prompt`: a PR's automation switches
//! (auto-fix rounds, auto-merge, lifecycle prompts) and a project's
//! `ci-auto-fix` prompt, read and set as the user the server runs for.
//! Setting a switch evaluates the PR at once.

use axum::Json;
use axum::extract::State;
use berth_engine::pr_automation::template::AUTO_FIX;
use berth_engine::pr_automation::{PrAutomation, PromptTemplate, SwitchChange};
use serde::Deserialize;

use super::PathArgs;
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

/// The PR's automation now.
pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Json<PrAutomation>, ApiError> {
    Ok(Json(app.engine.pr_automation(&id).await?))
}

/// The switches to change; an absent one stays as it is.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AutomationBody {
    fix: Option<bool>,
    merge: Option<bool>,
    on_review_request: Option<bool>,
    on_merged: Option<bool>,
    on_closed: Option<bool>,
    /// The task's own auto-fix prompt.
    prompt_override: Option<String>,
    /// Back to the project's auto-fix prompt.
    project_prompt: Option<bool>,
}

/// Changes the PR's switches and evaluates it; answers its automation.
pub(crate) async fn set(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
    JsonBody(b): JsonBody<AutomationBody>,
) -> Result<Json<PrAutomation>, ApiError> {
    let prompt_override = match (b.prompt_override, b.project_prompt) {
        (Some(p), _) => Some(Some(p)),
        (None, Some(true)) => Some(None),
        (None, _) => None,
    };
    let change = SwitchChange {
        fix: b.fix,
        merge: b.merge,
        on_review_request: b.on_review_request,
        on_merged: b.on_merged,
        on_closed: b.on_closed,
        prompt_override,
    };
    let e = app.engine.set_pr_automation(&id, change, &app.user).await?;
    Ok(Json(e.automation))
}

/// The project's auto-fix prompt: its edit, else berth's default.
pub(crate) async fn auto_fix_prompt(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
) -> Result<Json<PromptTemplate>, ApiError> {
    Ok(Json(app.engine.prompt_template(&name, AUTO_FIX).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptBody {
    /// The new text; absent or null: back to berth's default.
    body: Option<String>,
}

/// Edits the project's auto-fix prompt (a later berth never overwrites the
/// edit), or resets it to berth's default.
pub(crate) async fn set_auto_fix_prompt(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
    JsonBody(b): JsonBody<PromptBody>,
) -> Result<Json<PromptTemplate>, ApiError> {
    Ok(Json(
        app.engine
            .set_prompt_template(&name, AUTO_FIX, b.body.as_deref(), &app.user)
            .await?,
    ))
}
