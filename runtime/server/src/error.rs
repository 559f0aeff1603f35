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
use berth_engine::EngineError;
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
        let (status, code) = classify(&e);
        ApiError::new(status, code, e.to_string())
    }
}

/// The status and code of an engine error. Not-found is a name or id the
/// caller gave; conflict is a state that forbids the call now; 422 is a
/// value the engine will not take; 500 is berth's own trouble (the store,
/// the disk, a broken configuration file a person must fix).
fn classify(e: &EngineError) -> (StatusCode, &'static str) {
    use StatusCode as S;
    match e {
        EngineError::UnknownProject(_) => (S::NOT_FOUND, "unknown_project"),
        EngineError::UnknownAgent(_) => (S::NOT_FOUND, "unknown_agent"),
        EngineError::UnknownId { what, .. } => (
            S::NOT_FOUND,
            match *what {
                "action" => "unknown_action",
                "task" => "unknown_task",
                "PR" => "unknown_pr",
                _ => "unknown_id",
            },
        ),
        EngineError::AmbiguousId { .. } => (S::BAD_REQUEST, "ambiguous_id"),
        EngineError::AlreadyExists { .. } => (S::CONFLICT, "already_exists"),
        EngineError::Invalid { .. } => (S::UNPROCESSABLE_ENTITY, "invalid_value"),
        EngineError::NotPending { .. } => (S::CONFLICT, "not_pending"),
        EngineError::RefusedAtApproval { .. } => (S::CONFLICT, "refused_at_approval"),
        EngineError::KeyConflict { .. } => (S::CONFLICT, "idempotency_key_conflict"),
        EngineError::NoBerth { .. } => (S::CONFLICT, "no_berth"),
        EngineError::WrongProject { .. } => (S::CONFLICT, "wrong_project"),
        EngineError::ModeUnavailable { .. } => (S::CONFLICT, "mode_unavailable"),
        EngineError::Unconfined { .. } => (S::CONFLICT, "unconfined"),
        EngineError::WrongStatus { .. }
        | EngineError::NotOwnEffect { .. }
        | EngineError::NotOwnTask { .. }
        | EngineError::AgentTask { .. }
        | EngineError::NotRun { .. }
        | EngineError::DeliveredAsPr { .. }
        | EngineError::ReviewWithoutRun { .. }
        | EngineError::NoAgent { .. }
        | EngineError::SeveralAgents { .. }
        | EngineError::Paused { .. }
        | EngineError::NotPaused { .. }
        | EngineError::NotNoop { .. }
        | EngineError::LeaseHeld { .. }
        | EngineError::LeaseLost { .. }
        | EngineError::AlreadyUp { .. }
        | EngineError::HoldsTask { .. }
        | EngineError::NeedsRoot { .. }
        | EngineError::NoFreeUid { .. }
        | EngineError::ModeNotSet { .. } => (S::CONFLICT, "invalid_state"),
        EngineError::IllegalTransition { .. } => (S::CONFLICT, "illegal_transition"),
        EngineError::SaveFailed { .. } => (S::CONFLICT, "save_failed"),
        EngineError::DiskTooSmall { .. } => (S::CONFLICT, "disk_too_small"),
        EngineError::DiskUnavailable { .. } => (S::CONFLICT, "disk_unavailable"),
        EngineError::Config { .. } | EngineError::Rules(_) => {
            (S::INTERNAL_SERVER_ERROR, "config_invalid")
        }
        EngineError::Worktrees(w) => classify_git(w),
        EngineError::Sandbox(_) => (S::INTERNAL_SERVER_ERROR, "sandbox_error"),
        // The Docker engine down, an image missing: a person must act on
        // this host; a foreign container in the way is a conflict.
        EngineError::Docker(d) => {
            use berth_sandbox::docker::DockerError as D;
            match d {
                D::EngineUnavailable { .. } => (S::SERVICE_UNAVAILABLE, "docker_unavailable"),
                D::Image(_) => (S::CONFLICT, "image_unavailable"),
                D::Foreign { .. } => (S::CONFLICT, "container_conflict"),
                _ => (S::INTERNAL_SERVER_ERROR, "docker_error"),
            }
        }
        // Both pass when a person frees space or the other write ends; the
        // failed write was rolled back.
        EngineError::StoreFull { .. } => (S::INSUFFICIENT_STORAGE, "disk_full"),
        EngineError::StoreBusy { .. } => (S::SERVICE_UNAVAILABLE, "store_busy"),
        EngineError::StateMissing { .. }
        | EngineError::Store { .. }
        | EngineError::Migrate { .. }
        | EngineError::Corrupt { .. }
        | EngineError::Io { .. } => (S::INTERNAL_SERVER_ERROR, "internal"),
        // The engine's error enum grows with the engine: a new variant is
        // berth's to explain, so it is a 500 until it is classified here.
        #[allow(unreachable_patterns)]
        _ => (S::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn classify_git(e: &berth_worktrees::Error) -> (StatusCode, &'static str) {
    use StatusCode as S;
    use berth_worktrees::Error as W;
    match e {
        W::InvalidName { .. } | W::InvalidInput { .. } => {
            (S::UNPROCESSABLE_ENTITY, "invalid_value")
        }
        W::Missing { .. }
        | W::NotARepository { .. }
        | W::UnknownBranch { .. }
        | W::NoBaseBranch { .. }
        | W::UntrustedOwner { .. } => (S::UNPROCESSABLE_ENTITY, "repository_unusable"),
        W::ProjectExists { .. } => (S::CONFLICT, "already_exists"),
        W::AgentBusy { .. } | W::NothingToCommit { .. } => (S::CONFLICT, "invalid_state"),
        _ => (S::INTERNAL_SERVER_ERROR, "git_error"),
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
