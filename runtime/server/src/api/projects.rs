//! `berth project add|ls` and a project by name.

use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::{NewProject, Project};
use serde::Deserialize;

use super::{PathArgs, parse_name, required};
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

pub(crate) async fn list(State(app): State<AppState>) -> Result<Json<Vec<Project>>, ApiError> {
    Ok(Json(app.engine.projects().await?))
}

pub(crate) async fn show(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
) -> Result<Json<Project>, ApiError> {
    Ok(Json(app.engine.project(&name).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddBody {
    name: Option<String>,
    /// The repository to import: an absolute path on the server's host.
    from: Option<PathBuf>,
    base: Option<String>,
}

pub(crate) async fn add(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<AddBody>,
) -> Result<(StatusCode, Json<Project>), ApiError> {
    let example = r#"{"name": "demo", "from": "/path/to/repo"}"#;
    let name = parse_name(&required(b.name, "name", example)?)?;
    let from = required(b.from, "from", example)?;
    if !from.is_absolute() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            format!(
                "`from` must be an absolute path on the server's host, not `{}`: the server's working directory is not yours",
                from.display()
            ),
        ));
    }
    // As the CLI: the repository is recorded by its canonical path.
    let from = std::fs::canonicalize(&from).unwrap_or(from);
    let p = app
        .engine
        .add_project(
            NewProject {
                name,
                from,
                base: b.base,
            },
            &app.user,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(p)))
}
