//! The JSON API: one handler per CLI command, each a parse, one engine
//! call, and the engine's own types serialised back (the same shapes the
//! CLI prints with `--json`). Nothing here decides anything the CLI would
//! not: where a handler does more than one call, it is a lookup the CLI
//! does too (a task id prefix resolved before filtering).

pub(crate) mod actions;
pub(crate) mod agents;
pub(crate) mod events;
pub(crate) mod projects;
pub(crate) mod prs;
pub(crate) mod tasks;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Path parameters, failing as JSON.
pub(crate) struct PathArgs<T>(pub T);

impl<T, S> FromRequestParts<S> for PathArgs<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| PathArgs(p.0))
            .map_err(|r| ApiError::bad_request("invalid_path", r.body_text()))
    }
}

/// A field the body must have.
pub(crate) fn required<T>(v: Option<T>, field: &str, example: &str) -> Result<T, ApiError> {
    v.ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("the body needs `{field}`: for example {example}"),
        )
    })
}

/// A task id or prefix, resolved to the full id (404 when unknown).
pub(crate) async fn resolve_task(
    engine: &berth_engine::Engine,
    task: Option<String>,
) -> Result<Option<String>, ApiError> {
    match task {
        Some(t) => Ok(Some(engine.task(&t).await?.id)),
        None => Ok(None),
    }
}
