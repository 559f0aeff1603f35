//! Request bodies and query strings, failing as JSON.
//!
//! axum's own `Json` and `Query` rejections answer in plain text; a client
//! of this API branches on `error.code`, so every way a body or a query can
//! be wrong is mapped here: too large (413), not JSON (415), malformed JSON
//! (400), JSON of the wrong shape (422), a bad query string (400).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The largest request body the API reads.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON request body. An empty body reads as `T::default()`, so a call
/// whose every field is optional (`POST …/approve`) needs no body at all.
pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                let essence = v.split(';').next().unwrap_or("").trim();
                essence.eq_ignore_ascii_case("application/json")
            });
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!(
                        "the request body is larger than {MAX_BODY_BYTES} bytes: send less (a file's content over 1 MiB does not go through the API)"
                    ),
                )
            } else {
                ApiError::bad_request("unreadable_body", format!("the request body could not be read: {r}"))
            }
        })?;
        if bytes.is_empty() {
            return Ok(JsonBody(T::default()));
        }
        if is_json != Some(true) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the request body must be JSON: send it with `Content-Type: application/json`",
            ));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Data => ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_body",
                    format!(
                        "the JSON body does not have the expected shape: {e} (see /openapi.json)"
                    ),
                ),
                _ => ApiError::bad_request(
                    "malformed_json",
                    format!("the request body is not valid JSON: {e}"),
                ),
            }
        })
    }
}

/// A query string. Unknown parameters are refused, so a misspelt filter
/// fails instead of silently listing everything.
pub struct QueryArgs<T>(pub T);

impl<T, S> FromRequestParts<S> for QueryArgs<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| QueryArgs(q.0))
            .map_err(|r| {
                ApiError::bad_request(
                    "invalid_query",
                    format!(
                        "{} (see /openapi.json for this path's parameters)",
                        r.body_text()
                    ),
                )
            })
    }
}

/// A query flag: present (`?pending`, `?pending=true`, `?pending=1`) is on;
/// `false`, `0` or absent is off. Anything else is refused.
pub fn flag<'de, D>(d: D) -> Result<bool, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let v: Option<String> = serde::Deserialize::deserialize(d)?;
    match v.as_deref() {
        None | Some("false") | Some("0") => Ok(false),
        Some("") | Some("true") | Some("1") => Ok(true),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected true or false, got `{other}`"
        ))),
    }
}
