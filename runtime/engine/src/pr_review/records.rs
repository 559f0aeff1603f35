//! What a PR's review feedback holds — comments, threads, reviews, review
//! requests, the review side of readiness — and the checks a comment, a
//! path or a reviewer login must pass before anything is recorded.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, ErrorKind, Result};
use crate::events::{Actor, ActorKind};

/// The longest comment, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest path a line comment names, in bytes.
const MAX_PATH_BYTES: usize = 4096;

/// Why a comment, thread, review or review request was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the {what} is empty: say something")]
    EmptyText { what: &'static str },
    #[error("the {what} is {bytes} bytes: at most {max}")]
    TooLong {
        what: &'static str,
        bytes: usize,
        max: usize,
    },
    #[error("the {what} contains a NUL byte: remove it")]
    Nul { what: &'static str },
    #[error("invalid path `{path}` for a line comment: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("a line comment names its file: add --path with --line")]
    LineWithoutPath,
    #[error("line {line} is not a line: lines count from 1")]
    BadLine { line: i64 },
    #[error(
        "a reply belongs to its thread's place: drop --path and --line when replying to {thread}"
    )]
    ReplyWithPlace { thread: String },
    #[error("PR #{pr} has no thread `{thread}`: list them with `berth pr threads {pr}`")]
    UnknownThread { pr: i64, thread: String },
    #[error("thread `{thread}` matches several threads of PR #{pr}: give more characters")]
    AmbiguousThread { pr: i64, thread: String },
    #[error("thread {thread} of PR #{pr} is already resolved (by {by})")]
    AlreadyResolved { pr: i64, thread: String, by: String },
    #[error("PR #{pr} is {status}: only an open PR can be {what}")]
    NotOpen {
        pr: i64,
        status: &'static str,
        what: &'static str,
    },
    #[error("a review is --approve or --request-changes (`{given}` is neither)")]
    UnknownState { given: String },
    #[error("reviewer `{reviewer}` is not a login: {why}")]
    BadReviewer { reviewer: String, why: &'static str },
    #[error("{agent} names PR #{pr} of project `{pr_project}`, not its own project `{project}`")]
    OtherProject {
        agent: String,
        project: String,
        pr: i64,
        pr_project: String,
    },
    #[error("agent `{agent}` has no open PR for its task: name the PR (`pr`)")]
    NoPrForAgent { agent: String },
}

impl ReviewError {
    /// Its kind and stable code, for the API's answer.
    pub(crate) fn class(&self) -> (ErrorKind, &'static str) {
        match self {
            ReviewError::UnknownThread { .. } => (ErrorKind::NotFound, "unknown_thread"),
            ReviewError::AmbiguousThread { .. } => (ErrorKind::Ambiguous, "ambiguous_id"),
            ReviewError::AlreadyResolved { .. } | ReviewError::NotOpen { .. } => {
                (ErrorKind::Conflict, "invalid_state")
            }
            ReviewError::NoPrForAgent { .. } | ReviewError::OtherProject { .. } => {
                (ErrorKind::Conflict, "invalid_state")
            }
            _ => (ErrorKind::Invalid, "invalid_value"),
        }
    }
}

/// Who wrote a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    /// A person.
    User,
    /// An agent, through a `pr_comment` action.
    Agent,
    /// berth itself: a status comment (never blocks readiness).
    Bot,
}

impl AuthorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorKind::User => "user",
            AuthorKind::Agent => "agent",
            AuthorKind::Bot => "bot",
        }
    }

    pub(super) fn of(actor: &Actor) -> AuthorKind {
        match actor.kind {
            ActorKind::User => AuthorKind::User,
            ActorKind::Agent => AuthorKind::Agent,
            ActorKind::System => AuthorKind::Bot,
        }
    }

    pub(super) fn parse(s: &str) -> Result<AuthorKind> {
        Ok(match s {
            "user" => AuthorKind::User,
            "agent" => AuthorKind::Agent,
            "bot" => AuthorKind::Bot,
            other => {
                return Err(EngineError::corrupt(
                    "reading a PR comment",
                    format!("author kind `{other}`"),
                ));
            }
        })
    }
}

/// What a comment says and where: on the PR, on a file's line, or a reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewComment {
    pub body: String,
    /// The file (relative to the repository's root) of a line comment.
    #[serde(default)]
    pub path: Option<String>,
    /// Its line, from 1.
    #[serde(default)]
    pub line: Option<i64>,
    /// The thread (or a comment in it) this replies to.
    #[serde(default)]
    pub reply_to: Option<String>,
}

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrComment {
    pub id: String,
    pub pr: i64,
    pub thread: String,
    pub author_kind: AuthorKind,
    pub author: String,
    pub body: String,
    pub path: Option<String>,
    pub line: Option<i64>,
    /// The head of the PR's branch the line comment was made on.
    pub commit: Option<String>,
    pub created_at: i64,
}

/// A thread: its first comment, its replies, and whether it is resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrThread {
    pub id: String,
    pub pr: i64,
    /// Who started it (`bot`: a status thread, never blocking).
    pub author_kind: AuthorKind,
    pub resolved: bool,
    pub resolved_by: Option<Actor>,
    pub resolved_at: Option<i64>,
    /// Oldest first; the first one started the thread.
    pub comments: Vec<PrComment>,
    pub created_at: i64,
}

impl PrThread {
    /// Still waiting for someone: unresolved, and not berth's own status.
    pub fn blocks(&self) -> bool {
        !self.resolved && self.author_kind != AuthorKind::Bot
    }
}

/// A review's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    Approve,
    RequestChanges,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Approve => "approve",
            ReviewState::RequestChanges => "request_changes",
        }
    }

    pub fn parse(s: &str) -> std::result::Result<ReviewState, ReviewError> {
        match s {
            "approve" => Ok(ReviewState::Approve),
            "request_changes" => Ok(ReviewState::RequestChanges),
            other => Err(ReviewError::UnknownState {
                given: other.to_string(),
            }),
        }
    }
}

/// A submitted review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrReview {
    pub id: String,
    pub pr: i64,
    pub state: ReviewState,
    pub actor: Actor,
    pub body: Option<String>,
    /// The PR branch's head in the forge when it was submitted.
    pub head: Option<String>,
    pub created_at: i64,
}

/// A review asked of a reviewer; `cleared_at` once they reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    pub id: String,
    pub pr: i64,
    pub reviewer: String,
    pub requested_by: String,
    pub requested_at: i64,
    pub cleared_at: Option<i64>,
    pub cleared_by: Option<String>,
}

/// Everything said on a PR (`berth pr threads`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrConversation {
    pub pr: i64,
    pub threads: Vec<PrThread>,
    /// Oldest first.
    pub reviews: Vec<PrReview>,
    pub review_requests: Vec<ReviewRequest>,
}

/// The review side of a PR's readiness.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewSummary {
    pub unresolved_threads: u32,
    /// People whose latest review approves.
    pub approvals: u32,
    pub approvals_required: u32,
    /// An open request for the project's reviewer (`[review] login`; any
    /// open request when none is configured).
    pub review_requested: bool,
}

pub(super) fn check_text(what: &'static str, text: &str) -> std::result::Result<(), ReviewError> {
    if text.trim().is_empty() {
        return Err(ReviewError::EmptyText { what });
    }
    if text.contains('\0') {
        return Err(ReviewError::Nul { what });
    }
    if text.len() > MAX_BODY_BYTES {
        return Err(ReviewError::TooLong {
            what,
            bytes: text.len(),
            max: MAX_BODY_BYTES,
        });
    }
    Ok(())
}

pub(super) fn check_path(path: &str) -> std::result::Result<(), ReviewError> {
    let bad = |why| {
        Err(ReviewError::BadPath {
            path: path.to_string(),
            why,
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if path.contains('\0') || path.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    if path.len() > MAX_PATH_BYTES {
        return bad("it is longer than 4096 bytes");
    }
    if path.starts_with('/') {
        return bad("give it relative to the repository's root");
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return bad("no empty, `.` or `..` components");
    }
    Ok(())
}

/// A reviewer login, as `[review] login` takes it.
pub(super) fn check_reviewer(reviewer: &str) -> std::result::Result<(), ReviewError> {
    let why = if reviewer.trim().is_empty() {
        Some("it is empty")
    } else if reviewer
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        Some("no spaces or control characters")
    } else if reviewer.len() > 100 {
        Some("at most 100 bytes")
    } else {
        None
    };
    match why {
        Some(why) => Err(ReviewError::BadReviewer {
            reviewer: reviewer.to_string(),
            why,
        }),
        None => Ok(()),
    }
}
