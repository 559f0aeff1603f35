//! `berth project add|ls`, a project by name, and its network allow and
//! deny lists (read and edited from the approvals page).

use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use berth_engine::network_list::{NetworkList, NetworkListKind};
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
                forge_url: None,
            },
            &app.user,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(p)))
}

/// `/api/projects/{name}/network`: the project's host rules.
pub(crate) async fn network(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
) -> Result<Json<NetworkList>, ApiError> {
    Ok(Json(app.engine.network_list(&name).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostBody {
    list: Option<NetworkListKind>,
    host: Option<String>,
}

impl HostBody {
    fn required(self) -> Result<(NetworkListKind, String), ApiError> {
        let example = r#"{"list": "allow", "host": "registry.npmjs.org"}"#;
        Ok((
            required(self.list, "list", example)?,
            required(self.host, "host", example)?,
        ))
    }
}

/// Adds a host to the project's allow or deny list (its berth.toml).
pub(crate) async fn add_network_host(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
    JsonBody(b): JsonBody<HostBody>,
) -> Result<Json<NetworkList>, ApiError> {
    let (list, host) = b.required()?;
    Ok(Json(
        app.engine
            .add_network_host(&name, list, &host, &app.user)
            .await?,
    ))
}

/// Removes a host from the project's allow or deny list, wherever it is
/// written.
pub(crate) async fn remove_network_host(
    State(app): State<AppState>,
    PathArgs(name): PathArgs<String>,
    JsonBody(b): JsonBody<HostBody>,
) -> Result<Json<NetworkList>, ApiError> {
    let (list, host) = b.required()?;
    Ok(Json(
        app.engine
            .remove_network_host(&name, list, &host, &app.user)
            .await?,
    ))
}
