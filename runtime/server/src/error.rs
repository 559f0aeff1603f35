//! Errors: what the API answers when a request fails, and what can stop the
//! server from starting.
//!
//! Every failed request gets `{"error": {"code", "message"}}`. The code is a
//! stable snake_case name a client can branch on; the message is the engine's
//! own sentence (it already says what to do — the CLI prints the same one),
//! so the API never invents a second wording of a failure.

use std::path::PathBuf;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use berth_engine::{EngineError, ErrorKind};
use serde::Serialize;

/// A failed request: an HTTP status, a stable code, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: Body<'a>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    /// The JSON body, as sent.
    pub fn body(&self) -> String {
        serde_json::to_string(&Envelope {
            error: Body {
                code: self.code,
                message: &self.message,
            },
        })
        .unwrap_or_else(|_| {
            r#"{"error":{"code":"internal","message":"the error could not be encoded"}}"#.into()
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, "{}", self.message);
        }
        (
            self.status,
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            self.body(),
        )
            .into_response()
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        ApiError::new(status_of(e.kind()), e.code(), e.to_string())
    }
}

/// The HTTP status of a kind of engine failure (the engine classifies; the
/// server only maps). 422 is a value the engine will not take; 500 is
/// berth's own trouble.
fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Ambiguous => StatusCode::BAD_REQUEST,
        ErrorKind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Why `berth serve` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {addr}: it is not a loopback address. The API runs commands in agents' berths \
         and approves actions, and plain HTTP sends the token in clear to anyone on that network. Listen on \
         127.0.0.1 (reach it from elsewhere through an SSH tunnel), or pass --allow-non-loopback if you trust \
         every host that can reach {addr}"
    )]
    NonLoopback { addr: String },

    #[error("invalid listen address `{value}`: {why}")]
    BadListen { value: String, why: String },

    #[error(
        "another berth server already answers on {}: stop it first (or use --listen to pick another address)",
        path.display()
    )]
    SocketInUse { path: PathBuf },

    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("binding {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the API token file {} is readable by others (mode {mode:o}): run `chmod 600 {}` (or delete it to get a new token)",
        path.display(), path.display()
    )]
    TokenExposed { path: PathBuf, mode: u32 },

    #[error(
        "the API token file {} is malformed ({why}): delete it and start `berth serve` again to get a new one",
        path.display()
    )]
    TokenMalformed { path: PathBuf, why: String },

    #[error(transparent)]
    Engine(#[from] EngineError),

    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
}

impl ServeError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ServeError::Io { op, path, source }
    }
}
