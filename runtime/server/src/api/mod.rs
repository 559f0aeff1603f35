//! The JSON API: one handler per CLI command, each a parse, one engine
//! call, and the engine's own types serialised back (the same shapes the
//! CLI prints with `--json`). Nothing here decides anything the CLI would
//! not: where a handler does more than one call, it is a lookup the CLI
//! does too (a task id prefix resolved before filtering).

pub(crate) mod action_stream;
pub(crate) mod actions;
pub(crate) mod agents;
pub(crate) mod events;
pub(crate) mod pages;
pub(crate) mod pr_automation;
pub(crate) mod pr_review;
pub(crate) mod projects;
pub(crate) mod prompts;
pub(crate) mod prs;
pub(crate) mod tasks;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::Serialize;
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

/// A project or agent name the request gave, parsed by berth's one name
/// rule: a name that breaks it is answered 422 with the rule.
pub(crate) fn parse_name<N>(name: &str) -> Result<N, ApiError>
where
    N: std::str::FromStr,
    berth_engine::EngineError: From<N::Err>,
{
    name.parse::<N>()
        .map_err(|e| ApiError::from(berth_engine::EngineError::from(e)))
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

/// The most bytes of items one list answer holds: a page stops early (never
/// before its first item) when its items are large. A client pages on with
/// the answer's last item as the cursor until an answer is empty.
pub(crate) const MAX_PAGE_BYTES: usize = 8 * 1024 * 1024;

/// `limit` checked against `1..=max`, or `default`.
pub(crate) fn page_limit(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    let limit = limit.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_query",
            format!(
                "limit must be from 1 to {max} (default {default}); page on with `after=<the last id>`"
            ),
        ));
    }
    Ok(limit)
}

/// The leading items whose JSON fits `MAX_PAGE_BYTES` (at least one).
pub(crate) fn within_page_bytes<T: Serialize>(mut items: Vec<T>) -> Vec<T> {
    let mut used = 0usize;
    let mut keep = items.len();
    for (i, item) in items.iter().enumerate() {
        used = used.saturating_add(serde_json::to_vec(item).map_or(usize::MAX, |b| b.len()) + 1);
        if used > MAX_PAGE_BYTES && i > 0 {
            keep = i;
            break;
        }
    }
    items.truncate(keep);
    items
}
